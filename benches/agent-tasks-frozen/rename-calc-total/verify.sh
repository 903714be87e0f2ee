#!/bin/sh
# Checks: no .py file mentions calc_total any more; pricing.order_total exists
# and computes what calc_total did; report.py prints exactly the old output.
rm -rf __pycache__
grep -q calc_total *.py && exit 1
out=$(python3 report.py 2>&1) || exit 1
[ "$out" = "5 items, total 11.10
5 items, total 9.99
bulk: 144.00" ] || exit 1
python3 -c '
import pricing
assert pricing.order_total([("a", 2.0, 3)]) == 7.2
assert pricing.order_total([("a", 10.0, 1)], 0.5) == 6.0
' || exit 1
