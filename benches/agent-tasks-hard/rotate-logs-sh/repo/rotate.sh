#!/bin/sh
# Usage: sh rotate.sh LOGFILE
# Rotates LOGFILE: the older copies move up one number, LOGFILE becomes LOGFILE.1 and a new
# empty LOGFILE is started. At most KEEP copies are kept (default 5).
. "$(dirname "$0")/logrot.sh"
log=$1
keep=${KEEP:-5}
if [ -z "$log" ] || [ ! -f "$log" ]; then
    echo "usage: sh rotate.sh LOGFILE" >&2
    exit 2
fi
shift_logs "$log" "$keep"
mv -f "$log" "$log.1"
: >"$log"
echo "rotated $log; kept: $(kept_logs "$log")"
