/* ops/cuda/softmax.c — CUDA launchers for softmax and log_softmax over the last axis, forward and backward:
 * the host side of ptx/softmax.ptx, behind the kernel types of ops/kernels.h.
 *
 * One 256-thread block per row.
 * Each launcher checks that every size fits the PTX's 32-bit indexing
 * (else the failure is recorded in the device state and the launch is
 * skipped) and passes its arguments in the order of ops/cuda/kernels.def. */
#include "ops/cuda/launch.h"

/* ---- row kernels: one 256-thread block per row ---------------------------------------- */
void eo_cuda_k_softmax(int log, int64_t rows, int64_t cols, const float *x, float *y, void *ws,
                       const eo_exec *ex)
{
    (void)ws; /* one block per row keeps its exps in registers */
    eo_cuda *cu = eo_cuda_ready(ex);
    if (!cu || !eo_cuda_fits(cu, "softmax", rows) || !eo_cuda_fits(cu, "softmax", cols) || rows == 0 ||
        cols == 0)
        return;
    uint32_t l = log != 0, r = (uint32_t)rows, c = (uint32_t)cols;
    uint64_t px = eo_cuda_dp(x), py = eo_cuda_dp(y);
    LAUNCH(cu, EO_CUK_SOFTMAX, r, 1, 1, BLOCK, 1, &l, &r, &c, &px, &py);
}

void eo_cuda_k_softmax_backward(int log, int64_t rows, int64_t cols, const float *y,
                                const float *dy, float *dx, const eo_exec *ex)
{
    eo_cuda *cu = eo_cuda_ready(ex);
    if (!cu || !eo_cuda_fits(cu, "softmax_backward", rows) || !eo_cuda_fits(cu, "softmax_backward", cols) ||
        rows == 0 || cols == 0)
        return;
    uint32_t l = log != 0, r = (uint32_t)rows, c = (uint32_t)cols;
    uint64_t py = eo_cuda_dp(y), pdy = eo_cuda_dp(dy), pdx = eo_cuda_dp(dx);
    LAUNCH(cu, EO_CUK_SOFTMAX_BWD, r, 1, 1, BLOCK, 1, &l, &r, &c, &py, &pdy, &pdx);
}
