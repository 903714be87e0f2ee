#!/bin/sh
# Exit 0 iff the task is done; runs in the session's copy of repo/.
# On scratch copies (running rotate.sh changes the session's own logs, so the shipped ones are
# written afresh): the shipped logs move up by one; a full set of five loses only the
# oldest (no .6 appears); a gap in the numbers stays a gap; KEEP=3 keeps three; a log whose
# name has a space. Each file's content is checked, not only its name. Looping down from
# KEEP (which keeps six) or stopping above .1 fails.
d=$(mktemp -d) || exit 1
trap 'rm -rf "$d"' EXIT
here=$(pwd)
# setup NAME N...: a scratch dir with NAME ("now") and NAME.N ("cN") for each N.
setup() {
    rm -rf "$d/w" && mkdir "$d/w" && name=$1 && shift && echo now >"$d/w/$name" || exit 1
    for n in "$@"; do echo "c$n" >"$d/w/$name.$n" || exit 1; done
}
# state NAME: "N=content" for each NAME.N, and the size of NAME.
state() {
    (cd "$d/w" && for f in "$1".*; do [ -f "$f" ] && printf '%s=%s ' "${f##*.}" "$(cat "$f")"; done
        printf 'log=%s' "$(wc -c <"$1" | tr -d ' ')")
}
rot() { (cd "$d/w" && sh "$here/rotate.sh" "$@" </dev/null); }
mkdir "$d/s" && printf '2024-05-03 today: started\n' >"$d/s/app.log" &&
    printf '2024-05-02 yesterday: started\n' >"$d/s/app.log.1" &&
    printf '2024-05-01 two days ago: started\n' >"$d/s/app.log.2" &&
    [ "$(cd "$d/s" && sh "$here/rotate.sh" app.log </dev/null)" = 'rotated app.log; kept: app.log.1 app.log.2 app.log.3' ] &&
    [ "$(cat "$d/s/app.log.2")" = '2024-05-02 yesterday: started' ] &&
    [ "$(cat "$d/s/app.log.3")" = '2024-05-01 two days ago: started' ] &&
    [ "$(cat "$d/s/app.log.1")" = '2024-05-03 today: started' ] && [ ! -s "$d/s/app.log" ] &&
    setup a.log 1 2 3 4 5 && rot a.log >/dev/null &&
    [ "$(state a.log)" = '1=now 2=c1 3=c2 4=c3 5=c4 log=0' ] &&
    setup b.log 1 3 && rot b.log >/dev/null &&
    [ "$(state b.log)" = '1=now 2=c1 4=c3 log=0' ] &&
    setup c.log 1 2 3 && KEEP=3 rot c.log >/dev/null &&
    [ "$(state c.log)" = '1=now 2=c1 3=c2 log=0' ] &&
    setup 'my app.log' 1 && [ "$(rot 'my app.log')" = 'rotated my app.log; kept: my app.log.1 my app.log.2' ] &&
    [ "$(state 'my app.log')" = '1=now 2=c1 log=0' ]
