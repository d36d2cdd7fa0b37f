#!/usr/bin/python3
"""tools/bench/bench_gpt2_torch.py -- PyTorch's side of tools/bench/bench-gpt2.sh.

  bench_gpt2_torch.py train --threads N --batch B --context T --steps S TOKENS
      GPT-2 124M (12 layers, 12 heads, d_model 768, vocabulary 50257, tied
      head, context T as the position table, tanh GELU, pre-LN), AdamW
      (lr 6e-4, weight decay 0.1, betas 0.9/0.95), gradient clipping 1.0, on
      consecutive windows of llm.c's token shard TOKENS, S steps; prints
      ms_per_step (mean over the steps after the first) and peak_rss_mib.
  bench_gpt2_torch.py generate --threads N --tokens K [--transformers]
      Greedy generation of K tokens after a 1-token prompt with the KV cache,
      batch 1: GPT2LMHeadModel.generate (random init, GPT-2 124M config) with
      --transformers, else the model above with its own cache. Prints
      tokens_per_s and peak_rss_mib.

Attention is written out (masked softmax): torch 1.13 has no
scaled_dot_product_attention. The torch version, its CPU capability and its
BLAS are printed, since they decide the figures.
"""
import argparse
import math
import resource
import sys
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

L, H, C, V = 12, 12, 768, 50257


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(C), nn.LayerNorm(C)
        self.qkv, self.proj = nn.Linear(C, 3 * C), nn.Linear(C, C)
        self.fc, self.fcproj = nn.Linear(C, 4 * C), nn.Linear(4 * C, C)

    def forward(self, x, cache=None):
        B, T, _ = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(C, dim=2)
        q, k, v = (t.view(B, T, H, C // H).transpose(1, 2) for t in (q, k, v))
        if cache is not None:
            if cache:
                k, v = torch.cat([cache[0], k], 2), torch.cat([cache[1], v], 2)
            cache[:] = [k, v]
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(C // H))
        S = k.shape[2]
        if T > 1:
            mask = torch.ones(T, S, dtype=torch.bool).tril(S - T)
            att = att.masked_fill(~mask, float("-inf"))
        y = (F.softmax(att, dim=-1) @ v).transpose(1, 2).reshape(B, T, C)
        x = x + self.proj(y)
        return x + self.fcproj(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))


class GPT2(nn.Module):
    def __init__(self, maxT):
        super().__init__()
        self.wte, self.wpe = nn.Embedding(V, C), nn.Embedding(maxT, C)
        self.blocks = nn.ModuleList(Block() for _ in range(L))
        self.lnf = nn.LayerNorm(C)
        for p in self.parameters():
            if p.dim() == 2:
                nn.init.normal_(p, 0, 0.02)

    def forward(self, idx, pos0=0, caches=None):
        T = idx.shape[1]
        x = self.wte(idx) + self.wpe(torch.arange(pos0, pos0 + T))
        for i, b in enumerate(self.blocks):
            x = b(x, None if caches is None else caches[i])
        return self.lnf(x) @ self.wte.weight.t()  # tied head


def peak_rss_mib():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def describe():
    cfg = torch.__config__.show()
    cap = [l.split(":", 1)[1].strip() for l in cfg.splitlines() if "CPU capability" in l]
    blas = [p.split("=", 1)[1] for p in cfg.replace(",", " ").split() if p.startswith("BLAS_INFO=")]
    print(f"torch {torch.__version__} cpu_capability {cap[0] if cap else '?'} "
          f"blas {blas[0] if blas else '?'} threads {torch.get_num_threads()}")


def train(a):
    with open(a.tokens, "rb") as f:
        hdr = np.frombuffer(f.read(1024), dtype="<i4")
        if hdr[0] != 20240520 or hdr[1] != 1:
            sys.exit(f"{a.tokens}: not an llm.c token shard (magic {hdr[0]}, version {hdr[1]})")
        ids = np.frombuffer(f.read(), dtype="<u2")[:hdr[2]].astype(np.int64)
    B, T = a.batch, a.context
    if len(ids) < B * T + 1:
        sys.exit(f"{a.tokens}: {len(ids)} tokens, fewer than batch x context + 1 = {B * T + 1}")
    torch.manual_seed(1)
    model = GPT2(max(T, 1024))
    decay = [p for p in model.parameters() if p.dim() == 2]
    rest = [p for p in model.parameters() if p.dim() != 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1},
                             {"params": rest, "weight_decay": 0.0}], lr=6e-4, betas=(0.9, 0.95))
    times, pos = [], 0
    for step in range(a.steps):
        if pos + B * T + 1 > len(ids):
            pos = 0
        w = torch.from_numpy(ids[pos:pos + B * T + 1])
        pos += B * T
        x, y = w[:-1].view(B, T), w[1:].view(B, T)
        t0 = time.perf_counter()
        loss = F.cross_entropy(model(x).view(-1, V), y.reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        times.append(time.perf_counter() - t0)
        print(f"step {step}: loss {loss.item():.4f} {1000 * times[-1]:.1f} ms", flush=True)
    steady = times[1:] if len(times) > 1 else times
    print(f"ms_per_step={1000 * sum(steady) / len(steady):.1f} best_ms={1000 * min(steady):.1f} "
          f"peak_rss_mib={peak_rss_mib():.0f}")


@torch.no_grad()
def generate(a):
    torch.manual_seed(1)
    prompt = torch.zeros(1, 1, dtype=torch.long)
    if a.transformers:
        import transformers
        cfg = transformers.GPT2Config(n_layer=L, n_head=H, n_embd=C, vocab_size=V, n_positions=1024)
        model = transformers.GPT2LMHeadModel(cfg).eval()
        print(f"transformers {transformers.__version__}")
        run = lambda: model.generate(prompt, max_new_tokens=a.tokens, min_new_tokens=a.tokens,
                                     do_sample=False, use_cache=True, pad_token_id=0)
    else:
        model = GPT2(1024).eval()

        def run():
            caches = [[] for _ in range(L)]
            x, out = prompt, []
            for i in range(a.tokens):
                x = model(x, i, caches)[:, -1:].argmax(-1)
                out.append(x)
            return out
    run()  # warm-up: first-touch of the weights and allocator pools
    best = None
    for _ in range(a.repeats):
        t0 = time.perf_counter()
        run()
        dt = time.perf_counter() - t0
        best = dt if best is None else min(best, dt)
    print(f"tokens_per_s={a.tokens / best:.1f} peak_rss_mib={peak_rss_mib():.0f}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="what", required=True)
    t = sub.add_parser("train")
    t.add_argument("tokens")
    t.add_argument("--threads", type=int, default=1)
    t.add_argument("--batch", type=int, default=4)
    t.add_argument("--context", type=int, default=64)
    t.add_argument("--steps", type=int, default=4)
    g = sub.add_parser("generate")
    g.add_argument("--threads", type=int, default=1)
    g.add_argument("--tokens", type=int, default=64)
    g.add_argument("--repeats", type=int, default=2)
    g.add_argument("--transformers", action="store_true")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    describe()
    train(a) if a.what == "train" else generate(a)


if __name__ == "__main__":
    main()
