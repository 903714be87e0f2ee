from durations import format_hms, parse
from timer import plan

assert parse("45s") == 45
assert parse("20m") == 1200
assert parse(" 2H ") == 7200
for bad in ["", "soon", "10", "5x"]:
    try:
        parse(bad)
    except ValueError:
        pass
    else:
        raise AssertionError(f"{bad!r} must be refused")
assert format_hms(5400) == "1:30:00"
assert format_hms(59) == "0:00:59"
assert plan("20m", "tea") == "tea: 1200 s (0:20:00)"
print("ok")
