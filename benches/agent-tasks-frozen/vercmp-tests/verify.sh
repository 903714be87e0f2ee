#!/bin/sh
# Checks: vercmp.sh unchanged; test.sh exists and `sh test.sh` passes on it;
# in scratch copies `sh test.sh` FAILS against two mutants of vercmp.sh:
# components compared on their first digit only (1.10 looks older than 1.9)
# and equal versions reported as '>'.
sha256sum -c --quiet - >/dev/null 2>&1 <<'EOF' || exit 1
3cf46a8672b2f0672be44f5fa786d7f8abbd388445cd7a1a275aff2e6d8bca90  vercmp.sh
EOF
[ -f test.sh ] || exit 1
timeout 60 sh test.sh >/dev/null 2>&1 || exit 1
t=$(mktemp -d) || exit 1
trap 'rm -rf "$t"' EXIT
n=0
for m in 'print ($n == "" ? 0 : $n)|print substr(($n == "" ? 0 : $n), 1, 1)' \
         'echo "="|echo ">"'; do
    n=$((n + 1))
    cp -R . "$t/m$n" || exit 1
    python3 - "$t/m$n/vercmp.sh" "$m" <<'EOF' || exit 1
import sys
path, spec = sys.argv[1], sys.argv[2]
old, new = spec.split("|")
src = open(path).read()
assert src.count(old) == 1, spec
open(path, "w").write(src.replace(old, new))
EOF
    (cd "$t/m$n" && timeout 60 sh test.sh >/dev/null 2>&1) && exit 1
done
exit 0
