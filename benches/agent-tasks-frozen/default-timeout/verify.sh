#!/bin/sh
# Checks: with no argument client.py reports a 45 s timeout; an explicit
# timeout still wins; retries and user agent are unchanged.
rm -rf __pycache__
[ "$(python3 client.py 2>&1)" = "timeout=45s retries=3 agent=fetcher/1.4" ] || exit 1
[ "$(python3 client.py 10 2>&1)" = "timeout=10s retries=3 agent=fetcher/1.4" ] || exit 1
python3 -c 'import config, sys; sys.exit(0 if config.DEFAULT_TIMEOUT == 45 else 1)' || exit 1
