#!/bin/sh
# Exit 0 iff the task is done; runs in the session's copy of repo/.
# head prints exactly N lines (hidden cases included), and every other subcommand of the
# long script still works as before.
printf 'a b\n\n  \nlonger line\nz' > .verify-head.$$ 2>/dev/null || exit 1
f=.verify-head.$$
ok=0
[ "$(sh tool.sh head notes.txt 3)" = "$(printf 'one\ntwo\n')" ] &&
    [ "$(sh tool.sh head notes.txt 3 | wc -l)" -eq 3 ] &&
    { out=$(sh tool.sh head notes.txt 0 2>&1) && [ -z "$out" ]; } &&
    [ "$(sh tool.sh head notes.txt 1)" = "one" ] &&
    [ "$(sh tool.sh head notes.txt 9 | wc -l)" -eq 5 ] &&
    [ "$(sh tool.sh head "$f" 5 | tail -1)" = "z" ] &&
    [ "$(sh tool.sh lines notes.txt)" = 5 ] &&
    [ "$(sh tool.sh lines "$f")" = 5 ] &&
    [ "$(sh tool.sh upper notes.txt | head -1)" = "ONE" ] &&
    [ "$(sh tool.sh longest notes.txt)" = "four is longest" ] &&
    [ "$(sh tool.sh blank "$f")" = 2 ] &&
    { sh tool.sh head notes.txt x >/dev/null 2>&1; [ $? -eq 1 ]; } &&
    { sh tool.sh head notes.txt >/dev/null 2>&1; [ $? -eq 2 ]; } &&
    ok=1
rm -f "$f"
[ "$ok" = 1 ]
