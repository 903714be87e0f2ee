"""Price calculations for the shop."""

TAX_RATE = 0.2


def calc_total(items, discount=0.0):
    """Sum of price * qty over items, minus a fractional discount, plus tax."""
    subtotal = sum(price * qty for _, price, qty in items)
    subtotal -= subtotal * discount
    return round(subtotal * (1 + TAX_RATE), 2)


def unit_label(qty):
    return "item" if qty == 1 else "items"
