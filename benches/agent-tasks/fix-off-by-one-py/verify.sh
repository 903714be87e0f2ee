#!/bin/sh
# Exit 0 iff the task is done; runs in the session's copy of repo/.
# The test must be the one the task shipped, byte for byte: a model that empties or rewrites
# it has not fixed anything. Hidden cases then reject a fix fitted to the test's two lists.
# Judge the source, not a bytecode cache left stale by a same-size edit in the same second.
rm -rf __pycache__
echo '1e126de7b25620dbe1b83d0c4e61a055090c3864dc041340a8a7a9fc81a0f259  test_stats.py' |
    sha256sum -c --quiet - >/dev/null 2>&1 &&
    python3 test_stats.py && grep -q 'def mean' stats.py &&
    python3 -c '
from stats import mean
assert mean([4, 6]) == 5, mean([4, 6])
assert mean([10, 0, 5]) == 5, mean([10, 0, 5])
assert mean([-1, 1]) == 0, mean([-1, 1])
assert mean([1.5, 2.5]) == 2, mean([1.5, 2.5])
'
