"""Settings from config.json, with defaults for the keys it leaves out."""

import json

DEFAULTS = {
    "host": "localhost",
    "port": 8080,
    "timeout": 10,
    "retries": 3,
}


def load(path="config.json"):
    with open(path) as f:
        given = json.load(f)
    unknown = sorted(set(given) - set(DEFAULTS))
    if unknown:
        raise KeyError(f"unknown settings in {path}: {', '.join(unknown)}")
    return {**DEFAULTS, **given}
