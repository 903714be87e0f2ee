#!/usr/bin/env bash
# Prepares the ignored folder .gpu/ that benches/gpu/run.sh needs on a lent GPU machine (see
# that script): the peer's llama.cpp sources, bellows linked against llama.cpp's shared
# libraries, and the skeletons of the models to measure. About 50 MiB, under the device
# tool's 64 MiB.
#
#   eval "$(scripts/models-env.sh qwen-coder-0.5b)"; eval "$(scripts/models-env.sh qwen-coder-1.5b)"
#   benches/gpu/prepare.sh [SDIST_DIR]
#
# SDIST_DIR holds (or receives) llama_cpp_python-0.3.36.tar.gz from PyPI (default /tmp/sdist).
# The shared-library build of bellows goes to target-shared/ (its own llama.cpp build, about
# ten minutes the first time).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"
SDIST_DIR=${1:-/tmp/sdist}
SDIST=llama_cpp_python-0.3.36
G=.gpu
mkdir -p "$G" "$SDIST_DIR"

if [ ! -f "$G/llama-src.tar.xz" ]; then
  [ -f "$SDIST_DIR/$SDIST.tar.gz" ] ||
    python3 -m pip download --no-deps --no-binary :all: "llama-cpp-python==0.3.36" -d "$SDIST_DIR"
  [ -d "$SDIST_DIR/$SDIST" ] || tar xzf "$SDIST_DIR/$SDIST.tar.gz" -C "$SDIST_DIR"
  tar cJf "$G/llama-src.tar.xz" -C "$SDIST_DIR/$SDIST/vendor" \
    --exclude='llama.cpp/docs' --exclude='llama.cpp/models' --exclude='llama.cpp/examples/*' \
    --exclude='llama.cpp/tests' --exclude='llama.cpp/tools/server/tests' \
    --exclude='llama.cpp/tools/server/bench' --exclude='llama.cpp/.git*' llama.cpp
fi

# bellows on shared libraries: the llama.h of the crate's llama.cpp and of the sdist's differ
# only in two version numbers, so the binary runs on the libraries built from either.
LLAMA_BUILD_SHARED_LIBS=1 cargo build --release -p cli --target-dir target-shared
cp target-shared/release/bellows "$G/bellows"
strip "$G/bellows"
# Its libllama-common (the crate's llama.cpp `common`, C++): the peer's differs. The binary
# calls only its JSON-schema and regex helpers; symbols it lacks in the peer's libllama are
# bound lazily and never called.
mkdir -p "$G/lib"
cp -L "$(find target-shared/release/build -path '*/out/lib/libllama-common.so.0' | head -n 1)" "$G/lib/"
strip "$G/lib/libllama-common.so.0"

for var in BELLOWS_QWEN_CODER_05B_GGUF BELLOWS_QWEN_CODER_15B_GGUF; do
  gguf=${!var:-}
  [ -n "$gguf" ] || { echo "$var is not set: eval \"\$(scripts/models-env.sh ...)\" first" >&2; exit 2; }
  py="$(dirname "$gguf")/.venv/bin/python3" # scripts/fetch-models.sh's, which has numpy
  [ -x "$py" ] || py=python3
  "$py" benches/gpu/twin.py skeleton "$gguf" "$G/$(basename "${gguf%.gguf}").skel"
done
du -sh "$G"
