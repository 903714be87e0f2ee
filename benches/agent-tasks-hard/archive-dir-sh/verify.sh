#!/bin/sh
# Exit 0 iff the task is done; runs in the session's copy of repo/.
# The archive is named after the directory however the path is written: one trailing slash,
# several, ./ before it, an absolute path with a space in the name; a path without a slash
# works as before, and each archive holds the directory. Stripping one slash only fails.
# (The message may echo the path as given or tidied; where the archive went must be right.)
d=$(mktemp -d) || exit 1
trap 'rm -rf "$d"' EXIT
mkdir -p "$d/my photos/raw" && echo x >"$d/my photos/raw/a.txt" || exit 1
ok() { # ok OUTPUT WANT
    case $1 in
        archived\ *" to $2") return 0 ;;
        *) echo "got: $1" >&2; return 1 ;;
    esac
}
ok "$(sh archive.sh photos/ </dev/null)" 'backups/photos.tar (4 entries)' &&
    [ -f backups/photos.tar ] &&
    ok "$(sh archive.sh notes "$d/o1" </dev/null)" "$d/o1/notes.tar (2 entries)" &&
    ok "$(sh archive.sh photos// "$d/o2" </dev/null)" "$d/o2/photos.tar (4 entries)" &&
    ok "$(sh archive.sh ./notes/ "$d/o3" </dev/null)" "$d/o3/notes.tar (2 entries)" &&
    ok "$(sh archive.sh "$d/my photos/" "$d/o4" </dev/null)" "$d/o4/my photos.tar (3 entries)" &&
    [ "$(tar -tf "$d/o4/my photos.tar" | sort | tr '\n' '|')" = 'my photos/|my photos/raw/|my photos/raw/a.txt|' ] &&
    [ "$(tar -tf "$d/o2/photos.tar" | sort | head -n 1)" = 'photos/' ] &&
    [ "$(ls -A "$d/o2")" = photos.tar ]
