from utils import parse_record


def main():
    with open("members.txt") as fh:
        for line in fh:
            if line.strip():
                r = parse_record(line)
                print("%s <%s> since %d" % (r["name"], r["email"], r["joined"]))


if __name__ == "__main__":
    main()
