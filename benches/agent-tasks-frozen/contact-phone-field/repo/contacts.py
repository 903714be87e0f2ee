"""Contact records and their JSON form."""
import json


class Contact:
    def __init__(self, name, email):
        self.name = name
        self.email = email

    def to_dict(self):
        return {"name": self.name, "email": self.email}

    @classmethod
    def from_dict(cls, data):
        return cls(data["name"], data["email"])

    def __repr__(self):
        return "Contact(%r, %r)" % (self.name, self.email)


def dump(contacts):
    return json.dumps([c.to_dict() for c in contacts], indent=2)


def load(text):
    return [Contact.from_dict(d) for d in json.loads(text)]
