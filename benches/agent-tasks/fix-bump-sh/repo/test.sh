#!/bin/sh
# Runs bump.sh on a few versions; prints ok or the first failure.
check() {
  got=$(sh bump.sh "$1" "$2")
  if [ "$got" != "$3" ]; then echo "FAIL: bump.sh $1 $2: got '$got', want '$3'"; exit 1; fi
}
check 1.2.3 major 2.0.0
check 1.2.3 minor 1.3.0
check 1.2.3 patch 1.2.4
echo ok
