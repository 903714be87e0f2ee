# Path helpers; sourced by archive.sh.

# base_name PATH: the last component of PATH ("docs/photos" -> "photos").
base_name() {
    printf '%s\n' "${1##*/}"
}

# archive_path DIR DEST: where the archive of DIR goes inside DEST.
archive_path() {
    printf '%s/%s.tar\n' "$2" "$(base_name "$1")"
}

# ensure_dir DIR: create DIR (and its parents) unless it exists.
ensure_dir() {
    [ -d "$1" ] || mkdir -p "$1"
}
