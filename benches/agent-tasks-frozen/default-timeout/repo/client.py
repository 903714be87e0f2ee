"""Describe the request settings the fetcher would use."""
import sys

import config


def effective_timeout(requested=None):
    """The caller's timeout if one was given, otherwise the default."""
    if requested is None:
        return config.DEFAULT_TIMEOUT
    return requested


def describe(requested=None):
    return "timeout=%ss retries=%d agent=%s" % (
        effective_timeout(requested), config.DEFAULT_RETRIES, config.USER_AGENT)


if __name__ == "__main__":
    wanted = int(sys.argv[1]) if len(sys.argv) > 1 else None
    print(describe(wanted))
