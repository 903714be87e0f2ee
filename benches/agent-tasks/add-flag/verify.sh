#!/bin/sh
# Exit 0 iff the task is done; runs in the session's copy of repo/.
# Names beyond the one in the example, and the flag on either side of the name.
# Judge the source, not a bytecode cache left stale by a same-size edit in the same second.
rm -rf __pycache__
[ "$(python3 greet.py bob)" = 'Hello, bob' ] && [ "$(python3 greet.py --shout bob)" = 'HELLO, BOB' ] &&
    [ "$(python3 greet.py --shout 'Ann Lee')" = 'HELLO, ANN LEE' ] &&
    [ "$(python3 greet.py zoe --shout)" = 'HELLO, ZOE' ] && [ "$(python3 greet.py Zoe)" = 'Hello, Zoe' ]
