# Helpers sourced by deploy.sh.
HOSTS_FILE=${HOSTS_FILE:-$(dirname "$0")/hosts.conf}

# lookup_host NAME: print the address configured for NAME.
# hosts.conf lines look like "name address"; '#' starts a comment line.
lookup_host() {
    line=$(grep "^$1" "$HOSTS_FILE" | head -n 1)
    [ -n "$line" ] || return 1
    echo "${line#* }"
}
