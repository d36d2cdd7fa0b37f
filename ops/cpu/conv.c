/* ops/cpu/conv.c — 2-D convolution: the fused kernel the CPU backend
 * runs (eo_k_conv2d and its backward), the pieces of the composed path
 * (im2col and its adjoint col2im), and k x k max pooling.
 *
 * A convolution is im2col followed by one matmul with the [Cout, C*kh*kw]
 * weight; its input gradient is a matmul followed by col2im. That keeps
 * the only heavy arithmetic in the matmul kernel. The composed path does
 * it for the whole batch at once, which needs the [C*kh*kw, N*OH*OW]
 * column matrix in memory (29 MB for the CNN's second layer at batch
 * 128) and a transpose to NCHW afterwards; the fused kernel below does it
 * one image at a time in a per-worker buffer that stays in cache, writing
 * NCHW directly (see "the fused convolution"). im2col writes each row of
 * `cols` (one kernel tap) left to right, so its stores stream; col2im
 * walks the same order, reading dcols sequentially.
 *
 * Max pooling records, per output, the flat in-plane index of the first
 * maximum of its window, or of its last NaN (PyTorch's rule, see
 * pool_takes), and the backward adds dy there. Windows do not overlap, and planes are
 * independent, so the thread hook gets ranges of planes. 2x2 windows, the
 * common case, go eight at a time through AVX2 selects. The fused ReLU +
 * max pool (eo_k_relu_maxpool2d) is the same walk with the ReLU applied
 * to each tap as it is loaded, and a backward that applies the ReLU's
 * mask (from the pooled output: see pool_term):
 * a CNN's conv -> ReLU -> pool then never writes or reads the ReLU's
 * output or its gradient, two activation-sized passes each way. */
#include "ops/cpu/grain.h"
#include "ops/cpu/half.h"
#include "ops/cpu/matmul.h"
#include "ops/kernels.h"

#include <string.h>

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

/* The stride-1 runs, as separate functions with restrict pointers so
 * that the compiler vectorises them (the strided loop it cannot): most
 * convolutions have stride 1, and these runs are all im2col does. */
static void copy_run(float *restrict dst, const float *restrict src, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        dst[i] = src[i];
}
static void add_run(float *restrict dst, const float *restrict src, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        dst[i] += src[i];
}

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
                            if (stride == 1)
                                copy_run(dst + lo, src, hi - lo);
                            else
                                for (int64_t ow = lo; ow < hi; ow++)
                                    dst[ow] = src[(ow - lo) * stride];
                            for (int64_t ow = hi; ow < OW; ow++)
                                dst[ow] = 0.0f;
                        } else {
                            const float *src = a->dcols + o;
                            float *dst = a->dx + at;
                            if (stride == 1)
                                add_run(dst, src + lo, hi - lo);
                            else
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

/* ---- the fused convolution ---------------------------------------------
 * eo_k_conv2d computes the same product as im2col + one wide matmul, but
 * one image at a time: image n's columns cols_n [K = C*kh*kw, P = OH*OW]
 * are built in a per-worker buffer that stays in L2 (288 x 196 floats,
 * 225 KB, for the CNN's second layer), multiplied by W [Co, K] straight
 * into y's [Co, P] plane of image n, which is already NCHW. So no
 * [K, N*P] matrix is ever in memory (29 MB at batch 128 for that layer,
 * and as much again for its gradient), and no transpose copy to NCHW or
 * separate bias pass follows: each y plane starts as the bias and the
 * matmul adds into it.
 *
 * Backward, per image, in the same buffer:
 *   dW += dy_n [Co, P] . cols_n^T          (cols_n rebuilt from x_n)
 *   db += the row sums of dy_n
 *   dx_n += col2im(W^T [K, Co] . dy_n)
 * Images are split over the thread hook in contiguous chunks; dW and db
 * go to a per-worker partial, zeroed first and added into dw, db in
 * worker order at the end, so the result is fixed for a given thread
 * count. A 1x1 kernel with stride 1 and no padding needs no columns at
 * all: x_n itself is cols_n. */

typedef struct fconv {
    const eo_conv_geom *g;
    int64_t OH, OW, P, K;
    const float *x, *w, *bias, *dy;
    float *y, *dx, *dw, *db;
    /* The 16-bit backward (dt EO_K_BF16 / EO_K_F16, else 0): x, dy and dx
     * in dt, each image widened into (or dx rounded out of) the worker's
     * own f32 buffers, img_b bytes for x and dx, dyi_b for dy. */
    int dt;
    const uint16_t *x16, *dy16;
    uint16_t *dx16;
    unsigned char *ws; /* 64-byte aligned */
    size_t per;        /* bytes per worker */
    size_t cols_b, dw_b, db_b, mm_b, img_b, dyi_b;
} fconv;

static size_t al64(size_t b) { return (b + 63) / 64 * 64; }
static int fconv_direct(const eo_conv_geom *g)
{
    return g->kh == 1 && g->kw == 1 && g->pad == 0 && g->stride == 1;
}

static void fconv_sizes(const eo_conv_geom *g, int half, fconv *f)
{
    f->g = g;
    f->OH = (g->H + 2 * g->pad - g->kh) / g->stride + 1;
    f->OW = (g->W + 2 * g->pad - g->kw) / g->stride + 1;
    f->P = f->OH * f->OW;
    f->K = g->C * g->kh * g->kw;
    f->cols_b = fconv_direct(g) ? 0 : al64((size_t)(f->K * f->P) * sizeof(float));
    f->dw_b = al64((size_t)(g->Co * f->K) * sizeof(float));
    f->db_b = al64((size_t)g->Co * sizeof(float));
    /* One thread's matmul scratch, for the largest of the three products. */
    size_t mm = eo_k_matmul_ws(g->Co, f->P, f->K, 1);
    size_t mm2 = eo_k_matmul_ws(g->Co, f->K, f->P, 1), mm3 = eo_k_matmul_ws(f->K, f->P, g->Co, 1);
    mm = mm > mm2 ? mm : mm2;
    f->mm_b = al64(mm > mm3 ? mm : mm3);
    f->img_b = half ? al64((size_t)(g->C * g->H * g->W) * sizeof(float)) : 0;
    f->dyi_b = half ? al64((size_t)(g->Co * f->P) * sizeof(float)) : 0;
    f->per = f->cols_b + f->dw_b + f->db_b + f->mm_b + 2 * f->img_b + f->dyi_b;
    f->dt = 0;
    f->x16 = f->dy16 = NULL;
    f->dx16 = NULL;
}

size_t eo_k_conv2d_ws(const eo_conv_geom *g, int nthreads)
{
    fconv f;
    fconv_sizes(g, 0, &f);
    return (size_t)(nthreads < 1 ? 1 : nthreads) * f.per + 64;
}

size_t eo_k_conv2d_ws16(const eo_conv_geom *g, int nthreads)
{
    fconv f;
    fconv_sizes(g, 1, &f);
    return (size_t)(nthreads < 1 ? 1 : nthreads) * f.per + 64;
}

/* Stride 1 with OW == W ("same" width: kw = 2 pad + 1, the usual 3x3
 * pad 1): then a row of cols, tap (c, i, j), is the image plane shifted
 * by dh = i - pad rows and dw = j - pad columns, read as one contiguous
 * run of (valid rows) x W floats, except that the |dw| columns at one
 * edge of each row wrap around to the neighbouring row and must be the
 * padding's zeros instead. So: one long copy per tap (instead of one
 * short run per output row), then those few columns zeroed. The ends of
 * the run that would read outside the plane are exactly such columns,
 * so the copy is clamped to the plane. The adjoint zeroes the same
 * columns of dcols (the fused kernel's own scratch) and adds one run. */
static int fconv_same_s1(const eo_conv_geom *g, int64_t OW)
{
    return g->stride == 1 && OW == g->W;
}

typedef struct tap_run {
    int64_t t0, t1; /* the run in the cols row, clamped to the plane */
    int64_t shift;  /* source index - cols index */
    int64_t oh0, oh1, dw;
} tap_run;

static tap_run tap_run_of(const eo_conv_geom *g, int64_t OH, int64_t i, int64_t j)
{
    const int64_t W = g->W, H = g->H, dh = i - g->pad, dw = j - g->pad;
    tap_run r;
    r.dw = dw;
    r.oh0 = dh < 0 ? -dh : 0;
    r.oh1 = H - dh < OH ? H - dh : OH;
    if (r.oh1 < r.oh0)
        r.oh1 = r.oh0;
    r.shift = dh * W + dw;
    r.t0 = r.oh0 * W;
    r.t1 = r.oh1 * W;
    if (r.t1 > r.t0) {
        if (r.t0 + r.shift < 0)
            r.t0 = -r.shift;
        if (r.t1 + r.shift > H * W)
            r.t1 = H * W - r.shift;
    }
    return r;
}

/* Zero the wrapped columns of the valid rows of one cols row. */
static void tap_zero_edges(const tap_run *r, int64_t W, float *row)
{
    if (r->dw == 0)
        return;
    const int64_t c0 = r->dw < 0 ? 0 : W - r->dw, c1 = r->dw < 0 ? -r->dw : W;
    for (int64_t oh = r->oh0; oh < r->oh1; oh++)
        for (int64_t c = c0; c < c1; c++)
            row[oh * W + c] = 0.0f;
}

static void im2col_same_s1(const eo_conv_geom *g, int64_t OH, const float *xn, float *cols)
{
    const int64_t W = g->W, P = OH * W, HW = g->H * W;
    float *row = cols;
    for (int64_t c = 0; c < g->C; c++)
        for (int64_t i = 0; i < g->kh; i++)
            for (int64_t j = 0; j < g->kw; j++, row += P) {
                const tap_run r = tap_run_of(g, OH, i, j);
                const float *plane = xn + c * HW;
                for (int64_t t = 0; t < r.oh0 * W; t++)
                    row[t] = 0.0f;
                if (r.t1 > r.t0)
                    copy_run(row + r.t0, plane + r.t0 + r.shift, r.t1 - r.t0);
                for (int64_t t = r.oh1 * W; t < P; t++)
                    row[t] = 0.0f;
                tap_zero_edges(&r, W, row);
            }
}

static void col2im_same_s1(const eo_conv_geom *g, int64_t OH, float *dcols, float *dxn)
{
    const int64_t W = g->W, P = OH * W, HW = g->H * W;
    float *row = dcols;
    for (int64_t c = 0; c < g->C; c++)
        for (int64_t i = 0; i < g->kh; i++)
            for (int64_t j = 0; j < g->kw; j++, row += P) {
                const tap_run r = tap_run_of(g, OH, i, j);
                tap_zero_edges(&r, W, row);
                if (r.t1 > r.t0)
                    add_run(dxn + c * HW + r.t0 + r.shift, row + r.t0, r.t1 - r.t0);
            }
}

/* The columns of image xn into `cols` (im2col of that image alone). */
static const float *fconv_cols(const fconv *f, const float *xn, float *cols)
{
    const eo_conv_geom *g = f->g;
    if (fconv_direct(g))
        return xn;
    if (fconv_same_s1(g, f->OW)) {
        im2col_same_s1(g, f->OH, xn, cols);
        return cols;
    }
    conv_args a = { 1, g->C, g->H, g->W, g->kh, g->kw, g->pad, g->stride, xn, NULL, cols, NULL };
    im2col_walk(&a, 0, 1, 0);
    return cols;
}

static void fconv_fwd_body(void *arg, int64_t n0, int64_t n1, int worker)
{
    const fconv *f = arg;
    const eo_conv_geom *g = f->g;
    unsigned char *mine = f->ws + (size_t)worker * f->per;
    float *cols = (float *)mine;
    void *mm = mine + f->cols_b + f->dw_b + f->db_b;
    const int64_t Co = g->Co, P = f->P, K = f->K;
    for (int64_t n = n0; n < n1; n++) {
        const float *b = fconv_cols(f, f->x + n * g->C * g->H * g->W, cols);
        float *yn = f->y + n * Co * P;
        if (f->bias)
            for (int64_t o = 0; o < Co; o++)
                for (int64_t p = 0; p < P; p++)
                    yn[o * P + p] = f->bias[o];
        eo_mm_run(EO_MM_BEST, 0, 0, 1, Co, P, K, f->w, K, 0, b, P, 0, f->bias ? 1.0f : 0.0f, yn,
                  P, 0, mm, NULL);
    }
}

void eo_k_conv2d(const eo_conv_geom *g, const float *x, const float *w, const float *bias,
                 float *y, void *ws, const eo_exec *ex)
{
    fconv f;
    fconv_sizes(g, 0, &f);
    if (g->N <= 0 || g->Co <= 0 || f.P <= 0)
        return;
    f.x = x, f.w = w, f.bias = bias, f.y = y;
    f.dy = NULL, f.dx = f.dw = f.db = NULL;
    f.ws = (unsigned char *)(((uintptr_t)ws + 63) / 64 * 64);
    const eo_par *par = eo_par_if(eo_exec_par(ex), g->N * g->Co * f.P);
    eo_par_for(par, g->N, fconv_fwd_body, &f);
}

/* sum of x[0..n) in 8 fixed lanes, then the lanes in order: vectorises
 * without reassociation and gives the same bits every run. */
static float sum_lanes(const float *x, int64_t n)
{
    float acc[8] = { 0 };
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int l = 0; l < 8; l++)
            acc[l] += x[i + l];
    for (int l = 0; i < n; i++, l++)
        acc[l] += x[i];
    return ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
}

static void fconv_bwd_body(void *arg, int64_t n0, int64_t n1, int worker)
{
    const fconv *f = arg;
    const eo_conv_geom *g = f->g;
    unsigned char *mine = f->ws + (size_t)worker * f->per;
    float *cols = (float *)mine, *dwp = (float *)(mine + f->cols_b);
    float *dbp = (float *)(mine + f->cols_b + f->dw_b);
    void *mm = mine + f->cols_b + f->dw_b + f->db_b;
    unsigned char *w16 = mine + f->cols_b + f->dw_b + f->db_b + f->mm_b;
    float *xb = (float *)(void *)w16, *dxb = (float *)(void *)(w16 + f->img_b);
    float *dyb = (float *)(void *)(w16 + 2 * f->img_b);
    const int64_t Co = g->Co, P = f->P, K = f->K, img = g->C * g->H * g->W;
    for (int64_t n = n0; n < n1; n++) {
        const float *dyn, *xn = NULL;
        float *dxn = NULL;
        if (f->dt) { /* this image widened; its dx formed from zero in f32 */
            eo_half_to_f32(f->dt, Co * P, f->dy16 + n * Co * P, dyb);
            dyn = dyb;
            if (f->dw) {
                eo_half_to_f32(f->dt, img, f->x16 + n * img, xb);
                xn = xb;
            }
            if (f->dx16) {
                memset(dxb, 0, (size_t)img * sizeof(float));
                dxn = dxb;
            }
        } else {
            dyn = f->dy + n * Co * P;
            xn = f->x + n * img;
            dxn = f->dx ? f->dx + n * img : NULL;
        }
        if (f->dw) {
            const float *b = fconv_cols(f, xn, cols);
            eo_mm_run(EO_MM_BEST, 0, 1, 1, Co, K, P, dyn, P, 0, b, P, 0, 1.0f, dwp, K, 0, mm,
                      NULL);
        }
        if (f->db)
            for (int64_t o = 0; o < Co; o++)
                dbp[o] += sum_lanes(dyn + o * P, P);
        if (!dxn)
            continue;
        if (fconv_direct(g)) { /* dx_n [C, P] += W^T . dy_n directly */
            eo_mm_run(EO_MM_BEST, 1, 0, 1, K, P, Co, f->w, K, 0, dyn, P, 0, 1.0f, dxn, P, 0, mm,
                      NULL);
        } else {
            eo_mm_run(EO_MM_BEST, 1, 0, 1, K, P, Co, f->w, K, 0, dyn, P, 0, 0.0f, cols, P, 0,
                      mm, NULL);
            if (fconv_same_s1(g, f->OW)) {
                col2im_same_s1(g, f->OH, cols, dxn);
            } else {
                conv_args a = { 1, g->C, g->H, g->W, g->kh, g->kw, g->pad, g->stride,
                                NULL, cols, NULL, dxn };
                im2col_walk(&a, 0, 1, 0);
            }
        }
        if (f->dx16) { /* dx += this image's f32 gradient, rounded once */
            uint16_t *d = f->dx16 + n * img;
            eo_half_to_f32(f->dt, img, d, xb);
            for (int64_t i = 0; i < img; i++)
                xb[i] += dxb[i];
            eo_f32_to_half(f->dt, img, xb, d);
        }
    }
}

/* Both backward entries: f filled in but for the workspace. */
static void fconv_backward(fconv *f, void *ws, const eo_exec *ex)
{
    const eo_conv_geom *g = f->g;
    f->ws = (unsigned char *)(((uintptr_t)ws + 63) / 64 * 64);
    const eo_par *par = eo_par_if(eo_exec_par(ex), g->N * g->Co * f->P);
    const int T = eo_par_threads(par);
    float *dw = f->dw, *db = f->db;
    /* Every worker's partials start at zero, also those of workers that
     * get no images. */
    for (int t = 0; t < T; t++)
        memset(f->ws + (size_t)t * f->per + f->cols_b, 0, f->dw_b + f->db_b);
    eo_par_for(par, g->N, fconv_bwd_body, f);
    const int64_t nw = g->Co * f->K;
    for (int t = 0; t < T; t++) {
        const float *dwp = (const float *)(f->ws + (size_t)t * f->per + f->cols_b);
        const float *dbp = (const float *)(f->ws + (size_t)t * f->per + f->cols_b + f->dw_b);
        if (dw)
            for (int64_t i = 0; i < nw; i++)
                dw[i] += dwp[i];
        if (db)
            for (int64_t o = 0; o < g->Co; o++)
                db[o] += dbp[o];
    }
}

void eo_k_conv2d_backward(const eo_conv_geom *g, const float *x, const float *w,
                          const float *dy, float *dx, float *dw, float *db, void *ws,
                          const eo_exec *ex)
{
    fconv f;
    fconv_sizes(g, 0, &f);
    if (g->N <= 0 || g->Co <= 0 || f.P <= 0 || (!dx && !dw && !db))
        return;
    f.x = x, f.w = w, f.bias = NULL, f.y = NULL;
    f.dy = dy, f.dx = dx, f.dw = dw, f.db = db;
    fconv_backward(&f, ws, ex);
}

void eo_k_conv2d_backward16(const eo_conv_geom *g, int dt, const void *x, const float *w,
                            const void *dy, void *dx, float *dw, float *db, void *ws,
                            const eo_exec *ex)
{
    fconv f;
    fconv_sizes(g, 1, &f);
    if (g->N <= 0 || g->Co <= 0 || f.P <= 0 || (!dx && !dw && !db))
        return;
    f.x = NULL, f.w = w, f.bias = NULL, f.y = NULL;
    f.dy = NULL, f.dx = NULL, f.dw = dw, f.db = db;
    f.dt = dt;
    f.x16 = x, f.dy16 = dy, f.dx16 = dx;
    fconv_backward(&f, ws, ex);
}

/* ---- max pooling ------------------------------------------------------- */
typedef struct pool_args {
    int64_t H, W, k;
    const float *x, *dy;
    float *y, *dx;
    int32_t *arg;
    const int32_t *arg_in;
    int relu; /* pool relu(x), the ReLU applied to each tap as it is read */
} pool_args;

/* ReLU as eo_k_unary computes it, scalar and vector alike: x < 0 gives
 * +0, anything else (-0 and NaN included) passes through. The fused
 * ReLU + pool applies exactly this to each tap, so it equals the two ops
 * run one after the other, bit for bit. */
static inline float pool_relu(float v) { return v < 0.0f ? 0.0f : v; }

/* Does e replace the running max m? PyTorch's max_pool2d rule, `e > m
 * or e is NaN`: the first of equal maxima wins, a NaN beats every
 * number, and each later NaN replaces the one before, so with several
 * NaNs in a window the last one gets the gradient (no number replaces a
 * NaN: e > NaN is false). Written as one expression so that the compiler
 * makes it a select, not a branch: on real activations the comparison is
 * a coin toss, and mispredicted branches made this loop several times
 * slower than its memory traffic. */
static inline int pool_takes(float m, float e) { return (e > m) | (e != e); }

#if defined(__AVX2__)
#include <immintrin.h>
/* The first `n` (<= 8) lanes of 0..7 as an all-ones mask. */
static inline __m256i pool_lanes(int64_t n)
{
    return _mm256_cmpgt_epi32(_mm256_set1_epi32((int)n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

/* The 2x2 windows of output row oh, eight at a time: the two input rows
 * are loaded 16 floats each and split into even and odd columns, so the
 * four taps of eight windows are four vectors, visited in the scalar
 * order (row 0: left, right; row 1: left, right) with the same rule. The
 * last, partial group loads and stores under masks (nothing past the
 * row's 2*OW inputs is read), so every window takes this path. */
static void pool2_row_simd(const float *x, int64_t W, int64_t oh, int64_t OW, float *y,
                           int32_t *arg, int relu)
{
    const float *r0 = x + 2 * oh * W, *r1 = r0 + W;
    const __m256i lane2 = _mm256_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14);
    const int32_t off[4] = { 0, 1, (int32_t)W, (int32_t)W + 1 };
    for (int64_t ow = 0; ow < OW; ow += 8) {
        const int64_t n = OW - ow < 8 ? OW - ow : 8;
        const __m256i mlo = pool_lanes(2 * n), mhi = pool_lanes(2 * n - 8);
        __m256 t[4];
        for (int u = 0; u < 2; u++) {
            const float *r = (u ? r1 : r0) + 2 * ow;
            __m256 lo, hi;
            if (n == 8) {
                lo = _mm256_loadu_ps(r);
                hi = _mm256_loadu_ps(r + 8);
            } else {
                lo = _mm256_maskload_ps(r, mlo);
                hi = _mm256_maskload_ps(r + 8, mhi);
            }
            __m256 ev = _mm256_shuffle_ps(lo, hi, 0x88), od = _mm256_shuffle_ps(lo, hi, 0xDD);
            t[2 * u] = _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(ev), 0xD8));
            t[2 * u + 1] = _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(od), 0xD8));
        }
        if (relu) /* max(+0, v) is pool_relu: the second operand when equal or NaN */
            for (int q = 0; q < 4; q++)
                t[q] = _mm256_max_ps(_mm256_setzero_ps(), t[q]);
        const int32_t base = (int32_t)(2 * oh * W + 2 * ow);
        __m256 m = t[0];
        __m256i idx = _mm256_add_epi32(lane2, _mm256_set1_epi32(base));
        for (int q = 1; q < 4; q++) {
            __m256 e = t[q];
            __m256 take =
                _mm256_or_ps(_mm256_cmp_ps(e, m, _CMP_GT_OQ), _mm256_cmp_ps(e, e, _CMP_UNORD_Q));
            m = _mm256_blendv_ps(m, e, take);
            __m256i ie = _mm256_add_epi32(lane2, _mm256_set1_epi32(base + off[q]));
            idx = _mm256_castps_si256(
                _mm256_blendv_ps(_mm256_castsi256_ps(idx), _mm256_castsi256_ps(ie), take));
        }
        if (n == 8) {
            _mm256_storeu_ps(y + ow, m);
            _mm256_storeu_si256((__m256i *)(arg + ow), idx);
        } else {
            const __m256i mo = pool_lanes(n);
            _mm256_maskstore_ps(y + ow, mo, m);
            _mm256_maskstore_epi32((int *)(arg + ow), mo, idx);
        }
    }
}
#endif

static void maxpool_body(void *arg, int64_t p0, int64_t p1, int worker)
{
    (void)worker;
    const pool_args *a = arg;
    const int64_t H = a->H, W = a->W, k = a->k, OH = H / k, OW = W / k;
    for (int64_t p = p0; p < p1; p++) {
        const float *x = a->x + p * H * W;
        for (int64_t oh = 0; oh < OH; oh++) {
            float *y = a->y + (p * OH + oh) * OW;
            int32_t *am = a->arg + (p * OH + oh) * OW;
#if defined(__AVX2__)
            if (k == 2) {
                pool2_row_simd(x, W, oh, OW, y, am, a->relu);
                continue;
            }
#endif
            for (int64_t ow = 0; ow < OW; ow++) {
                int64_t best = oh * k * W + ow * k;
                float m = a->relu ? pool_relu(x[best]) : x[best];
                for (int64_t u = 0; u < k; u++)
                    for (int64_t v = 0; v < k; v++) {
                        const int64_t at = (oh * k + u) * W + ow * k + v;
                        const float e = a->relu ? pool_relu(x[at]) : x[at];
                        const int t = pool_takes(m, e);
                        m = t ? e : m;
                        best = t ? at : best;
                    }
                y[ow] = m;
                am[ow] = (int32_t)best;
            }
        }
    }
}

static void maxpool(int relu, int64_t P, int64_t H, int64_t W, int64_t k, const float *x,
                    float *y, int32_t *arg, const eo_exec *ex)
{
    const eo_par *par = eo_exec_par(ex);
    pool_args a = {H, W, k, x, NULL, y, NULL, arg, NULL, relu};
    eo_par_for(eo_par_if(par, P * H * W), P, maxpool_body, &a);
}

void eo_k_maxpool2d(int64_t P, int64_t H, int64_t W, int64_t k, const float *x, float *y,
                    int32_t *arg, const eo_exec *ex)
{
    maxpool(0, P, H, W, k, x, y, arg, ex);
}

void eo_k_relu_maxpool2d(int64_t P, int64_t H, int64_t W, int64_t k, const float *x, float *y,
                         int32_t *arg, const eo_exec *ex)
{
    maxpool(1, P, H, W, k, x, y, arg, ex);
}

/* The term output o's dy becomes at its argmax: dy for the pool alone;
 * after the ReLU's backward, (x <= 0 ? +0 : g) with g = +0 + dy the
 * pool's fresh gradient of the ReLU's output, which is never -0; a NaN
 * x passes g, as PyTorch's relu backward does (it tests its output:
 * NaN <= 0 is false). The argmax's x <= 0 exactly when the pooled y =
 * relu(x) <= 0, NaN where x is NaN, so the mask comes from y, read in
 * order beside dy, rather than from x, which would be read a line per
 * window. */
static inline float pool_term(const pool_args *a, int64_t o)
{
    return a->relu ? (a->x[o] <= 0.0f ? 0.0f : 0.0f + a->dy[o]) : a->dy[o];
}

static void maxpool_backward_body(void *arg, int64_t p0, int64_t p1, int worker)
{
    (void)worker;
    const pool_args *a = arg;
    const int64_t plane = a->H * a->W, plane_out = (a->H / a->k) * (a->W / a->k);
    for (int64_t p = p0; p < p1; p++) {
        float *dx = a->dx + p * plane;
        if (a->relu) /* the ReLU backward adds +0 where the pool sent nothing */
            for (int64_t i = 0; i < plane; i++)
                dx[i] += 0.0f;
        for (int64_t o = p * plane_out; o < (p + 1) * plane_out; o++)
            dx[a->arg_in[o]] += pool_term(a, o);
    }
}

/* The _set form: each worker zeroes its own planes, then scatters into
 * them while they are still in cache; no zero-filled dx is read back
 * from memory. +0 + dy keeps the add's sign of zero (-0 becomes +0). */
static void maxpool_backward_set_body(void *arg, int64_t p0, int64_t p1, int worker)
{
    (void)worker;
    const pool_args *a = arg;
    const int64_t plane = a->H * a->W, plane_out = (a->H / a->k) * (a->W / a->k);
    for (int64_t p = p0; p < p1; p++) {
        float *dx = a->dx + p * plane;
        memset(dx, 0, (size_t)plane * sizeof *dx);
        for (int64_t o = p * plane_out; o < (p + 1) * plane_out; o++)
            dx[a->arg_in[o]] = 0.0f + pool_term(a, o);
    }
}

/* y: the fused forward's output (relu only); it travels in pool_args.x. */
static void maxpool_backward(int set, int relu, int64_t P, int64_t H, int64_t W, int64_t k,
                             const float *y, const float *dy, const int32_t *arg, float *dx,
                             const eo_exec *ex)
{
    const eo_par *par = eo_exec_par(ex);
    pool_args a = {H, W, k, y, dy, NULL, dx, NULL, arg, relu};
    eo_par_for(eo_par_if(par, P * H * W), P,
               set ? maxpool_backward_set_body : maxpool_backward_body, &a);
}

void eo_k_maxpool2d_backward(int64_t P, int64_t H, int64_t W, int64_t k, const float *dy,
                             const int32_t *arg, float *dx, const eo_exec *ex)
{
    maxpool_backward(0, 0, P, H, W, k, NULL, dy, arg, dx, ex);
}

void eo_k_maxpool2d_backward_set(int64_t P, int64_t H, int64_t W, int64_t k, const float *dy,
                                 const int32_t *arg, float *dx, const eo_exec *ex)
{
    maxpool_backward(1, 0, P, H, W, k, NULL, dy, arg, dx, ex);
}

void eo_k_relu_maxpool2d_backward(int64_t P, int64_t H, int64_t W, int64_t k, const float *y,
                                  const float *dy, const int32_t *arg, float *dx,
                                  const eo_exec *ex)
{
    maxpool_backward(0, 1, P, H, W, k, y, dy, arg, dx, ex);
}

void eo_k_relu_maxpool2d_backward_set(int64_t P, int64_t H, int64_t W, int64_t k,
                                      const float *y, const float *dy, const int32_t *arg,
                                      float *dx, const eo_exec *ex)
{
    maxpool_backward(1, 1, P, H, W, k, y, dy, arg, dx, ex);
}
