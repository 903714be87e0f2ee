import sys

from catalog import search
from loader import load


def format_book(book):
    return f"{book.title} by {book.author}"


def main(args):
    books = load()
    if args:
        books = search(books, args[0])
    for b in books:
        print(format_book(b))
    print(f"{len(books)} books")


if __name__ == "__main__":
    main(sys.argv[1:])
