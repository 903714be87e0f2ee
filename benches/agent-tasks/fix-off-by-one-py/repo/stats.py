def mean(xs):
    """The arithmetic mean of a non-empty list."""
    total = 0
    for i in range(1, len(xs)):
        total += xs[i]
    return total / len(xs)
