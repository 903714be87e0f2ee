"""Print the index entries for a few posts."""
from textutil import title_case, truncate

POSTS = [
    ("a walk to the sea", "We left early and followed the river all the way down."),
    ("notes of a beginner baker", "Bread is mostly patience, and a very hot oven."),
]

if __name__ == "__main__":
    for title, body in POSTS:
        print(title_case(title))
        print("    " + truncate(body, 40))
