/* ops/cuda/matmul.c — CUDA launchers for matmul (batched, either operand transposed):
 * the host side of ptx/matmul.ptx, behind the kernel types of ops/kernels.h.
 *
 * 64x64 output tiles, one 16x16 thread block each; grid.z walks the batch.
 * Each launcher checks that every size fits the PTX's 32-bit indexing
 * (else the failure is recorded in the device state and the launch is
 * skipped) and passes its arguments in the order of ops/cuda/kernels.def. */
#include "ops/cuda/launch.h"

/* ---- matmul ------------------------------------------------------------------------- */
void eo_cuda_k_matmul(int ta, int tb, int64_t batch, int64_t M, int64_t N, int64_t K,
                      const float *A, int64_t lda, int64_t sa, const float *B, int64_t ldb,
                      int64_t sb, float beta, float *C, int64_t ldc, int64_t sc, void *ws,
                      const eo_exec *ex)
{
    (void)ws;
    eo_cuda *cu = eo_cuda_ready(ex);
    if (!cu || batch <= 0 || M <= 0 || N <= 0)
        return;
    /* Every in-matrix offset is an s32 in the PTX. */
    if (!eo_cuda_fits(cu, "matmul", M) || !eo_cuda_fits(cu, "matmul", N) || !eo_cuda_fits(cu, "matmul", K) ||
        !eo_cuda_fits(cu, "matmul", lda) || !eo_cuda_fits(cu, "matmul", ldb) || !eo_cuda_fits(cu, "matmul", ldc) ||
        !eo_cuda_fits(cu, "matmul", (ta ? K : M) * lda) || !eo_cuda_fits(cu, "matmul", (tb ? N : K) * ldb) ||
        !eo_cuda_fits(cu, "matmul", M * ldc))
        return;
    int64_t gy = (M + 63) / 64, gx = (N + 63) / 64;
    if (gy > MAX_GRID) { /* grid.y counts 64-row tiles */
        eo_cuda_fail_text(cu, EO_ERR_UNSUPPORTED, "matmul: M above 65535*64 rows", NULL, NULL);
        return;
    }
    uint32_t m = (uint32_t)M, n = (uint32_t)N, k = (uint32_t)K;
    int32_t am = ta ? 1 : (int32_t)lda, ak = ta ? (int32_t)lda : 1;
    int32_t bk = tb ? 1 : (int32_t)ldb, bn = tb ? (int32_t)ldb : 1, lc = (int32_t)ldc;
    /* grid.z is at most 65535: larger batches go in slices. */
    for (int64_t b0 = 0; b0 < batch; b0 += MAX_GRID) {
        int64_t nb = batch - b0 < MAX_GRID ? batch - b0 : MAX_GRID;
        uint64_t pa = eo_cuda_dp(A) + (uint64_t)(b0 * sa) * 4u;
        uint64_t pb = eo_cuda_dp(B) + (uint64_t)(b0 * sb) * 4u;
        uint64_t pc = eo_cuda_dp(C) + (uint64_t)(b0 * sc) * 4u;
        LAUNCH(cu, EO_CUK_MATMUL, (unsigned)gx, (unsigned)gy, (unsigned)nb, 16, 16, &m, &n, &k,
               &pa, &am, &ak, &sa, &pb, &bk, &bn, &sb, &beta, &pc, &lc, &sc);
    }
}

size_t eo_cuda_k_matmul_ws(int64_t M, int64_t N, int64_t K, int nthreads)
{
    (void)M, (void)N, (void)K, (void)nthreads;
    return 0;
}
