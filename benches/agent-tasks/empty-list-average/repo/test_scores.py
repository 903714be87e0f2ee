from scores import average, summary

assert average([4]) == 4
assert average([1, 2, 3, 4]) == 2.5
assert summary([3, 4]) == "2 scores, average 3.5", summary([3, 4])
print("ok")
