#!/bin/sh
# Exit 0 iff the task is done; runs in the session's copy of repo/.
# The test must be the one the task shipped, byte for byte: a model that empties or rewrites
# it has not fixed anything.
echo '1e126de7b25620dbe1b83d0c4e61a055090c3864dc041340a8a7a9fc81a0f259  test_stats.py' |
    sha256sum -c --quiet - >/dev/null 2>&1 &&
    python3 test_stats.py && grep -q 'def mean' stats.py
