#!/bin/sh
# Exit 0 iff the task is done; runs in the session's copy of repo/.
grep -qx 'build/' .gitignore && grep -qx 'target/' .gitignore && [ "$(tail -n 1 .gitignore)" = '*.log' ]
