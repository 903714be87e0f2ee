# Helpers for MAJOR.MINOR.PATCH version strings; sourced by bump.sh.

major() { echo "$1" | cut -d. -f1; }
minor() { echo "$1" | cut -d. -f2; }
patch() { echo "$1" | cut -d. -f2; }
