#!/bin/sh
# Exit 0 iff the task is done; runs in the session's copy of repo/.
# The shipped notice is shown whole, and the wrapping is right on hidden text: a paragraph
# whose last line is a single word, a line exactly as wide as the box, a word wider than the
# box, text with no words (no lines, not one empty line) and several paragraphs.
# Judge the source, not a bytecode cache left stale by a same-size edit in the same second.
rm -rf __pycache__
want='+--------------------------------------+
| The library will be closed on Monday |
| for the public holiday. Books due    |
| that day can be returned on Tuesday  |
| without a fine.                      |
|                                      |
| Thank you.                           |
+--------------------------------------+'
[ "$(python3 notice.py)" = "$want" ] && python3 -c '
from notice import render
from textfmt import wrap
assert wrap("", 10) == [], wrap("", 10)
assert wrap("   \n ", 10) == [], wrap("   \n ", 10)
assert wrap("one", 10) == ["one"], wrap("one", 10)
assert wrap("aaaa bbbbb", 10) == ["aaaa bbbbb"], wrap("aaaa bbbbb", 10)
assert wrap("aaaa bbbbbb", 10) == ["aaaa", "bbbbbb"], wrap("aaaa bbbbbb", 10)
assert wrap("a b c d e f", 3) == ["a b", "c d", "e f"], wrap("a b c d e f", 3)
assert wrap("x supercalifragilistic y", 5) == ["x", "supercalifragilistic", "y"]
got = render("Fire drill at\nnoon today.\n\n\nMeet outside.\n", 10)
want = ["+------------+", "| Fire drill |", "| at noon    |", "| today.     |", "|            |",
        "| Meet       |", "| outside.   |", "+------------+"]
assert got == want, got
assert render("", 10) == ["+------------+", "+------------+"], render("", 10)
'
