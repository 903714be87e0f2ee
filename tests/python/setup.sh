#!/usr/bin/env bash
# Creates tests/python/.venv with the official `openai` client, for the end-to-end client tests
# (tests/openai_client.rs runs tests/python/openai_client.py with it). Re-running is a no-op
# once the client imports.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
VENV="$HERE/.venv"
PYTHON="${PYTHON:-python3}"
if [[ ! -x "$VENV/bin/python" ]]; then
    "$PYTHON" -m venv "$VENV"
fi
if ! "$VENV/bin/python" -c 'import openai' 2>/dev/null; then
    "$VENV/bin/pip" install --quiet --disable-pip-version-check "openai>=1.40,<3"
fi
"$VENV/bin/python" -c 'import openai; print("openai", openai.__version__, "in", "'"$VENV"'")'
