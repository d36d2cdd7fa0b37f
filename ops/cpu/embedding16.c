/* ops/cpu/embedding16.c — row lookup in a bf16 / f16 table and its
 * scatter-add backward (eo_k_embedding16_fn, eo_k_embedding_backward16_fn
 * in ops/kernels.h).
 *
 * Forward: a copy of 2-byte rows, bit for bit (nothing is computed, so
 * nothing is widened), split by index as in embedding.c.
 *
 * Backward: as embedding.c, the threads get blocks of columns and each
 * walks every index in order over its own columns, so no two threads
 * write one value and each value sees its contributions in index order,
 * whatever the thread count. Each contribution is rounded when added
 * (the contract: a 16-bit index_add, as in PyTorch): the table's piece of
 * a row and dout's are widened, added in f32, and rounded back, one index
 * after the other. A row named by k indices is therefore rounded k times,
 * where an f32 table widened, summed and rounded once (the core's f32
 * fallback) rounds once: the two agree exactly for a row named once. */
#include <string.h>
#include "ops/kernels.h"
#include "ops/cpu/grain.h"
#include "ops/cpu/half.h"

#define COLBLOCK 32 /* 64 bytes of 16-bit values: threads share no line */
#define PIECE 512   /* columns widened at a time */

typedef struct emb16_job {
    int dt;
    int64_t n, dim;
    const uint16_t *src;
    const int32_t *idx;
    uint16_t *dst;
} emb16_job;

static void emb16_forward(void *arg, int64_t i0, int64_t i1, int worker)
{
    const emb16_job *J = arg;
    (void)worker;
    for (int64_t i = i0; i < i1; i++)
        memcpy(J->dst + i * J->dim, J->src + (int64_t)J->idx[i] * J->dim,
               (size_t)J->dim * sizeof(uint16_t));
}

void eo_k_embedding16(int dt, int64_t n, int64_t dim, const void *table, const int32_t *idx,
                      void *out, const eo_exec *ex)
{
    emb16_job J = {dt, n, dim, table, idx, out};
    eo_par_for(eo_par_if(eo_exec_par(ex), n * dim), n, emb16_forward, &J);
}

static void emb16_backward(void *arg, int64_t b0, int64_t b1, int worker)
{
    const emb16_job *J = arg;
    float t[PIECE], g[PIECE];
    (void)worker;
    const int64_t c1 = b1 * COLBLOCK < J->dim ? b1 * COLBLOCK : J->dim;
    for (int64_t c0 = b0 * COLBLOCK; c0 < c1; c0 += PIECE) {
        const int64_t w = c1 - c0 < PIECE ? c1 - c0 : PIECE;
        for (int64_t i = 0; i < J->n; i++) {
            uint16_t *row = J->dst + (int64_t)J->idx[i] * J->dim + c0;
            eo_half_to_f32(J->dt, w, row, t);
            eo_half_to_f32(J->dt, w, J->src + i * J->dim + c0, g);
            for (int64_t c = 0; c < w; c++)
                t[c] += g[c];
            eo_f32_to_half(J->dt, w, t, row);
        }
    }
}

void eo_k_embedding_backward16(int dt, int64_t n, int64_t dim, const int32_t *idx,
                               const void *dout, void *dtable, const eo_exec *ex)
{
    emb16_job J = {dt, n, dim, dout, idx, dtable};
    eo_par_for(eo_par_if(eo_exec_par(ex), n * dim), (dim + COLBLOCK - 1) / COLBLOCK,
               emb16_backward, &J);
}
