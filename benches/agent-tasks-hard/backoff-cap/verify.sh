#!/bin/sh
# Exit 0 iff the task is done; runs in the session's copy of repo/.
# The shipped test, byte for byte, passes; then hidden cases: other caps (not a power of two,
# below base, above every delay), a fractional base, no retries, and call_with_retry sleeping
# the capped waits. A cap written as the literal 5, or one applied only from the second wait
# on, fails.
# Judge the source, not a bytecode cache left stale by a same-size edit in the same second.
rm -rf __pycache__
echo '9f6557cedbcf0b42c9af7b34a09b475d6f30e23fa75f0ed3f6c292f1d4c1b69e  test_retry.py' |
    sha256sum -c --quiet - >/dev/null 2>&1 &&
    python3 test_retry.py >/dev/null && python3 -c '
from retry import call_with_retry, delays
assert delays(5, 1, 5) == [1, 2, 4, 5, 5], delays(5, 1, 5)
assert delays(4, 0.5, 3) == [0.5, 1, 2, 3], delays(4, 0.5, 3)
assert delays(6, 1, 64) == [1, 2, 4, 8, 16, 32], delays(6, 1, 64)
assert delays(3, 10, 5) == [5, 5, 5], delays(3, 10, 5)
assert delays(3, 2, 2) == [2, 2, 2], delays(3, 2, 2)
assert delays(1, 1, 5) == [1], delays(1, 1, 5)
assert delays(0, 1, 5) == [], delays(0, 1, 5)
slept = []
def always():
    raise OSError("down")
try:
    call_with_retry(always, 5, 1, 3, sleep=slept.append, log=lambda m: None)
except OSError:
    pass
assert slept == [1, 2, 3, 3, 3], slept
'
