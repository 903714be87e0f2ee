#!/bin/sh
# Exit 0 iff the task is done; runs in the session's copy of repo/.
# config.json, the defaults, both readers (client.py and health.py, whose .get() with a
# default hides a missed rename) and the README use timeout_seconds, and no code or document
# names the old key; the old key is refused, the new one read by both modules and defaulted
# to 10; the test (updated for the new name) passes and both programs print what they did.
# Judge the source, not a bytecode cache left stale by a same-size edit in the same second.
rm -rf __pycache__
python3 test_config.py >/dev/null &&
    [ "$(python3 client.py)" = 'GET https://status.example.org:8443/ (timeout 5 s, 2 retries)' ] &&
    [ "$(python3 health.py)" = 'health check: 3 endpoints, at most 45 s' ] &&
    grep -q 'timeout_seconds' README.md && ! grep -q '`timeout`' README.md &&
    ! grep -qE "[\"']timeout[\"']" ./*.py config.json && python3 -c '
import json, os, tempfile
import client, config, health
cfg = json.load(open("config.json"))
assert cfg == {"host": "status.example.org", "port": 8443, "timeout_seconds": 5, "retries": 2}, cfg
assert config.DEFAULTS.get("timeout_seconds") == 10 and "timeout" not in config.DEFAULTS
d = tempfile.mkdtemp()
path = os.path.join(d, "c.json")
def write(obj):
    with open(path, "w") as f:
        json.dump(obj, f)
write({"timeout": 3})
try:
    config.load(path)
except KeyError:
    pass
else:
    raise AssertionError("the old key timeout must be refused")
write({"timeout_seconds": 7, "retries": 1})
cfg = config.load(path)
assert "timeout 7 s, 1 retries" in client.request_plan(cfg), client.request_plan(cfg)
assert health.worst_case_seconds(cfg) == 42, health.worst_case_seconds(cfg)
write({"retries": 0})
cfg = config.load(path)
assert "timeout 10 s" in client.request_plan(cfg), client.request_plan(cfg)
assert health.worst_case_seconds(cfg) == 30, health.worst_case_seconds(cfg)
'
