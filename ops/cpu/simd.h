/* ops/cpu/simd.h — the AVX2+FMA pieces shared by the row kernels (softmax,
 * cross-entropy, layernorm, GELU, attention): vectorised exp (full range;
 * a cheaper table form for [-87.33, 88]; expm1), tail masks and masked
 * loads/stores, streamed stores, lane reductions, and the max /
 * sum-of-exps of a row.
 *
 * Why a header of static inline functions: each kernel file compiles its
 * own copy with its own flags, so nothing here costs a call, and nothing
 * here exists unless the compiler was told the CPU has AVX2 and FMA
 * (-march=native does; NATIVE=0 builds without). Every kernel keeps a
 * portable scalar path beside its vector one; the kernels suite holds
 * both to the same tolerances (make NATIVE=0 builds the scalar ones).
 *
 * Why our own expf: libm's expf is scalar, and the row kernels spend most
 * of their arithmetic in exp. Eight lanes at once, in about 0.2 ns per
 * element per core for the table form (measured), brings softmax, GELU
 * and cross-entropy within reach of memory speed; exp stays their largest
 * cost even so: a cross-entropy forward, which reads 4 bytes per exp, is
 * bound by it on one core. */
#ifndef EO_SIMD_H
#define EO_SIMD_H

#include <float.h>
#include <math.h>
#include <stdint.h>

/* Does x[0..n) hold a NaN? For the rare rows where neither the max nor
 * the sum of exps can tell (every other entry -inf, so there is nothing
 * to sum); a plain loop, on every path. */
static inline int eo_row_has_nan(const float *x, int64_t n)
{
    for (int64_t j = 0; j < n; j++)
        if (x[j] != x[j])
            return 1;
    return 0;
}

#if defined(__AVX2__) && defined(__FMA__)
#define EO_AVX2 1
#include <immintrin.h>

/* For the per-vector helpers the loops are built from: inlining them is
 * what lets their switch on a constant op fold away and their constants
 * stay in registers; left to itself the compiler can decide a helper is
 * too big and call it per vector (measured a quarter slower for GELU).
 * gcc and clang, the compilers that get this far, both accept it. */
#define EO_V8_INLINE static inline __attribute__((always_inline))

/* ---- exp -------------------------------------------------------------
 * Method: x = n ln2 + r with n = round(x / ln2), |r| <= ln2/2; then
 * exp(x) = 2^n exp(r). ln2 is split into a float part with trailing zero
 * bits and a tiny rest, so r = x - n ln2 keeps its digits. exp(r) - 1 is
 * its Taylor series to r^7: the first term left out is r^8/8! e^|r| <=
 * 1.1e-8 relative, under a fifth of an ulp; rounding in Horner's scheme
 * adds about one ulp. Keeping the series as q = exp(r) - 1 (rather than
 * exp(r)) lets the same code give expm1 without cancellation. */
static inline __m256 eo_v8_exp_reduce(__m256 x, __m256 n)
{
    const __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693145751953125f), x);
    return _mm256_fnmadd_ps(n, _mm256_set1_ps(1.42860682030941723e-6f), r);
}

static inline __m256 eo_v8_expm1_series(__m256 r)
{
    __m256 p = _mm256_set1_ps(1.0f / 5040.0f);
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 720.0f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 120.0f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 24.0f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f / 6.0f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(0.5f));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
    return _mm256_mul_ps(p, r);
}

/* exp(x), the whole float range. 2^n is applied as two halves,
 * 2^(n/2) 2^(n-n/2), so every factor is a normal float: results that are
 * denormal (x below -87.3) are rounded by the last multiply, and x above
 * 88.72 overflows to +inf as it should.
 *
 * Error bound: at most 2 ulp against the exactly rounded exp over the
 * whole range; the test checks every 2^-10 step of [-104, 89] and random
 * points, and a sweep of every fourth float in that range measured at
 * most 1 ulp. Special values: -inf and x < -104 give +0, +inf gives +inf,
 * NaN gives NaN. */
static inline __m256 eo_v8_exp(__m256 x)
{
    /* Clamping keeps n within what the two 2^(n/2) factors can express;
     * exp(-104) is below half the smallest denormal, so it rounds to 0.
     * The constant is the first operand so a NaN x is what comes out. */
    x = _mm256_max_ps(_mm256_set1_ps(-104.0f), x);
    x = _mm256_min_ps(_mm256_set1_ps(89.0f), x);
    const __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                                     _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    const __m256 q = eo_v8_expm1_series(eo_v8_exp_reduce(x, n));
    const __m256i ni = _mm256_cvtps_epi32(n);
    const __m256i n1 = _mm256_srai_epi32(ni, 1);
    const __m256i n2 = _mm256_sub_epi32(ni, n1);
    const __m256i bias = _mm256_set1_epi32(127);
    const __m256 s1 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n1, bias), 23));
    const __m256 s2 = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(n2, bias), 23));
    return _mm256_mul_ps(_mm256_fmadd_ps(s1, q, s1), s2);
}

/* exp on [-87.33, 88]: the hot loop of the row kernels (softmax and
 * cross-entropy terms once the row max is subtracted, the sigmoid inside
 * GELU), so it gets its own, cheaper method than eo_v8_exp: 11 vector
 * instructions instead of 17, about 35 % faster on one core (measured),
 * in the entry points below.
 *
 * Method: eighths of ln2. n = round(8 x / ln2), r = x - n ln2/8, so
 * |r| <= ln2/16 = 0.0433, and exp(x) = 2^(n>>3) * 2^((n&7)/8) * exp(r).
 * The eight values 2^(j/8) sit in one register and one permute picks each
 * lane's (vpermps reads only the low three bits of the index, which are
 * n&7). On so short an interval exp(r) - 1 = r P(r) needs only a
 * quadratic P: a minimax fit (Remez, for the relative error of P; 8.6e-7,
 * so 3.7e-8 on exp(r), with the coefficients rounded to float), where
 * eo_v8_exp needs Taylor to the seventh degree.
 *
 * n comes from rounding by adding 1.5 * 2^23: the float sum then holds n
 * in its low mantissa bits (two's complement for n < 0), so the same bits
 * give the permute index and, shifted up by 20, n * 2^20 = (n>>3) * 2^23
 * + (n&7) * 2^20: 2^(n>>3) in the exponent field, plus the index bits
 * one place above where they would harm. The table entries, held as
 * integers, have (j&7) * 2^20 taken off beforehand, so one integer add of
 * the shifted sum gives 2^(n>>3) 2^((n&7)/8) exactly (the same bits a
 * mask of the index bits would, one instruction fewer: 8-9 % of the exp,
 * measured in a sum of exps in L1). x must already be clamped to
 * [-87.336544, 88], where n stays in [-1008, 1016] and every exponent is
 * a normal one.
 *
 * Error: checked against double exp for every float in [-87.33, 88]: at
 * most 1.26 ulp, and never more than one float away from the correctly
 * rounded result (which it returns for 97.5 % of inputs). The table
 * entries, each within half an ulp, are the largest share. */
/* The method's constants, shared with the 16-lane form below. */
#define EO_EXP8_POW8 1.0f, 1.09050773f, 1.18920712f, 1.29683955f, \
                     1.41421356f, 1.54221083f, 1.68179283f, 1.83400809f /* 2^(j/8) */
#define EO_EXP8_MAGIC 12582912.0f  /* 1.5 * 2^23 */
#define EO_EXP8_K 11.5415603f      /* 8 / ln2 */
#define EO_EXP8_LN2_HI 0.086639404296875f /* ln2/8: 13 significant bits, so n times */
#define EO_EXP8_LN2_LO 3.99327312e-6f     /* it is exact for |n| <= 1016; + the rest */
#define EO_EXP8_LN2 0.0866433976f  /* ln2/8 rounded, within 2.8e-9 of it relatively */
#define EO_EXP8_P1 0.500058711f    /* P(r) = 1 + P1 r + P2 r^2 */
#define EO_EXP8_P2 0.166666672f
#define EO_EXP8_LO (-87.336544f)   /* ln(FLT_MIN) */

/* (j&7) * 2^20 for j = 0..7, taken off each table entry (see above). */
#define EO_EXP8_INDEX_BITS 0, 1 << 20, 2 << 20, 3 << 20, 4 << 20, 5 << 20, 6 << 20, 7 << 20

/* The end both entry points share: 2^(n>>3) 2^((n&7)/8) exp(r), from
 * t (n in its low mantissa bits, see above) and r. The table is a
 * constant: the compiler folds the subtraction. */
static inline __m256 eo_v8_exp_table(__m256 t, __m256 r)
{
    const __m256 pow8 = _mm256_castsi256_ps(_mm256_sub_epi32(
        _mm256_castps_si256(_mm256_setr_ps(EO_EXP8_POW8)), _mm256_setr_epi32(EO_EXP8_INDEX_BITS)));
    const __m256i ti = _mm256_castps_si256(t);
    const __m256 s = _mm256_castsi256_ps(_mm256_add_epi32(
        _mm256_castps_si256(_mm256_permutevar8x32_ps(pow8, ti)), _mm256_slli_epi32(ti, 20)));
    __m256 p = _mm256_fmadd_ps(_mm256_set1_ps(EO_EXP8_P2), r, _mm256_set1_ps(EO_EXP8_P1));
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.0f));
    return _mm256_fmadd_ps(s, _mm256_mul_ps(p, r), s); /* s exp(r) = s + s (exp(r) - 1) */
}

static inline __m256 eo_v8_exp_clamped(__m256 xc)
{
    const __m256 magic = _mm256_set1_ps(EO_EXP8_MAGIC);
    const __m256 t = _mm256_fmadd_ps(xc, _mm256_set1_ps(EO_EXP8_K), magic);
    const __m256 n = _mm256_sub_ps(t, magic);
    __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(EO_EXP8_LN2_HI), xc);
    r = _mm256_fnmadd_ps(n, _mm256_set1_ps(EO_EXP8_LN2_LO), r);
    return eo_v8_exp_table(t, r);
}

/* exp(u ln2 / 8) = 2^(u/8), for an argument a caller has already scaled
 * by 8/ln2 (folded into its own constants, as GELU does) and clamped to
 * [-1008, 1016]. The reduction is then two subtractions and a product,
 * r = (u - n) ln2/8, with u - n exact and ln2/8 rounded within 2.8e-9:
 * two fused multiply-adds fewer than eo_v8_exp_clamped, and next to no
 * error beyond the rounding already in u (the test holds it to one float
 * of 2^(u/8) over the whole range). */
static inline __m256 eo_v8_exp_scaled(__m256 u)
{
    const __m256 magic = _mm256_set1_ps(EO_EXP8_MAGIC);
    const __m256 t = _mm256_add_ps(u, magic);
    const __m256 r = _mm256_mul_ps(_mm256_sub_ps(u, _mm256_sub_ps(t, magic)),
                                   _mm256_set1_ps(EO_EXP8_LN2));
    return eo_v8_exp_table(t, r);
}

/* exp(x) for x <= 0 (and -inf), for values that are kept (softmax
 * probabilities): within one float of exact while exp(x) >= FLT_MIN
 * (x >= -87.33); below, the result is flushed to 0 instead of rounded to
 * a denormal (an absolute error under 1.2e-38, invisible next to the 1
 * the row max contributes), so a masked -inf entry gets exactly 0. NaN
 * gives NaN. Positive x is outside the contract. */
static inline __m256 eo_v8_exp_neg(__m256 x)
{
    const __m256 lo = _mm256_set1_ps(EO_EXP8_LO);
    const __m256 tiny = _mm256_cmp_ps(x, lo, _CMP_LT_OQ);
    return _mm256_andnot_ps(tiny, eo_v8_exp_clamped(_mm256_max_ps(lo, x))); /* NaN passes max */
}

/* exp(x) for x <= 88, saturating below: for terms that are only summed
 * (a log-sum-exp) or divided into (a sigmoid), where the two compare-and-
 * mask instructions of the flush are worth saving (about a tenth of a sum
 * of exps, measured). Within one float of exact down to x = -87.33;
 * below, x is clamped there, so the result is FLT_MIN-sized instead of
 * smaller (an absolute error under 1.2e-38; -inf gives 1.2e-38, not 0).
 * NaN gives NaN. Above 88 is outside the contract: clamp first (the
 * sigmoid does). */
static inline __m256 eo_v8_exp_sat(__m256 x)
{
    return eo_v8_exp_clamped(_mm256_max_ps(_mm256_set1_ps(EO_EXP8_LO), x));
}

/* exp(x) for x <= 0 whose results are only added up: the log-sum-exp of
 * the cross-entropy forward and log_softmax. The reduction
 * takes one step instead of two, r = x - n fl(ln2/8): ln2/8 rounded to
 * float is within 2.4e-10 of it, so r is off by at most |n| 2.4e-10 and
 * the term by |x| 2.8e-9 relatively -- within one float of exp for
 * |x| <= 10, within five down to x = -87.33 (the test checks both, over
 * every float). Added up, that
 * is what matters: in a sum whose largest term is exp(0) = 1, the terms
 * that carry weight have |x| <= ln N, so the sum is off by at most
 * ln(N) 2.8e-9 relatively (3e-8 for N = 50257 terms), less than its own
 * rounding. One fused multiply-add fewer per 8 terms: a sum of exps in L1
 * takes a tenth less time (measured). eo_v8_exp_sum_clamped wants x in
 * [-87.336544, 0] already; eo_v8_exp_sum clamps below as eo_v8_exp_sat
 * does (-inf gives 1.2e-38). NaN gives NaN. */
static inline __m256 eo_v8_exp_sum_clamped(__m256 xc)
{
    const __m256 magic = _mm256_set1_ps(EO_EXP8_MAGIC);
    const __m256 t = _mm256_fmadd_ps(xc, _mm256_set1_ps(EO_EXP8_K), magic);
    const __m256 n = _mm256_sub_ps(t, magic);
    return eo_v8_exp_table(t, _mm256_fnmadd_ps(n, _mm256_set1_ps(EO_EXP8_LN2), xc));
}

static inline __m256 eo_v8_exp_sum(__m256 x)
{
    return eo_v8_exp_sum_clamped(_mm256_max_ps(_mm256_set1_ps(EO_EXP8_LO), x)); /* NaN passes */
}

#if defined(__AVX512F__)
/* ---- 16 lanes --------------------------------------------------------------
 * Where the compiler may use AVX-512 (-march=native on a CPU that has
 * it), the loops bound by exp arithmetic, the sums of the cross-entropy
 * and softmax forwards, run 16 lanes per instruction (make NATIVE=avx2
 * builds without). Same method, constants and order of operations as
 * the eo_v8_ forms, so the same result in every lane (the test checks
 * it). Even a CPU that executes 512-bit instructions as two 256-bit
 * halves, as this project's development machine does, gains from issuing
 * half as many: the cross-entropy forward measured a fifth faster. */
#define EO_AVX512 1
/* One more level, so the table macros expand into 16 arguments before
 * _mm512_setr_ps (a macro in some compilers) counts them. */
#define EO_V16_SETR(...) _mm512_setr_ps(__VA_ARGS__)
#define EO_V16_SETR_EPI32(...) _mm512_setr_epi32(__VA_ARGS__)

/* eo_v8_exp_table in 16 lanes. */
static inline __m512 eo_v16_exp_table(__m512 t, __m512 r)
{
    /* The 16-lane permute reads four index bits: the table twice over
     * makes the fourth, bit 3 of n, pick the same entry. */
    const __m512 pow8 = _mm512_castsi512_ps(
        _mm512_sub_epi32(_mm512_castps_si512(EO_V16_SETR(EO_EXP8_POW8, EO_EXP8_POW8)),
                         EO_V16_SETR_EPI32(EO_EXP8_INDEX_BITS, EO_EXP8_INDEX_BITS)));
    const __m512i ti = _mm512_castps_si512(t);
    const __m512 s = _mm512_castsi512_ps(_mm512_add_epi32(
        _mm512_castps_si512(_mm512_permutexvar_ps(ti, pow8)), _mm512_slli_epi32(ti, 20)));
    __m512 p = _mm512_fmadd_ps(_mm512_set1_ps(EO_EXP8_P2), r, _mm512_set1_ps(EO_EXP8_P1));
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
    return _mm512_fmadd_ps(s, _mm512_mul_ps(p, r), s);
}

static inline __m512 eo_v16_exp_clamped(__m512 xc)
{
    const __m512 magic = _mm512_set1_ps(EO_EXP8_MAGIC);
    const __m512 t = _mm512_fmadd_ps(xc, _mm512_set1_ps(EO_EXP8_K), magic);
    const __m512 n = _mm512_sub_ps(t, magic);
    __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(EO_EXP8_LN2_HI), xc);
    r = _mm512_fnmadd_ps(n, _mm512_set1_ps(EO_EXP8_LN2_LO), r);
    return eo_v16_exp_table(t, r);
}

static inline __m512 eo_v16_exp_sat(__m512 x)
{
    return eo_v16_exp_clamped(_mm512_max_ps(_mm512_set1_ps(EO_EXP8_LO), x)); /* NaN passes */
}

static inline __m512 eo_v16_exp_sum_clamped(__m512 xc)
{
    const __m512 magic = _mm512_set1_ps(EO_EXP8_MAGIC);
    const __m512 t = _mm512_fmadd_ps(xc, _mm512_set1_ps(EO_EXP8_K), magic);
    const __m512 n = _mm512_sub_ps(t, magic);
    return eo_v16_exp_table(t, _mm512_fnmadd_ps(n, _mm512_set1_ps(EO_EXP8_LN2), xc));
}

static inline __m512 eo_v16_exp_sum(__m512 x)
{
    return eo_v16_exp_sum_clamped(_mm512_max_ps(_mm512_set1_ps(EO_EXP8_LO), x)); /* NaN passes */
}

/* eo_v8_exp_neg's flush: lanes below ln(FLT_MIN) (not NaN) give 0. */
static inline __m512 eo_v16_exp_neg(__m512 x)
{
    const __m512 lo = _mm512_set1_ps(EO_EXP8_LO);
    const __mmask16 keep = _mm512_cmp_ps_mask(x, lo, _CMP_NLT_UQ);
    return _mm512_maskz_mov_ps(keep, eo_v16_exp_clamped(_mm512_max_ps(lo, x)));
}

/* The two 8-lane halves of a 16-lane vector. */
static inline __m256 eo_v16_lo(__m512 v)
{
    return _mm512_castps512_ps256(v);
}

static inline __m256 eo_v16_hi(__m512 v)
{
    return _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1));
}
#endif

/* exp(x) - 1 for x <= 0, relative accuracy kept even as x -> 0 (where
 * exp(x) - 1 would cancel): a sweep of every float in [-30, 0) measured
 * at most 1 ulp. -1 below x = -87.33. For tanh.
 *
 * This one keeps eo_v8_exp's whole-ln2 reduction and series, because
 * 2^n must be exact here: with a rounded table entry s, the s - 1 below
 * would carry the entry's rounding, relative to a small result. n is
 * rounded by adding 1.5 * 2^23 + 127, which leaves n + 127 in the low
 * bits, and a shift moves them into the exponent field: 2^n in one step
 * (valid down to n = -126, hence the clamp). expm1(x) = s q + (s - 1). */
static inline __m256 eo_v8_expm1_neg(__m256 x)
{
    const __m256 lo = _mm256_set1_ps(-87.336544f);
    const __m256 magic = _mm256_set1_ps(12582912.0f + 127.0f);
    const __m256 tiny = _mm256_cmp_ps(x, lo, _CMP_LT_OQ);
    const __m256 xc = _mm256_max_ps(lo, x);
    const __m256 t = _mm256_fmadd_ps(xc, _mm256_set1_ps(1.44269504088896341f), magic);
    const __m256 n = _mm256_sub_ps(t, magic);
    const __m256 s = _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_castps_si256(t), 23));
    const __m256 q = eo_v8_expm1_series(eo_v8_exp_reduce(xc, n));
    const __m256 one = _mm256_set1_ps(1.0f);
    return _mm256_blendv_ps(_mm256_fmadd_ps(s, q, _mm256_sub_ps(s, one)),
                            _mm256_set1_ps(-1.0f), tiny);
}

/* Mask whose first n lanes (n in [0, 8]) are on: for loading and storing
 * the last, partial vector of a row. Tails go through the same vector
 * code as the body, so an element's result does not depend on where a
 * thread's chunk happens to end. */
static inline __m256i eo_v8_mask(int64_t n)
{
    return _mm256_cmpgt_epi32(_mm256_set1_epi32((int)n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

/* Masked load with `fill` in the lanes that are off. */
static inline __m256 eo_v8_load_tail(const float *p, __m256i mask, float fill)
{
    return _mm256_blendv_ps(_mm256_set1_ps(fill), _mm256_maskload_ps(p, mask),
                            _mm256_castsi256_ps(mask));
}

/* Streaming (non-temporal) stores for the write pass of the memory-bound
 * kernels. A plain store to a line that is not in cache first reads the
 * line (read-for-ownership), so a kernel that reads n bytes and writes n
 * moves 3n over the memory bus; memcpy, the bandwidth it is measured
 * against, moves 2n. A streamed store goes to memory through
 * write-combining buffers without that read, but it also leaves the
 * output out of cache, which costs the next op a trip to memory when the
 * output would have fit. Hence the threshold: outputs of at least
 * EO_STREAM_MIN_BYTES (32 MiB, the size of a large server L3) are
 * streamed; smaller ones keep ordinary stores. At 8 MiB, streaming a
 * 16 MiB softmax output measured a fifth slower than leaving it in a
 * 32 MiB L3. A kernel that streams issues _mm_sfence() at the end of
 * each worker's chunk, so its stores are visible before the thread hook
 * reports the chunk done.
 *
 * The forwards of layernorm, softmax, log_softmax and the unary ops
 * stream. Streaming pays only when the arithmetic is overlapped with the
 * memory traffic: softmax and layernorm write one row while computing
 * the next (see softmax.c), and GELU's exp had to get cheaper first. */
#define EO_STREAM_MIN_BYTES ((int64_t)32 << 20)
#define EO_V8_STREAM 2 /* `whole` value of eo_v8_st: a streamed, aligned vector */

static inline int eo_v8_stream_worth(int64_t out_floats)
{
    return out_floats * (int64_t)sizeof(float) >= EO_STREAM_MIN_BYTES;
}

/* Load or store 8 floats, or only the lanes of m when !whole (masked-off
 * loads read `fill`). Loops call these twice, for the whole vectors with
 * whole = 1 (EO_V8_STREAM for streamed, aligned stores; loads take it
 * as 1) and once for the tail with whole = 0, so after inlining each
 * call is a single plain, streamed or masked instruction. */
static inline __m256 eo_v8_ld(const float *p, int whole, __m256i m, float fill)
{
    return whole ? _mm256_loadu_ps(p) : eo_v8_load_tail(p, m, fill);
}

static inline void eo_v8_st(float *p, int whole, __m256i m, __m256 v)
{
    if (whole == EO_V8_STREAM)
        _mm256_stream_ps(p, v);
    else if (whole)
        _mm256_storeu_ps(p, v);
    else
        _mm256_maskstore_ps(p, m, v);
}

/* Head of a streamed row: how many of its first n elements come before
 * y reaches a 32-byte boundary (at most 7, at most n). The head and the
 * last n - h elements that do not fill a vector go through the masked
 * store; the aligned vectors between stream. Where the split falls does
 * not change any result: these are elementwise passes. */
static inline int64_t eo_v8_stream_head(const float *y, int64_t n)
{
    const int64_t h = (int64_t)(((32u - ((uintptr_t)y & 31u)) & 31u) / sizeof(float));
    return h < n ? h : n;
}

static inline float eo_v8_hsum(__m256 v)
{
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_shuffle_ps(s, s, 1));
    return _mm_cvtss_f32(s);
}

static inline float eo_v8_hmax(__m256 v)
{
    __m128 s = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_max_ps(s, _mm_movehl_ps(s, s));
    s = _mm_max_ss(s, _mm_shuffle_ps(s, s, 1));
    return _mm_cvtss_f32(s);
}

static inline float eo_v8_hmin(__m256 v)
{
    __m128 s = _mm_min_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_min_ps(s, _mm_movehl_ps(s, s));
    s = _mm_min_ss(s, _mm_shuffle_ps(s, s, 1));
    return _mm_cvtss_f32(s);
}

/* Max of a row (NaN-blind; -inf for an empty or all -inf row). The row
 * kernels do not need the max to see a NaN: a NaN anywhere makes the sum
 * of exps NaN, which is where they detect it (see eo_v8_row_max_sumexp),
 * so this hot loop stays one max per vector. Only a row whose other
 * entries are all -inf can hide a NaN from both: eo_row_has_nan checks
 * that rare case. */
static inline float eo_v8_row_max(const float *x, int64_t n)
{
    __m256 m0 = _mm256_set1_ps(-INFINITY), m1 = m0, m2 = m0, m3 = m0;
    int64_t j = 0;
    for (; j + 32 <= n; j += 32) {
        m0 = _mm256_max_ps(m0, _mm256_loadu_ps(x + j));
        m1 = _mm256_max_ps(m1, _mm256_loadu_ps(x + j + 8));
        m2 = _mm256_max_ps(m2, _mm256_loadu_ps(x + j + 16));
        m3 = _mm256_max_ps(m3, _mm256_loadu_ps(x + j + 24));
    }
    for (; j < n; j += 8)
        m0 = _mm256_max_ps(m0, eo_v8_load_tail(x + j, eo_v8_mask(n - j), -INFINITY));
    return eo_v8_hmax(_mm256_max_ps(_mm256_max_ps(m0, m1), _mm256_max_ps(m2, m3)));
}

/* eo_v8_row_max, and whether the row is "narrow": every x - max at least
 * EO_EXP8_LO (ln FLT_MIN), as in any row of finite logits spread by less
 * than 87. Then exp(x - max) needs neither eo_v8_exp_neg's flush nor
 * eo_v8_exp_sat's clamp: eo_v8_exp_clamped gives the same bits with
 * three (two) vector instructions fewer per 8 elements, a tenth of a
 * softmax row in cache. The min rides along in the max walk, which is
 * bound by its loads. The test is on fl(min - max), the smallest
 * difference the exp walk will form (rounding is monotonic). A row with
 * a -inf or a +inf, or whose min walk met a NaN last, is not narrow; a
 * NaN the min walk missed goes through eo_v8_exp_clamped as NaN, so the
 * row's sum is NaN as on the other path. */
static inline float eo_v8_row_max_narrow(const float *x, int64_t n, int *narrow)
{
    __m256 m0 = _mm256_set1_ps(-INFINITY), m1 = m0, m2 = m0, m3 = m0;
    __m256 l0 = _mm256_set1_ps(INFINITY), l1 = l0, l2 = l0, l3 = l0;
    int64_t j = 0;
    for (; j + 32 <= n; j += 32) {
        const __m256 a = _mm256_loadu_ps(x + j), b = _mm256_loadu_ps(x + j + 8);
        const __m256 c = _mm256_loadu_ps(x + j + 16), d = _mm256_loadu_ps(x + j + 24);
        m0 = _mm256_max_ps(m0, a);
        m1 = _mm256_max_ps(m1, b);
        m2 = _mm256_max_ps(m2, c);
        m3 = _mm256_max_ps(m3, d);
        l0 = _mm256_min_ps(l0, a);
        l1 = _mm256_min_ps(l1, b);
        l2 = _mm256_min_ps(l2, c);
        l3 = _mm256_min_ps(l3, d);
    }
    for (; j < n; j += 8) {
        const __m256i k = eo_v8_mask(n - j);
        m0 = _mm256_max_ps(m0, eo_v8_load_tail(x + j, k, -INFINITY));
        l0 = _mm256_min_ps(l0, eo_v8_load_tail(x + j, k, INFINITY));
    }
    const float M = eo_v8_hmax(_mm256_max_ps(_mm256_max_ps(m0, m1), _mm256_max_ps(m2, m3)));
    const float mn = eo_v8_hmin(_mm256_min_ps(_mm256_min_ps(l0, l1), _mm256_min_ps(l2, l3)));
    *narrow = mn - M >= EO_EXP8_LO;
    return M;
}

/* sum_j exp(x_j - max) over a row (the terms are only summed, so the
 * cheaper eo_v8_exp_sum).
 *
 * `next` (or NULL) is the row to be processed after this one: a cache
 * line of it is requested per 16 elements. This pass is bound by the exp
 * arithmetic and reads x from cache, so the memory system is otherwise
 * idle; prefetching lets the next row's first pass find it in cache
 * instead of waiting on memory with the arithmetic units idle. */
static inline float eo_v8_row_sumexp(const float *x, int64_t n, float max, const float *next)
{
    const __m256 m = _mm256_set1_ps(max);
    __m256 s0 = _mm256_setzero_ps(), s1 = s0;
    int64_t j = 0;
    for (; j + 16 <= n; j += 16) {
        if (next)
            _mm_prefetch((const char *)(next + j), _MM_HINT_T1);
        s0 = _mm256_add_ps(s0, eo_v8_exp_sum(_mm256_sub_ps(_mm256_loadu_ps(x + j), m)));
        s1 = _mm256_add_ps(s1, eo_v8_exp_sum(_mm256_sub_ps(_mm256_loadu_ps(x + j + 8), m)));
    }
    for (; j < n; j += 8) {
        const __m256 a = eo_v8_load_tail(x + j, eo_v8_mask(n - j), -INFINITY);
        s0 = _mm256_add_ps(s0, eo_v8_exp_sum(_mm256_sub_ps(a, m)));
    }
    return eo_v8_hsum(_mm256_add_ps(s0, s1));
}

/* Rows up to this many floats (256 KiB) are read twice (max, then the
 * sum of exps): the second read comes from L2 (from L3 where L2 is
 * small), and each element costs one exp.
 * Longer rows take the one-read online form below, which spends 1.25 exp
 * per element to spare a second trip to memory. */
#define EO_ROW_CACHED 65536

/* A row's max m and s = sum_j exp(x_j - m), with one read of the row
 * from memory (`next` as for eo_v8_row_sumexp).
 *
 * For long rows this is the online normaliser (Milakov & Gimelshein,
 * 2018): each lane keeps a running max and a sum scaled to it; when the
 * max grows, the sum is rescaled by exp(old - new), once per block of 32
 * elements rather than once per element. Lanes start at -FLT_MAX, not
 * -inf, so a -inf entry gives exp(-inf) = 0 rather than exp(NaN): a row
 * of only -inf ends with s = 0 in both forms, which the callers turn into
 * "no probability mass". A NaN anywhere in the row (or a +inf, whose
 * x - max is inf - inf) makes s NaN in both forms: its own term is NaN
 * whatever the max, exp keeps NaN, and every later add and rescale keeps
 * it; the callers turn that into a NaN row, as PyTorch gives. */
static inline void eo_v8_row_max_sumexp(const float *x, int64_t n, float *max_out, float *sum_out,
                                        const float *next)
{
    if (n <= EO_ROW_CACHED) {
        const float M = eo_v8_row_max(x, n);
        *max_out = M;
        *sum_out = M == -INFINITY ? (eo_row_has_nan(x, n) ? NAN : 0.0f)
                                  : eo_v8_row_sumexp(x, n, M, next);
        return;
    }
    __m256 m = _mm256_set1_ps(-FLT_MAX), s = _mm256_setzero_ps();
    int64_t j = 0;
    for (; j + 32 <= n; j += 32) {
        const __m256 a = _mm256_loadu_ps(x + j), b = _mm256_loadu_ps(x + j + 8);
        const __m256 c = _mm256_loadu_ps(x + j + 16), d = _mm256_loadu_ps(x + j + 24);
        const __m256 bm = _mm256_max_ps(m, _mm256_max_ps(_mm256_max_ps(a, b), _mm256_max_ps(c, d)));
        const __m256 e = _mm256_add_ps(_mm256_add_ps(eo_v8_exp_neg(_mm256_sub_ps(a, bm)),
                                                     eo_v8_exp_neg(_mm256_sub_ps(b, bm))),
                                       _mm256_add_ps(eo_v8_exp_neg(_mm256_sub_ps(c, bm)),
                                                     eo_v8_exp_neg(_mm256_sub_ps(d, bm))));
        s = _mm256_fmadd_ps(s, eo_v8_exp_neg(_mm256_sub_ps(m, bm)), e);
        m = bm;
    }
    for (; j < n; j += 8) {
        const __m256 a = eo_v8_load_tail(x + j, eo_v8_mask(n - j), -INFINITY);
        const __m256 bm = _mm256_max_ps(m, a);
        s = _mm256_fmadd_ps(s, eo_v8_exp_neg(_mm256_sub_ps(m, bm)), eo_v8_exp_neg(_mm256_sub_ps(a, bm)));
        m = bm;
    }
    const float M = eo_v8_hmax(m);
    s = _mm256_mul_ps(s, eo_v8_exp_neg(_mm256_sub_ps(m, _mm256_set1_ps(M))));
    *max_out = M;
    *sum_out = eo_v8_hsum(s);
}

#endif /* AVX2 && FMA */
#endif
