#!/bin/sh
# Cleans a scratch tree and checks what is left; prints ok or the first failure.
d=$(mktemp -d) || exit 1
trap 'rm -rf "$d"' EXIT
mkdir -p "$d/src/sub"
for f in main.c main.o sub/x.tmp sub/keep.txt notes.txt~; do echo data >"$d/src/$f"; done
out=$(sh clean.sh "$d/src") || { echo "FAIL: clean.sh exited $?"; exit 1; }
[ "$(echo "$out" | tail -n 1)" = "3 files removed" ] || { echo "FAIL: $out"; exit 1; }
left=$(cd "$d/src" && find . -type f | sort | tr '\n' ' ')
[ "$left" = "./main.c ./sub/keep.txt " ] || { echo "FAIL: left $left"; exit 1; }
echo ok
