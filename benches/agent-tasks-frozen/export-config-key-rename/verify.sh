#!/bin/sh
# Checks: export.conf now says output_dir=reports (no outdir= line, format
# kept); README mentions output_dir; in a scratch copy the shipped config
# writes reports/report.csv, a config using output_dir (value with spaces)
# and a legacy config using outdir both work, and unknown keys still fail.
grep -q '^output_dir=reports$' export.conf || exit 1
grep -q '^outdir=' export.conf && exit 1
grep -q '^format=csv$' export.conf || exit 1
grep -q 'output_dir' README.md || exit 1
t=$(mktemp -d) || exit 1
trap 'rm -rf "$t"' EXIT
cp -R . "$t/r" && cd "$t/r" || exit 1
[ "$(sh export.sh 2>&1)" = "wrote reports/report.csv" ] && [ -f reports/report.csv ] || exit 1
printf 'output_dir=new out\nformat=txt\n' > "$t/new.conf"
[ "$(sh export.sh "$t/new.conf" 2>&1)" = "wrote new out/report.txt" ] && [ -f "new out/report.txt" ] || exit 1
printf '# legacy\noutdir=legacy\nformat=md\n' > "$t/old.conf"
[ "$(sh export.sh "$t/old.conf" 2>&1)" = "wrote legacy/report.md" ] && [ -f legacy/report.md ] || exit 1
printf 'colour=red\n' > "$t/bad.conf"
sh export.sh "$t/bad.conf" >/dev/null 2>&1 && exit 1
exit 0
