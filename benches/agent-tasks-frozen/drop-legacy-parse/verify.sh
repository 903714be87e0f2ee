#!/bin/sh
# Checks: legacy_parse is gone from every .py file; members.txt unchanged;
# main.py still prints the same two lines; parse_record / normalize_name
# (and the shared _clean helper they use) still behave.
rm -rf __pycache__
grep -q legacy_parse *.py && exit 1
sha256sum -c --quiet - >/dev/null 2>&1 <<'EOF' || exit 1
5216f2d29f674de761b60df4783e29bc08afb6be77738b7fe8a762f446f74f06  members.txt
EOF
[ "$(python3 main.py 2>&1)" = "Ada Lovelace <ada@example.org> since 1843
Grace Hopper <grace@example.org> since 1952" ] || exit 1
python3 -c '
from utils import parse_record, normalize_name
assert normalize_name("  alan   turing ") == "Alan Turing"
assert parse_record("x;\"Y@Z.IO\";7\n") == {"name": "X", "email": "y@z.io", "joined": 7}
try:
    parse_record("a;b")
except ValueError:
    pass
else:
    raise AssertionError
' || exit 1
