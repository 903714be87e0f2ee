#!/bin/sh
# Checks: hosts.conf unchanged; staging, staging-old and prod resolve to their
# own lines; a mere prefix ("stag") is unknown (non-zero exit); works from
# another directory; with a hidden HOSTS_FILE, a longer name listed first
# (prod-eu before prod) and a regex-looking name (db.1 after db91) resolve
# literally.
sha256sum -c --quiet - >/dev/null 2>&1 <<'EOF' || exit 1
b6395cbe99a1598af7cd4ea29acb220322b5467927d5a7bc4f2defd90f255f6d  hosts.conf
EOF
unset HOSTS_FILE
[ "$(sh deploy.sh staging 2>&1)" = "deploying to staging at 10.0.0.5" ] || exit 1
[ "$(sh deploy.sh staging-old 2>&1)" = "deploying to staging-old at 10.0.0.9" ] || exit 1
[ "$(sh deploy.sh prod 2>&1)" = "deploying to prod at 10.0.1.20" ] || exit 1
sh deploy.sh stag >/dev/null 2>&1 && exit 1
here=$(pwd)
t=$(mktemp -d) || exit 1
trap 'rm -rf "$t"' EXIT
[ "$(cd "$t" && sh "$here/deploy.sh" prod-eu 2>&1)" = "deploying to prod-eu at 10.0.2.20" ] || exit 1
printf '# name address\nprod-eu 10.0.2.20\nprod 10.0.1.21\ndb91 10.9.9.1\ndb.1 10.0.0.1\n' > "$t/hosts"
HOSTS_FILE="$t/hosts"
export HOSTS_FILE
[ "$(sh deploy.sh prod 2>&1)" = "deploying to prod at 10.0.1.21" ] || exit 1
[ "$(sh deploy.sh db.1 2>&1)" = "deploying to db.1 at 10.0.0.1" ] || exit 1
[ "$(sh deploy.sh db91 2>&1)" = "deploying to db91 at 10.9.9.1" ] || exit 1
sh deploy.sh db >/dev/null 2>&1 && exit 1
exit 0
