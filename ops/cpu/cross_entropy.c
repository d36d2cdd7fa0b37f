/* ops/cpu/cross_entropy.c — softmax cross-entropy over class indices, fused:
 * the probabilities are never stored.
 *
 * Forward: one read of each row from memory gives its max M and the log
 * of its sum of exps L = log sum exp(x - M), both saved in stats[] for
 * the backward. They are kept apart rather than rounded into one
 * log-sum-exp M + L: with logits around 1e8 (float spacing 8) M + L is M,
 * and the loss (M - x_t) + L would lose L entirely. With AVX2, rows are
 * pipelined (stats_rows), their exps summed in 16-lane vectors where the
 * CPU has AVX-512. Very long rows and the scalar path take the max, then
 * the sum of exps from cache (eo_v8_row_max_sumexp of simd.h does both at
 * once for very long rows), skipping ignored rows. The loss is then
 * summed over rows on the calling thread (eo_ce_loss, shared with the
 * 16-bit kernel: cross_entropy.h), in row order and in double,
 * from (M - logits[r, target[r]]) + L: rows may be computed by any
 * thread, but the sum is always taken the same way, so the loss does not
 * depend on the thread count.
 *
 * NaN: a NaN logit makes its row's sum of exps NaN (simd.h), so L, the
 * row's loss, and a mean or sum over rows are NaN, as in PyTorch. The
 * NaN-blind max misses a NaN only in a row that is otherwise all -inf;
 * that rare branch looks for it.
 *
 * Backward: one pass per row, dlogits += (exp(x - M) / S - onehot) * s,
 * where s is dloss / count for the mean (count = rows not ignored: a
 * padded batch averages over its real rows only), dloss for the sum, and
 * the row's own dloss[r] for reduction none. */
#include <math.h>
#include "ops/cpu/grain.h"
#include "ops/kernels.h"
#include "ops/cpu/cross_entropy.h"
#include "ops/cpu/half.h"
#include "ops/cpu/sum8.h"
#include "ops/cpu/simd.h"

typedef struct ce_args {
    int64_t cols;
    const float *logits;
    const int32_t *target;
    int32_t ignore;
    const float *stats_in;
    float *stats, *dlogits;
    const float *dloss; /* backward: per-row scales (reduction none), else NULL */
    float scale;
} ce_args;

/* stats of a row whose max is -inf: L = log 0 = -inf, or NaN when a NaN
 * hides among the -infs. */
static void minus_inf_stats(int64_t cols, const float *x, float *st)
{
    st[0] = -INFINITY;
    st[1] = eo_row_has_nan(x, cols) ? NAN : -INFINITY;
}

/* st[0] = M, st[1] = L of one row. next: the row after this one, for
 * prefetching (see simd.h), or NULL. */
static void row_stats(int64_t cols, const float *x, const float *next, float *st)
{
    float M, S;
#ifdef EO_AVX2
    eo_v8_row_max_sumexp(x, cols, &M, &S, next);
#else
    (void)next;
    M = -INFINITY;
    for (int64_t j = 0; j < cols; j++)
        M = x[j] > M ? x[j] : M;
    if (M == -INFINITY) {
        minus_inf_stats(cols, x, st);
        return;
    }
    eo_sum8 acc;
    eo_sum8_init(&acc);
    for (int64_t j = 0; j < cols; j++)
        eo_sum8_add(&acc, j, expf(x[j] - M)); /* a NaN makes S NaN */
    S = eo_sum8_total(&acc);
#endif
    st[0] = M;
    st[1] = logf(S); /* log 0 = -inf for an all -inf row; NaN stays NaN */
}

#ifdef EO_AVX2
/* stats of rows [r0, r1) of up to EO_ROW_CACHED columns, every row (an
 * ignored row's values are simply not used), pipelined: the walk that
 * sums row r's exps also takes the max of row r + 1, which is in cache
 * because the walk before prefetched it, and prefetches row r + 2. So
 * each row is read from memory once, in the background, and walked once
 * in the foreground; the separate max walk of row_stats costs about a
 * tenth more (measured). The exps are only summed: eo_v8_exp_sum. */
static void stats_rows(int64_t cols, const float *x, int64_t r0, int64_t r1, float *stats)
{
    float M = eo_v8_row_max(x + r0 * cols, cols);
    for (int64_t r = r0; r < r1; r++) {
        const float *xr = x + r * cols;
        const float *n1 = r + 1 < r1 ? xr + cols : NULL, *n2 = r + 2 < r1 ? xr + 2 * cols : NULL;
        if (M == -INFINITY) { /* no mass (or a NaN among -infs): nothing to sum */
            minus_inf_stats(cols, xr, stats + 2 * r);
            if (n2)
                for (int64_t j = 0; j < cols; j += 16)
                    _mm_prefetch((const char *)(n2 + j), _MM_HINT_T1);
            M = n1 ? eo_v8_row_max(n1, cols) : 0.0f;
            continue;
        }
        const __m256 m = _mm256_set1_ps(M), ninf = _mm256_set1_ps(-INFINITY);
        __m256 s0 = _mm256_setzero_ps(), s1 = s0, q0 = ninf, q1 = ninf;
        int64_t j = 0;
#ifdef EO_AVX512
        /* 32 columns a step in 16-lane vectors (simd.h), the same work as
         * the loop below; the partial sums and maxima then join its. */
        const __m512 m16 = _mm512_set1_ps(M);
        __m512 w0 = _mm512_setzero_ps(), w1 = w0, p0 = _mm512_set1_ps(-INFINITY), p1 = p0;
        for (; j + 32 <= cols; j += 32) {
            if (n2) {
                _mm_prefetch((const char *)(n2 + j), _MM_HINT_T1);
                _mm_prefetch((const char *)(n2 + j + 16), _MM_HINT_T1);
            }
            if (n1) {
                p0 = _mm512_max_ps(p0, _mm512_loadu_ps(n1 + j));
                p1 = _mm512_max_ps(p1, _mm512_loadu_ps(n1 + j + 16));
            }
            w0 = _mm512_add_ps(w0, eo_v16_exp_sum(_mm512_sub_ps(_mm512_loadu_ps(xr + j), m16)));
            w1 = _mm512_add_ps(w1, eo_v16_exp_sum(_mm512_sub_ps(_mm512_loadu_ps(xr + j + 16), m16)));
        }
        s0 = _mm256_add_ps(eo_v16_lo(w0), eo_v16_hi(w0));
        s1 = _mm256_add_ps(eo_v16_lo(w1), eo_v16_hi(w1));
        q0 = _mm256_max_ps(eo_v16_lo(p0), eo_v16_hi(p0));
        q1 = _mm256_max_ps(eo_v16_lo(p1), eo_v16_hi(p1));
#endif
        for (; j + 16 <= cols; j += 16) {
            if (n2)
                _mm_prefetch((const char *)(n2 + j), _MM_HINT_T1);
            if (n1) {
                q0 = _mm256_max_ps(q0, _mm256_loadu_ps(n1 + j));
                q1 = _mm256_max_ps(q1, _mm256_loadu_ps(n1 + j + 8));
            }
            s0 = _mm256_add_ps(s0, eo_v8_exp_sum(_mm256_sub_ps(_mm256_loadu_ps(xr + j), m)));
            s1 = _mm256_add_ps(s1, eo_v8_exp_sum(_mm256_sub_ps(_mm256_loadu_ps(xr + j + 8), m)));
        }
        for (; j < cols; j += 8) {
            const __m256i k = eo_v8_mask(cols - j);
            s0 = _mm256_add_ps(s0, eo_v8_exp_sum(_mm256_sub_ps(eo_v8_load_tail(xr + j, k, -INFINITY), m)));
            if (n1)
                q0 = _mm256_max_ps(q0, eo_v8_load_tail(n1 + j, k, -INFINITY));
        }
        /* M is not -inf, so its own term makes the sum >= 1, or NaN
         * when the row holds a NaN (or a +inf): then L is NaN. */
        stats[2 * r] = M;
        stats[2 * r + 1] = logf(eo_v8_hsum(_mm256_add_ps(s0, s1)));
        M = eo_v8_hmax(_mm256_max_ps(q0, q1));
    }
}
#endif

static void ce_body(void *arg, int64_t r0, int64_t r1, int worker)
{
    (void)worker;
    const ce_args *a = arg;
#ifdef EO_AVX2
    if (a->cols <= EO_ROW_CACHED) {
        stats_rows(a->cols, a->logits, r0, r1, a->stats);
        return;
    }
#endif
    for (int64_t r = r0; r < r1; r++) {
        const float *x = a->logits + r * a->cols;
        float *st = a->stats + 2 * r;
        if (a->target[r] == a->ignore)
            st[0] = st[1] = 0.0f;
        else
            row_stats(a->cols, x, r + 1 < r1 ? x + a->cols : NULL, st);
    }
}

/* The value at i of dt storage, and a store of f rounded to it. */
static float ce_get(int dt, const void *p, int64_t i)
{
    return dt == EO_K_F32 ? ((const float *)p)[i] : eo_half_get(dt, ((const uint16_t *)p)[i]);
}

static void ce_put(int dt, void *p, int64_t i, float f)
{
    if (dt == EO_K_F32)
        ((float *)p)[i] = f;
    else
        ((uint16_t *)p)[i] = eo_half_put(dt, f);
}

void eo_ce_loss(int dt, int64_t rows, int64_t cols, const void *logits, const int32_t *target,
                int32_t ignore_index, eo_ce_reduction reduction, const float *stats, void *loss)
{
    double sum = 0.0;
    int64_t count = 0;
    for (int64_t r = 0; r < rows; r++) {
        if (target[r] == ignore_index) {
            if (reduction == EO_CE_NONE)
                ce_put(dt, loss, r, 0.0f);
            continue;
        }
        /* (M - x_t) + L: M - x_t is exact in double, and L is added to it
         * rather than rounded into M first. */
        const double lr = ((double)stats[2 * r] - (double)ce_get(dt, logits, r * cols + target[r])) +
                          (double)stats[2 * r + 1];
        if (reduction == EO_CE_NONE)
            ce_put(dt, loss, r, (float)lr);
        sum += lr;
        count++;
    }
    if (reduction == EO_CE_MEAN)
        ce_put(dt, loss, 0, count ? (float)(sum / (double)count) : 0.0f);
    else if (reduction == EO_CE_SUM)
        ce_put(dt, loss, 0, (float)sum);
}

void eo_k_cross_entropy(int64_t rows, int64_t cols, const float *logits, const int32_t *target,
                        int32_t ignore_index, eo_ce_reduction reduction, float *stats,
                        float *loss, const eo_exec *ex)
{
    const eo_par *par = eo_exec_par(ex);
    ce_args a = {cols, logits, target, ignore_index, NULL, stats, NULL, NULL, 0.0f};
    eo_par_for(eo_par_if(par, rows * cols), rows, ce_body, &a);
    eo_ce_loss(EO_K_F32, rows, cols, logits, target, ignore_index, reduction, stats, loss);
}

/* d += softmax(x) * scale over a row, as exp(x - M) * (scale / S) with
 * 1/S = exp(-L): x - M is exact near the max, so a huge common offset
 * costs no digits, and the 1/S joins the per-row scale, so the loop does
 * no more work than exp(x - lse) did (subtracting L per element would add
 * an instruction to it). */
static void ce_backward_row(int64_t cols, const float *x, const float *st, float scale, float *d)
{
    const float k = scale * expf(-st[1]); /* NaN for a row holding a NaN */
#ifdef EO_AVX2
    const __m256 M = _mm256_set1_ps(st[0]), s = _mm256_set1_ps(k);
    int64_t j = 0;
    for (; j + 8 <= cols; j += 8) {
        const __m256 p = eo_v8_exp_neg(_mm256_sub_ps(_mm256_loadu_ps(x + j), M));
        _mm256_storeu_ps(d + j, _mm256_fmadd_ps(p, s, _mm256_loadu_ps(d + j)));
    }
    if (j < cols) {
        const __m256i m = eo_v8_mask(cols - j);
        const __m256 p = eo_v8_exp_neg(_mm256_sub_ps(_mm256_maskload_ps(x + j, m), M));
        _mm256_maskstore_ps(d + j, m, _mm256_fmadd_ps(p, s, _mm256_maskload_ps(d + j, m)));
    }
#else
    for (int64_t j = 0; j < cols; j++)
        d[j] += expf(x[j] - st[0]) * k;
#endif
}

static void ce_backward_body(void *arg, int64_t r0, int64_t r1, int worker)
{
    (void)worker;
    const ce_args *a = arg;
    for (int64_t r = r0; r < r1; r++) {
        const int32_t t = a->target[r];
        if (t == a->ignore)
            continue;
        const float scale = a->dloss ? a->dloss[r] : a->scale;
        float *d = a->dlogits + r * a->cols;
        ce_backward_row(a->cols, a->logits + r * a->cols, a->stats_in + 2 * r, scale, d);
        d[t] -= scale; /* the one-hot part */
    }
}

void eo_k_cross_entropy_backward(int64_t rows, int64_t cols, const float *logits,
                                 const int32_t *target, int32_t ignore_index,
                                 eo_ce_reduction reduction, const float *stats,
                                 const float *dloss, float *dlogits, const eo_exec *ex)
{
    const eo_par *par = eo_exec_par(ex);
    int64_t count = 0;
    for (int64_t r = 0; r < rows; r++)
        count += target[r] != ignore_index;
    if (count == 0)
        return;
    ce_args a = {cols, logits, target, ignore_index, stats, NULL, dlogits, NULL, dloss[0]};
    if (reduction == EO_CE_MEAN)
        a.scale = dloss[0] / (float)count;
    else if (reduction == EO_CE_NONE)
        a.dloss = dloss;
    eo_par_for(eo_par_if(par, rows * cols), rows, ce_backward_body, &a);
}
