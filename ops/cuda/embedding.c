/* ops/cuda/embedding.c — CUDA launchers for embedding lookup and its scatter-add backward:
 * the host side of ptx/embedding.ptx, behind the kernel types of ops/kernels.h.
 *
 * The gather: chunks of 4 columns a thread (grid-stride). The backward:
 * a list walk per distinct id (below).
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

/* dtable[idx[i], :] += dout[i, :] in index order, the CPU's bits, no
 * atomics: the 16-bit backward's list pre-pass (eo_cuda_embedding_links,
 * ops/cuda/embedding16.c) links each position to its id's next one, then
 * eo_embedding_bwd walks each id's list from its first occurrence with the
 * gather's grid (16-byte groups when rows allow). Past about 2^19 indices
 * the lists do not fit and eo_embedding_bwd_cols (a thread per column,
 * every index in order) takes over. The ids were checked before. */
void eo_cuda_k_embedding_backward(int64_t n, int64_t dim, const int32_t *idx, const float *dout,
                                  float *dtable, const eo_exec *ex)
{
    eo_cuda *cu = eo_cuda_ready(ex);
    if (!cu || !eo_cuda_fits(cu, "embedding_backward", n) || !eo_cuda_fits(cu, "embedding_backward", dim) ||
        !eo_cuda_fits(cu, "embedding_backward", n * dim) || n * dim == 0)
        return;
    uint32_t a = (uint32_t)n, b = (uint32_t)dim;
    uint64_t pi = eo_cuda_dp(idx), pd = eo_cuda_dp(dout), pt = eo_cuda_dp(dtable);
    uint64_t link = eo_cuda_embedding_links(cu, n, idx);
    if (!link) {
        LAUNCH(cu, EO_CUK_EMBEDDING_BWD_COLS, eo_cuda_grid(dim), 1, 1, BLOCK, 1, &a, &b, &pi, &pd,
               &pt);
        return;
    }
    int vec = dim % 4 == 0 && pt % 16 == 0 && pd % 16 == 0;
    uint32_t nv = vec ? (uint32_t)(dim / 4) : 0u;
    unsigned gy = n < MAX_GRID ? (unsigned)n : MAX_GRID;
    LAUNCH(cu, EO_CUK_EMBEDDING_BWD, eo_cuda_grid(nv ? (int64_t)nv : dim), gy, 1, BLOCK, 1, &a, &b,
           &nv, &pi, &link, &pd, &pt);
}
