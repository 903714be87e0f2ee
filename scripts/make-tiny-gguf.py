#!/usr/bin/env python3
"""Writes a tiny random-weight llama GGUF for tests that need a real llama.cpp model but not
its quality.

    python3 scripts/make-tiny-gguf.py OUT.gguf

The model: llama architecture, 2 layers, embedding 64, 4 heads, feed-forward 128, a byte-level
BPE vocabulary (the 256 GPT-2 byte symbols, a few merges, and the ChatML special tokens), and a
ChatML `tokenizer.chat_template`. The weights come from a fixed seed, so the same file is
written every time. It is about 0.4 MB and loads and generates in milliseconds; its output is
noise, so grammars used with it must be narrow enough to terminate.

Needs the PyPI packages `gguf` and `numpy` (scripts/fetch-models.sh installs them into its
private virtual environment).
"""

import sys

import numpy as np
import gguf

N_EMBD = 64
N_LAYER = 2
N_HEAD = 4
N_HEAD_KV = 4
N_FF = 128
N_CTX_TRAIN = 2048
SEED = 20260130

CHATML = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)


def byte_symbols():
    """GPT-2's reversible byte -> printable character table, as byte-level BPE uses it."""
    printable = (
        list(range(ord("!"), ord("~") + 1))
        + list(range(ord("\xa1"), ord("\xac") + 1))
        + list(range(ord("\xae"), ord("\xff") + 1))
    )
    chars = printable[:]
    n = 0
    for b in range(256):
        if b not in printable:
            printable.append(b)
            chars.append(256 + n)
            n += 1
    return [chr(c) for _, c in sorted(zip(printable, chars))]


def vocabulary():
    symbols = byte_symbols()
    tokens = list(symbols)
    types = [gguf.TokenType.NORMAL] * len(tokens)
    # A few merges give the tokenizer multi-byte tokens, so pieces of several bytes occur.
    merge_pairs = [("Ġ", "t"), ("h", "e"), ("i", "n"), ("Ġt", "he"), ("e", "r"), ("a", "n")]
    merges = []
    for a, b in merge_pairs:
        merges.append(f"{a} {b}")
        tokens.append(a + b)
        types.append(gguf.TokenType.NORMAL)
    specials = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
    special_ids = {}
    for s in specials:
        special_ids[s] = len(tokens)
        tokens.append(s)
        types.append(gguf.TokenType.CONTROL)
    return tokens, types, merges, special_ids


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: make-tiny-gguf.py OUT.gguf")
    out = sys.argv[1]
    tokens, types, merges, special = vocabulary()
    n_vocab = len(tokens)
    rng = np.random.default_rng(SEED)

    def weight(*shape):
        return (rng.standard_normal(shape) * 0.5).astype(np.float32)

    w = gguf.GGUFWriter(out, "llama")
    w.add_name("tiny-random-llama")
    w.add_context_length(N_CTX_TRAIN)
    w.add_embedding_length(N_EMBD)
    w.add_block_count(N_LAYER)
    w.add_feed_forward_length(N_FF)
    w.add_head_count(N_HEAD)
    w.add_head_count_kv(N_HEAD_KV)
    w.add_rope_dimension_count(N_EMBD // N_HEAD)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_vocab_size(n_vocab)
    w.add_file_type(gguf.LlamaFileType.ALL_F32)

    w.add_tokenizer_model("gpt2")
    w.add_tokenizer_pre("gpt-2")
    w.add_token_list(tokens)
    w.add_token_types(types)
    w.add_token_merges(merges)
    w.add_bos_token_id(special["<|endoftext|>"])
    w.add_eos_token_id(special["<|im_end|>"])
    w.add_pad_token_id(special["<|endoftext|>"])
    w.add_add_bos_token(False)
    w.add_chat_template(CHATML)

    w.add_tensor("token_embd.weight", weight(n_vocab, N_EMBD))
    w.add_tensor("output_norm.weight", np.ones(N_EMBD, dtype=np.float32))
    w.add_tensor("output.weight", weight(n_vocab, N_EMBD))
    for i in range(N_LAYER):
        p = f"blk.{i}."
        w.add_tensor(p + "attn_norm.weight", np.ones(N_EMBD, dtype=np.float32))
        w.add_tensor(p + "attn_q.weight", weight(N_EMBD, N_EMBD))
        w.add_tensor(p + "attn_k.weight", weight(N_EMBD * N_HEAD_KV // N_HEAD, N_EMBD))
        w.add_tensor(p + "attn_v.weight", weight(N_EMBD * N_HEAD_KV // N_HEAD, N_EMBD))
        w.add_tensor(p + "attn_output.weight", weight(N_EMBD, N_EMBD))
        w.add_tensor(p + "ffn_norm.weight", np.ones(N_EMBD, dtype=np.float32))
        w.add_tensor(p + "ffn_gate.weight", weight(N_FF, N_EMBD))
        w.add_tensor(p + "ffn_up.weight", weight(N_FF, N_EMBD))
        w.add_tensor(p + "ffn_down.weight", weight(N_EMBD, N_FF))

    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


if __name__ == "__main__":
    main()
