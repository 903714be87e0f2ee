#!/bin/sh
# Exit 0 iff the task is done; runs in the session's copy of repo/.
[ -d docs ] && [ "$(head -n 1 docs/index.md)" = '# Docs' ]
