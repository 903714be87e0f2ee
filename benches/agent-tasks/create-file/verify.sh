#!/bin/sh
# Exit 0 iff the task is done; runs in the session's copy of repo/.
[ "$(cat hello.txt)" = 'hello, world' ]
