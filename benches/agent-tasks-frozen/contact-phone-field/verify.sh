#!/bin/sh
# Checks: Contact(name, email).phone == ""; phone= keyword works; to_dict()
# and dump() include it; load(dump(...)) keeps it; old JSON without "phone"
# loads with phone ""; contacts.json (old format) is unchanged and show.py
# still lists it.
rm -rf __pycache__
python3 - <<'EOF' || exit 1
import json
from contacts import Contact, dump, load
a = Contact("Ann", "ann@x.org")
assert a.phone == ""
b = Contact("Bo", "bo@x.org", phone="+44 113 496 0000")
assert b.phone == "+44 113 496 0000"
assert b.to_dict()["phone"] == "+44 113 496 0000"
assert b.to_dict()["name"] == "Bo" and b.to_dict()["email"] == "bo@x.org"
back = load(dump([a, b]))
assert [c.phone for c in back] == ["", "+44 113 496 0000"]
assert [c.name for c in back] == ["Ann", "Bo"]
assert json.loads(dump([b]))[0]["phone"] == "+44 113 496 0000"
old = load('[{"name": "Cy", "email": "cy@x.org"}]')
assert old[0].phone == "" and old[0].email == "cy@x.org"
EOF
sha256sum -c --quiet - >/dev/null 2>&1 <<'EOF' || exit 1
57a8baa0591f332126efebe2572f8480b445fbd2d46ae614b0452a0117654d67  contacts.json
EOF
[ "$(python3 show.py 2>&1)" = "Ann        ann@example.org
Bo         bo@example.org" ] || exit 1
