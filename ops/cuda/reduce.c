/* ops/cuda/reduce.c — CUDA launchers for sum / mean / max and log-sum-exp over one axis, and the sum of squares for clipping:
 * the host side of ptx/reduce.ptx, behind the kernel types of ops/kernels.h.
 *
 * One-pass kernels, a block per long row, or two stages (chunks, then an
 * in-order sum of the chunks) when few outputs share a long axis.
 * Each launcher checks that every size fits the PTX's 32-bit indexing
 * (else the failure is recorded in the device state and the launch is
 * skipped) and passes its arguments in the order of ops/cuda/kernels.def. */
#include <math.h> /* NAN */
#include "ops/cuda/launch.h"

/* ---- reductions --------------------------------------------------------------------- */
/* Sums and means with few outputs and a long reduced axis: cut the axis
 * into R chunks reduced in parallel, then add each output's chunks in
 * order (see reduce.ptx). R depends only on the sizes. Returns 0 when the
 * one-pass kernels are the better choice. */
static int reduce_two_stage(eo_cuda *cu, uint32_t op, int64_t outer, int64_t n, int64_t inner,
                            uint64_t px, uint64_t py)
{
    int64_t outputs = outer * inner, R;
    if (inner == 1)  /* a block per chunk of a row: chunks of at least 4096 */
        R = outer < 512 && n >= 8192 ? n / 4096 : 1;
    else             /* a thread per (output, chunk): chunks of at least 64 */
        R = outputs < 16384 && n >= 128 ? n / 64 : 1;
    int64_t fit = WORK_BYTES / (outputs * 8), cap = inner == 1 ? 1024 : 256;
    R = R > cap ? cap : R;
    R = R > fit ? fit : R;
    if (R < 2)
        return 0;
    uint32_t chunk = (uint32_t)((n + R - 1) / R), nr = (uint32_t)((n + chunk - 1) / chunk);
    uint32_t a = (uint32_t)outer, b = (uint32_t)n, c = (uint32_t)inner, tot = (uint32_t)outputs;
    uint64_t pwork = cu->scratch + SCRATCH_WORK;
    if (inner == 1)
        LAUNCH(cu, EO_CUK_REDUCE_ROWS_PART, nr, a, 1, BLOCK, 1, &a, &b, &chunk, &px, &pwork);
    else
        LAUNCH(cu, EO_CUK_REDUCE_PART, (unsigned)((outputs + BLOCK - 1) / BLOCK), nr, 1, BLOCK, 1,
               &a, &b, &c, &chunk, &px, &pwork);
    LAUNCH(cu, EO_CUK_REDUCE_FINAL, eo_cuda_grid(outputs), 1, 1, BLOCK, 1, &op, &tot, &nr, &b, &pwork,
           &py);
    return 1;
}

void eo_cuda_k_reduce(eo_redop op, int64_t outer, int64_t n, int64_t inner, const float *x,
                      float *y, int32_t *argmax, const eo_exec *ex)
{
    eo_cuda *cu = eo_cuda_ready(ex);
    if (!cu || !eo_cuda_fits(cu, "reduce", outer) || !eo_cuda_fits(cu, "reduce", n) ||
        !eo_cuda_fits(cu, "reduce", inner) || !eo_cuda_fits(cu, "reduce", outer * inner) ||
        !eo_cuda_fits(cu, "reduce", outer * n * inner) || outer * inner == 0)
        return;
    if (n == 0) {
        /* Outputs over an empty axis still have values, as on the CPU and
         * in PyTorch: a sum of nothing is 0, a mean 0/0 = NaN (a max has
         * none: the core refuses it). The kernels would not run a row. */
        if (op != EO_RED_MAX)
            eo_cuda_k_fill(outer * inner, y, op == EO_RED_SUM ? 0.0f : NAN, ex);
        return;
    }
    uint32_t o = (uint32_t)op, a = (uint32_t)outer, b = (uint32_t)n, c = (uint32_t)inner;
    uint64_t px = eo_cuda_dp(x), py = eo_cuda_dp(y), pam = eo_cuda_dp(argmax);
    if (op != EO_RED_MAX && reduce_two_stage(cu, o, outer, n, inner, px, py))
        return;
    if (inner == 1 && n >= 64) { /* long rows: a block per row, not a thread */
        LAUNCH(cu, EO_CUK_REDUCE_ROWS, a, 1, 1, BLOCK, 1, &o, &a, &b, &px, &py, &pam);
        return;
    }
    LAUNCH(cu, EO_CUK_REDUCE, eo_cuda_grid(outer * inner), 1, 1, BLOCK, 1, &o, &a, &b, &c, &px, &py,
           &pam);
}

void eo_cuda_k_reduce_backward(eo_redop op, int64_t outer, int64_t n, int64_t inner,
                               const float *dy, const int32_t *argmax, float *dx,
                               const eo_exec *ex)
{
    eo_cuda *cu = eo_cuda_ready(ex);
    if (!cu || !eo_cuda_fits(cu, "reduce_backward", outer) || !eo_cuda_fits(cu, "reduce_backward", n) ||
        !eo_cuda_fits(cu, "reduce_backward", inner) || !eo_cuda_fits(cu, "reduce_backward", outer * n * inner) ||
        outer * n * inner == 0)
        return;
    uint32_t o = (uint32_t)op, a = (uint32_t)outer, b = (uint32_t)n, c = (uint32_t)inner;
    uint64_t pdy = eo_cuda_dp(dy), pam = eo_cuda_dp(argmax), pdx = eo_cuda_dp(dx);
    LAUNCH(cu, EO_CUK_REDUCE_BWD, eo_cuda_grid(outer * n * inner), 1, 1, BLOCK, 1, &o, &a, &b, &c,
           &pdy, &pam, &pdx);
}

void eo_cuda_k_sumsq(int64_t n, const float *x, float *out, const eo_exec *ex)
{
    eo_cuda *cu = eo_cuda_ready(ex);
    if (!cu || !eo_cuda_fits(cu, "sumsq", n))
        return;
    /* Blocks of 256 threads, about 16 elements per thread, at most
     * SUMSQ_PARTS blocks: a function of n only, so results repeat. */
    int64_t g = (n + 4095) / 4096;
    uint32_t nn = (uint32_t)n, parts = (uint32_t)(g < 1 ? 1 : g > SUMSQ_PARTS ? SUMSQ_PARTS : g);
    uint64_t px = eo_cuda_dp(x), po = eo_cuda_dp(out), pp = cu->scratch + SCRATCH_SUMSQ;
    LAUNCH(cu, EO_CUK_SUMSQ_PART, parts, 1, 1, BLOCK, 1, &nn, &px, &pp);
    LAUNCH(cu, EO_CUK_SUMSQ_FINAL, 1, 1, 1, BLOCK, 1, &parts, &pp, &po);
}

/* ---- log-sum-exp: a thread per output, then a thread per input element ---- */
void eo_cuda_k_logsumexp(int64_t outer, int64_t n, int64_t inner, const float *x, float *y,
                         float *stats, const eo_exec *ex)
{
    eo_cuda *cu = eo_cuda_ready(ex);
    if (!cu || !eo_cuda_fits(cu, "logsumexp", outer * inner) ||
        !eo_cuda_fits(cu, "logsumexp", outer * n * inner) || outer * inner == 0)
        return;
    uint32_t a = (uint32_t)outer, b = (uint32_t)n, c = (uint32_t)inner;
    uint64_t px = eo_cuda_dp(x), py = eo_cuda_dp(y), pst = eo_cuda_dp(stats);
    LAUNCH(cu, EO_CUK_LOGSUMEXP, eo_cuda_grid(outer * inner), 1, 1, BLOCK, 1, &a, &b, &c, &px, &py,
           &pst);
}

void eo_cuda_k_logsumexp_backward(int64_t outer, int64_t n, int64_t inner, const float *x,
                                  const float *stats, const float *dy, float *dx,
                                  const eo_exec *ex)
{
    eo_cuda *cu = eo_cuda_ready(ex);
    if (!cu || !eo_cuda_fits(cu, "logsumexp_backward", outer * n * inner) || outer * n * inner == 0)
        return;
    uint32_t a = (uint32_t)outer, b = (uint32_t)n, c = (uint32_t)inner;
    uint64_t px = eo_cuda_dp(x), py = eo_cuda_dp(stats), pdy = eo_cuda_dp(dy), pdx = eo_cuda_dp(dx);
    LAUNCH(cu, EO_CUK_LOGSUMEXP_BWD, eo_cuda_grid(outer * n * inner), 1, 1, BLOCK, 1, &a, &b, &c,
           &px, &py, &pdy, &pdx);
}
