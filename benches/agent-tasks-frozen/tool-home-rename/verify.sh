#!/bin/sh
# Checks: no file mentions APP_HOME; README.md and test.sh mention TOOL_HOME;
# sh test.sh passes; TOOL_HOME drives `paths` and `init` (also a value with
# a space, and from another working directory); with TOOL_HOME unset the
# default stays $HOME/.tool.
unset APP_HOME TOOL_HOME
grep -rl APP_HOME --include='*.sh' --include='*.md' --include='*.txt' \
    --exclude=verify.sh --exclude-dir=.git . >/dev/null 2>&1 && exit 1
grep -q TOOL_HOME README.md || exit 1
grep -q TOOL_HOME test.sh || exit 1
sh test.sh >/dev/null 2>&1 || exit 1
[ "$(TOOL_HOME=/srv/x sh run.sh paths)" = "data=/srv/x/data
cache=/srv/x/cache" ] || exit 1
here=$(pwd)
t=$(mktemp -d) || exit 1
trap 'rm -rf "$t"' EXIT
[ "$(TOOL_HOME="$t/a b" sh run.sh init)" = "initialised $t/a b" ] || exit 1
[ -d "$t/a b/data" ] && [ -d "$t/a b/cache" ] || exit 1
[ "$(cd "$t" && HOME="$t/h" sh "$here/run.sh" paths)" = "data=$t/h/.tool/data
cache=$t/h/.tool/cache" ] || exit 1
exit 0
