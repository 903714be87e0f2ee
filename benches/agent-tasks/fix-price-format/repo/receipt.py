from cart import line_item

ITEMS = [("tea", 2, 1.75), ("cake", 1, 3.5)]


def total_line(items):
    total = sum(qty * price for _, qty, price in items)
    return "Total: $" + str(total)


if __name__ == "__main__":
    for name, qty, price in ITEMS:
        print(line_item(name, qty, price))
    print(total_line(ITEMS))
