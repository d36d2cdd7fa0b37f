#!/usr/bin/env python3
"""tools/reference/ref_gpt2_generate.py -- greedy generation fixture.

    python3 tools/reference/ref_gpt2_generate.py tests/fixtures

needs torch and transformers (`make fixtures-gpt2` runs it in the same
venv as ref_gpt2_hf.py). Builds a tiny random GPT2LMHeadModel whose
vocabulary is the committed test BPE (tests/fixtures/bpe/: 1,500 ids,
<|endoftext|> included), saves it with save_pretrained
(safe_serialization=True) as OUTDIR/gpt2_gen/model.safetensors plus its
config.json, and writes OUTDIR/gpt2_generate.h: for each prompt, the ids
GPT2Tokenizer gives it, the ids transformers' generate(do_sample=False)
appends and the decoded continuation, as C arrays and byte strings.

The weights get N(0, 0.5^2) noise so logits are far from uniform; each
greedy step's gap between the best and second-best logit is checked to
be well above float32 rounding, and the float64 model must choose the same
tokens, so an exact float32 implementation cannot tie-break differently.
"""
import os
import sys

import torch
from transformers import GPT2Config, GPT2LMHeadModel, GPT2Tokenizer

PROMPTS = [
    "The quick brown fox",
    "Hello, world! It is",
    "na\u00efve caf\u00e9 \u2014 \u65e5\u672c \U0001F642 and",
    "\n\n   ",
]
NEW = 24
MIN_GAP = 1e-3


def c_bytes(b):
    out = []
    for x in b:
        if 0x20 <= x < 0x7f and chr(x) not in '"\\?':
            out.append(chr(x))
        else:
            out.append('\\%03o' % x)
    return '"' + "".join(out) + '"'


def main():
    outdir = sys.argv[1]
    bpe = os.path.join(outdir, "bpe")
    tok = GPT2Tokenizer(os.path.join(bpe, "vocab.json"), os.path.join(bpe, "merges.txt"))
    V = len(tok)
    assert V == 1500, V
    torch.manual_seed(2027)
    cfg = GPT2Config(vocab_size=V, n_positions=64, n_embd=24, n_layer=2, n_head=2,
                     activation_function="gelu_new", layer_norm_epsilon=1e-5,
                     resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0,
                     bos_token_id=V - 1, eos_token_id=V - 1, tie_word_embeddings=True)
    model = GPT2LMHeadModel(cfg).eval()
    with torch.no_grad():
        for p in model.parameters():
            p.add_(0.5 * torch.randn_like(p))
    d = os.path.join(outdir, "gpt2_gen")
    model.save_pretrained(d, safe_serialization=True)
    gc = os.path.join(d, "generation_config.json")
    if os.path.exists(gc):
        os.remove(gc)
    model = GPT2LMHeadModel.from_pretrained(d).eval()
    m64 = GPT2LMHeadModel.from_pretrained(d).eval().double()

    lines = ["/* tests/fixtures/gpt2_generate.h -- written by "
             "tools/reference/ref_gpt2_generate.py (make fixtures-gpt2); do not edit.",
             " * transformers' greedy generate() on tests/fixtures/gpt2_gen/model.safetensors",
             " * with the tokenizer of tests/fixtures/bpe/. */",
             "#define GEN_NEW %d" % NEW, "typedef struct gen_case {",
             "    const char *prompt; int n_prompt; int prompt_ids[64];",
             "    int ids[%d]; const char *text; int text_len;" % NEW, "} gen_case;",
             "static const gen_case gen_cases[] = {"]
    for text in PROMPTS:
        ids = tok.encode(text)
        x = torch.tensor([ids])
        with torch.no_grad():
            out = model.generate(x, max_new_tokens=NEW, do_sample=False, pad_token_id=0,
                                 eos_token_id=None)
            out64 = m64.generate(x, max_new_tokens=NEW, do_sample=False, pad_token_id=0,
                                 eos_token_id=None)
            assert out.tolist() == out64.tolist(), "float32 and float64 greedy differ"
            logits = model(out).logits[0]
        new = out[0, len(ids):].tolist()
        assert len(new) == NEW
        for i in range(len(ids) - 1, out.shape[1] - 1):
            top = torch.topk(logits[i], 2).values
            gap = float(top[0] - top[1])
            assert gap > MIN_GAP, ("near tie", text, i, gap)
        # The tokens' own bytes (decode() would turn a split UTF-8
        # character into U+FFFD; eo-sample writes the bytes as they are).
        raw = b"".join(bytes(tok.byte_decoder[c] for c in tok.convert_ids_to_tokens(t))
                       for t in new)
        lines.append("    { %s, %d, {%s},\n      {%s},\n      %s, %d }," % (
            c_bytes(text.encode("utf-8")), len(ids), ", ".join(map(str, ids)),
            ", ".join(map(str, new)), c_bytes(raw), len(raw)))
        print(repr(text), ids, "->", new, repr(raw))
    lines.append("};")
    with open(os.path.join(outdir, "gpt2_generate.h"), "w") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
