#!/bin/sh
# Print the number of lines in each file, then the total.
# usage: sh linecount.sh FILE...

if [ $# -eq 0 ]; then
    echo "usage: sh linecount.sh FILE..." >&2
    exit 2
fi

total=0
for f in "$@"; do
    n=$(wc -l < "$f")
    n=$((n + 0))
    echo "$n $f"
    total=$((total + n))
done
echo "$total total"
