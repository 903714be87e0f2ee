#!/usr/bin/env python3
"""The peer side of benches/engine.rs: llama.cpp itself, driven through llama-cpp-python.

A long-lived process: it reads one JSON command per line on stdin and answers one JSON line
on stdout, so the Rust bench can interleave its own runs with these (the machine's speed
drifts over minutes; interleaving keeps the ratio honest).

Commands:
  {"cmd": "load", "path": P, "n_ctx": N, "threads": T, "n_batch": B}
  {"cmd": "prompt", "text": S}                 -> {"n_prompt", "prompt_secs"}
  {"cmd": "gen", "text": S, "max_tokens": N}   -> {"n_prompt", "prompt_secs", "n_gen", "gen_secs", "ttft_secs"}
  {"cmd": "rss"}                               -> {"rss_bytes", "peak_rss_bytes"}

Generation is greedy: argmax over a zero-copy numpy view of llama.cpp's logits for the last
token (`llama_get_logits_ith(ctx, -1)`), timed by wall clock around each call, as a Python
user of llama.cpp would see it.
"""

import json
import sys
import time

import llama_cpp
import numpy as np

llm = None


def rss():
    out = {}
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                out["rss_bytes"] = int(line.split()[1]) * 1024
            elif line.startswith("VmHWM:"):
                out["peak_rss_bytes"] = int(line.split()[1]) * 1024
    return out


def tokens_of(text):
    return llm.tokenize(text.encode("utf-8"), add_bos=True, special=True)


def eval_prompt(tokens):
    llm.reset()
    t0 = time.perf_counter()
    llm.eval(tokens)
    return time.perf_counter() - t0


def handle(cmd):
    global llm
    kind = cmd["cmd"]
    if kind == "load":
        llm = llama_cpp.Llama(
            model_path=cmd["path"],
            n_ctx=cmd["n_ctx"],
            n_threads=cmd["threads"],
            n_threads_batch=cmd["threads"],
            n_batch=cmd["n_batch"],
            n_ubatch=cmd["n_batch"],
            # llama.cpp's own default (auto) resolves to flash attention on CPU, which is what
            # the Rust side gets; llama-cpp-python would otherwise force it off.
            flash_attn=True,
            verbose=False,
        )
        return {"ok": True}
    if kind == "prompt":
        tokens = tokens_of(cmd["text"])
        secs = eval_prompt(tokens)
        return {"n_prompt": len(tokens), "prompt_secs": secs}
    if kind == "gen":
        start = time.perf_counter()
        tokens = tokens_of(cmd["text"])
        prompt_secs = eval_prompt(tokens)
        n_gen = 0
        ttft = None
        gen_start = None
        eos = {llm.token_eos()}
        while n_gen < cmd["max_tokens"]:
            ptr = llama_cpp.llama_get_logits_ith(llm.ctx, -1)
            tok = int(np.argmax(np.ctypeslib.as_array(ptr, shape=(llm.n_vocab(),))))
            if ttft is None:
                ttft = time.perf_counter() - start
                gen_start = time.perf_counter()
            n_gen += 1
            if tok in eos or llama_cpp.llama_vocab_is_eog(llm._model.vocab, tok):
                break
            if n_gen >= cmd["max_tokens"]:
                break
            llm.eval([tok])
        gen_secs = time.perf_counter() - gen_start
        return {
            "n_prompt": len(tokens),
            "prompt_secs": prompt_secs,
            "n_gen": n_gen,
            "gen_secs": gen_secs,
            "ttft_secs": ttft,
        }
    if kind == "rss":
        return rss()
    return {"error": f"unknown command {kind}"}


def main():
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        try:
            reply = handle(json.loads(line))
        except Exception as e:  # The bench prints the message; the process keeps serving.
            reply = {"error": f"{type(e).__name__}: {e}"}
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
