#!/usr/bin/env bash
# Prints a directory to use as VULKAN_SDK for the Vulkan build: newer Vulkan headers than
# Debian 12's (1.3.239, which lacks the VK_EXT_layer_settings C++ types llama.cpp's Vulkan back
# end uses unconditionally). They are taken from Debian 13's libvulkan-dev package, headers only
# (the loader stays the system's libvulkan.so), and checked along Debian's chain of trust: the
# suite's InRelease against the system's archive keyring (gpgv), the package index against
# InRelease's SHA256, the package against the index's SHA256. Cached under target/vulkan-headers/.
# Nothing is installed into the system.
#
#   export VULKAN_SDK="$(scripts/vulkan-headers.sh)" CPLUS_INCLUDE_PATH="$VULKAN_SDK/include"
#   cargo build --release -p cli --features vulkan
# (CPLUS_INCLUDE_PATH too: llama.cpp's CMake cache keeps the include directory of its first
# configure.)
#
# Where the system's own headers are new enough (VK_HEADER_VERSION >= 261), it prints /usr.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

mirror="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
suite=trixie
keyring=/usr/share/keyrings/debian-archive-keyring.gpg
need=261 # VK_EXT_layer_settings

system_version="$(sed -n 's/^#define VK_HEADER_VERSION \([0-9]*\).*/\1/p' \
    /usr/include/vulkan/vulkan_core.h 2>/dev/null || true)"
if [[ -n "$system_version" && "$system_version" -ge "$need" ]]; then
    echo /usr
    exit 0
fi

die() {
    echo "vulkan-headers: $*" >&2
    exit 1
}
for tool in curl gpgv xz dpkg-deb sha256sum; do
    command -v "$tool" >/dev/null 2>&1 || die "$tool not found"
done
[[ -r "$keyring" ]] || die "no Debian archive keyring at $keyring (package debian-archive-keyring)"

arch="$(dpkg --print-architecture)"
cache="$PWD/target/vulkan-headers"
mkdir -p "$cache"
# Fetched before: no network needed.
cached="$(compgen -G "$cache/*/usr/include/vulkan/vulkan.hpp" | sort -V | tail -n 1 || true)"
if [[ -n "$cached" ]]; then
    echo "${cached%/include/vulkan/vulkan.hpp}"
    exit 0
fi
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

curl -fsS "$mirror/dists/$suite/InRelease" -o "$tmp/InRelease" || die "cannot fetch $suite's InRelease"
gpgv --keyring "$keyring" "$tmp/InRelease" 2>"$tmp/gpgv.log" \
    || die "$suite's InRelease does not verify against $keyring: $(cat "$tmp/gpgv.log")"
index="main/binary-$arch/Packages.xz"
index_sha="$(awk -v f="$index" '/^SHA256:/{s=1; next} /^[^ ]/{s=0} s && $3 == f {print $1}' "$tmp/InRelease")"
[[ -n "$index_sha" ]] || die "$index not listed in $suite's InRelease"
curl -fsS "$mirror/dists/$suite/$index" -o "$tmp/Packages.xz" || die "cannot fetch $index"
echo "$index_sha  $tmp/Packages.xz" | sha256sum -c --status || die "$index does not match InRelease"

read -r version filename sha < <(xz -dc "$tmp/Packages.xz" | awk '
    /^Package: libvulkan-dev$/ {p = 1}
    p && /^Version:/ {v = $2}
    p && /^Filename:/ {f = $2}
    p && /^SHA256:/ {s = $2}
    p && /^$/ {print v, f, s; exit}') || true
[[ -n "${filename:-}" && -n "${sha:-}" ]] || die "libvulkan-dev not found in $suite's index"

dir="$cache/$version"
if [[ ! -e "$dir/usr/include/vulkan/vulkan.hpp" ]]; then
    echo "vulkan-headers: fetching libvulkan-dev $version from $suite" >&2
    curl -fsS "$mirror/$filename" -o "$tmp/pkg.deb" || die "cannot fetch $filename"
    echo "$sha  $tmp/pkg.deb" | sha256sum -c --status || die "$filename does not match the index"
    rm -rf "$dir.part"
    mkdir -p "$dir.part"
    dpkg-deb -x "$tmp/pkg.deb" "$dir.part"
    [[ -e "$dir.part/usr/include/vulkan/vulkan.hpp" ]] || die "no vulkan.hpp in $filename"
    rm -rf "$dir"
    mv "$dir.part" "$dir"
fi
echo "$dir/usr"
