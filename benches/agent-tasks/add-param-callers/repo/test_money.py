from money import format_price

assert format_price(3.5) == "3.50 USD", format_price(3.5)
assert format_price(0) == "0.00 USD", format_price(0)
print("ok")
