"""Run with `python3 test_calc.py`: prints `ok` when every case holds."""

from calc import add, multiply

assert add(2, 3) == 5, f"add(2, 3) == {add(2, 3)}, expected 5"
assert add(-1, 1) == 0, f"add(-1, 1) == {add(-1, 1)}, expected 0"
assert multiply(4, 5) == 20, f"multiply(4, 5) == {multiply(4, 5)}, expected 20"
print("ok")
