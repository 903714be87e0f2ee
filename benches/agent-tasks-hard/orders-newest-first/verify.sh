#!/bin/sh
# Exit 0 iff the task is done; runs in the session's copy of repo/.
# The report lists the shipped orders newest first (its other lines as before), and
# newest_first sorts hidden dates right: one- and two-digit days in a month, months, years
# and a leap day; so reordering orders.csv or reversing the list in report.py does not pass.
# Judge the source, not a bytecode cache left stale by a same-size edit in the same second.
rm -rf __pycache__
want='5 orders, newest first:
  2024-03-21  #1045  Tom        3 items
  2024-03-12  #1044  Ravi       4 items
  2024-03-09  #1043  Ines       1 items
  2024-03-03  #1042  Tom        5 items
  2024-02-28  #1041  Ines       2 items
items per customer:
  Ines       3
  Ravi       4
  Tom        8'
[ "$(python3 report.py)" = "$want" ] && python3 -c '
from orders import Order, newest_first
dates = ["1 Feb 2024", "10 Jan 2024", "2 Jan 2024", "31 Dec 2023", "5 Mar 2023",
         "20 Mar 2023", "29 Feb 2024", "11 Nov 2022", "3 Nov 2022"]
orders = [Order(str(n), d, "x", 1) for n, d in enumerate(dates)]
got = [o.date for o in newest_first(orders)]
want = ["29 Feb 2024", "1 Feb 2024", "10 Jan 2024", "2 Jan 2024", "31 Dec 2023",
        "20 Mar 2023", "5 Mar 2023", "11 Nov 2022", "3 Nov 2022"]
assert got == want, got
assert newest_first([]) == []
'
