/* ops/cuda/dropout.c — CUDA launchers for inverted dropout with a counter-hash mask, forward and backward:
 * the host side of ptx/dropout.ptx, behind the kernel types of ops/kernels.h.
 *
 * One thread per element; the mask is recomputed, never stored.
 * Each launcher checks that every size fits the PTX's 32-bit indexing
 * (else the failure is recorded in the device state and the launch is
 * skipped) and passes its arguments in the order of ops/cuda/kernels.def. */
#include "ops/cuda/launch.h"

void eo_cuda_k_dropout(int64_t n, const float *x, float *y, float p, uint64_t seed,
                       const eo_exec *ex)
{
    eo_cuda *cu = eo_cuda_ready(ex);
    if (!cu || !eo_cuda_fits(cu, "dropout", n) || n == 0)
        return;
    uint32_t nn = (uint32_t)n;
    uint64_t px = eo_cuda_dp(x), py = eo_cuda_dp(y);
    LAUNCH(cu, EO_CUK_DROPOUT, eo_cuda_grid_v4(cu, n), 1, 1, BLOCK, 1, &nn, &px, &py, &p, &seed);
}

void eo_cuda_k_dropout_backward(int64_t n, const float *dy, float *dx, float p, uint64_t seed,
                                const eo_exec *ex)
{
    eo_cuda *cu = eo_cuda_ready(ex);
    if (!cu || !eo_cuda_fits(cu, "dropout_backward", n) || n == 0)
        return;
    uint32_t nn = (uint32_t)n;
    uint64_t pdy = eo_cuda_dp(dy), pdx = eo_cuda_dp(dx);
    LAUNCH(cu, EO_CUK_DROPOUT_BWD, eo_cuda_grid_v4(cu, n), 1, 1, BLOCK, 1, &nn, &pdy, &pdx, &p, &seed);
}
