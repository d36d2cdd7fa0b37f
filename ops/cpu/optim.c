/* ops/cpu/optim.c — in-place optimizer updates: SGD (momentum, dampening,
 * Nesterov, weight decay) and AdamW.
 *
 * Both follow PyTorch's formulas and order of operations (see kernels.h),
 * so a model trained here can be compared step by step with one trained
 * there. Elements are independent; the hook gets fixed blocks of them.
 * The AVX2 loops do the same operations in the same order, as separate
 * multiplies and adds (sqrt and division are correctly rounded in both),
 * so they give the scalar loop's bits, provided the compiler does not fuse
 * the scalar multiply-adds: GCC does not under -std=c11, and clang is told
 * so by the pragma below.
 *
 * AdamW's bias corrections 1 - beta^t are computed once per call, in
 * double as PyTorch does on the host, by repeated squaring (t can be in
 * the hundreds of thousands). */
#include <math.h>
#include "ops/cpu/grain.h"
#include "ops/kernels.h"
#include "ops/cpu/simd.h"

#ifdef __clang__
#pragma STDC FP_CONTRACT OFF
#endif

#define BLOCK 4096

typedef struct optim_args {
    int64_t n;
    float *w, *m, *v;
    const float *g;
    float lr, momentum, keep, wd, beta1, beta2, eps; /* keep: SGD's 1 - dampening */
    int nesterov;
    float step_size, bc2_sqrt; /* AdamW: lr / (1 - b1^t), sqrt(1 - b2^t) */
} optim_args;

static void sgd_body(void *arg, int64_t b0, int64_t b1, int worker)
{
    (void)worker;
    const optim_args *a = arg;
    const int64_t i1 = b1 * BLOCK < a->n ? b1 * BLOCK : a->n;
    int64_t i = b0 * BLOCK;
#ifdef EO_AVX2
    const __m256 wd = _mm256_set1_ps(a->wd), mom = _mm256_set1_ps(a->momentum);
    const __m256 lr = _mm256_set1_ps(a->lr), keep = _mm256_set1_ps(a->keep);
    for (; i + 8 <= i1; i += 8) {
        const __m256 w = _mm256_loadu_ps(a->w + i);
        __m256 d = _mm256_add_ps(_mm256_loadu_ps(a->g + i), _mm256_mul_ps(wd, w));
        if (a->momentum != 0.0f) {
            const __m256 v = _mm256_add_ps(_mm256_mul_ps(mom, _mm256_loadu_ps(a->v + i)),
                                           _mm256_mul_ps(keep, d));
            _mm256_storeu_ps(a->v + i, v);
            d = a->nesterov ? _mm256_add_ps(d, _mm256_mul_ps(mom, v)) : v;
        }
        _mm256_storeu_ps(a->w + i, _mm256_sub_ps(w, _mm256_mul_ps(lr, d)));
    }
#endif
    for (; i < i1; i++) {
        float d = a->g[i] + a->wd * a->w[i];
        if (a->momentum != 0.0f) {
            a->v[i] = a->momentum * a->v[i] + a->keep * d; /* keep = 1 is exact */
            d = a->nesterov ? d + a->momentum * a->v[i] : a->v[i];
        }
        a->w[i] -= a->lr * d;
    }
}

void eo_k_sgd(int64_t n, float *w, const float *g, float *v, float lr, float momentum,
              float dampening, float wd, int nesterov, const eo_exec *ex)
{
    const eo_par *par = eo_exec_par(ex);
    optim_args a = {0};
    a.n = n;
    a.w = w;
    a.g = g;
    a.v = v;
    a.lr = lr;
    a.momentum = momentum;
    a.keep = 1.0f - dampening;
    a.wd = wd;
    a.nesterov = nesterov;
    eo_par_for(eo_par_if(par, n), (n + BLOCK - 1) / BLOCK, sgd_body, &a);
}

/* PyTorch's order: w *= 1 - lr*wd (the decoupled decay, on the weight
 * before this step's update); m and v updated; then
 * w -= step_size * m / (sqrt(v) / sqrt(1 - b2^t) + eps). */
static void adamw_body(void *arg, int64_t b0, int64_t b1, int worker)
{
    (void)worker;
    const optim_args *a = arg;
    const float decay = 1.0f - a->lr * a->wd;
    const int64_t i1 = b1 * BLOCK < a->n ? b1 * BLOCK : a->n;
    int64_t i = b0 * BLOCK;
#ifdef EO_AVX2
    const __m256 b1v = _mm256_set1_ps(a->beta1), b2v = _mm256_set1_ps(a->beta2);
    const __m256 c1 = _mm256_set1_ps(1.0f - a->beta1), c2 = _mm256_set1_ps(1.0f - a->beta2);
    const __m256 dec = _mm256_set1_ps(decay), step = _mm256_set1_ps(a->step_size);
    const __m256 bc2 = _mm256_set1_ps(a->bc2_sqrt), eps = _mm256_set1_ps(a->eps);
    for (; i + 8 <= i1; i += 8) {
        const __m256 g = _mm256_loadu_ps(a->g + i);
        const __m256 m = _mm256_add_ps(_mm256_mul_ps(b1v, _mm256_loadu_ps(a->m + i)), _mm256_mul_ps(c1, g));
        const __m256 v = _mm256_add_ps(_mm256_mul_ps(b2v, _mm256_loadu_ps(a->v + i)),
                                       _mm256_mul_ps(_mm256_mul_ps(c2, g), g));
        _mm256_storeu_ps(a->m + i, m);
        _mm256_storeu_ps(a->v + i, v);
        const __m256 den = _mm256_add_ps(_mm256_div_ps(_mm256_sqrt_ps(v), bc2), eps);
        const __m256 w = _mm256_mul_ps(_mm256_loadu_ps(a->w + i), dec);
        _mm256_storeu_ps(a->w + i, _mm256_sub_ps(w, _mm256_mul_ps(step, _mm256_div_ps(m, den))));
    }
#endif
    for (; i < i1; i++) {
        const float g = a->g[i];
        const float m = a->beta1 * a->m[i] + (1.0f - a->beta1) * g;
        const float v = a->beta2 * a->v[i] + (1.0f - a->beta2) * g * g;
        a->m[i] = m;
        a->v[i] = v;
        a->w[i] = a->w[i] * decay - a->step_size * (m / (sqrtf(v) / a->bc2_sqrt + a->eps));
    }
}

/* b^t for t >= 0 by repeated squaring. */
static double pow_int(double b, int64_t t)
{
    double r = 1.0;
    for (; t > 0; t >>= 1, b *= b)
        if (t & 1)
            r *= b;
    return r;
}

void eo_k_adamw(int64_t n, float *w, const float *g, float *m, float *v, float lr, float beta1,
                float beta2, float eps, float wd, int64_t step, const eo_exec *ex)
{
    const eo_par *par = eo_exec_par(ex);
    const double bc1 = 1.0 - pow_int(beta1, step), bc2 = 1.0 - pow_int(beta2, step);
    /* sqrt in double without libm's sqrt (not in the freestanding set):
     * sqrtf's answer is within an ulp of float, one Newton step makes it
     * a double-accurate root. */
    double r = sqrtf((float)bc2);
    r = 0.5 * (r + bc2 / r);
    optim_args a = {0};
    a.n = n;
    a.w = w;
    a.g = g;
    a.m = m;
    a.v = v;
    a.lr = lr;
    a.wd = wd;
    a.beta1 = beta1;
    a.beta2 = beta2;
    a.eps = eps;
    a.step_size = (float)((double)lr / bc1); /* doubles once per step, not per element */
    a.bc2_sqrt = (float)r;
    eo_par_for(eo_par_if(par, n), (n + BLOCK - 1) / BLOCK, adamw_body, &a);
}
