#!/bin/sh
# Exit 0 iff the task is done; runs in the session's copy of repo/.
# The shipped test, byte for byte, must pass; then hidden cases, and the rest of the
# ledger (the parts a whole-file rewrite of a long file tends to break) must still work.
rm -rf __pycache__
echo 'ccbe1dcfb1857899311d4bc20f35a86067dfbdd061d3e8857d63304ce41deeee  test_inventory.py' |
    sha256sum -c --quiet - >/dev/null 2>&1 &&
    python3 test_inventory.py >/dev/null 2>&1 &&
    python3 -c '
from inventory import Item, low_stock, load, summary, receive, ship, total_value, reorder_lines
items = load("stock.csv")
assert [i.sku for i in low_stock(items)] == ["A200", "B300"], low_stock(items)
assert abs(total_value(items) - 42.06) < 1e-9, total_value(items)
assert reorder_lines(items) == ["B300  washers: 3 left (reorder at 20)", "A200  nuts: 10 left (reorder at 10)"], reorder_lines(items)
receive(items, "B300", 30)
ship(items, "A100", 40)
assert [i.sku for i in low_stock(items)] == ["A100", "A200"], low_stock(items)
try:
    ship(items, "C400", 99)
except ValueError:
    pass
else:
    raise AssertionError("ship took more than was on hand")
assert low_stock([Item("z", "z", 6, 5, 1.0)]) == []
assert summary([Item("z", "z", 6, 5, 1.0)]).endswith("nothing to reorder")
' &&
    python3 inventory.py stock.csv | grep -x "4 items, worth 42.06" >/dev/null
