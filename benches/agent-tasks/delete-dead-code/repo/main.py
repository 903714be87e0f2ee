import sys

from confparse import parse

with open(sys.argv[1] if len(sys.argv) > 1 else "app.conf") as f:
    settings = parse(f.read())
for key in sorted(settings):
    print(f"{key}={settings[key]}")
