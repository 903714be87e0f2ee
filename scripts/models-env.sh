#!/usr/bin/env bash
# Prints `export VAR=path` lines for the models the tests and benches use, fetching or
# generating them first when needed:  eval "$(scripts/models-env.sh)"
# BELLOWS_TINY_GGUF (tests), BELLOWS_SMOLLM2_GGUF (integration test, bench),
# BELLOWS_GEMMA3_GGUF (bench).
set -euo pipefail
exec "$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/fetch-models.sh" --env "$@"
