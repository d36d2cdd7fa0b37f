/* ops/dropout.c — inverted dropout with a mask that is recomputed, not
 * stored.
 *
 * Whether element i is kept is a pure function of (seed, i)
 * (eo_dropout_keep in kernels.h, a counter-based hash), so the backward
 * asks the same question again instead of reading a saved mask: no
 * memory for the mask, and the same mask whatever the thread count or
 * chunking. The hook gets fixed blocks of elements. */
#include "ops/grain.h"
#include "ops/kernels.h"

#define BLOCK 4096

typedef struct dropout_args {
    int64_t n;
    const float *src;
    float *dst;
    float p;
    uint64_t seed;
} dropout_args;

/* Kept values are divided by 1 - p (as the contract says, not multiplied
 * by a rounded reciprocal), so the expected value of y is x. */
static void dropout_body(void *arg, int64_t b0, int64_t b1, int worker)
{
    (void)worker;
    const dropout_args *a = arg;
    const float q = 1.0f - a->p;
    const int64_t i1 = b1 * BLOCK < a->n ? b1 * BLOCK : a->n;
    for (int64_t i = b0 * BLOCK; i < i1; i++)
        a->dst[i] = eo_dropout_keep(a->seed, i, a->p) ? a->src[i] / q : 0.0f;
}

static void dropout_backward_body(void *arg, int64_t b0, int64_t b1, int worker)
{
    (void)worker;
    const dropout_args *a = arg;
    const float q = 1.0f - a->p;
    const int64_t i1 = b1 * BLOCK < a->n ? b1 * BLOCK : a->n;
    for (int64_t i = b0 * BLOCK; i < i1; i++)
        if (eo_dropout_keep(a->seed, i, a->p))
            a->dst[i] += a->src[i] / q;
}

void eo_k_dropout(int64_t n, const float *x, float *y, float p, uint64_t seed, const eo_par *par)
{
    dropout_args a = {n, x, y, p, seed};
    eo_par_for(eo_par_if(par, n), (n + BLOCK - 1) / BLOCK, dropout_body, &a);
}

void eo_k_dropout_backward(int64_t n, const float *dy, float *dx, float p, uint64_t seed,
                           const eo_par *par)
{
    dropout_args a = {n, dy, dx, p, seed};
    eo_par_for(eo_par_if(par, n), (n + BLOCK - 1) / BLOCK, dropout_backward_body, &a);
}
