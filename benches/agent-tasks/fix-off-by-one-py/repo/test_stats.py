from stats import mean

assert mean([2]) == 2, mean([2])
assert mean([1, 2, 3]) == 2, mean([1, 2, 3])
print("ok")
