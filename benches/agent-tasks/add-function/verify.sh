#!/bin/sh
# Exit 0 iff the task is done; runs in the session's copy of repo/.
python3 -c 'import mathx; assert mathx.square(4) == 16; assert mathx.double(3) == 6'
