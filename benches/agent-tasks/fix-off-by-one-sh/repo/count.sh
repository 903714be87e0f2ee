#!/bin/sh
# Prints the numbers 1 to N, one per line.
n=$1
i=0
while [ "$i" -le "$n" ]; do
  echo "$i"
  i=$((i + 1))
done
