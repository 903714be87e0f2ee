#!/bin/sh
# Report lines that end in trailing whitespace.

usage() {
    echo "usage: sh lint.sh [-h] FILE..."
    echo "  -h  show this help"
}

quiet=0
while [ $# -gt 0 ]; do
    case "$1" in
        -h) usage; exit 0 ;;
        -q) quiet=1; shift ;;
        -*) usage >&2; exit 2 ;;
        *) break ;;
    esac
done
[ $# -gt 0 ] || { usage >&2; exit 2; }

status=0
for f in "$@"; do
    if grep -n '[[:space:]]$' "$f" > /tmp/lint.$$ 2>/dev/null; then
        status=1
        [ "$quiet" -eq 1 ] || sed "s|^|$f:|" /tmp/lint.$$
    fi
done
rm -f /tmp/lint.$$
exit $status
