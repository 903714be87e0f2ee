from pricing import calc_total, unit_label


class Cart:
    def __init__(self):
        self.items = []

    def add(self, name, price, qty=1):
        self.items.append((name, price, qty))

    def count(self):
        return sum(qty for _, _, qty in self.items)

    def summary(self, discount=0.0):
        n = self.count()
        total = calc_total(self.items, discount)
        return "%d %s, total %.2f" % (n, unit_label(n), total)
