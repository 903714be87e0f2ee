"""How long a full health check may take, in the worst case."""

import sys

import config

ENDPOINTS = ["/health", "/ready", "/metrics"]


def worst_case_seconds(cfg):
    """Every endpoint times out on every attempt (the first try plus the retries)."""
    attempts = 1 + cfg["retries"]
    return len(ENDPOINTS) * attempts * cfg.get("timeout", 10)


if __name__ == "__main__":
    cfg = config.load(*sys.argv[1:2])
    print(f"health check: {len(ENDPOINTS)} endpoints, at most {worst_case_seconds(cfg)} s")
