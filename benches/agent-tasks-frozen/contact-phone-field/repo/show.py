"""Print the address book stored in contacts.json."""
from contacts import load


def main():
    with open("contacts.json") as fh:
        for contact in load(fh.read()):
            print("%-10s %s" % (contact.name, contact.email))


if __name__ == "__main__":
    main()
