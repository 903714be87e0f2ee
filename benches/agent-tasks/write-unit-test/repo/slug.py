import re


def slugify(title):
    """A URL-friendly form of title: lower case, words joined by hyphens.

    'Hello, World!' -> 'hello-world'
    """
    words = re.findall(r"[a-z0-9]+", title.lower())
    return "-".join(words)
