import csv


def read_rows(path):
    """All rows of a CSV export as dicts keyed by the header line."""
    with open(path, newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))
