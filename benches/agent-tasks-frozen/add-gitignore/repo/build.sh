#!/bin/sh
# Build the site into build/ and keep a log of the run.
set -e
mkdir -p build
for page in pages/*.md; do
    [ -e "$page" ] || continue
    name=$(basename "$page" .md)
    sed 's/^# \(.*\)/<h1>\1<\/h1>/' "$page" > "build/$name.html"
done
echo "built $(ls build | wc -l) page(s)" | tee -a build.log
