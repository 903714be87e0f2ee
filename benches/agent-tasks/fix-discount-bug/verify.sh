#!/bin/sh
# Exit 0 iff the task is done; runs in the session's copy of repo/.
# The shipped test, byte for byte, must pass; then hidden cases: the bug is in pricing.py, so a
# caller that compensates for it (inventory.py passing -percent) is not a fix.
# Judge the source, not a bytecode cache left stale by a same-size edit in the same second.
rm -rf __pycache__
echo '990bcf853916d9d355c626e2a3484727ac08f722d95c79d64cd6b953f01550cc  test_inventory.py' |
    sha256sum -c --quiet - >/dev/null 2>&1 &&
    python3 test_inventory.py >/dev/null &&
    python3 -c '
from pricing import discounted, with_tax
from inventory import order_total
assert discounted(100, 10) == 90, discounted(100, 10)
assert discounted(80, 25) == 60, discounted(80, 25)
assert discounted(5, 0) == 5, discounted(5, 0)
assert with_tax(100) == 120, with_tax(100)
assert order_total([(1, 200), (3, 10)], 25) == 172.5, order_total([(1, 200), (3, 10)], 25)
assert order_total([]) == 0
'
