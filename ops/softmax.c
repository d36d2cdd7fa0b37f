/* ops/softmax.c — softmax and log_softmax over the last axis, forward and
 * backward.
 *
 * The forward reads each row from memory once and writes it once. With
 * AVX2, a row of up to EO_ROW_CACHED floats is walked three times (max;
 * exp stored and summed; scaled), the later walks hitting cache, so each
 * element costs one exp, the dominant cost. A longer row takes the max
 * and the sum in one read (the online normaliser of simd.h) and pays 2.25
 * exps per element to avoid a second trip to memory. log_softmax never
 * stores exps: y = (x - max) - log(sum). The scalar path is the plain
 * three-pass form. While a row's exps are computed, the next row is
 * prefetched (see eo_v8_row_sumexp).
 *
 * Subtracting the max is what keeps logits of ±1e4 finite. A row of only
 * -inf has no mass: softmax writes 0 and log_softmax -inf, never 0/0.
 *
 * Rows are independent, so the thread hook gets whole rows; each row is
 * computed the same way whoever computes it, and results do not depend on
 * the thread count. */
#include <math.h>
#include "ops/grain.h"
#include "ops/kernels.h"
#include "ops/simd.h"

typedef struct softmax_args {
    int log;
    int64_t cols;
    const float *x, *y, *dy;
    float *out;
} softmax_args;

/* A row with no probability mass: every entry -inf. */
static void empty_row(int log, int64_t cols, float *y)
{
    for (int64_t j = 0; j < cols; j++)
        y[j] = log ? -INFINITY : 0.0f;
}

#ifdef EO_AVX2
/* y *= k over a row. */
static void scale_row(int64_t cols, float *y, float k)
{
    const __m256 vk = _mm256_set1_ps(k);
    int64_t j = 0;
    for (; j + 8 <= cols; j += 8)
        _mm256_storeu_ps(y + j, _mm256_mul_ps(_mm256_loadu_ps(y + j), vk));
    for (; j < cols; j++)
        y[j] *= k;
}

/* The write pass of a long row, 8 columns: y = (x - M) - ls, or
 * y = exp(x - M) * inv. Separate functions, so neither loop carries the
 * other's arithmetic (a select between the two would compute both). */
static inline void log_out8(const float *x, float *y, int64_t j, int whole, __m256i m, float M,
                            float ls)
{
    const __m256 d = _mm256_sub_ps(eo_v8_ld(x + j, whole, m, 0.0f), _mm256_set1_ps(M));
    eo_v8_st(y + j, whole, m, _mm256_sub_ps(d, _mm256_set1_ps(ls)));
}

static inline void exp_out8(const float *x, float *y, int64_t j, int whole, __m256i m, float M,
                            float inv)
{
    const __m256 d = _mm256_sub_ps(eo_v8_ld(x + j, whole, m, 0.0f), _mm256_set1_ps(M));
    eo_v8_st(y + j, whole, m, _mm256_mul_ps(eo_v8_exp_neg(d), _mm256_set1_ps(inv)));
}

/* log_softmax of a row that fits in cache: y = x - M is stored while the
 * exps are summed, then shifted by log S in place. Writing y during the
 * exp-bound pass, as softmax does, hides the cost of fetching y's lines
 * for writing behind the arithmetic. */
static void log_softmax_cached(int64_t cols, const float *x, float *y, const float *next)
{
    const float M = eo_v8_row_max(x, cols);
    if (M == -INFINITY) {
        empty_row(1, cols, y);
        return;
    }
    const __m256 vm = _mm256_set1_ps(M);
    __m256 s = _mm256_setzero_ps();
    int64_t j = 0;
    for (; j + 8 <= cols; j += 8) {
        if (next && j % 16 == 0)
            _mm_prefetch((const char *)(next + j), _MM_HINT_T1);
        const __m256 d = _mm256_sub_ps(_mm256_loadu_ps(x + j), vm);
        _mm256_storeu_ps(y + j, d);
        s = _mm256_add_ps(s, eo_v8_exp_neg(d));
    }
    if (j < cols) {
        const __m256i k = eo_v8_mask(cols - j);
        const __m256 d = _mm256_sub_ps(eo_v8_load_tail(x + j, k, -INFINITY), vm);
        _mm256_maskstore_ps(y + j, k, d);
        s = _mm256_add_ps(s, eo_v8_exp_neg(d));
    }
    const float ls = logf(eo_v8_hsum(s));
    for (j = 0; j + 8 <= cols; j += 8)
        _mm256_storeu_ps(y + j, _mm256_sub_ps(_mm256_loadu_ps(y + j), _mm256_set1_ps(ls)));
    for (; j < cols; j++)
        y[j] -= ls;
}

static void softmax_row(int log, int64_t cols, const float *x, float *y, const float *next)
{
    float M, S;
    if (log && cols <= EO_ROW_CACHED) {
        log_softmax_cached(cols, x, y, next);
        return;
    }
    if (!log && cols <= EO_ROW_CACHED) {
        /* Short rows: exps stored as they are summed, then scaled in
         * place while the row is still in cache: one exp per element. */
        M = eo_v8_row_max(x, cols);
        S = M == -INFINITY ? 0.0f : eo_v8_row_sumexp(x, cols, M, y, next);
        if (S > 0.0f)
            scale_row(cols, y, 1.0f / S);
        else
            empty_row(log, cols, y);
        return;
    }
    eo_v8_row_max_sumexp(x, cols, &M, &S, next);
    if (!(S > 0.0f)) {
        empty_row(log, cols, y);
        return;
    }
    const int64_t body = cols - cols % 8;
    const __m256i all = _mm256_set1_epi32(-1), tail = eo_v8_mask(cols % 8);
    if (log) {
        /* (x - M) - log S, not x - (M + log S), keeps the digits of the
         * entries near the max. */
        const float ls = logf(S);
        for (int64_t j = 0; j < body; j += 8)
            log_out8(x, y, j, 1, all, M, ls);
        if (body < cols)
            log_out8(x, y, body, 0, tail, M, ls);
    } else {
        const float inv = 1.0f / S;
        for (int64_t j = 0; j < body; j += 8)
            exp_out8(x, y, j, 1, all, M, inv);
        if (body < cols)
            exp_out8(x, y, body, 0, tail, M, inv);
    }
}

/* dx += y (dy - s) (softmax) or dy - exp(y) s, 0 where y = -inf
 * (log_softmax), for 8 columns. */
static inline void smb_dx8(int log, const float *y, const float *dy, float *dx, int64_t j, int whole,
                           __m256i m, __m256 s)
{
    const __m256 yv = eo_v8_ld(y + j, whole, m, 0.0f), g = eo_v8_ld(dy + j, whole, m, 0.0f);
    const __m256 d = eo_v8_ld(dx + j, whole, m, 0.0f);
    __m256 r;
    if (log) {
        const __m256 t = _mm256_fnmadd_ps(eo_v8_exp_neg(yv), s, g);
        const __m256 masked = _mm256_cmp_ps(yv, _mm256_set1_ps(-INFINITY), _CMP_EQ_OQ);
        r = _mm256_add_ps(d, _mm256_andnot_ps(masked, t));
    } else {
        r = _mm256_fmadd_ps(yv, _mm256_sub_ps(g, s), d);
    }
    eo_v8_st(dx + j, whole, m, r);
}

static void softmax_backward_row(int log, int64_t cols, const float *y, const float *dy, float *dx)
{
    /* softmax needs s = sum dy*y, log_softmax s = sum dy. Lanes past the
     * end load 0 and add 0. */
    const int64_t body = cols - cols % 8;
    const __m256i all = _mm256_set1_epi32(-1), tail = eo_v8_mask(cols % 8);
    __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps();
    int64_t j = 0;
    for (; j + 16 <= body; j += 16) {
        const __m256 g0 = _mm256_loadu_ps(dy + j), g1 = _mm256_loadu_ps(dy + j + 8);
        acc0 = log ? _mm256_add_ps(acc0, g0) : _mm256_fmadd_ps(g0, _mm256_loadu_ps(y + j), acc0);
        acc1 = log ? _mm256_add_ps(acc1, g1) : _mm256_fmadd_ps(g1, _mm256_loadu_ps(y + j + 8), acc1);
    }
    for (; j < cols; j += 8) {
        const int whole = j + 8 <= cols;
        const __m256 g = eo_v8_ld(dy + j, whole, tail, 0.0f);
        acc0 = log ? _mm256_add_ps(acc0, g) : _mm256_fmadd_ps(g, eo_v8_ld(y + j, whole, tail, 0.0f), acc0);
    }
    const __m256 s = _mm256_set1_ps(eo_v8_hsum(_mm256_add_ps(acc0, acc1)));
    for (j = 0; j < body; j += 8)
        smb_dx8(log, y, dy, dx, j, 1, all, s);
    if (body < cols)
        smb_dx8(log, y, dy, dx, body, 0, tail, s);
}
#else
static void softmax_row(int log, int64_t cols, const float *x, float *y, const float *next)
{
    (void)next; /* the scalar path leaves prefetching to the hardware */
    float M = -INFINITY;
    for (int64_t j = 0; j < cols; j++)
        M = x[j] > M ? x[j] : M;
    if (M == -INFINITY) {
        empty_row(log, cols, y);
        return;
    }
    float S = 0.0f;
    if (log) {
        for (int64_t j = 0; j < cols; j++)
            S += expf(x[j] - M);
        const float ls = logf(S);
        for (int64_t j = 0; j < cols; j++)
            y[j] = (x[j] - M) - ls;
    } else {
        for (int64_t j = 0; j < cols; j++) {
            y[j] = expf(x[j] - M);
            S += y[j];
        }
        const float inv = 1.0f / S;
        for (int64_t j = 0; j < cols; j++)
            y[j] *= inv;
    }
}

static void softmax_backward_row(int log, int64_t cols, const float *y, const float *dy, float *dx)
{
    float s = 0.0f;
    for (int64_t j = 0; j < cols; j++)
        s += log ? dy[j] : dy[j] * y[j];
    for (int64_t j = 0; j < cols; j++) {
        if (log)
            dx[j] += y[j] == -INFINITY ? 0.0f : dy[j] - expf(y[j]) * s;
        else
            dx[j] += y[j] * (dy[j] - s);
    }
}
#endif

static void softmax_body(void *arg, int64_t r0, int64_t r1, int worker)
{
    (void)worker;
    const softmax_args *a = arg;
    for (int64_t r = r0; r < r1; r++)
        softmax_row(a->log, a->cols, a->x + r * a->cols, a->out + r * a->cols,
                    r + 1 < r1 ? a->x + (r + 1) * a->cols : NULL);
}

static void softmax_backward_body(void *arg, int64_t r0, int64_t r1, int worker)
{
    (void)worker;
    const softmax_args *a = arg;
    for (int64_t r = r0; r < r1; r++)
        softmax_backward_row(a->log, a->cols, a->y + r * a->cols, a->dy + r * a->cols,
                             a->out + r * a->cols);
}

void eo_k_softmax(int log, int64_t rows, int64_t cols, const float *x, float *y, const eo_par *par)
{
    softmax_args a = {log, cols, x, NULL, NULL, y};
    eo_par_for(eo_par_if(par, rows * cols), rows, softmax_body, &a);
}

void eo_k_softmax_backward(int log, int64_t rows, int64_t cols, const float *y, const float *dy,
                           float *dx, const eo_par *par)
{
    softmax_args a = {log, cols, NULL, y, dy, dx};
    eo_par_for(eo_par_if(par, rows * cols), rows, softmax_backward_body, &a);
}
