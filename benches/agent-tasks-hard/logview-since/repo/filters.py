"""Parsing log lines ("2024-05-02 09:14:07 WARN disk 91% full") and picking entries."""

from collections import namedtuple

Entry = namedtuple("Entry", "day time level message")

LEVELS = ["DEBUG", "INFO", "WARN", "ERROR"]


def parse_entry(line):
    """An Entry, or None for a line that is not a log entry."""
    parts = line.rstrip("\n").split(" ", 3)
    if len(parts) < 4 or parts[2] not in LEVELS:
        return None
    return Entry(*parts)


def read_entries(lines):
    return [e for e in map(parse_entry, lines) if e is not None]


def by_level(entries, level):
    """The entries at level or above (WARN: WARN and ERROR)."""
    floor = LEVELS.index(level)
    return [e for e in entries if LEVELS.index(e.level) >= floor]
