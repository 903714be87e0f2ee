"""Summarise a contacts export: how many contacts per city."""
import sys

from parse import read_records


def main(path):
    records = read_records(path)
    cities = sorted({r["city"] for r in records})
    print("%d contacts in %d cities" % (len(records), len(cities)))
    for city in cities:
        n = sum(1 for r in records if r["city"] == city)
        print("  %s: %d" % (city, n))


if __name__ == "__main__":
    main(sys.argv[1])
