from cart import line_item
from receipt import total_line

assert line_item("tea", 2, 1.75) == "tea x2: $3.50", line_item("tea", 2, 1.75)
assert total_line([("tea", 2, 1.75), ("cake", 1, 3.5)]) == "Total: $7.00", total_line([("tea", 2, 1.75), ("cake", 1, 3.5)])
print("ok")
