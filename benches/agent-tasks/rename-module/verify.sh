#!/bin/sh
# Exit 0 iff the task is done; runs in the session's copy of repo/.
# The old module is gone (no copy or shim left behind), nothing names it any more (the test
# included), the importers work through the new name, and the tests (the shipped one, perhaps
# renamed) pass.
# Judge the source, not a bytecode cache left stale by a same-size edit in the same second.
rm -rf __pycache__
[ ! -e strutil.py ] && [ -f text_utils.py ] && ! grep -q strutil ./*.py &&
    ls test_*.py >/dev/null 2>&1 && for t in test_*.py; do python3 "$t" >/dev/null || exit 1; done &&
    [ "$(python3 app.py | tr '\n' '|')" = 'hello-world|release-2-0-notes|' ] &&
    python3 -c '
import report, text_utils
assert report.heading("big news") == "Big News\n========", repr(report.heading("big news"))
assert text_utils.slugify("A b") == "a-b"
assert text_utils.slugify("Hello, World!") == "hello-world"
assert text_utils.title_case("big news") == "Big News"
'
