#!/bin/sh
# Usage: sh linecount.sh FILE...
# Prints each FILE's number of lines, then its name.
for f in $@; do
  n=$(cat $f | wc -l)
  echo "$n $f"
done
