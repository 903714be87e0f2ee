#!/bin/sh
# usage: sh backup.sh SRC_DIR DEST_DIR
# Copy every regular file in SRC_DIR into DEST_DIR with a .bak suffix.
src=$1
dest=$2
mkdir -p $dest

count=0
for f in $(ls $src); do
    if [ -f $src/$f ]; then
        cp $src/$f $dest/$f.bak
        count=$((count + 1))
    fi
done
echo "backed up $count file(s) to $dest"
