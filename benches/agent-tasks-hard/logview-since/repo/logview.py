import argparse

from filters import by_level, read_entries


def main(argv=None):
    parser = argparse.ArgumentParser(description="Show the entries of a log file.")
    parser.add_argument("logfile")
    parser.add_argument("--level", choices=["DEBUG", "INFO", "WARN", "ERROR"],
                        default="INFO", help="lowest level shown (default INFO)")
    args = parser.parse_args(argv)
    with open(args.logfile) as f:
        entries = read_entries(f)
    entries = by_level(entries, args.level)
    for e in entries:
        print(f"{e.time} {e.level:<5} {e.message}")
    print(f"-- {len(entries)} entries")


if __name__ == "__main__":
    main()
