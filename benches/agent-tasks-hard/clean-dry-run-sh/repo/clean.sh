#!/bin/sh
# Removes build leftovers (see is_junk in lib.sh) under DIR.
. "$(dirname "$0")/lib.sh"

usage() {
    echo "usage: sh clean.sh [-v] DIR" >&2
    echo "  -v  also print the size of each removed file" >&2
    exit 2
}

VERBOSE=0
while getopts v opt; do
    case $opt in
        v) VERBOSE=1 ;;
        *) usage ;;
    esac
done
shift $((OPTIND - 1))
[ $# -eq 1 ] && [ -d "$1" ] || usage

count=0
while IFS= read -r f; do
    if [ -n "$f" ] && is_junk "$f"; then
        remove_file "$f"
        count=$((count + 1))
    fi
done <<EOF
$(find "$1" -type f | sort)
EOF
echo "$count files removed"
