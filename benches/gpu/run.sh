#!/usr/bin/env bash
# The GPU figures of issue #15 in one call on a lent GPU machine (the `device` tool): bellows
# serve against llama-server, both with every layer on the GPU, built from one llama.cpp.
#
# Prepared here (benches/gpu/prepare.sh), sent in the ignored folder .gpu/:
#   llama-src.tar.xz   the llama.cpp vendored in the llama-cpp-python 0.3.36 sdist (the peer
#                      the CPU benches use), without its docs, models and tests
#   bellows            `bellows` linked against llama.cpp's shared libraries
#                      (LLAMA_BUILD_SHARED_LIBS=1), so it runs on the libraries built there
#                      (llama.h of the two llama.cpp differs only in version numbers), and
#                      lib/libllama-common.so.0, its own build of llama.cpp's `common`
#   *.skel             model skeletons (benches/gpu/twin.py): no model can travel, so each is
#                      expanded there into a same-shape twin with random weights
# There: llama.cpp is built once with CUDA (shared libraries, llama-server,
# llama-batched-bench), and bellows and llama-server both run on those libraries, so the two
# differ only in what sits above llama.cpp. The session's log and tables go to $OUT.
#
#   benches/gpu/run.sh            # on the device machine, from the repository root
#
# Stages that no longer fit in $DEADLINE seconds (default 550) are skipped and say so.
set -u
T0=$(date +%s)
DEADLINE=${DEADLINE:-550}
OUT=${OUT:-/tmp/gpu-out}
G=.gpu
W=target-gpu
mkdir -p "$OUT" "$W"
exec > >(tee -a "$OUT/log.txt") 2>&1
left() { echo $((DEADLINE - ($(date +%s) - T0))); }
stage() { echo; echo "=== $* (t=$(($(date +%s) - T0)) s, $(left) s left)"; }
export PATH=/usr/local/cuda/bin:$PATH

stage "machine"
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv
nvcc --version | tail -2
echo "cpus: $(nproc); $(grep -m1 'model name' /proc/cpuinfo)"
cmake --version | head -1

stage "llama.cpp with CUDA (sm_90, shared libraries)"
[ -f "$W/llama.cpp/CMakeLists.txt" ] || tar xJf "$G/llama-src.tar.xz" -C "$W"
if [ ! -f "$W/build/build.ninja" ]; then
  cmake -S "$W/llama.cpp" -B "$W/build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DBUILD_SHARED_LIBS=ON -DGGML_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 -DGGML_CUDA_FA=OFF \
    -DGGML_NATIVE=ON -DGGML_OPENMP=ON -DLLAMA_CURL=OFF -DLLAMA_BUILD_TESTS=OFF \
    -DLLAMA_BUILD_EXAMPLES=OFF >"$OUT/build.txt" 2>&1 || { tail -30 "$OUT/build.txt"; exit 1; }
fi
timeout $(($(left) - 200)) cmake --build "$W/build" -j "$(nproc)" \
  --target llama-server llama-batched-bench >>"$OUT/build.txt" 2>&1
rc=$?
tail -5 "$OUT/build.txt"
[ $rc -eq 0 ] || { echo "build stopped (rc $rc): run again while the machine is warm to go on"; exit 1; }
LIB=$PWD/$W/build/bin
# bellows finds its own libllama-common first, then the libraries built here; llama-server
# finds its own through its build-tree RUNPATH (so LD_LIBRARY_PATH is set for bellows alone).
chmod +x "$G/bellows"
printf '#!/bin/sh\nLD_LIBRARY_PATH=%s exec %s "$@"\n' "$PWD/$G/lib:$LIB" "$PWD/$G/bellows" >"$G/bellows-gpu"
chmod +x "$G/bellows-gpu"
LD_LIBRARY_PATH="$PWD/$G/lib:$LIB" ldd "$G/bellows" | grep -E 'llama|ggml|not found'

stage "twins"
mkdir -p /tmp/twins
for s in "$G"/*.skel; do
  python3 benches/gpu/twin.py expand "$s" "/tmp/twins/$(basename "${s%.skel}").gguf"
done
Q05=/tmp/twins/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf
Q15=/tmp/twins/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf

stage "bellows serve on the GPU: one request"
"$G/bellows-gpu" serve --model "$Q05" --gpu-layers 99 --port 18555 >"$OUT/serve.txt" 2>&1 &
SP=$!
for _ in $(seq 1 120); do curl -sf localhost:18555/health >/dev/null && break; sleep 0.5; done
time curl -s localhost:18555/v1/chat/completions -H 'content-type: application/json' \
  -d '{"messages":[{"role":"user","content":"Count to fifty."}],"max_tokens":256,"temperature":0}' |
  python3 -c 'import json,sys; print(json.load(sys.stdin)["usage"])'
kill $SP; wait $SP 2>/dev/null
grep -iE "cuda|offload|gpu|error|panic" "$OUT/serve.txt" | head -20

stage "llama-batched-bench: llama.cpp's own batched decoding, the ceiling"
for m in "$Q05" "$Q15"; do
  timeout 60 "$LIB/llama-batched-bench" -m "$m" -ngl 99 -c 16384 -b 2048 -ub 512 \
    -npp 80 -ntg 256 -npl 1,2,4,8,16 2>/dev/null | grep -E '^\|' | tee -a "$OUT/tables.md"
done

PY=(python3 benches/concurrency.py --bellows "$G/bellows-gpu" --peer "$LIB/llama-server"
    --gpu-layers 99 --threads 8 --max-tokens 256)
stage "concurrency.py, Qwen2.5-Coder-0.5B twin"
if [ "$(left)" -gt 150 ]; then
  timeout $(($(left) - 60)) "${PY[@]}" --model "$Q05" --reps 3 --json "$OUT/q05.json" \
    | tee -a "$OUT/tables.md"
else echo "skipped: too little time left"; fi
stage "concurrency.py, Qwen2.5-Coder-1.5B twin (streams only)"
if [ "$(left)" -gt 60 ]; then
  timeout $(($(left) - 10)) "${PY[@]}" --model "$Q15" --reps 2 --streams 1,4,16 \
    --shared-prefix 0 --n-choices '' --json "$OUT/q15.json" | tee -a "$OUT/tables.md"
else echo "skipped: too little time left"; fi
cp /tmp/concurrency_*.log "$OUT/" 2>/dev/null
stage "done"
