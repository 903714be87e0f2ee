#!/bin/sh
fail=0
check() {
    want=$1
    shift
    got=$(sh range.sh "$@" | tr '\n' ' ')
    if [ "$got" != "$want" ]; then
        echo "FAIL: range.sh $* gave '$got', want '$want'"
        fail=1
    fi
}
check "1 2 3 " 1 3
check "0 5 10 " 0 10 5
check "2 4 " 2 5 2
[ $fail -eq 0 ] && echo ok
exit $fail
