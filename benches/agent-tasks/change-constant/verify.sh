#!/bin/sh
# Exit 0 iff the task is done; runs in the session's copy of repo/.
# One MAX_RETRIES line (a second assignment below the old one is not a change), the others kept.
# Judge the source, not a bytecode cache left stale by a same-size edit in the same second.
rm -rf __pycache__
grep -qx 'MAX_RETRIES = 5' config.py && [ "$(grep -c MAX_RETRIES config.py)" -eq 1 ] &&
    grep -qx 'TIMEOUT = 10' config.py &&
    python3 -c 'import config; assert (config.NAME, config.MAX_RETRIES, config.TIMEOUT) == ("fetcher", 5, 10)'
