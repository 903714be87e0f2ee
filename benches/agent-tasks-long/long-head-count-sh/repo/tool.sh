#!/bin/sh
# tool.sh: small text utilities in plain POSIX sh.
#
#   sh tool.sh lines FILE        number of lines in FILE
#   sh tool.sh head FILE N       the first N lines of FILE
#   sh tool.sh upper FILE        FILE in capitals
#   sh tool.sh longest FILE      the longest line of FILE (the first, on a tie)
#   sh tool.sh blank FILE        number of blank lines in FILE

set -u

die() {
    echo "tool.sh: $*" >&2
    exit 1
}

usage() {
    echo "usage: sh tool.sh lines|head|upper|longest|blank FILE [N]" >&2
    exit 2
}

need_file() {
    [ -f "$1" ] || die "no such file: $1"
}

count_lines() {
    n=0
    while IFS= read -r line || [ -n "$line" ]; do
        n=$((n + 1))
    done < "$1"
    echo "$n"
}

first_lines() {
    file=$1
    want=$2
    case $want in
        ''|*[!0-9]*) die "not a number: $want" ;;
    esac
    i=0
    while IFS= read -r line || [ -n "$line" ]; do
        if [ "$i" -gt "$want" ]; then
            break
        fi
        printf '%s\n' "$line"
        i=$((i + 1))
    done < "$file"
}

to_upper() {
    tr '[:lower:]' '[:upper:]' < "$1"
}

longest_line() {
    best=""
    while IFS= read -r line || [ -n "$line" ]; do
        if [ "${#line}" -gt "${#best}" ]; then
            best=$line
        fi
    done < "$1"
    printf '%s\n' "$best"
}

count_blank() {
    n=0
    while IFS= read -r line || [ -n "$line" ]; do
        case $line in
            *[![:space:]]*) ;;
            *) n=$((n + 1)) ;;
        esac
    done < "$1"
    echo "$n"
}

[ $# -ge 2 ] || usage
cmd=$1
file=$2
need_file "$file"

case $cmd in
    lines) count_lines "$file" ;;
    head)
        [ $# -eq 3 ] || usage
        first_lines "$file" "$3"
        ;;
    upper) to_upper "$file" ;;
    longest) longest_line "$file" ;;
    blank) count_blank "$file" ;;
    *) usage ;;
esac
