#!/bin/sh
# Exit 0 iff the task is done; runs in the session's copy of repo/.
python3 test_stats.py && grep -q 'def mean' stats.py
