from inventory import order_total

assert order_total([(1, 10)]) == 10, order_total([(1, 10)])
assert order_total([(2, 50)], 10) == 90, order_total([(2, 50)], 10)
print("ok")
