#!/bin/sh
# Checks: `sh lint.sh -h` and README.md both mention -q; behaviour is kept:
# a dirty file is reported with status 1, -q prints nothing but still exits 1,
# a clean file exits 0.
sh lint.sh -h 2>&1 | grep -q -- '-q' || exit 1
grep -q -- '-q' README.md || exit 1
grep -q 'sh lint.sh' README.md || exit 1
t=$(mktemp -d) || exit 1
trap 'rm -rf "$t"' EXIT
printf 'ok\nbad \n' > "$t/dirty.txt"
printf 'fine\n' > "$t/clean.txt"
out=$(sh lint.sh "$t/dirty.txt"); rc=$?
[ $rc -eq 1 ] && [ "$out" = "$t/dirty.txt:2:bad " ] || exit 1
out=$(sh lint.sh -q "$t/dirty.txt"); rc=$?
[ $rc -eq 1 ] && [ -z "$out" ] || exit 1
sh lint.sh "$t/clean.txt" >/dev/null || exit 1
exit 0
