#!/usr/bin/env bash
# benches/peer-aider.sh: aider (aider-chat 0.86.2) on the agent task suite, against
# `bellows serve`, so its figures compare with `bellows agent bench` on the same model.
#
#   benches/peer-aider.sh --model qwen-coder-1.5b [--only SUBSTRING] [--tasks DIR] [--port N]
#
# What it runs, per task, in a fresh copy of the task's repo/ (the cwd), exactly as the issue
# measured aider: the whole-file edit format, every file of the repository added to the chat,
# one message (task.md), no repo map, no git (so no commits), non-interactive (--yes-always,
# which answers yes to everything except running shell commands: aider asks those with
# "explicit yes required", which --yes-always declines). aider's own defaults otherwise
# (auto-lint on, as it ships; no --auto-test). A model-metadata file gives the unknown model
# name a context of --ctx tokens and zero prices, so aider neither warns nor guesses.
# Then the task's hidden verify.sh judges the copy. `bellows serve` runs in the background
# on the model for the whole suite, and is stopped by its PID on exit.
#
# aider options beyond the common ones:
#   --stream            stream replies (default --no-stream; the outcome does not depend on it)
#   --aider-arg ARG     pass ARG to aider as well (repeatable), e.g. --aider-arg --auto-test
#
# The stop column is aider's exit status and the number of "Applied edit" lines in its log.
# aider's chat and LLM history (every prompt and reply) are under RESULTS/TASK/.
set -euo pipefail

PEER_NAME=aider
STREAM=--no-stream
AIDER_EXTRA=()

peer_usage() { sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed -e '$d' -e 's/^# \{0,1\}//'; }

peer_parse_arg() {
  case "$1" in
    --stream) STREAM=--stream; PEER_SHIFT=1 ;;
    --aider-arg) AIDER_EXTRA+=("${2:?--aider-arg needs a value}"); PEER_SHIFT=2 ;;
    *) return 1 ;;
  esac
}

peer_setup() {
  AIDER_META="$OUT/aider-model-metadata.json"
  cat >"$AIDER_META" <<EOF
{
  "$API_MODEL": {
    "max_input_tokens": $CTX,
    "max_output_tokens": $CTX,
    "max_tokens": $CTX,
    "input_cost_per_token": 0,
    "output_cost_per_token": 0,
    "litellm_provider": "openai",
    "mode": "chat"
  }
}
EOF
}

peer_describe() {
  echo "aider $("$VENV/bin/aider" --version 2>/dev/null | awk '{print $2}'), --edit-format whole, all files," \
    "--map-tokens 0, --no-git, $STREAM${AIDER_EXTRA[*]:+, extra: ${AIDER_EXTRA[*]}}"
}

peer_run() {
  local taskdir="$1" work="$2" taskout="$3"
  local files=()
  mapfile -t files < <(cd "$work" && find . -type f -not -path './.git/*' | sed 's|^\./||' | LC_ALL=C sort)
  exec timeout --kill-after=15 "$TASK_TIMEOUT" "$VENV/bin/aider" \
    --model "$API_MODEL" \
    --openai-api-base "$BASE/v1" \
    --openai-api-key none \
    --model-metadata-file "$AIDER_META" \
    --edit-format whole \
    --map-tokens 0 \
    --no-git \
    --no-auto-commits \
    --no-gitignore \
    --yes-always \
    "$STREAM" \
    --no-pretty \
    --no-fancy-input \
    --no-show-model-warnings \
    --no-check-update \
    --no-show-release-notes \
    --no-analytics \
    --chat-history-file "$taskout/aider.chat.md" \
    --input-history-file "$taskout/aider.input" \
    --llm-history-file "$taskout/aider.llm.txt" \
    ${AIDER_EXTRA[@]+"${AIDER_EXTRA[@]}"} \
    --message "$(cat "$taskdir/task.md")" \
    "${files[@]}"
}

peer_stop() {
  local taskout="$1" rc="$2" edits
  edits="$(grep -c '^Applied edit to ' "$taskout/peer.log" || true)"
  echo "rc$rc/edits$edits"
}

# shellcheck source=benches/peers/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/peers/common.sh"
peer_main "$@"
