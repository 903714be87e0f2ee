def discounted(price, percent):
    """price reduced by percent (0 to 100)."""
    return price * (100 + percent) / 100


def with_tax(price, rate=20):
    """price plus rate percent of tax."""
    return price * (100 + rate) / 100
