#!/usr/bin/env bash
# benches/peer-mini.sh: mini-swe-agent (2.4.6) on the agent task suite, against
# `bellows serve`, so its figures compare with `bellows agent bench` on the same model.
#
#   benches/peer-mini.sh --model qwen-coder-1.5b [--only SUBSTRING] [--steps N] [--mode tools|text]
#
# What it runs, per task, in a fresh copy of the task's repo/ (the cwd): `mini` (its
# interactive agent with --yolo and --exit-immediately: no confirmation, no prompt at the
# end; stdin is /dev/null), its own stock prompts, the task text = task.md, a step limit
# (model calls, default 8 = the `--max-turns 8` of our agent bench), no cost limit, litellm's
# `openai/` provider pointed at `bellows serve`. Its bash commands run for real, in the copy
# (mini's 30 s per-command timeout). Then the task's hidden verify.sh judges the copy.
# `bellows serve` runs in the background on the model for the whole suite, and is stopped by
# its PID on exit. mini's global config dir is redirected into the results folder, so the
# user's ~/.config/mini-swe-agent/.env is neither read nor written.
#
# mini options beyond the common ones:
#   --steps N           step limit (model calls) per task (default 8)
#   --mode tools|text   tools (default, mini 2.x's default `mini.yaml`): the model must answer
#                       with an OpenAI tool call to the `bash` tool (bellows turns the model's
#                       tool-call text into `tool_calls`); text: mini's `mini_textbased.yaml`
#                       with the litellm_textbased model class, the v1-style reply holding
#                       one ```mswea_bash_command block
#
# The stop column is mini's exit status (Submitted: the agent ran
# `echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT`; LimitsExceeded: step limit; RepeatedFormatError:
# three replies in a row without a usable action). Its trajectory (every message and raw
# response) is RESULTS/TASK/traj.json.
set -euo pipefail

PEER_NAME=mini-tools
STEPS=8
MODE=tools

peer_usage() { sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed -e '$d' -e 's/^# \{0,1\}//'; }

peer_parse_arg() {
  case "$1" in
    --steps) STEPS="${2:?--steps needs a value}"; PEER_SHIFT=2 ;;
    --mode)
      MODE="${2:?--mode needs a value}"
      case "$MODE" in tools|text) ;; *) die "--mode is tools or text" ;; esac
      PEER_NAME="mini-$MODE"
      PEER_SHIFT=2 ;;
    *) return 1 ;;
  esac
}

peer_setup() {
  MINI_CONFIG=(-c mini.yaml)
  # mini_textbased.yaml carries the text prompts but no model class: without the second
  # spec mini would still send the bash tool and look for tool calls.
  [ "$MODE" = text ] && MINI_CONFIG=(-c mini_textbased.yaml -c model.model_class=litellm_textbased)
  export MSWEA_GLOBAL_CONFIG_DIR="$OUT/mini-config" # else ~/.config/mini-swe-agent (its .env)
  export MSWEA_CONFIGURED=true        # skip the first-run setup prompt
  export MSWEA_SILENT_STARTUP=1
  export MSWEA_COST_TRACKING=ignore_errors # a local model has no price
}

peer_describe() {
  echo "mini-swe-agent $("$VENV/bin/python" -c 'import importlib.metadata as m; print(m.version("mini-swe-agent"))'), mode $MODE (${MINI_CONFIG[*]}), step limit $STEPS, cost limit off"
}

peer_run() {
  local taskdir="$1" work="$2" taskout="$3"
  exec timeout --kill-after=15 "$TASK_TIMEOUT" "$VENV/bin/mini" \
    --yolo \
    --exit-immediately \
    --model "$API_MODEL" \
    --task "$(cat "$taskdir/task.md")" \
    "${MINI_CONFIG[@]}" \
    -c "agent.step_limit=$STEPS" \
    -c agent.cost_limit=0 \
    -c "model.model_kwargs.api_base=$BASE/v1" \
    -c model.model_kwargs.api_key=none \
    --output "$taskout/traj.json"
}

peer_stop() {
  local taskout="$1" rc="$2" status=""
  if [ -f "$taskout/traj.json" ]; then
    status="$("$VENV/bin/python" -c 'import json,sys; print(json.load(open(sys.argv[1]))["info"].get("exit_status") or "")' "$taskout/traj.json" 2>/dev/null || true)"
  fi
  echo "${status:-rc$rc}"
}

# shellcheck source=benches/peers/common.sh
. "$(dirname "${BASH_SOURCE[0]}")/peers/common.sh"
peer_main "$@"
