import sys

from textfmt import box, paragraphs, wrap

WIDTH = 36


def render(text, width=WIDTH):
    """The notice as framed lines: each paragraph wrapped, a blank line between them."""
    lines = []
    for i, para in enumerate(paragraphs(text)):
        if i:
            lines.append("")
        lines.extend(wrap(para, width))
    return box(lines, width)


def main(path="notice.txt"):
    with open(path) as f:
        for line in render(f.read()):
            print(line)


if __name__ == "__main__":
    main(*sys.argv[1:])
