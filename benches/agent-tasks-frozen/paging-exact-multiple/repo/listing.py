"""Show one page of a generated listing: python3 listing.py [COUNT] [PAGE]"""
import sys

from paging import page_count, page_items


def render(items, page, per_page=10):
    pages = page_count(len(items), per_page)
    if not 1 <= page <= pages:
        return "no such page (there are %d)" % pages
    lines = ["page %d of %d" % (page, pages)]
    lines += ["  " + item for item in page_items(items, page, per_page)]
    return "\n".join(lines)


def main(argv):
    count = int(argv[1]) if len(argv) > 1 else 20
    page = int(argv[2]) if len(argv) > 2 else 1
    items = ["item %d" % i for i in range(1, count + 1)]
    print(render(items, page))


if __name__ == "__main__":
    main(sys.argv)
