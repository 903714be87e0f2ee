#!/bin/sh
# Checks with `git check-ignore` in a scratch git repository (copy of the
# work dir): build/, *.log (also in subfolders) and __pycache__/ (also nested)
# are ignored; sources and look-alikes (logbook.txt, builder.sh, pages/) are not.
[ -f .gitignore ] || exit 1
t=$(mktemp -d) || exit 1
trap 'rm -rf "$t"' EXIT
cp -R . "$t/r" && cd "$t/r" && rm -rf .git && git init -q . || exit 1
for p in build/index.html build/x/y.html site.log pages/debug.log __pycache__/a.pyc tools/__pycache__/b.pyc; do
    git check-ignore -q "$p" || exit 1
done
for p in build.sh README.md pages/index.md logbook.txt builder.sh .gitignore; do
    git check-ignore -q "$p" && exit 1
done
exit 0
