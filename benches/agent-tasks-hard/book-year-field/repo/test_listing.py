import unittest

from catalog import Book, by_author, search
from listing import format_book


class CatalogTest(unittest.TestCase):
    def setUp(self):
        self.books = [
            Book("Dune", "Frank Herbert"),
            Book("The Dispossessed", "Ursula K. Le Guin"),
        ]

    def test_format(self):
        self.assertEqual(format_book(self.books[0]), "Dune by Frank Herbert")

    def test_by_author(self):
        self.assertEqual(by_author(self.books, "Ursula K. Le Guin"), self.books[1:])

    def test_search_ignores_case(self):
        self.assertEqual(search(self.books, "DUNE"), self.books[:1])


if __name__ == "__main__":
    unittest.main()
