#!/bin/sh
# usage: sh run.sh {paths|init}
. "$(dirname "$0")/lib/paths.sh"

case "$1" in
    paths)
        echo "data=$DATA_DIR"
        echo "cache=$CACHE_DIR"
        ;;
    init)
        mkdir -p "$DATA_DIR" "$CACHE_DIR"
        echo "initialised $APP_HOME"
        ;;
    *)
        echo "usage: sh run.sh {paths|init}" >&2
        exit 2
        ;;
esac
