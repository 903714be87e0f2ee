#!/bin/sh
# Checks: test_stats.py unchanged and passing; median() right on hidden inputs
# (even and odd lengths, unsorted, negatives, a single value, repeated values),
# still raises ValueError on an empty list, and does not reorder its argument.
rm -rf __pycache__
sha256sum -c --quiet - >/dev/null 2>&1 <<'EOF' || exit 1
569eca6014d83f4c89775535aea14b6762e9935ee0bdcbab778aacba5bf2be3f  test_stats.py
EOF
python3 test_stats.py >/dev/null 2>&1 || exit 1
python3 - <<'EOF' || exit 1
from stats import median
assert median([1, 2]) == 1.5
assert median([5]) == 5
assert median([10, 2, 8, 4, 6, 0]) == 5
assert median([-3, -1]) == -2
assert median([1, 1, 2, 2]) == 1.5
assert median([9, 3, 5, 1, 7]) == 5
data = [4, 1, 3, 2]
median(data)
assert data == [4, 1, 3, 2]
try:
    median([])
except ValueError:
    pass
else:
    raise AssertionError("empty list must raise ValueError")
EOF
