#!/bin/sh
# usage: sh export.sh [CONFIG]   (default: export.conf)
# Writes a small report into the configured output directory.
conf=${1:-export.conf}
outdir=out
format=txt

while IFS='=' read -r key value; do
    case "$key" in
        ''|'#'*) continue ;;
        outdir) outdir=$value ;;
        format) format=$value ;;
        *) echo "unknown key: $key" >&2; exit 2 ;;
    esac
done < "$conf"

mkdir -p "$outdir"
file="$outdir/report.$format"
echo "report generated" > "$file"
echo "wrote $file"
