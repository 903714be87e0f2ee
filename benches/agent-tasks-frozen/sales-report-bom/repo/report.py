"""Print sales totals per region from a till export."""
import sys

from loader import read_rows
from totals import by_region


def main(path):
    rows = read_rows(path)
    for region, amount in sorted(by_region(rows).items()):
        print("%-8s %10.2f" % (region, amount))


if __name__ == "__main__":
    main(sys.argv[1])
