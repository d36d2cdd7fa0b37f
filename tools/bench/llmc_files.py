#!/usr/bin/python3
"""tools/bench/llmc_files.py -- the files llm.c's CPU trainer reads, written
for a benchmark (random data; nothing here is learned).

  llmc_files.py tokens FILE N [--vocab 50257] [--seed 1]
      N random token ids in llm.c's shard format (also eo-train --tokens):
      a header of 256 int32 (magic 20240520, version 1, token count at [2],
      the rest 0), then N uint16 ids below --vocab.
  llmc_files.py checkpoint FILE [--layers 12 --heads 12 --channels 768
                                 --max-t 1024 --vocab 50257 --seed 1]
      A random-initialised GPT-2 checkpoint in llm.c's format: a header of
      256 int32 (magic 20240326, version 3, maxT, V, L, NH, C, Vp with Vp the
      vocabulary padded up to a multiple of 128), then float32 parameters in
      llm.c's order: wte [Vp, C], wpe [maxT, C], then each of ln1w, ln1b,
      qkvw [3C, C], qkvb, attprojw [C, C], attprojb, ln2w, ln2b, fcw [4C, C],
      fcb, fcprojw [C, 4C], fcprojb stacked over the L layers, then lnfw,
      lnfb. Weights N(0, 0.02) (GPT-2's initialisation), LayerNorm gains 1,
      biases 0: only the timing matters, so the residual scaling of nanoGPT
      is left out.

Needs numpy (Debian python3-numpy).
"""
import argparse
import struct
import sys

import numpy as np


def header(values):
    h = [0] * 256
    h[:len(values)] = values
    return struct.pack("<256i", *h)


def tokens(path, n, vocab, seed):
    rng = np.random.default_rng(seed)
    ids = rng.integers(0, vocab, size=n, dtype=np.uint16)
    with open(path, "wb") as f:
        f.write(header([20240520, 1, n]))
        f.write(ids.astype("<u2").tobytes())


def checkpoint(path, L, NH, C, maxT, V, seed):
    Vp = (V + 127) // 128 * 128
    rng = np.random.default_rng(seed)

    def normal(*shape):
        return rng.standard_normal(size=shape, dtype=np.float32) * np.float32(0.02)

    ones = lambda n: np.ones((L, n), np.float32)
    zeros = lambda n: np.zeros((L, n), np.float32)
    wte = normal(Vp, C)
    wte[V:] = 0  # llm.c keeps the padded rows at zero
    tensors = [wte, normal(maxT, C),
               ones(C), zeros(C), normal(L, 3 * C, C), zeros(3 * C),
               normal(L, C, C), zeros(C), ones(C), zeros(C),
               normal(L, 4 * C, C), zeros(4 * C), normal(L, C, 4 * C), zeros(C),
               np.ones(C, np.float32), np.zeros(C, np.float32)]
    with open(path, "wb") as f:
        f.write(header([20240326, 3, maxT, V, L, NH, C, Vp]))
        for t in tensors:
            f.write(t.astype("<f4").tobytes())
    return sum(t.size for t in tensors)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="what", required=True)
    t = sub.add_parser("tokens")
    t.add_argument("file")
    t.add_argument("n", type=int)
    t.add_argument("--vocab", type=int, default=50257)
    t.add_argument("--seed", type=int, default=1)
    c = sub.add_parser("checkpoint")
    c.add_argument("file")
    c.add_argument("--layers", type=int, default=12)
    c.add_argument("--heads", type=int, default=12)
    c.add_argument("--channels", type=int, default=768)
    c.add_argument("--max-t", type=int, default=1024)
    c.add_argument("--vocab", type=int, default=50257)
    c.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    if a.what == "tokens":
        if a.n < 1 or a.vocab < 1 or a.vocab > 65536:
            sys.exit("llmc_files.py tokens: need N >= 1 and 1 <= --vocab <= 65536 (uint16 ids)")
        tokens(a.file, a.n, a.vocab, a.seed)
    else:
        if a.channels % a.heads:
            sys.exit(f"llmc_files.py checkpoint: --heads {a.heads} does not divide --channels {a.channels}")
        n = checkpoint(a.file, a.layers, a.heads, a.channels, a.max_t, a.vocab, a.seed)
        print(f"{a.file}: {n} parameters (llm.c layout, padded vocabulary)")


if __name__ == "__main__":
    main()
