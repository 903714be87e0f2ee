import argparse

parser = argparse.ArgumentParser(
    description="Print the size an image would be resized to.", allow_abbrev=False
)
parser.add_argument("image")
parser.add_argument("--width", type=int, required=True, help="new width in pixels")
parser.add_argument("--height", type=int, help="new height in pixels")
parser.add_argument(
    "--keep-aspect", action="store_true", help="compute the height from a 4:3 aspect"
)
args = parser.parse_args()
height = args.width * 3 // 4 if args.keep_aspect else args.height
if height is None:
    parser.error("give --height or --keep-aspect")
print(f"{args.image}: {args.width}x{height}")
