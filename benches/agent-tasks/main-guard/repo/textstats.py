import sys


def word_count(text):
    return len(text.split())


def longest_word(text):
    return max(text.split(), key=len, default="")


text = " ".join(sys.argv[1:]) or "the quick brown fox"
print("words:", word_count(text))
print("longest:", longest_word(text))
