/* ops/cpu/dropout.c — inverted dropout with a mask that is recomputed, not
 * stored.
 *
 * Whether element i is kept is a pure function of (seed, i)
 * (eo_dropout_keep in kernels.h, a counter-based hash), so the backward
 * asks the same question again instead of reading a saved mask: no
 * memory for the mask, and the same mask whatever the thread count or
 * chunking. The hook gets fixed blocks of elements. */
#include "ops/cpu/grain.h"
#include "ops/kernels.h"
#include "ops/cpu/simd.h"

#define BLOCK 4096

typedef struct dropout_args {
    int64_t n;
    const float *src;
    float *dst;
    float p;
    uint64_t seed;
} dropout_args;

/* v * (keep ? 1 : 0), without a branch: whether an element is kept is a
 * coin flip, so a branch on it would be mispredicted a fraction p of the
 * time (at p = 0.5, every other element). A product, not a select of +0:
 * as in PyTorch (x * mask / (1 - p)) a dropped NaN or inf gives NaN and a
 * dropped -3 gives -0, so dropout never hides a NaN. */
static inline float select_kept(int keep, float v)
{
    return v * (float)keep;
}

#ifdef EO_AVX2
/* The keep-test of kernels.h for 8 consecutive elements, four 64-bit
 * lanes at a time. AVX2 has no 64-bit multiply, so a * b mod 2^64 is
 * built from 32-bit halves: al bl + ((ah bl + al bh) << 32). The products
 * i * golden are not multiplied at all: consecutive ones differ by the
 * constant golden, so each step adds 8 * golden to the running pair.
 * The decisions are the scalar ones exactly: the top 24 bits are an
 * integer below 2^24, so comparing it, as a float, with p * 2^24 is the
 * same test as comparing u = bits / 2^24 with p. */
static inline __m256i mul64(__m256i a, uint64_t b)
{
    const __m256i bl = _mm256_set1_epi64x((int64_t)(b & 0xffffffffu));
    const __m256i bh = _mm256_set1_epi64x((int64_t)(b >> 32));
    const __m256i cross = _mm256_add_epi64(_mm256_mul_epu32(_mm256_srli_epi64(a, 32), bl),
                                           _mm256_mul_epu32(a, bh));
    return _mm256_add_epi64(_mm256_mul_epu32(a, bl), _mm256_slli_epi64(cross, 32));
}

static inline __m256i top24(__m256i z)
{
    z = mul64(_mm256_xor_si256(z, _mm256_srli_epi64(z, 30)), 0xBF58476D1CE4E5B9ull);
    z = mul64(_mm256_xor_si256(z, _mm256_srli_epi64(z, 27)), 0x94D049BB133111EBull);
    return _mm256_srli_epi64(_mm256_xor_si256(z, _mm256_srli_epi64(z, 31)), 40);
}

#define GOLDEN 0x9E3779B97F4A7C15ull

/* z0, z1: seed-free i * golden for elements i..i+3 and i+4..i+7; returns
 * the keep mask of the 8 floats and advances z0, z1 by 8 elements. */
static inline __m256 keep8(__m256i *z0, __m256i *z1, __m256i seed, __m256 thresh)
{
    const __m256i pick = _mm256_setr_epi32(0, 2, 4, 6, 1, 3, 5, 7);
    const __m256i h0 = _mm256_permutevar8x32_epi32(top24(_mm256_xor_si256(*z0, seed)), pick);
    const __m256i h1 = _mm256_permutevar8x32_epi32(top24(_mm256_xor_si256(*z1, seed)), pick);
    const __m256i step = _mm256_set1_epi64x((int64_t)(8 * GOLDEN));
    *z0 = _mm256_add_epi64(*z0, step);
    *z1 = _mm256_add_epi64(*z1, step);
    const __m256 u = _mm256_cvtepi32_ps(_mm256_permute2x128_si256(h0, h1, 0x20));
    return _mm256_cmp_ps(u, thresh, _CMP_GE_OQ);
}

/* Elements [i0, i1) in whole groups of 8 from i0; returns where it stopped.
 * backward: dst += kept src / q; else dst = kept src / q. */
static int64_t dropout_v8(const dropout_args *a, int64_t i0, int64_t i1, int backward)
{
    const __m256 q = _mm256_set1_ps(1.0f - a->p), thresh = _mm256_set1_ps(a->p * 16777216.0f);
    const __m256 one = _mm256_set1_ps(1.0f); /* keep mask -> 1 or 0 (see select_kept) */
    const __m256i seed = _mm256_set1_epi64x((int64_t)a->seed);
    const uint64_t g = (uint64_t)i0 * GOLDEN;
    __m256i z0 = _mm256_setr_epi64x((int64_t)g, (int64_t)(g + GOLDEN), (int64_t)(g + 2 * GOLDEN),
                                    (int64_t)(g + 3 * GOLDEN));
    __m256i z1 = _mm256_add_epi64(z0, _mm256_set1_epi64x((int64_t)(4 * GOLDEN)));
    int64_t i = i0;
    for (; i + 8 <= i1; i += 8) {
        const __m256 v = _mm256_mul_ps(_mm256_and_ps(keep8(&z0, &z1, seed, thresh), one),
                                       _mm256_div_ps(_mm256_loadu_ps(a->src + i), q));
        _mm256_storeu_ps(a->dst + i, backward ? _mm256_add_ps(_mm256_loadu_ps(a->dst + i), v) : v);
    }
    return i;
}
#endif

/* Kept values are divided by 1 - p (as the contract says, not multiplied
 * by a rounded reciprocal), so the expected value of y is x. */
static void dropout_body(void *arg, int64_t b0, int64_t b1, int worker)
{
    (void)worker;
    const dropout_args *a = arg;
    const float p = a->p, q = 1.0f - p;
    const uint64_t seed = a->seed;
    const float *x = a->src;
    float *y = a->dst;
    const int64_t i1 = b1 * BLOCK < a->n ? b1 * BLOCK : a->n;
    int64_t i = b0 * BLOCK;
#ifdef EO_AVX2
    i = dropout_v8(a, i, i1, 0);
#endif
    for (; i < i1; i++)
        y[i] = select_kept(eo_dropout_keep(seed, i, p), x[i] / q);
}

/* A dropped element adds dy * 0: +-0, which leaves dx as it was (-0 +
 * +0 aside), or NaN where dy is NaN or inf, as in PyTorch. */
static void dropout_backward_body(void *arg, int64_t b0, int64_t b1, int worker)
{
    (void)worker;
    const dropout_args *a = arg;
    const float p = a->p, q = 1.0f - p;
    const uint64_t seed = a->seed;
    const float *dy = a->src;
    float *dx = a->dst;
    const int64_t i1 = b1 * BLOCK < a->n ? b1 * BLOCK : a->n;
    int64_t i = b0 * BLOCK;
#ifdef EO_AVX2
    i = dropout_v8(a, i, i1, 1);
#endif
    for (; i < i1; i++)
        dx[i] += select_kept(eo_dropout_keep(seed, i, p), dy[i] / q);
}

void eo_k_dropout(int64_t n, const float *x, float *y, float p, uint64_t seed, const eo_exec *ex)
{
    const eo_par *par = eo_exec_par(ex);
    dropout_args a = {n, x, y, p, seed};
    eo_par_for(eo_par_if(par, n), (n + BLOCK - 1) / BLOCK, dropout_body, &a);
}

void eo_k_dropout_backward(int64_t n, const float *dy, float *dx, float p, uint64_t seed,
                           const eo_exec *ex)
{
    const eo_par *par = eo_exec_par(ex);
    dropout_args a = {n, dy, dx, p, seed};
    eo_par_for(eo_par_if(par, n), (n + BLOCK - 1) / BLOCK, dropout_backward_body, &a);
}
