#!/usr/bin/env python3
"""bellows serve --parallel N against llama-server -np N: concurrency, shared prefixes and `n`.

Both servers get the same GGUF, the same threads, unified KV and the same total context, and
run side by side; each measurement is run on bellows and on llama-server in turn, in
alternating order rep after rep (B P, P B, B P, ...: the machine's speed drifts), and the
medians are printed as Markdown tables with the ratio bellows / llama-server.

Sections:
  1. concurrency (--streams 1,2,4,8,16): for each c, both servers are restarted with c slots
     (bellows --parallel c --ctx c*P --ctx-per-seq P; llama-server -np c -c c*P --kv-unified,
     P = --ctx-per-seq) and c streaming chat clients start at once, each with its own ~80-token
     prompt asking for a long list, greedy, max_tokens --max-tokens. Reported: aggregate
     completion tok/s (all clients' completion tokens / time from the first request sent to the
     last one finished), mean per-client tok/s ((tokens - 1) / (last chunk - first chunk): the
     speed a user watches once the reply started), mean time to first token, completion tokens
     per client, and the server's peak RSS (VmHWM of /proc/PID/status after the reps; it
     includes the mapped model).
  2. shared prefix (--shared-prefix 8): both servers restarted with max(8, streams, n) slots of
     --long-ctx-per-seq tokens; 8 streaming clients whose chat starts with the same ~900-token
     agent system prompt and asks a different question. The same with 8 different system
     prompts of the same length (a nonce at their start) is measured beside it, so the gain of
     sharing is visible for each server.
  3. `n` from one long prompt (--n-choices 1,4,8), on the same servers as 2: one ~1,500-token
     prompt, sampled (--n-temperature), and for each k: one request with n = k (when the server
     accepts `n`: probed at start), k concurrent identical requests of n = 1, and k sequential
     requests of n = 1 (the same prompt, so the second onwards hit the prompt cache), and k
     sequential requests each with its own prompt of the same length (each evaluates it in full,
     the premise of the issue's target). Reported: completed sequences per second, and bellows' n = k over its k sequential requests
     (issue's target: n = 4 at least 2.5x).

Every prompt starts with a fresh nonce per rep (the same text goes to both servers), so no
measurement is served from a cache an earlier one filled. Completion tokens are taken from the
stream's usage (stream_options.include_usage) where given, else counted as content chunks;
with n > 1 they are counted as content chunks per choice (llama-server's usage counts one
choice only). The servers' logs go to /tmp/concurrency_{bellows,llama-server}.log.

  benches/concurrency.py [--bellows target/release/bellows] [--peer llama-server]
                         [--model smollm2|qwen-coder-0.5b|PATH.gguf] [--threads 2] [--reps 3]
                         [--streams 1,2,4,8,16] [--shared-prefix 8] [--n-choices 1,4,8] [--quick]

Copy the bellows binary somewhere stable first (cargo builds overwrite target/release/bellows
while a long run reads it). Only the standard library is used on the client side. Servers
started here are stopped at the end and on Ctrl-C (only their own process groups).
"""

import argparse
import http.client
import json
import os
import shlex
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time
import uuid

PEER_DEFAULT = "/work/peer-llama/build/bin/llama-server"

MODELS = {  # name: (environment variable scripts/models-env.sh prints, file in the models cache)
    "smollm2": ("BELLOWS_SMOLLM2_GGUF", "SmolLM2-135M-Instruct.Q4_1.gguf"),
    "qwen-coder-0.5b": ("BELLOWS_QWEN_CODER_05B_GGUF", "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"),
    "qwen-coder-1.5b": ("BELLOWS_QWEN_CODER_15B_GGUF", "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"),
    "gemma3": ("BELLOWS_GEMMA3_GGUF", "gemma-3-270m-Q4_K_M.gguf"),
}


def models_dir():
    if os.environ.get("BELLOWS_MODELS"):
        return os.environ["BELLOWS_MODELS"]
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(cache, "bellows", "models")


def resolve_model(name):
    if name in MODELS:
        var, file = MODELS[name]
        path = os.environ.get(var) or os.path.join(models_dir(), file)
        if not os.path.isfile(path):
            sys.exit(f"model {name} not found at {path}; fetch it with scripts/fetch-models.sh {name}")
        return path
    if not os.path.isfile(name):
        sys.exit(f"--model {name}: neither a file nor one of {', '.join(MODELS)}")
    return name


# ---------------------------------------------------------------------------------------------
# Prompts

TOPICS = ["the human heart", "volcanoes", "the Roman Empire", "honey bees", "the planet Mars",
          "photosynthesis", "the Pacific Ocean", "jazz music", "the printing press", "glaciers",
          "the immune system", "electric motors", "the Silk Road", "octopuses", "rainforests",
          "the game of chess", "bridges", "the Moon", "coffee", "earthquakes"]


def list_prompt(nonce, i):
    topic = TOPICS[i % len(TOPICS)]
    return (f"[{nonce}-{i}] I am preparing for a school exam about {topic}. Write a long numbered "
            f"list of at least forty distinct facts about {topic}, one fact per line, each one a "
            f"complete sentence. Do not write an introduction or a conclusion, do not repeat a "
            f"fact, and do not stop before the fortieth fact. Start with fact number 1.")


TOOLS = [
    ("read_file", "path", "Returns the whole text of the file at path, relative to the repository "
     "root, with line numbers. Use it before you change a file, never guess its content."),
    ("list_dir", "path", "Lists the entries of a directory, one per line, directories ending in a "
     "slash. Hidden files and the .git directory are left out."),
    ("grep", "pattern, path", "Searches the files under path for a regular expression and returns "
     "the matching lines with their file names and line numbers, at most two hundred."),
    ("edit_file", "path, search, replace", "Replaces the one occurrence of the search text in the "
     "file with the replacement text. The search text must match exactly, including indentation "
     "and blank lines, and must occur once; otherwise the edit is refused."),
    ("write_file", "path, content", "Creates the file, or replaces its whole content. Parent "
     "directories are created as needed. Prefer edit_file for small changes to large files."),
    ("run", "argv", "Runs a command in the repository root without a shell, with a timeout of "
     "sixty seconds, and returns its exit status and the last two hundred lines of its output."),
    ("run_tests", "selector", "Runs the project's test suite, or only the tests whose names "
     "contain the selector, and returns a summary of failures with their tracebacks."),
    ("git_diff", "", "Shows the changes made so far in this session as a unified diff."),
    ("done", "summary", "Ends the task. The summary says what was changed and why, in two or "
     "three sentences, and lists the files touched."),
]

RULES = [
    "Work in small steps: read before you edit, and run the tests after every change that could "
    "break them.",
    "Never invent file contents, function names or command output; look them up with the tools.",
    "Keep the existing style of the code: its indentation, naming, quoting and line length.",
    "Change only what the task needs. Do not reformat unrelated code, rename things for taste or "
    "add comments that repeat the code.",
    "When a test fails, read the failure carefully, find the cause in the code and fix the cause, "
    "not the test, unless the task says the test is wrong.",
    "Do not add dependencies, network access or files outside the repository.",
    "If a command fails, do not run it again unchanged; change something first or explain why.",
    "Write new functions with a short docstring and tests beside the existing ones.",
    "Before calling done, check with git_diff that every change is intended and complete, and "
    "that no debugging output is left behind.",
    "Answer in English, briefly. Put every tool call on its own line as a JSON object with the "
    "keys name and arguments, and nothing else on that line.",
]


def agent_system(nonce):
    """An agent-like system prompt of roughly 900 tokens (tools, rules, an example)."""
    parts = [f"[{nonce}] You are Forge, a careful software engineering agent working inside a "
             "git repository on the user's machine. You complete programming tasks by calling "
             "tools, one or more per turn, and reading their results. The user sees your "
             "messages and the tool results.", "", "# Tools", ""]
    for name, args, desc in TOOLS:
        parts.append(f"## {name}({args})\n{desc}")
    parts += ["", "# Rules", ""]
    parts += [f"{i + 1}. {r}" for i, r in enumerate(RULES)]
    parts += ["", "# Example", "",
              'User: The function parse_date in util/dates.py crashes on empty strings.',
              'Assistant: {"name": "read_file", "arguments": {"path": "util/dates.py"}}',
              'Tool: 1 def parse_date(text):\\n2     day, month, year = text.split("-")\\n...',
              'Assistant: {"name": "edit_file", "arguments": {"path": "util/dates.py", "search": '
              '"    day, month, year = text.split(\\"-\\")", "replace": "    if not text:\\n        '
              'return None\\n    day, month, year = text.split(\\"-\\")"}}',
              'Tool: edited util/dates.py',
              'Assistant: {"name": "run_tests", "arguments": {"selector": "dates"}}',
              'Tool: 12 passed',
              'Assistant: {"name": "done", "arguments": {"summary": "parse_date returns None for an '
              'empty string instead of raising; util/dates.py."}}',
              "", "The repository is a Python 3.11 web service with a PostgreSQL database, its "
              "tests under tests/ run with pytest, and its configuration lives in config/.",
              "Think about the whole task before the first tool call, then act."]
    return "\n".join(parts)


QUESTIONS = [
    "How would you add pagination to every list endpoint of this service?",
    "How would you replace the hand-written SQL in the repository with parameterised queries?",
    "How would you add structured logging with request identifiers to the service?",
    "How would you find and remove the dead code in the repository?",
    "How would you add a rate limiter to the login endpoint?",
    "How would you migrate the configuration from INI files to TOML?",
    "How would you make the test suite run twice as fast?",
    "How would you add a health check endpoint that also checks the database?",
    "How would you add type hints to the whole code base?",
    "How would you split the largest module into smaller ones?",
    "How would you add retries with backoff to the outgoing HTTP calls?",
    "How would you add an audit log of every change an administrator makes?",
    "How would you replace the custom date parsing with the standard library?",
    "How would you add a command line interface for the maintenance tasks?",
    "How would you add caching to the slowest database queries?",
    "How would you prepare the service for running in several processes at once?",
]


def agent_question(i):
    return (f"{QUESTIONS[i % len(QUESTIONS)]} Do not call any tool yet: write a long numbered plan "
            "of at least thirty concrete steps, one step per line, naming the files you expect "
            "to touch.")


ENTITIES = ["order", "invoice", "customer", "product", "shipment", "payment", "refund", "coupon",
            "warehouse", "supplier"]


def long_document(nonce):
    """A Python module of ~1,350 tokens (SmolLM2's tokenizer), for review_request."""
    out = [f"# [{nonce}] shop/records.py", "import csv", "import datetime", "import decimal", ""]
    for e in ENTITIES:
        out.append(f'''def load_{e}s(path):
    """Reads the {e}s from a CSV file and returns them as a list of dicts."""
    with open(path) as f:
        rows = list(csv.DictReader(f))
    for r in rows:
        r["amount"] = decimal.Decimal(r["amount"])
        r["created"] = datetime.date.fromisoformat(r["created"])
    return rows


def total_{e}_amount(rows, since=None):
    total = 0
    for r in rows:
        if since is None or r["created"] >= since:
            total = total + r["amount"]
    return total
''')
    return "\n".join(out)


def review_request(nonce):
    return (long_document(nonce) + "\nReview the module above as a senior engineer. Write a long "
            "numbered list of at least thirty concrete improvements, one per line, each naming "
            "the function it concerns. Do not stop before the thirtieth item.")


# ---------------------------------------------------------------------------------------------
# HTTP

def get_status(port, path, timeout=2):
    try:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
        conn.request("GET", path)
        status = conn.getresponse().status
        conn.close()
        return status
    except OSError:
        return None


def chat_stream(port, messages, max_tokens, temperature=0.0, n=1):
    """Streams one chat request. Returns a dict: t_sent, t_first (first content chunk), t_last
    (last content chunk), t_end (stream finished), chunks (content chunks per choice index),
    usage (the usage object, or None)."""
    body = {"model": "bench", "messages": messages, "max_tokens": max_tokens,
            "temperature": temperature, "stream": True, "stream_options": {"include_usage": True}}
    if temperature > 0:
        # The same sampling on both: the whole distribution, as OpenAI's API means a request
        # without truncation (llama-server would otherwise cut to its top-k 40, top-p 0.95 and
        # min-p 0.05 first; bellows ignores the two fields it does not take).
        body.update({"top_p": 1.0, "top_k": 0, "min_p": 0.0})
    if n != 1:
        body["n"] = n
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=900)
    data = json.dumps(body).encode()
    t_sent = time.perf_counter()
    conn.request("POST", "/v1/chat/completions", data, {"Content-Type": "application/json"})
    resp = conn.getresponse()
    if resp.status != 200:
        raise RuntimeError(f"HTTP {resp.status} on :{port}: {resp.read()[:300]!r}")
    r = {"t_sent": t_sent, "t_first": None, "t_last": None, "chunks": {}, "usage": None}
    for ev in sse_events(resp, port):
        if ev.get("usage"):
            r["usage"] = ev["usage"]
        for ch in ev.get("choices") or []:
            if (ch.get("delta") or {}).get("content"):
                now = time.perf_counter()
                if r["t_first"] is None:
                    r["t_first"] = now
                r["t_last"] = now
                idx = ch.get("index", 0)
                r["chunks"][idx] = r["chunks"].get(idx, 0) + 1
    r["t_end"] = time.perf_counter()
    conn.close()
    return r


def sse_events(resp, port):
    """The JSON events of a server-sent-events response, until `[DONE]` or its end; an error
    event raises RuntimeError."""
    while True:
        line = resp.readline()
        if not line:
            return
        line = line.strip()
        if not line.startswith(b"data:"):
            continue
        payload = line[5:].strip()
        if payload == b"[DONE]":
            return
        ev = json.loads(payload)
        if ev.get("error"):
            raise RuntimeError(f"error event on :{port}: {ev['error']}")
        yield ev


def completion_tokens(r):
    """Completion tokens of a one-choice stream: usage where given, else content chunks."""
    u = r["usage"] or {}
    if u.get("completion_tokens") is not None:
        return u["completion_tokens"]
    return sum(r["chunks"].values())


def run_clients(port, requests):
    """Sends the (messages, max_tokens, temperature, n) requests at once, one thread each."""
    results = [None] * len(requests)
    errors = []

    def one(i):
        try:
            results[i] = chat_stream(port, *requests[i])
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(repr(e))

    threads = [threading.Thread(target=one, args=(i,), daemon=True) for i in range(len(requests))]
    for t in threads:
        t.start()
    for t in threads:
        while t.is_alive():  # a timeout, so Ctrl-C reaches the main thread while clients wait
            t.join(0.2)
    if errors:
        raise RuntimeError(errors[0])
    return results


def free_port(start):
    port = start
    while port < start + 1000:
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
                return port
            except OSError:
                port += 1
    raise RuntimeError(f"no free port from {start}")


# ---------------------------------------------------------------------------------------------
# Servers

STARTED = []  # every Server started, so the finally block and the signal handler can stop them
LOGGED = set()


class Server:
    def __init__(self, name, cmd, port):
        self.name, self.cmd, self.port = name, cmd, port
        self.log_path = f"/tmp/concurrency_{name}.log"
        self.log = open(self.log_path, "a" if name in LOGGED else "w")  # one log per bench run
        LOGGED.add(name)
        self.log.write(f"\n=== {' '.join(shlex.quote(c) for c in cmd)}\n")
        self.log.flush()
        # A session of its own: Ctrl-C in the terminal does not reach it, we stop it ourselves,
        # and its process group holds only what it started.
        self.proc = subprocess.Popen(cmd, stdout=self.log, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL, start_new_session=True)
        STARTED.append(self)
        deadline = time.time() + 300
        while get_status(port, "/health") != 200:
            if self.proc.poll() is not None:
                raise RuntimeError(f"{name} exited with {self.proc.returncode}; see {self.log_path}")
            if time.time() > deadline:
                raise RuntimeError(f"{name} was not healthy within 300 s; see {self.log_path}")
            time.sleep(0.2)

    def peak_rss_mib(self):
        try:
            with open(f"/proc/{self.proc.pid}/status") as f:
                for line in f:
                    if line.startswith("VmHWM:"):
                        return int(line.split()[1]) / 1024
        except OSError:
            pass
        return None

    def stop(self):
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                try:
                    os.killpg(self.proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                self.proc.wait()
        self.log.close()
        if self in STARTED:
            STARTED.remove(self)


def start_pair(a, slots, per_seq, port_base):
    """Starts bellows, then llama-server (one after the other: loading must not overlap)."""
    total = slots * per_seq
    t = str(a.threads)
    port = free_port(port_base)
    bellows = Server("bellows", [a.bellows, "serve", "--model", a.model, "--host", "127.0.0.1",
                                 "--port", str(port), "--threads", t, "--parallel", str(slots),
                                 "--ctx", str(total), "--ctx-per-seq", str(per_seq),
                                 "--gpu-layers", str(a.gpu_layers)] + shlex.split(a.bellows_args), port)
    port = free_port(port + 1)
    peer = Server("llama-server", [a.peer, "-m", a.model, "--host", "127.0.0.1", "--port", str(port),
                                   "-t", t, "-tb", t, "-np", str(slots), "-c", str(total),
                                   "--kv-unified", "-cb", "--jinja", "--no-webui",
                                   "-ngl", str(a.gpu_layers)]
                  + shlex.split(a.peer_args), port)
    servers = [bellows, peer]
    for s in servers:  # warm-up: first-request costs are not what is measured
        run_clients(s.port, [([{"role": "user", "content": f"[{uuid.uuid4().hex[:8]}] Say hi."}],
                              2, 0.0, 1) for _ in range(min(slots, 4))])
    return servers, port + 1


def accepts_n(s):
    try:
        r = chat_stream(s.port, [{"role": "user", "content": "Name a colour."}], 2, 0.7, 2)
        return len(r["chunks"]) == 2
    except RuntimeError:
        return False


# ---------------------------------------------------------------------------------------------
# Measurements

def streams_figures(results):
    tokens = [completion_tokens(r) for r in results]
    wall = max(r["t_end"] for r in results) - min(r["t_sent"] for r in results)
    per_client = [(completion_tokens(r) - 1) / (r["t_last"] - r["t_first"]) for r in results
                  if r["t_first"] is not None and r["t_last"] > r["t_first"] and completion_tokens(r) > 1]
    ttft = [r["t_first"] - r["t_sent"] for r in results if r["t_first"] is not None]
    prompt = [(r["usage"] or {}).get("prompt_tokens") for r in results]
    return {"agg_tps": sum(tokens) / wall, "client_tps": mean(per_client), "ttft_s": mean(ttft),
            "tokens_per_client": mean(tokens), "prompt_tokens": mean([p for p in prompt if p]),
            "wall_s": wall}


def concurrency_run(s, nonce, c, max_tokens):
    reqs = [([{"role": "user", "content": list_prompt(nonce, i)}], max_tokens, 0.0, 1) for i in range(c)]
    return streams_figures(run_clients(s.port, reqs))


def prefix_run(s, nonce, c, max_tokens, shared):
    reqs = [([{"role": "system", "content": agent_system(nonce if shared else f"{nonce}-{i}")},
              {"role": "user", "content": agent_question(i)}], max_tokens, 0.0, 1) for i in range(c)]
    return streams_figures(run_clients(s.port, reqs))


def n_run(s, nonce, k, mode, max_tokens, temperature):
    """Completed sequences per second for k sequences of one prompt, in one of three modes."""
    msgs = [{"role": "user", "content": review_request(nonce)}]
    t0 = time.perf_counter()
    if mode == "n":
        results = [chat_stream(s.port, msgs, max_tokens, temperature, k)]
    elif mode == "concurrent":
        results = run_clients(s.port, [(msgs, max_tokens, temperature, 1)] * k)
    elif mode == "fresh":  # each request its own prompt: every one evaluates it in full
        results = [chat_stream(s.port, [{"role": "user", "content": review_request(f"{nonce}-{i}")}],
                               max_tokens, temperature, 1) for i in range(k)]
    else:
        results = [chat_stream(s.port, msgs, max_tokens, temperature, 1) for _ in range(k)]
    wall = time.perf_counter() - t0
    seqs = sum(len(r["chunks"]) for r in results)
    if seqs != k:  # a choice that ended before any text, or a server that sent fewer choices
        print(f"  warning: {s.name}: {mode} k={k}: {seqs} choices with content, not {k}",
              file=sys.stderr, flush=True)
    tokens = sum(sum(r["chunks"].values()) for r in results)
    prompt = (results[0]["usage"] or {}).get("prompt_tokens")
    first = results[0]
    # The first request's time to its first token: the prompt's evaluation (nothing cached).
    ttft = first["t_first"] - first["t_sent"] if first["t_first"] is not None else None
    return {"seq_s": k / wall, "tokens_per_seq": tokens / k, "wall_s": wall, "prompt_tokens": prompt,
            "ttft_s": ttft}


def mean(xs):
    xs = [x for x in xs if x is not None]
    return sum(xs) / len(xs) if xs else None


def med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def fmt(x, f="{:.1f}"):
    return "—" if x is None else f.format(x)


def ratio(b, p):
    return "—" if b is None or p is None or p == 0 else f"{b / p:.2f}"


def interleaved(servers, reps, label, measure):
    """Runs measure(server, nonce) for each rep on each server, alternating the order; returns
    {server name: [figures per rep]}."""
    out = {s.name: [] for s in servers}
    for rep in range(reps):
        nonce = uuid.uuid4().hex[:8]
        for s in (servers if rep % 2 == 0 else servers[::-1]):
            f = measure(s, nonce)
            out[s.name].append(f)
            shown = ", ".join(f"{k} {v:.3g}" for k, v in f.items() if isinstance(v, (int, float)))
            print(f"  {label} rep {rep + 1} {s.name}: {shown}", file=sys.stderr, flush=True)
    return out


def medians(runs):
    keys = runs[0].keys() if runs else []
    return {k: med([r[k] for r in runs]) for k in keys}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bellows", default="target/release/bellows",
                    help="bellows binary (copy it somewhere stable: builds overwrite target/)")
    ap.add_argument("--peer", default=os.environ.get("BELLOWS_LLAMA_SERVER") or PEER_DEFAULT,
                    help=f"llama-server binary (default $BELLOWS_LLAMA_SERVER, else {PEER_DEFAULT})")
    ap.add_argument("--bellows-args", default="", help="more bellows serve flags, one string")
    ap.add_argument("--peer-args", default="", help="more llama-server flags, one string")
    ap.add_argument("--model", default="smollm2", help=f"a GGUF path or one of {', '.join(MODELS)}")
    ap.add_argument("--threads", type=int, default=len(os.sched_getaffinity(0)))
    ap.add_argument("--gpu-layers", type=int, default=0,
                    help="layers offloaded to the GPU on both servers (bellows --gpu-layers, llama-server -ngl)")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--streams", default="1,2,4,8,16", help="concurrency levels of section 1 ('' skips it)")
    ap.add_argument("--ctx-per-seq", type=int, default=1024,
                    help="context per slot in section 1 (total context = slots x this)")
    ap.add_argument("--shared-prefix", type=int, default=8, metavar="STREAMS",
                    help="clients of section 2 (0 skips it)")
    ap.add_argument("--n-choices", default="1,4,8", help="values of n in section 3 ('' skips it)")
    ap.add_argument("--long-ctx-per-seq", type=int, default=2048,
                    help="context per slot in sections 2 and 3 (their prompts are ~1,000 and ~1,500 tokens)")
    ap.add_argument("--max-tokens", type=int, default=64)
    ap.add_argument("--n-temperature", type=float, default=0.7, help="sampling temperature of section 3")
    ap.add_argument("--port", type=int, default=18700, help="first port tried; the next free ones are used")
    ap.add_argument("--quick", action="store_true",
                    help="smoke test: defaults become streams 1,4, shared prefix at 4, n 1,4, 1 rep, 16 tokens")
    ap.add_argument("--json", metavar="FILE", help="write the raw figures as JSON too")
    if "--quick" in sys.argv[1:]:  # its defaults; flags given beside it still win
        ap.set_defaults(streams="1,4", shared_prefix=4, n_choices="1,4", reps=1, max_tokens=16)
    a = ap.parse_args()
    a.model = resolve_model(a.model)
    for path in (a.bellows, a.peer):
        if not os.access(path, os.X_OK):
            sys.exit(f"{path} is not an executable")
    streams = [int(x) for x in a.streams.split(",") if x.strip()]
    n_choices = [int(x) for x in a.n_choices.split(",") if x.strip()]

    def on_term(signum, frame):
        raise KeyboardInterrupt
    signal.signal(signal.SIGTERM, on_term)

    load_start = os.getloadavg()
    raw = {"concurrency": {}, "prefix": {}, "n": {}, "rss": {}, "accepts_n": {}}
    port = a.port
    try:
        for c in streams:
            print(f"concurrency {c}: starting both servers with {c} slots", file=sys.stderr, flush=True)
            servers, port = start_pair(a, c, a.ctx_per_seq, port)
            try:
                raw["concurrency"][c] = interleaved(
                    servers, a.reps, f"c={c}", lambda s, nonce: concurrency_run(s, nonce, c, a.max_tokens))
                raw["rss"][f"c={c}"] = {s.name: s.peak_rss_mib() for s in servers}
            finally:
                for s in servers:
                    s.stop()
        if a.shared_prefix or n_choices:
            slots = max([8, a.shared_prefix] + n_choices)
            print(f"long prompts: starting both servers with {slots} slots of {a.long_ctx_per_seq}",
                  file=sys.stderr, flush=True)
            servers, port = start_pair(a, slots, a.long_ctx_per_seq, port)
            try:
                if a.shared_prefix:
                    c = a.shared_prefix
                    for shared in (True, False):
                        key = "shared" if shared else "distinct"
                        raw["prefix"][key] = interleaved(
                            servers, a.reps, f"prefix {key} c={c}",
                            lambda s, nonce: prefix_run(s, nonce, c, a.max_tokens, shared))
                    raw["rss"]["prefix"] = {s.name: s.peak_rss_mib() for s in servers}
                if n_choices:
                    raw["accepts_n"] = {s.name: accepts_n(s) for s in servers}
                    print(f"  accepts n: {raw['accepts_n']}", file=sys.stderr, flush=True)
                    for k in n_choices:
                        modes = ["n"] if k == 1 else ["n", "concurrent", "sequential", "fresh"]
                        for mode in modes:
                            these = [s for s in servers if mode != "n" or k == 1 or raw["accepts_n"][s.name]]
                            if not these:
                                continue
                            raw["n"][f"{k} {mode}"] = interleaved(
                                these, a.reps, f"n k={k} {mode}",
                                lambda s, nonce: n_run(s, nonce, k, mode, a.max_tokens, a.n_temperature))
                    raw["rss"]["n"] = {s.name: s.peak_rss_mib() for s in servers}
            finally:
                for s in servers:
                    s.stop()
    except KeyboardInterrupt:
        print("interrupted; stopping the servers", file=sys.stderr)
        for s in list(STARTED):
            s.stop()
        print_report(a, raw, streams, n_choices, load_start)
        return 130
    finally:
        for s in list(STARTED):
            s.stop()
    print_report(a, raw, streams, n_choices, load_start)
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"args": vars(a), "raw": raw}, f, indent=1, default=str)
    return 0


def print_command_and_cpu():
    """Prints the command line as run (a fenced block); returns the CPU's model name."""
    print()
    print("```sh")
    print(" ".join(shlex.quote(x) for x in [sys.argv[0]] + sys.argv[1:]))
    print("```")
    print()
    try:
        with open("/proc/cpuinfo") as f:
            return next((l.split(":", 1)[1].strip() for l in f if l.startswith("model name")), "")
    except OSError:
        return ""


def print_report(a, raw, streams, n_choices, load_start):
    B, P = "bellows", "llama-server"
    cpu = print_command_and_cpu()
    print(f"Model `{os.path.basename(a.model)}`, {a.threads} threads, "
          + (f"{a.gpu_layers} layers on the GPU, " if a.gpu_layers else "")
          + f"{a.reps} rep{'s' if a.reps != 1 else ''} (medians), "
          f"max_tokens {a.max_tokens}; {cpu}, {os.cpu_count()} CPUs; load average "
          f"{load_start[0]:.2f} at start, {os.getloadavg()[0]:.2f} at end; "
          f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}.")
    print(f"bellows `{a.bellows}`" + (f" with `{a.bellows_args}`" if a.bellows_args else "")
          + f"; llama-server `{a.peer}`"
          + (f" with `{a.peer_args}`" if a.peer_args else "") + ".")

    if raw["concurrency"]:
        print()
        print(f"### Concurrency (distinct ~80-token prompts, greedy, context {a.ctx_per_seq} per slot)")
        print()
        print("| streams | aggregate tok/s b / p | ratio | per-client tok/s b / p | ratio | "
              "TTFT s b / p | ratio | tokens per client b / p | peak RSS MiB b / p | ratio |")
        print("|---|---|---|---|---|---|---|---|---|---|")
        for c in streams:
            if c not in raw["concurrency"]:
                continue
            b, p = (medians(raw["concurrency"][c][n]) for n in (B, P))
            rss = raw["rss"].get(f"c={c}", {})
            print(f"| {c} | {fmt(b.get('agg_tps'))} / {fmt(p.get('agg_tps'))} | {ratio(b.get('agg_tps'), p.get('agg_tps'))} "
                  f"| {fmt(b.get('client_tps'))} / {fmt(p.get('client_tps'))} | {ratio(b.get('client_tps'), p.get('client_tps'))} "
                  f"| {fmt(b.get('ttft_s'), '{:.3f}')} / {fmt(p.get('ttft_s'), '{:.3f}')} | {ratio(b.get('ttft_s'), p.get('ttft_s'))} "
                  f"| {fmt(b.get('tokens_per_client'), '{:.0f}')} / {fmt(p.get('tokens_per_client'), '{:.0f}')} "
                  f"| {fmt(rss.get(B), '{:.0f}')} / {fmt(rss.get(P), '{:.0f}')} | {ratio(rss.get(B), rss.get(P))} |")

    if raw["prefix"]:
        c = a.shared_prefix
        print()
        print(f"### Shared prefix ({c} streams, ~900-token agent system prompt, different questions, "
              f"greedy, context {a.long_ctx_per_seq} per slot)")
        print()
        print("| system prompts | prompt tokens b / p | aggregate tok/s b / p | ratio | per-client tok/s b / p "
              "| ratio | TTFT s b / p | ratio | tokens per client b / p |")
        print("|---|---|---|---|---|---|---|---|---|")
        for key, label in (("shared", "one shared"), ("distinct", f"{c} different")):
            if key not in raw["prefix"]:
                continue
            b, p = (medians(raw["prefix"][key][n]) for n in (B, P))
            print(f"| {label} | {fmt(b.get('prompt_tokens'), '{:.0f}')} / {fmt(p.get('prompt_tokens'), '{:.0f}')} "
                  f"| {fmt(b.get('agg_tps'))} / {fmt(p.get('agg_tps'))} | {ratio(b.get('agg_tps'), p.get('agg_tps'))} "
                  f"| {fmt(b.get('client_tps'))} / {fmt(p.get('client_tps'))} | {ratio(b.get('client_tps'), p.get('client_tps'))} "
                  f"| {fmt(b.get('ttft_s'), '{:.3f}')} / {fmt(p.get('ttft_s'), '{:.3f}')} | {ratio(b.get('ttft_s'), p.get('ttft_s'))} "
                  f"| {fmt(b.get('tokens_per_client'), '{:.0f}')} / {fmt(p.get('tokens_per_client'), '{:.0f}')} |")
        rss = raw["rss"].get("prefix", {})
        print()
        print(f"Peak RSS after this section: bellows {fmt(rss.get(B), '{:.0f}')} MiB, llama-server "
              f"{fmt(rss.get(P), '{:.0f}')} MiB ({ratio(rss.get(B), rss.get(P))}).")

    if raw["n"]:
        print()
        print(f"### `n` from one long prompt (sampled at temperature {a.n_temperature}, "
              f"max_tokens {a.max_tokens}; completed sequences per second)")
        print()
        acc = raw.get("accepts_n", {})
        print(f"`n` > 1 accepted: bellows {'yes' if acc.get(B) else 'no'}, llama-server "
              f"{'yes' if acc.get(P) else 'no'}.")
        print()
        print("| k | requests | prompt tokens b / p | sequences/s b / p | ratio | tokens per sequence b / p |")
        print("|---|---|---|---|---|---|")
        labels = {"n": "one request, n = {k}", "concurrent": "{k} concurrent, n = 1",
                  "sequential": "{k} sequential, n = 1",
                  "fresh": "{k} sequential, n = 1, each its own prompt"}
        for k in n_choices:
            for mode in ("n", "concurrent", "sequential", "fresh"):
                runs = raw["n"].get(f"{k} {mode}")
                if not runs:
                    continue
                b, p = (medians(runs.get(n, [])) for n in (B, P))
                print(f"| {k} | {labels[mode].format(k=k)} | {fmt(b.get('prompt_tokens'), '{:.0f}')} / "
                      f"{fmt(p.get('prompt_tokens'), '{:.0f}')} | {fmt(b.get('seq_s'), '{:.3g}')} / "
                      f"{fmt(p.get('seq_s'), '{:.3g}')} | {ratio(b.get('seq_s'), p.get('seq_s'))} | "
                      f"{fmt(b.get('tokens_per_seq'), '{:.0f}')} / {fmt(p.get('tokens_per_seq'), '{:.0f}')} |")
        print()
        for k in n_choices:
            if k == 1:
                continue
            for name in (B, P):
                one = medians(raw["n"].get(f"{k} n", {}).get(name, [])).get("seq_s")
                seq = medians(raw["n"].get(f"{k} sequential", {}).get(name, [])).get("seq_s")
                conc = medians(raw["n"].get(f"{k} concurrent", {}).get(name, [])).get("seq_s")
                fresh = medians(raw["n"].get(f"{k} fresh", {}).get(name, [])).get("seq_s")
                target = " (target at k = 4: at least 2.5)" if name == B and k == 4 else ""
                print(f"- {name}, k = {k}: n = {k} over {k} sequential {ratio(one, seq)}{target}; "
                      f"over {k} sequential that each evaluate their prompt {ratio(one, fresh)}; "
                      f"{k} concurrent over {k} sequential {ratio(conc, seq)}.")
        # Where the prompt is cached, k sequential requests cost P + k*D (P: the prompt's
        # evaluation, D: one reply's decoding) and n = k at least P + D, so their ratio is below
        # (P + k*D) / (P + D): it can reach 2.5 at k = 4 only where D >= P.
        one = raw["n"].get("1 n", {})
        for name in (B, P):
            m = medians(one.get(name, []))
            if m.get("ttft_s") and m.get("wall_s"):
                pe, d = m["ttft_s"], max(m["wall_s"] - m["ttft_s"], 0.0)
                k = 4
                print(f"- {name}: one prompt evaluated in {pe:.2f} s, one reply decoded in {d:.2f} s: "
                      f"with the prompt cached, n = {k} gains at most about {(pe + k * d) / (pe + d):.2f}x "
                      f"over {k} sequential requests ((P + {k}D) / (P + D), decoding batched for free; "
                      f"it reaches 2.5 only where a reply's decoding takes as long as the prompt's "
                      f"evaluation).")
        rss = raw["rss"].get("n", {})
        print()
        print(f"Peak RSS after this section: bellows {fmt(rss.get(B), '{:.0f}')} MiB, llama-server "
              f"{fmt(rss.get(P), '{:.0f}')} MiB ({ratio(rss.get(B), rss.get(P))}).")


if __name__ == "__main__":
    sys.exit(main())
