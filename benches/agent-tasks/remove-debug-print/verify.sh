#!/bin/sh
# Exit 0 iff the task is done; runs in the session's copy of repo/.
# Judge the source, not a bytecode cache left stale by a same-size edit in the same second.
rm -rf __pycache__
! grep -q debug app.py && [ "$(python3 app.py)" = 42 ]
