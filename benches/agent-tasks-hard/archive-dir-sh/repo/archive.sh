#!/bin/sh
# Usage: sh archive.sh DIR [DEST]
# Packs DIR into DEST/NAME.tar (DEST defaults to backups), NAME being DIR's own name, and
# prints where the archive went.
. "$(dirname "$0")/paths.sh"
if [ $# -lt 1 ] || [ ! -d "$1" ]; then
    echo "usage: sh archive.sh DIR [DEST]" >&2
    exit 2
fi
dir=$1
dest=${2:-backups}
ensure_dir "$dest" || exit 1
out=$(archive_path "$dir" "$dest")
tar -cf "$out" -C "$(dirname "$dir")" "$(basename "$dir")" || exit 1
echo "archived $dir to $out ($(tar -tf "$out" | wc -l) entries)"
