#!/usr/bin/python3
"""tools/reference/ref_transformer.py -- the PyTorch reference for EveryO's transformer
stack (core/transformer.h): the same GPT and ViT as torch modules with the
same parameter names, and the generator of the parity fixtures.

    /usr/bin/python3 tools/reference/ref_transformer.py gpt INIT.safetensors OUT.safetensors
    /usr/bin/python3 tools/reference/ref_transformer.py vit INIT.safetensors OUT.safetensors

INIT is written by `eo-transformer-fixture` (weights and a fixed batch).
The script loads it, runs forward and backward in float64, and writes OUT:
the same weights and batch plus out.logits, out.loss and grad.<name> for
every parameter (float32). tests/test_transformer_parity.c compares
EveryO against OUT; `make fixtures` runs the whole chain. The model
classes are also used by tools/bench/bench_transformer.py.
"""
import math
import os
import sys

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
try:  # the real package when it is installed, else our small reader/writer
    from safetensors.numpy import load_file as _st_load, save_file as _st_save
    from safetensors import safe_open

    def st_load(path):
        with safe_open(path, framework="np") as f:
            meta = f.metadata() or {}
        return _st_load(path), meta

    def st_save(path, tensors, metadata=None):
        _st_save(tensors, path, metadata=metadata)
except ImportError:
    from safetensors_py import load as st_load, save as st_save

LN_EPS = 1e-5


class SelfAttention(nn.Module):
    """Fused q/k/v projection [3C, C]; outputs [q | k | v], each split into
    heads of D = C / H consecutive features."""

    def __init__(self, C, H, causal):
        super().__init__()
        self.H, self.causal = H, causal
        self.c_attn = nn.Linear(C, 3 * C)
        self.c_proj = nn.Linear(C, C)

    def forward(self, x):
        B, T, C = x.shape
        H, D = self.H, C // self.H
        qkv = self.c_attn(x).view(B, T, 3 * H, D)
        q, k, v = (qkv[:, :, i * H:(i + 1) * H].transpose(1, 2) for i in range(3))
        s = q @ k.transpose(-1, -2) / math.sqrt(D)
        if self.causal:
            mask = torch.ones(T, T, dtype=torch.bool, device=x.device).triu(1)
            s = s.masked_fill(mask, float("-inf"))
        o = torch.softmax(s, dim=-1) @ v
        return self.c_proj(o.transpose(1, 2).reshape(B, T, C))


class MLP(nn.Module):
    def __init__(self, C):
        super().__init__()
        self.c_fc = nn.Linear(C, 4 * C)
        self.c_proj = nn.Linear(4 * C, C)

    def forward(self, x):
        return self.c_proj(F.gelu(self.c_fc(x), approximate="tanh"))


class Block(nn.Module):
    def __init__(self, C, H, causal):
        super().__init__()
        self.ln_1 = nn.LayerNorm(C, eps=LN_EPS)
        self.attn = SelfAttention(C, H, causal)
        self.ln_2 = nn.LayerNorm(C, eps=LN_EPS)
        self.mlp = MLP(C)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


def init_normal_002(model):
    """GPT-2's scheme, as EveryO: weights and tables N(0, 0.02^2), biases 0,
    LayerNorm 1/0."""
    for m in model.modules():
        if isinstance(m, (nn.Linear, nn.Embedding)):
            nn.init.normal_(m.weight, 0.0, 0.02)
            if getattr(m, "bias", None) is not None:
                nn.init.zeros_(m.bias)
        elif isinstance(m, nn.LayerNorm):
            nn.init.ones_(m.weight)
            nn.init.zeros_(m.bias)
    for name, p in model.named_parameters():
        if name == "pos_embed":
            nn.init.normal_(p, 0.0, 0.02)


class GPT(nn.Module):
    """Token + learned position embedding, causal pre-LN blocks, final
    LayerNorm, untied head without bias."""

    def __init__(self, V, T, C, H, L):
        super().__init__()
        self.wte = nn.Embedding(V, C)
        self.wpe = nn.Embedding(T, C)
        self.h = nn.ModuleList(Block(C, H, True) for _ in range(L))
        self.ln_f = nn.LayerNorm(C, eps=LN_EPS)
        self.lm_head = nn.Linear(C, V, bias=False)
        init_normal_002(self)

    def forward(self, idx):
        T = idx.shape[1]
        x = self.wte(idx) + self.wpe.weight[:T]
        for b in self.h:
            x = b(x)
        return self.lm_head(self.ln_f(x))


class ViT(nn.Module):
    """P x P patches -> Linear(P*P, C) + learned positions, non-causal
    blocks, final LayerNorm, mean over tokens, Linear head."""

    def __init__(self, image=28, patch=4, C=64, H=4, L=2, classes=10):
        super().__init__()
        self.image, self.patch = image, patch
        G = image // patch
        self.patch_embed = nn.Linear(patch * patch, C)
        self.pos_embed = nn.Parameter(torch.zeros(G * G, C))
        self.blocks = nn.ModuleList(Block(C, H, False) for _ in range(L))
        self.norm = nn.LayerNorm(C, eps=LN_EPS)
        self.head = nn.Linear(C, classes)
        init_normal_002(self)

    def forward(self, x):
        B, P, G = x.shape[0], self.patch, self.image // self.patch
        t = x.reshape(B, G, P, G, P).permute(0, 1, 3, 2, 4).reshape(B, G * G, P * P)
        t = self.patch_embed(t) + self.pos_embed
        for b in self.blocks:
            t = b(t)
        return self.head(self.norm(t).mean(dim=1))


def make_fixture(kind, src, dst):
    w, meta = st_load(src)
    m = {k: int(v) for k, v in meta.items() if k != "model"}
    if kind == "gpt":
        model = GPT(m["vocab"], m["context"], m["d_model"], m["heads"], m["layers"])
        batch = {k: w[k] for k in ("batch.idx", "batch.targets")}
    else:
        model = ViT(m["image"], m["patch"], m["d_model"], m["heads"], m["layers"], m["classes"])
        batch = {k: w[k] for k in ("batch.x", "batch.y")}
    model = model.double()
    names = [n for n, _ in model.named_parameters()]
    missing = [n for n in names if n not in w]
    extra = [n for n in w if n not in names and not n.startswith("batch.")]
    if missing or extra:
        sys.exit(f"{src}: names differ: missing {missing}, unexpected {extra}")
    state = {n: torch.from_numpy(w[n].astype(np.float64)) for n in names}
    model.load_state_dict(state, strict=True)
    model.zero_grad()
    if kind == "gpt":
        idx = torch.from_numpy(batch["batch.idx"].astype(np.int64))
        tgt = torch.from_numpy(batch["batch.targets"].astype(np.int64))
        logits = model(idx)
        loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), tgt.reshape(-1))
    else:
        x = torch.from_numpy(batch["batch.x"].astype(np.float64))
        y = torch.from_numpy(batch["batch.y"].astype(np.int64))
        logits = model(x)
        loss = F.cross_entropy(logits, y)
    loss.backward()
    out = {n: w[n] for n in names}
    out.update(batch)
    out["out.logits"] = logits.detach().numpy().astype(np.float32)
    out["out.loss"] = np.array(loss.item(), dtype=np.float32)
    for n, p in model.named_parameters():
        out["grad." + n] = p.grad.numpy().astype(np.float32)
    meta = dict(meta)
    meta["reference"] = f"PyTorch {torch.__version__}, float64"
    st_save(dst, out, metadata=meta)
    size = os.path.getsize(dst)
    print(f"wrote {dst}: loss {loss.item():.6f}, {len(out)} tensors, {size} bytes")


if __name__ == "__main__":
    if len(sys.argv) != 4 or sys.argv[1] not in ("gpt", "vit"):
        sys.exit(__doc__)
    make_fixture(sys.argv[1], sys.argv[2], sys.argv[3])
