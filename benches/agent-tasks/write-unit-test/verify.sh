#!/bin/sh
# Exit 0 iff the task is done; runs in the session's copy of repo/.
# slug.py is the one shipped; test_slug.py passes on it and fails on each broken variant of
# slugify (so it tests slug.py's function, not a copy, and checks real outputs). Each variant
# runs in its own copy under the command's private temp dir, without bytecode caches.
# Judge the source, not a bytecode cache left stale by a same-size edit in the same second.
rm -rf __pycache__
echo 'e895f225957a6855274ac532f07de2b2ac742e38c400ede0b2cf5740b3f84fd4  slug.py' |
    sha256sum -c --quiet - >/dev/null 2>&1 &&
    [ -f test_slug.py ] && python3 -B test_slug.py >/dev/null 2>&1 || exit 1
mutant() {
    d=$(mktemp -d) || exit 1
    cp ./*.py "$d"/ && sed "$1" slug.py >"$d/slug.py" || exit 1
    cmp -s slug.py "$d/slug.py" && exit 1 # the variant must differ
    (cd "$d" && python3 -B test_slug.py >/dev/null 2>&1)
    caught=$?
    rm -rf "$d"
    [ "$caught" -ne 0 ]
}
mutant 's/"-".join(words)/"_".join(words)/' &&
    mutant 's/return "-".join(words)/return title/' &&
    mutant 's/title.lower()/title/'
