"""Split a listing into pages."""


def page_count(total, per_page):
    """Pages needed to show total items; an empty listing still has one page."""
    if per_page <= 0:
        raise ValueError("per_page must be positive")
    return total // per_page + 1


def page_items(items, page, per_page):
    """The items on 1-based page number `page`."""
    start = (page - 1) * per_page
    return items[start:start + per_page]
