import csv
import sys

from reorder import order_lines

NUMBERS = ("on_hand", "minimum", "pack")


def read_stock(path):
    with open(path, newline="") as f:
        return [{k: int(v) if k in NUMBERS else v for k, v in row.items()}
                for row in csv.DictReader(f)]


def main(path="stock.csv"):
    lines = order_lines(read_stock(path))
    if not lines:
        print("nothing to order")
        return
    for sku, name, packs, size in lines:
        print(f"{sku}  {name:<18} {packs} x {size:>2} = {packs * size} units")
    print(f"{len(lines)} items to order")


if __name__ == "__main__":
    main(*sys.argv[1:])
