def line_item(name, qty, price):
    """One line of the receipt: name, quantity and the line's cost."""
    return f"{name} x{qty}: ${qty * price}"
