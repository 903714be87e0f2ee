#!/bin/sh
# Exit 0 iff the task is done; runs in the session's copy of repo/.
# Names with one and with two spaces, several arguments at once, and a name that a glob would
# expand; the plain case still works.
d=$(mktemp -d) || exit 1
trap 'rm -rf "$d"' EXIT
printf 'a\nb\nc\nd\n' >"$d/two  spaces.txt" && printf 'x\n' >"$d/star*.txt" && printf 'y\n' >"$d/star-b.txt" &&
    [ "$(sh linecount.sh 'shopping list.txt' </dev/null)" = '3 shopping list.txt' ] &&
    [ "$(sh linecount.sh todo.txt </dev/null)" = '2 todo.txt' ] &&
    [ "$(sh linecount.sh todo.txt 'shopping list.txt' </dev/null | tr '\n' '|')" = '2 todo.txt|3 shopping list.txt|' ] &&
    [ "$(cd "$d" && sh "$OLDPWD/linecount.sh" 'two  spaces.txt' 'star*.txt' </dev/null | tr '\n' '|')" = '4 two  spaces.txt|1 star*.txt|' ]
