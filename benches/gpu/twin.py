#!/usr/bin/env python3
"""A model's twin for speed runs where the model itself cannot travel.

A device machine lent for a GPU run receives at most 64 MiB of files, and no model hub can be
reached from it. Speed does not depend on the weights' values, only on the architecture, the
tensor shapes, the quantization types and the tokenizer. So:

    benches/gpu/twin.py skeleton REAL.gguf OUT.skel   # here: the header of REAL, a few MiB
    benches/gpu/twin.py expand OUT.skel TWIN.gguf     # there: the same file, random weights

The skeleton is the real file's bytes up to where tensor data starts (every metadata key, the
chat template and the vocabulary, the tensor table), so the twin loads as the same model, with
the same tokenizer and template, and the same size to the byte. The data is filled block by
block with random quants whose scales are set to small, finite values, so activations stay
finite and the GPU kernels do the same work as for the real model. Its replies are noise:
figures from a twin are speed figures only.

Needs numpy.
"""

import struct
import sys

import numpy as np

SEED = 20261204

# ggml type id -> (elements per block, bytes per block, [(byte offset of an f16 scale, value)])
TYPES = {
    0: (1, 4, []),  # F32 (filled apart)
    1: (1, 2, []),  # F16 (filled apart)
    2: (32, 18, [(0, 2e-3)]),  # Q4_0
    3: (32, 20, [(0, 2e-3), (2, 0.0)]),  # Q4_1
    6: (32, 22, [(0, 1e-3)]),  # Q5_0
    7: (32, 24, [(0, 1e-3), (2, 0.0)]),  # Q5_1
    8: (32, 34, [(0, 2e-4)]),  # Q8_0
    10: (256, 84, [(80, 1e-3), (82, 0.0)]),  # Q2_K
    11: (256, 110, [(108, 1e-4)]),  # Q3_K
    12: (256, 144, [(0, 1e-4), (2, 0.0)]),  # Q4_K
    13: (256, 176, [(0, 5e-5), (2, 0.0)]),  # Q5_K
    14: (256, 210, [(208, 2e-5)]),  # Q6_K
    30: (1, 2, []),  # BF16 (filled apart)
}

# GGUF metadata value types -> struct format of a scalar (8 = string, 9 = array)
SCALARS = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q", 12: "d"}


class Reader:
    def __init__(self, data):
        self.data = data
        self.pos = 0

    def take(self, fmt):
        (v,) = struct.unpack_from("<" + fmt, self.data, self.pos)
        self.pos += struct.calcsize("<" + fmt)
        return v

    def string(self):
        n = self.take("Q")
        s = self.data[self.pos : self.pos + n]
        self.pos += n
        return s.decode("utf-8", "replace")

    def value(self, vtype):
        if vtype == 8:
            return self.string()
        if vtype == 9:
            itype = self.take("I")
            n = self.take("Q")
            if itype in SCALARS:  # skip numeric arrays in one step
                self.pos += n * struct.calcsize("<" + SCALARS[itype])
                return None
            return [self.value(itype) for _ in range(n)]
        return self.take(SCALARS[vtype])


def parse(head):
    """(alignment, data start, [(name, type, dims, offset)]) from a GGUF's first bytes."""
    r = Reader(head)
    if r.take("I") != 0x46554747:
        raise SystemExit("not a GGUF file (bad magic)")
    version = r.take("I")
    if version < 2:
        raise SystemExit(f"GGUF version {version} is not supported")
    n_tensors = r.take("Q")
    n_kv = r.take("Q")
    alignment = 32
    for _ in range(n_kv):
        key = r.string()
        value = r.value(r.take("I"))
        if key == "general.alignment":
            alignment = int(value)
    tensors = []
    for _ in range(n_tensors):
        name = r.string()
        dims = [r.take("Q") for _ in range(r.take("I"))]
        tensors.append((name, r.take("I"), dims, r.take("Q")))
    start = (r.pos + alignment - 1) // alignment * alignment
    return alignment, start, tensors


def tensor_bytes(ttype, dims):
    if ttype not in TYPES:
        raise SystemExit(f"tensor type {ttype} is not known to twin.py")
    per_block, block_bytes, _ = TYPES[ttype]
    n = 1
    for d in dims:
        n *= d
    return n // per_block * block_bytes


def skeleton(real, out):
    with open(real, "rb") as f:
        head = f.read(64 << 20)
    _, start, tensors = parse(head)
    with open(out, "wb") as f:
        f.write(head[:start])
    print(f"{out}: {start} bytes of header, {len(tensors)} tensors")


def fill(rng, ttype, dims, nbytes):
    if ttype == 0:
        n = nbytes // 4
        if len(dims) == 1:  # norms and biases: ones keep each layer's scale
            return np.ones(n, dtype="<f4").tobytes()
        return (rng.standard_normal(n, dtype=np.float32) * 0.02).astype("<f4").tobytes()
    if ttype == 1:
        return (rng.standard_normal(nbytes // 2, dtype=np.float32) * 0.02).astype("<f2").tobytes()
    if ttype == 30:  # bf16: the top half of an f32
        f = (rng.standard_normal(nbytes // 2, dtype=np.float32) * 0.02).astype("<f4")
        return (f.view("<u4") >> 16).astype("<u2").tobytes()
    _, block_bytes, scales = TYPES[ttype]
    blocks = rng.integers(0, 256, size=(nbytes // block_bytes, block_bytes), dtype=np.uint8)
    for offset, value in scales:
        blocks[:, offset : offset + 2] = np.frombuffer(np.float16(value).astype("<f2").tobytes(), dtype=np.uint8)
    return blocks.tobytes()


def expand(skel, out):
    with open(skel, "rb") as f:
        head = f.read()
    alignment, start, tensors = parse(head)
    if start != len(head):
        raise SystemExit(f"{skel}: {len(head)} bytes, but its tensor table ends at {start}")
    rng = np.random.default_rng(SEED)
    with open(out, "wb") as f:
        f.write(head)
        pos = 0
        for name, ttype, dims, offset in sorted(tensors, key=lambda t: t[3]):
            if offset < pos:
                raise SystemExit(f"tensor {name} overlaps the one before it")
            f.write(b"\0" * (offset - pos))
            nbytes = tensor_bytes(ttype, dims)
            f.write(fill(rng, ttype, dims, nbytes))
            pos = offset + nbytes
        pad = (-pos) % alignment
        f.write(b"\0" * pad)
    print(f"{out}: {start + pos + pad} bytes, {len(tensors)} tensors")


def main():
    if len(sys.argv) != 4 or sys.argv[1] not in ("skeleton", "expand"):
        print(__doc__.split("\n\n")[2], file=sys.stderr)
        sys.exit(2)
    (skeleton if sys.argv[1] == "skeleton" else expand)(sys.argv[2], sys.argv[3])


if __name__ == "__main__":
    main()
