/* ops/cpu/cross_entropy.h — the loss reduction of the cross-entropy
 * forward, shared by the f32 kernel (cross_entropy.c) and its 16-bit twin
 * (cross_entropy16.c), so that both sum the same terms in the same order.
 * Nothing outside ops/cpu/ includes this header. */
#ifndef EO_OPS_CPU_CROSS_ENTROPY_H
#define EO_OPS_CPU_CROSS_ENTROPY_H

#include "ops/kernels.h"

/* From each row's stats (M, L) and its target logit, on the calling
 * thread: loss_r = (M - logits[r, target[r]]) + L in double, stored per
 * row (EO_CE_NONE, 0 for an ignored row) or summed in row order and in
 * double into loss[0] (mean over kept rows, or sum; 0 with none). dt
 * (EO_K_F32, EO_K_BF16, EO_K_F16) is the storage of logits and loss; a
 * 16-bit loss is the f32 loss rounded to nearest even. */
void eo_ce_loss(int dt, int64_t rows, int64_t cols, const void *logits, const int32_t *target,
                int32_t ignore_index, eo_ce_reduction reduction, const float *stats, void *loss);

#endif
