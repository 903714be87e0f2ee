#!/bin/sh
# Checks: test_wordfreq.py unchanged and passing; hidden inputs in mixed
# case collapse to one lower-case key each; apostrophes kept; top() works.
rm -rf __pycache__
sha256sum -c --quiet - >/dev/null 2>&1 <<'EOF' || exit 1
2135ad476fb1e1a8fe3d484aaf5c81c0bff13c2b620bdf1a2e6708efccd37c47  test_wordfreq.py
EOF
python3 test_wordfreq.py >/dev/null 2>&1 || exit 1
python3 - <<'EOF' || exit 1
from wordfreq import count_words, top
c = count_words("Apple APPLE apple. Don't DON'T")
assert dict(c) == {"apple": 3, "don't": 2}, dict(c)
assert top("B b A b a c", 2) == [("b", 3), ("a", 2)]
EOF
