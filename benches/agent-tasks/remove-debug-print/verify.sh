#!/bin/sh
# Exit 0 iff the task is done; runs in the session's copy of repo/.
! grep -q debug app.py && [ "$(python3 app.py)" = 42 ]
