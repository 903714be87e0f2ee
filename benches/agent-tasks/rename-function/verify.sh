#!/bin/sh
# Exit 0 iff the task is done; runs in the session's copy of repo/.
! grep -q get_nme util.py main.py report.py && [ "$(python3 main.py)" = ada ] && python3 -c 'import report; assert report.line({"name": "x"}) == "user: x"'
