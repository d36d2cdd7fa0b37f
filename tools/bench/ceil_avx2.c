/* tools/bench/ceil_avx2.c — the ceilings in AVX2 + FMA (tools/bench/ceilings.h).
 * Compiled with -mavx2 -mfma -mf16c; called only on a CPU that has them. */
#include "tools/bench/ceilings.h"

#if defined(__AVX2__) && defined(__FMA__)
#include <stdint.h>
#include <string.h>
#include "ops/cpu/simd.h"

static volatile float sink;

/* Twelve independent multiply-add chains: more than the FMA units'
 * latency times their count (4 cycles x 2 units on current cores), so the
 * units never wait on a result. The chains start from different values,
 * read through a volatile, so the compiler cannot merge them. */
static void fma_loop(long iters)
{
    volatile float seed = 0.5f;
    const __m256 x = _mm256_set1_ps(0.999f), y = _mm256_set1_ps(1e-4f);
    __m256 a[12];
    for (int j = 0; j < 12; j++)
        a[j] = _mm256_set1_ps(seed + (float)j);
    for (long i = 0; i < iters; i++) {
        a[0] = _mm256_fmadd_ps(a[0], x, y);
        a[1] = _mm256_fmadd_ps(a[1], x, y);
        a[2] = _mm256_fmadd_ps(a[2], x, y);
        a[3] = _mm256_fmadd_ps(a[3], x, y);
        a[4] = _mm256_fmadd_ps(a[4], x, y);
        a[5] = _mm256_fmadd_ps(a[5], x, y);
        a[6] = _mm256_fmadd_ps(a[6], x, y);
        a[7] = _mm256_fmadd_ps(a[7], x, y);
        a[8] = _mm256_fmadd_ps(a[8], x, y);
        a[9] = _mm256_fmadd_ps(a[9], x, y);
        a[10] = _mm256_fmadd_ps(a[10], x, y);
        a[11] = _mm256_fmadd_ps(a[11], x, y);
    }
    __m256 s = a[0];
    for (int j = 1; j < 12; j++)
        s = _mm256_add_ps(s, a[j]);
    sink = _mm256_cvtss_f32(s);
}

/* The second copy ceiling: a plain loop of 32-byte loads and streamed
 * (non-temporal) stores, the way the row kernels write a large output.
 * glibc's memcpy picks its method by size, and on the Zen 3 development
 * machine it copied 64-100 MiB about a third slower than this loop, and
 * 256 MiB about as fast; a ceiling that a kernel's own store method beats
 * would overstate every memory-bound row, so the best of the two counts. */
static void stream_copy(char *dst, const char *src, size_t bytes)
{
    size_t head = (32u - ((uintptr_t)dst & 31u)) & 31u;
    head = head < bytes ? head : bytes;
    memcpy(dst, src, head);
    size_t k = head;
    for (; k + 64 <= bytes; k += 64) {
        const __m256 a = _mm256_loadu_ps((const float *)(const void *)(src + k));
        const __m256 b = _mm256_loadu_ps((const float *)(const void *)(src + k + 32));
        _mm256_stream_ps((float *)(void *)(dst + k), a);
        _mm256_stream_ps((float *)(void *)(dst + k + 32), b);
    }
    memcpy(dst + k, src + k, bytes - k);
    _mm_sfence();
}

static double exp_loop(const float *x, int reps)
{
    __m256 s0 = _mm256_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
    const __m256 m = _mm256_set1_ps(1.0f);
    for (int r = 0; r < reps; r++)
        for (int j = 0; j < 1024; j += 32) {
            s0 = _mm256_add_ps(s0, eo_v8_exp_neg(_mm256_sub_ps(_mm256_loadu_ps(x + j), m)));
            s1 = _mm256_add_ps(s1, eo_v8_exp_neg(_mm256_sub_ps(_mm256_loadu_ps(x + j + 8), m)));
            s2 = _mm256_add_ps(s2, eo_v8_exp_neg(_mm256_sub_ps(_mm256_loadu_ps(x + j + 16), m)));
            s3 = _mm256_add_ps(s3, eo_v8_exp_neg(_mm256_sub_ps(_mm256_loadu_ps(x + j + 24), m)));
        }
    __m256 s = _mm256_add_ps(_mm256_add_ps(s0, s1), _mm256_add_ps(s2, s3));
    return (double)_mm256_cvtss_f32(s);
}

const eo_ceil_isa eo_ceil_avx2 = {"AVX2 FMA, 8 lanes", 12 * 8 * 2, fma_loop, stream_copy, exp_loop,
                                  "eo_v8_exp_neg"};
#else
const eo_ceil_isa eo_ceil_avx2 = {"AVX2 FMA (not in this build)", 0, NULL, NULL, NULL, NULL};
#endif
