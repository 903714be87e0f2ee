"""Word frequencies for a text file."""
import re
import sys
from collections import Counter

WORD = re.compile(r"[A-Za-z']+")


def count_words(text):
    return Counter(WORD.findall(text))


def top(text, n=3):
    return count_words(text).most_common(n)


if __name__ == "__main__":
    with open(sys.argv[1]) as fh:
        for word, count in top(fh.read(), int(sys.argv[2]) if len(sys.argv) > 2 else 3):
            print("%5d %s" % (count, word))
