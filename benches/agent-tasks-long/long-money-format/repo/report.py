"""Sales report: reads a CSV of sales and prints totals per region and per month."""

import csv
import sys
from collections import defaultdict


def read_sales(path):
    """Rows of (date, region, amount) from the CSV at `path`."""
    rows = []
    with open(path, newline="") as f:
        for n, row in enumerate(csv.DictReader(f), start=2):
            try:
                amount = float(row["amount"])
            except ValueError:
                raise ValueError(f"{path}:{n}: bad amount {row['amount']!r}")
            rows.append((row["date"].strip(), row["region"].strip(), amount))
    return rows


def month_of(date):
    """'2024-03' from '2024-03-17'."""
    parts = date.split("-")
    if len(parts) != 3:
        raise ValueError(f"bad date {date!r}")
    return f"{parts[0]}-{parts[1]}"


def money(amount):
    """An amount as the report prints it."""
    return f"${amount}"


def totals_by(rows, key):
    """Sum of amounts grouped by key(row), as a dict."""
    sums = defaultdict(float)
    for row in rows:
        sums[key(row)] += row[2]
    return dict(sums)


def by_region(rows):
    return totals_by(rows, lambda r: r[1])


def by_month(rows):
    return totals_by(rows, lambda r: month_of(r[0]))


def best(sums):
    """The key with the largest sum (the first in name order on a tie), or None."""
    if not sums:
        return None
    top = max(sums.values())
    return min(k for k, v in sums.items() if v == top)


def table(title, sums):
    """A titled two-column listing, keys in order."""
    lines = [title]
    width = max((len(k) for k in sums), default=0)
    for key in sorted(sums):
        lines.append(f"  {key.ljust(width)}  {money(sums[key])}")
    return lines


def report(rows):
    """The whole report as a list of lines."""
    lines = []
    lines.extend(table("By region:", by_region(rows)))
    lines.extend(table("By month:", by_month(rows)))
    total = sum(r[2] for r in rows)
    lines.append(f"Total: {money(total)}")
    top = best(by_region(rows))
    if top is not None:
        lines.append(f"Best region: {top}")
    return lines


def main(argv):
    if len(argv) != 2:
        print("usage: python3 report.py SALES.csv", file=sys.stderr)
        return 2
    try:
        rows = read_sales(argv[1])
    except (OSError, ValueError, KeyError) as e:
        print(f"report: {e}", file=sys.stderr)
        return 1
    for line in report(rows):
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
