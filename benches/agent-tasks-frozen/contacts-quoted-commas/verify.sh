#!/bin/sh
# Checks: contacts.csv unchanged; `python3 summarize.py contacts.csv` prints
# the exact 3-city summary; a hidden export with a quoted city containing a
# comma, doubled quotes inside a field and a blank line summarises correctly.
rm -rf __pycache__
sha256sum -c --quiet - >/dev/null 2>&1 <<'EOF' || exit 1
87c4b37cb96a30efe498dc4ef15c87af48d6d10d559b234691dac94b47f54a82  contacts.csv
EOF
[ "$(python3 summarize.py contacts.csv 2>&1)" = "5 contacts in 3 cities
  Hull: 1
  Leeds: 2
  York: 2" ] || exit 1
t=$(mktemp -d) || exit 1
trap 'rm -rf "$t"' EXIT
cat > "$t/other.csv" <<'EOF'
name,company,city
"Ann ""Nan"" Lee",Acme,"Washington, D.C."
Bo,"A, B",Leeds
Cy,X,"Washington, D.C."

EOF
[ "$(python3 summarize.py "$t/other.csv" 2>&1)" = "3 contacts in 2 cities
  Leeds: 1
  Washington, D.C.: 2" ] || exit 1
exit 0
