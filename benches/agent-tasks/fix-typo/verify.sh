#!/bin/sh
# Exit 0 iff the task is done; runs in the session's copy of repo/.
! grep -q recieve README.md && grep -q 'will receive messages' README.md
