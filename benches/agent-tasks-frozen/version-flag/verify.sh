#!/bin/sh
# Checks: VERSION unchanged; `sh tool.sh --version` prints exactly its
# contents, and still follows it when VERSION is edited (in a scratch copy);
# hello / --help / unknown-command behaviour kept.
sha256sum -c --quiet - >/dev/null 2>&1 <<'EOF' || exit 1
64d23f858ef51b0f996e4966d4e27c0371b437e2d2787890b1f7ad22d4ec5663  VERSION
EOF
[ "$(sh tool.sh --version 2>&1)" = "1.3.0" ] || exit 1
[ "$(sh tool.sh hello Bea)" = "hello, Bea" ] || exit 1
sh tool.sh --help | grep -q usage || exit 1
sh tool.sh frobnicate >/dev/null 2>&1 && exit 1
t=$(mktemp -d) || exit 1
trap 'rm -rf "$t"' EXIT
cp -R . "$t/r" && cd "$t/r" || exit 1
echo 2.10.4 > VERSION
[ "$(sh tool.sh --version 2>&1)" = "2.10.4" ] || exit 1
exit 0
