#!/bin/sh
# Checks (list kept in a scratch file via TODO_FILE): remove 2 of 3 renumbers
# the rest; bad numbers (past the end, 0, -1, "x", missing) exit non-zero,
# print a message without a traceback and leave the file byte-identical;
# removing down to an empty list works; add/list keep working.
rm -rf __pycache__
t=$(mktemp -d) || exit 1
trap 'rm -rf "$t"' EXIT
TODO_FILE="$t/my todo.txt"
export TODO_FILE
td() { python3 todo.py "$@"; }
td add buy milk && td add call mum && td add pay rent || exit 1
td remove 2 || exit 1
[ "$(td list)" = "1. buy milk
2. pay rent" ] || exit 1
cp "$TODO_FILE" "$t/before"
for bad in 3 0 -1 x; do
    td remove "$bad" >"$t/out" 2>&1 && exit 1
    [ -s "$t/out" ] || exit 1
    grep -q Traceback "$t/out" && exit 1
    cmp -s "$TODO_FILE" "$t/before" || exit 1
done
td remove >"$t/out" 2>&1 && exit 1
grep -q Traceback "$t/out" && exit 1
cmp -s "$TODO_FILE" "$t/before" || exit 1
td remove 2 || exit 1
[ "$(td list)" = "1. buy milk" ] || exit 1
td remove 1 || exit 1
[ -z "$(td list)" ] || exit 1
td remove 1 >/dev/null 2>&1 && exit 1
td add again || exit 1
[ "$(td list)" = "1. again" ] || exit 1
exit 0
