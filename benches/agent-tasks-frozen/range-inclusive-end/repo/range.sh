#!/bin/sh
# usage: sh range.sh START END [STEP]
# Print START, START+STEP, ... up to and including END.
start=$1
end=$2
step=${3:-1}

i=$start
while [ "$i" -lt "$end" ]; do
    echo "$i"
    i=$((i + step))
done
