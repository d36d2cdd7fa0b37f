/* ops/cpu/layernorm.c — layer normalisation over the last axis, forward and
 * backward.
 *
 * Forward, per row: the mean and the variance around it, then the output;
 * three passes over the row, but the later passes find it in cache, so
 * memory sees one read and one write. The arithmetic is light, so the
 * AVX2 path also hides memory latency by hand: while the variance pass
 * runs from cache it asks for y's lines for writing, and while y is
 * written it asks for the next row of x (the backward likewise asks for
 * dx, then the next rows of x and dy). A large y (see EO_STREAM_MIN_BYTES
 * in simd.h) is instead written with streaming stores, which skip reading
 * y's lines at all, one row behind: see ln_rows.
 *
 * The sums are taken of x - x[0] rather than of x: for a row like
 * 1e4 + noise the shifted values are noise-sized, so float sums keep the
 * noise's digits, and the centred value (x - x[0]) - d is formed without
 * the rounding of a stored mean. A constant row gives exactly 0 there,
 * hence y = b exactly.
 *
 * Backward, per row: two sums (of g and of g * xhat), then dx. dw and db
 * are sums over all rows; each worker adds its rows into its own slice of
 * ws, and the slices are added into dw and db in worker order at the end.
 * That order is fixed for a given thread count, so results repeat
 * exactly run to run, but dw and db change in their last bits when the
 * thread count changes (the rows are grouped differently). dx never does. */
#include <math.h>
#include <string.h>
#include "ops/cpu/grain.h"
#include "ops/kernels.h"
#include "ops/cpu/sum8.h"
#include "ops/cpu/simd.h"

typedef struct ln_args {
    int64_t rows, cols;
    const float *x, *w, *b, *mean_in, *rstd_in, *dy;
    float eps;
    float *y, *mean, *rstd, *dx;
    float *part; /* backward: per worker, dw partial then db partial */
    int want_dw, want_db;
    int stream; /* forward: y is big enough to stream (simd.h) */
} ln_args;

#ifdef EO_AVX2
/* Sums over a row of c = x - x0 (pass 1) or of (c - d)^2 (pass 2); lanes
 * past the end are loaded as x0 and d so they add 0. */
static inline __m256 ln_sum8(const float *x, int64_t j, int whole, __m256i m, __m256 x0, __m256 d,
                             int squares, __m256 acc)
{
    const __m256 c = _mm256_sub_ps(eo_v8_ld(x + j, whole, m, 0.0f), x0);
    const __m256 c2 = _mm256_sub_ps(c, d);
    if (!whole) {
        const __m256 keep = _mm256_castsi256_ps(m);
        return squares ? _mm256_fmadd_ps(_mm256_and_ps(c2, keep), _mm256_and_ps(c2, keep), acc)
                       : _mm256_add_ps(acc, _mm256_and_ps(c, keep));
    }
    return squares ? _mm256_fmadd_ps(c2, c2, acc) : _mm256_add_ps(acc, c);
}

/* y = ((x - x0) - d) * rstd * w + b for 8 columns. */
static inline void ln_out8(const float *x, const float *w, const float *b, float *y, int64_t j,
                           int whole, __m256i m, __m256 x0, __m256 d, __m256 rs)
{
    const __m256 xh = _mm256_mul_ps(_mm256_sub_ps(_mm256_sub_ps(eo_v8_ld(x + j, whole, m, 0.0f), x0), d), rs);
    const __m256 wv = w ? eo_v8_ld(w + j, whole, m, 0.0f) : _mm256_set1_ps(1.0f);
    const __m256 bv = b ? eo_v8_ld(b + j, whole, m, 0.0f) : _mm256_setzero_ps();
    eo_v8_st(y + j, whole, m, _mm256_fmadd_ps(xh, wv, bv));
}

/* A row whose output waits to be written while the next row's mean is
 * summed (see ln_rows). */
typedef struct ln_out_row {
    const float *x;
    float *y; /* NULL: none pending */
    __m256 x0, d, rs;
    int64_t head, done; /* as in softmax.c: y's unaligned head; [head, done) written */
} ln_out_row;

/* Columns [from, to) of the pending row, whole vectors in `mode`. */
static void ln_out_span(const ln_args *a, const ln_out_row *o, int64_t from, int64_t to, int mode)
{
    const __m256i all = _mm256_set1_epi32(-1);
    for (int64_t j = from; j < to; j += 8) {
        const int whole = j + 8 <= to;
        ln_out8(o->x, a->w, a->b, o->y, j, whole ? mode : 0, whole ? all : eo_v8_mask(to - j), o->x0,
                o->d, o->rs);
    }
}

static void ln_out_finish(const ln_args *a, ln_out_row *o, int mode)
{
    if (!o->y)
        return;
    ln_out_span(a, o, 0, o->head, 1);
    ln_out_span(a, o, o->done, a->cols, mode);
    o->y = NULL;
}

/* Rows [r0, r1). When y is streamed (too large for the cache), they are
 * pipelined like softmax's: the walk that sums row r (from cache: it was
 * prefetched) also writes row r - 1's output, 16 columns per 16, and
 * prefetches row r + 1, so memory reads one row while it writes another,
 * as in a copy, while the sums are computed; the variance walk that
 * follows finds row r in cache. Otherwise each row's output is written
 * right after its variance walk, which measured faster when everything
 * stays in cache. `mode` (1, or EO_V8_STREAM) is a constant in each of
 * the two calls, so the stores in the loop are a single instruction. */
EO_V8_INLINE void ln_rows(const ln_args *a, int64_t r0, int64_t r1, int mode)
{
    const int64_t C = a->cols;
    const __m256 zero = _mm256_setzero_ps();
    const __m256i all = _mm256_set1_epi32(-1), tail = eo_v8_mask(C % 8);
    const int64_t body = C - C % 8;
    ln_out_row o = {0};
    for (int64_t r = r0; r < r1; r++) {
        const float *x = a->x + r * C, *next = r + 1 < r1 ? x + C : NULL;
        float *y = a->y + r * C;
        const __m256 x0 = _mm256_set1_ps(x[0]);
        __m256 s0 = zero, s1 = zero;
        int64_t j = 0;
        for (; j + 16 <= body; j += 16) {
            if (next && mode == EO_V8_STREAM)
                _mm_prefetch((const char *)(next + j), _MM_HINT_T1);
            if (o.y && o.done + 16 <= C) {
                ln_out8(o.x, a->w, a->b, o.y, o.done, mode, all, o.x0, o.d, o.rs);
                ln_out8(o.x, a->w, a->b, o.y, o.done + 8, mode, all, o.x0, o.d, o.rs);
                o.done += 16;
            }
            s0 = ln_sum8(x, j, 1, all, x0, zero, 0, s0);
            s1 = ln_sum8(x, j + 8, 1, all, x0, zero, 0, s1);
        }
        ln_out_finish(a, &o, mode);
        if (j < body)
            s0 = ln_sum8(x, j, 1, all, x0, zero, 0, s0);
        if (body < C)
            s1 = ln_sum8(x, body, 0, tail, x0, zero, 0, s1);
        const float d = eo_v8_hsum(_mm256_add_ps(s0, s1)) / (float)C;
        const __m256 vd = _mm256_set1_ps(d);
        s0 = s1 = zero;
        for (j = 0; j + 16 <= body; j += 16) {
            /* Fetching y's lines for writing is what a streamed y avoids. */
            if (mode != EO_V8_STREAM)
                __builtin_prefetch(y + j, 1, 2);
            s0 = ln_sum8(x, j, 1, all, x0, vd, 1, s0);
            s1 = ln_sum8(x, j + 8, 1, all, x0, vd, 1, s1);
        }
        if (j < body)
            s0 = ln_sum8(x, j, 1, all, x0, vd, 1, s0);
        if (body < C)
            s1 = ln_sum8(x, body, 0, tail, x0, vd, 1, s1);
        const float var = eo_v8_hsum(_mm256_add_ps(s0, s1)) / (float)C;
        const float rs = 1.0f / sqrtf(var + a->eps);
        a->mean[r] = x[0] + d;
        a->rstd[r] = rs;
        const __m256 vr = _mm256_set1_ps(rs);
        if (mode != EO_V8_STREAM) { /* in cache: the row goes out at once */
            for (j = 0; j < body; j += 8) {
                if (next && j % 16 == 0)
                    _mm_prefetch((const char *)(next + j), _MM_HINT_T1);
                ln_out8(x, a->w, a->b, y, j, 1, all, x0, vd, vr);
            }
            if (body < C)
                ln_out8(x, a->w, a->b, y, body, 0, tail, x0, vd, vr);
            continue;
        }
        o.x = x;
        o.y = y;
        o.x0 = x0;
        o.d = vd;
        o.rs = vr;
        o.head = eo_v8_stream_head(y, C);
        o.done = o.head;
    }
    ln_out_finish(a, &o, mode);
}
#else
static void ln_row(const ln_args *a, int64_t r)
{
    const int64_t C = a->cols;
    const float *x = a->x + r * C;
    float *y = a->y + r * C;
    const float x0 = x[0];
    eo_sum8 acc;
    eo_sum8_init(&acc);
    for (int64_t j = 0; j < C; j++)
        eo_sum8_add(&acc, j, x[j] - x0);
    const float d = eo_sum8_total(&acc) / (float)C;
    eo_sum8_init(&acc);
    for (int64_t j = 0; j < C; j++) {
        const float c = (x[j] - x0) - d;
        eo_sum8_add(&acc, j, c * c);
    }
    const float v = eo_sum8_total(&acc);
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
#ifdef EO_AVX2
    if (((const ln_args *)arg)->stream) {
        ln_rows(arg, r0, r1, EO_V8_STREAM);
        _mm_sfence();
    } else {
        ln_rows(arg, r0, r1, 1);
    }
#else
    for (int64_t r = r0; r < r1; r++)
        ln_row(arg, r);
#endif
}

void eo_k_layernorm(int64_t rows, int64_t cols, const float *x, const float *w, const float *b,
                    float eps, float *y, float *mean, float *rstd, const eo_exec *ex)
{
    const eo_par *par = eo_exec_par(ex);
    if (cols <= 0)
        return; /* no row has a mean; the core never asks */
    ln_args a = {0};
    a.rows = rows;
    a.cols = cols;
    a.x = x;
    a.w = w;
    a.b = b;
    a.eps = eps;
    a.y = y;
    a.mean = mean;
    a.rstd = rstd;
#ifdef EO_AVX2
    a.stream = eo_v8_stream_worth(rows * cols);
#endif
    eo_par_for(eo_par_if(par, rows * cols), rows, ln_body, &a);
}

/* ---- backward ---------------------------------------------------------- */
#ifdef EO_AVX2
/* Pass 1 of the backward for 8 columns: accumulate g and g * xhat (lanes
 * past the end load 0 and add 0), and this worker's dw, db partials. */
static inline void lnb_sums8(const float *x, const float *dy, const float *w, float *dwp, float *dbp,
                             int64_t j, int whole, __m256i m, __m256 mu, __m256 rs, __m256 *sg,
                             __m256 *sgx)
{
    const __m256 g0 = eo_v8_ld(dy + j, whole, m, 0.0f);
    const __m256 xh = _mm256_mul_ps(_mm256_sub_ps(eo_v8_ld(x + j, whole, m, 0.0f), mu), rs);
    const __m256 g = w ? _mm256_mul_ps(g0, eo_v8_ld(w + j, whole, m, 0.0f)) : g0;
    *sg = _mm256_add_ps(*sg, g);
    *sgx = _mm256_fmadd_ps(g, xh, *sgx);
    if (dwp)
        eo_v8_st(dwp + j, whole, m, _mm256_fmadd_ps(g0, xh, eo_v8_ld(dwp + j, whole, m, 0.0f)));
    if (dbp)
        eo_v8_st(dbp + j, whole, m, _mm256_add_ps(g0, eo_v8_ld(dbp + j, whole, m, 0.0f)));
}

/* Pass 2: dx += rstd * (g - mean(g) - xhat * mean(g xhat)). */
static inline void lnb_dx8(const float *x, const float *dy, const float *w, float *dx, int64_t j,
                           int whole, __m256i m, __m256 mu, __m256 rs, __m256 mg, __m256 mgx)
{
    const __m256 g0 = eo_v8_ld(dy + j, whole, m, 0.0f);
    const __m256 xh = _mm256_mul_ps(_mm256_sub_ps(eo_v8_ld(x + j, whole, m, 0.0f), mu), rs);
    const __m256 g = w ? _mm256_mul_ps(g0, eo_v8_ld(w + j, whole, m, 0.0f)) : g0;
    const __m256 t = _mm256_fnmadd_ps(xh, mgx, _mm256_sub_ps(g, mg));
    eo_v8_st(dx + j, whole, m, _mm256_fmadd_ps(rs, t, eo_v8_ld(dx + j, whole, m, 0.0f)));
}

static void ln_backward_row(const ln_args *a, int64_t r, float *dwp, float *dbp)
{
    const int64_t C = a->cols, body = C - C % 8;
    const float *x = a->x + r * C, *dy = a->dy + r * C, *w = a->w;
    const __m256 mu = _mm256_set1_ps(a->mean_in[r]), rs = _mm256_set1_ps(a->rstd_in[r]);
    const __m256i all = _mm256_set1_epi32(-1), tail = eo_v8_mask(C % 8);
    __m256 sg = _mm256_setzero_ps(), sgx = _mm256_setzero_ps();
    float *dx = a->dx ? a->dx + r * C : NULL;
    int64_t j;
    for (j = 0; j < body; j += 8) {
        if (dx && j % 16 == 0)
            __builtin_prefetch(dx + j, 1, 2);
        lnb_sums8(x, dy, w, dwp, dbp, j, 1, all, mu, rs, &sg, &sgx);
    }
    if (body < C)
        lnb_sums8(x, dy, w, dwp, dbp, body, 0, tail, mu, rs, &sg, &sgx);
    if (!dx)
        return;
    const __m256 mg = _mm256_set1_ps(eo_v8_hsum(sg) / (float)C);
    const __m256 mgx = _mm256_set1_ps(eo_v8_hsum(sgx) / (float)C);
    const int more = r + 1 < a->rows;
    for (j = 0; j < body; j += 8) {
        if (more && j % 16 == 0) {
            __builtin_prefetch(x + C + j, 0, 2);
            __builtin_prefetch(dy + C + j, 0, 2);
        }
        lnb_dx8(x, dy, w, dx, j, 1, all, mu, rs, mg, mgx);
    }
    if (body < C)
        lnb_dx8(x, dy, w, dx, body, 0, tail, mu, rs, mg, mgx);
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
                             float *dw, float *db, void *ws, const eo_exec *ex)
{
    const eo_par *par = eo_exec_par(ex);
    par = eo_par_if(par, rows * cols);
    const int nt = eo_par_threads(par);
    ln_args a = {0};
    a.rows = rows;
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
