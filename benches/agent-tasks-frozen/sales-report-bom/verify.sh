#!/bin/sh
# Checks: sales.csv unchanged; report on it prints the exact per-region
# totals; a hidden export with a byte-order mark and a hidden export without
# one both report correctly.
rm -rf __pycache__
sha256sum -c --quiet - >/dev/null 2>&1 <<'EOF' || exit 1
3cac6a518eabb7088b0b6ac7e4aef238eefbf29fe1e7797fbb32e549637d2dec  sales.csv
EOF
[ "$(python3 report.py sales.csv 2>&1)" = "East          42.25
North        220.00
South         80.00" ] || exit 1
t=$(mktemp -d) || exit 1
trap 'rm -rf "$t"' EXIT
printf '\357\273\277region,amount,rep\nWest,10.00,a\n West ,5.50,b\nNorth,1.25,c\n' > "$t/bom.csv"
[ "$(python3 report.py "$t/bom.csv" 2>&1)" = "North          1.25
West          15.50" ] || exit 1
printf 'region,amount,rep\nSouth,3.00,a\nSouth,4.00,b\n' > "$t/plain.csv"
[ "$(python3 report.py "$t/plain.csv" 2>&1)" = "South          7.00" ] || exit 1
exit 0
