from pricing import discounted


def order_total(items, percent=0):
    """items: (quantity, unit price) pairs; percent: the order's discount."""
    return sum(discounted(qty * price, percent) for qty, price in items)
