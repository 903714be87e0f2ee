#!/bin/sh
# Exit 0 iff the task is done; runs in the session's copy of repo/.
[ -f lib/helpers.py ] && [ ! -e helpers.py ] && grep -q 'return 42' lib/helpers.py
