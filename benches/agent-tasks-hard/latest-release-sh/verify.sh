#!/bin/sh
# Exit 0 iff the task is done; runs in the session's copy of repo/.
# The shipped tags give v1.10.0, and hidden tag files compare every part as a number: the
# major (v9 against v10), the minor, the patch (1.2.9 against 1.2.10), pre-releases still
# ignored, one tag alone; sort_versions itself orders a mixed list. Making only the minor
# part numeric, or sorting with sort -n, fails.
d=$(mktemp -d) || exit 1
trap 'rm -rf "$d"' EXIT
printf 'v9.1.0\nv10.0.0\nv2.5.5\n' >"$d/major" &&
    printf 'v1.2.9\nv1.2.10\nv1.2.1\n' >"$d/patch" &&
    printf 'v0.9.0\nv0.10.0\nv0.10.0-rc2\nv0.11.0-rc1\nv0.2.0\n' >"$d/minor" &&
    printf 'v3.0.0' >"$d/one" || exit 1
sh test.sh >/dev/null &&
    [ "$(sh latest.sh </dev/null)" = 'latest release: v1.10.0' ] &&
    [ "$(sh latest.sh "$d/major" </dev/null)" = 'latest release: v10.0.0' ] &&
    [ "$(sh latest.sh "$d/patch" </dev/null)" = 'latest release: v1.2.10' ] &&
    [ "$(sh latest.sh "$d/minor" </dev/null)" = 'latest release: v0.10.0' ] &&
    [ "$(sh latest.sh "$d/one" </dev/null)" = 'latest release: v3.0.0' ] &&
    [ "$(printf '1.10.0\n1.9.2\n1.2.0\n10.0.0\n2.0.0\n1.2.10\n' |
        sh -c '. ./versions.sh; sort_versions' | tr '\n' ' ')" = '1.2.0 1.2.10 1.9.2 1.10.0 2.0.0 10.0.0 ' ]
