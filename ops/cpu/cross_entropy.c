/* ops/cpu/cross_entropy.c — softmax cross-entropy over class indices, fused:
 * the probabilities are never stored.
 *
 * Forward: one read of each row from memory gives its log-sum-exp, saved
 * in lse[] for the backward. With AVX2, rows are pipelined (lse_rows),
 * their exps summed in 16-lane vectors where the CPU has AVX-512. Very
 * long rows and the scalar path take the max, then the sum of exps from
 * cache (eo_v8_row_max_sumexp of simd.h does both at once for very long
 * rows), skipping ignored rows. The loss is then summed over rows on the
 * calling thread, in row order and in double, from lse[r] -
 * logits[r, target[r]]: rows may be computed by any thread, but the sum
 * is always taken the same way, so the loss does not depend on the
 * thread count.
 *
 * Backward: one pass per row, dlogits += (exp(x - lse) - onehot) * dloss
 * / count, where count is the number of rows not ignored (a padded batch
 * averages over its real rows only). */
#include <math.h>
#include "ops/cpu/grain.h"
#include "ops/kernels.h"
#include "ops/cpu/simd.h"

typedef struct ce_args {
    int64_t cols;
    const float *logits;
    const int32_t *target;
    int32_t ignore;
    const float *lse_in;
    float *lse, *dlogits;
    float scale;
} ce_args;

/* next: the row after this one, for prefetching (see simd.h), or NULL. */
static float row_lse(int64_t cols, const float *x, const float *next)
{
    float M, S;
#ifdef EO_AVX2
    eo_v8_row_max_sumexp(x, cols, &M, &S, next);
#else
    (void)next;
    M = -INFINITY;
    for (int64_t j = 0; j < cols; j++)
        M = x[j] > M ? x[j] : M;
    S = 0.0f;
    if (M != -INFINITY)
        for (int64_t j = 0; j < cols; j++)
            S += expf(x[j] - M);
#endif
    return S > 0.0f ? M + logf(S) : -INFINITY;
}

#ifdef EO_AVX2
/* log-sum-exp of rows [r0, r1) of up to EO_ROW_CACHED columns, every row
 * (an ignored row's value is simply not used), pipelined: the walk that
 * sums row r's exps also takes the max of row r + 1, which is in cache
 * because the walk before prefetched it, and prefetches row r + 2. So
 * each row is read from memory once, in the background, and walked once
 * in the foreground; the separate max walk of row_lse costs about a tenth
 * more (measured). The exps are only summed: eo_v8_exp_sat. */
static void lse_rows(int64_t cols, const float *x, int64_t r0, int64_t r1, float *lse)
{
    float M = eo_v8_row_max(x + r0 * cols, cols);
    for (int64_t r = r0; r < r1; r++) {
        const float *xr = x + r * cols;
        const float *n1 = r + 1 < r1 ? xr + cols : NULL, *n2 = r + 2 < r1 ? xr + 2 * cols : NULL;
        if (M == -INFINITY) { /* no mass: lse = -inf, and nothing to sum */
            lse[r] = -INFINITY;
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
            w0 = _mm512_add_ps(w0, eo_v16_exp_sat(_mm512_sub_ps(_mm512_loadu_ps(xr + j), m16)));
            w1 = _mm512_add_ps(w1, eo_v16_exp_sat(_mm512_sub_ps(_mm512_loadu_ps(xr + j + 16), m16)));
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
            s0 = _mm256_add_ps(s0, eo_v8_exp_sat(_mm256_sub_ps(_mm256_loadu_ps(xr + j), m)));
            s1 = _mm256_add_ps(s1, eo_v8_exp_sat(_mm256_sub_ps(_mm256_loadu_ps(xr + j + 8), m)));
        }
        for (; j < cols; j += 8) {
            const __m256i k = eo_v8_mask(cols - j);
            s0 = _mm256_add_ps(s0, eo_v8_exp_sat(_mm256_sub_ps(eo_v8_load_tail(xr + j, k, -INFINITY), m)));
            if (n1)
                q0 = _mm256_max_ps(q0, eo_v8_load_tail(n1 + j, k, -INFINITY));
        }
        /* M is finite, so its own term makes the sum >= 1. */
        lse[r] = M + logf(eo_v8_hsum(_mm256_add_ps(s0, s1)));
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
        lse_rows(a->cols, a->logits, r0, r1, a->lse);
        return;
    }
#endif
    for (int64_t r = r0; r < r1; r++) {
        const float *x = a->logits + r * a->cols;
        a->lse[r] = a->target[r] == a->ignore ? 0.0f
                                               : row_lse(a->cols, x, r + 1 < r1 ? x + a->cols : NULL);
    }
}

void eo_k_cross_entropy(int64_t rows, int64_t cols, const float *logits, const int32_t *target,
                        int32_t ignore_index, float *lse, float *loss, const eo_exec *ex)
{
    const eo_par *par = eo_exec_par(ex);
    ce_args a = {cols, logits, target, ignore_index, NULL, lse, NULL, 0.0f};
    eo_par_for(eo_par_if(par, rows * cols), rows, ce_body, &a);
    double sum = 0.0;
    int64_t count = 0;
    for (int64_t r = 0; r < rows; r++) {
        if (target[r] == ignore_index)
            continue;
        sum += (double)lse[r] - (double)logits[r * cols + target[r]];
        count++;
    }
    loss[0] = count ? (float)(sum / (double)count) : 0.0f;
}

static void ce_backward_row(int64_t cols, const float *x, float lse, float scale, float *d)
{
#ifdef EO_AVX2
    const __m256 l = _mm256_set1_ps(lse), s = _mm256_set1_ps(scale);
    int64_t j = 0;
    for (; j + 8 <= cols; j += 8) {
        const __m256 p = eo_v8_exp_neg(_mm256_sub_ps(_mm256_loadu_ps(x + j), l));
        _mm256_storeu_ps(d + j, _mm256_fmadd_ps(p, s, _mm256_loadu_ps(d + j)));
    }
    if (j < cols) {
        const __m256i m = eo_v8_mask(cols - j);
        const __m256 p = eo_v8_exp_neg(_mm256_sub_ps(_mm256_maskload_ps(x + j, m), l));
        _mm256_maskstore_ps(d + j, m, _mm256_fmadd_ps(p, s, _mm256_maskload_ps(d + j, m)));
    }
#else
    for (int64_t j = 0; j < cols; j++)
        d[j] += expf(x[j] - lse) * scale;
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
        float *d = a->dlogits + r * a->cols;
        ce_backward_row(a->cols, a->logits + r * a->cols, a->lse_in[r], a->scale, d);
        d[t] -= a->scale; /* the one-hot part */
    }
}

void eo_k_cross_entropy_backward(int64_t rows, int64_t cols, const float *logits,
                                 const int32_t *target, int32_t ignore_index, const float *lse,
                                 const float *dloss, float *dlogits, const eo_exec *ex)
{
    const eo_par *par = eo_exec_par(ex);
    int64_t count = 0;
    for (int64_t r = 0; r < rows; r++)
        count += target[r] != ignore_index;
    if (count == 0)
        return;
    ce_args a = {cols, logits, target, ignore_index, lse, NULL, dlogits,
                 dloss[0] / (float)count};
    eo_par_for(eo_par_if(par, rows * cols), rows, ce_backward_body, &a);
}
