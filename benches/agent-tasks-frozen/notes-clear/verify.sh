#!/bin/sh
# Checks (NOTES_FILE in a scratch dir whose name has a space): clear with no
# notes file succeeds; after two adds, clear leaves `show` empty (exit 0);
# a sibling file survives; add works after clear; the usage message and
# README.md mention clear.
t=$(mktemp -d) || exit 1
trap 'rm -rf "$t"' EXIT
mkdir "$t/my notes" || exit 1
echo keep > "$t/my notes/other.txt"
NOTES_FILE="$t/my notes/notes.txt"
export NOTES_FILE
sh notes.sh clear >/dev/null 2>&1 || exit 1
out=$(sh notes.sh show) || exit 1
[ -z "$out" ] || exit 1
sh notes.sh add first note && sh notes.sh add second || exit 1
[ "$(sh notes.sh show | wc -l)" -eq 2 ] || exit 1
sh notes.sh clear >/dev/null 2>&1 || exit 1
out=$(sh notes.sh show) || exit 1
[ -z "$out" ] || exit 1
[ "$(cat "$t/my notes/other.txt")" = keep ] || exit 1
sh notes.sh add third one || exit 1
[ "$(sh notes.sh show | wc -l)" -eq 1 ] || exit 1
sh notes.sh show | grep -q 'third one$' || exit 1
sh notes.sh 2>&1 | grep -q clear || exit 1
grep -q clear README.md || exit 1
exit 0
