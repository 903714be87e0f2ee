#!/bin/sh
# Exit 0 iff the task is done; runs in the session's copy of repo/.
# With -n every junk file (a name with spaces and a dot-file included) is reported as "would
# remove FILE", the count says "would be removed", and nothing is deleted (-n after -v too);
# without -n files are removed as before (the shipped test and a scratch tree). The usage
# message (shown for a bad option) and README.md both name -n. A flag parsed but not
# honoured where files are deleted fails, as does a change left out of the README.
d=$(mktemp -d) || exit 1
trap 'rm -rf "$d"' EXIT
mkdir -p "$d/t/x y" && for f in 'x y/a b.tmp' k.c .DS_Store m.o 'x y/keep.txt'; do
    echo data >"$d/t/$f" || exit 1
done
tree() { (cd "$d/t" && find . -type f | sort | tr '\n' '|'); }
all='./.DS_Store|./k.c|./m.o|./x y/a b.tmp|./x y/keep.txt|'
sh test.sh >/dev/null 2>&1 &&
    [ "$(sh clean.sh -n "$d/t" </dev/null | tr '\n' '|')" = "would remove $d/t/.DS_Store|would remove $d/t/m.o|would remove $d/t/x y/a b.tmp|3 files would be removed|" ] &&
    [ "$(tree)" = "$all" ] &&
    sh clean.sh -v -n "$d/t" </dev/null >/dev/null 2>&1 && [ "$(tree)" = "$all" ] &&
    [ "$(sh clean.sh "$d/t" </dev/null | tr '\n' '|')" = "removed $d/t/.DS_Store|removed $d/t/m.o|removed $d/t/x y/a b.tmp|3 files removed|" ] &&
    [ "$(tree)" = './k.c|./x y/keep.txt|' ] &&
    sh clean.sh -q "$d/t" </dev/null 2>&1 >/dev/null | grep -qE -- '(^|[^a-z])-n([^a-z]|$)' &&
    grep -qE -- '(^|[^a-z])-n([^a-z]|$)' README.md
