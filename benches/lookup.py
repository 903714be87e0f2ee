#!/usr/bin/env python3
"""Lookup decoding on edit replies, one stream: `bellows serve --lookup on` against `--lookup off`.

A coding agent's edit replies copy most of their text from the prompt (a whole-file rewrite
repeats the file with a line changed). For each task of benches/agent-tasks, the bench shows
the model the task's main source file (the largest .py or .sh under repo/, at most 4 KiB) and
asks for the whole file back with the task done, greedy, in one request — the shape of the
agent's whole-file protocol. Both servers run the same binary and GGUF with the same threads;
the two are asked in turn, task by task and rep by rep (the order alternating), so drift hits
both alike.

Reported per task and in total: completion tokens, decode tokens/s (tokens after the first /
time from the first content chunk to the last), the ratio on/off, and whether the two replies
are identical (they must be: the drafts are verified, so lookup decoding changes no token).

  benches/lookup.py [--bellows /tmp/bellows-bench] [--model qwen-coder-0.5b|PATH.gguf]
                    [--threads 2] [--reps 3] [--max-tokens 512] [--only NAME]

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
    args = ap.parse_args()
    gguf = resolve(args.model)
    tasks = []
    for name in sorted(os.listdir(TASKS)):
        if args.only and args.only not in name:
            continue
        prompt = task_prompt(os.path.join(TASKS, name))
        if prompt:
            tasks.append((name, prompt))
    servers = {}
    try:
        for lookup in ("off", "on"):
            servers[lookup] = start(args.bellows, gguf, args.threads, lookup)
        rows = []
        for name, prompt in tasks:
            speeds = {"off": [], "on": []}
            replies, tokens = {}, {}
            for rep in range(args.reps):
                order = ("off", "on") if rep % 2 == 0 else ("on", "off")
                for lookup in order:
                    text, n, secs = ask(servers[lookup][1], prompt, args.max_tokens)
                    replies.setdefault(lookup, text)
                    tokens[lookup] = n
                    if secs > 0 and n > 1:
                        speeds[lookup].append((n - 1) / secs)
            off, on = statistics.median(speeds["off"]), statistics.median(speeds["on"])
            same = replies["off"] == replies["on"]
            rows.append((name, tokens["off"], off, on, on / off, same))
            print(f"{name}: {tokens['off']} tokens, off {off:.1f} tok/s, on {on:.1f} tok/s, "
                  f"{on / off:.2f}x, identical {same}", file=sys.stderr, flush=True)
    finally:
        for proc, _ in servers.values():
            stop(proc)
    print(f"\n`{' '.join(sys.argv)}` — {os.path.basename(gguf)}, {args.threads} threads, "
          f"{args.reps} reps, medians\n")
    print("| task | tokens | off tok/s | on tok/s | on/off | identical |")
    print("|---|---|---|---|---|---|")
    for name, n, off, on, ratio, same in rows:
        print(f"| {name} | {n} | {off:.1f} | {on:.1f} | {ratio:.2f}x | {'yes' if same else 'NO'} |")
    total_tokens = sum(r[1] for r in rows)
    t_off = sum(r[1] / r[2] for r in rows)
    t_on = sum(r[1] / r[3] for r in rows)
    print(f"| **all** | {total_tokens} | {total_tokens / t_off:.1f} | {total_tokens / t_on:.1f} | "
          f"{t_off / t_on:.2f}x | {sum(r[5] for r in rows)}/{len(rows)} |")


if __name__ == "__main__":
    main()
