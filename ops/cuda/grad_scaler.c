/* ops/cuda/grad_scaler.c — CUDA launcher for the inf/NaN check and
 * unscale of dynamic loss scaling: the host side of ptx/grad_scaler.ptx,
 * behind eo_k_unscale_check_fn (ops/kernels.h).
 *
 * One thread per gradient element, grid-stride; the flag is one float in
 * device memory that any thread finding an inf or NaN sets to 1.0f, so
 * no reduction is needed (all writers store the same value). */
#include "ops/cuda/launch.h"

void eo_cuda_k_unscale_check(int64_t n, float *g, float inv_scale, float *found,
                             const eo_exec *ex)
{
    eo_cuda *cu = eo_cuda_ready(ex);
    if (!cu || !eo_cuda_fits(cu, "unscale_check", n) || n == 0)
        return;
    uint32_t nn = (uint32_t)n;
    uint64_t pg = eo_cuda_dp(g), pf = eo_cuda_dp(found);
    LAUNCH(cu, EO_CUK_UNSCALE_CHECK, eo_cuda_grid(n), 1, 1, BLOCK, 1, &nn, &pg, &inv_scale, &pf);
}
