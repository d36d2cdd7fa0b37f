/* tools/bench/ceil_avx512.c — the ceilings in AVX-512 (tools/bench/ceilings.h).
 * Compiled with the AVX-512 variant's flags; called only on a CPU that
 * reports AVX-512F with the OS saving its registers. */
#include "tools/bench/ceilings.h"

#if defined(__AVX512F__)
#include "ops/cpu/simd.h"

static volatile float sink;

/* As ceil_avx2.c's loop, in 16 lanes: twelve chains cover two 512-bit
 * FMA units of latency 4 with room to spare (32 zmm registers). */
static void fma_loop(long iters)
{
    volatile float seed = 0.5f;
    const __m512 x = _mm512_set1_ps(0.999f), y = _mm512_set1_ps(1e-4f);
    __m512 a[12];
    for (int j = 0; j < 12; j++)
        a[j] = _mm512_set1_ps(seed + (float)j);
    for (long i = 0; i < iters; i++) {
        a[0] = _mm512_fmadd_ps(a[0], x, y);
        a[1] = _mm512_fmadd_ps(a[1], x, y);
        a[2] = _mm512_fmadd_ps(a[2], x, y);
        a[3] = _mm512_fmadd_ps(a[3], x, y);
        a[4] = _mm512_fmadd_ps(a[4], x, y);
        a[5] = _mm512_fmadd_ps(a[5], x, y);
        a[6] = _mm512_fmadd_ps(a[6], x, y);
        a[7] = _mm512_fmadd_ps(a[7], x, y);
        a[8] = _mm512_fmadd_ps(a[8], x, y);
        a[9] = _mm512_fmadd_ps(a[9], x, y);
        a[10] = _mm512_fmadd_ps(a[10], x, y);
        a[11] = _mm512_fmadd_ps(a[11], x, y);
    }
    __m512 s = a[0];
    for (int j = 1; j < 12; j++)
        s = _mm512_add_ps(s, a[j]);
    sink = _mm512_reduce_add_ps(s);
}

/* The 16-lane exp the AVX-512 softmax and cross-entropy forwards use. */
static double exp_loop(const float *x, int reps)
{
    __m512 s0 = _mm512_setzero_ps(), s1 = s0;
    const __m512 m = _mm512_set1_ps(1.0f);
    for (int r = 0; r < reps; r++)
        for (int j = 0; j < 1024; j += 32) {
            s0 = _mm512_add_ps(s0, eo_v16_exp_sat(_mm512_sub_ps(_mm512_loadu_ps(x + j), m)));
            s1 = _mm512_add_ps(s1, eo_v16_exp_sat(_mm512_sub_ps(_mm512_loadu_ps(x + j + 16), m)));
        }
    return (double)_mm512_reduce_add_ps(_mm512_add_ps(s0, s1));
}

const eo_ceil_isa eo_ceil_avx512 = {"AVX-512 FMA, 16 lanes", 12 * 16 * 2, fma_loop, NULL, exp_loop,
                                    "eo_v16_exp_sat"};
#else
const eo_ceil_isa eo_ceil_avx512 = {"AVX-512 FMA (not in this build)", 0, NULL, NULL, NULL, NULL};
#endif
