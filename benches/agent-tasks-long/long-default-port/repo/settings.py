"""Server settings: defaults, a settings file of KEY=VALUE lines, and the environment."""

import os
import sys

DEFAULTS = {
    "host": "127.0.0.1",
    "port": 80,
    "workers": 2,
    "timeout": 30,
    "log_level": "info",
    "static_dir": "static",
}

INTEGER_KEYS = {"port", "workers", "timeout"}
LOG_LEVELS = ("debug", "info", "warning", "error")


class SettingsError(Exception):
    pass


def parse_value(key, text):
    """The typed value of `key` from its text."""
    text = text.strip()
    if key in INTEGER_KEYS:
        try:
            value = int(text)
        except ValueError:
            raise SettingsError(f"{key}: not a number: {text!r}")
        if value <= 0:
            raise SettingsError(f"{key}: must be positive")
        return value
    if key == "log_level" and text not in LOG_LEVELS:
        raise SettingsError(f"log_level: one of {', '.join(LOG_LEVELS)}")
    return text


def read_file(path):
    """The settings a KEY=VALUE file sets; blank lines and # comments are skipped."""
    found = {}
    with open(path) as f:
        for n, line in enumerate(f, start=1):
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            if "=" not in line:
                raise SettingsError(f"{path}:{n}: expected KEY=VALUE")
            key, _, text = line.partition("=")
            key = key.strip().lower()
            if key not in DEFAULTS:
                raise SettingsError(f"{path}:{n}: unknown setting {key!r}")
            found[key] = parse_value(key, text)
    return found


def from_env(environ):
    """The settings the environment sets (APP_PORT=8000 sets port)."""
    found = {}
    for key in DEFAULTS:
        name = "APP_" + key.upper()
        if name in environ:
            found[key] = parse_value(key, environ[name])
    return found


def load(path=None, environ=None):
    """Defaults, then the file (if any), then the environment: the last one wins."""
    settings = dict(DEFAULTS)
    if path is not None:
        settings.update(read_file(path))
    settings.update(from_env(os.environ if environ is None else environ))
    return settings


def describe(settings):
    """One `key = value` line per setting, in name order."""
    return "\n".join(f"{key} = {settings[key]}" for key in sorted(settings))


def main(argv):
    path = argv[1] if len(argv) > 1 else None
    try:
        settings = load(path)
    except (OSError, SettingsError) as e:
        print(f"settings: {e}", file=sys.stderr)
        return 1
    print(describe(settings))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
