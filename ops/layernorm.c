/* ops/layernorm.c — layer normalisation over the last axis, forward and
 * backward.
 *
 * Forward, per row: the mean and the variance around it, then the output;
 * three passes over the row, but a row is a few KiB and stays in L1, so
 * memory sees one read and one write. The sums are taken of x - x[0]
 * rather than of x: for a row like 1e4 + noise the shifted values are
 * noise-sized, so float sums keep the noise's digits, and the centred
 * value (x - x[0]) - d is formed without the rounding of a stored mean.
 * A constant row gives exactly 0 there, hence y = b exactly.
 *
 * Backward, per row: two sums (of g and of g * xhat), then dx. dw and db
 * are sums over all rows; each worker adds its rows into its own slice of
 * ws, and the slices are added into dw and db in worker order at the end.
 * That order is fixed for a given thread count, so results repeat
 * exactly run to run, but dw and db change in their last bits when the
 * thread count changes (the rows are grouped differently). dx never does. */
#include <math.h>
#include <string.h>
#include "ops/grain.h"
#include "ops/kernels.h"
#include "ops/simd.h"

typedef struct ln_args {
    int64_t cols;
    const float *x, *w, *b, *mean_in, *rstd_in, *dy;
    float eps;
    float *y, *mean, *rstd, *dx;
    float *part; /* backward: per worker, dw partial then db partial */
    int want_dw, want_db;
} ln_args;

#ifdef EO_AVX2
static void ln_row(const ln_args *a, int64_t r)
{
    const int64_t C = a->cols;
    const float *x = a->x + r * C;
    float *y = a->y + r * C;
    const __m256 x0 = _mm256_set1_ps(x[0]), one = _mm256_set1_ps(1.0f), zero = _mm256_setzero_ps();
    __m256 s0 = zero, s1 = zero;
    int64_t j = 0;
    for (; j + 16 <= C; j += 16) {
        s0 = _mm256_add_ps(s0, _mm256_sub_ps(_mm256_loadu_ps(x + j), x0));
        s1 = _mm256_add_ps(s1, _mm256_sub_ps(_mm256_loadu_ps(x + j + 8), x0));
    }
    for (; j < C; j += 8) {
        const __m256i m = eo_v8_mask(C - j);
        s0 = _mm256_add_ps(s0, _mm256_and_ps(_mm256_sub_ps(_mm256_maskload_ps(x + j, m), x0),
                                             _mm256_castsi256_ps(m)));
    }
    const float d = eo_v8_hsum(_mm256_add_ps(s0, s1)) / (float)C;
    const __m256 vd = _mm256_set1_ps(d);
    s0 = s1 = zero;
    for (j = 0; j + 16 <= C; j += 16) {
        const __m256 c0 = _mm256_sub_ps(_mm256_sub_ps(_mm256_loadu_ps(x + j), x0), vd);
        const __m256 c1 = _mm256_sub_ps(_mm256_sub_ps(_mm256_loadu_ps(x + j + 8), x0), vd);
        s0 = _mm256_fmadd_ps(c0, c0, s0);
        s1 = _mm256_fmadd_ps(c1, c1, s1);
    }
    for (; j < C; j += 8) {
        const __m256i m = eo_v8_mask(C - j);
        const __m256 c = _mm256_and_ps(_mm256_sub_ps(_mm256_sub_ps(_mm256_maskload_ps(x + j, m), x0), vd),
                                       _mm256_castsi256_ps(m));
        s0 = _mm256_fmadd_ps(c, c, s0);
    }
    const float var = eo_v8_hsum(_mm256_add_ps(s0, s1)) / (float)C;
    const float rs = 1.0f / sqrtf(var + a->eps);
    a->mean[r] = x[0] + d;
    a->rstd[r] = rs;
    const __m256 vr = _mm256_set1_ps(rs);
    for (j = 0; j < C; j += 8) {
        const __m256i m = eo_v8_mask(C - j);
        const int whole = j + 8 <= C;
        const __m256 xv = whole ? _mm256_loadu_ps(x + j) : _mm256_maskload_ps(x + j, m);
        const __m256 wv = !a->w ? one : whole ? _mm256_loadu_ps(a->w + j) : _mm256_maskload_ps(a->w + j, m);
        const __m256 bv = !a->b ? zero : whole ? _mm256_loadu_ps(a->b + j) : _mm256_maskload_ps(a->b + j, m);
        const __m256 xh = _mm256_mul_ps(_mm256_sub_ps(_mm256_sub_ps(xv, x0), vd), vr);
        const __m256 out = _mm256_fmadd_ps(xh, wv, bv);
        if (whole)
            _mm256_storeu_ps(y + j, out);
        else
            _mm256_maskstore_ps(y + j, m, out);
    }
}
#else
static void ln_row(const ln_args *a, int64_t r)
{
    const int64_t C = a->cols;
    const float *x = a->x + r * C;
    float *y = a->y + r * C;
    const float x0 = x[0];
    float s = 0.0f;
    for (int64_t j = 0; j < C; j++)
        s += x[j] - x0;
    const float d = s / (float)C;
    float v = 0.0f;
    for (int64_t j = 0; j < C; j++) {
        const float c = (x[j] - x0) - d;
        v += c * c;
    }
    const float rs = 1.0f / sqrtf(v / (float)C + a->eps);
    a->mean[r] = x0 + d;
    a->rstd[r] = rs;
    for (int64_t j = 0; j < C; j++) {
        const float xh = ((x[j] - x0) - d) * rs;
        y[j] = (a->w ? xh * a->w[j] : xh) + (a->b ? a->b[j] : 0.0f);
    }
}
#endif

static void ln_body(void *arg, int64_t r0, int64_t r1, int worker)
{
    (void)worker;
    for (int64_t r = r0; r < r1; r++)
        ln_row(arg, r);
}

void eo_k_layernorm(int64_t rows, int64_t cols, const float *x, const float *w, const float *b,
                    float eps, float *y, float *mean, float *rstd, const eo_par *par)
{
    ln_args a = {0};
    a.cols = cols;
    a.x = x;
    a.w = w;
    a.b = b;
    a.eps = eps;
    a.y = y;
    a.mean = mean;
    a.rstd = rstd;
    eo_par_for(eo_par_if(par, rows * cols), rows, ln_body, &a);
}

/* ---- backward ---------------------------------------------------------- */
#ifdef EO_AVX2
static void ln_backward_row(const ln_args *a, int64_t r, float *dwp, float *dbp)
{
    const int64_t C = a->cols;
    const float *x = a->x + r * C, *dy = a->dy + r * C;
    const __m256 mu = _mm256_set1_ps(a->mean_in[r]), rs = _mm256_set1_ps(a->rstd_in[r]);
    const __m256 one = _mm256_set1_ps(1.0f);
    __m256 sg = _mm256_setzero_ps(), sgx = _mm256_setzero_ps();
    for (int64_t j = 0; j < C; j += 8) {
        const __m256i m = eo_v8_mask(C - j);
        const int whole = j + 8 <= C;
        const __m256 xv = whole ? _mm256_loadu_ps(x + j) : _mm256_maskload_ps(x + j, m);
        const __m256 g0 = whole ? _mm256_loadu_ps(dy + j) : _mm256_maskload_ps(dy + j, m);
        const __m256 wv = !a->w ? one : whole ? _mm256_loadu_ps(a->w + j) : _mm256_maskload_ps(a->w + j, m);
        const __m256 xh = _mm256_mul_ps(_mm256_sub_ps(xv, mu), rs);
        const __m256 g = _mm256_mul_ps(g0, wv);
        sg = _mm256_add_ps(sg, g);
        sgx = _mm256_fmadd_ps(g, xh, sgx);
        if (whole) {
            if (dwp)
                _mm256_storeu_ps(dwp + j, _mm256_fmadd_ps(g0, xh, _mm256_loadu_ps(dwp + j)));
            if (dbp)
                _mm256_storeu_ps(dbp + j, _mm256_add_ps(g0, _mm256_loadu_ps(dbp + j)));
        } else {
            if (dwp)
                _mm256_maskstore_ps(dwp + j, m, _mm256_fmadd_ps(g0, xh, _mm256_maskload_ps(dwp + j, m)));
            if (dbp)
                _mm256_maskstore_ps(dbp + j, m, _mm256_add_ps(g0, _mm256_maskload_ps(dbp + j, m)));
        }
    }
    if (!a->dx)
        return;
    float *dx = a->dx + r * C;
    const __m256 mg = _mm256_set1_ps(eo_v8_hsum(sg) / (float)C);
    const __m256 mgx = _mm256_set1_ps(eo_v8_hsum(sgx) / (float)C);
    for (int64_t j = 0; j < C; j += 8) {
        const __m256i m = eo_v8_mask(C - j);
        const int whole = j + 8 <= C;
        const __m256 xv = whole ? _mm256_loadu_ps(x + j) : _mm256_maskload_ps(x + j, m);
        const __m256 g0 = whole ? _mm256_loadu_ps(dy + j) : _mm256_maskload_ps(dy + j, m);
        const __m256 wv = !a->w ? one : whole ? _mm256_loadu_ps(a->w + j) : _mm256_maskload_ps(a->w + j, m);
        const __m256 d = whole ? _mm256_loadu_ps(dx + j) : _mm256_maskload_ps(dx + j, m);
        const __m256 xh = _mm256_mul_ps(_mm256_sub_ps(xv, mu), rs);
        const __m256 t = _mm256_fnmadd_ps(xh, mgx, _mm256_sub_ps(_mm256_mul_ps(g0, wv), mg));
        const __m256 out = _mm256_fmadd_ps(rs, t, d);
        if (whole)
            _mm256_storeu_ps(dx + j, out);
        else
            _mm256_maskstore_ps(dx + j, m, out);
    }
}
#else
static void ln_backward_row(const ln_args *a, int64_t r, float *dwp, float *dbp)
{
    const int64_t C = a->cols;
    const float *x = a->x + r * C, *dy = a->dy + r * C;
    const float mu = a->mean_in[r], rs = a->rstd_in[r];
    float sg = 0.0f, sgx = 0.0f;
    for (int64_t j = 0; j < C; j++) {
        const float xh = (x[j] - mu) * rs, g = a->w ? dy[j] * a->w[j] : dy[j];
        sg += g;
        sgx += g * xh;
        if (dwp)
            dwp[j] += dy[j] * xh;
        if (dbp)
            dbp[j] += dy[j];
    }
    if (!a->dx)
        return;
    float *dx = a->dx + r * C;
    const float mg = sg / (float)C, mgx = sgx / (float)C;
    for (int64_t j = 0; j < C; j++) {
        const float xh = (x[j] - mu) * rs, g = a->w ? dy[j] * a->w[j] : dy[j];
        dx[j] += rs * (g - mg - xh * mgx);
    }
}
#endif

static void ln_backward_body(void *arg, int64_t r0, int64_t r1, int worker)
{
    const ln_args *a = arg;
    /* ws is only touched (and may be NULL) when dw or db is wanted. */
    float *dwp = NULL, *dbp = NULL;
    if (a->want_dw || a->want_db) {
        dwp = a->want_dw ? a->part + (int64_t)worker * 2 * a->cols : NULL;
        dbp = a->want_db ? a->part + (int64_t)worker * 2 * a->cols + a->cols : NULL;
    }
    for (int64_t r = r0; r < r1; r++)
        ln_backward_row(a, r, dwp, dbp);
}

size_t eo_k_layernorm_backward_ws(int64_t rows, int64_t cols, int nthreads)
{
    (void)rows;
    return (size_t)(nthreads > 1 ? nthreads : 1) * 2 * (size_t)cols * sizeof(float);
}

void eo_k_layernorm_backward(int64_t rows, int64_t cols, const float *x, const float *w,
                             const float *mean, const float *rstd, const float *dy, float *dx,
                             float *dw, float *db, void *ws, const eo_par *par)
{
    par = eo_par_if(par, rows * cols);
    const int nt = eo_par_threads(par);
    ln_args a = {0};
    a.cols = cols;
    a.x = x;
    a.w = w;
    a.mean_in = mean;
    a.rstd_in = rstd;
    a.dy = dy;
    a.dx = dx;
    a.part = ws;
    a.want_dw = dw != NULL;
    a.want_db = db != NULL;
    if (dw || db)
        memset(ws, 0, eo_k_layernorm_backward_ws(rows, cols, nt));
    eo_par_for(par, rows, ln_backward_body, &a);
    for (int t = 0; t < nt && (dw || db); t++) {
        const float *p = a.part + (int64_t)t * 2 * cols;
        for (int64_t j = 0; j < cols; j++) {
            if (dw)
                dw[j] += p[j];
            if (db)
                db[j] += p[cols + j];
        }
    }
}
