import argparse


def main():
    parser = argparse.ArgumentParser(description="Print a greeting several times.")
    parser.add_argument("--count", type=int, default=1, help="how many lines to print")
    parser.add_argument("--name", default="world", help="who to greet")
    args = parser.parse_args()
    for i in range(1, args.count):
        print(f"hello, {args.name}")


main()
