/* ops/cpu/embedding.c — row lookup and its scatter-add backward.
 *
 * Forward copies one table row per index; rows are independent, so the
 * thread hook gets ranges of indices.
 *
 * Backward adds dout rows into dtable rows. Two indices may name the same
 * row (a token that appears twice), so splitting by index would race.
 * Instead the hook gets ranges of columns: each worker walks every index
 * in order but touches only its own columns, so no two workers write the
 * same float and each element sees its additions in index order, whatever
 * the thread count. Columns go in blocks of 16 floats (one cache line) so
 * workers do not share lines. */
#include <string.h>
#include "ops/cpu/grain.h"
#include "ops/kernels.h"

#define COLBLOCK 16

typedef struct emb_args {
    int64_t n, dim;
    const float *src;
    const int32_t *idx;
    float *dst;
} emb_args;

static void emb_body(void *arg, int64_t i0, int64_t i1, int worker)
{
    (void)worker;
    const emb_args *a = arg;
    for (int64_t i = i0; i < i1; i++)
        memcpy(a->dst + i * a->dim, a->src + (int64_t)a->idx[i] * a->dim,
               (size_t)a->dim * sizeof(float));
}

void eo_k_embedding(int64_t n, int64_t dim, const float *table, const int32_t *idx, float *out,
                    const eo_exec *ex)
{
    const eo_par *par = eo_exec_par(ex);
    emb_args a = {n, dim, table, idx, out};
    eo_par_for(eo_par_if(par, n * dim), n, emb_body, &a);
}

static void emb_backward_body(void *arg, int64_t b0, int64_t b1, int worker)
{
    (void)worker;
    const emb_args *a = arg;
    const int64_t c0 = b0 * COLBLOCK, c1 = b1 * COLBLOCK < a->dim ? b1 * COLBLOCK : a->dim;
    for (int64_t i = 0; i < a->n; i++) {
        const float *g = a->src + i * a->dim;
        float *t = a->dst + (int64_t)a->idx[i] * a->dim;
        for (int64_t c = c0; c < c1; c++)
            t[c] += g[c];
    }
}

void eo_k_embedding_backward(int64_t n, int64_t dim, const int32_t *idx, const float *dout,
                             float *dtable, const eo_exec *ex)
{
    const eo_par *par = eo_exec_par(ex);
    emb_args a = {n, dim, dout, idx, dtable};
    eo_par_for(eo_par_if(par, n * dim), (dim + COLBLOCK - 1) / COLBLOCK, emb_backward_body, &a);
}
