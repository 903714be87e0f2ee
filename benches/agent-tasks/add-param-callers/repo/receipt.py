import money


def total_line(amounts):
    return "Total " + money.format_price(sum(amounts))


if __name__ == "__main__":
    print(total_line([1, 2.5]))
