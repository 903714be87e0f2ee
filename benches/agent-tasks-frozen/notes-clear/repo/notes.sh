#!/bin/sh
# usage: sh notes.sh add TEXT...  |  sh notes.sh show
notes=${NOTES_FILE:-$HOME/.notes}

case "$1" in
    add)
        shift
        [ $# -gt 0 ] || { echo "nothing to add" >&2; exit 2; }
        echo "$(date +%Y-%m-%d) $*" >> "$notes"
        ;;
    show)
        if [ -f "$notes" ]; then
            cat "$notes"
        fi
        ;;
    *)
        echo "usage: sh notes.sh {add TEXT...|show}" >&2
        exit 2
        ;;
esac
