#!/bin/sh
# Usage: sh bump.sh VERSION [major|minor|patch]
# Prints VERSION with the given part (default: patch) increased by one.
. ./semver.sh
v=$1
part=${2:-patch}
ma=$(major "$v")
mi=$(minor "$v")
pa=$(patch "$v")
case $part in
  major) echo "$((ma + 1)).0.0" ;;
  minor) echo "$ma.$((mi + 1)).0" ;;
  patch) echo "$ma.$mi.$((pa + 1))" ;;
  *) echo "unknown part: $part" >&2; exit 2 ;;
esac
