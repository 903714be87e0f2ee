#!/usr/bin/env python3
"""bellows serve --upstream in front of llama-server, against llama-server direct.

One llama-server runs on the GGUF (-t/-tb --threads, -c 4096, -np 1, --jinja: it applies the
model's chat template and its own tool-call parser), and bellows runs in front of it
(`bellows serve --upstream http://127.0.0.1:PORT`: it renders prompts through the upstream's
template, generates on its /v1/completions, and decodes and repairs the reply as a local
model's). Both run for the whole script. Every measurement is made on llama-server direct (D)
and through bellows (B) in turn, in alternating order rep after rep (D B, B D, D B, ...: the
machine's speed drifts), and the medians are printed as Markdown tables. Both paths end on the
same llama-server, so each rep sends D and B the same text under two different nonces at its
start: neither request is served from the prompt cache the other filled.

Sections:
  1. streaming latency (--reps, --max-tokens): one streaming /v1/chat/completions per server
     and rep, greedy (temperature 0, seed 1), stream_options.include_usage, a ~80-token prompt
     asking for a long list. Reported: time to first token (request sent -> first content
     chunk), decode time per token ((last content chunk - first content chunk) / (completion
     tokens - 1), completion tokens from the stream's usage), completion and prompt tokens,
     and beside them the total latency of a short non-streaming request (--short-tokens).
     Each is given for D and B, with B - D and B / D of the medians and the median of the
     per-rep differences (paired: each rep's D and B ran back to back). Goals (issue #17):
     added time to first token under 5 ms, per-token overhead under 2 %.
  2. tool-call validity (--tool-prompts): fixed tool-use prompts (weather, file read,
     calculator, web search, e-mail, calendar, currency, shell), each with an OpenAI `tools`
     array of 1-3 function schemas with required parameters, tool_choice "auto", greedy,
     non-streaming and streaming (--no-tool-stream skips the latter). Each reply is one of:
     valid_call (message.tool_calls present, every call names one of the request's tools and
     its arguments are a string holding a JSON object with every required parameter),
     invalid_call (tool_calls present, but a name or the arguments are wrong), call_in_content
     (no tool_calls, but the content looks like a call: <tool_call>, {"name", "arguments",
     "tool_call", or a tool's name followed by "("), prose (none of these), error (an HTTP
     error or a broken stream). The same prompts go both ways (greedy: a prompt cache does not
     change the reply).

The servers' logs go to /tmp/upstream_{bellows,llama-server}.log.

  benches/upstream.py [--bellows target/release/bellows] [--peer llama-server]
                      [--model smollm2|qwen-coder-0.5b|qwen-coder-1.5b|PATH.gguf] [--threads 2]
                      [--reps 5] [--max-tokens 128] [--quick]

--quick: 1 rep, 2 tool prompts, 32 tokens. Copy the bellows binary somewhere stable first
(cargo builds overwrite target/release/bellows while a long run reads it). Only the standard
library is used on the client side (and benches/concurrency.py's helpers). Servers started
here are stopped at the end and on Ctrl-C (only their own process groups).
"""

import argparse
import http.client
import json
import os
import re
import shlex
import signal
import socket
import subprocess
import sys
import time
import uuid

sys.dont_write_bytecode = True  # no benches/__pycache__ from importing concurrency
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import concurrency  # noqa: E402 - the benches directory is on the path only now
from concurrency import MODELS, fmt, get_status, list_prompt, med, resolve_model  # noqa: E402

BELLOWS_DEFAULT = "target/release/bellows"
D, B = "llama-server", "bellows"  # direct, and through bellows


# ---------------------------------------------------------------------------------------------
# Servers

class Server(concurrency.Server):
    """concurrency.Server with its log at /tmp/upstream_NAME.log and a longer health wait
    (bellows discovers its upstream before it answers); stop() and peak_rss_mib() are
    concurrency's, and concurrency.STARTED lists it until it is stopped."""

    def __init__(self, name, cmd, port, wait_s=300):
        self.name, self.cmd, self.port = name, cmd, port
        self.log_path = f"/tmp/upstream_{name}.log"
        self.log = open(self.log_path, "w")
        self.log.write(f"=== {' '.join(shlex.quote(c) for c in cmd)}\n")
        self.log.flush()
        # A session of its own: Ctrl-C in the terminal does not reach it, we stop it ourselves,
        # and its process group holds only what it started.
        self.proc = subprocess.Popen(cmd, stdout=self.log, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL, start_new_session=True)
        concurrency.STARTED.append(self)
        deadline = time.time() + wait_s
        while get_status(port, "/health") != 200:
            if self.proc.poll() is not None:
                raise RuntimeError(f"{name} exited with {self.proc.returncode}; see {self.log_path}")
            if time.time() > deadline:
                raise RuntimeError(f"{name} was not healthy within {wait_s} s; see {self.log_path}")
            time.sleep(0.2)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def peer_version(peer):
    try:
        out = subprocess.run([peer, "--version"], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"({e})"
    lines = (out.stdout + out.stderr).splitlines()
    return next((l.strip() for l in lines if l.lower().startswith("version")),
                lines[0].strip() if lines else "?")


# ---------------------------------------------------------------------------------------------
# HTTP

def post(port, body, timeout=900):
    """POSTs a chat request; returns (t_sent, response, connection)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    data = json.dumps(body).encode()
    t_sent = time.perf_counter()
    conn.request("POST", "/v1/chat/completions", data, {"Content-Type": "application/json"})
    return t_sent, conn.getresponse(), conn


def chat_stream(port, body):
    """Streams one chat request (body without stream fields). Returns a dict: t_sent, t_first
    and t_last (first and last content chunk), t_end, content, tool_calls (the deltas joined
    per index), usage, finish_reason; or raises RuntimeError on an HTTP or stream error."""
    body = dict(body, stream=True, stream_options={"include_usage": True})
    t_sent, resp, conn = post(port, body)
    if resp.status != 200:
        raise RuntimeError(f"HTTP {resp.status} on :{port}: {resp.read()[:300]!r}")
    r = {"t_sent": t_sent, "t_first": None, "t_last": None, "content": [], "tool_calls": {},
         "usage": None, "finish_reason": None, "chunks": 0}
    try:
        for ev in concurrency.sse_events(resp, port):
            if ev.get("usage"):
                r["usage"] = ev["usage"]
            for ch in ev.get("choices") or []:
                delta = ch.get("delta") or {}
                if delta.get("content"):
                    now = time.perf_counter()
                    if r["t_first"] is None:
                        r["t_first"] = now
                    r["t_last"] = now
                    r["content"].append(delta["content"])
                    r["chunks"] += 1
                for tc in delta.get("tool_calls") or []:
                    acc = r["tool_calls"].setdefault(tc.get("index", 0),
                                                     {"id": None, "name": "", "arguments": ""})
                    acc["id"] = acc["id"] or tc.get("id")
                    fn = tc.get("function") or {}
                    acc["name"] += fn.get("name") or ""
                    args = fn.get("arguments")
                    if isinstance(args, str):
                        acc["arguments"] += args
                    elif args is not None:  # an object, not the string OpenAI sends
                        acc["arguments"] = args
                if ch.get("finish_reason"):
                    r["finish_reason"] = ch["finish_reason"]
    finally:
        conn.close()
    r["t_end"] = time.perf_counter()
    r["content"] = "".join(r["content"])
    return r


def chat_once(port, body):
    """One non-streaming chat request. Returns (seconds, parsed response); raises
    RuntimeError on an HTTP error."""
    t_sent, resp, conn = post(port, dict(body, stream=False))
    data = resp.read()
    t = time.perf_counter() - t_sent
    conn.close()
    if resp.status != 200:
        raise RuntimeError(f"HTTP {resp.status} on :{port}: {data[:300]!r}")
    return t, json.loads(data)


# ---------------------------------------------------------------------------------------------
# Section 1: streaming latency

def latency_run(port, nonce, rep, max_tokens, short_tokens):
    msgs = [{"role": "user", "content": list_prompt(nonce, rep)}]
    r = chat_stream(port, {"model": "bench", "messages": msgs, "max_tokens": max_tokens,
                           "temperature": 0.0, "seed": 1})
    u = r["usage"] or {}
    tokens = u.get("completion_tokens")
    if tokens is None:
        tokens = r["chunks"]
    per_token = None
    if r["t_first"] is not None and tokens > 1 and r["t_last"] > r["t_first"]:
        per_token = (r["t_last"] - r["t_first"]) / (tokens - 1)
    f = {"ttft_ms": None if r["t_first"] is None else (r["t_first"] - r["t_sent"]) * 1000,
         "per_token_ms": None if per_token is None else per_token * 1000,
         "tokens": tokens, "chunks": r["chunks"], "prompt_tokens": u.get("prompt_tokens")}
    if short_tokens:
        # A different nonce again: this prompt must not find the streaming one's cache.
        msgs = [{"role": "user", "content": f"[{nonce}-s] Name three colours, one per line."}]
        t, _ = chat_once(port, {"model": "bench", "messages": msgs, "max_tokens": short_tokens,
                                "temperature": 0.0, "seed": 1})
        f["short_total_ms"] = t * 1000
    return f


# ---------------------------------------------------------------------------------------------
# Section 2: tool-call validity

def fn(name, description, props, required):
    return {"type": "function", "function": {
        "name": name, "description": description,
        "parameters": {"type": "object", "properties": props, "required": required}}}


S = {"type": "string"}
TOOL_PROMPTS = [  # (label, user message, tools)
    ("weather", "What's the weather like in Paris right now? Give me the temperature in celsius.",
     [fn("get_weather", "Current weather at a location.",
         {"location": dict(S, description="City name, e.g. 'Berlin'"),
          "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}}, ["location"])]),
    ("read file", "Show me what is in the file src/main.rs.",
     [fn("read_file", "Returns the text of a file.", {"path": dict(S, description="File path")}, ["path"]),
      fn("list_dir", "Lists a directory.", {"path": dict(S, description="Directory path")}, ["path"])]),
    ("calculator", "Use the calculator: what is 1234 multiplied by 5678?",
     [fn("calculate", "Evaluates an arithmetic expression and returns the result.",
         {"expression": dict(S, description="e.g. '2 * (3 + 4)'")}, ["expression"])]),
    ("web search", "Search the web for the release notes of the latest Rust version.",
     [fn("web_search", "Searches the web and returns the top results.",
         {"query": S, "max_results": {"type": "integer"}}, ["query"]),
      fn("open_url", "Fetches a web page.", {"url": S}, ["url"])]),
    ("e-mail", "Send an email to alice@example.com with the subject 'Lunch' telling her I will "
     "be ten minutes late.",
     [fn("send_email", "Sends an email.", {"to": S, "subject": S, "body": S}, ["to", "subject", "body"])]),
    ("calendar", "Put a dentist appointment in my calendar on 2025-03-14 at 15:30.",
     [fn("create_event", "Adds an event to the calendar.",
         {"title": S, "date": dict(S, description="YYYY-MM-DD"), "time": dict(S, description="HH:MM")},
         ["title", "date", "time"]),
      fn("list_events", "Lists the events of a day.", {"date": S}, ["date"])]),
    ("currency", "How many euros are 250 US dollars at today's rate?",
     [fn("convert_currency", "Converts an amount between currencies at the current rate.",
         {"amount": {"type": "number"}, "from_currency": dict(S, description="ISO code, e.g. USD"),
          "to_currency": dict(S, description="ISO code, e.g. EUR")},
         ["amount", "from_currency", "to_currency"])]),
    ("shell", "Create a file named notes.txt that contains the text 'buy milk'.",
     [fn("run_shell", "Runs a shell command and returns its output.", {"command": S}, ["command"]),
      fn("read_file", "Returns the text of a file.", {"path": S}, ["path"]),
      fn("write_file", "Writes text to a file, replacing it.", {"path": S, "content": S},
         ["path", "content"])]),
]
TOOL_SYSTEM = "You are a helpful assistant with access to tools. Call a tool when it helps."
CLASSES = ["valid_call", "invalid_call", "call_in_content", "prose", "error"]


def classify(tools, tool_calls, content):
    """(class, detail) of one reply; tool_calls: [{"name", "arguments"}]."""
    specs = {t["function"]["name"]: t["function"]["parameters"].get("required", []) for t in tools}
    if tool_calls:
        for c in tool_calls:
            name, args = c.get("name"), c.get("arguments")
            if name not in specs:
                return "invalid_call", f"unknown tool {name!r}"
            if not isinstance(args, str):
                return "invalid_call", f"{name}: arguments not a string"
            try:
                obj = json.loads(args)
            except ValueError:
                return "invalid_call", f"{name}: arguments not JSON: {args[:60]!r}"
            if not isinstance(obj, dict):
                return "invalid_call", f"{name}: arguments not an object"
            missing = [p for p in specs[name] if p not in obj]
            if missing:
                return "invalid_call", f"{name}: missing {', '.join(missing)}"
        return "valid_call", ", ".join(c["name"] for c in tool_calls)
    text = content or ""
    pats = [r"<tool_call>", r'\{\s*"name"', r'"arguments"', r'"tool_call"'] + \
           [re.escape(n) + r"\s*\(" for n in specs]
    for p in pats:
        m = re.search(p, text)
        if m:
            return "call_in_content", text[max(0, m.start() - 10):m.start() + 50].replace("\n", " ")
    return "prose", text[:60].replace("\n", " ")


def tool_run(port, prompt, stream, max_tokens):
    label, user, tools = prompt
    body = {"model": "bench", "messages": [{"role": "system", "content": TOOL_SYSTEM},
                                           {"role": "user", "content": user}],
            "tools": tools, "tool_choice": "auto", "max_tokens": max_tokens,
            "temperature": 0.0, "seed": 1}
    try:
        if stream:
            r = chat_stream(port, body)
            calls = [r["tool_calls"][i] for i in sorted(r["tool_calls"])]
            content = r["content"]
        else:
            _, resp = chat_once(port, body)
            msg = (resp.get("choices") or [{}])[0].get("message") or {}
            calls = [{"name": (c.get("function") or {}).get("name"),
                      "arguments": (c.get("function") or {}).get("arguments")}
                     for c in msg.get("tool_calls") or []]
            content = msg.get("content")
    except (RuntimeError, OSError, ValueError) as e:
        return "error", str(e)[:80]
    return classify(tools, calls, content)


# ---------------------------------------------------------------------------------------------

def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bellows", default=BELLOWS_DEFAULT,
                    help=f"bellows binary (default {BELLOWS_DEFAULT}; copy it somewhere stable: "
                         "builds overwrite target/)")
    ap.add_argument("--peer", default=os.environ.get("BELLOWS_LLAMA_SERVER") or concurrency.PEER_DEFAULT,
                    help=f"llama-server binary (default $BELLOWS_LLAMA_SERVER, else {concurrency.PEER_DEFAULT})")
    ap.add_argument("--peer-args", default="", help="more llama-server flags, one string")
    ap.add_argument("--model", default="smollm2", help=f"a GGUF path or one of {', '.join(MODELS)}")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--ctx", type=int, default=4096, help="llama-server's -c (one slot)")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--max-tokens", type=int, default=128, help="max_tokens of the streaming requests")
    ap.add_argument("--short-tokens", type=int, default=16,
                    help="max_tokens of the short non-streaming request per rep (0 skips it)")
    ap.add_argument("--tool-prompts", type=int, default=len(TOOL_PROMPTS),
                    help=f"how many of the {len(TOOL_PROMPTS)} tool prompts (0 skips section 2)")
    ap.add_argument("--tool-max-tokens", type=int, default=256)
    ap.add_argument("--no-tool-stream", action="store_true", help="tool prompts non-streaming only")
    ap.add_argument("--quick", action="store_true", help="smoke test: 1 rep, 2 tool prompts, 32 tokens")
    ap.add_argument("--json", metavar="FILE", help="write the raw figures as JSON too")
    if "--quick" in sys.argv[1:]:  # its defaults; flags given beside it still win
        ap.set_defaults(reps=1, tool_prompts=2, max_tokens=32)
    a = ap.parse_args()
    a.model = resolve_model(a.model)
    for path in (a.bellows, a.peer):
        if not os.access(path, os.X_OK):
            sys.exit(f"{path} is not an executable")

    def on_term(signum, frame):
        raise KeyboardInterrupt
    signal.signal(signal.SIGTERM, on_term)

    load_start = os.getloadavg()
    version = peer_version(a.peer)
    raw = {"latency": {D: [], B: []}, "tools": []}
    t = str(a.threads)
    code = 0
    try:
        port = free_port()
        print(f"starting llama-server on :{port}", file=sys.stderr, flush=True)
        peer = Server(D, [a.peer, "-m", a.model, "--host", "127.0.0.1", "--port", str(port),
                          "-t", t, "-tb", t, "-c", str(a.ctx), "-np", "1", "--jinja", "--no-webui"]
                      + shlex.split(a.peer_args), port)
        bport = free_port()
        print(f"starting bellows on :{bport} in front of it", file=sys.stderr, flush=True)
        bellows = Server(B, [a.bellows, "serve", "--upstream", f"http://127.0.0.1:{port}",
                             "--host", "127.0.0.1", "--port", str(bport)], bport)
        servers = {D: peer, B: bellows}
        for name in (D, B):  # warm-up: first-request costs are not what is measured
            chat_once(servers[name].port, {"model": "bench", "max_tokens": 2, "temperature": 0.0,
                                           "messages": [{"role": "user", "content":
                                                         f"[{uuid.uuid4().hex[:8]}] Say hi."}]})

        for rep in range(a.reps):
            for name in ((D, B) if rep % 2 == 0 else (B, D)):
                nonce = uuid.uuid4().hex[:8]  # one per request: D and B share the llama-server
                f = latency_run(servers[name].port, nonce, rep, a.max_tokens, a.short_tokens)
                raw["latency"][name].append(f)
                shown = ", ".join(f"{k} {v:.4g}" for k, v in f.items() if isinstance(v, (int, float)))
                print(f"  latency rep {rep + 1} {name}: {shown}", file=sys.stderr, flush=True)

        modes = [False] if a.no_tool_stream else [False, True]
        for i, prompt in enumerate(TOOL_PROMPTS[:a.tool_prompts]):
            for stream in modes:
                row = {"prompt": prompt[0], "stream": stream}
                for name in ((D, B) if i % 2 == 0 else (B, D)):
                    row[name] = tool_run(servers[name].port, prompt, stream, a.tool_max_tokens)
                    print(f"  tools {prompt[0]!r} {'stream' if stream else 'once'} {name}: "
                          f"{row[name][0]} ({row[name][1]})", file=sys.stderr, flush=True)
                raw["tools"].append(row)
        raw["rss"] = {name: s.peak_rss_mib() for name, s in servers.items()}
    except KeyboardInterrupt:
        print("interrupted; stopping the servers", file=sys.stderr)
        code = 130
    finally:
        for s in list(concurrency.STARTED):
            s.stop()
    print_report(a, raw, version, load_start)
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"args": vars(a), "raw": raw}, f, indent=1, default=str)
    return code


def print_report(a, raw, version, load_start):
    cpu = concurrency.print_command_and_cpu()
    print(f"Model `{os.path.basename(a.model)}`, {a.threads} threads, {a.reps} rep{'s' if a.reps != 1 else ''} "
          f"(medians), max_tokens {a.max_tokens}; {cpu}, {os.cpu_count()} CPUs; load average "
          f"{load_start[0]:.2f} at start, {os.getloadavg()[0]:.2f} at end; "
          f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}.")
    print(f"llama-server `{a.peer}` ({version}), `-t {a.threads} -tb {a.threads} -c {a.ctx} -np 1 --jinja`"
          + (f" `{a.peer_args}`" if a.peer_args else "") + f"; bellows `{a.bellows}` "
          "`serve --upstream` in front of it.")

    lat = raw["latency"]
    if lat[D] or lat[B]:
        print()
        print(f"### Streaming latency (~80-token prompt asking for a long list, greedy, "
              f"max_tokens {a.max_tokens}; D = llama-server direct, B = through bellows)")
        print()
        print("| figure | D | B | B − D | B / D | paired median B − D |")
        print("|---|---|---|---|---|---|")
        rows = [("time to first token, ms", "ttft_ms", "{:.1f}"),
                ("decode time per token, ms", "per_token_ms", "{:.2f}"),
                ("completion tokens", "tokens", "{:.0f}"),
                ("content chunks", "chunks", "{:.0f}"),
                ("prompt tokens", "prompt_tokens", "{:.0f}")]
        if a.short_tokens:
            rows.append((f"non-streaming total, max_tokens {a.short_tokens}, ms", "short_total_ms", "{:.1f}"))
        figs = {}
        for label, key, f in rows:
            d = med([r.get(key) for r in lat[D]])
            b = med([r.get(key) for r in lat[B]])
            pairs = [rb.get(key) - rd.get(key) for rd, rb in zip(lat[D], lat[B])
                     if rd.get(key) is not None and rb.get(key) is not None]
            pm = med(pairs)
            figs[key] = (d, b, pm)
            diff = None if d is None or b is None else b - d
            rat = "—" if d is None or b is None or d == 0 else f"{b / d:.3f}"
            print(f"| {label} | {fmt(d, f)} | {fmt(b, f)} | {fmt(diff, '{:+.2f}')} | {rat} | {fmt(pm, '{:+.2f}')} |")
        print()
        d, b, pm = figs["ttft_ms"]
        if d is not None and b is not None:
            added = b - d
            print(f"- Added time to first token: {added:+.1f} ms (paired {fmt(pm, '{:+.1f}')} ms); "
                  f"goal under 5 ms: {'met' if added < 5 else 'not met'}.")
        d, b, pm = figs["per_token_ms"]
        if d and b is not None:
            over = (b / d - 1) * 100
            print(f"- Per-token overhead: {over:+.2f} % (paired {fmt(None if pm is None else pm / d * 100, '{:+.2f}')} %); "
                  f"goal under 2 %: {'met' if over < 2 else 'not met'}.")

    if raw["tools"]:
        n_prompts = len({r["prompt"] for r in raw["tools"]})
        print()
        print(f"### Tool-call validity (tool_choice auto, greedy, max_tokens {a.tool_max_tokens}; "
              f"{n_prompts} prompt{'s' if n_prompts != 1 else ''} with 1–3 tools each)")
        print()
        modes = sorted({r["stream"] for r in raw["tools"]})
        print("| mode | server | " + " | ".join(CLASSES) + " |")
        print("|---|---|" + "---|" * len(CLASSES))
        for stream in modes:
            for name in (D, B):
                counts = {c: 0 for c in CLASSES}
                for r in raw["tools"]:
                    if r["stream"] == stream:
                        counts[r[name][0]] += 1
                print(f"| {'streaming' if stream else 'non-streaming'} | "
                      f"{'llama-server direct' if name == D else 'through bellows'} | "
                      + " | ".join(str(counts[c]) for c in CLASSES) + " |")
        print()
        print("| prompt | mode | llama-server direct | through bellows |")
        print("|---|---|---|---|")
        for r in raw["tools"]:
            cell = lambda v: f"{v[0]}: `{v[1].replace('|', '/').replace('`', '')}`" if v[1] else v[0]  # noqa: E731
            print(f"| {r['prompt']} | {'streaming' if r['stream'] else 'non-streaming'} | "
                  f"{cell(r[D])} | {cell(r[B])} |")
    rss = raw.get("rss")
    if rss:
        print()
        print(f"Peak RSS: llama-server {fmt(rss.get(D), '{:.0f}')} MiB (holds the model), bellows "
              f"{fmt(rss.get(B), '{:.0f}')} MiB.")


if __name__ == "__main__":
    sys.exit(main())
