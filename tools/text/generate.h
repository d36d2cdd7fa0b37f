/* tools/text/generate.h — autoregressive generation with a GPT and its
 * key/value cache: the loop of eo-sample, callable from tests. Experimental.
 *
 * Each new token is drawn from the last position's logits the way
 * transformers' generate() does with its logits warpers, in this order:
 * temperature (logits / T), top-k (keep the k largest), top-p (nucleus:
 * sort the survivors by probability, keep the smallest prefix whose
 * cumulative probability is >= p, at least one token; Holtzman et al.,
 * "The Curious Case of Neural Text Degeneration", 2019), then one draw
 * from the renormalised softmax. Temperature 0 is greedy: the first
 * largest logit, as torch.argmax (generate(do_sample=False)).
 *
 * Positions are absolute (learned), so when the cache is full it is
 * refilled from the last context/2 tokens (transformers refuses to go past
 * n_positions instead; up to the context both agree token for token). */
#ifndef EO_TOOLS_GENERATE_H
#define EO_TOOLS_GENERATE_H

#include <stddef.h>
#include <stdint.h>
#include "core/transformer.h"
#include "tools/train/pcg32.h"

typedef struct eo_gen_opts {
    float temperature; /* 0: greedy; else > 0 */
    int top_k;         /* 0: all */
    float top_p;       /* (0, 1]; 1: all */
    int64_t usable;    /* ids >= usable are never drawn (a vocabulary
                          padded past the tokenizer's); 0: all */
} eo_gen_opts;

/* A candidate token: its unnormalised probability and id. */
typedef struct eo_gen_cand {
    double p;
    int64_t id;
} eo_gen_cand;

/* One token from logits[0 .. V) under o (above), drawing one number from
 * rng unless greedy. work: V candidates of scratch (may be NULL only for
 * temperature 0). */
int eo_gen_pick(const float *logits, int64_t V, const eo_gen_opts *o, eo_pcg32 *rng,
                eo_gen_cand *work);

/* Called with each new token; returns 0 to go on, non-zero to stop. */
typedef int (*eo_gen_emit)(void *arg, int32_t token);

/* Runs m (built, weights loaded, on `dev`) over toks[0 .. n) (n >= 1) and
 * appends up to n_new tokens to toks (which holds n + n_new), calling
 * emit (may be NULL) with each. cache: made by eo_gpt_cache_init for m,
 * batch 1. rng seeded by the caller. *n_out (may be NULL): tokens in toks
 * at the end. Statuses of the forward (message in eo_last_error(ctx));
 * EO_ERR_ARG for NULL or empty inputs, EO_ERR_OOM for scratch. */
eo_status eo_gen_run(eo_ctx *ctx, const eo_gpt *m, eo_device dev, eo_gpt_cache *cache,
                     int32_t *toks, size_t n, int n_new, const eo_gen_opts *o, eo_pcg32 *rng,
                     eo_gen_emit emit, void *arg, size_t *n_out);

#endif
