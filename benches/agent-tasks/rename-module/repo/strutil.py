import re


def slugify(title):
    """'Hello, World!' -> 'hello-world'"""
    return "-".join(re.findall(r"[a-z0-9]+", title.lower()))


def title_case(text):
    return " ".join(w.capitalize() for w in text.split())
