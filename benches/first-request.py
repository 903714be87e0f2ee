#!/usr/bin/env python3
"""The first request after a server starts: time to healthy, and the first request's time to
first token, for two `bellows serve` binaries (or any two commands that serve the OpenAI API),
interleaved rep by rep (the machine's speed drifts).

Each rep starts a server, polls GET /health until it answers 200 (time to healthy, from the
process's start), then sends one streamed chat request of a fresh ~40-token prompt at
temperature 0 and times its first content chunk (time to first token) and a second fresh
request's (warm, for comparison). Then the server is stopped. Prints the medians per binary and
the ratio B/A of each.

  benches/first-request.py A_BINARY B_BINARY [--model smollm2] [--threads 2] [--reps 5]

A binary named `llama-server` is started as llama-server (`-m GGUF -t N -tb N -c 4096 -np 1
--jinja`, its own warm-up kept), so bellows can be compared with it:

  benches/first-request.py target/release/bellows /work/peer-llama/build/bin/llama-server

Only the standard library is used. Issue #15 compares the first request with llama-server's,
which warms up (one decode) before it reports healthy. Both servers start with an empty
prompt cache, so both evaluate the first request's whole prompt; the second request shares the
first's prefix (the template's system text and "Note ") on both.
"""

import argparse
import http.client
import json
import os
import socket
import statistics
import subprocess
import sys
import time
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from concurrency import resolve_model  # noqa: E402  (the models' names, shared with that bench)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def healthy(port):
    try:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
        conn.request("GET", "/health")
        return conn.getresponse().status == 200
    except OSError:
        return False


def first_token(port):
    """Seconds from sending a fresh chat prompt to its first streamed content chunk."""
    nonce = uuid.uuid4().hex[:8]
    body = {
        "model": "any",
        "messages": [{
            "role": "user",
            "content": f"Note {nonce}. In one short sentence, say why the sky looks blue in the day "
                       "and red at sunset.",
        }],
        "max_tokens": 8,
        "temperature": 0,
        "stream": True,
    }
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=300)
    t0 = time.perf_counter()
    conn.request("POST", "/v1/chat/completions", json.dumps(body).encode(),
                 {"Content-Type": "application/json"})
    resp = conn.getresponse()
    if resp.status != 200:
        raise RuntimeError(f"HTTP {resp.status}: {resp.read()[:300]!r}")
    first = None
    while True:
        line = resp.readline()
        if not line:
            break
        line = line.strip()
        if not line.startswith(b"data: ") or line == b"data: [DONE]":
            continue
        for ch in json.loads(line[6:]).get("choices", []):
            if (ch.get("delta") or {}).get("content") and first is None:
                first = time.perf_counter() - t0
    conn.close()
    if first is None:
        raise RuntimeError("no content chunk")
    return first


def command(binary, model, threads, port):
    if os.path.basename(binary).startswith("llama-server"):
        t = str(threads)
        return [binary, "-m", resolve_model(model), "-t", t, "-tb", t, "-c", "4096", "-np", "1",
                "--jinja", "--no-webui", "--port", str(port)]
    return [binary, "serve", "--model", model, "--threads", str(threads), "--port", str(port)]


def rep(binary, model, threads):
    port = free_port()
    cmd = command(binary, model, threads, port)
    started = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        while not healthy(port):
            if proc.poll() is not None:
                raise RuntimeError(f"{binary} exited with {proc.returncode}")
            if time.perf_counter() - started > 180:
                raise RuntimeError(f"{binary} was not healthy within 180 s")
            time.sleep(0.01)
        to_healthy = time.perf_counter() - started
        return to_healthy, first_token(port), first_token(port)
    finally:
        proc.terminate()
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("a")
    ap.add_argument("b")
    ap.add_argument("--model", default="smollm2")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--reps", type=int, default=5)
    args = ap.parse_args()
    runs = {args.a: [], args.b: []}
    for r in range(args.reps):
        for binary in (args.a, args.b) if r % 2 == 0 else (args.b, args.a):
            runs[binary].append(rep(binary, args.model, args.threads))
            h, f, w = runs[binary][-1]
            print(f"rep {r + 1} {binary}: healthy {h * 1000:.0f} ms, first request "
                  f"{f * 1000:.0f} ms, second {w * 1000:.0f} ms", flush=True)
    med = {b: [statistics.median(x[i] for x in runs[b]) for i in range(3)] for b in runs}
    print(f"\nmedians over {args.reps} reps ({args.model}, {args.threads} threads):")
    print(f"{'':>28} {'healthy ms':>11} {'1st TTFT ms':>12} {'2nd TTFT ms':>12}")
    for b in (args.a, args.b):
        h, f, w = med[b]
        print(f"{b[-28:]:>28} {h * 1000:>11.0f} {f * 1000:>12.0f} {w * 1000:>12.0f}")
    ha, fa, wa = med[args.a]
    hb, fb, wb = med[args.b]
    print(f"{'ratio B/A':>28} {hb / ha:>11.2f} {fb / fa:>12.2f} {wb / wa:>12.2f}")


if __name__ == "__main__":
    main()
