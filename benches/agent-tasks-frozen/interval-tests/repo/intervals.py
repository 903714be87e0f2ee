"""Merge overlapping closed intervals."""


def merge(intervals):
    """Merge [start, end] pairs; touching pairs such as [1, 2] and [2, 3] merge too.

    Returns a new list of [start, end] lists sorted by start; the input is
    left unchanged.
    """
    result = []
    for start, end in sorted(intervals):
        if result and start <= result[-1][1]:
            result[-1][1] = max(result[-1][1], end)
        else:
            result.append([start, end])
    return result


def total_length(intervals):
    """Length covered by the union of the intervals."""
    return sum(end - start for start, end in merge(intervals))
