# Shared by benches/peer-aider.sh and benches/peer-mini.sh (sourced, not run): argument
# parsing, the pinned virtual environment, `bellows serve` in the background, token counts
# from its /metrics, and the per-task loop (fresh copy of repo/, the peer, verify.sh, a row).
#
# The sourcing script defines, before calling peer_main "$@":
#   PEER_NAME            short name (aider, mini), used in the results folder's name
#   peer_usage           prints its --help text
#   peer_parse_arg       handles one peer-specific option; sets PEER_SHIFT (1 or 2), or
#                        returns 1 for an unknown option
#   peer_setup           runs once, after the server is up (may write files under $OUT)
#   peer_run TASKDIR WORK TASKOUT   runs the peer in WORK (the cwd), its output already
#                        redirected to TASKOUT/peer.log, and ends by exec'ing
#                        `timeout ... PEER`, so the PID recorded for it is timeout's (which
#                        passes a TERM on to the peer) and its status is the peer's
#   peer_stop TASKOUT RC prints a one-word stop reason for the table
#   peer_describe        prints one line describing the peer's settings

# Pinned peers (the versions measured). Both install into one environment; their
# requirements do not conflict (aider pins litellm==1.81.10, which mini-swe-agent accepts).
AIDER_PIN="aider-chat==0.86.2"
AIDER_VERSION="0.86.2"
MINI_PIN="mini-swe-agent==2.4.6"
MINI_VERSION="2.4.6"

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
VENV="${PEERS_VENV:-$ROOT/benches/.peers-venv}"

MODEL=""
TASKS="$ROOT/benches/agent-tasks"
ONLY=()
PORT=""
CTX=8192
THREADS=""
TASK_TIMEOUT=600
OUT=""
BELLOWS_BIN="${BELLOWS_BIN:-$ROOT/target/release/bellows}"
SERVE_PID=""
PEER_PID=""
API_MODEL="openai/bellows" # bellows answers to any model name; litellm needs the openai/ prefix

die() { echo "error: $*" >&2; exit 2; }

common_usage() {
  cat <<'EOF'
Common options:
  --model NAME|PATH   model for `bellows serve` (qwen-coder-0.5b, qwen-coder-1.5b, ... or a GGUF)
                      [required]
  --only SUBSTRING    only the tasks whose folder name contains SUBSTRING (repeatable: any)
  --tasks DIR         the suite (default: benches/agent-tasks)
  --port N            port for `bellows serve` (default: a free one)
  --ctx N             context size for serve (default 8192, the Qwen coder profiles' own)
  --threads N         threads for serve (default: serve's, all cores)
  --timeout SECS      wall-clock limit per task for the peer (default 600)
  --out DIR           results folder (default /tmp/peer-runs/PEER-MODEL-TIMESTAMP)
  --bellows PATH      bellows binary (default target/release/bellows, or $BELLOWS_BIN); it is
                      copied into the results folder first, so a rebuild mid-run cannot swap it
  -h, --help          this text

Output: one row per task (task, solved yes/no, wall seconds, prompt tokens, generated tokens,
eval = prompt tokens not served from serve's prefix cache, chat requests, the peer's stop
reason), then a total line. Tokens are the differences of serve's /metrics counters
(bellows_prompt_tokens_total, bellows_generated_tokens_total,
bellows_cached_prompt_tokens_total) across the task, so they do not depend on the peer's own
accounting. solved = the task's hidden verify.sh exits 0 in the peer's working copy. The
results folder holds, per task, the peer's log, verify.sh's output and the final tree, plus
serve.log and results.tsv.
EOF
}

parse_args() {
  while [ $# -gt 0 ]; do
    case "$1" in
      -h|--help) peer_usage; echo; common_usage; exit 0 ;;
      --model) MODEL="${2:?--model needs a value}"; shift 2 ;;
      --only) ONLY+=("${2?--only needs a value}"); shift 2 ;;
      --tasks) TASKS="${2:?--tasks needs a value}"; shift 2 ;;
      --port) PORT="${2:?--port needs a value}"; shift 2 ;;
      --ctx) CTX="${2:?--ctx needs a value}"; shift 2 ;;
      --threads) THREADS="${2:?--threads needs a value}"; shift 2 ;;
      --timeout) TASK_TIMEOUT="${2:?--timeout needs a value}"; shift 2 ;;
      --out) OUT="${2:?--out needs a value}"; shift 2 ;;
      --bellows) BELLOWS_BIN="${2:?--bellows needs a value}"; shift 2 ;;
      *)
        PEER_SHIFT=0
        if peer_parse_arg "$@" && [ "$PEER_SHIFT" -gt 0 ]; then
          shift "$PEER_SHIFT"
        else
          die "unknown option $1 (see --help)"
        fi
        ;;
    esac
  done
  [ -n "$MODEL" ] || die "--model is required (see --help)"
  [ -d "$TASKS" ] || die "no task suite at $TASKS"
  TASKS="$(cd "$TASKS" && pwd)"
  [ -x "$BELLOWS_BIN" ] || die "no bellows binary at $BELLOWS_BIN (cargo build --release -p gateway)"
}

# The pinned environment: created and filled when missing or when a pin is not installed.
ensure_venv() {
  local have_aider="" have_mini=""
  if [ -x "$VENV/bin/python" ]; then
    have_aider="$("$VENV/bin/python" -c 'import importlib.metadata as m; print(m.version("aider-chat"))' 2>/dev/null || true)"
    have_mini="$("$VENV/bin/python" -c 'import importlib.metadata as m; print(m.version("mini-swe-agent"))' 2>/dev/null || true)"
  fi
  if [ "$have_aider" = "$AIDER_VERSION" ] && [ "$have_mini" = "$MINI_VERSION" ]; then
    return 0
  fi
  echo "peer environment $VENV lacks $AIDER_PIN and/or $MINI_PIN (found aider '${have_aider:-none}'," \
    "mini '${have_mini:-none}'); installing them from PyPI (a few minutes, ~1 GB)..." >&2
  [ -x "$VENV/bin/python" ] || python3 -m venv "$VENV"
  "$VENV/bin/pip" install --quiet --upgrade pip >&2
  "$VENV/bin/pip" install --quiet "$AIDER_PIN" "$MINI_PIN" >&2
  echo "installed: $("$VENV/bin/pip" freeze | grep -E '^(aider-chat|mini-swe-agent|litellm)==' | tr '\n' ' ')" >&2
}

free_port() {
  "$VENV/bin/python" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

stop_serve() {
  if [ -n "$SERVE_PID" ] && kill -0 "$SERVE_PID" 2>/dev/null; then
    kill "$SERVE_PID" 2>/dev/null || true
    local i
    for i in $(seq 1 50); do
      kill -0 "$SERVE_PID" 2>/dev/null || break
      sleep 0.2
    done
    kill -0 "$SERVE_PID" 2>/dev/null && kill -9 "$SERVE_PID" 2>/dev/null || true
    wait "$SERVE_PID" 2>/dev/null || true
  fi
  SERVE_PID=""
PEER_PID=""
}

# stop_peer: a peer still running (the script was interrupted) gets TERM, by its PID.
stop_peer() {
  if [ -n "$PEER_PID" ] && kill -0 "$PEER_PID" 2>/dev/null; then
    kill "$PEER_PID" 2>/dev/null || true
    local i
    for i in $(seq 1 100); do
      kill -0 "$PEER_PID" 2>/dev/null || break
      sleep 0.2
    done
    kill -0 "$PEER_PID" 2>/dev/null && kill -9 "$PEER_PID" 2>/dev/null || true
  fi
  PEER_PID=""
}

cleanup() { stop_peer; stop_serve; }

start_serve() {
  case "$MODEL" in
    smollm2|gemma3|tiny|qwen-coder-0.5b|qwen-coder-1.5b)
      # Fetches the model if the cache lacks it (as `bellows serve` would), and checks it.
      eval "$("$ROOT/scripts/models-env.sh" "$MODEL")" ;;
  esac
  [ -n "$PORT" ] || PORT="$(free_port)"
  BASE="http://127.0.0.1:$PORT"
  local args=(serve --model "$MODEL" --port "$PORT" --ctx "$CTX")
  [ -n "$THREADS" ] && args+=(--threads "$THREADS")
  "$OUT/bellows" "${args[@]}" >"$OUT/serve.log" 2>&1 &
  SERVE_PID=$!
  local i
  for i in $(seq 1 600); do
    kill -0 "$SERVE_PID" 2>/dev/null || { tail -20 "$OUT/serve.log" >&2; die "bellows serve exited (log: $OUT/serve.log)"; }
    curl -sf "$BASE/health" >/dev/null 2>&1 && return 0
    sleep 0.5
  done
  die "bellows serve not healthy after 300 s (log: $OUT/serve.log)"
}

# metric NAME: the sum of every sample of NAME in /metrics (labels summed).
metrics_snapshot() { curl -sf "$BASE/metrics"; }
metric() {
  awk -v n="$1" '$1 == n || index($1, n "{") == 1 { s += $NF } END { printf "%d\n", s }' <<<"$2"
}

# matches_only NAME: no --only given, or NAME contains one of them.
matches_only() {
  [ ${#ONLY[@]} -eq 0 ] && return 0
  local o
  for o in "${ONLY[@]}"; do
    [[ "$1" == *"$o"* ]] && return 0
  done
  return 1
}

# chat_requests METRICS: chat completion requests answered (any status).
chat_requests() {
  awk '/^bellows_requests_total\{endpoint="chat_completions"/ { s += $NF } END { printf "%d\n", s }' <<<"$1"
}

# Waits until serve has no generation running (a killed peer's request may still be
# finishing), so the counters read after a task hold all of its tokens.
wait_idle() {
  local i m
  for i in $(seq 1 120); do
    m="$(metrics_snapshot)" || return 0
    [ "$(metric bellows_busy_slots "$m")" = 0 ] && [ "$(metric bellows_queue_depth "$m")" = 0 ] && return 0
    sleep 0.5
  done
}

peer_main() {
  parse_args "$@"
  ensure_venv
  local stamp model_tag
  stamp="$(date -u +%Y%m%dT%H%M%SZ)"
  model_tag="$(basename "$MODEL" .gguf)"
  [ -n "$OUT" ] || OUT="/tmp/peer-runs/$PEER_NAME-$model_tag-$stamp"
  mkdir -p "$OUT"
  OUT="$(cd "$OUT" && pwd)"
  cp "$BELLOWS_BIN" "$OUT/bellows"
  trap cleanup EXIT
  trap 'cleanup; exit 130' INT TERM
  start_serve
  export LITELLM_LOCAL_MODEL_COST_MAP=True # never fetch litellm's price list from the network
  export OPENAI_API_KEY=none
  peer_setup

  echo "peer: $(peer_describe)"
  echo "serve: $MODEL, ctx $CTX, port $PORT (pid $SERVE_PID), binary $BELLOWS_BIN"
  echo "results: $OUT"
  local fmt="%-24s %-6s %8s %8s %7s %7s %5s %s\n"
  # shellcheck disable=SC2059
  printf "$fmt" task solved wall_s prompt gen eval calls stop | tee "$OUT/table.txt"
  printf "task\tsolved\twall_s\tprompt\tgen\teval\tcalls\tstop\n" >"$OUT/results.tsv"

  local n=0 solved=0 t_prompt=0 t_gen=0 t_eval=0 t_calls=0 t_wall=0
  local taskdir name work taskout before after t0 t1 rc ok wall p g c e k stop
  for taskdir in "$TASKS"/*/; do
    taskdir="${taskdir%/}"
    name="$(basename "$taskdir")"
    [ -f "$taskdir/task.md" ] && [ -d "$taskdir/repo" ] && [ -f "$taskdir/verify.sh" ] || continue
    matches_only "$name" || continue
    taskout="$OUT/$name"
    mkdir -p "$taskout"
    work="$(mktemp -d "${TMPDIR:-/tmp}/peer-$PEER_NAME-$name.XXXXXX")"
    cp -a "$taskdir/repo/." "$work/"

    wait_idle
    before="$(metrics_snapshot)"
    t0="$(date +%s.%N)"
    rc=0
    # In the background and waited for, so an INT or TERM reaches the trap at once.
    (cd "$work" && peer_run "$taskdir" "$work" "$taskout") >"$taskout/peer.log" 2>&1 </dev/null &
    PEER_PID=$!
    wait "$PEER_PID" || rc=$?
    PEER_PID=""
    t1="$(date +%s.%N)"
    wait_idle
    after="$(metrics_snapshot)"

    ok=no
    if (cd "$work" && timeout 120 sh "$taskdir/verify.sh") >"$taskout/verify.log" 2>&1; then
      ok=yes
    fi
    cp -a "$work" "$taskout/tree"
    rm -rf "$work"

    wall="$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')"
    p=$(( $(metric bellows_prompt_tokens_total "$after") - $(metric bellows_prompt_tokens_total "$before") ))
    g=$(( $(metric bellows_generated_tokens_total "$after") - $(metric bellows_generated_tokens_total "$before") ))
    k=$(( $(metric bellows_cached_prompt_tokens_total "$after") - $(metric bellows_cached_prompt_tokens_total "$before") ))
    e=$(( p - k ))
    c=$(( $(chat_requests "$after") - $(chat_requests "$before") ))
    if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then stop=timeout; else stop="$(peer_stop "$taskout" "$rc")"; fi

    # shellcheck disable=SC2059
    printf "$fmt" "$name" "$ok" "$wall" "$p" "$g" "$e" "$c" "$stop" | tee -a "$OUT/table.txt"
    printf "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n" "$name" "$ok" "$wall" "$p" "$g" "$e" "$c" "$stop" >>"$OUT/results.tsv"
    n=$((n + 1)); [ "$ok" = yes ] && solved=$((solved + 1))
    t_prompt=$((t_prompt + p)); t_gen=$((t_gen + g)); t_eval=$((t_eval + e)); t_calls=$((t_calls + c))
    t_wall="$(awk -v a="$t_wall" -v b="$wall" 'BEGIN { printf "%.1f", a + b }')"
  done
  [ "$n" -gt 0 ] || die "no task in $TASKS matches --only ${ONLY[*]}"
  # shellcheck disable=SC2059
  printf "$fmt" total "$solved/$n" "$t_wall" "$t_prompt" "$t_gen" "$t_eval" "$t_calls" "" | tee -a "$OUT/table.txt"
  echo "solved $solved/$n, prompt tokens $t_prompt ($t_eval evaluated), generated $t_gen, $t_calls requests, wall ${t_wall} s" | tee -a "$OUT/table.txt"
  echo "results: $OUT"
}
