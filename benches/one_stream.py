#!/usr/bin/env python3
"""One stream, several servers side by side: each server is started once, only one is busy at a
time, and the requests go to them in rotating order rep after rep (the machine's speed drifts),
so small differences in decode speed (a few per cent) show through the noise.

Each request is the concurrency bench's list prompt (benches/concurrency.py, a fresh nonce per
request), greedy, --max-tokens tokens. Reported per server: the median decode speed (tokens
after the first / time from the first content chunk to the last) and its ratio to the last
server named, the median time to first token, and for bellows servers their lookup-decoding
counters from /metrics (tokens drafted and taken).

  benches/one_stream.py --model qwen-coder-0.5b --reps 10 --max-tokens 64 [--topic 0] \\
      'auto=/tmp/bellows serve --model {model} --port {port} --threads 2 --parallel 1 --ctx 1024' \\
      'off=/tmp/bellows serve --model {model} --port {port} --threads 2 --parallel 1 --ctx 1024 --lookup off' \\
      'peer=llama-server -m {model} --port {port} -t 2 -tb 2 -np 1 -c 1024 --kv-unified -cb --jinja'

Each server is NAME=COMMAND, with {model} and {port} filled in. Only the standard library is
used (and benches/concurrency.py's helpers).
"""

import argparse
import os
import shlex
import statistics
import sys
import urllib.request
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import concurrency as c  # noqa: E402


def lookup_counters(port):
    """bellows' lookup counters, or None for a server without them."""
    try:
        text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read().decode()
    except OSError:
        return None
    found = {}
    for line in text.splitlines():
        for key in ("bellows_lookup_draft_tokens_total", "bellows_lookup_accepted_tokens_total"):
            if line.startswith(key + " "):
                found[key] = float(line.split()[1])
    return found or None


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="qwen-coder-0.5b")
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--max-tokens", type=int, default=64)
    ap.add_argument("--topic", type=int, default=None,
                    help="the list prompt's topic index for every request (default: rep by rep)")
    ap.add_argument("servers", nargs="+", metavar="NAME=COMMAND")
    args = ap.parse_args()
    gguf = c.resolve_model(args.model)
    specs = []
    for spec in args.servers:
        name, sep, cmd = spec.partition("=")
        if not sep or not name or not cmd:
            sys.exit(f"not NAME=COMMAND: {spec!r}")
        specs.append((name, cmd))
    servers, port = [], 18400
    results = {}
    try:
        for name, cmd in specs:  # one after the other: loading must not overlap
            port = c.free_port(port + 1)
            argv = shlex.split(cmd.replace("{port}", str(port)).replace("{model}", gguf))
            servers.append(c.Server(name, argv, port))
            c.chat_stream(port, [{"role": "user", "content": "Say hi."}], 4)  # warm-up
            results[name] = []
        for rep in range(args.reps):
            k = rep % len(servers)
            for s in servers[k:] + servers[:k]:
                topic = rep if args.topic is None else args.topic
                prompt = c.list_prompt(uuid.uuid4().hex[:8], topic)
                r = c.chat_stream(s.port, [{"role": "user", "content": prompt}], args.max_tokens)
                tokens = r["usage"]["completion_tokens"]
                decode = (tokens - 1) / (r["t_last"] - r["t_first"])
                ttft = r["t_first"] - r["t_sent"]
                results[s.name].append((decode, ttft))
                print(f"rep {rep + 1} {s.name}: decode {decode:.2f} tok/s, ttft {ttft * 1000:.0f} ms, "
                      f"{tokens} tokens", file=sys.stderr, flush=True)
        counters = {s.name: lookup_counters(s.port) for s in servers}
    finally:
        for s in servers:
            s.stop()
    base = statistics.median(d for d, _ in results[servers[-1].name])
    print(f"\n`{' '.join(shlex.quote(a) for a in sys.argv)}`\n\n{os.path.basename(gguf)}, "
          f"{args.reps} reps, {args.max_tokens} tokens, medians\n")
    print(f"| server | decode tok/s | over {servers[-1].name} | TTFT ms | drafted / taken |")
    print("|---|---|---|---|---|")
    for s in servers:
        d = statistics.median(x[0] for x in results[s.name])
        t = statistics.median(x[1] for x in results[s.name])
        n = counters[s.name]
        drafts = "—" if n is None else (f"{n.get('bellows_lookup_draft_tokens_total', 0):.0f} / "
                                        f"{n.get('bellows_lookup_accepted_tokens_total', 0):.0f}")
        print(f"| {s.name} | {d:.2f} | {d / base:.3f} | {t * 1000:.0f} | {drafts} |")


if __name__ == "__main__":
    main()
