#!/bin/sh
# Exit 0 iff the task is done; runs in the session's copy of repo/.
# The shipped test, byte for byte, then hidden versions (multi-digit parts, the default part,
# patch helper on its own).
echo '36f07b343dbf1b3d353a5282c1b0a81d66dba255031b07a24ac69d4656b05207  test.sh' |
    sha256sum -c --quiet - >/dev/null 2>&1 &&
    sh test.sh >/dev/null &&
    [ "$(sh bump.sh 0.9.9)" = 0.9.10 ] &&
    [ "$(sh bump.sh 10.20.30 patch)" = 10.20.31 ] &&
    [ "$(sh bump.sh 10.20.30 minor)" = 10.21.0 ] &&
    [ "$(sh bump.sh 4.5.6 major)" = 5.0.0 ] &&
    [ "$(sh -c '. ./semver.sh; patch 7.8.9')" = 9 ] &&
    [ "$(sh -c '. ./semver.sh; minor 7.8.9')" = 8 ]
