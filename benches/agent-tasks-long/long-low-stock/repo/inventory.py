"""A small stock ledger: items, their quantities and when to reorder them."""

import csv
import sys


class Item:
    """One stock-keeping unit."""

    def __init__(self, sku, name, quantity, threshold, price):
        self.sku = sku
        self.name = name
        self.quantity = quantity
        self.threshold = threshold
        self.price = price

    def value(self):
        """What the units on hand are worth."""
        return self.quantity * self.price

    def __repr__(self):
        return f"Item({self.sku!r}, {self.name!r}, {self.quantity})"


def parse_row(row):
    """An Item from one CSV row (a dict), or ValueError on a malformed row."""
    sku = row["sku"].strip()
    if not sku:
        raise ValueError("empty sku")
    name = row["name"].strip()
    quantity = int(row["quantity"])
    threshold = int(row["threshold"])
    price = float(row["price"])
    if quantity < 0:
        raise ValueError(f"{sku}: negative quantity")
    return Item(sku, name, quantity, threshold, price)


def load(path):
    """Every item of the CSV file at `path`, in file order."""
    items = []
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            items.append(parse_row(row))
    return items


def by_sku(items):
    """The items as a dict keyed by SKU."""
    return {item.sku: item for item in items}


def total_value(items):
    """What all the stock is worth."""
    return sum(item.value() for item in items)


def low_stock(items):
    """The items that should be reordered: those at or below their threshold."""
    return [item for item in items if item.quantity < item.threshold]


def receive(items, sku, count):
    """Add `count` units of `sku`; KeyError for an unknown SKU."""
    if count <= 0:
        raise ValueError("count must be positive")
    by_sku(items)[sku].quantity += count


def ship(items, sku, count):
    """Remove `count` units of `sku`; ValueError when there are not enough."""
    item = by_sku(items)[sku]
    if count > item.quantity:
        raise ValueError(f"{sku}: only {item.quantity} on hand")
    item.quantity -= count


def reorder_lines(items):
    """One line per item to reorder, lowest stock first."""
    lines = []
    for item in sorted(low_stock(items), key=lambda i: (i.quantity, i.sku)):
        lines.append(f"{item.sku}  {item.name}: {item.quantity} left (reorder at {item.threshold})")
    return lines


def summary(items):
    """A short report of the stock."""
    out = [f"{len(items)} items, worth {total_value(items):.2f}"]
    low = low_stock(items)
    if low:
        out.append(f"{len(low)} to reorder:")
        out.extend("  " + line for line in reorder_lines(items))
    else:
        out.append("nothing to reorder")
    return "\n".join(out)


def main(argv):
    if len(argv) != 2:
        print("usage: python3 inventory.py STOCK.csv", file=sys.stderr)
        return 2
    try:
        items = load(argv[1])
    except (OSError, ValueError, KeyError) as e:
        print(f"inventory: {e}", file=sys.stderr)
        return 1
    print(summary(items))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
