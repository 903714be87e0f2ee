#!/bin/sh
# Exit 0 iff the task is done; runs in the session's copy of repo/.
# legacy_parse is gone (not merely renamed or commented out), the test still passes, and parse
# behaves as before: the test's cases, the shipped app.conf and hidden input (comments, blank
# lines, "=" in a value).
# Judge the source, not a bytecode cache left stale by a same-size edit in the same second.
rm -rf __pycache__
! grep -q legacy_parse ./*.py && python3 test_confparse.py >/dev/null &&
    [ "$(python3 main.py | tr '\n' '|')" = 'name=demo|port=8080|' ] &&
    python3 -c '
import confparse
assert not hasattr(confparse, "legacy_parse")
got = confparse.parse("# top\n\na = 1\nb=x=y # note\n  c =  3  \n")
assert got == {"a": "1", "b": "x=y", "c": "3"}, got
assert confparse.parse("") == {}
assert confparse.parse("a = 1\nb = 2\n") == {"a": "1", "b": "2"}
assert confparse.parse("# comment\n\nkey = value  # note\n") == {"key": "value"}
'
