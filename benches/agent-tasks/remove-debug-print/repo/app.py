def run():
    value = 6 * 7
    print("debug: value =", value)
    return value


print(run())
