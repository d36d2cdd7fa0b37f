/* tools/dist/accum.h — adding up the gradients of micro-batches in order.
 *
 * A step over a batch cut into k slices, run one after the other in one
 * process, each with freshly zeroed gradients whose sum is then taken in
 * slice order, ((g0 + g1) + g2) + ...: exactly what k MPI ranks compute
 * (tools/dist/dist.h), which is why `eo-train --micro-batches k` is the
 * single-process twin of a k-rank run. (Letting backward add the slices
 * into the same buffers would round differently: a matmul adds each
 * block of its K loop into C in turn, so C + (t0 + t1) would become
 * (C + t0) + t1.) It also trains a batch too large for the step arena.
 * Works on any device: gradients travel through eo_read / eo_write. */
#ifndef EO_TOOLS_ACCUM_H
#define EO_TOOLS_ACCUM_H

#include <stddef.h>
#include "core/nn.h"

typedef struct eo_grad_accum {
    float *sum, *tmp; /* eo_params_numel floats each */
    size_t n;
} eo_grad_accum;

/* After slice k's backward: sum = g (k == 0) or sum + g, element-wise,
 * over the gradients of ps in list order. EO_ERR_OOM, or eo_read's
 * status (message in err). */
eo_status eo_grad_accum_add(eo_grad_accum *a, eo_ctx *ctx, const eo_params *ps, int k,
                            char *err, size_t errlen);
/* Write the sum back into the gradients. */
eo_status eo_grad_accum_store(eo_grad_accum *a, eo_ctx *ctx, const eo_params *ps, char *err,
                              size_t errlen);
void eo_grad_accum_free(eo_grad_accum *a);

#endif
