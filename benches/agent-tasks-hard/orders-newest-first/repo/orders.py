import csv
from dataclasses import dataclass

from dates import parse


@dataclass
class Order:
    number: str
    date: str
    customer: str
    items: int


def load(path):
    """The orders in a CSV file with the columns number, date, customer, items."""
    with open(path, newline="") as f:
        return [
            Order(row["number"], row["date"], row["customer"], int(row["items"]))
            for row in csv.DictReader(f)
        ]


def newest_first(orders):
    return sorted(orders, key=lambda o: parse(o.date), reverse=True)


def by_customer(orders):
    """Customer name -> number of items ordered, over all orders."""
    totals = {}
    for o in orders:
        totals[o.customer] = totals.get(o.customer, 0) + o.items
    return totals
