/* ops/cuda/matmul_tc.c — CUDA launcher for the tensor-core matmul: the host
 * side of ptx/matmul_tc.ptx, behind eo_k_matmul16_fn (ops/kernels.h).
 *
 * 128x128 output tiles, one 128-thread block each (4 warps of 64x64);
 * grid.z walks the batch. The launcher decides what the kernel may
 * assume and tells it in `flags` (the PTX header has the list): which
 * operands lie k-contiguous, which may be copied with 16-byte cp.async
 * (aligned base, leading dimension a multiple of 8 elements, and for
 * batched operands a batch stride that keeps the alignment), and whether
 * C pairs may be stored at once. Everything else is handled inside the
 * kernel, so every shape runs. Sizes that do not fit the PTX's 32-bit
 * indexing record EO_ERR_UNSUPPORTED, as do dtypes it has no kernel for. */
#include "ops/cuda/launch.h"

/* eo_dtype's values (core/everyo.h); tests/test_cuda_tc.c checks them. */
enum { DT_F32 = 0, DT_BF16 = 2, DT_F16 = 3 };
enum { F_TA = 1, F_TB = 2, F_AVEC = 4, F_BVEC = 8, F_C16 = 16, F_CVEC = 32 };

/* 16-byte copies need the base and every row start aligned to 16 bytes:
 * base % 16 == 0, ld % 8 == 0, and (for a batch) stride % 8 == 0. */
static int vec_ok(const void *p, int64_t ld, int64_t stride, int64_t batch)
{
    return eo_cuda_dp(p) % 16 == 0 && ld % 8 == 0 && (batch == 1 || stride % 8 == 0);
}

void eo_cuda_k_matmul16(int ta, int tb, int64_t batch, int64_t M, int64_t N, int64_t K, int in,
                        const void *A, int64_t lda, int64_t sa, const void *B, int64_t ldb,
                        int64_t sb, float beta, int out, void *C, int64_t ldc, int64_t sc,
                        void *ws, const eo_exec *ex)
{
    (void)ws;
    eo_cuda *cu = eo_cuda_ready(ex);
    if (!cu || batch <= 0 || M <= 0 || N <= 0)
        return;
    if ((in != DT_BF16 && in != DT_F16) || (out != DT_F32 && out != in)) {
        eo_cuda_fail_text(cu, EO_ERR_UNSUPPORTED, "matmul16: inputs must be bf16 or f16 and C f32 "
                          "or the inputs' type", NULL, NULL);
        return;
    }
    unsigned esz = out == DT_F32 ? 4u : 2u;
    if (eo_cuda_dp(A) % 2 || eo_cuda_dp(B) % 2 || eo_cuda_dp(C) % esz) {
        eo_cuda_fail_text(cu, EO_ERR_UNSUPPORTED, "matmul16: misaligned pointer", NULL, NULL);
        return;
    }
    /* Every in-matrix element offset is an s32 in the PTX. */
    if (!eo_cuda_fits(cu, "matmul16", M) || !eo_cuda_fits(cu, "matmul16", N) ||
        !eo_cuda_fits(cu, "matmul16", K) || !eo_cuda_fits(cu, "matmul16", lda) ||
        !eo_cuda_fits(cu, "matmul16", ldb) || !eo_cuda_fits(cu, "matmul16", ldc) ||
        !eo_cuda_fits(cu, "matmul16", ((ta ? K : M) + 128) * lda) ||
        !eo_cuda_fits(cu, "matmul16", ((tb ? N : K) + 128) * ldb) ||
        !eo_cuda_fits(cu, "matmul16", M * ldc))
        return;
    int64_t gy = (M + 127) / 128, gx = (N + 127) / 128;
    if (gy > MAX_GRID) {
        eo_cuda_fail_text(cu, EO_ERR_UNSUPPORTED, "matmul16: M above 65535*128 rows", NULL, NULL);
        return;
    }
    uint32_t flags = (ta ? F_TA : 0) | (tb ? F_TB : 0) | (vec_ok(A, lda, sa, batch) ? F_AVEC : 0) |
                     (vec_ok(B, ldb, sb, batch) ? F_BVEC : 0) | (out != DT_F32 ? F_C16 : 0);
    if (eo_cuda_dp(C) % (2u * esz) == 0 && ldc % 2 == 0 && (batch == 1 || sc % 2 == 0))
        flags |= F_CVEC;
    uint32_t m = (uint32_t)M, n = (uint32_t)N, k = (uint32_t)K;
    int32_t la = (int32_t)lda, lb = (int32_t)ldb, lc = (int32_t)ldc;
    eo_cuda_kernel kern = in == DT_BF16 ? EO_CUK_MATMUL_TC_BF16 : EO_CUK_MATMUL_TC_F16;
    /* grid.z is at most 65535: larger batches go in slices. */
    for (int64_t b0 = 0; b0 < batch; b0 += MAX_GRID) {
        int64_t nb = batch - b0 < MAX_GRID ? batch - b0 : MAX_GRID;
        uint64_t pa = eo_cuda_dp(A) + (uint64_t)(b0 * sa) * 2u;
        uint64_t pb = eo_cuda_dp(B) + (uint64_t)(b0 * sb) * 2u;
        uint64_t pc = eo_cuda_dp(C) + (uint64_t)(b0 * sc) * esz;
        LAUNCH(cu, kern, (unsigned)gx, (unsigned)gy, (unsigned)nb, 128, 1, &m, &n, &k, &pa, &la,
               &sa, &pb, &lb, &sb, &beta, &pc, &lc, &sc, &flags);
    }
}
