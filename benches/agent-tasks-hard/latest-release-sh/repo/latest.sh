#!/bin/sh
# Usage: sh latest.sh [TAGS_FILE]
# Prints the newest release among the tags in TAGS_FILE (default tags.txt), one tag a line;
# pre-releases such as v2.0.0-rc1 do not count.
. "$(dirname "$0")/versions.sh"
file=${1:-tags.txt}
[ -r "$file" ] || { echo "latest.sh: cannot read $file" >&2; exit 2; }
all=$(releases "$file")
if [ -z "$all" ]; then
    echo "latest.sh: no releases in $file" >&2
    exit 1
fi
newest=$(printf '%s\n' "$all" | sort_versions | tail -n 1)
echo "latest release: v$newest"
