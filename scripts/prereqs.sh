#!/usr/bin/env bash
# Installs the system packages bellows' build and test suite need when they are missing:
# cmake and a C++ compiler (llama.cpp), libclang (bindgen, for llama-cpp-sys), and Python 3
# with venv/ensurepip (model fetching and the official-client tests). Safe to re-run: it does
# nothing when all are present.
#
#   scripts/prereqs.sh            detect and install
#   scripts/prereqs.sh --check    print the missing packages (one line, space-separated), install nothing
#   --vulkan (with either)        also what the Vulkan build needs: libvulkan-dev (headers and
#                                 loader), glslc (shader compiler), spirv-headers, and
#                                 mesa-vulkan-drivers (lavapipe: Vulkan on the CPU, to run it
#                                 on a machine without a GPU), and what
#                                 scripts/vulkan-headers.sh fetches with (curl, gpgv, xz)
#
# Detection looks for what the tools really load, not for look-alikes: bindgen (clang-sys)
# dlopens `libclang.so`, `libclang-N.so` or `libclang.so.N`; `libclang-cpp.so.N` (package
# libclang-cppN, present on some images) is a different library and does not count.
# PREREQS_LIB_DIRS (colon-separated) overrides the directories searched, for tests.
set -euo pipefail

check_only=0
vulkan=0
for arg in "$@"; do
    case "$arg" in
        --check) check_only=1 ;;
        --vulkan) vulkan=1 ;;
        *) echo "prereqs: unknown argument $arg (--check, --vulkan)" >&2; exit 2 ;;
    esac
done

# True when a directory in the search path holds a libclang that clang-sys would load.
have_libclang() {
    local dirs=()
    if [[ -n "${PREREQS_LIB_DIRS:-}" ]]; then
        IFS=: read -r -a dirs <<<"$PREREQS_LIB_DIRS"
    else
        [[ -n "${LIBCLANG_PATH:-}" ]] && dirs+=("$LIBCLANG_PATH")
        dirs+=(/usr/lib/llvm-*/lib /usr/lib/*-linux-gnu /usr/lib /usr/lib64 /usr/local/lib)
    fi
    local d f base
    for d in "${dirs[@]}"; do
        [[ -d "$d" ]] || continue
        for f in "$d"/libclang*.so*; do
            [[ -e "$f" ]] || continue
            base="$(basename "$f")"
            # libclang.so, libclang.so.14, libclang-14.so, libclang-14.so.1 — not libclang-cpp*.
            if [[ "$base" =~ ^libclang(-[0-9][0-9.]*)?\.so(\.[0-9.]+)?$ ]]; then
                return 0
            fi
        done
    done
    return 1
}

missing=()
if [[ -z "${PREREQS_LIB_DIRS:-}" ]]; then
    command -v cmake >/dev/null 2>&1 || missing+=(cmake)
    command -v g++ >/dev/null 2>&1 || missing+=(g++)
    if ! command -v python3 >/dev/null 2>&1; then
        missing+=(python3 python3-venv)
    elif ! python3 -c 'import venv, ensurepip' >/dev/null 2>&1; then
        missing+=(python3-venv)
    fi
fi
have_libclang || missing+=(libclang-dev)
if [[ $vulkan -eq 1 ]]; then
    # Each package by a file the Vulkan build or run really uses.
    [[ -e /usr/include/vulkan/vulkan.hpp ]] || missing+=(libvulkan-dev)
    command -v glslc >/dev/null 2>&1 || missing+=(glslc)
    compgen -G "/usr/share/cmake/SPIRV-Headers/SPIRV-HeadersConfig.cmake" >/dev/null \
        || compgen -G "/usr/lib/*/cmake/SPIRV-Headers/SPIRV-HeadersConfig.cmake" >/dev/null \
        || missing+=(spirv-headers)
    compgen -G "/usr/share/vulkan/icd.d/lvp_icd.*.json" >/dev/null || missing+=(mesa-vulkan-drivers)
    # What scripts/vulkan-headers.sh uses to fetch and check newer headers.
    command -v curl >/dev/null 2>&1 || missing+=(curl)
    command -v gpgv >/dev/null 2>&1 || missing+=(gpgv)
    command -v xz >/dev/null 2>&1 || missing+=(xz-utils)
    [[ -r /usr/share/keyrings/debian-archive-keyring.gpg ]] || missing+=(debian-archive-keyring)
fi

if [[ $check_only -eq 1 ]]; then
    echo "${missing[*]}"
    exit 0
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
$SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
if ! have_libclang; then
    echo "prereqs: libclang-dev installed but no libclang.so found; set LIBCLANG_PATH" >&2
    exit 1
fi
