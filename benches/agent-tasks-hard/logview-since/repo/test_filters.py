import unittest

from filters import by_level, parse_entry, read_entries

LINES = [
    "2024-05-02 09:05:12 DEBUG cache warmed\n",
    "not a log line\n",
    "2024-05-02 09:14:07 WARN disk 91% full\n",
    "2024-05-02 09:47:55 ERROR upload failed: timeout\n",
]


class FiltersTest(unittest.TestCase):
    def test_parse(self):
        e = parse_entry(LINES[2])
        self.assertEqual((e.time, e.level, e.message), ("09:14:07", "WARN", "disk 91% full"))
        self.assertIsNone(parse_entry(LINES[1]))

    def test_by_level(self):
        entries = read_entries(LINES)
        self.assertEqual([e.level for e in by_level(entries, "WARN")], ["WARN", "ERROR"])
        self.assertEqual(len(by_level(entries, "DEBUG")), 3)


if __name__ == "__main__":
    unittest.main()
