import unittest

from inventory import Item, low_stock


class LowStock(unittest.TestCase):
    def test_below_threshold(self):
        items = [Item("a", "a", 1, 5, 1.0), Item("b", "b", 9, 5, 1.0)]
        self.assertEqual([i.sku for i in low_stock(items)], ["a"])

    def test_at_threshold(self):
        items = [Item("a", "a", 5, 5, 1.0)]
        self.assertEqual([i.sku for i in low_stock(items)], ["a"])


if __name__ == "__main__":
    unittest.main()
