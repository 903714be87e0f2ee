import client


class FakeSession:
    def __init__(self):
        self.timeouts = []

    def get(self, url, timeout=None):
        self.timeouts.append(timeout)
        return "pong"

    def post(self, url, data=None, timeout=None):
        self.timeouts.append(timeout)
        return "ok"


s = FakeSession()
client.fetch(s, "/a")
client.submit(s, "/b", {})
assert client.ping(s)
assert s.timeouts == [30, 30, 30], s.timeouts
print("ok")
