#!/bin/sh
# usage: sh vercmp.sh A B
# Compare dotted versions MAJOR[.MINOR[.PATCH]] (missing parts count as 0)
# and print '<', '=' or '>'.

part() {
    echo "$1" | awk -F. -v n="$2" '{ print ($n == "" ? 0 : $n) }'
}

[ $# -eq 2 ] || { echo "usage: sh vercmp.sh A B" >&2; exit 2; }

for i in 1 2 3; do
    x=$(part "$1" $i)
    y=$(part "$2" $i)
    if [ "$x" -gt "$y" ]; then
        echo ">"
        exit 0
    fi
    if [ "$x" -lt "$y" ]; then
        echo "<"
        exit 0
    fi
done
echo "="
