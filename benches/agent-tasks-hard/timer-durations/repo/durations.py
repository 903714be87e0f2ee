"""Durations written the short way: "45s", "20m", "2h", "1h30m", "1h5m30s"."""

import re

UNITS = {"h": 3600, "m": 60, "s": 1}

_DURATION = re.compile(r"(?:(\d+)([hms]))+")


def parse(text):
    """Seconds in a duration such as "1h30m"; ValueError for anything else."""
    match = _DURATION.fullmatch(text.strip().lower())
    if not match:
        raise ValueError(f"not a duration: {text!r}")
    number, unit = match.groups()
    return int(number) * UNITS[unit]


def format_hms(seconds):
    """5400 -> "1:30:00"."""
    minutes, secs = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}:{minutes:02d}:{secs:02d}"
