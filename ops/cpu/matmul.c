/* ops/cpu/matmul.c — the CPU matmul: C = op(A)·op(B) + beta·C, batched.
 *
 * Why it is built this way. A matmul does 2·M·N·K flops on M·K + K·N
 * inputs, so it can run at the FMA units' speed only if each value loaded
 * from memory is used many times while it sits in a register or a near
 * cache. The classic answer (Goto & van de Geijn, "Anatomy of
 * High-Performance Matrix Multiplication", ACM TOMS 2008) is followed:
 *
 *   for each NC-wide column block of B            (B block lives in L3)
 *     for each KC-deep slice of K
 *       pack B[KC x NC] into NR-wide slivers
 *       for each MC-tall row block of A           (A block lives in L2)
 *         pack A[MC x KC] into MR-tall slivers
 *         for each NR sliver of B                 (B sliver lives in L1)
 *           for each MR sliver of A
 *             micro-kernel: C[MR x NR] += A sliver · B sliver
 *
 * The micro-kernel keeps an MR x NR tile of C in registers across the
 * whole KC loop: per k it loads NR values of B and MR values of A and does
 * MR·NR multiply-adds, so registers, not memory, feed the FMA units.
 *
 * Packing copies each block into exactly the order the micro-kernel reads
 * it (contiguous, aligned). That is also where transposes and the leading
 * dimensions are absorbed: after packing, all four (ta, tb) variants run
 * the same micro-kernel at the same speed. Ragged edges (M or N not a
 * multiple of the tile) are packed with zero padding, and the few edge
 * tiles are computed into a small buffer and then copied out, so the
 * micro-kernel itself never branches on sizes. One exception to packing:
 * when the block of C is narrow, a packed A block would be reused too few
 * times to repay the copy, so untransposed A is then read where it lies
 * (the micro-kernel takes A's row and column strides, not a fixed layout).
 * Small problems, such as the 64x64 products of attention heads, avoid
 * most of the packing cost that way.
 *
 * Reproducibility. Every element of C is computed by one thread, from
 * zero, over the same KC slices in the same order; so the result does not
 * depend on how many threads ran it or on which tile an element fell into.
 * The thread split is over whole (batch item, block of rows or columns)
 * pieces of C, decided once per call. */
#include "ops/kernels.h"
#include "ops/cpu/matmul.h"
#include "ops/cpu/half.h"

#include <string.h>

#if defined(__AVX2__) && defined(__FMA__)
#define EO_MM_HAVE_SIMD 1
#include <immintrin.h>
#else
#define EO_MM_HAVE_SIMD 0
#endif

enum { MR = EO_MM_MR, NR = EO_MM_NR };

/* Cache blocking for a core with 32 KiB L1d and >= 512 KiB L2.
 * KC: one B sliver (KC·NR·4 = 16 KiB) plus one A sliver (6 KiB) stay in
 *     L1 with room to spare while the micro-kernel streams them.
 * MC: the packed A block (MC·KC·4 = 144 KiB) sits in L2 with space left
 *     for the B slivers passing through.
 * NC: bounds the packed B block (KC·NC·4 = 2 MiB) held in L3; larger
 *     only saves re-packing A, which is already a small cost.
 * K is cut into equal slices no deeper than KC (784 → 4 x 196, not
 * 3 x 256 + 16) so no slice is too shallow to amortise its C update. */
#if defined(__ARM_ARCH_PROFILE) && __ARM_ARCH_PROFILE == 'M'
/* A microcontroller (Arm M-profile: no data cache, a few hundred KiB of
 * RAM in all) has nothing to block for, and the 2 MiB B block above would
 * not fit: these bound the packed workspace to about 40 KiB. */
enum { KC = 128, MC = 24, NC = 64 };
#else
enum { KC = 256, MC = 144, NC = 2048 };
#endif
/* The 16-bit matmul blocks its rows and columns smaller (the same KC, so
 * the same K slices and the same sums): its packed blocks and C tile are
 * scratch lent in the step arena beside activations that are half the
 * f32 size, and a 2 MiB B block would outweigh them. Smaller MC and NC
 * only re-read the packed B block from L2 and re-pack A a little more
 * often (once per NC16 columns: 1/128 of the multiply-adds). */
enum { MC16 = 72, NC16 = 128 };

/* Up to this width of C block, untransposed A is not packed (mm_block). */
enum { A_INPLACE_MAX_NC = 512 };

/* Below this many multiply-adds (about 5 microseconds of one core) a
 * matmul runs on the calling thread: waking workers would cost more than
 * it saves. */
#define PAR_MIN_FMAS (1 << 19)

static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }
static int64_t round_up(int64_t x, int64_t m) { return (x + m - 1) / m * m; }

/* ---------------------------------------------------------------------------
 * Portable path: packing by plain element loops, and a micro-kernel the
 * compiler may vectorise as it sees fit. */

/* The packing reads op(A) and op(B) in their stored element type `el`:
 * f32 (EO_K_F32), or bf16 / f16 (EO_K_BF16, EO_K_F16), widened exactly to
 * f32 on the way into the packed slivers. That is how eo_mm_run16 (the
 * 16-bit matmul) needs no f32 copy of its operands: the packed blocks are
 * the only f32 form they ever take. Each packer is written once, with el
 * as an argument; the instances below pass it as a constant, so the
 * compiler folds the f32 instance back to plain float loads. */
static inline float ld1(int el, const void *p, int64_t i)
{
    if (el == EO_K_F32)
        return ((const float *)p)[i];
    return eo_half_get(el, ((const uint16_t *)p)[i]);
}

/* Pack rows [i0, i0+mc) and k [p0, p0+kc) of op(A) into MR-row slivers:
 * dst[s*MR*kc + k*MR + r] = op(A)[i0 + s*MR + r][p0 + k], 0 past row mc. */
static inline void pack_a_portable(int el, int ta, int64_t mc, int64_t kc, const void *A,
                                   int64_t lda, int64_t i0, int64_t p0, float *dst)
{
    for (int64_t s = 0; s < mc; s += MR) {
        int64_t mr = min64(MR, mc - s);
        for (int64_t k = 0; k < kc; k++) {
            for (int64_t r = 0; r < mr; r++) {
                int64_t i = i0 + s + r, p = p0 + k;
                dst[k * MR + r] = ld1(el, A, ta ? p * lda + i : i * lda + p);
            }
            for (int64_t r = mr; r < MR; r++)
                dst[k * MR + r] = 0.0f;
        }
        dst += MR * kc;
    }
}

/* Pack k [p0, p0+kc) and columns [j0, j0+nc) of op(B) into NR-column
 * slivers: dst[s*NR*kc + k*NR + c] = op(B)[p0 + k][j0 + s*NR + c]. */
static inline void pack_b_portable(int el, int tb, int64_t kc, int64_t nc, const void *B,
                                   int64_t ldb, int64_t p0, int64_t j0, float *dst)
{
    for (int64_t s = 0; s < nc; s += NR) {
        int64_t nr = min64(NR, nc - s);
        for (int64_t k = 0; k < kc; k++) {
            for (int64_t c = 0; c < nr; c++) {
                int64_t j = j0 + s + c, p = p0 + k;
                dst[k * NR + c] = ld1(el, B, tb ? j * ldb + p : p * ldb + j);
            }
            for (int64_t c = nr; c < NR; c++)
                dst[k * NR + c] = 0.0f;
        }
        dst += NR * kc;
    }
}

void eo_mm_micro_portable(int64_t kc, const float *a, int64_t rsa, int64_t csa, const float *b,
                          float *c, int64_t ldc, int accumulate)
{
    float acc[MR][NR];
    memset(acc, 0, sizeof acc);
    for (int64_t k = 0; k < kc; k++, a += csa, b += NR)
        for (int r = 0; r < MR; r++)
            for (int j = 0; j < NR; j++)
                acc[r][j] += a[r * rsa] * b[j];
    for (int r = 0; r < MR; r++)
        for (int j = 0; j < NR; j++)
            c[r * ldc + j] = accumulate ? c[r * ldc + j] + acc[r][j] : acc[r][j];
}

/* ---------------------------------------------------------------------------
 * AVX2 + FMA path. */
#if EO_MM_HAVE_SIMD

/* Elements i .. i+7 (or i .. i+3) of p, of type el, as f32 lanes: bf16 is
 * the top half of an f32 (shift left by 16); f16 goes through F16C's
 * vcvtph2ps where the build has it, else the scalar widening. Both are
 * exact and equal to eo_half_get (tests/test_half.c). */
static inline __m256 ld8(int el, const void *p, int64_t i)
{
    if (el == EO_K_F32)
        return _mm256_loadu_ps((const float *)p + i);
    const uint16_t *h = (const uint16_t *)p + i;
    if (el == EO_K_BF16)
        return _mm256_castsi256_ps(_mm256_slli_epi32(
            _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)(const void *)h)), 16));
#if defined(__F16C__)
    return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(const void *)h));
#else
    float t[8];
    for (int j = 0; j < 8; j++)
        t[j] = eo_f16_to_f32(h[j]);
    return _mm256_loadu_ps(t);
#endif
}
static inline __m128 ld4(int el, const void *p, int64_t i)
{
    if (el == EO_K_F32)
        return _mm_loadu_ps((const float *)p + i);
    const uint16_t *h = (const uint16_t *)p + i;
    float t[4];
    for (int j = 0; j < 4; j++)
        t[j] = eo_half_get(el, h[j]);
    return _mm_loadu_ps(t);
}

/* Load `rows` (<= 8) rows of 8 elements, src[at + i*ld ...], as an 8x8 block
 * (missing rows are zeros), transpose it, and store column j (now 8
 * values, one per row) at dst + j*ds: all of it (width 8) or its first
 * six values (width 6, an A sliver). Three rounds, each halving the size
 * of the blocks being swapped: interleave pairs of rows (unpack), then
 * pairs of pairs (shuffle), then exchange 128-bit halves (permute2f128).
 * Everything is a named local so the whole block stays in registers. */
static inline void transpose8_store(int el, const void *src, int64_t at, int64_t ld, int rows,
                                    float *dst, int64_t ds, int width)
{
    const __m256 z = _mm256_setzero_ps();
    __m256 r0 = ld8(el, src, at);
    __m256 r1 = rows > 1 ? ld8(el, src, at + ld) : z;
    __m256 r2 = rows > 2 ? ld8(el, src, at + 2 * ld) : z;
    __m256 r3 = rows > 3 ? ld8(el, src, at + 3 * ld) : z;
    __m256 r4 = rows > 4 ? ld8(el, src, at + 4 * ld) : z;
    __m256 r5 = rows > 5 ? ld8(el, src, at + 5 * ld) : z;
    __m256 r6 = rows > 6 ? ld8(el, src, at + 6 * ld) : z;
    __m256 r7 = rows > 7 ? ld8(el, src, at + 7 * ld) : z;
    /* t0 = r0[0] r1[0] r0[1] r1[1] | r0[4] r1[4] r0[5] r1[5], t1 the same
     * for elements 2, 3 | 6, 7; likewise t2..t7 for the other pairs. */
    __m256 t0 = _mm256_unpacklo_ps(r0, r1), t1 = _mm256_unpackhi_ps(r0, r1);
    __m256 t2 = _mm256_unpacklo_ps(r2, r3), t3 = _mm256_unpackhi_ps(r2, r3);
    __m256 t4 = _mm256_unpacklo_ps(r4, r5), t5 = _mm256_unpackhi_ps(r4, r5);
    __m256 t6 = _mm256_unpacklo_ps(r6, r7), t7 = _mm256_unpackhi_ps(r6, r7);
    /* u0 = column 0 of rows 0-3 | column 4 of rows 0-3; u1 columns 1|5,
     * u2 2|6, u3 3|7; u4..u7 the same for rows 4-7. */
    __m256 u0 = _mm256_shuffle_ps(t0, t2, 0x44), u1 = _mm256_shuffle_ps(t0, t2, 0xEE);
    __m256 u2 = _mm256_shuffle_ps(t1, t3, 0x44), u3 = _mm256_shuffle_ps(t1, t3, 0xEE);
    __m256 u4 = _mm256_shuffle_ps(t4, t6, 0x44), u5 = _mm256_shuffle_ps(t4, t6, 0xEE);
    __m256 u6 = _mm256_shuffle_ps(t5, t7, 0x44), u7 = _mm256_shuffle_ps(t5, t7, 0xEE);
    __m256 col[8] = {
        _mm256_permute2f128_ps(u0, u4, 0x20), _mm256_permute2f128_ps(u1, u5, 0x20),
        _mm256_permute2f128_ps(u2, u6, 0x20), _mm256_permute2f128_ps(u3, u7, 0x20),
        _mm256_permute2f128_ps(u0, u4, 0x31), _mm256_permute2f128_ps(u1, u5, 0x31),
        _mm256_permute2f128_ps(u2, u6, 0x31), _mm256_permute2f128_ps(u3, u7, 0x31),
    };
    if (width == 8) {
        for (int j = 0; j < 8; j++)
            _mm256_storeu_ps(dst + j * ds, col[j]);
    } else {
        for (int j = 0; j < 8; j++) {
            _mm_storeu_ps(dst + j * ds, _mm256_castps256_ps128(col[j]));
            _mm_storel_pi((__m64 *)(dst + j * ds + 4), _mm256_extractf128_ps(col[j], 1));
        }
    }
}

/* As pack_a_portable. Untransposed A is the hard case: the MR values
 * needed per k sit in MR different rows, so eight k at a time are loaded
 * as rows and turned into columns with one 8x8 transpose (zero rows fill
 * it out to 8, and supply the padding of a ragged last sliver).
 * Transposed A already has them side by side. */
static inline void pack_a_simd(int el, int ta, int64_t mc, int64_t kc, const void *A,
                               int64_t lda, int64_t i0, int64_t p0, float *dst)
{
    for (int64_t s = 0; s < mc; s += MR, dst += MR * kc) {
        int64_t mr = min64(MR, mc - s);
        if (ta) {
            int64_t src = p0 * lda + i0 + s;
            if (mr == MR) { /* six values: one vector of four, then two */
                for (int64_t k = 0; k < kc; k++, src += lda) {
                    _mm_storeu_ps(dst + k * MR, ld4(el, A, src));
                    dst[k * MR + 4] = ld1(el, A, src + 4);
                    dst[k * MR + 5] = ld1(el, A, src + 5);
                }
                continue;
            }
            for (int64_t k = 0; k < kc; k++, src += lda)
                for (int64_t i = 0; i < MR; i++)
                    dst[k * MR + i] = i < mr ? ld1(el, A, src + i) : 0.0f;
            continue;
        }
        const int64_t src = (i0 + s) * lda + p0;
        int64_t k = 0;
        for (; k + 8 <= kc; k += 8)
            transpose8_store(el, A, src + k, lda, (int)mr, dst + k * MR, MR, 6);
        for (; k < kc; k++)
            for (int64_t i = 0; i < MR; i++)
                dst[k * MR + i] = i < mr ? ld1(el, A, src + i * lda + k) : 0.0f;
    }
}

/* As pack_b_portable. Untransposed B has each sliver row contiguous (two
 * vector copies per k); transposed B needs the 16 columns gathered, done
 * as two 8x8 transposes per eight k. */
static inline void pack_b_simd(int el, int tb, int64_t kc, int64_t nc, const void *B,
                               int64_t ldb, int64_t p0, int64_t j0, float *dst)
{
    for (int64_t s = 0; s < nc; s += NR, dst += NR * kc) {
        int64_t nr = min64(NR, nc - s);
        if (!tb) {
            int64_t src = p0 * ldb + j0 + s;
            if (nr < NR) {
                for (int64_t k = 0; k < kc; k++, src += ldb)
                    for (int64_t c = 0; c < NR; c++)
                        dst[k * NR + c] = c < nr ? ld1(el, B, src + c) : 0.0f;
                continue;
            }
            for (int64_t k = 0; k < kc; k++, src += ldb) {
                _mm256_store_ps(dst + k * NR, ld8(el, B, src));
                _mm256_store_ps(dst + k * NR + 8, ld8(el, B, src + 8));
            }
            continue;
        }
        const int64_t src = (j0 + s) * ldb + p0;
        int64_t k = 0;
        for (; k + 8 <= kc; k += 8) {
            transpose8_store(el, B, src + k, ldb, nr < 8 ? (int)nr : 8, dst + k * NR, NR, 8);
            if (nr > 8)
                transpose8_store(el, B, src + 8 * ldb + k, ldb, (int)(nr - 8), dst + k * NR + 8,
                                 NR, 8);
            else
                for (int j = 0; j < 8; j++)
                    _mm256_store_ps(dst + (k + j) * NR + 8, _mm256_setzero_ps());
        }
        for (; k < kc; k++)
            for (int64_t c = 0; c < NR; c++)
                dst[k * NR + c] = c < nr ? ld1(el, B, src + c * ldb + k) : 0.0f;
    }
}

/* One row of a finished tile: C = acc, or C + acc. */
static inline void store_row(float *c, __m256 lo, __m256 hi)
{
    _mm256_storeu_ps(c, lo);
    _mm256_storeu_ps(c + 8, hi);
}
static inline void store_row_add(float *c, __m256 lo, __m256 hi)
{
    _mm256_storeu_ps(c, _mm256_add_ps(_mm256_loadu_ps(c), lo));
    _mm256_storeu_ps(c + 8, _mm256_add_ps(_mm256_loadu_ps(c + 8), hi));
}

/* The 6x16 tile: 12 accumulators. Per k: two aligned loads of B, six
 * broadcasts of A, twelve FMAs. Accumulation starts from zero and C is
 * added once at the end, exactly as in the portable kernel and the edge
 * path, so every element sees the same sequence of roundings. */
static void micro_simd(int64_t kc, const float *a, int64_t rsa, int64_t csa, const float *b,
                       float *c, int64_t ldc, int accumulate)
{
    __m256 c00 = _mm256_setzero_ps(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00,
           c30 = c00, c31 = c00, c40 = c00, c41 = c00, c50 = c00, c51 = c00;
    const float *a3 = a + 3 * rsa;
    for (int64_t k = 0; k < kc; k++, a += csa, a3 += csa, b += NR) {
        __m256 b0 = _mm256_load_ps(b), b1 = _mm256_load_ps(b + 8), x;
        x = _mm256_broadcast_ss(a);
        c00 = _mm256_fmadd_ps(x, b0, c00);
        c01 = _mm256_fmadd_ps(x, b1, c01);
        x = _mm256_broadcast_ss(a + rsa);
        c10 = _mm256_fmadd_ps(x, b0, c10);
        c11 = _mm256_fmadd_ps(x, b1, c11);
        x = _mm256_broadcast_ss(a + 2 * rsa);
        c20 = _mm256_fmadd_ps(x, b0, c20);
        c21 = _mm256_fmadd_ps(x, b1, c21);
        x = _mm256_broadcast_ss(a3);
        c30 = _mm256_fmadd_ps(x, b0, c30);
        c31 = _mm256_fmadd_ps(x, b1, c31);
        x = _mm256_broadcast_ss(a3 + rsa);
        c40 = _mm256_fmadd_ps(x, b0, c40);
        c41 = _mm256_fmadd_ps(x, b1, c41);
        x = _mm256_broadcast_ss(a3 + 2 * rsa);
        c50 = _mm256_fmadd_ps(x, b0, c50);
        c51 = _mm256_fmadd_ps(x, b1, c51);
    }
    if (accumulate) {
        store_row_add(c, c00, c01);
        store_row_add(c + ldc, c10, c11);
        store_row_add(c + 2 * ldc, c20, c21);
        store_row_add(c + 3 * ldc, c30, c31);
        store_row_add(c + 4 * ldc, c40, c41);
        store_row_add(c + 5 * ldc, c50, c51);
    } else {
        store_row(c, c00, c01);
        store_row(c + ldc, c10, c11);
        store_row(c + 2 * ldc, c20, c21);
        store_row(c + 3 * ldc, c30, c31);
        store_row(c + 4 * ldc, c40, c41);
        store_row(c + 5 * ldc, c50, c51);
    }
}
#endif /* EO_MM_HAVE_SIMD */

int eo_mm_simd_compiled(void) { return EO_MM_HAVE_SIMD; }

/* ---------------------------------------------------------------------------
 * The blocked loops, shared by both paths. */

typedef void pack_a_fn(int ta, int64_t mc, int64_t kc, const void *A, int64_t lda,
                       int64_t i0, int64_t p0, float *dst);
typedef void pack_b_fn(int tb, int64_t kc, int64_t nc, const void *B, int64_t ldb,
                       int64_t p0, int64_t j0, float *dst);

/* One instance of each packer per (path, element type), el a constant. */
#define MM_PACKERS(path, name, el)                                                            \
    static void pack_a_##path##_##name(int t, int64_t mc, int64_t kc, const void *A,         \
                                       int64_t ld, int64_t i0, int64_t p0, float *dst)       \
    {                                                                                         \
        pack_a_##path(el, t, mc, kc, A, ld, i0, p0, dst);                                     \
    }                                                                                         \
    static void pack_b_##path##_##name(int t, int64_t kc, int64_t nc, const void *B,         \
                                       int64_t ld, int64_t p0, int64_t j0, float *dst)       \
    {                                                                                         \
        pack_b_##path(el, t, kc, nc, B, ld, p0, j0, dst);                                     \
    }
MM_PACKERS(portable, f32, EO_K_F32)
MM_PACKERS(portable, bf16, EO_K_BF16)
MM_PACKERS(portable, f16, EO_K_F16)
#if EO_MM_HAVE_SIMD
MM_PACKERS(simd, f32, EO_K_F32)
MM_PACKERS(simd, bf16, EO_K_BF16)
MM_PACKERS(simd, f16, EO_K_F16)
#endif

typedef struct mm_impl {
    pack_a_fn *pack_a;
    pack_b_fn *pack_b;
    eo_mm_micro_fn *micro;
} mm_impl;

/* Scratch of one thread: a packed A block then a packed B block, each
 * starting on a 64-byte boundary (the B loads in the micro-kernel are
 * aligned ones); for the 16-bit matmul (blocked by MC16 x NC16), then an
 * f32 tile of C of that block's size, in which a 16-bit C is summed
 * before its single rounding. */
static int64_t mc_of(int half) { return half ? MC16 : MC; }
static int64_t nc_of(int half) { return half ? NC16 : NC; }
static size_t pack_a_floats(int64_t M, int64_t K, int half)
{
    return (size_t)(round_up(min64(M, mc_of(half)), MR) * min64(K, KC));
}
static size_t pack_b_floats(int64_t N, int64_t K, int half)
{
    return (size_t)(round_up(min64(N, nc_of(half)), NR) * min64(K, KC));
}
static size_t c_tile_floats(int64_t M, int64_t N)
{
    return (size_t)(min64(M, MC16) * min64(N, NC16));
}
static size_t align64(size_t bytes) { return (bytes + 63) / 64 * 64; }
static size_t per_thread_bytes(int64_t M, int64_t N, int64_t K, int half)
{
    return align64(pack_a_floats(M, K, half) * sizeof(float)) +
           align64(pack_b_floats(N, K, half) * sizeof(float)) +
           (half ? align64(c_tile_floats(M, N) * sizeof(float)) : 0);
}

static size_t ws_bytes(int64_t M, int64_t N, int64_t K, int nthreads, int half)
{
    if (M <= 0 || N <= 0 || K <= 0)
        return 0;
    if (nthreads < 1)
        nthreads = 1;
    /* +64: the caller's pointer is rounded up to a 64-byte boundary. */
    return (size_t)nthreads * per_thread_bytes(M, N, K, half) + 64;
}

size_t eo_k_matmul_ws(int64_t M, int64_t N, int64_t K, int nthreads)
{
    return ws_bytes(M, N, K, nthreads, 0);
}

size_t eo_k_matmul16_ws(int64_t M, int64_t N, int64_t K, int nthreads)
{
    return ws_bytes(M, N, K, nthreads, 1);
}

typedef struct mm_job {
    const mm_impl *impl;
    int el, out;       /* element types of A and B, and of C (EO_K_*) */
    int64_t mc, nc;    /* row and column blocking: MC, NC or MC16, NC16 */
    int ta, tb;
    int64_t M, N, K;
    const void *A;
    int64_t lda, sa;
    const void *B;
    int64_t ldb, sb;
    int accumulate; /* beta == 1 */
    void *C;
    int64_t ldc, sc;
    unsigned char *ws; /* 64-byte aligned */
    size_t ws_thread;
    int64_t pieces;    /* each batch item's C is cut into this many pieces */
    int split_n;       /* pieces are column blocks (else row blocks) */
} mm_job;

/* C[m0:m1, n0:n1] of one batch item, all of K; C points at element
 * (m0, n0), rows ldc apart. */
static void mm_block(const mm_job *J, const void *A, const void *B, float *C, int64_t ldc,
                     int64_t m0, int64_t m1, int64_t n0, int64_t n1, float *pa, float *pb,
                     int accumulate)
{
    const mm_impl *im = J->impl;
    const int64_t K = J->K;
    const int64_t nk = (K + KC - 1) / KC;
    for (int64_t jc = n0; jc < n1; jc += J->nc) {
        int64_t nc = min64(J->nc, n1 - jc);
        for (int64_t q = 0; q < nk; q++) {
            int64_t p0 = K * q / nk, kc = K * (q + 1) / nk - p0;
            int acc = q > 0 || accumulate;
            im->pack_b(J->tb, kc, nc, B, J->ldb, p0, jc, pb);
            for (int64_t ic = m0; ic < m1; ic += J->mc) {
                int64_t mc = min64(J->mc, m1 - ic);
                /* A narrow block of C reuses a packed A block too few
                 * times to repay the packing, so there untransposed A
                 * is read where it lies (the micro-kernel takes A's
                 * strides); only a ragged last sliver is still packed,
                 * to get its zero rows. Wide blocks pack: the packed
                 * copy is contiguous, while rows of A that are a power
                 * of two apart compete for the same cache sets. A
                 * 16-bit A is always packed (the micro-kernel reads
                 * f32). */
                int64_t mfull = J->ta || J->el != EO_K_F32 || nc >= A_INPLACE_MAX_NC
                                    ? 0 : mc / MR * MR;
                im->pack_a(J->ta, mc - mfull, kc, A, J->lda, ic + mfull, p0, pa);
                for (int64_t jr = 0; jr < nc; jr += NR) {
                    int64_t nr = min64(NR, nc - jr);
                    const float *bs = pb + jr * kc;
                    for (int64_t ir = 0; ir < mc; ir += MR) {
                        int64_t mr = min64(MR, mc - ir);
                        const float *as = pa + (ir - mfull) * kc;
                        int64_t rsa = 1, csa = MR;
                        if (ir < mfull) {
                            as = (const float *)A + (ic + ir) * J->lda + p0;
                            rsa = J->lda;
                            csa = 1;
                        }
                        float *c = C + (ic - m0 + ir) * ldc + (jc - n0) + jr;
                        if (mr == MR && nr == NR) {
                            im->micro(kc, as, rsa, csa, bs, c, ldc, acc);
                            continue;
                        }
                        /* Edge tile: full tile into a buffer, then the
                         * valid part out, with the same final addition. */
                        float tile[MR * NR];
                        im->micro(kc, as, rsa, csa, bs, tile, NR, 0);
                        for (int64_t i = 0; i < mr; i++)
                            for (int64_t j = 0; j < nr; j++)
                                c[i * ldc + j] = acc ? c[i * ldc + j] + tile[i * NR + j]
                                                     : tile[i * NR + j];
                    }
                }
            }
        }
    }
}

/* A 16-bit C, block by block of at most MC16 x NC16: the block is formed in
 * the thread's f32 tile (the old C widened into it first when beta = 1,
 * so the addition happens in f32 exactly as in the f32 kernel) and
 * rounded once. The blocking changes nothing in the sums: every element
 * still runs over the same K slices in the same order. */
static void mm_block16(const mm_job *J, const void *A, const void *B, uint16_t *C, int64_t m0,
                       int64_t m1, int64_t n0, int64_t n1, float *pa, float *pb, float *tile)
{
    for (int64_t i0 = m0; i0 < m1; i0 += MC16)
        for (int64_t j0 = n0; j0 < n1; j0 += NC16) {
            const int64_t m = min64(MC16, m1 - i0), n = min64(NC16, n1 - j0);
            if (J->accumulate)
                for (int64_t r = 0; r < m; r++)
                    eo_half_to_f32(J->out, n, C + (i0 + r) * J->ldc + j0, tile + r * n);
            mm_block(J, A, B, tile, n, i0, i0 + m, j0, j0 + n, pa, pb, J->accumulate);
            for (int64_t r = 0; r < m; r++)
                eo_f32_to_half(J->out, n, tile + r * n, C + (i0 + r) * J->ldc + j0);
        }
}

/* Piece p of `pieces` along a dimension of `len`, cut on multiples of the
 * tile size `unit` so that no thread gets a needlessly ragged tile. */
static void piece_range(int64_t len, int64_t unit, int64_t p, int64_t pieces, int64_t *lo,
                        int64_t *hi)
{
    int64_t units = (len + unit - 1) / unit;
    *lo = min64(len, units * p / pieces * unit);
    *hi = min64(len, units * (p + 1) / pieces * unit);
}

static void mm_body(void *arg, int64_t begin, int64_t end, int worker)
{
    const mm_job *J = arg;
    unsigned char *mine = J->ws + (size_t)worker * J->ws_thread;
    float *pa = (float *)(void *)mine;
    const int half = J->el != EO_K_F32;
    unsigned char *at = mine + align64(pack_a_floats(J->M, J->K, half) * sizeof(float));
    float *pb = (float *)(void *)at;
    float *tile = (float *)(void *)(at + align64(pack_b_floats(J->N, J->K, half) * sizeof(float)));
    const size_t esz = J->el == EO_K_F32 ? 4 : 2;
    for (int64_t it = begin; it < end; it++) {
        int64_t b = it / J->pieces, p = it % J->pieces;
        int64_t m0 = 0, m1 = J->M, n0 = 0, n1 = J->N;
        if (J->split_n)
            piece_range(J->N, NR, p, J->pieces, &n0, &n1);
        else
            piece_range(J->M, MR, p, J->pieces, &m0, &m1);
        if (m0 >= m1 || n0 >= n1)
            continue;
        const void *A = (const unsigned char *)J->A + (size_t)(b * J->sa) * esz;
        const void *B = (const unsigned char *)J->B + (size_t)(b * J->sb) * esz;
        if (J->out == EO_K_F32)
            mm_block(J, A, B, (float *)J->C + b * J->sc + m0 * J->ldc + n0, J->ldc, m0, m1, n0,
                     n1, pa, pb, J->accumulate);
        else
            mm_block16(J, A, B, (uint16_t *)J->C + b * J->sc, m0, m1, n0, n1, pa, pb, tile);
    }
}

static int64_t gcd64(int64_t a, int64_t b)
{
    while (b) {
        int64_t t = a % b;
        a = b;
        b = t;
    }
    return a;
}

/* Indexed by element type: f32, (i32: none), bf16, f16. */
static const mm_impl impl_portable[4] = {
    {pack_a_portable_f32, pack_b_portable_f32, eo_mm_micro_portable},
    {0, 0, 0},
    {pack_a_portable_bf16, pack_b_portable_bf16, eo_mm_micro_portable},
    {pack_a_portable_f16, pack_b_portable_f16, eo_mm_micro_portable},
};
#if EO_MM_HAVE_SIMD
static const mm_impl impl_simd[4] = {
    {pack_a_simd_f32, pack_b_simd_f32, micro_simd},
    {0, 0, 0},
    {pack_a_simd_bf16, pack_b_simd_bf16, micro_simd},
    {pack_a_simd_f16, pack_b_simd_f16, micro_simd},
};
#else
#define impl_simd impl_portable
#endif

/* Both entries: el is the element type of A and B, out that of C. */
static void mm_run(eo_mm_path path, int ta, int tb, int64_t batch, int64_t M, int64_t N,
                   int64_t K, int el, const void *A, int64_t lda, int64_t sa, const void *B,
                   int64_t ldb, int64_t sb, float beta, int out, void *C, int64_t ldc,
                   int64_t sc, void *ws, const eo_par *par)
{
    if (batch <= 0 || M <= 0 || N <= 0)
        return;
    if (K <= 0) { /* an empty sum: C = beta·C */
        const size_t osz = out == EO_K_F32 ? 4 : 2;
        if (beta == 0.0f) /* +0 is all zero bits in all three types */
            for (int64_t b = 0; b < batch; b++)
                for (int64_t i = 0; i < M; i++)
                    memset((unsigned char *)C + (size_t)(b * sc + i * ldc) * osz, 0,
                           (size_t)N * osz);
        return;
    }
    mm_job J = {path == EO_MM_PORTABLE ? &impl_portable[el] : &impl_simd[el],
                el, out, mc_of(el != EO_K_F32), nc_of(el != EO_K_F32), ta, tb, M, N, K, A, lda, sa, B, ldb, sb, beta != 0.0f, C, ldc, sc,
                (unsigned char *)(((uintptr_t)ws + 63) / 64 * 64),
                per_thread_bytes(M, N, K, el != EO_K_F32), 1, 0};
    if ((float)batch * (float)M * (float)N * (float)K < (float)PAR_MIN_FMAS) /* a float: no libgcc double on an M4 */
        par = NULL;
    /* Enough pieces that the batch x pieces items divide evenly among the
     * threads (a batch of 128 needs no cutting; a single matrix is cut in
     * t). Every piece packs all of the operand it does not cut: cutting
     * N re-packs A (M·K values) per piece, cutting M re-packs B (K·N), so
     * cut the longer side, if it has a tile for every piece. */
    int t = eo_par_threads(par);
    J.pieces = t / gcd64(batch, t);
    J.split_n = M <= N ? (N + NR - 1) / NR >= J.pieces : (M + MR - 1) / MR < J.pieces;
    eo_par_for(par, batch * J.pieces, mm_body, &J);
}

void eo_mm_run(eo_mm_path path, int ta, int tb, int64_t batch, int64_t M, int64_t N, int64_t K,
               const float *A, int64_t lda, int64_t sa, const float *B, int64_t ldb, int64_t sb,
               float beta, float *C, int64_t ldc, int64_t sc, void *ws, const eo_par *par)
{
    mm_run(path, ta, tb, batch, M, N, K, EO_K_F32, A, lda, sa, B, ldb, sb, beta, EO_K_F32, C,
           ldc, sc, ws, par);
}

/* The pairs the 16-bit entries take (the core checks dtypes before a
 * kernel runs; anything else does nothing rather than misread memory). */
static int mm16_types_ok(int in, int out)
{
    return (in == EO_K_BF16 || in == EO_K_F16) && (out == EO_K_F32 || out == in);
}

void eo_mm_run16(eo_mm_path path, int ta, int tb, int64_t batch, int64_t M, int64_t N,
                 int64_t K, int in, const void *A, int64_t lda, int64_t sa, const void *B,
                 int64_t ldb, int64_t sb, float beta, int out, void *C, int64_t ldc, int64_t sc,
                 void *ws, const eo_par *par)
{
    if (!mm16_types_ok(in, out))
        return;
    mm_run(path, ta, tb, batch, M, N, K, in, A, lda, sa, B, ldb, sb, beta, out, C, ldc, sc, ws,
           par);
}

void eo_k_matmul(int ta, int tb, int64_t batch, int64_t M, int64_t N, int64_t K,
                 const float *A, int64_t lda, int64_t sa, const float *B, int64_t ldb, int64_t sb,
                 float beta, float *C, int64_t ldc, int64_t sc, void *ws, const eo_exec *ex)
{
    mm_run(EO_MM_BEST, ta, tb, batch, M, N, K, EO_K_F32, A, lda, sa, B, ldb, sb, beta, EO_K_F32,
           C, ldc, sc, ws, eo_exec_par(ex));
}

/* bf16 / f16 operands (ops/kernels.h): the same blocked loops, the
 * operands widened as they are packed; see eo_mm_run16 (matmul.h). */
void eo_k_matmul16(int ta, int tb, int64_t batch, int64_t M, int64_t N, int64_t K, int in,
                   const void *A, int64_t lda, int64_t sa, const void *B, int64_t ldb, int64_t sb,
                   float beta, int out, void *C, int64_t ldc, int64_t sc, void *ws,
                   const eo_exec *ex)
{
    if (!mm16_types_ok(in, out))
        return;
    mm_run(EO_MM_BEST, ta, tb, batch, M, N, K, in, A, lda, sa, B, ldb, sb, beta, out, C, ldc,
           sc, ws, eo_exec_par(ex));
}
