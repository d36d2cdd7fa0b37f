/* ops/cpu/conv.c — the pieces a 2-D convolution is built from: im2col and
 * its adjoint col2im, and k×k max pooling.
 *
 * A convolution is im2col followed by one matmul with the [Cout, C*kh*kw]
 * weight; its input gradient is a matmul followed by col2im. That keeps
 * the only heavy arithmetic in the matmul kernel. im2col writes each row
 * of `cols` (one kernel tap) left to right, so its stores stream; col2im
 * walks the same order, reading dcols sequentially.
 *
 * Max pooling records, per output, the flat in-plane index of the first
 * maximum of its window (NaN counts as the largest, as in reduce.c), and
 * the backward adds dy there. Windows do not overlap, and planes are
 * independent, so the thread hook gets ranges of planes. */
#include "ops/cpu/grain.h"
#include "ops/kernels.h"

/* Walk every (tap row, output position) pair of images [n0, n1) once;
 * the input pixel under it is skipped in the padding. One loop serves
 * both directions: cols != NULL gathers (im2col), else it scatters dcols
 * into dx (col2im). Row r of cols has stride N*OH*OW: the batch's columns
 * sit side by side so the convolution is a single wide matmul. */
typedef struct conv_args {
    int64_t N, C, H, W, kh, kw, pad, stride;
    const float *x, *dcols;
    float *cols, *dx;
} conv_args;

static void im2col_walk(void *arg, int64_t n0, int64_t n1, int worker)
{
    (void)worker;
    const conv_args *a = arg;
    const int64_t H = a->H, W = a->W, stride = a->stride, pad = a->pad;
    const int64_t OH = (H + 2 * pad - a->kh) / stride + 1, OW = (W + 2 * pad - a->kw) / stride + 1;
    const int64_t P = OH * OW, ld = a->N * P;
    for (int64_t n = n0; n < n1; n++) {
        int64_t row = 0;
        for (int64_t c = 0; c < a->C; c++)
            for (int64_t i = 0; i < a->kh; i++)
                for (int64_t j = 0; j < a->kw; j++, row++) {
                    /* Output columns ow in [lo, hi) read inside the image;
                     * the rest read padding. Working out that range once
                     * per output row keeps the inner loop free of tests. */
                    int64_t lo = 0, hi = OW;
                    while (lo < OW && lo * stride - pad + j < 0)
                        lo++;
                    while (hi > lo && (hi - 1) * stride - pad + j >= W)
                        hi--;
                    const int64_t plane = (n * a->C + c) * H * W;
                    for (int64_t oh = 0; oh < OH; oh++) {
                        const int64_t ih = oh * stride - pad + i;
                        const int64_t o = row * ld + n * P + oh * OW;
                        /* Input column of output column lo (>= 0 by the choice of lo). */
                        const int64_t at = plane + ih * W + lo * stride - pad + j;
                        if (ih < 0 || ih >= H || lo >= hi) { /* all padding */
                            if (a->cols)
                                for (int64_t ow = 0; ow < OW; ow++)
                                    a->cols[o + ow] = 0.0f;
                            continue;
                        }
                        if (a->cols) {
                            float *dst = a->cols + o;
                            const float *src = a->x + at;
                            for (int64_t ow = 0; ow < lo; ow++)
                                dst[ow] = 0.0f;
                            for (int64_t ow = lo; ow < hi; ow++)
                                dst[ow] = src[(ow - lo) * stride];
                            for (int64_t ow = hi; ow < OW; ow++)
                                dst[ow] = 0.0f;
                        } else {
                            const float *src = a->dcols + o;
                            float *dst = a->dx + at;
                            for (int64_t ow = lo; ow < hi; ow++)
                                dst[(ow - lo) * stride] += src[ow];
                        }
                    }
                }
    }
}

/* Images are independent in both directions (each writes its own columns,
 * or its own dx plane), so the thread hook splits the batch. */
void eo_k_im2col(int64_t N, int64_t C, int64_t H, int64_t W, int64_t kh, int64_t kw,
                 int64_t pad, int64_t stride, const float *x, float *cols, const eo_exec *ex)
{
    const eo_par *par = eo_exec_par(ex);
    conv_args a = { N, C, H, W, kh, kw, pad, stride, x, NULL, cols, NULL };
    eo_par_for(eo_par_if(par, N * C * H * W * kh * kw), N, im2col_walk, &a);
}

void eo_k_col2im(int64_t N, int64_t C, int64_t H, int64_t W, int64_t kh, int64_t kw,
                 int64_t pad, int64_t stride, const float *dcols, float *dx, const eo_exec *ex)
{
    const eo_par *par = eo_exec_par(ex);
    conv_args a = { N, C, H, W, kh, kw, pad, stride, NULL, dcols, NULL, dx };
    eo_par_for(eo_par_if(par, N * C * H * W * kh * kw), N, im2col_walk, &a);
}

/* ---- max pooling ------------------------------------------------------- */
typedef struct pool_args {
    int64_t H, W, k;
    const float *x, *dy;
    float *y, *dx;
    int32_t *arg;
    const int32_t *arg_in;
} pool_args;

static void maxpool_body(void *arg, int64_t p0, int64_t p1, int worker)
{
    (void)worker;
    const pool_args *a = arg;
    const int64_t H = a->H, W = a->W, k = a->k, OH = H / k, OW = W / k;
    for (int64_t p = p0; p < p1; p++) {
        const float *x = a->x + p * H * W;
        for (int64_t oh = 0; oh < OH; oh++)
            for (int64_t ow = 0; ow < OW; ow++) {
                int64_t best = oh * k * W + ow * k;
                float m = x[best];
                for (int64_t u = 0; u < k; u++)
                    for (int64_t v = 0; v < k; v++) {
                        const int64_t at = (oh * k + u) * W + ow * k + v;
                        const float e = x[at];
                        if (m == m && (e > m || e != e)) {
                            m = e;
                            best = at;
                        }
                    }
                const int64_t o = (p * OH + oh) * OW + ow;
                a->y[o] = m;
                a->arg[o] = (int32_t)best;
            }
    }
}

void eo_k_maxpool2d(int64_t P, int64_t H, int64_t W, int64_t k, const float *x, float *y,
                    int32_t *arg, const eo_exec *ex)
{
    const eo_par *par = eo_exec_par(ex);
    pool_args a = {H, W, k, x, NULL, y, NULL, arg, NULL};
    eo_par_for(eo_par_if(par, P * H * W), P, maxpool_body, &a);
}

static void maxpool_backward_body(void *arg, int64_t p0, int64_t p1, int worker)
{
    (void)worker;
    const pool_args *a = arg;
    const int64_t plane_out = (a->H / a->k) * (a->W / a->k);
    for (int64_t p = p0; p < p1; p++)
        for (int64_t o = p * plane_out; o < (p + 1) * plane_out; o++)
            a->dx[p * a->H * a->W + a->arg_in[o]] += a->dy[o];
}

void eo_k_maxpool2d_backward(int64_t P, int64_t H, int64_t W, int64_t k, const float *dy,
                             const int32_t *arg, float *dx, const eo_exec *ex)
{
    const eo_par *par = eo_exec_par(ex);
    pool_args a = {H, W, k, NULL, dy, NULL, dx, NULL, arg};
    eo_par_for(eo_par_if(par, P * H * W), P, maxpool_backward_body, &a);
}
