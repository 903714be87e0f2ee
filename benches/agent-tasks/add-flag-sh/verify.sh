#!/bin/sh
# Exit 0 iff the task is done; runs in the session's copy of repo/.
# notes.txt as shipped, then a file of its own (3 TODOs) and one without any, so that a count
# written into the script does not pass; the listing without -c is unchanged.
d=$(mktemp -d) || exit 1
trap 'rm -rf "$d"' EXIT
printf 'shopping list\nTODO buy milk\ncall the bank\nTODO renew passport\n' >"$d/notes" &&
    cmp -s notes.txt "$d/notes" &&
    printf 'a TODO\nb\nTODO c\nTODO: d\n' >"$d/three" &&
    printf 'nothing\nto do\n' >"$d/none" &&
    [ "$(sh todo.sh -c notes.txt </dev/null | tr -d ' ')" = 2 ] &&
    [ "$(sh todo.sh -c "$d/three" </dev/null | tr -d ' ')" = 3 ] &&
    [ "$(sh todo.sh -c "$d/none" </dev/null | tr -d ' ')" = 0 ] &&
    [ "$(sh todo.sh notes.txt </dev/null | tr '\n' '|')" = '2:TODO buy milk|4:TODO renew passport|' ] &&
    [ "$(sh todo.sh "$d/three" </dev/null | wc -l)" -eq 3 ]
