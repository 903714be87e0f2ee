#!/usr/bin/env python3
"""Idle caches against a new long prompt: bellows against llama-server, one run each.

Both servers start with 8 slots of 2,048 tokens (unified KV, as benches/concurrency.py starts
them). On each: the time to first token of a ~1,540-token prompt on an empty cache, then twice
more after eight ~1,000-token requests (different system prompts) have finished and left their
caches. Where idle caches stay in the context, every batch attends over their cells and the
later prompts slow down; a server that moves them out keeps the first figure.

  benches/idle_cache.py BELLOWS_BINARY      (llama-server: $BELLOWS_LLAMA_SERVER, else the
                                             concurrency bench's default; SmolLM2)
"""
import importlib.util
import os
import sys
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location("concurrency", os.path.join(HERE, "concurrency.py"))
c = importlib.util.module_from_spec(spec)
spec.loader.exec_module(c)


class Args:
    peer_args = ""
    threads = 2
    gpu_layers = 0


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    a = Args()
    a.bellows = sys.argv[1]
    a.peer = os.environ.get("BELLOWS_LLAMA_SERVER") or c.PEER_DEFAULT
    a.model = c.resolve_model("smollm2")
    servers, _ = c.start_pair(a, 8, 2048, 18900)
    try:
        for s in servers:
            nonce = uuid.uuid4().hex[:8]
            r = c.chat_stream(s.port, [{"role": "user", "content": c.review_request(nonce)}], 4)
            out = [f"empty cache {r['t_first'] - r['t_sent']:.2f} s"]
            for rep in range(2):
                reqs = [([{"role": "system", "content": c.agent_system(f"{nonce}-{rep}-{i}")},
                          {"role": "user", "content": c.agent_question(i)}], 4, 0.0, 1)
                        for i in range(8)]
                c.run_clients(s.port, reqs)
                r = c.chat_stream(s.port, [{"role": "user",
                                            "content": c.review_request(f"{nonce}x{rep}")}], 4)
                out.append(f"after 8 idle sequences {r['t_first'] - r['t_sent']:.2f} s")
            print(f"{s.name}: " + ", ".join(out), flush=True)
    finally:
        for s in servers:
            s.stop()


if __name__ == "__main__":
    main()
