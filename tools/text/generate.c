/* tools/text/generate.c — see generate.h. */
#include "tools/text/generate.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int by_prob_desc(const void *a, const void *b)
{
    const eo_gen_cand *x = a, *y = b;
    if (x->p != y->p)
        return x->p > y->p ? -1 : 1;
    return x->id < y->id ? -1 : x->id > y->id; /* ties: the lower id first */
}

int eo_gen_pick(const float *logits, int64_t V, const eo_gen_opts *o, eo_pcg32 *rng,
                eo_gen_cand *w)
{
    int64_t n = o->usable > 0 && o->usable < V ? o->usable : V;
    int64_t best = 0;
    for (int64_t i = 1; i < n; i++)
        if (logits[i] > logits[best]) /* first maximum: torch.argmax's choice */
            best = i;
    if (o->temperature <= 0 || !w)
        return (int)best;
    double T = o->temperature;
    for (int64_t i = 0; i < n; i++) {
        w[i].p = exp(((double)logits[i] - logits[best]) / T);
        w[i].id = i;
    }
    qsort(w, (size_t)n, sizeof *w, by_prob_desc);
    int64_t keep = n;
    if (o->top_k > 0 && o->top_k < keep)
        keep = o->top_k;
    double z = 0;
    for (int64_t j = 0; j < keep; j++)
        z += w[j].p;
    if (o->top_p > 0 && o->top_p < 1) {
        /* The smallest prefix whose cumulative probability reaches p. */
        double acc = 0;
        int64_t j = 0;
        while (j < keep) {
            acc += w[j++].p / z;
            if (acc >= o->top_p)
                break;
        }
        keep = j > 0 ? j : 1;
        z = 0;
        for (j = 0; j < keep; j++)
            z += w[j].p;
    }
    double u = (double)eo_pcg32_next(rng) / 4294967296.0 * z, acc = 0;
    for (int64_t j = 0; j < keep; j++) {
        acc += w[j].p;
        if (u < acc)
            return (int)w[j].id;
    }
    return (int)w[keep - 1].id;
}

eo_status eo_gen_run(eo_ctx *ctx, const eo_gpt *m, eo_device dev, eo_gpt_cache *cache,
                     int32_t *toks, size_t n, int n_new, const eo_gen_opts *o, eo_pcg32 *rng,
                     eo_gen_emit emit, void *arg, size_t *n_out)
{
    if (!ctx || !m || !cache || !toks || !o || !rng || n == 0 || n_new < 0)
        return EO_ERR_ARG;
    int64_t V = m->cfg.vocab, Tmax = m->cfg.context;
    float *last = malloc((size_t)V * sizeof *last);
    eo_gen_cand *w = o->temperature > 0 ? malloc((size_t)V * sizeof *w) : NULL;
    eo_status st = EO_OK;
    if (!last || (o->temperature > 0 && !w)) {
        st = EO_ERR_OOM;
        goto out;
    }
    /* feed: the tokens to run next, toks[n - feed .. n) */
    size_t feed = n < (size_t)Tmax ? n : (size_t)Tmax;
    eo_gpt_cache_reset(cache);
    for (int g = 0; g < n_new; g++) {
        if (cache->len + (int64_t)feed > Tmax) { /* full: refill from the recent half */
            eo_gpt_cache_reset(cache);
            feed = (size_t)(Tmax / 2 > 0 ? Tmax / 2 : 1);
        }
        eo_mark mk = eo_mark_get(ctx);
        eo_tensor *x, *lg, *row;
        int64_t sh[2] = { 1, (int64_t)feed };
        st = eo_tensor_wrap(ctx, EO_I32, 2, sh, toks + n - feed, &x);
        if (st == EO_OK && dev != EO_CPU) st = eo_to_device(ctx, x, dev, EO_STEP, &x);
        if (st == EO_OK) st = eo_gpt_forward_cached(ctx, m, cache, x, &lg);
        if (st == EO_OK) st = eo_slice(ctx, lg, 1, (int64_t)feed - 1, 1, &row);
        if (st == EO_OK) st = eo_contiguous(ctx, row, &row);
        /* Under autocast the logits are 16-bit: widen them exactly. */
        if (st == EO_OK && row->dtype != EO_F32) st = eo_cast(ctx, row, EO_F32, &row);
        if (st == EO_OK) st = eo_read(ctx, row, last, (size_t)V * sizeof *last);
        eo_rewind(ctx, mk);
        if (st != EO_OK)
            goto out;
        int32_t t = eo_gen_pick(last, V, o, rng, w);
        toks[n++] = t;
        feed = 1;
        if (emit && emit(arg, t))
            break;
    }
out:
    if (n_out)
        *n_out = n;
    free(w);
    free(last);
    return st;
}
