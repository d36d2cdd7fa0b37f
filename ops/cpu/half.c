/* ops/cpu/half.c — whole rows of 16-bit <-> f32 conversions (ops/cpu/half.h).
 *
 * f16 uses F16C (vcvtph2ps, and vcvtps2ph with rounding mode "nearest
 * even", which is the IEEE conversion the scalar code spells out) when the
 * build targets a CPU that has it. bf16 has no such instruction on AVX2
 * machines; its conversions are plain integer work, 8 lanes at a time:
 * widening is a zero-extend and a shift, rounding adds 0x7FFF plus the
 * lowest kept bit (ties to even) and keeps the top half, with NaN lanes
 * blended to their quiet form. Tails use the scalar functions, so every
 * element goes through one definition or a lane-for-lane copy of it. */
#include "ops/cpu/half.h"

#if defined(__AVX2__)
#include <immintrin.h>
#endif

void eo_half_to_f32_scalar(int dt, int64_t n, const uint16_t *src, float *dst)
{
    for (int64_t i = 0; i < n; i++)
        dst[i] = eo_half_get(dt, src[i]);
}

void eo_f32_to_half_scalar(int dt, int64_t n, const float *src, uint16_t *dst)
{
    for (int64_t i = 0; i < n; i++)
        dst[i] = eo_half_put(dt, src[i]);
}

void eo_half_to_f32(int dt, int64_t n, const uint16_t *src, float *dst)
{
    int64_t i = 0;
#if defined(__F16C__)
    if (dt == 3)
        for (; i + 8 <= n; i += 8)
            _mm256_storeu_ps(dst + i,
                             _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(src + i))));
#endif
#if defined(__AVX2__)
    if (dt == 2)
        for (; i + 8 <= n; i += 8) {
            __m256i w = _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)(src + i)));
            _mm256_storeu_si256((__m256i *)(dst + i), _mm256_slli_epi32(w, 16));
        }
#endif
    eo_half_to_f32_scalar(dt, n - i, src + i, dst + i);
}

#if defined(__AVX2__)
/* Eight f32 lanes rounded to bf16, as 32-bit lanes holding 16-bit values. */
static inline __m256i bf16_lanes(__m256 x)
{
    const __m256i u = _mm256_castps_si256(x);
    const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1));
    const __m256i r = _mm256_srli_epi32(
        _mm256_add_epi32(u, _mm256_add_epi32(lsb, _mm256_set1_epi32(0x7fff))), 16);
    const __m256i q = _mm256_or_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(0x40));
    const __m256 nan = _mm256_cmp_ps(x, x, _CMP_UNORD_Q);
    return _mm256_blendv_epi8(r, q, _mm256_castps_si256(nan));
}
#endif

void eo_f32_to_half(int dt, int64_t n, const float *src, uint16_t *dst)
{
    int64_t i = 0;
#if defined(__F16C__)
    if (dt == 3)
        for (; i + 8 <= n; i += 8)
            _mm_storeu_si128((__m128i *)(dst + i),
                             _mm256_cvtps_ph(_mm256_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT));
#endif
#if defined(__AVX2__)
    if (dt == 2)
        for (; i + 16 <= n; i += 16) {
            __m256i lo = bf16_lanes(_mm256_loadu_ps(src + i));
            __m256i hi = bf16_lanes(_mm256_loadu_ps(src + i + 8));
            /* packus works within 128-bit halves: [lo0 hi0 lo1 hi1] -> reorder */
            __m256i p = _mm256_permute4x64_epi64(_mm256_packus_epi32(lo, hi), 0xd8);
            _mm256_storeu_si256((__m256i *)(dst + i), p);
        }
#endif
    eo_f32_to_half_scalar(dt, n - i, src + i, dst + i);
}
