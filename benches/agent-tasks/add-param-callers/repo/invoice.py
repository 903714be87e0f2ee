from money import format_price


def invoice_line(item, amount):
    return f"{item}: {format_price(amount)}"


if __name__ == "__main__":
    print(invoice_line("widget", 3.5))
