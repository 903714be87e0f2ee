def format_price(amount):
    """An amount with two decimals and its currency, e.g. 3.50 USD."""
    return f"{amount:.2f} USD"
