#!/usr/bin/env python3
"""bellows serve vs llama-cpp-python's OpenAI server, same model, same threads, same run.

Measures, interleaving the two servers rep by rep (the machine's speed drifts):
  * generation tok/s: a streamed /v1/completions of up to --tokens tokens, greedy;
  * time to first token of a ~60-token chat prompt never seen before (cold);
  * a 6-turn agent-style conversation: time to first token per turn (turn 1 is cold; later
    turns should only evaluate the new messages);
  * 8 concurrent streaming clients: aggregate tok/s;
  * server RSS beyond the model file, after loading and after the runs.
and prints ratios (bellows / peer). Only the standard library is used on the client side.

  benches/gateway_peer.py [--bellows target/release/bellows] [--model SmolLM2.gguf]
                          [--peer-python /work/venv-peer/bin/python] [--threads 2] [--reps 3]

Tokens are counted as streamed chunks with text, the same way for both servers.
"""

import argparse
import http.client
import json
import os
import statistics
import subprocess
import sys
import threading
import time
import uuid


def models_dir():
    if os.environ.get("BELLOWS_MODELS"):
        return os.environ["BELLOWS_MODELS"]
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(cache, "bellows", "models")


def post_stream(port, path, body):
    """Streams one request; returns (t_sent, [(t, text)] per chunk with text)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    data = json.dumps(body).encode()
    t0 = time.perf_counter()
    conn.request("POST", path, data, {"Content-Type": "application/json"})
    resp = conn.getresponse()
    if resp.status != 200:
        raise RuntimeError(f"{path} on :{port}: HTTP {resp.status} {resp.read()[:300]!r}")
    chunks = []
    buf = b""
    while True:
        line = resp.readline()
        if not line:
            break
        line = line.strip()
        if not line.startswith(b"data: "):
            continue
        payload = line[6:]
        if payload == b"[DONE]":
            break
        ev = json.loads(payload)
        for ch in ev.get("choices", []):
            text = ch.get("text")
            if text is None:
                text = (ch.get("delta") or {}).get("content")
            if text:
                chunks.append((time.perf_counter(), text))
    conn.close()
    return t0, chunks


class Server:
    def __init__(self, name, cmd, port, model_bytes, env=None):
        self.name, self.port, self.model_bytes = name, port, model_bytes
        self.log = open(f"/tmp/gateway_peer_{name}.log", "w")
        self.proc = subprocess.Popen(cmd, stdout=self.log, stderr=subprocess.STDOUT, env=env)
        deadline = time.time() + 180
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"{name} exited; see /tmp/gateway_peer_{name}.log")
            try:
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
                conn.request("GET", "/v1/models")
                if conn.getresponse().status == 200:
                    break
            except OSError:
                pass
            time.sleep(0.3)
        else:
            raise RuntimeError(f"{name} did not come up")
        self.rss_loaded = self.rss_beyond_model()

    def rss_beyond_model(self):
        with open(f"/proc/{self.proc.pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) * 1024 - self.model_bytes
        return 0

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()


def gen_tps(srv, tokens):
    nonce = uuid.uuid4().hex[:8]
    body = {"prompt": f"Story {nonce}. Once upon a time, in a land far away,", "max_tokens": tokens,
            "temperature": 0, "stream": True}
    _, chunks = post_stream(srv.port, "/v1/completions", body)
    if len(chunks) < 3:
        return None, len(chunks)
    return (len(chunks) - 1) / (chunks[-1][0] - chunks[0][0]), len(chunks)


PROMPT = ("You are a careful assistant. Explain, in two sentences, why the sky looks blue during the "
          "day and red at sunset, mentioning Rayleigh scattering and the path length of sunlight "
          "through the atmosphere.")


def ttft_cold(srv):
    nonce = uuid.uuid4().hex[:8]
    body = {"messages": [{"role": "user", "content": f"[{nonce}] {PROMPT}"}], "max_tokens": 8,
            "temperature": 0, "stream": True}
    t0, chunks = post_stream(srv.port, "/v1/chat/completions", body)
    return chunks[0][0] - t0 if chunks else None


SYSTEM = ("You are a coding agent working in a repository. Tools: READ path, LIST path, GREP pattern, "
          "EDIT path with SEARCH/REPLACE blocks, RUN argv, DONE summary. Keep answers short. " * 10)
TURNS = ["List the files in src.", "Read src/main.rs.", "What does main do?",
         "Find every call to parse.", "Fix the off-by-one in parse.", "Summarise what you changed."]


def agent(srv):
    nonce = uuid.uuid4().hex[:8]
    messages = [{"role": "system", "content": f"[{nonce}] {SYSTEM}"}]
    ttfts = []
    for turn in TURNS:
        messages.append({"role": "user", "content": turn})
        body = {"messages": messages, "max_tokens": 24, "temperature": 0, "stream": True}
        t0, chunks = post_stream(srv.port, "/v1/chat/completions", body)
        ttfts.append(chunks[0][0] - t0 if chunks else None)
        messages.append({"role": "assistant", "content": "".join(t for _, t in chunks)})
    return ttfts


def concurrent(srv, clients=8, tokens=64):
    results = [0] * clients
    errors = []

    def one(i):
        try:
            body = {"messages": [{"role": "user", "content": f"[{uuid.uuid4().hex[:8]}] Write a poem about "
                                  f"the number {i}."}], "max_tokens": tokens, "temperature": 0, "stream": True}
            _, chunks = post_stream(srv.port, "/v1/chat/completions", body)
            results[i] = len(chunks)
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(repr(e))

    threads = [threading.Thread(target=one, args=(i,)) for i in range(clients)]
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - t0
    if errors:
        raise RuntimeError(f"{srv.name}: {errors[0]}")
    return sum(results) / wall


def med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else float("nan")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bellows", default="target/release/bellows")
    ap.add_argument("--model", default=os.environ.get("BELLOWS_SMOLLM2_GGUF")
                    or os.path.join(models_dir(), "SmolLM2-135M-Instruct.Q4_1.gguf"))
    ap.add_argument("--peer-python", default="/work/venv-peer/bin/python")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--ctx", type=int, default=2048)
    ap.add_argument("--tokens", type=int, default=256)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--json", action="store_true", help="print the raw figures as JSON too")
    a = ap.parse_args()

    model_bytes = os.path.getsize(a.model)
    t = str(a.threads)
    bellows = Server("bellows", [a.bellows, "serve", "--model", a.model, "--port", "18431", "--threads", t,
                                 "--ctx", str(a.ctx), "--parallel", "1"], 18431, model_bytes)
    peer = Server("llama_cpp_python", [a.peer_python, "-m", "llama_cpp.server", "--model", a.model, "--host",
                                        "127.0.0.1", "--port", "18432", "--n_threads", t, "--n_threads_batch", t,
                                        "--n_ctx", str(a.ctx), "--n_batch", "512"], 18432, model_bytes)
    servers = [bellows, peer]
    fig = {s.name: {"gen_tps": [], "gen_tokens": [], "ttft": [], "agent": [], "concurrent_tps": []} for s in servers}
    try:
        for s in servers:  # warm-up: first-call costs are not what we measure
            gen_tps(s, 16)
        for rep in range(a.reps):
            order = servers if rep % 2 == 0 else servers[::-1]
            for s in order:
                tps, n = gen_tps(s, a.tokens)
                fig[s.name]["gen_tps"].append(tps)
                fig[s.name]["gen_tokens"].append(n)
            for s in order:
                fig[s.name]["ttft"].append(ttft_cold(s))
            for s in order:
                fig[s.name]["agent"].append(agent(s))
            for s in order:
                fig[s.name]["concurrent_tps"].append(concurrent(s))
            for s in servers:  # progress, so a long run that is cut short still says something
                f = fig[s.name]
                print(f"rep {rep + 1} {s.name}: gen {f['gen_tps'][-1]:.1f} tok/s, ttft {f['ttft'][-1]:.3f} s, "
                      f"agent {['%.2f' % x for x in f['agent'][-1]]}, 8 clients {f['concurrent_tps'][-1]:.1f} tok/s",
                      file=sys.stderr, flush=True)
        for s in servers:
            fig[s.name]["rss_loaded_mb"] = s.rss_loaded / 2**20
            fig[s.name]["rss_after_mb"] = s.rss_beyond_model() / 2**20
    finally:
        for s in servers:
            s.stop()

    def summary(name):
        f = fig[name]
        turns = [med([run[i] for run in f["agent"]]) for i in range(len(TURNS))]
        return {
            "gen_tps": med(f["gen_tps"]),
            "ttft_s": med(f["ttft"]),
            "agent_ttft_s": turns,
            "agent_later_over_cold": max(turns[1:]) / turns[0],
            "concurrent_tps": med(f["concurrent_tps"]),
            "rss_loaded_mb": f["rss_loaded_mb"],
            "rss_after_mb": f["rss_after_mb"],
        }

    b, p = summary("bellows"), summary("llama_cpp_python")
    print(f"model {os.path.basename(a.model)}, threads {a.threads}, ctx {a.ctx}, {a.reps} reps, "
          f"up to {a.tokens} tokens, greedy; medians")
    print(f"{'':34}{'bellows':>12}{'llama-cpp-py':>14}{'ratio b/p':>11}")
    rows = [("generation tok/s", "gen_tps", "{:.1f}"), ("cold TTFT, s", "ttft_s", "{:.3f}"),
            ("8 clients aggregate tok/s", "concurrent_tps", "{:.1f}"),
            ("RSS beyond model after load, MB", "rss_loaded_mb", "{:.0f}"),
            ("RSS beyond model after runs, MB", "rss_after_mb", "{:.0f}")]
    for label, key, fmt in rows:
        print(f"{label:34}{fmt.format(b[key]):>12}{fmt.format(p[key]):>14}{b[key] / p[key]:>11.2f}")
    for i in range(len(TURNS)):
        print(f"{'agent turn %d TTFT, s' % (i + 1):34}{b['agent_ttft_s'][i]:>12.3f}{p['agent_ttft_s'][i]:>14.3f}"
              f"{b['agent_ttft_s'][i] / p['agent_ttft_s'][i]:>11.2f}")
    print(f"{'agent max(turn>=2) / turn 1':34}{b['agent_later_over_cold']:>12.2f}{p['agent_later_over_cold']:>14.2f}")
    if a.json:
        print(json.dumps({"bellows": b, "llama_cpp_python": p, "raw": fig}, indent=1))


if __name__ == "__main__":
    sys.exit(main())
