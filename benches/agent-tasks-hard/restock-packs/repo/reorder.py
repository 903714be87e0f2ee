"""How much stock to order: whole packs, enough to get back to the minimum."""


def shortfall(on_hand, minimum):
    """Units missing to reach minimum (0 when there are enough)."""
    return max(0, minimum - on_hand)


def packs_needed(on_hand, minimum, pack_size):
    """Whole packs to order so that on_hand reaches at least minimum."""
    if pack_size < 1:
        raise ValueError("pack_size must be at least 1")
    return shortfall(on_hand, minimum) // pack_size


def order_lines(items):
    """(sku, name, packs, pack_size) for every item that needs an order."""
    lines = []
    for it in items:
        packs = packs_needed(it["on_hand"], it["minimum"], it["pack"])
        if packs:
            lines.append((it["sku"], it["name"], packs, it["pack"]))
    return lines
