/* ops/cpu/half.h — conversions between float32 and the two 16-bit float
 * formats, in one place for every CPU kernel and test.
 *
 *   bf16 (bfloat16): 1 sign, 8 exponent, 7 mantissa bits — the top half of
 *                    an f32, so the same range and 8 bits of precision;
 *   f16 (IEEE 754 binary16): 1 sign, 5 exponent (bias 15), 10 mantissa
 *                    bits; largest finite 65504, smallest normal 2^-14,
 *                    smallest subnormal 2^-24.
 *
 * Rounding (f32 -> 16 bit) is round-to-nearest, ties to even, done on the
 * bits: the discarded bits are compared with one half of the last kept
 * bit. Consequences, all tested on hand-picked values and against
 * PyTorch (tests/test_half.c):
 *  - overflow: f16 gives ±inf from 65520 up (the halfway point between
 *    65504 and 2^16, which ties to the even 2^16, i.e. inf); bf16 gives
 *    ±inf only where rounding reaches 2^128: from (2 - 2^-8) 2^127 (f32
 *    bits 0x7F7F8000, the halfway point above the largest bf16) up;
 *  - subnormals both ways: f32 values below 2^-14 become f16 subnormals
 *    (rounded on the same rule, so 2^-25 ties to 0 and 3 * 2^-26 rounds
 *    up to 2^-24); f32 subnormals become bf16 subnormals (bf16 has f32's
 *    exponent range); a value may round up into the next binade or from
 *    the largest subnormal into the smallest normal, which the carry into
 *    the exponent field does by itself;
 *  - NaN stays NaN, its sign kept, made quiet (the top mantissa bit set),
 *    its payload's top bits kept; ±0 and ±inf map to themselves.
 * Widening (16 bit -> f32) is exact; an f16 NaN is made quiet as well (as
 * the F16C instruction does), a bf16 NaN keeps its bits.
 *
 * The scalar functions here are the portable definition. The row
 * functions (half.c) use F16C's vcvtph2ps / vcvtps2ph (rounding mode
 * "nearest") for f16 and AVX2 integer lanes for bf16 when the build
 * targets a CPU with them; tests check them equal to the scalar ones on
 * all 65536 16-bit patterns and on a large set of f32 values. */
#ifndef EO_HALF_H
#define EO_HALF_H

#include <stdint.h>
#include <string.h>

static inline uint32_t eo_f32_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static inline float eo_bits_f32(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static inline float eo_bf16_to_f32(uint16_t h)
{
    return eo_bits_f32((uint32_t)h << 16);
}

static inline uint16_t eo_f32_to_bf16(float f)
{
    uint32_t u = eo_f32_bits(f);
    if ((u & 0x7fffffffu) > 0x7f800000u)               /* NaN: quiet, sign and payload top */
        return (uint16_t)((u >> 16) | 0x0040u);
    u += 0x7fffu + ((u >> 16) & 1u);                   /* RNE on the low 16 bits */
    return (uint16_t)(u >> 16);
}

static inline float eo_f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
    if (e == 0x1f)                                     /* inf, or NaN made quiet */
        return eo_bits_f32(sign | 0x7f800000u | (m << 13) | (m ? 0x400000u : 0));
    if (e == 0) {
        if (!m)
            return eo_bits_f32(sign);
        e = 113;                                       /* subnormal: normalise */
        while (!(m & 0x400u)) {
            m <<= 1;
            e--;
        }
        return eo_bits_f32(sign | (e << 23) | ((m & 0x3ffu) << 13));
    }
    return eo_bits_f32(sign | ((e + 112) << 23) | (m << 13));
}

static inline uint16_t eo_f32_to_f16(float f)
{
    uint32_t u = eo_f32_bits(f), sign = (u >> 16) & 0x8000u, r, rem, half;
    u &= 0x7fffffffu;
    if (u > 0x7f800000u)                               /* NaN: quiet, payload's top bits */
        return (uint16_t)(sign | 0x7e00u | ((u >> 13) & 0x3ffu));
    if (u >= 0x47800000u)                              /* >= 2^16 (and inf): inf */
        return (uint16_t)(sign | 0x7c00u);
    if (u < 0x38800000u) {                             /* below 2^-14: subnormal or 0 */
        if (u < 0x33000000u)                           /* below 2^-25: 0 */
            return (uint16_t)sign;
        uint32_t e = u >> 23, m = (u & 0x7fffffu) | 0x800000u, shift = 126 - e;
        r = m >> shift;                                /* units of 2^-24 */
        rem = m & ((1u << shift) - 1);
        half = 1u << (shift - 1);
    } else {
        r = (u >> 13) - (112u << 10);                  /* rebias 127 -> 15 */
        rem = u & 0x1fffu;
        half = 0x1000u;
    }
    if (rem > half || (rem == half && (r & 1u)))
        r++;                                           /* a carry moves to the next binade */
    return (uint16_t)(sign | r);
}

/* dt is 2 (bf16) or 3 (f16), the eo_dtype values (ops/kernels.h EO_K_*). */
static inline float eo_half_get(int dt, uint16_t h)
{
    return dt == 2 ? eo_bf16_to_f32(h) : eo_f16_to_f32(h);
}

static inline uint16_t eo_half_put(int dt, float f)
{
    return dt == 2 ? eo_f32_to_bf16(f) : eo_f32_to_f16(f);
}

/* dst[i] = src[i] widened to f32 / rounded to dt, i < n (ops/cpu/half.c);
 * SIMD where the build allows, bit-identical to the scalar functions. */
void eo_half_to_f32(int dt, int64_t n, const uint16_t *src, float *dst);
void eo_f32_to_half(int dt, int64_t n, const float *src, uint16_t *dst);
/* The same with the scalar functions only (the reference for tests). */
void eo_half_to_f32_scalar(int dt, int64_t n, const uint16_t *src, float *dst);
void eo_f32_to_half_scalar(int dt, int64_t n, const float *src, uint16_t *dst);

#endif
