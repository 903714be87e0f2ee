#!/bin/sh
# Exit 0 iff the task is done; runs in the session's copy of repo/.
# The test file may gain a case for the empty list, so it is run as it is, not checked byte for
# byte; the assertions below (the shipped test's own, then hidden ones: the empty list in both
# functions) decide.
# Judge the source, not a bytecode cache left stale by a same-size edit in the same second.
rm -rf __pycache__
python3 test_scores.py >/dev/null &&
    python3 -c '
from scores import average, summary
assert average([]) == 0, average([])
assert average(()) == 0, average(())
assert summary([]) == "0 scores, average 0.0", summary([])
assert average([4]) == 4, average([4])
assert average([1, 2, 3, 4]) == 2.5, average([1, 2, 3, 4])
assert summary([3, 4]) == "2 scores, average 3.5", summary([3, 4])
assert average([5]) == 5, average([5])
assert average([1, 2]) == 1.5, average([1, 2])
assert average([-2, 2, 6]) == 2, average([-2, 2, 6])
assert summary([1, 2, 4]) == "3 scores, average 2.3", summary([1, 2, 4])
'
