"""Copy a file into the shared folder, retrying while the share is unavailable."""

import configparser
import shutil
import sys

from retry import call_with_retry


def settings(path="settings.ini"):
    cfg = configparser.ConfigParser()
    cfg.read(path)
    s = cfg["retry"]
    return s.getint("retries"), s.getfloat("base_delay"), s.getfloat("max_delay")


def main(src, dest):
    retries, base, max_delay = settings()
    copied = call_with_retry(lambda: shutil.copy(src, dest), retries, base, max_delay)
    print(f"copied {src} to {copied}")


if __name__ == "__main__":
    main(*sys.argv[1:3])
