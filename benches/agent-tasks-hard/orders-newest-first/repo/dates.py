"""Dates as the shop writes them in its files: "9 Mar 2024"."""

MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun",
          "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]


def parse(text):
    """Split "9 Mar 2024" into (year, month, day), the order dates sort in."""
    day, month, year = text.split()
    if month not in MONTHS:
        raise ValueError(f"unknown month in {text!r}")
    return int(year), MONTHS.index(month) + 1, day


def iso(text):
    """"9 Mar 2024" -> "2024-03-09"."""
    year, month, day = parse(text)
    return f"{year:04d}-{month:02d}-{int(day):02d}"
