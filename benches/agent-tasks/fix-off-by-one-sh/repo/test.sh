#!/bin/sh
out=$(sh count.sh 3 | tr '\n' ' ')
if [ "$out" = "1 2 3 " ]; then echo ok; else echo "FAIL: got '$out'"; exit 1; fi
