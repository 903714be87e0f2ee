"""A tiny to-do list kept in a text file, one item per line."""
import os
import sys

PATH = os.environ.get("TODO_FILE", "todo.txt")


def load():
    if not os.path.exists(PATH):
        return []
    with open(PATH) as fh:
        return [line.rstrip("\n") for line in fh if line.strip()]


def save(items):
    with open(PATH, "w") as fh:
        fh.writelines(item + "\n" for item in items)


def main(argv):
    if not argv:
        print("usage: python3 todo.py {add TEXT...|list}", file=sys.stderr)
        return 2
    command, rest = argv[0], argv[1:]
    items = load()
    if command == "add":
        items.append(" ".join(rest))
        save(items)
    elif command == "list":
        for number, item in enumerate(items, 1):
            print("%d. %s" % (number, item))
    else:
        print("unknown command: %s" % command, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
