#!/usr/bin/env python3
"""tools/reference/ref_gpt2_hf.py -- Hugging Face GPT-2 parity fixtures.

    python3 tools/reference/ref_gpt2_hf.py OUTDIR

needs torch and transformers (`make fixtures-gpt2` makes a venv under
build/ for them; no model hub is used: every model is built from a
GPT2Config with random weights). For each shape below it writes

  OUTDIR/gpt2_<name>.safetensors         the model exactly as
      GPT2LMHeadModel.save_pretrained(safe_serialization=True) writes it
      ("transformer." names, Conv1D [in, out] weights, the tied head
      left out, metadata format: pt);
  OUTDIR/gpt2_<name>_expect.safetensors  the batch (batch.idx,
      batch.targets, I32 [B, T]), and what transformers computes from the
      file's float32 weights in float64 (model.double(): exact widening,
      so the reference carries no float32 rounding of its own): out.logits
      [B, T, V] (F64), out.loss (F64 [1]: mean next-token cross-entropy of
      logits against targets, no shift: the batch is given as EveryO's
      eo_gpt_loss takes it) and grad.<name> for every parameter (F32: the
      float64 gradient rounded once),
      named and laid out as EveryO's eo_gpt holds it ([out, in]; the tied
      wte's gradient is the sum of its embedding and head uses). Metadata
      n_head, n_layer, ... and tied say the configuration.

Plus OUTDIR/gpt2_small_hub.safetensors: the "small" model as many files
on the Hub are laid out -- no "transformer." prefix, the causal-mask
buffers h.<i>.attn.bias [1, 1, P, P] and h.<i>.attn.masked_bias [] that
older transformers saved, and lm_head.weight stored equal to wte.

The weights are GPT-2's initialisation plus N(0, 0.1^2) noise on every
tensor, so biases, LayerNorm gains and shifts are not 0 or 1 and a
loader that drops or swaps one of them shows in the logits.
tests/test_gpt2_hf.c reads these; CI needs no Python.
"""
import json
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F
from safetensors.numpy import save_file
from safetensors.torch import load_file
from transformers import GPT2Config, GPT2LMHeadModel

# name, vocab, positions, d_model, heads, layers, tied, B, T
SHAPES = [
    ("small", 37, 13, 12, 3, 2, True, 2, 9),   # odd vocab, odd heads, P not 2^k
    ("wide", 64, 16, 16, 2, 1, True, 2, 16),   # T = P: the whole context
    ("deep", 29, 7, 15, 5, 3, False, 1, 7),    # untied head, 5 heads of 3
]
CONV1D = (".attn.c_attn.weight", ".attn.c_proj.weight", ".mlp.c_fc.weight",
          ".mlp.c_proj.weight")


def eo_name(hf):
    return hf[len("transformer."):] if hf.startswith("transformer.") else hf


def make(outdir, spec, seed):
    name, V, P, C, H, L, tied, B, T = spec
    torch.manual_seed(seed)
    cfg = GPT2Config(vocab_size=V, n_positions=P, n_embd=C, n_layer=L, n_head=H,
                     activation_function="gelu_new", layer_norm_epsilon=1e-5,
                     resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0,
                     tie_word_embeddings=tied)
    model = GPT2LMHeadModel(cfg).eval()
    with torch.no_grad():
        for p in model.parameters():
            p.add_(0.1 * torch.randn_like(p))
    tmp = os.path.join(outdir, "_tmp_" + name)
    model.save_pretrained(tmp, safe_serialization=True)
    weights = os.path.join(outdir, "gpt2_%s.safetensors" % name)
    os.replace(os.path.join(tmp, "model.safetensors"), weights)
    for f in os.listdir(tmp):
        os.remove(os.path.join(tmp, f))
    os.rmdir(tmp)

    # The reference runs from the file's weights, widened to float64.
    ref = GPT2LMHeadModel(cfg).eval()
    missing, unexpected = ref.load_state_dict(load_file(weights), strict=False)
    assert not unexpected and all(k == "lm_head.weight" for k in missing), (missing, unexpected)
    if tied:
        ref.tie_weights()
    ref = ref.double()
    g = torch.Generator().manual_seed(seed + 100)
    idx = torch.randint(0, V, (B, T), generator=g)
    tgt = torch.randint(0, V, (B, T), generator=g)
    logits = ref(idx).logits
    loss = F.cross_entropy(logits.reshape(-1, V), tgt.reshape(-1))
    loss.backward()
    out = {"batch.idx": idx.int().numpy(), "batch.targets": tgt.int().numpy(),
           "out.logits": logits.detach().numpy(),
           "out.loss": loss.detach().reshape(1).numpy()}
    for hf, p in ref.named_parameters():  # a tied wte appears once
        gr = p.grad.detach()
        if hf.endswith(CONV1D):
            gr = gr.t()
        # float32 (one rounding of the float64 result, relative error
        # <= 2^-24, far under the 1e-5 tolerance) keeps the files small
        out["grad." + eo_name(hf)] = np.ascontiguousarray(gr.numpy().astype(np.float32))
    meta = {"vocab_size": str(V), "n_positions": str(P), "n_embd": str(C), "n_head": str(H),
            "n_layer": str(L), "tied": "1" if tied else "0", "format": "pt"}
    save_file(out, os.path.join(outdir, "gpt2_%s_expect.safetensors" % name), metadata=meta)
    return model, weights


def hub_style(outdir, model, P):
    """The small model with the Hub's older naming and buffers."""
    sd = {k: v.detach().numpy().copy() for k, v in model.state_dict().items()}
    out = {}
    for k, v in sd.items():
        out[eo_name(k)] = v
    layers = model.config.n_layer
    for i in range(layers):
        out["h.%d.attn.bias" % i] = np.tril(np.ones((P, P), np.float32)).reshape(1, 1, P, P)
        out["h.%d.attn.masked_bias" % i] = np.array(-1e4, np.float32)
    out["lm_head.weight"] = out["wte.weight"].copy()
    save_file(out, os.path.join(outdir, "gpt2_small_hub.safetensors"), metadata={"format": "pt"})


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    outdir = sys.argv[1]
    os.makedirs(outdir, exist_ok=True)
    for i, spec in enumerate(SHAPES):
        model, path = make(outdir, spec, 1000 + i)
        if spec[0] == "small":
            hub_style(outdir, model, spec[2])
        print("wrote", path, os.path.getsize(path), "bytes")


if __name__ == "__main__":
    main()
