#!/bin/sh
# Exit 0 iff the task is done; runs in the session's copy of repo/.
# --since keeps the entries at or after the time (an entry at exactly HH:MM:00 included, one a
# minute before not), across the hour, together with --level, and down to none; without it
# the output is as before. filters.py changed (the filtering lives there), README.md names
# --since, and every example command in README.md runs. Comparing the hour alone, or
# dropping the entry at the boundary, fails.
# Judge the source, not a bytecode cache left stale by a same-size edit in the same second.
rm -rf __pycache__
echo 'c89b61e431a189e5556a827f6ee1d35292962754c2da5ac2c53c6949b1064036  filters.py' |
    sha256sum -c --quiet - >/dev/null 2>&1 && exit 1
lv() { python3 logview.py "$@" </dev/null 2>/dev/null | tr '\n' '|'; }
python3 test_filters.py >/dev/null 2>&1 && grep -q -- '--since' README.md &&
    [ "$(lv app.log --since 09:30)" = '09:30:00 INFO  nightly report sent|09:47:55 ERROR upload failed: timeout|10:02:31 INFO  upload retried and succeeded|10:15:09 WARN  slow response from db (2.4 s)|-- 4 entries|' ] &&
    [ "$(lv app.log --since 09:31)" = '09:47:55 ERROR upload failed: timeout|10:02:31 INFO  upload retried and succeeded|10:15:09 WARN  slow response from db (2.4 s)|-- 3 entries|' ] &&
    [ "$(lv app.log --since 10:00 --level WARN)" = '10:15:09 WARN  slow response from db (2.4 s)|-- 1 entries|' ] &&
    [ "$(lv app.log --level DEBUG --since 09:05)" = '09:05:12 DEBUG cache warmed in 310 ms|09:14:07 WARN  disk 91% full|09:30:00 INFO  nightly report sent|09:47:55 ERROR upload failed: timeout|10:02:31 INFO  upload retried and succeeded|10:15:09 WARN  slow response from db (2.4 s)|-- 6 entries|' ] &&
    [ "$(lv app.log --since 23:59)" = '-- 0 entries|' ] &&
    [ "$(lv app.log --since 00:00 | md5sum)" = "$(lv app.log | md5sum)" ] &&
    [ "$(lv app.log --level WARN)" = '09:14:07 WARN  disk 91% full|09:47:55 ERROR upload failed: timeout|10:15:09 WARN  slow response from db (2.4 s)|-- 3 entries|' ] &&
    [ "$(lv app.log)" = '08:58:40 INFO  service started|09:14:07 WARN  disk 91% full|09:30:00 INFO  nightly report sent|09:47:55 ERROR upload failed: timeout|10:02:31 INFO  upload retried and succeeded|10:15:09 WARN  slow response from db (2.4 s)|-- 6 entries|' ] || exit 1
examples=$(sed -n 's/^[[:space:]]*\(\$ \)\{0,1\}\(python3 logview\.py.*\)$/\2/p' README.md)
[ -n "$examples" ] || exit 1
echo "$examples" | while IFS= read -r line; do
    sh -c "$line" >/dev/null 2>&1 </dev/null || exit 1
done
