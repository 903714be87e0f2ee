"""What a request to the status server would be, given the settings."""

import sys

import config


def request_plan(cfg, path="/"):
    url = f"https://{cfg['host']}:{cfg['port']}{path}"
    return f"GET {url} (timeout {cfg['timeout']} s, {cfg['retries']} retries)"


if __name__ == "__main__":
    print(request_plan(config.load(*sys.argv[1:2])))
