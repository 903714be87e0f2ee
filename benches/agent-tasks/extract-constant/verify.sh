#!/bin/sh
# Exit 0 iff the task is done; runs in the session's copy of repo/.
# Every call must follow the constant: the source is loaded with its `TIMEOUT = 30` line
# changed to 7, and every call must then pass 7 (a leftover literal 30 keeps passing 30).
# Judge the source, not a bytecode cache left stale by a same-size edit in the same second.
rm -rf __pycache__
python3 test_client.py >/dev/null && python3 -c '
import re

class Session:
    def __init__(self):
        self.timeouts = []
    def get(self, url, timeout=None):
        self.timeouts.append(timeout)
        return "pong"
    def post(self, url, data=None, timeout=None):
        self.timeouts.append(timeout)
        return "ok"

def calls(ns):
    s = Session()
    ns["fetch"](s, "/a")
    ns["submit"](s, "/b", {"k": 1})
    assert ns["ping"](s) is True
    return s.timeouts

src = open("client.py").read()
ns = {}
exec(compile(src, "client.py", "exec"), ns)
assert ns["TIMEOUT"] == 30, ns.get("TIMEOUT")
assert calls(ns) == [30, 30, 30], calls(ns)
changed, n = re.subn(r"(?m)^TIMEOUT(\s*:\s*int)?\s*=\s*30\b", "TIMEOUT = 7", src)
assert n == 1, "one line TIMEOUT = 30 expected"
ns = {}
exec(compile(changed, "client.py", "exec"), ns)
assert calls(ns) == [7, 7, 7], calls(ns)
'
