# Helpers for release tags like v1.4.2; sourced by latest.sh and test.sh.

# is_release TAG: true for vMAJOR.MINOR.PATCH; false for pre-releases (v2.0.0-rc1) and
# anything else.
is_release() {
    printf '%s\n' "$1" | grep -Eq '^v[0-9]+\.[0-9]+\.[0-9]+$'
}

# strip_v TAG: the version without its leading v.
strip_v() {
    printf '%s\n' "${1#v}"
}

# sort_versions: versions (without the v) on stdin, one a line; prints them oldest first.
sort_versions() {
    sort -t. -k1,1 -k2,2 -k3,3
}

# releases FILE: the release versions (without the v) among the tags in FILE.
releases() {
    while IFS= read -r tag || [ -n "$tag" ]; do
        if is_release "$tag"; then
            strip_v "$tag"
        fi
    done <"$1"
}
