#!/bin/sh
# Exit 0 iff the task is done; runs in the session's copy of repo/.
# The report on the shipped data, line for line, and hidden amounts through the same path.
rm -rf __pycache__
expected='By region:
  east   $300.25
  north  $1220.49
  south  $80.00
By month:
  2024-03  $1280.50
  2024-04  $320.24
Total: $1600.74
Best region: north'
[ "$(python3 report.py sales.csv 2>&1)" = "$expected" ] &&
    python3 -c '
from report import money, report, best, by_region
assert money(0.1 + 0.2) == "$0.30", money(0.1 + 0.2)
assert money(5) == "$5.00", money(5)
assert money(1234.5) == "$1234.50", money(1234.5)
rows = [("2024-01-01", "west", 2.5), ("2024-02-01", "west", 0.125)]
assert report(rows)[-2:] == ["Total: $2.62", "Best region: west"] or report(rows)[-2:] == ["Total: $2.63", "Best region: west"], report(rows)
assert best({"a": 1.0, "b": 1.0}) == "a"
' &&
    { python3 report.py missing.csv >/dev/null 2>&1; [ $? -eq 1 ]; }
