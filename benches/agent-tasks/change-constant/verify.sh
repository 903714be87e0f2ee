#!/bin/sh
# Exit 0 iff the task is done; runs in the session's copy of repo/.
grep -qx 'MAX_RETRIES = 5' config.py && grep -qx 'TIMEOUT = 10' config.py && python3 -c 'import config'
