# Log rotation helpers; sourced by rotate.sh.

# shift_logs FILE KEEP: move FILE.1 to FILE.2, FILE.2 to FILE.3 and so on, so that FILE.1 is
# free; FILE.KEEP, the oldest kept, is dropped. Numbers that are missing are skipped.
shift_logs() {
    file=$1
    keep=$2
    i=1
    while [ "$i" -lt "$keep" ]; do
        if [ -f "$file.$i" ]; then
            mv -f "$file.$i" "$file.$((i + 1))"
        fi
        i=$((i + 1))
    done
}

# kept_logs FILE: the rotated copies of FILE that exist, newest first, on one line.
kept_logs() {
    i=1
    out=
    while [ "$i" -le 99 ]; do
        [ -f "$1.$i" ] && out="$out ${1##*/}.$i"
        i=$((i + 1))
    done
    echo "${out# }"
}
