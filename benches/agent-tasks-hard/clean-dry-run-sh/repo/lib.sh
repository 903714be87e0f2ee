# Helpers for clean.sh.

# is_junk NAME: true for build leftovers: *.o, *.tmp, editor backups (*~) and .DS_Store.
is_junk() {
    case ${1##*/} in
        *.o | *.tmp | *~ | .DS_Store) return 0 ;;
        *) return 1 ;;
    esac
}

# remove_file PATH: delete PATH and say so (when VERBOSE is 1, also its size).
remove_file() {
    if [ "$VERBOSE" = 1 ]; then
        echo "removed $1 ($(wc -c <"$1" | tr -d ' ') bytes)"
    else
        echo "removed $1"
    fi
    rm -f -- "$1"
}
