#!/bin/sh
# Exit 0 iff the task is done; runs in the session's copy of repo/.
# Hidden cases beyond the example (negative, zero, float), and double unchanged.
# Judge the source, not a bytecode cache left stale by a same-size edit in the same second.
rm -rf __pycache__
python3 -c '
import mathx
assert mathx.square(4) == 16
assert mathx.square(-3) == 9
assert mathx.square(0) == 0
assert mathx.square(2.5) == 6.25
assert mathx.double(3) == 6
'
