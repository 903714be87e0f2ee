#!/bin/sh
out=$(APP_HOME=/srv/tool sh run.sh paths)
expected="data=/srv/tool/data
cache=/srv/tool/cache"
if [ "$out" = "$expected" ]; then
    echo ok
else
    echo "FAIL: got $out"
    exit 1
fi
