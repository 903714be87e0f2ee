"""Reading the catalogue from a CSV file (columns: title, author, year)."""

import csv

from catalog import Book


def load(path="books.csv"):
    books = []
    with open(path, newline="", encoding="utf-8") as f:
        for row in csv.DictReader(f):
            title = row["title"].strip()
            author = row["author"].strip()
            if title:
                books.append(Book(title, author))
    return books


def unknown_author():
    """A placeholder for entries whose author is not recorded yet."""
    return Book("(untitled)", "unknown")
