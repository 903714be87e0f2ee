#!/bin/sh
# usage: sh deploy.sh TARGET
. "$(dirname "$0")/lib/hosts.sh"

[ $# -eq 1 ] || { echo "usage: sh deploy.sh TARGET" >&2; exit 2; }
host=$(lookup_host "$1") || { echo "unknown target: $1" >&2; exit 1; }
echo "deploying to $1 at $host"
