"""Plain-text layout helpers for notices: word wrapping and a framed box."""


def wrap(text, width):
    """The words of text as lines of at most width characters (a longer word alone)."""
    lines = []
    line = ""
    for word in text.split():
        if line and len(line) + 1 + len(word) > width:
            lines.append(line)
            line = word
        else:
            line = f"{line} {word}" if line else word
    return lines


def box(lines, width):
    """Frame lines in a box of width inner columns."""
    edge = "+" + "-" * (width + 2) + "+"
    body = [f"| {line:<{width}} |" for line in lines]
    return [edge, *body, edge]


def paragraphs(text):
    """Blank-line separated paragraphs of text, without the blank lines."""
    out, current = [], []
    for raw in text.splitlines():
        if raw.strip():
            current.append(raw.strip())
        elif current:
            out.append(" ".join(current))
            current = []
    if current:
        out.append(" ".join(current))
    return out
