"""Usage: python3 timer.py DURATION [LABEL]

Says how long a timer for DURATION (e.g. 25m, 1h30m) runs; it does not wait.
"""

import sys

from durations import format_hms, parse


def plan(duration, label="timer"):
    seconds = parse(duration)
    return f"{label}: {seconds} s ({format_hms(seconds)})"


if __name__ == "__main__":
    if not 2 <= len(sys.argv) <= 3:
        sys.exit(__doc__.strip())
    try:
        print(plan(*sys.argv[1:]))
    except ValueError as err:
        sys.exit(f"timer.py: {err}")
