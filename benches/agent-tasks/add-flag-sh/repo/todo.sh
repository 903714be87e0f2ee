#!/bin/sh
# Usage: sh todo.sh FILE
# Prints the lines of FILE that contain TODO, with their line numbers.
file=$1
if [ -z "$file" ]; then
  echo "usage: sh todo.sh FILE" >&2
  exit 2
fi
grep -n TODO "$file"
