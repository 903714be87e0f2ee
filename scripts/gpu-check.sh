#!/usr/bin/env bash
# The GPU build, compiled and run on a machine without a GPU: builds `bellows` with the
# `vulkan` feature (llama.cpp's Vulkan back end, with Debian's glslc and SPIR-V headers, and
# Vulkan headers new enough for it: scripts/vulkan-headers.sh) into target/vulkan/, then runs it on Mesa's lavapipe, a Vulkan driver that
# runs on the CPU, so the whole GPU path — device found, layers offloaded, shaders compiled and
# dispatched, tokens back over HTTP — is exercised where no GPU is.
#
#   scripts/gpu-check.sh [GGUF]     install what is missing (scripts/prereqs.sh --vulkan),
#                                   build, check; GGUF defaults to $BELLOWS_TINY_GGUF
#
# scripts/test.sh runs it after the test suite; BELLOWS_SKIP_GPU_CHECK=1 skips it there (the
# first Vulkan build compiles llama.cpp and its shaders again: about 15 minutes on 2 cores).
# Checks, each failing loudly:
#   1. `bellows devices` with lavapipe made visible lists a Vulkan GPU device;
#   2. without GGML_VK_VISIBLE_DEVICES, llama.cpp passes over CPU-type Vulkan devices, and
#      `bellows devices` says the GPU back end found no device (what a user with no driver sees);
#   3. `bellows serve --gpu-layers 99` logs the layers offloaded to the Vulkan device and
#      answers a chat request with generated tokens.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

scripts/prereqs.sh --vulkan
gguf="${1:-${BELLOWS_TINY_GGUF:-}}"
if [[ -z "$gguf" ]]; then
    eval "$(scripts/models-env.sh)"
    gguf="$BELLOWS_TINY_GGUF"
fi
# Debian 12's Vulkan headers are too old for llama.cpp's back end: newer ones, headers only.
# The compiler's own include path as well: a CMake cache from an earlier configure keeps the
# old include directory, and llama.cpp's build does not take CXXFLAGS.
VULKAN_SDK="$(scripts/vulkan-headers.sh)"
export VULKAN_SDK
if [[ "$VULKAN_SDK" != /usr ]]; then
    export CPLUS_INCLUDE_PATH="$VULKAN_SDK/include${CPLUS_INCLUDE_PATH:+:$CPLUS_INCLUDE_PATH}"
fi
cargo build --release -p cli --features vulkan --target-dir target/vulkan
bin=target/vulkan/release/bellows

fail() {
    echo "gpu-check: FAILED: $*" >&2
    exit 1
}

icd="$(compgen -G "/usr/share/vulkan/icd.d/lvp_icd.*.json" | head -n 1)"
[[ -n "$icd" ]] || fail "no lavapipe driver (mesa-vulkan-drivers) under /usr/share/vulkan/icd.d"
# Only lavapipe is loaded (older loaders read VK_ICD_FILENAMES, newer VK_DRIVER_FILES), and
# llama.cpp is told to use it although it is a CPU-type device.
export VK_ICD_FILENAMES="$icd" VK_DRIVER_FILES="$icd"

echo "gpu-check: 1. bellows devices, lavapipe visible" >&2
out="$(GGML_VK_VISIBLE_DEVICES=0 "$bin" devices)"
echo "$out" >&2
grep -Eq '^GPU +Vulkan ' <<<"$out" || fail "no Vulkan GPU device listed"

echo "gpu-check: 2. bellows devices, lavapipe passed over" >&2
out="$(env -u GGML_VK_VISIBLE_DEVICES "$bin" devices)"
echo "$out" >&2
grep -q 'The Vulkan back end found no device' <<<"$out" \
    || fail "a CPU-type Vulkan device was taken as a GPU, or the back end not named"

echo "gpu-check: 3. bellows serve --gpu-layers 99 on $gguf" >&2
log="$(mktemp)"
GGML_VK_VISIBLE_DEVICES=0 RUST_LOG=info setsid "$bin" serve --model "$gguf" --port 0 --gpu-layers 99 \
    --parallel 1 --ctx 512 >"$log" 2>&1 &
pid=$!
trap 'kill -- -"$pid" 2>/dev/null || true; rm -f "$log"' EXIT
python3 - "$log" "$pid" <<'EOF'
import json, os, re, sys, time, urllib.request

log, pid = sys.argv[1], int(sys.argv[2])
deadline = time.time() + 600  # lavapipe compiles each shader on first use
port = None
while time.time() < deadline:
    text = open(log, errors="replace").read()
    m = re.search(r"listening on http://[^:]+:(\d+)/v1", text)
    if m:
        port = int(m.group(1))
        break
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        sys.exit(f"gpu-check: FAILED: bellows serve exited:\n{text[-3000:]}")
    time.sleep(0.5)
if port is None:
    sys.exit("gpu-check: FAILED: bellows serve did not listen within 600 s")
if not re.search(r"offloaded to Vulkan\d", text):
    sys.exit(f"gpu-check: FAILED: no layers offloaded to a Vulkan device:\n{text[-3000:]}")
# llama.cpp's own count (its info log): every layer, the output layer included, on the GPU.
m = re.search(r"offloaded (\d+)/(\d+) layers to GPU", text)
if not m or m.group(1) != m.group(2):
    sys.exit(f"gpu-check: FAILED: llama.cpp did not offload every layer:\n{text[-3000:]}")
while time.time() < deadline:  # the model may still be loading
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=5) as r:
            if r.status == 200:
                break
    except OSError:
        time.sleep(0.5)
body = json.dumps({"model": "any", "max_tokens": 8, "temperature": 0,
                   "messages": [{"role": "user", "content": "Say hi"}]}).encode()
req = urllib.request.Request(f"http://127.0.0.1:{port}/v1/chat/completions", body,
                             {"content-type": "application/json"})
t0 = time.time()
with urllib.request.urlopen(req, timeout=600) as r:
    reply = json.load(r)
tokens = reply["usage"]["completion_tokens"]
if tokens < 1:
    sys.exit(f"gpu-check: FAILED: no tokens generated: {reply}")
where = re.search(r"up to .*offloaded to [^\n]*", text).group(0) + f" ({m.group(0)})"
print(f"gpu-check: ok: {tokens} tokens generated on lavapipe in {time.time() - t0:.1f} s; {where}",
      file=sys.stderr)
EOF
