#!/bin/sh
# Checks: slugify on the example and hidden inputs: already-slugs, runs of
# separators, empty and all-punctuation strings, digits, underscores and
# non-ASCII letters (both are separators per the spec); the other helpers
# still work.
rm -rf __pycache__
python3 - <<'EOF' || exit 1
from textutil import slugify, truncate, title_case
cases = {
    "  Hello, World! ": "hello-world",
    "Already-a-slug": "already-a-slug",
    "a  --  b": "a-b",
    "": "",
    "!!!": "",
    "Rock & Roll 2024": "rock-roll-2024",
    "under_score": "under-score",
    "caf\u00e9 au lait": "caf-au-lait",
    "--x--": "x",
    "ABC123": "abc123",
}
for given, want in cases.items():
    got = slugify(given)
    assert got == want, (given, got, want)
assert truncate("abcdef", 5) == "ab..."
assert title_case("the lord of the rings") == "The Lord of the Rings"
EOF
