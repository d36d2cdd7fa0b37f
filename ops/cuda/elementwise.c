/* ops/cuda/elementwise.c — CUDA launchers for copying, filling, accumulating, binary and unary elementwise ops:
 * the host side of ptx/elementwise.ptx, behind the kernel types of ops/kernels.h.
 *
 * Grid-stride kernels of 256-thread blocks over the flattened index space;
 * contiguous copies and accumulations take a flat kernel, everything else
 * a 4-D strided one (stride 0 expresses broadcasting).
 * Each launcher checks that every size fits the PTX's 32-bit indexing
 * (else the failure is recorded in the device state and the launch is
 * skipped) and passes its arguments in the order of ops/cuda/kernels.def. */
#include "ops/cuda/launch.h"

void eo_cuda_k_copy32(const int64_t shape[4], void *dst, const int64_t sd[4], const void *src,
                      const int64_t ss[4], const eo_exec *ex)
{
    eo_cuda *cu = eo_cuda_ready(ex);
    shape4 sh;
    strides4 a, b;
    if (!cu || !eo_cuda_shape4(cu, "copy32", shape, &sh) || sh.total == 0)
        return;
    uint64_t d = eo_cuda_dp(dst), s = eo_cuda_dp(src);
    if (eo_cuda_contiguous(shape, sd) && eo_cuda_contiguous(shape, ss)) {
        uint32_t n = (uint32_t)sh.total;
        LAUNCH(cu, EO_CUK_COPY32_FLAT, eo_cuda_grid_v4(cu, sh.total), 1, 1, BLOCK, 1, &d, &s, &n);
        return;
    }
    if (!eo_cuda_strides4(cu, "copy32", shape, sd, &a) || !eo_cuda_strides4(cu, "copy32", shape, ss, &b))
        return;
    LAUNCH(cu, EO_CUK_COPY32_4D, eo_cuda_grid(sh.total), 1, 1, BLOCK, 1, N4(sh), &d, S4(a), &s,
           S4(b));
}

void eo_cuda_k_accumulate(const int64_t shape[4], float *dst, const int64_t sd[4],
                          const float *src, const int64_t ss[4], const eo_exec *ex)
{
    eo_cuda *cu = eo_cuda_ready(ex);
    shape4 sh;
    strides4 a, b;
    if (!cu || !eo_cuda_shape4(cu, "accumulate", shape, &sh) || sh.total == 0)
        return;
    uint64_t d = eo_cuda_dp(dst), s = eo_cuda_dp(src);
    if (eo_cuda_contiguous(shape, sd) && eo_cuda_contiguous(shape, ss)) {
        uint32_t n = (uint32_t)sh.total;
        LAUNCH(cu, EO_CUK_ACCUMULATE_FLAT, eo_cuda_grid_v4(cu, sh.total), 1, 1, BLOCK, 1, &d, &s, &n);
        return;
    }
    if (!eo_cuda_strides4(cu, "accumulate", shape, sd, &a) ||
        !eo_cuda_strides4(cu, "accumulate", shape, ss, &b))
        return;
    LAUNCH(cu, EO_CUK_ACCUMULATE_4D, eo_cuda_grid(sh.total), 1, 1, BLOCK, 1, N4(sh), &d, S4(a), &s,
           S4(b));
}

void eo_cuda_k_fill(int64_t n, float *x, float value, const eo_exec *ex)
{
    eo_cuda *cu = eo_cuda_ready(ex);
    if (!cu || !eo_cuda_fits(cu, "fill", n) || n == 0)
        return;
    uint64_t p = eo_cuda_dp(x);
    uint32_t nn = (uint32_t)n;
    LAUNCH(cu, EO_CUK_FILL, eo_cuda_grid_v4(cu, n), 1, 1, BLOCK, 1, &p, &nn, &value);
}

void eo_cuda_k_binary(eo_binop op, const int64_t shape[4], float *out, const int64_t so[4],
                      const float *a, const int64_t sa[4], const float *b, const int64_t sb[4],
                      const eo_exec *ex)
{
    eo_cuda *cu = eo_cuda_ready(ex);
    shape4 sh;
    strides4 t_o, t_a, t_b;
    if (!cu || !eo_cuda_shape4(cu, "binary", shape, &sh) || sh.total == 0)
        return;
    if (!eo_cuda_strides4(cu, "binary", shape, so, &t_o) ||
        !eo_cuda_strides4(cu, "binary", shape, sa, &t_a) ||
        !eo_cuda_strides4(cu, "binary", shape, sb, &t_b))
        return;
    uint32_t o = (uint32_t)op;
    uint64_t po = eo_cuda_dp(out), pa = eo_cuda_dp(a), pb = eo_cuda_dp(b);
    LAUNCH(cu, EO_CUK_BINARY_4D, eo_cuda_grid(sh.total), 1, 1, BLOCK, 1, &o, N4(sh), &po, S4(t_o),
           &pa, S4(t_a), &pb, S4(t_b));
}

void eo_cuda_k_binary_backward(eo_binop op, const int64_t shape[4], const float *dout,
                               const int64_t sdo[4], const float *a, const int64_t sa[4],
                               const float *b, const int64_t sb[4], float *da,
                               const int64_t sda[4], float *db, const int64_t sdb[4], const eo_exec *ex)
{
    eo_cuda *cu = eo_cuda_ready(ex);
    shape4 sh;
    strides4 t_do, t_a, t_b, t_da, t_db;
    if (!cu || !eo_cuda_shape4(cu, "binary_backward", shape, &sh) || sh.total == 0 || (!da && !db))
        return;
    /* Inputs that are not read (add/sub, absent gradients) count as stride 0. */
    if (!eo_cuda_strides4(cu, "binary_backward", shape, sdo, &t_do) ||
        !eo_cuda_strides4(cu, "binary_backward", shape, a ? sa : NULL, &t_a) ||
        !eo_cuda_strides4(cu, "binary_backward", shape, b ? sb : NULL, &t_b) ||
        !eo_cuda_strides4(cu, "binary_backward", shape, da ? sda : NULL, &t_da) ||
        !eo_cuda_strides4(cu, "binary_backward", shape, db ? sdb : NULL, &t_db))
        return;
    uint32_t o = (uint32_t)op;
    uint64_t pdo = eo_cuda_dp(dout), pa = eo_cuda_dp(a), pb = eo_cuda_dp(b), pda = eo_cuda_dp(da), pdb = eo_cuda_dp(db);
    LAUNCH(cu, EO_CUK_BINARY_BWD_4D, eo_cuda_grid(sh.total), 1, 1, BLOCK, 1, &o, N4(sh), &pdo,
           S4(t_do), &pa, S4(t_a), &pb, S4(t_b), &pda, S4(t_da), &pdb, S4(t_db));
}

void eo_cuda_k_unary(eo_unop op, int64_t n, const float *x, float *y, float alpha,
                     const eo_exec *ex)
{
    eo_cuda *cu = eo_cuda_ready(ex);
    if (!cu || !eo_cuda_fits(cu, "unary", n) || n == 0)
        return;
    uint32_t o = (uint32_t)op, nn = (uint32_t)n;
    uint64_t px = eo_cuda_dp(x), py = eo_cuda_dp(y);
    LAUNCH(cu, EO_CUK_UNARY, eo_cuda_grid(n), 1, 1, BLOCK, 1, &o, &nn, &px, &py, &alpha);
}

void eo_cuda_k_unary_backward(eo_unop op, int64_t n, const float *x, const float *y,
                              const float *dy, float *dx, float alpha, const eo_exec *ex)
{
    eo_cuda *cu = eo_cuda_ready(ex);
    if (!cu || !eo_cuda_fits(cu, "unary_backward", n) || n == 0)
        return;
    uint32_t o = (uint32_t)op, nn = (uint32_t)n;
    uint64_t px = eo_cuda_dp(x), py = eo_cuda_dp(y), pdy = eo_cuda_dp(dy), pdx = eo_cuda_dp(dx);
    LAUNCH(cu, EO_CUK_UNARY_BWD, eo_cuda_grid(n), 1, 1, BLOCK, 1, &o, &nn, &px, &py, &pdy, &pdx,
           &alpha);
}
