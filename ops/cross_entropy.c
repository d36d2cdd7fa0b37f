/* ops/cross_entropy.c — softmax cross-entropy over class indices, fused:
 * the probabilities are never stored.
 *
 * Forward: one read of each row from memory gives its log-sum-exp
 * (eo_v8_row_max_sumexp of simd.h: the max, then the sum of exps from
 * cache, or both at once for very long rows), saved in lse[] for the
 * backward. Ignored rows are skipped. The loss is then summed over rows on the calling
 * thread, in row order and in double, from lse[r] - logits[r, target[r]]:
 * rows may be computed by any thread, but the sum is always taken the
 * same way, so the loss does not depend on the thread count.
 *
 * Backward: one pass per row, dlogits += (exp(x - lse) - onehot) * dloss
 * / count, where count is the number of rows not ignored (a padded batch
 * averages over its real rows only). */
#include <math.h>
#include "ops/grain.h"
#include "ops/kernels.h"
#include "ops/simd.h"

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

static void ce_body(void *arg, int64_t r0, int64_t r1, int worker)
{
    (void)worker;
    const ce_args *a = arg;
    for (int64_t r = r0; r < r1; r++) {
        const float *x = a->logits + r * a->cols;
        a->lse[r] = a->target[r] == a->ignore ? 0.0f
                                               : row_lse(a->cols, x, r + 1 < r1 ? x + a->cols : NULL);
    }
}

void eo_k_cross_entropy(int64_t rows, int64_t cols, const float *logits, const int32_t *target,
                        int32_t ignore_index, float *lse, float *loss, const eo_par *par)
{
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
                                 const float *dloss, float *dlogits, const eo_par *par)
{
    int64_t count = 0;
    for (int64_t r = 0; r < rows; r++)
        count += target[r] != ignore_index;
    if (count == 0)
        return;
    ce_args a = {cols, logits, target, ignore_index, lse, NULL, dlogits,
                 dloss[0] / (float)count};
    eo_par_for(eo_par_if(par, rows * cols), rows, ce_backward_body, &a);
}
