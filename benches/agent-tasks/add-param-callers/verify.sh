#!/bin/sh
# Exit 0 iff the task is done; runs in the session's copy of repo/.
# The test passes, the parameter works (positional and by name, default kept) and both callers
# go through it, not around it.
# Judge the source, not a bytecode cache left stale by a same-size edit in the same second.
rm -rf __pycache__
python3 test_money.py >/dev/null && python3 -c '
from money import format_price
assert format_price(3.5) == "3.50 USD", format_price(3.5)
assert format_price(0) == "0.00 USD", format_price(0)
assert format_price(2) == "2.00 USD", format_price(2)
assert format_price(2, "JPY") == "2.00 JPY", format_price(2, "JPY")
assert format_price(1.5, currency="CHF") == "1.50 CHF"
import invoice, receipt
assert invoice.invoice_line("a", 1) == "a: 1.00 EUR", invoice.invoice_line("a", 1)
assert invoice.invoice_line("b", 10) == "b: 10.00 EUR", invoice.invoice_line("b", 10)
assert receipt.total_line([1, 2.5]) == "Total 3.50 GBP", receipt.total_line([1, 2.5])
' && grep -q 'format_price(' invoice.py && grep -q 'format_price(' receipt.py &&
    [ "$(python3 invoice.py)" = 'widget: 3.50 EUR' ] && [ "$(python3 receipt.py)" = 'Total 3.50 GBP' ]
