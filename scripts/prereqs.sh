#!/usr/bin/env bash
# Installs the system packages bellows needs to build llama.cpp (cmake, libclang for bindgen,
# a C++ compiler) when they are missing. Safe to re-run: it does nothing when all are present.
set -euo pipefail

missing=()
command -v cmake >/dev/null 2>&1 || missing+=(cmake)
command -v g++ >/dev/null 2>&1 || missing+=(g++)
command -v python3 >/dev/null 2>&1 || missing+=(python3 python3-venv python3-pip)
# bindgen needs libclang; Debian ships it as libclang-dev (it pulls the versioned library).
if ! ls /usr/lib/llvm-*/lib/libclang*.so* >/dev/null 2>&1 && ! ls /usr/lib/x86_64-linux-gnu/libclang*.so* >/dev/null 2>&1; then
  missing+=(libclang-dev)
fi
if ! command -v cargo >/dev/null 2>&1; then
  echo "prereqs: cargo not found; install Rust (https://rustup.rs) first" >&2
  exit 1
fi
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
echo "prereqs: installing ${missing[*]}" >&2
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then SUDO=sudo; else
    echo "prereqs: need root (or sudo) to apt-get install: ${missing[*]}" >&2
    exit 1
  fi
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq "${missing[@]}"
