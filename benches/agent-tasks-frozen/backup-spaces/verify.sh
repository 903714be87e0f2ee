#!/bin/sh
# Checks (in a scratch dir): source and destination with spaces; files named
# "a b.txt", "two  spaces.txt" and "plain.txt" are copied as NAME.bak with the
# same content; a subdirectory is skipped; the summary line counts 3; an empty
# source dir gives "backed up 0 file(s)"; plain names still work.
here=$(pwd)
t=$(mktemp -d) || exit 1
trap 'rm -rf "$t"' EXIT
cd "$t" || exit 1
mkdir "My Docs" "My Docs/sub dir" "empty dir" plain
printf 'one\n' > "My Docs/a b.txt"
printf 'two\n' > "My Docs/two  spaces.txt"
printf 'three\n' > "My Docs/plain.txt"
printf 'inner\n' > "My Docs/sub dir/inner.txt"
out=$(sh "$here/backup.sh" "My Docs" "old copies" 2>&1) || exit 1
[ "$out" = "backed up 3 file(s) to old copies" ] || exit 1
[ "$(cat "old copies/a b.txt.bak")" = one ] || exit 1
[ "$(cat "old copies/two  spaces.txt.bak")" = two ] || exit 1
[ "$(cat "old copies/plain.txt.bak")" = three ] || exit 1
[ "$(ls "old copies" | wc -l)" -eq 3 ] || exit 1
out=$(sh "$here/backup.sh" "empty dir" "dest two" 2>&1) || exit 1
[ "$out" = "backed up 0 file(s) to dest two" ] || exit 1
[ -d "dest two" ] && [ -z "$(ls -A "dest two")" ] || exit 1
printf 'x\n' > plain/x.txt
[ "$(sh "$here/backup.sh" plain out 2>&1)" = "backed up 1 file(s) to out" ] || exit 1
[ -f out/x.txt.bak ] || exit 1
exit 0
