#!/bin/sh
# Exit 0 iff the task is done; runs in the session's copy of repo/.
# app.py must be the one shipped (defaults written into the code are not a config file), and
# config.json must hold the values with their JSON types (8080, not "8080").
# Judge the source, not a bytecode cache left stale by a same-size edit in the same second.
rm -rf __pycache__
echo '08e75c18af75111c7c92d2f0f90df77869397ea42ccb231bfa1d51947fcbe665  app.py' |
    sha256sum -c --quiet - >/dev/null 2>&1 &&
    [ "$(python3 app.py)" = 'demo listening on port 8080 with 8 threads' ] &&
    python3 -c '
import json
c = json.load(open("config.json"))
assert c == {"name": "demo", "port": 8080, "workers": 4}, c
'
