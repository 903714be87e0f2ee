"""Retrying a flaky operation with exponential backoff."""

import time


def delays(retries, base, max_delay):
    """The waits before each retry: base, then doubling, never above max_delay."""
    out = []
    delay = base
    for _ in range(retries):
        out.append(delay)
        delay = delay * 2
    return out


def call_with_retry(fn, retries, base, max_delay, sleep=time.sleep, log=print):
    """fn() until it returns; after a failure (OSError) wait and try again, retries times."""
    waits = delays(retries, base, max_delay)
    for attempt in range(retries + 1):
        try:
            return fn()
        except OSError as err:
            if attempt == retries:
                raise
            log(f"attempt {attempt + 1} failed ({err}); retrying in {waits[attempt]:g} s")
            sleep(waits[attempt])
