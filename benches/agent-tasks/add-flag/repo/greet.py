import argparse

parser = argparse.ArgumentParser()
parser.add_argument("name")
args = parser.parse_args()
greeting = f"Hello, {args.name}"
print(greeting)
