/* tools/train/batch.c — permutations and mini-batches (see batch.h). */
#include <stdlib.h>
#include <string.h>
#include "tools/train/batch.h"
#include "tools/cli/errbuf.h"
#include "tools/train/pcg32.h"

static void shuffle(uint32_t *perm, size_t n, uint64_t seed, uint64_t stream)
{
    for (size_t i = 0; i < n; i++)
        perm[i] = (uint32_t)i;
    eo_pcg32 r;
    eo_pcg32_seed(&r, seed, stream);
    /* Fisher–Yates from the top: position i takes a uniform pick among the
     * i+1 elements not yet placed, which makes every permutation equally
     * likely given unbiased draws. */
    for (size_t i = n; i > 1; i--) {
        uint32_t j = eo_pcg32_below(&r, (uint32_t)i);
        uint32_t t = perm[i - 1];
        perm[i - 1] = perm[j];
        perm[j] = t;
    }
}

eo_status eo_permutation(uint32_t *perm, size_t n, uint64_t seed, uint64_t stream, char *err,
                         size_t errlen)
{
    if (n > UINT32_MAX)
        return eo_errf(err, errlen, EO_ERR_ARG,
                       "eo_permutation: n = %zu is more than the limit of %lu", n,
                       (unsigned long)UINT32_MAX);
    if (n > 0 && !perm)
        return eo_errf(err, errlen, EO_ERR_ARG, "eo_permutation: NULL output for n = %zu", n);
    shuffle(perm, n, seed, stream);
    return EO_OK;
}

eo_status eo_batcher_init(eo_batcher *b, const eo_dataset *ds, eo_batch_opts opt, char *err,
                          size_t errlen)
{
    if (!b || !ds)
        return eo_errf(err, errlen, EO_ERR_ARG, "eo_batcher_init: NULL %s", b ? "data set" : "batcher");
    memset(b, 0, sizeof *b);
    if (opt.batch == 0)
        return eo_errf(err, errlen, EO_ERR_ARG, "eo_batcher_init: batch size 0, expected >= 1");
    if (ds->n == 0 || !ds->x || !ds->y)
        return eo_errf(err, errlen, EO_ERR_ARG, "eo_batcher_init: the data set is empty");
    if (ds->n > UINT32_MAX)
        return eo_errf(err, errlen, EO_ERR_ARG,
                       "eo_batcher_init: %zu examples, more than the limit of %lu", ds->n,
                       (unsigned long)UINT32_MAX);
    size_t nb = opt.drop_last ? ds->n / opt.batch : (ds->n + opt.batch - 1) / opt.batch;
    if (nb == 0)
        return eo_errf(err, errlen, EO_ERR_ARG,
                       "eo_batcher_init: batch size %zu with drop_last leaves no batch of the "
                       "%zu examples",
                       opt.batch, ds->n);
    b->perm = malloc(ds->n * sizeof *b->perm);
    if (!b->perm)
        return eo_errf(err, errlen, EO_ERR_OOM, "eo_batcher_init: cannot allocate %zu indices",
                       ds->n);
    b->ds = ds;
    b->opt = opt;
    b->nbatches = nb;
    eo_batcher_epoch(b, 0);
    return EO_OK;
}

void eo_batcher_epoch(eo_batcher *b, uint64_t epoch)
{
    if (!b || !b->perm)
        return;
    if (b->opt.shuffle) {
        shuffle(b->perm, b->ds->n, b->opt.seed, epoch);
    } else {
        for (size_t i = 0; i < b->ds->n; i++)
            b->perm[i] = (uint32_t)i;
    }
}

eo_status eo_batcher_get(const eo_batcher *b, size_t i, float *x, int32_t *y, size_t *rows,
                         char *err, size_t errlen)
{
    if (!b || !b->perm || !x || !y || !rows)
        return eo_errf(err, errlen, EO_ERR_ARG, "eo_batcher_get: NULL %s",
                       !b ? "batcher" : !b->perm ? "permutation (batcher not initialised)"
                       : !x ? "x" : !y ? "y" : "rows");
    if (i >= b->nbatches)
        return eo_errf(err, errlen, EO_ERR_ARG,
                       "eo_batcher_get: batch %zu out of range: expected 0..%zu", i,
                       b->nbatches - 1);
    const eo_dataset *ds = b->ds;
    size_t start = i * b->opt.batch;
    size_t r = ds->n - start < b->opt.batch ? ds->n - start : b->opt.batch;
    for (size_t k = 0; k < r; k++) {
        size_t src = b->perm[start + k];
        eo_dataset_row_f32(ds, src, x + k * ds->dim);
        y[k] = ds->y[src];
    }
    *rows = r;
    return EO_OK;
}

void eo_batcher_free(eo_batcher *b)
{
    if (!b)
        return;
    free(b->perm);
    memset(b, 0, sizeof *b);
}
