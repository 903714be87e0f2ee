#!/bin/sh
# Exit 0 iff the task is done; runs in the session's copy of repo/.
# The lines themselves, and the file as an INI file: the parser (strict) refuses a key given
# twice, so new lines added next to the old ones do not pass.
# Judge the source, not a bytecode cache left stale by a same-size edit in the same second.
rm -rf __pycache__
grep -qx 'port = 8080' settings.ini && grep -qx 'debug = false' settings.ini &&
    grep -qx 'host = localhost' settings.ini && grep -qx 'name = demo' settings.ini &&
    python3 -c '
import configparser
c = configparser.ConfigParser()
c.read("settings.ini")
got = {s: dict(c[s]) for s in c.sections()}
want = {"server": {"host": "localhost", "port": "8080"}, "app": {"name": "demo", "debug": "false"}}
assert got == want, got
'
