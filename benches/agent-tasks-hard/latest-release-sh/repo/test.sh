#!/bin/sh
# Checks the tag helpers in versions.sh; prints ok or the first failure.
. ./versions.sh
fail() { echo "FAIL: $1"; exit 1; }
is_release v1.2.3 || fail "v1.2.3 is a release"
is_release v10.0.12 || fail "v10.0.12 is a release"
is_release v2.0.0-rc1 && fail "v2.0.0-rc1 is a pre-release"
is_release 1.2.3 && fail "1.2.3 has no v"
[ "$(strip_v v3.4.5)" = 3.4.5 ] || fail "strip_v v3.4.5"
t=$(mktemp) || exit 1
printf 'v1.0.0\nv1.1.0-beta\nnotes\n' >"$t"
[ "$(releases "$t")" = 1.0.0 ] || { rm -f "$t"; fail "releases"; }
rm -f "$t"
echo ok
