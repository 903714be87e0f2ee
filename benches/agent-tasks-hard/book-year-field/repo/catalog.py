"""The library's catalogue: books and lookups over them."""

from dataclasses import dataclass


@dataclass(frozen=True)
class Book:
    title: str
    author: str


def by_author(books, author):
    """The books by author, in catalogue order."""
    return [b for b in books if b.author == author]


def search(books, word):
    """The books whose title holds word, whatever the case."""
    word = word.lower()
    return [b for b in books if word in b.title.lower()]
