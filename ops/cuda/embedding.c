/* ops/cuda/embedding.c — CUDA launchers for embedding lookup and its scatter-add backward:
 * the host side of ptx/embedding.ptx, behind the kernel types of ops/kernels.h.
 *
 * One thread per output element.
 * Each launcher checks that every size fits the PTX's 32-bit indexing
 * (else the failure is recorded in the device state and the launch is
 * skipped) and passes its arguments in the order of ops/cuda/kernels.def. */
#include "ops/cuda/launch.h"

/* ---- embedding, dropout --------------------------------------------------------------- */
void eo_cuda_k_embedding(int64_t n, int64_t dim, const float *table, const int32_t *idx,
                         float *out, const eo_exec *ex)
{
    eo_cuda *cu = eo_cuda_ready(ex);
    if (!cu || !eo_cuda_fits(cu, "embedding", n) || !eo_cuda_fits(cu, "embedding", dim) ||
        !eo_cuda_fits(cu, "embedding", n * dim) || n * dim == 0)
        return;
    uint32_t a = (uint32_t)n, b = (uint32_t)dim;
    uint64_t pt = eo_cuda_dp(table), pi = eo_cuda_dp(idx), po = eo_cuda_dp(out);
    LAUNCH(cu, EO_CUK_EMBEDDING, eo_cuda_grid_v4(cu, n * dim), 1, 1, BLOCK, 1, &a, &b, &pt, &pi, &po);
}

void eo_cuda_k_embedding_backward(int64_t n, int64_t dim, const int32_t *idx, const float *dout,
                                  float *dtable, const eo_exec *ex)
{
    eo_cuda *cu = eo_cuda_ready(ex);
    if (!cu || !eo_cuda_fits(cu, "embedding_backward", n) || !eo_cuda_fits(cu, "embedding_backward", dim) ||
        !eo_cuda_fits(cu, "embedding_backward", n * dim) || n * dim == 0)
        return;
    uint32_t a = (uint32_t)n, b = (uint32_t)dim;
    uint64_t pi = eo_cuda_dp(idx), pd = eo_cuda_dp(dout), pt = eo_cuda_dp(dtable);
    LAUNCH(cu, EO_CUK_EMBEDDING_BWD, eo_cuda_grid(n * dim), 1, 1, BLOCK, 1, &a, &b, &pi, &pd, &pt);
}
