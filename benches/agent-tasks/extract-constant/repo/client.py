"""Thin wrappers around an HTTP session object (anything with get and post)."""


def fetch(session, url):
    return session.get(url, timeout=30)


def submit(session, url, data):
    return session.post(url, data=data, timeout=30)


def ping(session):
    reply = session.get("/ping", timeout=30)
    return reply == "pong"
