#!/bin/sh
# Exit 0 iff the task is done; runs in the session's copy of repo/.
# Importing prints nothing, running it directly still works (with and without arguments), and
# report.py prints only its own line.
# Judge the source, not a bytecode cache left stale by a same-size edit in the same second.
rm -rf __pycache__
[ -z "$(python3 -c 'import textstats' 2>&1)" ] &&
    [ "$(python3 report.py)" = 'total words: 5' ] &&
    [ "$(python3 textstats.py | tr '\n' '|')" = 'words: 4|longest: quick|' ] &&
    [ "$(python3 textstats.py hello big world | tr '\n' '|')" = 'words: 3|longest: hello|' ] &&
    python3 -c 'import textstats; assert textstats.word_count("a b") == 2; assert textstats.longest_word("ab abc") == "abc"'
