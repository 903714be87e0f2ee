#!/bin/sh
# Exit 0 iff the task is done; runs in the session's copy of repo/.
[ "$(python3 greet.py bob)" = 'Hello, bob' ] && [ "$(python3 greet.py --shout bob)" = 'HELLO, BOB' ]
