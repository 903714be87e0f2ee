"""Re-wrap paragraphs of text from a file or stdin."""
import argparse
import sys
import textwrap


def rewrap(text, width):
    paragraphs = [p for p in text.split("\n\n") if p.strip()]
    return "\n\n".join(textwrap.fill(" ".join(p.split()), width) for p in paragraphs)


def main(argv=None):
    parser = argparse.ArgumentParser(description="Re-wrap paragraphs.")
    parser.add_argument("--width", type=int, default=72, help="maximum line length")
    parser.add_argument("file", nargs="?", help="input file (default: stdin)")
    args = parser.parse_args(argv)
    if args.file:
        with open(args.file) as fh:
            text = fh.read()
    else:
        text = sys.stdin.read()
    print(rewrap(text, args.width))


if __name__ == "__main__":
    main()
