#!/bin/sh
# Checks: intervals.py unchanged; test_intervals.py exists and passes on it;
# in scratch copies the tests FAIL against each of three mutants of merge():
# touching intervals kept apart (<= became <), input not sorted, and a nested
# interval cutting the outer one short (max(...) became end).
rm -rf __pycache__
sha256sum -c --quiet - >/dev/null 2>&1 <<'EOF' || exit 1
8a25923b586e302e6b0a5012e9e91de3c2b23752bd2cc7bc89cbc916f3579cc4  intervals.py
EOF
[ -f test_intervals.py ] || exit 1
timeout 60 python3 test_intervals.py >/dev/null 2>&1 || exit 1
t=$(mktemp -d) || exit 1
trap 'rm -rf "$t"' EXIT
n=0
for m in "start <= result[-1][1]|start < result[-1][1]" \
         "in sorted(intervals):|in intervals:" \
         "max(result[-1][1], end)|end"; do
    n=$((n + 1))
    cp -R . "$t/m$n" || exit 1
    rm -rf "$t/m$n/__pycache__"
    python3 - "$t/m$n/intervals.py" "$m" <<'EOF' || exit 1
import sys
path, spec = sys.argv[1], sys.argv[2]
old, new = spec.split("|")
src = open(path).read()
assert src.count(old) == 1, spec
open(path, "w").write(src.replace(old, new))
EOF
    (cd "$t/m$n" && timeout 60 python3 test_intervals.py >/dev/null 2>&1) && exit 1
done
exit 0
