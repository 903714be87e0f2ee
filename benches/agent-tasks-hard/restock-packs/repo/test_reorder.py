import unittest

from reorder import order_lines, packs_needed, shortfall


class ReorderTest(unittest.TestCase):
    def test_shortfall(self):
        self.assertEqual(shortfall(3, 10), 7)
        self.assertEqual(shortfall(12, 10), 0)

    def test_enough_stock_orders_nothing(self):
        self.assertEqual(packs_needed(40, 10, 12), 0)
        self.assertEqual(packs_needed(10, 10, 5), 0)

    def test_pack_size_checked(self):
        with self.assertRaises(ValueError):
            packs_needed(0, 5, 0)

    def test_no_lines_when_stocked(self):
        items = [{"sku": "A", "name": "a", "on_hand": 9, "minimum": 5, "pack": 2}]
        self.assertEqual(order_lines(items), [])


if __name__ == "__main__":
    unittest.main()
