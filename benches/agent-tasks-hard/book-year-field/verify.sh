#!/bin/sh
# Exit 0 iff the task is done; runs in the session's copy of repo/.
# Book has a year (given by keyword), the loader fills it from the CSV (empty: unknown), the
# listing shows it after the title and leaves it out when unknown (no "()" or "(None)"); the
# shipped listing and a search, hidden CSV rows, the placeholder book and the (possibly
# updated) test all agree. A year printed by the formatter but never loaded fails.
# Judge the source, not a bytecode cache left stale by a same-size edit in the same second.
rm -rf __pycache__
want='Dune (1965) by Frank Herbert
The Left Hand of Darkness (1969) by Ursula K. Le Guin
A Wizard of Earthsea (1968) by Ursula K. Le Guin
Solaris (1961) by Stanisław Lem
Roadside Picnic by Arkady and Boris Strugatsky
5 books'
python3 test_listing.py >/dev/null 2>&1 &&
    [ "$(python3 listing.py)" = "$want" ] &&
    [ "$(python3 listing.py earth | tr '\n' '|')" = 'A Wizard of Earthsea (1968) by Ursula K. Le Guin|1 books|' ] &&
    python3 -c '
import os, tempfile
from catalog import Book
from listing import format_book
from loader import load, unknown_author
b = Book(title="Kindred", author="Octavia E. Butler", year=1979)
assert str(b.year) == "1979" and b.title == "Kindred"
assert format_book(b) == "Kindred (1979) by Octavia E. Butler", format_book(b)
assert format_book(unknown_author()) == "(untitled) by unknown", format_book(unknown_author())
d = tempfile.mkdtemp()
path = os.path.join(d, "b.csv")
with open(path, "w", encoding="utf-8") as f:
    f.write("title,author,year\nNeuromancer,William Gibson,1984\nBlank,Someone, \n,Nobody,2000\n")
books = load(path)
assert [format_book(x) for x in books] == ["Neuromancer (1984) by William Gibson", "Blank by Someone"], books
assert str(books[0].year) == "1984", books[0]
'
