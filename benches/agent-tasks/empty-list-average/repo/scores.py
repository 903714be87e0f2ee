def average(scores):
    """The mean of a list of numbers."""
    return sum(scores) / len(scores)


def summary(scores):
    return f"{len(scores)} scores, average {average(scores):.1f}"
