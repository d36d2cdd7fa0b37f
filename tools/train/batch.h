/* tools/train/batch.h — seeded shuffling of a data set into mini-batches.
 *
 * Each epoch visits the examples in a fresh random order. The order of
 * epoch e depends only on (seed, e): the permutation is drawn with PCG32
 * seeded by `seed` on stream `e` (see pcg32.h), by a Fisher–Yates shuffle
 * with unbiased bounded draws. So the same seed always gives the same run,
 * and a run resumed at epoch e sees the same order it would have seen
 * without the interruption.
 *
 * Batches are copied into caller buffers, converted from the data set's
 * bytes to floats on the way (eo_dataset_row_f32): the caller owns the
 * memory its tensors live in, and B x 784 floats are small next to a step. */
#ifndef EO_TOOLS_BATCH_H
#define EO_TOOLS_BATCH_H

#include <stddef.h>
#include <stdint.h>
#include "alloc/status.h"
#include "tools/train/dataset.h"

/* Fills perm[0..n) with a permutation of 0..n-1 drawn from (seed, stream).
 * n may be at most UINT32_MAX. EO_ERR_ARG for NULL perm with n > 0 or n too
 * large. */
eo_status eo_permutation(uint32_t *perm, size_t n, uint64_t seed, uint64_t stream, char *err,
                         size_t errlen);

typedef struct eo_batch_opts {
    size_t batch;     /* examples per batch, >= 1 */
    int shuffle;      /* 0: dataset order every epoch (e.g. for evaluation) */
    int drop_last;    /* 1: drop the final batch if it has fewer than `batch` rows */
    uint64_t seed;
} eo_batch_opts;

typedef struct eo_batcher {
    const eo_dataset *ds; /* borrowed; must outlive the batcher */
    eo_batch_opts opt;
    uint32_t *perm;       /* the current epoch's order, ds->n entries */
    size_t nbatches;      /* batches per epoch */
} eo_batcher;

/* Prepares a batcher over ds and sets up epoch 0.
 * EO_ERR_ARG for NULL pointers, batch 0, an empty data set, or a batch
 * larger than the data set with drop_last set (there would be no batch). */
eo_status eo_batcher_init(eo_batcher *b, const eo_dataset *ds, eo_batch_opts opt, char *err,
                          size_t errlen);

/* Draws the order for epoch `epoch` (0-based); dataset order without
 * shuffle. Call before the epoch's first batch. */
void eo_batcher_epoch(eo_batcher *b, uint64_t epoch);

/* Batch i (0 <= i < b->nbatches) of the current epoch: converts its
 * rows into x (rows x ds->dim floats, eo_dataset_row_f32) and labels into y (rows int32s), where
 * rows = batch, or fewer for a kept final partial batch; *rows says how
 * many. x and y must have room for a full batch. EO_ERR_ARG for i out of
 * range or NULL buffers. */
eo_status eo_batcher_get(const eo_batcher *b, size_t i, float *x, int32_t *y, size_t *rows,
                         char *err, size_t errlen);

void eo_batcher_free(eo_batcher *b);

#endif
