"""Defaults shared by the client and the command line."""

DEFAULT_TIMEOUT = 30  # seconds
DEFAULT_RETRIES = 3
USER_AGENT = "fetcher/1.4"
