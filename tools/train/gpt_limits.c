/* tools/train/gpt_limits.c — see gpt_limits.h. */
#include <stdint.h>
#include <stdio.h>
#include "tools/train/gpt_limits.h"

/* a * b, or 0 with *ok cleared when it does not fit 64 bits. */
static uint64_t mul(uint64_t a, uint64_t b, int *ok)
{
    uint64_t r;
    if (__builtin_mul_overflow(a, b, &r)) {
        *ok = 0;
        return 0;
    }
    return r;
}

static uint64_t add(uint64_t a, uint64_t b, int *ok)
{
    uint64_t r;
    if (__builtin_add_overflow(a, b, &r)) {
        *ok = 0;
        return 0;
    }
    return r;
}

static int range(const char *name, int64_t v, int64_t hi, char *err, size_t errlen)
{
    if (v >= 1 && v <= hi)
        return 1;
    snprintf(err, errlen, "%s is %lld; it must be from 1 to %lld", name, (long long)v,
             (long long)hi);
    return 0;
}

int eo_gpt_sizes_check(const eo_gpt_sizes *s, size_t persist_bytes, size_t step_bytes,
                       int opt_style, char *err, size_t errlen)
{
    return eo_gpt_sizes_check_vocab(s, EO_GPT_MAX_VOCAB, persist_bytes, step_bytes, opt_style,
                                    err, errlen);
}

int eo_gpt_sizes_check_vocab(const eo_gpt_sizes *s, int64_t max_vocab, size_t persist_bytes,
                             size_t step_bytes, int opt_style, char *err, size_t errlen)
{
    const char *nc = opt_style ? "--context" : "context", *nd = opt_style ? "--d-model" : "d_model",
               *nh = opt_style ? "--heads" : "heads", *nl = opt_style ? "--layers" : "layers",
               *nb = opt_style ? "--batch" : "batch";
    if (!range(nc, s->context, EO_GPT_MAX_CONTEXT, err, errlen) ||
        !range(nd, s->d_model, EO_GPT_MAX_D_MODEL, err, errlen) ||
        !range(nh, s->heads, s->d_model, err, errlen) ||
        !range(nl, s->layers, EO_GPT_MAX_LAYERS, err, errlen) ||
        !range("the vocabulary", s->vocab, max_vocab, err, errlen) ||
        !range(nb, s->batch, EO_GPT_MAX_BATCH, err, errlen))
        return 0;
    if (s->d_model % s->heads) {
        snprintf(err, errlen, "%s %lld is not divisible by %s %lld", nd, (long long)s->d_model,
                 nh, (long long)s->heads);
        return 0;
    }
    /* Parameters: per block 12 d^2 (attention 4 d^2, MLP 8 d^2) plus the
     * biases and norms (13 d); the token and position embeddings; the
     * output head not counted, since it may be wte itself (tied, GPT-2).
     * Counted low, so nothing that fits is refused. */
    int ok = 1;
    uint64_t d = (uint64_t)s->d_model;
    uint64_t block = add(mul(12, mul(d, d, &ok), &ok), 13 * d, &ok);
    uint64_t params = add(mul((uint64_t)s->layers, block, &ok),
                          mul(d, add((uint64_t)s->vocab, (uint64_t)s->context, &ok), &ok), &ok);
    /* Each parameter is 4 bytes, with its gradient 8, with AdamW's m and v
     * 16; generation (training 0) runs in inference mode: the weights
     * alone. */
    uint64_t pbytes = mul(params, s->training ? 16 : 4, &ok);
    /* Activations: at least one [batch, context, d] tensor per block is
     * alive at the end of a forward. */
    uint64_t abytes = mul(mul(mul((uint64_t)s->batch, (uint64_t)s->context, &ok), d, &ok),
                          mul((uint64_t)s->layers, 4, &ok), &ok);
    if (!ok) {
        snprintf(err, errlen, "%s %lld, %s %lld, %s %lld: the model's size does not fit 64 bits",
                 nd, (long long)s->d_model, nl, (long long)s->layers, nc, (long long)s->context);
        return 0;
    }
    if (pbytes > persist_bytes) {
        snprintf(err, errlen, "%s %lld and %s %lld make %llu parameters, needing at least %.1f MiB "
                 "(%s); the persistent arena has %.1f MiB",
                 nd, (long long)s->d_model, nl, (long long)s->layers, (unsigned long long)params,
                 (double)pbytes / 1048576.0,
                 s->training ? "weights, gradients, AdamW state" : "weights",
                 (double)persist_bytes / 1048576.0);
        return 0;
    }
    if (abytes > step_bytes) {
        snprintf(err, errlen, "%s %lld x %s %lld x %s %lld x %s %lld needs at least %.1f MiB of "
                 "activations; the step arena has %.1f MiB",
                 nb, (long long)s->batch, nc, (long long)s->context, nd, (long long)s->d_model,
                 nl, (long long)s->layers, (double)abytes / 1048576.0,
                 (double)step_bytes / 1048576.0);
        return 0;
    }
    return 1;
}

void eo_gpt_arena_guess(const eo_gpt_sizes *s, size_t *persist, size_t *step)
{
    int ok = 1;
    uint64_t d = (uint64_t)s->d_model, T = (uint64_t)s->context, L = (uint64_t)s->layers;
    uint64_t B = (uint64_t)s->batch, H = (uint64_t)s->heads, V = (uint64_t)s->vocab;
    /* Parameters counted high this time: 13 d^2 + 16 d per block. */
    uint64_t params = add(mul(L, add(mul(13, mul(d, d, &ok), &ok), 16 * d, &ok), &ok),
                          mul(d, add(2 * V, T, &ok), &ok), &ok);
    /* Weights, gradients, AdamW's m and v, 16-bit copies: 4 + 4 + 8 + 4 bytes
     * training; weights, gradients and a key/value cache for generation. */
    uint64_t p = mul(params, s->training ? 20 : 8, &ok);
    if (!s->training)
        p = add(p, mul(mul(mul(2, L, &ok), mul(B, T, &ok), &ok), mul(d, 4, &ok), &ok), &ok);
    /* Per position and block: about 24 d-wide rows of activations (the
     * MLP's 4d ones included) and H rows of T attention scores, twice
     * over for their gradients and the tape's saved inputs; the logits
     * and their softmax and gradient, V wide. */
    uint64_t row = add(mul(24, d, &ok), mul(2, mul(H, T, &ok), &ok), &ok);
    uint64_t act = mul(mul(mul(B, T, &ok), mul(L, row, &ok), &ok), 4 * 2, &ok);
    act = add(act, mul(mul(B, T, &ok), mul(V, 16, &ok), &ok), &ok);
    const uint64_t cap = SIZE_MAX / 4;
    p = add(p, (uint64_t)16 << 20, &ok);
    act = add(act, (uint64_t)32 << 20, &ok);
    *persist = !ok || p > cap ? (size_t)cap : (size_t)p;
    *step = !ok || act > cap ? (size_t)cap : (size_t)act;
}
