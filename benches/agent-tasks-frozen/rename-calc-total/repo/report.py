import pricing
from cart import Cart


def main():
    cart = Cart()
    cart.add("pen", 1.50, 4)
    cart.add("notebook", 3.25)
    print(cart.summary())
    print(cart.summary(discount=0.1))
    print("bulk: %.2f" % pricing.calc_total([("box", 10.0, 12)]))


if __name__ == "__main__":
    main()
