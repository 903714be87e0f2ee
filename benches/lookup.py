#!/usr/bin/env python3
"""Lookup decoding on edit replies, one stream: `bellows serve --lookup auto` (the default; and
`on`, with --modes) against `--lookup off`.

A coding agent's edit replies copy most of their text from the prompt (a whole-file rewrite
repeats the file with a line changed). For each task of benches/agent-tasks, the bench shows
the model the task's main source file (the largest .py or .sh under repo/, at most 4 KiB) and
asks for the whole file back with the task done, greedy, in one request — the shape of the
agent's whole-file protocol. Both servers run the same binary and GGUF with the same threads;
the servers are asked in turn, task by task and rep by rep (the order rotating), so drift hits
them alike.

Reported per task and in total: completion tokens, decode tokens/s (tokens after the first /
time from the first content chunk to the last), the ratio to off, and whether the replies
are identical to off's (they must be, but for ties within llama.cpp's rounding: the drafts are
verified, so lookup decoding changes no token the model prefers).

  benches/lookup.py [--bellows /tmp/bellows-bench] [--model qwen-coder-0.5b|PATH.gguf]
                    [--threads 2] [--reps 3] [--max-tokens 512] [--only NAME]
                    [--modes off,auto[,on]]

Copy the bellows binary somewhere stable first (cargo builds overwrite target/release/bellows).
Only the standard library is used.
"""

import argparse
import http.client
import json
import os
import signal
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TASKS = os.path.join(ROOT, "benches", "agent-tasks")


def models_dir():
    if os.environ.get("BELLOWS_MODELS"):
        return os.environ["BELLOWS_MODELS"]
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(cache, "bellows", "models")


NAMES = {
    "qwen-coder-0.5b": "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf",
    "qwen-coder-1.5b": "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
    "smollm2": "SmolLM2-135M-Instruct.Q4_1.gguf",
}


def resolve(model):
    if model in NAMES:
        return os.path.join(models_dir(), NAMES[model])
    return model


def free_port():
    import socket

    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def start(binary, gguf, threads, lookup):
    port = free_port()
    log = open(f"/tmp/lookup_{lookup}.log", "w")
    proc = subprocess.Popen(
        [binary, "serve", "--model", gguf, "--port", str(port), "--threads", str(threads),
         "--lookup", lookup, "--ctx", "4096"],
        stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
    )
    deadline = time.time() + 300
    while time.time() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"bellows --lookup {lookup} exited; see /tmp/lookup_{lookup}.log")
        try:
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
            c.request("GET", "/health")
            if c.getresponse().status == 200:
                return proc, port
        except OSError:
            pass
        time.sleep(0.2)
    raise SystemExit("server did not become healthy")


def stop(proc):
    try:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=20)
    except (ProcessLookupError, subprocess.TimeoutExpired):
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def ask(port, messages, max_tokens):
    """One streamed greedy chat request: (text, completion tokens, decode seconds)."""
    body = {
        "messages": messages, "max_tokens": max_tokens, "temperature": 0, "stream": True,
        "stream_options": {"include_usage": True},
    }
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=900)
    conn.request("POST", "/v1/chat/completions", json.dumps(body).encode(),
                 {"Content-Type": "application/json"})
    resp = conn.getresponse()
    if resp.status != 200:
        raise RuntimeError(f"HTTP {resp.status}: {resp.read()[:300]!r}")
    text, first, last, tokens = [], None, None, None
    while True:
        line = resp.readline()
        if not line:
            break
        line = line.strip()
        if not line.startswith(b"data: "):
            continue
        if line[6:] == b"[DONE]":
            break
        ev = json.loads(line[6:])
        if ev.get("usage"):
            tokens = ev["usage"].get("completion_tokens")
        for ch in ev.get("choices", []):
            piece = (ch.get("delta") or {}).get("content")
            if piece:
                now = time.perf_counter()
                first = first or now
                last = now
                text.append(piece)
    return "".join(text), tokens or len(text), (last - first) if first and last else 0.0


def task_prompt(task_dir):
    repo = os.path.join(task_dir, "repo")
    best = None
    for root, _, files in os.walk(repo):
        for f in files:
            if f.endswith((".py", ".sh")):
                p = os.path.join(root, f)
                size = os.path.getsize(p)
                if size <= 4096 and (best is None or size > best[0]):
                    best = (size, p)
    if best is None:
        return None
    path = os.path.relpath(best[1], repo)
    content = open(best[1]).read()
    task = open(os.path.join(task_dir, "task.md")).read().strip()
    return [{
        "role": "user",
        "content": f"{path}\n```\n{content}```\n\nTask: {task}\n\nReply with the complete new "
                   f"content of {path}, the task done, in one fenced code block.",
    }]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bellows", default=os.path.join(ROOT, "target", "release", "bellows"))
    ap.add_argument("--model", default="qwen-coder-0.5b")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--max-tokens", type=int, default=512)
    ap.add_argument("--only", default=None, help="only tasks whose name contains this")
    ap.add_argument("--modes", default="off,auto",
                    help="the --lookup settings served side by side, off among them (default "
                         "off,auto: the default against none; add on for drafts at every step)")
    args = ap.parse_args()
    gguf = resolve(args.model)
    tasks = []
    for name in sorted(os.listdir(TASKS)):
        if args.only and args.only not in name:
            continue
        prompt = task_prompt(os.path.join(TASKS, name))
        if prompt:
            tasks.append((name, prompt))
    modes = [m for m in args.modes.split(",") if m]
    if "off" not in modes or len(modes) < 2 or any(m not in ("off", "auto", "on") for m in modes):
        raise SystemExit("--modes: off and at least one of auto, on (comma-separated)")
    drafting = [m for m in modes if m != "off"]
    servers = {}
    try:
        for lookup in modes:
            servers[lookup] = start(args.bellows, gguf, args.threads, lookup)
        rows = []
        for name, prompt in tasks:
            speeds = {m: [] for m in modes}
            replies, tokens = {}, {}
            for rep in range(args.reps):
                order = modes[rep % len(modes):] + modes[:rep % len(modes)]
                for lookup in order:
                    text, n, secs = ask(servers[lookup][1], prompt, args.max_tokens)
                    replies.setdefault(lookup, text)
                    tokens[lookup] = n
                    if secs > 0 and n > 1:
                        speeds[lookup].append((n - 1) / secs)
            med = {m: statistics.median(speeds[m]) for m in modes}
            same = {m: replies[m] == replies["off"] for m in drafting}
            rows.append((name, tokens["off"], med, same))
            print(f"{name}: {tokens['off']} tokens, "
                  + ", ".join(f"{m} {med[m]:.1f} tok/s" for m in modes) + ", "
                  + ", ".join(f"{m}/off {med[m] / med['off']:.2f}x identical {same[m]}" for m in drafting),
                  file=sys.stderr, flush=True)
    finally:
        for proc, _ in servers.values():
            stop(proc)
    print(f"\n`{' '.join(sys.argv)}` — {os.path.basename(gguf)}, {args.threads} threads, "
          f"{args.reps} reps, medians\n")
    head = ["task", "tokens"] + [f"{m} tok/s" for m in modes]
    for m in drafting:
        head += [f"{m}/off", f"{m} identical"]
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for name, n, med, same in rows:
        cells = [name, str(n)] + [f"{med[m]:.1f}" for m in modes]
        for m in drafting:
            cells += [f"{med[m] / med['off']:.2f}x", "yes" if same[m] else "NO"]
        print("| " + " | ".join(cells) + " |")
    total = sum(r[1] for r in rows)
    secs = {m: sum(r[1] / r[2][m] for r in rows) for m in modes}
    cells = ["**all**", str(total)] + [f"{total / secs[m]:.1f}" for m in modes]
    for m in drafting:
        cells += [f"**{secs['off'] / secs[m]:.2f}x**", f"{sum(r[3][m] for r in rows)}/{len(rows)}"]
    print("| " + " | ".join(cells) + " |")

if __name__ == "__main__":
    main()
