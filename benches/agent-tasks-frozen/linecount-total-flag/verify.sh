#!/bin/sh
# Checks: -t prints only the total (several files, a name with spaces,
# one file, an empty file); without -t the old per-file output is unchanged.
t=$(mktemp -d) || exit 1
trap 'rm -rf "$t"' EXIT
printf 'a\nb\n' > "$t/a.txt"
printf '1\n2\n3\n' > "$t/b c.txt"
: > "$t/empty.txt"
[ "$(sh linecount.sh -t "$t/a.txt" "$t/b c.txt")" = "5" ] || exit 1
[ "$(sh linecount.sh -t "$t/b c.txt")" = "3" ] || exit 1
[ "$(sh linecount.sh -t "$t/empty.txt" "$t/a.txt")" = "2" ] || exit 1
[ "$(sh linecount.sh "$t/a.txt" "$t/b c.txt")" = "2 $t/a.txt
3 $t/b c.txt
5 total" ] || exit 1
sh linecount.sh >/dev/null 2>&1 && exit 1
exit 0
