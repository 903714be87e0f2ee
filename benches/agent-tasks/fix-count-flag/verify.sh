#!/bin/sh
# Exit 0 iff the task is done; runs in the session's copy of repo/.
# Counts beyond the one in the report, the default, and the lines' text.
# Judge the source, not a bytecode cache left stale by a same-size edit in the same second.
rm -rf __pycache__
[ "$(python3 cli.py --count 3 | wc -l)" -eq 3 ] &&
    [ "$(python3 cli.py --count 1 | wc -l)" -eq 1 ] &&
    [ "$(python3 cli.py --count 7 | wc -l)" -eq 7 ] &&
    [ "$(python3 cli.py --count 0 | wc -l)" -eq 0 ] &&
    [ "$(python3 cli.py)" = 'hello, world' ] &&
    [ "$(python3 cli.py --name ann --count 2 | tr '\n' '|')" = 'hello, ann|hello, ann|' ]
