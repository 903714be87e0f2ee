import json
import os
import tempfile

import config

with tempfile.TemporaryDirectory() as d:
    path = os.path.join(d, "c.json")
    with open(path, "w") as f:
        json.dump({"host": "h", "retries": 0}, f)
    cfg = config.load(path)
    assert (cfg["host"], cfg["port"], cfg["retries"]) == ("h", 8080, 0), cfg
    with open(path, "w") as f:
        json.dump({"hots": "typo"}, f)
    try:
        config.load(path)
    except KeyError:
        pass
    else:
        raise AssertionError("an unknown key must be refused")
print("ok")
