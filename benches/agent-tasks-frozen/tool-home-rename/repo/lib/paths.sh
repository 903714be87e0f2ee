# Sourced by run.sh: work out the tool's directories from APP_HOME.
: "${APP_HOME:=$HOME/.tool}"
DATA_DIR="$APP_HOME/data"
CACHE_DIR="$APP_HOME/cache"
