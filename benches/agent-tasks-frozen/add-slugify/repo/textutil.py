"""Small text helpers used by the blog generator."""


def truncate(text, limit, suffix="..."):
    """Cut text to at most limit characters, ending with suffix if cut."""
    if len(text) <= limit:
        return text
    return text[:max(0, limit - len(suffix))] + suffix


def title_case(text):
    small = {"a", "an", "and", "of", "the", "to"}
    words = text.split()
    out = []
    for i, word in enumerate(words):
        low = word.lower()
        out.append(low if i and low in small else low.capitalize())
    return " ".join(out)
