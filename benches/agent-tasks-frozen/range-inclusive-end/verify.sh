#!/bin/sh
# Checks: test.sh unchanged and passing; hidden cases: START == END prints
# one number, START > END prints nothing, negative starts, steps that land
# on END exactly and steps that jump past it.
sha256sum -c --quiet - >/dev/null 2>&1 <<'EOF' || exit 1
0fe1a0ea1fa1644b80105e7ad26da7cb427aed56775643ca16fd0b901e45ffd7  test.sh
EOF
sh test.sh >/dev/null 2>&1 || exit 1
r() { sh range.sh "$@" | tr '\n' ' '; }
[ "$(r 3 3)" = "3 " ] || exit 1
[ "$(r 5 3)" = "" ] || exit 1
[ "$(r -2 1)" = "-2 -1 0 1 " ] || exit 1
[ "$(r 0 9 3)" = "0 3 6 9 " ] || exit 1
[ "$(r 1 10 4)" = "1 5 9 " ] || exit 1
exit 0
