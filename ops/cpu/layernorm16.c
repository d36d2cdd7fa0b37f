/* ops/cpu/layernorm16.c — layer normalisation on bf16 / f16 storage,
 * forward and backward (eo_k_layernorm16_fn, eo_k_layernorm_backward16_fn,
 * eo_k_rows_ws16_fn in ops/kernels.h). x, w, b, y, dy, dx, dw, db are
 * 16-bit; mean and rstd f32.
 *
 * Forward and dx: blocks of rows (block16.h) widened into the worker's f32
 * buffers (w and b widened once per worker), run through the f32 kernel of
 * layernorm.c, rounded once. Each row's arithmetic is the f32 kernel's, so
 * y, mean, rstd and dx are bit for bit the f32 results on the widened
 * values (y and dx rounded to nearest even), for any thread count.
 *
 * dw and db are sums over all rows. The f32 kernel sums each worker's rows
 * into its own partial and adds the partials in worker order, so its
 * sums change in the last bits with the thread count. Here the rows are
 * not split at all for them: the threads get blocks of columns, and each
 * walks every row in order for its columns, widening just those, with the
 * f32 kernel's expressions (lnb_sums8 with AVX2, ln_backward_row without):
 * partial += dy * xhat (one fused multiply-add on the AVX2 path), partial
 * += dy, xhat = (x - mean) * rstd. Then dw += partial, in f32, rounded
 * once. That is the f32 kernel on one thread, exactly, whatever the
 * thread count here. It reads x and dy a second time (2 bytes a value
 * each); the f32 kernel's partials cost a read of them too. */
#include <string.h>
#include "ops/kernels.h"
#include "ops/cpu/block16.h"
#include "ops/cpu/grain.h"
#include "ops/cpu/half.h"
#include "ops/cpu/simd.h"

#define PCOLS 64 /* columns of dw, db per work item */

typedef struct ln16_job {
    int dt;
    int64_t rows, cols, R;
    const uint16_t *x, *w, *b, *dy;
    float eps;
    const float *mean_in, *rstd_in;
    uint16_t *y, *dx, *dw, *db;
    float *mean, *rstd;
    void *ws;
    size_t per;
} ln16_job;

/* A worker's slice: three blocks (x, y; or x, dy, dx), then w and b. */
static size_t per_worker(int64_t R, int64_t cols)
{
    return 3 * eo_block16_bytes(R * cols) + 2 * eo_block16_bytes(cols);
}

size_t eo_k_layernorm_ws16(int64_t rows, int64_t cols, int nthreads)
{
    return eo_block16_ws(nthreads, per_worker(eo_block16_rows(rows, cols), cols));
}

/* The worker's three blocks and its widened w, b (NULL where absent). */
static void slices(const ln16_job *J, int worker, float *blk[3], float **w, float **b)
{
    unsigned char *s = eo_block16_slice(J->ws, J->per, worker);
    const size_t bb = eo_block16_bytes(J->R * J->cols), cb = eo_block16_bytes(J->cols);
    for (int k = 0; k < 3; k++)
        blk[k] = (float *)(void *)(s + (size_t)k * bb);
    *w = J->w ? (float *)(void *)(s + 3 * bb) : NULL;
    *b = J->b ? (float *)(void *)(s + 3 * bb + cb) : NULL;
    if (*w)
        eo_half_to_f32(J->dt, J->cols, J->w, *w);
    if (*b)
        eo_half_to_f32(J->dt, J->cols, J->b, *b);
}

static void ln16_forward(void *arg, int64_t b0, int64_t b1, int worker)
{
    const ln16_job *J = arg;
    float *blk[3], *w, *b;
    slices(J, worker, blk, &w, &b);
    for (int64_t k = b0; k < b1; k++) {
        const int64_t r0 = k * J->R, n = J->rows - r0 < J->R ? J->rows - r0 : J->R;
        const int64_t off = r0 * J->cols, len = n * J->cols;
        eo_half_to_f32(J->dt, len, J->x + off, blk[0]);
        eo_k_layernorm(n, J->cols, blk[0], w, b, J->eps, blk[1], J->mean + r0, J->rstd + r0,
                       NULL);
        eo_f32_to_half(J->dt, len, blk[1], J->y + off);
    }
}

static void ln16_dx(void *arg, int64_t b0, int64_t b1, int worker)
{
    const ln16_job *J = arg;
    float *blk[3], *w, *b;
    slices(J, worker, blk, &w, &b);
    for (int64_t k = b0; k < b1; k++) {
        const int64_t r0 = k * J->R, n = J->rows - r0 < J->R ? J->rows - r0 : J->R;
        const int64_t off = r0 * J->cols, len = n * J->cols;
        eo_half_to_f32(J->dt, len, J->x + off, blk[0]);
        eo_half_to_f32(J->dt, len, J->dy + off, blk[1]);
        eo_half_to_f32(J->dt, len, J->dx + off, blk[2]);
        /* no dw, db here: no partials, no scratch */
        eo_k_layernorm_backward(n, J->cols, blk[0], w, J->mean_in + r0, J->rstd_in + r0, blk[1],
                                blk[2], NULL, NULL, NULL, NULL);
        eo_f32_to_half(J->dt, len, blk[2], J->dx + off);
    }
}

/* pw += dy * xhat, pb += dy over n columns of one row (either may be
 * NULL): the f32 kernel's expressions for its partials. */
static void param_terms(int64_t n, const float *x, const float *dy, float mean, float rstd,
                        float *pw, float *pb)
{
#ifdef EO_AVX2
    const __m256 mu = _mm256_set1_ps(mean), rs = _mm256_set1_ps(rstd);
    const __m256i all = _mm256_set1_epi32(-1);
    for (int64_t j = 0; j < n; j += 8) {
        const int whole = j + 8 <= n;
        const __m256i m = whole ? all : eo_v8_mask(n - j);
        const __m256 g0 = eo_v8_ld(dy + j, whole, m, 0.0f);
        const __m256 xh = _mm256_mul_ps(_mm256_sub_ps(eo_v8_ld(x + j, whole, m, 0.0f), mu), rs);
        if (pw)
            eo_v8_st(pw + j, whole, m, _mm256_fmadd_ps(g0, xh, eo_v8_ld(pw + j, whole, m, 0.0f)));
        if (pb)
            eo_v8_st(pb + j, whole, m, _mm256_add_ps(g0, eo_v8_ld(pb + j, whole, m, 0.0f)));
    }
#else
    for (int64_t j = 0; j < n; j++) {
        const float xh = (x[j] - mean) * rstd;
        if (pw)
            pw[j] += dy[j] * xh;
        if (pb)
            pb[j] += dy[j];
    }
#endif
}

/* g[0..n) += p, in f32, rounded once. */
static void add_partial(int dt, int64_t n, const float *p, uint16_t *g, float *tmp)
{
    eo_half_to_f32(dt, n, g, tmp);
    for (int64_t j = 0; j < n; j++)
        tmp[j] += p[j];
    eo_f32_to_half(dt, n, tmp, g);
}

static void ln16_params(void *arg, int64_t i0, int64_t i1, int worker)
{
    const ln16_job *J = arg;
    float x[PCOLS], dy[PCOLS], pw[PCOLS], pb[PCOLS];
    (void)worker;
    for (int64_t it = i0; it < i1; it++) {
        const int64_t c0 = it * PCOLS, n = J->cols - c0 < PCOLS ? J->cols - c0 : PCOLS;
        memset(pw, 0, sizeof pw);
        memset(pb, 0, sizeof pb);
        for (int64_t r = 0; r < J->rows; r++) {
            const int64_t off = r * J->cols + c0;
            eo_half_to_f32(J->dt, n, J->x + off, x);
            eo_half_to_f32(J->dt, n, J->dy + off, dy);
            param_terms(n, x, dy, J->mean_in[r], J->rstd_in[r], J->dw ? pw : NULL,
                        J->db ? pb : NULL);
        }
        if (J->dw)
            add_partial(J->dt, n, pw, J->dw + c0, x);
        if (J->db)
            add_partial(J->dt, n, pb, J->db + c0, x);
    }
}

static void ln16_run(ln16_job *J, eo_par_body body, const eo_exec *ex)
{
    J->R = eo_block16_rows(J->rows, J->cols);
    J->per = per_worker(J->R, J->cols);
    eo_par_for(eo_par_if(eo_exec_par(ex), J->rows * J->cols), (J->rows + J->R - 1) / J->R, body,
               J);
}

void eo_k_layernorm16(int dt, int64_t rows, int64_t cols, const void *x, const void *w,
                      const void *b, float eps, void *y, float *mean, float *rstd, void *ws,
                      const eo_exec *ex)
{
    if (rows <= 0 || cols <= 0)
        return; /* no row has a mean; the core never asks */
    ln16_job J = {0};
    J.dt = dt;
    J.rows = rows;
    J.cols = cols;
    J.x = x;
    J.w = w;
    J.b = b;
    J.eps = eps;
    J.y = y;
    J.mean = mean;
    J.rstd = rstd;
    J.ws = ws;
    ln16_run(&J, ln16_forward, ex);
}

void eo_k_layernorm_backward16(int dt, int64_t rows, int64_t cols, const void *x, const void *w,
                               const float *mean, const float *rstd, const void *dy, void *dx,
                               void *dw, void *db, void *ws, const eo_exec *ex)
{
    if (rows <= 0 || cols <= 0)
        return;
    ln16_job J = {0};
    J.dt = dt;
    J.rows = rows;
    J.cols = cols;
    J.x = x;
    J.w = w;
    J.dy = dy;
    J.mean_in = mean;
    J.rstd_in = rstd;
    J.dx = dx;
    J.dw = dw;
    J.db = db;
    J.ws = ws;
    if (dx)
        ln16_run(&J, ln16_dx, ex);
    if (dw || db)
        eo_par_for(eo_par_if(eo_exec_par(ex), rows * cols), (cols + PCOLS - 1) / PCOLS,
                   ln16_params, &J);
}
