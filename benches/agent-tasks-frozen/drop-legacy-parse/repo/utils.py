"""Helpers for reading the member list."""


def _clean(field):
    return field.strip().strip('"')


def normalize_name(name):
    parts = [p for p in _clean(name).split() if p]
    return " ".join(p.capitalize() for p in parts)


def legacy_parse(line):
    # Old pipe-separated format, superseded by parse_record in v2.
    fields = line.rstrip("\n").split("|")
    if len(fields) != 3:
        return None
    return {"name": _clean(fields[0]), "email": _clean(fields[1]),
            "joined": int(_clean(fields[2]))}


def parse_record(line):
    fields = line.rstrip("\n").split(";")
    if len(fields) != 3:
        raise ValueError("bad record: %r" % line)
    return {"name": normalize_name(fields[0]),
            "email": _clean(fields[1]).lower(),
            "joined": int(_clean(fields[2]))}
