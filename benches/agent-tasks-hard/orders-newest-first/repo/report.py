import sys

from dates import iso
from orders import by_customer, load, newest_first


def main(path="orders.csv"):
    orders = load(path)
    print(f"{len(orders)} orders, newest first:")
    for o in newest_first(orders):
        print(f"  {iso(o.date)}  #{o.number}  {o.customer:<8} {o.items:>3} items")
    print("items per customer:")
    for name, items in sorted(by_customer(orders).items()):
        print(f"  {name:<8} {items:>3}")


if __name__ == "__main__":
    main(*sys.argv[1:])
