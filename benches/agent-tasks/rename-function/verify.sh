#!/bin/sh
# Exit 0 iff the task is done; runs in the session's copy of repo/.
# Judge the source, not a bytecode cache left stale by a same-size edit in the same second.
rm -rf __pycache__
! grep -q get_nme util.py main.py report.py && [ "$(python3 main.py)" = ada ] && python3 -c 'import report; assert report.line({"name": "x"}) == "user: x"'
