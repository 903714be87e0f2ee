#!/bin/sh
# Tiny helper CLI.
# usage: sh tool.sh [--help] {hello [NAME]|today}

usage() {
    echo "usage: sh tool.sh [--help] {hello [NAME]|today}"
}

case "$1" in
    --help|-h) usage ;;
    hello) echo "hello, ${2:-world}" ;;
    today) date +%Y-%m-%d ;;
    *) usage >&2; exit 2 ;;
esac
