#!/bin/sh
# Exit 0 iff the task is done; runs in the session's copy of repo/.
# The test passes (it may gain cases, so it is run, not checked byte for byte), and both places
# that print an amount (cart.py's line, receipt.py's total) are right on the shipped items and
# on hidden ones (a float sum like 0.1 + 0.2 included).
# Judge the source, not a bytecode cache left stale by a same-size edit in the same second.
rm -rf __pycache__
python3 test_receipt.py >/dev/null &&
    [ "$(python3 receipt.py | tr '\n' '|')" = 'tea x2: $3.50|cake x1: $3.50|Total: $7.00|' ] &&
    python3 -c '
from cart import line_item
from receipt import total_line
assert line_item("pen", 3, 2) == "pen x3: $6.00", line_item("pen", 3, 2)
assert line_item("gum", 4, 0.5) == "gum x4: $2.00", line_item("gum", 4, 0.5)
assert total_line([("a", 1, 0.1), ("b", 1, 0.2)]) == "Total: $0.30", total_line([("a", 1, 0.1), ("b", 1, 0.2)])
assert total_line([("c", 4, 2.5)]) == "Total: $10.00", total_line([("c", 4, 2.5)])
assert total_line([]) == "Total: $0.00", total_line([])
'
