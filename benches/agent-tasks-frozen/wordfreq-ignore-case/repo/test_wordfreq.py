import unittest

from wordfreq import count_words, top


class WordFreqTest(unittest.TestCase):
    def test_counts(self):
        self.assertEqual(count_words("a b a")["a"], 2)

    def test_case_insensitive(self):
        counts = count_words("The cat and the hat")
        self.assertEqual(counts["the"], 2)

    def test_top(self):
        self.assertEqual(top("x y y z z z", 2), [("z", 3), ("y", 2)])


if __name__ == "__main__":
    unittest.main()
