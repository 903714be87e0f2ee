#!/bin/sh
# Exit 0 iff the task is done; runs in the session's copy of repo/.
# resize.py is the one shipped (the README follows the code, not the other way round); the
# README names every real option and none of the old ones, and every example command in it
# (a line starting with python3 resize.py, indented or after "$ ") runs without error.
# Judge the source, not a bytecode cache left stale by a same-size edit in the same second.
rm -rf __pycache__
echo '2306a694610ae9eacdff48afd5bae1597ca7d8d468e7ba1ee022a49f5ec7ace6  resize.py' |
    sha256sum -c --quiet - >/dev/null 2>&1 &&
    [ "$(head -n 1 README.md)" = '# resize' ] &&
    grep -q -- '--width' README.md && grep -q -- '--height' README.md &&
    grep -q -- '--keep-aspect' README.md &&
    ! grep -q -- '--scale' README.md && ! grep -qE -- '(^|[^-a-z])-w( |`|$)' README.md &&
    ! grep -qE -- '(^|[^-a-z])-h +([0-9]|N)' README.md || exit 1
examples=$(sed -n 's/^[[:space:]]*\(\$ \)\{0,1\}\(python3 resize\.py.*\)$/\2/p' README.md)
[ -n "$examples" ] || exit 1
echo "$examples" | while IFS= read -r line; do
    sh -c "$line" >/dev/null 2>&1 </dev/null || exit 1
done
