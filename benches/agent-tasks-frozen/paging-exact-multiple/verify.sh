#!/bin/sh
# Checks: listing.py shows the right page count for exact multiples (10, 20),
# one over (11, 21), a single item and an empty listing (still 1 page);
# page 2 of 20 items holds items 11-20; a page past the end is refused;
# render() with other page sizes (7 per page) agrees.
rm -rf __pycache__
head1() { python3 listing.py "$@" | head -n 1; }
[ "$(head1 20 1)" = "page 1 of 2" ] || exit 1
[ "$(python3 listing.py 20 3)" = "no such page (there are 2)" ] || exit 1
out=$(python3 listing.py 20 2) || exit 1
[ "$(echo "$out" | wc -l)" -eq 11 ] || exit 1
[ "$(echo "$out" | sed -n 2p)" = "  item 11" ] || exit 1
[ "$(echo "$out" | tail -n 1)" = "  item 20" ] || exit 1
[ "$(head1 21 1)" = "page 1 of 3" ] || exit 1
[ "$(head1 10 1)" = "page 1 of 1" ] || exit 1
[ "$(head1 11 2)" = "page 2 of 2" ] || exit 1
[ "$(head1 1 1)" = "page 1 of 1" ] || exit 1
[ "$(head1 0 1)" = "page 1 of 1" ] || exit 1
python3 - <<'EOF' || exit 1
from listing import render
items = ["x%d" % i for i in range(14)]
assert render(items, 2, 7).splitlines()[0] == "page 2 of 2"
assert render(items, 3, 7) == "no such page (there are 2)"
assert render(items[:15], 1, 7).startswith("page 1 of 2")
assert render(["a"] * 15, 3, 7).splitlines() == ["page 3 of 3", "  a"]
EOF
