/* ops/cuda/cross_entropy.c — CUDA launchers for fused cross-entropy over class indices, forward and backward:
 * the host side of ptx/cross_entropy.ptx, behind the kernel types of ops/kernels.h.
 *
 * Forward: one launch, a block per row (a warp per row when a row has at
 * most 1024 columns: then a block's 256 threads would hold 4 values each
 * and spend more on the block reductions than on the row) for the row
 * statistics (max and log-sum of exps); the block that finishes last takes
 * the loss (mean, sum, or one per row), counted in the scratch's
 * SCRATCH_CE_DONE word. Backward: a block per row for the gradient.
 * Each launcher checks that every size fits the PTX's 32-bit indexing
 * (else the failure is recorded in the device state and the launch is
 * skipped) and passes its arguments in the order of ops/cuda/kernels.def. */
#include "ops/cuda/launch.h"

void eo_cuda_k_cross_entropy(int64_t rows, int64_t cols, const float *logits,
                             const int32_t *target, int32_t ignore_index,
                             eo_ce_reduction reduction, float *stats, float *loss,
                             const eo_exec *ex)
{
    eo_cuda *cu = eo_cuda_ready(ex);
    if (!cu || !eo_cuda_fits(cu, "cross_entropy", rows) || !eo_cuda_fits(cu, "cross_entropy", cols))
        return;
    if (cols == 0) {
        /* No classes: every target is ignore_index (the ids are checked),
         * so the loss is that of no kept rows -- 0, or a 0 per row -- as
         * on the CPU. The kernel would not visit a row. */
        eo_cuda_k_fill(reduction == EO_CE_NONE ? rows : 1, loss, 0.0f, ex);
        return;
    }
    uint32_t r = (uint32_t)rows, c = (uint32_t)cols, red = (uint32_t)reduction;
    uint64_t px = eo_cuda_dp(logits), pt = eo_cuda_dp(target), pst = eo_cuda_dp(stats), ploss = eo_cuda_dp(loss);
    uint64_t pdone = cu->scratch + SCRATCH_CE_DONE;
    /* Each row's loss: into loss itself (none) or the work buffer (mean,
     * sum), where the last block sums them (the checked copy of the
     * targets, which this kernel reads, has its own scratch region:
     * ops/cuda/launch.h). Past 2^20 rows the buffer is too small and the
     * last block gathers the losses from the stats instead. */
    uint64_t prl = reduction == EO_CE_NONE ? ploss
                   : rows <= (int64_t)WORK_BYTES / 4 ? cu->scratch + SCRATCH_WORK
                                                    : 0;
    uint32_t rpb = cols <= 1024 ? 8 : 1; /* rows per block: a warp or a block per row */
    uint32_t grid = (r + rpb - 1) / rpb;
    /* Always launched: with no rows one block writes loss = 0 (mean, sum). */
    LAUNCH(cu, EO_CUK_CE_FWD, grid ? grid : 1, 1, 1, BLOCK, 1, &r, &c, &rpb, &px, &pt,
           &ignore_index, &red, &pst, &ploss, &prl, &pdone);
}

void eo_cuda_k_cross_entropy_backward(int64_t rows, int64_t cols, const float *logits,
                                      const int32_t *target, int32_t ignore_index,
                                      eo_ce_reduction reduction, const float *stats,
                                      const float *dloss, float *dlogits, const eo_exec *ex)
{
    eo_cuda *cu = eo_cuda_ready(ex);
    if (!cu || !eo_cuda_fits(cu, "cross_entropy_backward", rows * cols) || rows == 0 || cols == 0)
        return;
    uint32_t r = (uint32_t)rows, c = (uint32_t)cols, red = (uint32_t)reduction;
    uint32_t per_row = reduction == EO_CE_NONE;
    uint64_t px = eo_cuda_dp(logits), pt = eo_cuda_dp(target), pst = eo_cuda_dp(stats), pdl = eo_cuda_dp(dloss), pdx = eo_cuda_dp(dlogits);
    /* mean, sum: scale = dloss / count or dloss, computed on the device;
     * none: each row's own dloss[r] */
    uint64_t ps = per_row ? pdl : cu->scratch + SCRATCH_CE;
    if (!per_row)
        LAUNCH(cu, EO_CUK_CE_SCALE, 1, 1, 1, BLOCK, 1, &r, &pt, &ignore_index, &red, &pdl, &ps);
    LAUNCH(cu, EO_CUK_CE_BWD, r, 1, 1, BLOCK, 1, &r, &c, &px, &pt,
           &ignore_index, &pst, &ps, &per_row, &pdx);
}
