#!/usr/bin/env bash
# Prints `export VAR=path` lines for the models the tests and benches use, fetching or
# generating them first when needed:  eval "$(scripts/models-env.sh)"
# BELLOWS_TINY_GGUF (tests), BELLOWS_SMOLLM2_GGUF (integration test, bench),
# BELLOWS_GEMMA3_GGUF (bench), BELLOWS_QWEN_CODER_05B_GGUF (real-model coder tests).
# Name models to fetch only those (`scripts/models-env.sh qwen-coder-1.5b` adds
# BELLOWS_QWEN_CODER_15B_GGUF, which nothing fetches by default).
set -euo pipefail
exec "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/fetch-models.sh" --env "$@"
