/* ops/cuda/conv.c — CUDA launchers for im2col / col2im and 2-D max pooling:
 * the host side of ptx/conv.ptx, behind the kernel types of ops/kernels.h.
 *
 * One thread per column element (im2col) or output pixel (pooling).
 * Each launcher checks that every size fits the PTX's 32-bit indexing
 * (else the failure is recorded in the device state and the launch is
 * skipped) and passes its arguments in the order of ops/cuda/kernels.def. */
#include "ops/cuda/launch.h"

/* ---- convolution helpers ---------------------------------------------------------------- */
static int conv_sizes(eo_cuda *cu, const char *who, int64_t N, int64_t C, int64_t H, int64_t W,
                      int64_t kh, int64_t kw, int64_t pad, int64_t stride, uint32_t v[10],
                      int64_t *total)
{
    if (stride <= 0 || kh <= 0 || kw <= 0)
        return eo_cuda_fits(cu, who, -1);
    int64_t OH = (H + 2 * pad - kh) / stride + 1, OW = (W + 2 * pad - kw) / stride + 1;
    int64_t in[10] = {N, C, H, W, kh, kw, pad, stride, OH, OW};
    for (int i = 0; i < 10; i++) {
        if (!eo_cuda_fits(cu, who, in[i]))
            return 0;
        v[i] = (uint32_t)in[i];
    }
    *total = C * kh * kw * N * OH * OW;
    return eo_cuda_fits(cu, who, N * C * H * W) && eo_cuda_fits(cu, who, N * OH * OW) &&
           eo_cuda_fits(cu, who, C * kh * kw) && eo_cuda_fits(cu, who, *total);
}

void eo_cuda_k_im2col(int64_t N, int64_t C, int64_t H, int64_t W, int64_t kh, int64_t kw,
                      int64_t pad, int64_t stride, const float *x, float *cols, const eo_exec *ex)
{
    eo_cuda *cu = eo_cuda_ready(ex);
    uint32_t v[10];
    int64_t total = 0;
    if (!cu || !conv_sizes(cu, "im2col", N, C, H, W, kh, kw, pad, stride, v, &total) ||
        total == 0)
        return;
    uint64_t px = eo_cuda_dp(x), pc = eo_cuda_dp(cols);
    LAUNCH(cu, EO_CUK_IM2COL, eo_cuda_grid(total), 1, 1, BLOCK, 1, &v[0], &v[1], &v[2], &v[3], &v[4],
           &v[5], &v[6], &v[7], &v[8], &v[9], &px, &pc);
}

void eo_cuda_k_col2im(int64_t N, int64_t C, int64_t H, int64_t W, int64_t kh, int64_t kw,
                      int64_t pad, int64_t stride, const float *dcols, float *dx,
                      const eo_exec *ex)
{
    eo_cuda *cu = eo_cuda_ready(ex);
    uint32_t v[10];
    int64_t total = 0;
    if (!cu || !conv_sizes(cu, "col2im", N, C, H, W, kh, kw, pad, stride, v, &total) ||
        total == 0)
        return;
    uint64_t pc = eo_cuda_dp(dcols), px = eo_cuda_dp(dx);
    LAUNCH(cu, EO_CUK_COL2IM, eo_cuda_grid(total), 1, 1, BLOCK, 1, &v[0], &v[1], &v[2], &v[3], &v[4],
           &v[5], &v[6], &v[7], &v[8], &v[9], &pc, &px);
}

static int pool_sizes(eo_cuda *cu, const char *who, int64_t P, int64_t H, int64_t W, int64_t k,
                      uint32_t v[6], int64_t *total)
{
    if (k <= 0)
        return eo_cuda_fits(cu, who, -1);
    int64_t in[6] = {P, H, W, k, H / k, W / k};
    for (int i = 0; i < 6; i++) {
        if (!eo_cuda_fits(cu, who, in[i]))
            return 0;
        v[i] = (uint32_t)in[i];
    }
    *total = P * (H / k) * (W / k);
    return eo_cuda_fits(cu, who, H * W) && eo_cuda_fits(cu, who, *total);
}

void eo_cuda_k_maxpool2d(int64_t P, int64_t H, int64_t W, int64_t k, const float *x, float *y,
                         int32_t *arg, const eo_exec *ex)
{
    eo_cuda *cu = eo_cuda_ready(ex);
    uint32_t v[6];
    int64_t total = 0;
    if (!cu || !pool_sizes(cu, "maxpool2d", P, H, W, k, v, &total) || total == 0)
        return;
    uint64_t px = eo_cuda_dp(x), py = eo_cuda_dp(y), pa = eo_cuda_dp(arg);
    LAUNCH(cu, EO_CUK_MAXPOOL, eo_cuda_grid(total), 1, 1, BLOCK, 1, &v[0], &v[1], &v[2], &v[3], &v[4],
           &v[5], &px, &py, &pa);
}

void eo_cuda_k_maxpool2d_backward(int64_t P, int64_t H, int64_t W, int64_t k, const float *dy,
                                  const int32_t *arg, float *dx, const eo_exec *ex)
{
    eo_cuda *cu = eo_cuda_ready(ex);
    uint32_t v[6];
    int64_t total = 0;
    if (!cu || !pool_sizes(cu, "maxpool2d_backward", P, H, W, k, v, &total) || total == 0)
        return;
    uint64_t pdy = eo_cuda_dp(dy), pa = eo_cuda_dp(arg), pdx = eo_cuda_dp(dx);
    LAUNCH(cu, EO_CUK_MAXPOOL_BWD, eo_cuda_grid(total), 1, 1, BLOCK, 1, &v[0], &v[1], &v[2], &v[3],
           &v[4], &v[5], &pdy, &pa, &pdx);
}
