/* ops/cuda/matmul.c — CUDA launcher for matmul (batched, either operand transposed):
 * the host side of ptx/matmul.ptx, behind the kernel type of ops/kernels.h.
 *
 * Three kernels (see the header of ptx/matmul.ptx): eo_matmul computes
 * 128x128 tiles of C with 256 threads, eo_matmul_64 64x64 tiles with 64
 * threads, eo_matmul_sk 64x16 tiles over a share of K (split-K). The
 * choice is by shape: split-K when M or N is at most 32 (N = 10
 * classifier heads and their weight gradients, one-row sampling steps),
 * where a square tile would be mostly padding and too few blocks would
 * walk all of K; else the big tile when both M and N are at least 128,
 * the 64x64 one otherwise. grid.z walks the batch.
 *
 * The launcher tells the kernel how each operand lies in memory (flags):
 * whether its tile rows are contiguous (A with ta = 1, B with tb = 0:
 * staged by cp.async) or must be transposed while staging, and whether
 * 16-byte accesses are safe: base 16-byte aligned, leading dimension and
 * batch stride multiples of 4. Without that the kernel uses 4-byte
 * accesses; every shape and stride stays correct either way.
 *
 * It checks that every size fits the PTX's 32-bit indexing (else the
 * failure is recorded in the device state and the launch is skipped) and
 * passes its arguments in the order of ops/cuda/kernels.def. */
#include "ops/cuda/launch.h"

enum { MM_FLAG_A_DIRECT = 1, MM_FLAG_B_DIRECT = 2, MM_FLAG_A_VEC = 4, MM_FLAG_B_VEC = 8,
       MM_FLAG_C_VEC = 16 };

enum { SK_THIN = 32, SK_BM = 64, SK_BN = 16, SK_BK = 32, SK_TILE_BYTES = SK_BM * SK_BN * 4 };

/* The split-K path. The thin side must be N: a thin-M product is computed
 * as C^T = op(B)^T op(A)^T (the operands swap, their transposes flip, and
 * C is written through its column stride). S, the number of K splits, is
 * chosen so that the grid has about 4 blocks per SM (tiles x S), each split
 * a whole number of 32-k stages, no split empty; the partials (4 KiB a
 * tile and split) go to the work buffer and each tile's counter is one of
 * the column-strip counters (zero between launches, reset by the tile's
 * last block): S = 1, which needs neither, when they would not fit. */
static void matmul_sk(eo_cuda *cu, int ta, int tb, int64_t batch, int64_t M, int64_t N, int64_t K,
                      const float *A, int64_t lda, int64_t sa, const float *B, int64_t ldb,
                      int64_t sb, float beta, float *C, int64_t ldc, int64_t sc, int64_t tiles)
{
    int swap = M < N;
    const float *pA = swap ? B : A, *pB = swap ? A : B;
    int32_t la = (int32_t)(swap ? ldb : lda), lb = (int32_t)(swap ? lda : ldb);
    int64_t xa = swap ? sb : sa, xb = swap ? sa : sb;
    int tA = swap ? !tb : ta, tB = swap ? !ta : tb;
    uint32_t m = (uint32_t)(swap ? N : M), n = (uint32_t)(swap ? M : N), k = (uint32_t)K;
    int32_t lcr = swap ? 1 : (int32_t)ldc, lcc = swap ? (int32_t)ldc : 1;
    uint32_t flags = (tA ? 1u : 0u) | (tB ? 2u : 0u);
    int64_t stages = (K + SK_BK - 1) / SK_BK, sms = cu->sm_count > 0 ? cu->sm_count : 1;
    for (int64_t b0 = 0; b0 < batch; b0 += MAX_GRID) {
        int64_t nb = batch - b0 < MAX_GRID ? batch - b0 : MAX_GRID, cells = tiles * nb;
        int64_t S = (4 * sms + cells - 1) / cells;
        if (S > stages)
            S = stages;
        if (S > WORK_BYTES / SK_TILE_BYTES / cells)
            S = WORK_BYTES / SK_TILE_BYTES / cells;
        if (S < 1 || cells > COLDONE_STRIPS)
            S = 1;
        int64_t kst = S > 1 ? (stages + S - 1) / S : (stages > 0 ? stages : 1);
        if (S > 1)
            S = (stages + kst - 1) / kst; /* no empty split */
        uint32_t kst32 = (uint32_t)kst;
        uint64_t pa = eo_cuda_dp(pA) + (uint64_t)(b0 * xa) * 4u;
        uint64_t pb = eo_cuda_dp(pB) + (uint64_t)(b0 * xb) * 4u;
        uint64_t pc = eo_cuda_dp(C) + (uint64_t)(b0 * sc) * 4u;
        uint64_t part = cu->scratch + SCRATCH_WORK, done = cu->scratch + SCRATCH_COLDONE;
        LAUNCH(cu, EO_CUK_MATMUL_SK, (unsigned)S, (unsigned)tiles, (unsigned)nb, 128, 1, &m, &n,
               &k, &pa, &la, &xa, &pb, &lb, &xb, &beta, &pc, &lcr, &lcc, &sc, &flags, &kst32,
               &part, &done);
    }
}

/* 16-byte accesses at every (batch entry, row) start of an operand? */
static int vec_ok(const void *p, int64_t ld, int64_t batch, int64_t stride)
{
    return eo_cuda_dp(p) % 16 == 0 && ld % 4 == 0 && (batch == 1 || stride % 4 == 0);
}

void eo_cuda_k_matmul(int ta, int tb, int64_t batch, int64_t M, int64_t N, int64_t K,
                      const float *A, int64_t lda, int64_t sa, const float *B, int64_t ldb,
                      int64_t sb, float beta, float *C, int64_t ldc, int64_t sc, void *ws,
                      const eo_exec *ex)
{
    (void)ws;
    eo_cuda *cu = eo_cuda_ready(ex);
    if (!cu || batch <= 0 || M <= 0 || N <= 0)
        return;
    /* Every in-matrix offset is an s32 in the PTX; a staged row may run
     * up to 8 past K, or 128 past M or N, before it is masked. */
    int64_t rows_a = (ta ? K + 8 : M + 128), rows_b = (tb ? N + 128 : K + 8);
    if (!eo_cuda_fits(cu, "matmul", M + 128) || !eo_cuda_fits(cu, "matmul", N + 128) ||
        !eo_cuda_fits(cu, "matmul", K + 8) || !eo_cuda_fits(cu, "matmul", lda) ||
        !eo_cuda_fits(cu, "matmul", ldb) || !eo_cuda_fits(cu, "matmul", ldc) ||
        !eo_cuda_fits(cu, "matmul", rows_a * lda) || !eo_cuda_fits(cu, "matmul", rows_b * ldb) ||
        !eo_cuda_fits(cu, "matmul", M * ldc))
        return;
    if (M <= SK_THIN || N <= SK_THIN) {
        int64_t lo = M < N ? M : N, hi = M < N ? N : M;
        int64_t tiles = (hi + SK_BM - 1) / SK_BM * ((lo + SK_BN - 1) / SK_BN);
        if (tiles <= MAX_GRID) {
            matmul_sk(cu, ta, tb, batch, M, N, K, A, lda, sa, B, ldb, sb, beta, C, ldc, sc, tiles);
            return;
        }
    }
    int big = M >= 128 && N >= 128;
    int64_t tile = big ? 128 : 64;
    int64_t gy = (M + tile - 1) / tile, gx = (N + tile - 1) / tile;
    if (gy > MAX_GRID) { /* grid.y counts row tiles */
        eo_cuda_fail_text(cu, EO_ERR_UNSUPPORTED, "matmul: M above 65535 row tiles", NULL, NULL);
        return;
    }
    uint32_t m = (uint32_t)M, n = (uint32_t)N, k = (uint32_t)K;
    int32_t la = (int32_t)lda, lb = (int32_t)ldb, lc = (int32_t)ldc;
    uint32_t flags = (ta ? MM_FLAG_A_DIRECT : 0) | (tb ? 0 : MM_FLAG_B_DIRECT) |
                     (vec_ok(A, lda, batch, sa) ? MM_FLAG_A_VEC : 0) |
                     (vec_ok(B, ldb, batch, sb) ? MM_FLAG_B_VEC : 0) |
                     (vec_ok(C, ldc, batch, sc) ? MM_FLAG_C_VEC : 0);
    /* grid.z is at most 65535: larger batches go in slices. */
    for (int64_t b0 = 0; b0 < batch; b0 += MAX_GRID) {
        int64_t nb = batch - b0 < MAX_GRID ? batch - b0 : MAX_GRID;
        uint64_t pa = eo_cuda_dp(A) + (uint64_t)(b0 * sa) * 4u;
        uint64_t pb = eo_cuda_dp(B) + (uint64_t)(b0 * sb) * 4u;
        uint64_t pc = eo_cuda_dp(C) + (uint64_t)(b0 * sc) * 4u;
        LAUNCH(cu, big ? EO_CUK_MATMUL : EO_CUK_MATMUL_64, (unsigned)gx, (unsigned)gy,
               (unsigned)nb, big ? 256 : 64, 1, &m, &n, &k, &pa, &la, &sa, &pb, &lb, &sb, &beta,
               &pc, &lc, &sc, &flags);
    }
}

size_t eo_cuda_k_matmul_ws(int64_t M, int64_t N, int64_t K, int nthreads)
{
    (void)M, (void)N, (void)K, (void)nthreads;
    return 0;
}
