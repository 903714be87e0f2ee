#!/bin/sh
# Exit 0 iff the task is done; runs in the session's copy of repo/.
# The shipped stock gets whole packs rounded up, and packs_needed is right on hidden cases:
# a shortfall that is an exact number of packs (no extra pack), one unit short, stock below
# zero (backorders), packs of one, nothing short; the test still passes. Rounding with
# (short + pack) // pack, which the shipped stock cannot tell from rounding up, fails.
# Judge the source, not a bytecode cache left stale by a same-size edit in the same second.
rm -rf __pycache__
want='B-101  AA batteries       1 x 12 = 12 units
C-230  USB-C cables       3 x 10 = 30 units
T-017  packing tape       1 x  6 = 6 units
L-550  label rolls        1 x  4 = 4 units
4 items to order'
python3 test_reorder.py >/dev/null 2>&1 && [ "$(python3 restock.py)" = "$want" ] && python3 -c '
from reorder import order_lines, packs_needed
cases = [((0, 24, 12), 2), ((1, 13, 12), 1), ((12, 13, 12), 1), ((-5, 10, 6), 3),
         ((9, 10, 1), 1), ((0, 100, 7), 15), ((0, 0, 5), 0), ((30, 10, 4), 0), ((0, 6, 6), 1)]
for args, want in cases:
    assert packs_needed(*args) == want, (args, packs_needed(*args))
items = [{"sku": "X", "name": "x", "on_hand": 0, "minimum": 20, "pack": 10},
         {"sku": "Y", "name": "y", "on_hand": 25, "minimum": 20, "pack": 10}]
assert order_lines(items) == [("X", "x", 2, 10)], order_lines(items)
'
