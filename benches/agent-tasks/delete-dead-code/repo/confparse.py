def _strip_comment(line):
    return line.split("#", 1)[0].strip()


def parse(text):
    """key = value lines into a dict; blank lines and # comments ignored."""
    result = {}
    for raw in text.splitlines():
        line = _strip_comment(raw)
        if not line:
            continue
        key, _, value = line.partition("=")
        result[key.strip()] = value.strip()
    return result


def legacy_parse(text):
    """The old colon format (key: value). Unused since version 2."""
    result = {}
    for raw in text.splitlines():
        line = _strip_comment(raw)
        if ":" in line:
            key, value = line.split(":", 1)
            result[key.strip()] = value.strip()
    return result
