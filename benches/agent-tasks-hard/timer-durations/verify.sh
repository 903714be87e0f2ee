#!/bin/sh
# Exit 0 iff the task is done; runs in the session's copy of repo/.
# The shipped command gives 5400 s, and parse adds up hidden mixes of units (h+s without m,
# m+s, all three, upper case, a zero part) while still refusing what is not a duration, a
# bad unit after good ones included; the test still passes. Special-casing "XhYm", or
# summing every number+unit found without checking the whole text, fails.
# Judge the source, not a bytecode cache left stale by a same-size edit in the same second.
rm -rf __pycache__
python3 test_durations.py >/dev/null &&
    [ "$(python3 timer.py 1h30m tea)" = 'tea: 5400 s (1:30:00)' ] &&
    [ "$(python3 timer.py 1h5m30s)" = 'timer: 3930 s (1:05:30)' ] &&
    ! python3 timer.py 30m5y >/dev/null 2>&1 && python3 -c '
from durations import parse
cases = {"1h5m30s": 3930, "10m30s": 630, "2h15s": 7215, "0s": 0, "1H30M": 5400,
         "90s": 90, "1h0m": 3600, "3h": 10800, " 12m ": 720, "100m": 6000}
for text, want in cases.items():
    assert parse(text) == want, (text, parse(text))
for bad in ["", "1h30", "h", "30m5y", "x1h", "1h-5m", "soon", "1.5h"]:
    try:
        got = parse(bad)
    except ValueError:
        continue
    raise AssertionError(f"{bad!r} gave {got}, not ValueError")
'
