/* ops/cuda/layernorm.c — CUDA launchers for layernorm over the last axis, forward and backward:
 * the host side of ptx/layernorm.ptx, behind the kernel types of ops/kernels.h.
 *
 * Forward: a block per row. Backward, rows of at most 2048 columns: one
 * pass (eo_layernorm_bwd_fused; fused_rows_per_block in launch.h sizes its
 * grid); longer rows: a block per row for dx, then dw/db as column sums, in
 * two stages when rows are many.
 * Each launcher checks that every size fits the PTX's 32-bit indexing
 * (else the failure is recorded in the device state and the launch is
 * skipped) and passes its arguments in the order of ops/cuda/kernels.def. */
#include "ops/cuda/launch.h"

void eo_cuda_k_layernorm(int64_t rows, int64_t cols, const float *x, const float *w,
                         const float *b, float eps, float *y, float *mean, float *rstd,
                         const eo_exec *ex)
{
    eo_cuda *cu = eo_cuda_ready(ex);
    if (!cu || !eo_cuda_fits(cu, "layernorm", rows) || !eo_cuda_fits(cu, "layernorm", cols) || rows == 0 ||
        cols == 0)
        return;
    uint32_t r = (uint32_t)rows, c = (uint32_t)cols;
    uint64_t px = eo_cuda_dp(x), pw = eo_cuda_dp(w), pb = eo_cuda_dp(b), py = eo_cuda_dp(y), pm = eo_cuda_dp(mean), ps = eo_cuda_dp(rstd);
    LAUNCH(cu, EO_CUK_LAYERNORM, r, 1, 1, BLOCK, 1, &r, &c, &px, &pw, &pb, &eps, &py, &pm, &ps);
}

static int a16(const void *p) { return p == NULL || eo_cuda_dp(p) % 16 == 0; }

void eo_cuda_k_layernorm_backward(int64_t rows, int64_t cols, const float *x, const float *w,
                                  const float *mean, const float *rstd, const float *dy,
                                  float *dx, float *dw, float *db, void *ws, const eo_exec *ex)
{
    (void)ws;
    eo_cuda *cu = eo_cuda_ready(ex);
    if (!cu || !eo_cuda_fits(cu, "layernorm_backward", rows) || !eo_cuda_fits(cu, "layernorm_backward", cols) ||
        rows == 0 || cols == 0)
        return;
    uint32_t r = (uint32_t)rows, c = (uint32_t)cols;
    uint64_t px = eo_cuda_dp(x), pw = eo_cuda_dp(w), pm = eo_cuda_dp(mean), ps = eo_cuda_dp(rstd), pdy = eo_cuda_dp(dy);
    uint64_t pdx = eo_cuda_dp(dx), pdw = eo_cuda_dp(dw), pdb = eo_cuda_dp(db);
    if (dx && (dw || db) && cols <= FUSED_COLS) {
        /* One pass (eo_layernorm_bwd_fused): x and dy read once for dx and
         * the partial dw, db of each block's rows, the last block adding
         * the partials in block order. */
        uint32_t rpb = fused_rows_per_block(rows, cols), nb = (r + rpb - 1) / rpb;
        uint32_t vec = cols % 4 == 0 && a16(x) && a16(w) && a16(dy) && a16(dx);
        uint64_t pwork = cu->scratch + SCRATCH_WORK, pdone = cu->scratch + SCRATCH_COLDONE;
        LAUNCH(cu, EO_CUK_LAYERNORM_BWD_FUSED, nb, 1, 1, BLOCK, 1, &r, &c, &rpb, &vec, &px, &pw, &pm,
               &ps, &pdy, &pdx, &pwork, &pdw, &pdb, &pdone);
        return;
    }
    if (dx)
        LAUNCH(cu, EO_CUK_LAYERNORM_BWD_DX, r, 1, 1, BLOCK, 1, &r, &c, &px, &pw, &pm, &ps, &pdy,
               &pdx);
    if (!dw && !db)
        return;
    /* dw, db are column sums over all rows. With many rows, cut the rows
     * into R chunks (about 128 rows each, at most 64, as the work buffer
     * allows) summed by separate blocks, then add the chunks in order. R
     * depends only on the sizes, so the result repeats exactly. */
    int64_t R = (rows + 127) / 128, fit = WORK_BYTES / (cols * 8);
    R = R > 64 ? 64 : R;
    R = R > fit ? fit : R;
    if (R < 2) {
        LAUNCH(cu, EO_CUK_LAYERNORM_BWD_WB, eo_cuda_grid(cols), 1, 1, BLOCK, 1, &r, &c, &px, &pm, &ps,
               &pdy, &pdw, &pdb);
        return;
    }
    uint32_t chunk = (uint32_t)((rows + R - 1) / R), nr = (uint32_t)((rows + chunk - 1) / chunk);
    uint64_t pwork = cu->scratch + SCRATCH_WORK;
    /* Up to 4096 strips of 256 columns the last block of each strip adds
     * the chunk sums into dw and db: one launch. Wider, wb_sum follows. */
    unsigned strips = (unsigned)((cols + BLOCK - 1) / BLOCK);
    uint64_t pdone = strips <= COLDONE_STRIPS ? cu->scratch + SCRATCH_COLDONE : 0;
    LAUNCH(cu, EO_CUK_LAYERNORM_BWD_WB_PART, strips, nr, 1, BLOCK, 1, &r, &c, &chunk, &px, &pm, &ps,
           &pdy, &pwork, &pdw, &pdb, &pdone);
    if (!pdone)
        LAUNCH(cu, EO_CUK_LAYERNORM_BWD_WB_SUM, eo_cuda_grid(cols), 1, 1, BLOCK, 1, &nr, &c, &pwork,
               &pdw, &pdb);
}

size_t eo_cuda_k_layernorm_backward_ws(int64_t rows, int64_t cols, int nthreads)
{
    (void)rows, (void)cols, (void)nthreads;
    return 0;
}
