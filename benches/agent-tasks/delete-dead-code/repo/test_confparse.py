from confparse import parse

assert parse("a = 1\nb = 2\n") == {"a": "1", "b": "2"}
assert parse("# comment\n\nkey = value  # note\n") == {"key": "value"}
print("ok")
