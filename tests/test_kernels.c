/* tests/test_kernels.c — every CPU kernel of ops/kernels.h except matmul,
 * against straightforward double-precision references written here.
 *
 * Shapes are chosen to hit the edges: 1x1, odd sizes (3x7, 5x33), sizes
 * that are not multiples of the 8-float vector width, so both the vector
 * bodies and their masked tails are exercised. The same tests pass on
 * every CPU kernel variant (EO_CPU=base, avx2, avx512; make test runs each
 * the machine can, calling the kernels through tools/cli/cpu_kernels.h),
 * which is how the paths are held to the same float32 tolerance.
 *
 * Numerics pinned here because they are easy to lose: a fully masked
 * softmax row (zeros, or -inf for log, never NaN), logits of ±1e4, a
 * layernorm row of 1e4 + noise, broadcast gradients summed through
 * stride 0, and results that are bit-identical whether a kernel runs on
 * one thread or on a split range (a fake hook runs the chunks serially,
 * last chunk first). */
#include <check.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "ops/kernels.h"
#include "tools/cli/cpu_kernels.h"
#include "tests/simd_cases.h"
#include "ops/cpu/simd.h"
#include "tools/threads/pool.h"

#define PI 3.14159265358979323846

/* ---- helpers ------------------------------------------------------------ */
/* Check's ck_assert records a checkpoint on every call, a write to a pipe
 * in fork mode; over hundreds of thousands of elements (and under ASan)
 * that dominates the suite. These only do work when they fail. */
#define CHECK(cond)                                                            \
    do {                                                                       \
        if (!(cond))                                                           \
            ck_abort_msg("line %d: %s", __LINE__, #cond);                      \
    } while (0)
#define CHECK_MSG(cond, ...)                                                   \
    do {                                                                       \
        if (!(cond))                                                           \
            ck_abort_msg(__VA_ARGS__);                                         \
    } while (0)

static uint64_t rng_state = 0x12345678abcdefull;

static float frand(void) /* uniform in [-1, 1) */
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (float)((rng_state >> 40) * (2.0 / 16777216.0) - 1.0);
}

static float *fill_rand(float *p, int64_t n, float scale)
{
    for (int64_t i = 0; i < n; i++)
        p[i] = frand() * scale;
    return p;
}

static float *alloc_f(int64_t n)
{
    float *p = calloc((size_t)(n > 0 ? n : 1), sizeof(float));
    ck_assert_ptr_nonnull(p);
    return p;
}

/* |got - want| <= atol + rtol |want|, with a message naming the element. */
static void check_close(const char *what, int64_t i, double got, double want, double rtol,
                        double atol)
{
    const double err = fabs(got - want);
    if (!(err <= atol + rtol * fabs(want)) && !(isinf(got) && got == want) &&
        !(isnan(got) && isnan(want))) /* NaN where NaN is expected */
        ck_abort_msg("%s[%lld]: got %.9g want %.9g", what, (long long)i, got, want);
}

static void check_all(const char *what, const float *got, const double *want, int64_t n,
                      double rtol, double atol)
{
    for (int64_t i = 0; i < n; i++)
        check_close(what, i, got[i], want[i], rtol, atol);
}

/* The fake thread hook: two chunks [0, n/2) and [n/2, n), as parallel.h
 * prescribes for nthreads = 2, run serially and last chunk first, so any
 * dependence on chunk order or on who ran what shows up. */
static void fake_run(void *user, eo_par_body body, void *arg, int64_t n)
{
    (void)user;
    const int64_t mid = n / 2;
    if (mid < n)
        body(arg, mid, n, 1);
    if (0 < mid)
        body(arg, 0, mid, 0);
}
/* Do the kernels under test (EO_CPU applied) take their AVX2 / AVX-512
 * paths? Their exp flushes where the base kernels' libm expf does not. */
static int vector_kernels(void)
{
    const eo_cpu_isa v = eo_tool_cpu_kernels_isa();
#ifdef EO_AVX2
    if (v == EO_ISA_NATIVE)
        return 1;
#endif
    return v == EO_ISA_AVX2 || v == EO_ISA_AVX512;
}

static const eo_exec fake_par = {{fake_run, NULL, 2}, NULL};

static void check_same_bits(const char *what, const void *a, const void *b, size_t bytes)
{
    if (memcmp(a, b, bytes) != 0)
        ck_abort_msg("%s: results differ between par = NULL and a split range", what);
}

/* ---- copy32, accumulate, fill -------------------------------------------- */
static int64_t at4(const int64_t st[4], int64_t i, int64_t j, int64_t k, int64_t l)
{
    return i * st[0] + j * st[1] + k * st[2] + l * st[3];
}

START_TEST(copy32_strided)
{
    /* A transpose of [5, 33] into [33, 5], a broadcast source, and 1x1. */
    float src[5 * 33], dst[5 * 33];
    fill_rand(src, 5 * 33, 1.0f);
    const int64_t shape[4] = {1, 1, 33, 5}, sd[4] = {0, 0, 5, 1}, ss[4] = {0, 0, 1, 33};
    eo_k_copy32(shape, dst, sd, src, ss, NULL);
    for (int i = 0; i < 33; i++)
        for (int j = 0; j < 5; j++)
            CHECK(dst[i * 5 + j] == src[j * 33 + i]);

    int32_t isrc[7] = {1, 2, 3, 4, 5, 6, 7}, idst[3 * 7];
    const int64_t sh2[4] = {1, 3, 1, 7}, d2[4] = {0, 7, 7, 1}, s2[4] = {0, 0, 0, 1};
    eo_k_copy32(sh2, idst, d2, isrc, s2, NULL);
    for (int i = 0; i < 21; i++)
        ck_assert_int_eq(idst[i], isrc[i % 7]);

    const int64_t one[4] = {1, 1, 1, 1}, z[4] = {0, 0, 0, 0};
    float a = 3.5f, b = 0.0f;
    eo_k_copy32(one, &b, z, &a, z, NULL);
    CHECK(b == 3.5f);

    /* A 4-D permutation with every axis > 1: [2,3,4,5] -> axes (3,1,0,2). */
    float x[120], y[120];
    fill_rand(x, 120, 1.0f);
    const int64_t shp[4] = {5, 3, 2, 4}, sy[4] = {24, 8, 4, 1}, sx[4] = {1, 20, 60, 5};
    eo_k_copy32(shp, y, sy, x, sx, NULL);
    for (int i = 0; i < 5; i++)
        for (int j = 0; j < 3; j++)
            for (int k = 0; k < 2; k++)
                for (int l = 0; l < 4; l++)
                    CHECK(y[at4(sy, i, j, k, l)] == x[at4(sx, i, j, k, l)]);
}
END_TEST

START_TEST(accumulate_sums_broadcast_axes)
{
    /* src [4, 3, 5, 7]; dst [1, 3, 1, 7] (stride 0 on axes 0 and 2) and
     * dst [4, 3, 5, 1] (stride 0 on the innermost axis). */
    const int64_t shape[4] = {4, 3, 5, 7}, ss[4] = {105, 35, 7, 1};
    float *src = fill_rand(alloc_f(420), 420, 1.0f);
    float d1[21], d2[60];
    double w1[21], w2[60];
    for (int i = 0; i < 21; i++)
        w1[i] = d1[i] = (float)i;
    for (int i = 0; i < 60; i++)
        w2[i] = d2[i] = -(float)i;
    const int64_t s1[4] = {0, 7, 0, 1}, s2[4] = {15, 5, 1, 0};
    eo_k_accumulate(shape, d1, s1, src, ss, NULL);
    eo_k_accumulate(shape, d2, s2, src, ss, NULL);
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 3; j++)
            for (int k = 0; k < 5; k++)
                for (int l = 0; l < 7; l++) {
                    const double v = src[at4(ss, i, j, k, l)];
                    w1[at4(s1, i, j, k, l)] += v;
                    w2[at4(s2, i, j, k, l)] += v;
                }
    check_all("acc bcast", d1, w1, 21, 1e-5, 1e-5);
    check_all("acc inner", d2, w2, 60, 1e-5, 1e-5);

    /* Plain contiguous += and a scalar source broadcast everywhere. */
    float d3[37], s3[37];
    double w3[37];
    fill_rand(s3, 37, 1.0f);
    for (int i = 0; i < 37; i++)
        w3[i] = d3[i] = 1.0f;
    const int64_t sh3[4] = {1, 1, 1, 37}, st3[4] = {0, 0, 0, 1}, z[4] = {0, 0, 0, 0};
    eo_k_accumulate(sh3, d3, st3, s3, st3, NULL);
    eo_k_accumulate(sh3, d3, st3, s3 + 3, z, NULL);
    for (int i = 0; i < 37; i++)
        w3[i] += (double)s3[i] + s3[3];
    check_all("acc contiguous", d3, w3, 37, 1e-6, 1e-6);
    free(src);
}
END_TEST

/* A column sum (every row of src into one row of dst: a bias gradient)
 * keeps blocks of dst in registers down the rows: the same float
 * additions, row after row, as the plain loop below, so the same bits,
 * serial and split by columns; widths around the 8- and 64-column
 * blocks, rows strided past their width (a view) and in two outer
 * axes, dst starting with -0, NaN and inf, src with inf and -0. */
START_TEST(column_sums_equal_row_by_row)
{
    const int64_t widths[] = {1, 7, 8, 9, 63, 64, 65, 130, 200};
    for (size_t c = 0; c < sizeof widths / sizeof *widths; c++) {
        /* at least EO_PAR_GRAIN elements, so that the split runs */
        const int64_t C = widths[c], A = 3, B = 32768 / (3 * C) + 2, ld = C + 5;
        float *src = fill_rand(alloc_f(A * B * ld), A * B * ld, 2.0f);
        float *want = alloc_f(C), *got = alloc_f(C);
        src[0] = INFINITY, src[ld + C - 1] = -0.0f;
        for (int split = 0; split < 2; split++) {
            for (int64_t j = 0; j < C; j++)
                want[j] = got[j] = j % 5 == 0 ? -0.0f : j % 7 == 3 ? NAN : 0.5f * (float)j;
            if (C > 2)
                want[2] = got[2] = -INFINITY;
            for (int64_t i = 0; i < A; i++)
                for (int64_t r = 0; r < B; r++)
                    for (int64_t j = 0; j < C; j++)
                        want[j] += src[(i * B + r) * ld + j];
            const int64_t sh[4] = {1, A, B, C}, sd[4] = {0, 0, 0, 1}, ss[4] = {0, B * ld, ld, 1};
            eo_k_accumulate(sh, got, sd, src, ss, split ? &fake_par : NULL);
            CHECK_MSG(memcmp(want, got, sizeof(float) * (size_t)C) == 0,
                      "column sum of %lld columns, split %d", (long long)C, split);
        }
        free(src), free(want), free(got);
    }
}
END_TEST

START_TEST(fill_writes_n)
{
    float x[11];
    for (int i = 0; i < 11; i++)
        x[i] = 7.0f;
    eo_k_fill(10, x, -2.5f, NULL);
    for (int i = 0; i < 10; i++)
        CHECK(x[i] == -2.5f);
    CHECK(x[10] == 7.0f);
}
END_TEST

/* eo_k_zero clears exactly bytes [0, n) at any alignment, on the caller
 * and cut among "threads" (fake_par: the second half first), across its
 * 64 KiB blocks: lengths 0, 1, odd, one block, a block +- 1, several. */
START_TEST(zero_clears_exactly_n_bytes)
{
    const size_t block = (size_t)64 << 10;
    const size_t lens[] = {0, 1, 3, 4099, block - 1, block, block + 1, 3 * block + 5,
                           (size_t)1 << 20};
    const size_t cap = ((size_t)1 << 20) + 16;
    unsigned char *buf = malloc(cap);
    ck_assert_ptr_nonnull(buf);
    for (size_t l = 0; l < sizeof lens / sizeof *lens; l++)
        for (int split = 0; split < 2; split++)
            for (size_t off = 0; off < 3; off++) {
                memset(buf, 0xA5, cap);
                eo_k_zero(buf + off, lens[l], split ? &fake_par : NULL);
                for (size_t i = 0; i < cap; i++) {
                    const int inside = i >= off && i < off + lens[l];
                    if (buf[i] != (inside ? 0 : 0xA5))
                        ck_abort_msg("zero: n %zu, offset %zu, split %d: byte %zu is %#x",
                                     lens[l], off, split, i, buf[i]);
                }
            }
    free(buf);
}
END_TEST

/* ---- binary ------------------------------------------------------------- */
static double ref_bin(eo_binop op, double a, double b)
{
    switch (op) {
    case EO_BIN_ADD: return a + b;
    case EO_BIN_SUB: return a - b;
    case EO_BIN_MUL: return a * b;
    case EO_BIN_MAX: return a != a || b != b ? NAN : a > b ? a : b;
    case EO_BIN_MIN: return a != a || b != b ? NAN : a < b ? a : b;
    default: return a / b;
    }
}

/* shape [2, 3, 4, 5]; a is [2, 1, 4, 5], b is [1, 3, 1, 5]. */
static const int64_t bshape[4] = {2, 3, 4, 5}, bso[4] = {60, 20, 5, 1};
static const int64_t bsa[4] = {20, 0, 5, 1}, bsb[4] = {0, 5, 0, 1};

START_TEST(binary_broadcast)
{
    float a[40], b[15], out[120];
    fill_rand(a, 40, 2.0f);
    fill_rand(b, 15, 1.0f);
    for (int i = 0; i < 15; i++)
        b[i] += b[i] < 0 ? -0.5f : 0.5f; /* away from 0 for DIV */
    a[39] = NAN;                         /* propagates through every op, max and min too */
    for (int op = 0; op < EO_BIN_COUNT; op++) {
        eo_k_binary((eo_binop)op, bshape, out, bso, a, bsa, b, bsb, NULL);
        for (int i = 0; i < 2; i++)
            for (int j = 0; j < 3; j++)
                for (int k = 0; k < 4; k++)
                    for (int l = 0; l < 5; l++)
                        check_close("binary", op, out[at4(bso, i, j, k, l)],
                                    ref_bin((eo_binop)op, a[at4(bsa, i, j, k, l)],
                                            b[at4(bsb, i, j, k, l)]),
                                    1e-6, 1e-7);
    }
    /* 1x1, and a scalar b over an odd-length run. */
    const int64_t one[4] = {1, 1, 1, 1}, z[4] = {0, 0, 0, 0};
    float r;
    eo_k_binary(EO_BIN_DIV, one, &r, z, a, z, b, z, NULL);
    CHECK(r == a[0] / b[0]);
    const int64_t sh[4] = {1, 1, 3, 13}, s[4] = {0, 0, 13, 1};
    float o2[39];
    eo_k_binary(EO_BIN_SUB, sh, o2, s, a, s, b + 2, z, NULL);
    for (int i = 0; i < 39; i++)
        CHECK(o2[i] == a[i] - b[2]);
}
END_TEST

START_TEST(binary_backward_broadcast_accumulates)
{
    float a[40], b[15], dout[120];
    fill_rand(a, 40, 2.0f);
    fill_rand(b, 15, 1.0f);
    fill_rand(dout, 120, 1.0f);
    for (int i = 0; i < 15; i++)
        b[i] += b[i] < 0 ? -0.5f : 0.5f;
    a[0] = b[0]; /* a tie: maximum and minimum split the gradient */
    for (int op = 0; op < EO_BIN_COUNT; op++) {
        float da[40], db[15];
        double wa[40], wb[15];
        for (int i = 0; i < 40; i++)
            wa[i] = da[i] = 0.25f; /* += : what was there stays */
        for (int i = 0; i < 15; i++)
            wb[i] = db[i] = -0.5f;
        eo_k_binary_backward((eo_binop)op, bshape, dout, bso, a, bsa, b, bsb, da, bsa, db, bsb, NULL);
        for (int i = 0; i < 2; i++)
            for (int j = 0; j < 3; j++)
                for (int k = 0; k < 4; k++)
                    for (int l = 0; l < 5; l++) {
                        const double g = dout[at4(bso, i, j, k, l)];
                        const double x = a[at4(bsa, i, j, k, l)], y = b[at4(bsb, i, j, k, l)];
                        double ga = g, gb = g;
                        if (op == EO_BIN_SUB)
                            gb = -g;
                        else if (op == EO_BIN_MUL)
                            ga = g * y, gb = g * x;
                        else if (op == EO_BIN_DIV)
                            ga = g / y, gb = -g * x / (y * y);
                        else if (op == EO_BIN_MAX || op == EO_BIN_MIN) { /* PyTorch's rule */
                            const int a_wins = op == EO_BIN_MAX ? x > y : x < y;
                            ga = x == y ? g / 2 : a_wins ? g : 0;
                            gb = x == y ? g / 2 : a_wins ? 0 : g;
                        }
                        wa[at4(bsa, i, j, k, l)] += ga;
                        wb[at4(bsb, i, j, k, l)] += gb;
                    }
        check_all("binary_backward da", da, wa, 40, 1e-5, 1e-5);
        check_all("binary_backward db", db, wb, 15, 1e-5, 1e-5);

        /* da = NULL: db alone, same values. */
        float db2[15];
        for (int i = 0; i < 15; i++)
            db2[i] = -0.5f;
        eo_k_binary_backward((eo_binop)op, bshape, dout, bso, a, bsa, b, bsb, NULL, bsa, db2, bsb, NULL);
        CHECK(memcmp(db, db2, sizeof db) == 0);
    }
    /* x * x: both gradients land in the same buffer, 2 x dout. */
    float x[37], d[37], gx[37];
    fill_rand(x, 37, 1.0f);
    fill_rand(d, 37, 1.0f);
    memset(gx, 0, sizeof gx);
    const int64_t sh[4] = {1, 1, 1, 37}, s[4] = {0, 0, 0, 1};
    eo_k_binary_backward(EO_BIN_MUL, sh, d, s, x, s, x, s, gx, s, gx, s, NULL);
    for (int i = 0; i < 37; i++)
        check_close("x*x", i, gx[i], 2.0 * x[i] * d[i], 1e-6, 1e-7);
}
END_TEST

/* ---- unary ------------------------------------------------------------- */
static double ref_un(eo_unop op, double x, double alpha)
{
    const double k = sqrt(2.0 / PI);
    switch (op) {
    case EO_UN_RELU: return x > 0 ? x : 0;
    case EO_UN_GELU_TANH: return 0.5 * x * (1 + tanh(k * (x + 0.044715 * x * x * x)));
    case EO_UN_GELU_ERF: return 0.5 * x * (1 + erf(x / sqrt(2.0)));
    case EO_UN_TANH: return tanh(x);
    case EO_UN_SIGMOID: return 1 / (1 + exp(-x));
    case EO_UN_EXP: return exp(x);
    case EO_UN_LOG: return log(x);
    default: return alpha * x;
    }
}

static double ref_un_deriv(eo_unop op, double x, double alpha)
{
    const double k = sqrt(2.0 / PI);
    switch (op) {
    case EO_UN_RELU: return x > 0 ? 1 : 0;
    case EO_UN_GELU_TANH: {
        const double t = tanh(k * (x + 0.044715 * x * x * x));
        return 0.5 * (1 + t) + 0.5 * x * (1 - t * t) * k * (1 + 3 * 0.044715 * x * x);
    }
    case EO_UN_GELU_ERF:
        return 0.5 * (1 + erf(x / sqrt(2.0))) + x * exp(-0.5 * x * x) / sqrt(2 * PI);
    case EO_UN_TANH: return 1 - tanh(x) * tanh(x);
    case EO_UN_SIGMOID: {
        const double s = 1 / (1 + exp(-x));
        return s * (1 - s);
    }
    case EO_UN_EXP: return exp(x);
    case EO_UN_LOG: return 1 / x;
    default: return alpha;
    }
}

START_TEST(unary_forward_backward)
{
    const int64_t sizes[] = {1, 7, 37, 4101};
    for (int op = 0; op < EO_UN_COUNT; op++)
        for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++) {
            const int64_t n = sizes[s];
            float *x = alloc_f(n), *y = alloc_f(n), *dy = alloc_f(n), *dx = alloc_f(n);
            double *wy = malloc(sizeof(double) * n), *wdx = malloc(sizeof(double) * n);
            fill_rand(x, n, 6.0f);
            fill_rand(dy, n, 1.0f);
            for (int64_t i = 0; i < n; i++) {
                if (op == EO_UN_LOG)
                    x[i] = fabsf(x[i]) + 1e-3f;
                dx[i] = 0.5f;
                wy[i] = ref_un((eo_unop)op, x[i], -1.5);
                wdx[i] = 0.5 + dy[i] * ref_un_deriv((eo_unop)op, x[i], -1.5);
            }
            eo_k_unary((eo_unop)op, n, x, y, -1.5f, NULL);
            check_all("unary", y, wy, n, 2e-6, 1e-6);
            eo_k_unary_backward((eo_unop)op, n, x, y, dy, dx, -1.5f, NULL);
            check_all("unary_backward", dx, wdx, n, 1e-5, 2e-6);
            free(x), free(y), free(dy), free(dx), free(wy), free(wdx);
        }
}
END_TEST

START_TEST(gelu_extremes_finite)
{
    /* Far in the tails GELU is 0 or x; the rewrite must not make NaN. */
    float x[9] = {-1e30f, -1e4f, -100.0f, -10.0f, 0.0f, 10.0f, 100.0f, 1e4f, 1e30f}, y[9];
    float dy[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1}, dx[9] = {0};
    eo_k_unary(EO_UN_GELU_TANH, 9, x, y, 0.0f, NULL);
    eo_k_unary_backward(EO_UN_GELU_TANH, 9, x, y, dy, dx, 0.0f, NULL);
    for (int i = 0; i < 9; i++) {
        CHECK_MSG(isfinite(y[i]), "gelu(%g) = %g", x[i], y[i]);
        ck_assert_float_eq_tol(y[i], x[i] > 0 ? x[i] : 0.0f, fabsf(x[i]) * 1e-6f + 1e-6f);
        if (fabsf(x[i]) < 1e18f) /* x^2 overflows beyond */
            ck_assert_float_eq_tol(dx[i], x[i] > 0 ? 1.0f : x[i] < 0 ? 0.0f : 0.5f, 1e-6f);
    }
}
END_TEST

START_TEST(unary_backward_reads_only_what_it_needs)
{
    /* kernels.h lets a backward use x or y; these use one, and must not
     * touch the other (the core may pass NULL for it). */
    enum { N = 21 };
    float x[N], y[N], dy[N], dx[N];
    fill_rand(x, N, 2.0f), fill_rand(dy, N, 1.0f);
    const struct { eo_unop op; int x, y; } uses[] = {
        {EO_UN_RELU, 1, 0}, {EO_UN_GELU_TANH, 1, 0}, {EO_UN_TANH, 0, 1}, {EO_UN_SIGMOID, 0, 1},
        {EO_UN_EXP, 0, 1}, {EO_UN_SCALE, 0, 0}};
    for (size_t k = 0; k < sizeof uses / sizeof *uses; k++) {
        eo_k_unary(uses[k].op, N, x, y, 3.0f, NULL);
        memset(dx, 0, sizeof dx);
        eo_k_unary_backward(uses[k].op, N, uses[k].x ? x : NULL, uses[k].y ? y : NULL, dy, dx,
                            3.0f, NULL);
        for (int i = 0; i < N; i++)
            check_close("unary_backward", i, dx[i], dy[i] * ref_un_deriv(uses[k].op, x[i], 3.0),
                        1e-5, 2e-6);
    }
}
END_TEST

/* The _set backwards (ops/kernels.h) write what the add into a zero-filled
 * dx gives, bit for bit (-0 included), and never read dx: it starts as
 * NaN here. Lengths across the vector width and the unary kernel's
 * 4096-element blocks; inputs with NaN, +-inf and -0. */
START_TEST(set_backwards_equal_add_into_zeros)
{
    const int64_t sizes[] = {1, 7, 8, 9, 4101};
    for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++) {
        const int64_t n = sizes[s];
        float *x = alloc_f(n), *y = alloc_f(n), *dy = alloc_f(n), *a = alloc_f(n),
              *b = alloc_f(n);
        fill_rand(x, n, 6.0f);
        fill_rand(dy, n, 1.0f);
        const float odd[] = {NAN, INFINITY, -INFINITY, -0.0f};
        for (int64_t i = 0; i < n && i < 4; i++)
            x[n - 1 - i] = odd[i];
        dy[0] = -0.0f;
        for (int op = 0; op < EO_UN_COUNT; op++) {
            eo_k_unary((eo_unop)op, n, x, y, -1.5f, NULL);
            for (int64_t i = 0; i < n; i++)
                a[i] = 0.0f, b[i] = NAN;
            eo_k_unary_backward((eo_unop)op, n, x, y, dy, a, -1.5f, NULL);
            eo_k_unary_backward_set((eo_unop)op, n, x, y, dy, b, -1.5f, NULL);
            CHECK_MSG(memcmp(a, b, sizeof(float) * (size_t)n) == 0, "unary op %d, n %lld", op,
                      (long long)n);
        }
        { /* maxpool: n planes of 5x7 (H, W not multiples of k: uncovered
           * pixels), k 1, 2, 3, dy with -0 and NaN; serial and split */
            const int64_t H = 5, W = 7;
            float *px = fill_rand(alloc_f(n * H * W), n * H * W, 3.0f);
            float *pa = alloc_f(n * H * W), *pb = alloc_f(n * H * W);
            float *py = alloc_f(n * H * W), *pdy = fill_rand(alloc_f(n * H * W), n * H * W, 1.0f);
            int32_t *arg = calloc((size_t)(n > 0 ? n * H * W : 1), sizeof *arg);
            ck_assert_ptr_nonnull(arg);
            pdy[0] = -0.0f;
            if (n > 1)
                pdy[1] = NAN;
            for (int64_t k = 1; k <= 3; k++)
                for (int split = 0; split < 2; split++) {
                    const eo_exec *ex = split ? &fake_par : NULL;
                    eo_k_maxpool2d(n, H, W, k, px, py, arg, NULL);
                    for (int64_t i = 0; i < n * H * W; i++)
                        pa[i] = 0.0f, pb[i] = NAN;
                    eo_k_maxpool2d_backward(n, H, W, k, pdy, arg, pa, ex);
                    eo_k_maxpool2d_backward_set(n, H, W, k, pdy, arg, pb, ex);
                    CHECK_MSG(memcmp(pa, pb, sizeof(float) * (size_t)(n * H * W)) == 0,
                              "maxpool backward, %lld planes, k %lld, split %d", (long long)n,
                              (long long)k, split);
                }
            free(px), free(pa), free(pb), free(py), free(pdy), free(arg);
        }
        for (int lg = 0; lg < 2; lg++) { /* one row of n, then n rows of 1 */
            for (int shape = 0; shape < 2; shape++) {
                const int64_t R = shape ? n : 1, C = shape ? 1 : n;
                eo_k_softmax(lg, R, C, x, y, NULL, NULL);
                for (int64_t i = 0; i < n; i++)
                    a[i] = 0.0f, b[i] = NAN;
                eo_k_softmax_backward(lg, R, C, y, dy, a, NULL);
                eo_k_softmax_backward_set(lg, R, C, y, dy, b, NULL);
                CHECK_MSG(memcmp(a, b, sizeof(float) * (size_t)n) == 0,
                          "%s backward %lldx%lld", lg ? "log_softmax" : "softmax",
                          (long long)R, (long long)C);
            }
        }
        free(x), free(y), free(dy), free(a), free(b);
    }
}
END_TEST

/* The fused ReLU + max pool is the two kernels in turn, bit for bit:
 * forward values and argmax, the _set backward into a NaN-filled dx,
 * the accumulating one into a dx holding -0s. Planes of 5x7 and 4x4
 * (scalar windows, floor remainders) and 6x37 (the 2x2 SIMD path with a
 * masked tail); x with NaN, +-inf, -0 and exact 0; dy with -0 and NaN;
 * serial and split. */
START_TEST(relu_maxpool_equals_relu_then_pool)
{
    const int64_t dims[][2] = {{5, 7}, {4, 4}, {6, 37}};
    const int64_t P = 3;
    for (size_t d = 0; d < sizeof dims / sizeof *dims; d++) {
        const int64_t H = dims[d][0], W = dims[d][1], n = P * H * W;
        float *x = fill_rand(alloc_f(n), n, 3.0f), *r = alloc_f(n), *dy = fill_rand(alloc_f(n), n, 1.0f);
        float *y1 = alloc_f(n), *y2 = alloc_f(n), *dr = alloc_f(n), *a = alloc_f(n), *b = alloc_f(n);
        int32_t *arg1 = calloc((size_t)n, sizeof *arg1), *arg2 = calloc((size_t)n, sizeof *arg2);
        ck_assert_ptr_nonnull(arg1);
        ck_assert_ptr_nonnull(arg2);
        const float odd[] = {NAN, INFINITY, -INFINITY, -0.0f, 0.0f, -0.0f};
        for (int i = 0; i < 6; i++)
            x[(i * 13 + 2) % n] = odd[i];
        for (int64_t i = 0; i < W; i++) /* a row of -0 and negatives: windows with no mass */
            x[i] = i % 2 ? -0.0f : -1.0f - (float)i;
        dy[0] = -0.0f, dy[1] = NAN, dy[2] = -0.0f;
        for (int64_t k = 1; k <= 3; k++)
            for (int split = 0; split < 2; split++) {
                const eo_exec *ex = split ? &fake_par : NULL;
                const int64_t m = P * (H / k) * (W / k);
                eo_k_unary(EO_UN_RELU, n, x, r, 0.0f, NULL);
                eo_k_maxpool2d(P, H, W, k, r, y1, arg1, NULL);
                eo_k_relu_maxpool2d(P, H, W, k, x, y2, arg2, ex);
                CHECK_MSG(memcmp(y1, y2, sizeof(float) * (size_t)m) == 0 &&
                              memcmp(arg1, arg2, sizeof(int32_t) * (size_t)m) == 0,
                          "relu_maxpool forward %lldx%lld k %lld split %d", (long long)H,
                          (long long)W, (long long)k, split);
                for (int64_t i = 0; i < n; i++)
                    dr[i] = NAN, a[i] = NAN, b[i] = NAN;
                eo_k_maxpool2d_backward_set(P, H, W, k, dy, arg1, dr, NULL);
                eo_k_unary_backward_set(EO_UN_RELU, n, x, NULL, dr, a, 0.0f, NULL);
                eo_k_relu_maxpool2d_backward_set(P, H, W, k, y2, dy, arg2, b, ex);
                CHECK_MSG(memcmp(a, b, sizeof(float) * (size_t)n) == 0,
                          "relu_maxpool backward_set %lldx%lld k %lld split %d", (long long)H,
                          (long long)W, (long long)k, split);
                for (int64_t i = 0; i < n; i++)
                    a[i] = b[i] = i % 3 ? 0.25f * (float)(i % 7) : -0.0f;
                eo_k_unary_backward(EO_UN_RELU, n, x, NULL, dr, a, 0.0f, NULL);
                eo_k_relu_maxpool2d_backward(P, H, W, k, y2, dy, arg2, b, ex);
                CHECK_MSG(memcmp(a, b, sizeof(float) * (size_t)n) == 0,
                          "relu_maxpool backward (accumulate) %lldx%lld k %lld split %d",
                          (long long)H, (long long)W, (long long)k, split);
            }
        free(x), free(r), free(dy), free(y1), free(y2), free(dr), free(a), free(b);
        free(arg1), free(arg2);
    }
}
END_TEST

/* ---- reductions ------------------------------------------------------- */
START_TEST(reduce_sum_mean_max)
{
    const int64_t shapes[][3] = {{1, 1, 1}, {3, 7, 1}, {2, 5, 33}, {1, 1000, 1}, {2, 3, 70}};
    for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++) {
        const int64_t O = shapes[s][0], N = shapes[s][1], I = shapes[s][2];
        float *x = fill_rand(alloc_f(O * N * I), O * N * I, 1.0f);
        float *y = alloc_f(O * I), *dy = fill_rand(alloc_f(O * I), O * I, 1.0f);
        float *dx = alloc_f(O * N * I);
        int32_t *arg = calloc((size_t)(O * I), sizeof *arg);
        double *w = malloc(sizeof(double) * O * I), *wdx = malloc(sizeof(double) * O * N * I);
        for (int op = 0; op < EO_RED_COUNT; op++) {
            eo_k_reduce((eo_redop)op, O, N, I, x, y, arg, NULL);
            for (int64_t i = 0; i < O * N * I; i++)
                wdx[i] = dx[i] = 1.0f;
            eo_k_reduce_backward((eo_redop)op, O, N, I, dy, arg, dx, NULL);
            for (int64_t o = 0; o < O; o++)
                for (int64_t c = 0; c < I; c++) {
                    double acc = 0, m = -INFINITY;
                    int64_t k = 0;
                    for (int64_t j = 0; j < N; j++) {
                        const double v = x[(o * N + j) * I + c];
                        acc += v;
                        if (v > m)
                            m = v, k = j;
                    }
                    const double g = dy[o * I + c];
                    if (op == EO_RED_MAX) {
                        w[o * I + c] = m;
                        ck_assert_int_eq(arg[o * I + c], k);
                        wdx[(o * N + k) * I + c] += g;
                    } else {
                        w[o * I + c] = op == EO_RED_SUM ? acc : acc / N;
                        for (int64_t j = 0; j < N; j++)
                            wdx[(o * N + j) * I + c] += op == EO_RED_SUM ? g : g / N;
                    }
                }
            check_all("reduce", y, w, O * I, 1e-6, 1e-6);
            check_all("reduce_backward", dx, wdx, O * N * I, 1e-6, 1e-6);
        }
        free(x), free(y), free(dy), free(dx), free(arg), free(w), free(wdx);
    }
}
END_TEST

START_TEST(reduce_max_first_and_nan)
{
    float x[6] = {1, 3, 3, -2, 0, 3}, y;
    int32_t k;
    eo_k_reduce(EO_RED_MAX, 1, 6, 1, x, &y, &k, NULL);
    CHECK(y == 3.0f);
    ck_assert_int_eq(k, 1); /* the first of the ties */
    x[2] = NAN;
    x[4] = NAN;
    eo_k_reduce(EO_RED_MAX, 1, 6, 1, x, &y, &k, NULL);
    CHECK(isnan(y));
    ck_assert_int_eq(k, 2); /* the first NaN, which then stays */
    eo_k_reduce(EO_RED_MAX, 1, 6, 1, x, &y, NULL, NULL); /* argmax optional */
    CHECK(isnan(y));
}
END_TEST

START_TEST(sumsq_in_double)
{
    const int64_t n = 100003;
    float *x = alloc_f(n);
    double w = 0;
    for (int64_t i = 0; i < n; i++) {
        x[i] = (i % 2 ? 1e-3f : 1.0f) * (1.0f + frand() * 0.1f);
        w += (double)x[i] * x[i];
    }
    float out;
    eo_k_sumsq(n, x, &out, NULL);
    ck_assert_double_eq_tol(out, w, w * 1e-7);
    eo_k_sumsq(1, x, &out, NULL);
    CHECK(out == x[0] * x[0]);
    eo_k_sumsq(0, x, &out, NULL);
    CHECK(out == 0.0f);
    free(x);
    /* Long enough for several blocks of the fixed cut: on 1, 2 and 3
     * threads the same bits, and the double sum. */
    const int64_t big = 3 * 65536 + 4321;
    float *y = alloc_f(big);
    double wy = 0;
    for (int64_t i = 0; i < big; i++) {
        y[i] = frand() - 0.5f;
        wy += (double)y[i] * y[i];
    }
    eo_pool *p2 = eo_pool_create(2), *p3 = eo_pool_create(3);
    const eo_exec e2 = { eo_pool_par(p2), NULL }, e3 = { eo_pool_par(p3), NULL };
    float o1, o2, o3;
    eo_k_sumsq(big, y, &o1, NULL);
    eo_k_sumsq(big, y, &o2, &e2);
    eo_k_sumsq(big, y, &o3, &e3);
    ck_assert_double_eq_tol(o1, wy, wy * 1e-7);
    CHECK(memcmp(&o1, &o2, sizeof o1) == 0 && memcmp(&o1, &o3, sizeof o1) == 0);
    eo_pool_destroy(p2);
    eo_pool_destroy(p3);
    free(y);
}
END_TEST

/* ---- softmax --------------------------------------------------------- */
static void ref_softmax_row(int lg, int64_t C, const float *x, double *y)
{
    double m = -INFINITY, s = 0;
    for (int64_t j = 0; j < C; j++)
        m = x[j] > m ? x[j] : m;
    if (m == -INFINITY) {
        for (int64_t j = 0; j < C; j++)
            y[j] = lg ? -INFINITY : 0;
        return;
    }
    for (int64_t j = 0; j < C; j++)
        s += exp(x[j] - m);
    for (int64_t j = 0; j < C; j++)
        y[j] = lg ? (x[j] - m) - log(s) : exp(x[j] - m) / s;
}

/* Rows: random, scaled to ±1e4, all -inf, partly -inf. */
static void softmax_inputs(int64_t R, int64_t C, float *x)
{
    fill_rand(x, R * C, 4.0f);
    if (R > 1)
        for (int64_t j = 0; j < C; j++)
            x[1 * C + j] *= 2500.0f; /* ±1e4 */
    if (R > 2)
        for (int64_t j = 0; j < C; j++)
            x[2 * C + j] = -INFINITY;
    if (R > 3)
        for (int64_t j = 0; j < C; j += 2)
            x[3 * C + j] = -INFINITY;
}

START_TEST(softmax_forward_backward)
{
    /* 4 x 70001: rows longer than EO_ROW_CACHED take the online path. */
    const int64_t shapes[][2] = {{1, 1}, {3, 7}, {5, 33}, {4, 1000}, {6, 8}, {4, 100}, {4, 70001}};
    for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++)
        for (int lg = 0; lg < 2; lg++) {
            const int64_t R = shapes[s][0], C = shapes[s][1], n = R * C;
            float *x = alloc_f(n), *y = alloc_f(n), *dy = fill_rand(alloc_f(n), n, 1.0f);
            float *dx = alloc_f(n);
            double *w = malloc(sizeof(double) * n), *wdx = malloc(sizeof(double) * n);
            softmax_inputs(R, C, x);
            for (int64_t r = 0; r < R; r++)
                ref_softmax_row(lg, C, x + r * C, w + r * C);
            /* Without ws (softmax then takes the one-row-at-a-time path),
             * then with it (rows pipelined), which the backward uses. */
            for (int with_ws = 0; with_ws < 2; with_ws++) {
                void *ws = with_ws ? malloc(eo_k_softmax_ws(lg, R, C, 1) + 1) : NULL;
                eo_k_softmax(lg, R, C, x, y, ws, NULL);
                free(ws);
                for (int64_t i = 0; i < n; i++)
                    CHECK_MSG(!isnan(y[i]), "NaN at %lld", (long long)i);
                /* log_softmax values are O(1e4) on the ±1e4 row: relative. */
                check_all(lg ? "log_softmax" : "softmax", y, w, n, 2e-6, lg ? 2e-6 : 1e-7);
            }

            /* backward from the kernel's own y, in double. The kernel's
             * row sum is a float: its rounding, relative to the sum, is
             * an absolute error on every dx of the row. */
            double *tol = malloc(sizeof(double) * R);
            for (int64_t r = 0; r < R; r++) {
                double acc = 0;
                int mass = 0; /* log_softmax: a row with an entry above -inf */
                for (int64_t j = 0; j < C; j++) {
                    acc += lg ? dy[r * C + j] : (double)dy[r * C + j] * y[r * C + j];
                    mass |= y[r * C + j] != -INFINITY;
                }
                tol[r] = 1e-6 + 1e-6 * fabs(acc);
                for (int64_t j = 0; j < C; j++) {
                    const int64_t i = r * C + j;
                    dx[i] = 0.25f;
                    if (lg) /* a -inf entry of a row with mass gets dy, as in PyTorch */
                        wdx[i] = 0.25 + (mass ? dy[i] - exp(y[i]) * acc : 0);
                    else
                        wdx[i] = 0.25 + y[i] * (dy[i] - acc);
                }
            }
            eo_k_softmax_backward(lg, R, C, y, dy, dx, NULL);
            for (int64_t r = 0; r < R; r++)
                check_all("softmax_backward", dx + r * C, wdx + r * C, C, 1e-5, tol[r]);
            free(tol);
            if (R > 2)
                for (int64_t j = 0; j < C; j++) /* the fully masked row: no gradient */
                    CHECK(dx[2 * C + j] == 0.25f);
            free(x), free(y), free(dy), free(dx), free(w), free(wdx);
        }
}
END_TEST

/* A NaN anywhere in a row makes that whole row NaN (PyTorch's result),
 * on every path: pipelined short rows with and without a workspace (the
 * fallback), streamed output (129 x 65536 floats is past 32 MiB), the
 * one-read long rows, and a NaN among -infs, which the max cannot see.
 * The other rows are untouched, and an all -inf row stays 0 / -inf. */
START_TEST(softmax_nan_rows)
{
    const int64_t shapes[][2] = {{3, 1}, {3, 7}, {3, 40}, {4, 300}, {3, 70001}, {129, 65536}};
    for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++)
        for (int lg = 0; lg < 2; lg++)
            for (int use_ws = 0; use_ws < 2; use_ws++) {
                const int64_t R = shapes[s][0], C = shapes[s][1], n = R * C;
                float *x = fill_rand(alloc_f(n), n, 3.0f), *y = alloc_f(n);
                for (int64_t j = 0; j < C; j++)
                    x[2 * C + j] = -INFINITY; /* row 2: all -inf ... */
                x[(C - 1) / 2] = NAN;         /* row 0: a NaN in the middle (or alone) */
                if (C > 1)
                    x[2 * C + C - 1] = NAN;   /* ... with a NaN at the end, among -infs */
                if (R > 3) {                  /* row 3: all -inf, no NaN */
                    for (int64_t j = 0; j < C; j++)
                        x[3 * C + j] = -INFINITY;
                }
                void *ws = use_ws ? malloc(eo_k_softmax_ws(lg, R, C, 1) + 1) : NULL;
                eo_k_softmax(lg, R, C, x, y, ws, NULL);
                free(ws);
                for (int64_t r = 0; r < R; r++)
                    for (int64_t j = 0; j < C; j++) {
                        const float v = y[r * C + j];
                        const int nan_row = r == 0 || (r == 2 && C > 1);
                        if (nan_row)
                            CHECK_MSG(isnan(v), "%s %lldx%lld ws %d: row %lld col %lld = %g, want NaN",
                                      lg ? "log_softmax" : "softmax", (long long)R, (long long)C,
                                      use_ws, (long long)r, (long long)j, (double)v);
                        else if (r == 2 || r == 3)
                            CHECK(v == (lg ? -INFINITY : 0.0f));
                        else
                            CHECK_MSG(!isnan(v) && (lg || isfinite(v)), "row %lld col %lld = %g",
                                      (long long)r, (long long)j, (double)v);
                    }
                free(x), free(y);
            }
}
END_TEST

/* A narrow row (every x - max above ln FLT_MIN, simd.h) takes an exp
 * without the flush or the clamp; it must give the bits the other path
 * gives. Row 0 is narrow; row 1 is the same with its last column -inf,
 * which makes it wide, so every other column must match bit for bit:
 * the -inf adds exactly 0 to row 1's sum, and row 0's last column, 80
 * below its max, a term below the last bit of every partial sum. Row 2
 * sits on the boundary, min - max just above -87.3365, row 3 just below,
 * each against a double reference; the AVX2 softmax flushes row 3's
 * smallest term to exactly 0 (the portable path keeps the denormal). */
START_TEST(softmax_narrow_rows_match_wide)
{
    const int64_t cols[] = {17, 300, 1024, 50257};
    for (size_t c = 0; c < sizeof cols / sizeof *cols; c++)
        for (int lg = 0; lg < 2; lg++) {
            const int64_t C = cols[c], R = 4, n = R * C;
            float *x = fill_rand(alloc_f(n), n, 4.0f), *y = alloc_f(n);
            x[0] = 4.0f, x[C - 1] = 4.0f - 80.0f; /* the max; the narrow row's smallest */
            memcpy(x + C, x, (size_t)C * sizeof(float));
            x[2 * C - 1] = -INFINITY;
            for (int64_t j = 2 * C; j < n; j++)
                x[j] = frand(); /* below 1, the max of rows 2 and 3 */
            x[2 * C] = 1.0f, x[2 * C + C / 2] = 1.0f - 87.33f;
            x[3 * C] = 1.0f, x[3 * C + C / 2] = 1.0f - 87.34f;
            void *ws = malloc(eo_k_softmax_ws(lg, R, C, 1) + 1);
            eo_k_softmax(lg, R, C, x, y, ws, NULL);
            free(ws);
            for (int64_t j = 0; j + 1 < C; j++)
                CHECK_MSG(memcmp(&y[j], &y[C + j], sizeof(float)) == 0,
                          "%s C=%lld col %lld: narrow %a, wide %a", lg ? "log_softmax" : "softmax",
                          (long long)C, (long long)j, (double)y[j], (double)y[C + j]);
            CHECK(y[2 * C - 1] == (lg ? -INFINITY : 0.0f));
            for (int r = 2; r < 4; r++) {
                const float *xr = x + r * C, *yr = y + r * C;
                double S = 0;
                for (int64_t j = 0; j < C; j++)
                    S += exp((double)xr[j] - 1.0);
                for (int64_t j = 0; j < C; j++) {
                    const double want =
                        lg ? ((double)xr[j] - 1.0) - log(S) : exp((double)xr[j] - 1.0) / S;
                    CHECK_MSG(fabs(yr[j] - want) <= 4e-6 * fabs(want) + 1e-37,
                              "%s row %d col %lld: %g, want %g", lg ? "log_softmax" : "softmax", r,
                              (long long)j, (double)yr[j], want);
                }
                if (!lg && r == 3 && vector_kernels())
                    CHECK(yr[C / 2] == 0.0f); /* below the flush */
            }
            free(x), free(y);
        }
}
END_TEST

/* NaN propagates through layernorm (the whole row: its mean is NaN) and
 * max pooling (the window's output, its index the NaN's), as in PyTorch. */
START_TEST(layernorm_maxpool_nan)
{
    const int64_t cols[] = {1, 7, 300};
    for (size_t c = 0; c < sizeof cols / sizeof *cols; c++) {
        const int64_t C = cols[c], n = 3 * C;
        float *x = fill_rand(alloc_f(n), n, 1.0f), *y = alloc_f(n), mean[3], rstd[3];
        x[C + C / 2] = NAN;
        eo_k_layernorm(3, C, x, NULL, NULL, 1e-5f, y, mean, rstd, NULL);
        for (int64_t j = 0; j < C; j++)
            CHECK(isnan(y[C + j]) && !isnan(y[j]) && !isnan(y[2 * C + j]));
        free(x), free(y);
    }
    float p[16], q[4];
    int32_t arg[4];
    fill_rand(p, 16, 1.0f);
    p[5] = NAN, p[2] = 100.0f, p[3] = NAN; /* window 0: NaN at 5; window 1: NaN at 3 after 100 */
    eo_k_maxpool2d(1, 4, 4, 2, p, q, arg, NULL);
    CHECK(isnan(q[0]) && arg[0] == 5 && isnan(q[1]) && arg[1] == 3 && !isnan(q[2]));
}
END_TEST

/* ---- cross-entropy ------------------------------------------------------ */
/* Every reduction, on short rows (pipelined), long ones (the one-read
 * form) and a common offset of 1e4 / 1e8 (the max and log-sum kept
 * apart: the loss and gradient must not depend on the offset). */
START_TEST(cross_entropy_forward_backward)
{
    const int64_t shapes[][2] = {{1, 1}, {3, 7}, {5, 33}, {7, 1000}, {3, 70001}};
    for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++)
        for (int red = EO_CE_MEAN; red <= EO_CE_NONE; red++) {
            const int64_t R = shapes[s][0], C = shapes[s][1], n = R * C;
            float *x = fill_rand(alloc_f(n), n, 3.0f), *st = alloc_f(2 * R), *dx = alloc_f(n);
            float *loss = alloc_f(R), *dloss = alloc_f(R);
            int32_t *t = calloc((size_t)R, sizeof *t);
            double *w = malloc(sizeof(double) * n), *lr = malloc(sizeof(double) * R);
            if (R > 1)
                for (int64_t j = 0; j < C; j++)
                    x[C + j] *= 1e4f / 3.0f; /* ±1e4 */
            if (R > 3)
                for (int64_t j = 0; j < C; j++)
                    x[3 * C + j] += 1e8f; /* a common offset the spacing of 8 swallows */
            for (int64_t r = 0; r < R; r++) {
                t[r] = (int32_t)((r * 7 + 3) % C);
                dloss[r] = 0.75f - 0.25f * (float)r;
            }
            if (R > 2)
                t[2] = -100; /* ignored */
            eo_k_cross_entropy(R, C, x, t, -100, (eo_ce_reduction)red, st, loss, NULL);
            double sum = 0;
            int64_t count = 0;
            for (int64_t r = 0; r < R; r++) {
                double m = -INFINITY, z = 0;
                for (int64_t j = 0; j < C; j++)
                    m = x[r * C + j] > m ? x[r * C + j] : m;
                for (int64_t j = 0; j < C; j++)
                    z += exp(x[r * C + j] - m);
                lr[r] = t[r] == -100 ? 0.0 : (m - x[r * C + t[r]]) + log(z);
                if (t[r] != -100) {
                    check_close("max", r, st[2 * r], m, 0, 0);
                    /* 2e-5: the portable path sums 70001 terms in float */
                    check_close("log-sum", r, st[2 * r + 1], log(z), 1e-6, 2e-5);
                    sum += lr[r];
                    count++;
                }
            }
            const double scale = red == EO_CE_MEAN ? 0.75 / (double)count : 0.75;
            for (int64_t r = 0; r < R; r++)
                for (int64_t j = 0; j < C; j++) {
                    if (t[r] == -100) { /* ignored: no gradient */
                        w[r * C + j] = 0.5;
                        continue;
                    }
                    const double sr = red == EO_CE_NONE ? dloss[r] : scale, l = x[r * C + t[r]] + lr[r];
                    w[r * C + j] = 0.5 + sr * (exp(x[r * C + j] - l) - (j == t[r]));
                }
            if (red == EO_CE_NONE)
                for (int64_t r = 0; r < R; r++)
                    check_close("loss none", r, loss[r], lr[r], 1e-5, 1e-5);
            else
                check_close(red == EO_CE_MEAN ? "loss mean" : "loss sum", 0, loss[0],
                            red == EO_CE_MEAN ? sum / count : sum, 1e-5, 1e-4);
            for (int64_t i = 0; i < n; i++)
                dx[i] = 0.5f;
            eo_k_cross_entropy_backward(R, C, x, t, -100, (eo_ce_reduction)red, st, dloss, dx, NULL);
            check_all("cross_entropy_backward", dx, w, n, 1e-5, 1e-6);
            free(x), free(st), free(dx), free(loss), free(dloss), free(t), free(w), free(lr);
        }
}
END_TEST

START_TEST(cross_entropy_all_ignored)
{
    float x[6] = {1, 2, 3, 4, 5, 6}, st[4], dloss[2] = {1.0f, 1.0f}, dx[6] = {0};
    int32_t t[2] = {-1, -1};
    for (int red = EO_CE_MEAN; red <= EO_CE_NONE; red++) {
        float loss[2] = {5.0f, 5.0f};
        eo_k_cross_entropy(2, 3, x, t, -1, (eo_ce_reduction)red, st, loss, NULL);
        CHECK(loss[0] == 0.0f && (red != EO_CE_NONE || loss[1] == 0.0f));
        eo_k_cross_entropy_backward(2, 3, x, t, -1, (eo_ce_reduction)red, st, dloss, dx, NULL);
        for (int i = 0; i < 6; i++)
            CHECK(dx[i] == 0.0f);
    }
}
END_TEST

/* A NaN logit makes its row's loss NaN (and the mean), on the short-row
 * and the long-row paths, wherever it sits, also among -infs. */
START_TEST(cross_entropy_nan_row)
{
    const int64_t cols[] = {1, 7, 40, 70001};
    for (size_t c = 0; c < sizeof cols / sizeof *cols; c++) {
        const int64_t C = cols[c], R = 4, n = R * C;
        for (int where = 0; where < 3; where++) {
            float *x = fill_rand(alloc_f(n), n, 2.0f), st[8], loss[4];
            int32_t t[4] = {0, 0, 0, 0};
            if (where == 2) /* a NaN among -infs: the max alone cannot see it */
                for (int64_t j = 0; j < C; j++)
                    x[C + j] = -INFINITY;
            x[C + (where == 0 ? 0 : C - 1)] = NAN;
            eo_k_cross_entropy(R, C, x, t, -100, EO_CE_NONE, st, loss, NULL);
            CHECK_MSG(isnan(loss[1]), "cols %lld, NaN at %d: loss %g", (long long)C, where,
                      (double)loss[1]);
            CHECK(isfinite(loss[0]) && isfinite(loss[2]) && isfinite(loss[3]));
            eo_k_cross_entropy(R, C, x, t, -100, EO_CE_MEAN, st, loss, NULL);
            CHECK(isnan(loss[0]));
            free(x);
        }
    }
}
END_TEST

/* ---- layernorm ---------------------------------------------------------- */
static void ref_layernorm_row(int64_t C, const float *x, const float *w, const float *b,
                              double eps, double *y, double *mean, double *rstd)
{
    double m = 0, v = 0;
    for (int64_t j = 0; j < C; j++)
        m += x[j];
    m /= C;
    for (int64_t j = 0; j < C; j++)
        v += (x[j] - m) * (x[j] - m);
    const double rs = 1 / sqrt(v / C + eps);
    for (int64_t j = 0; j < C; j++)
        y[j] = (x[j] - m) * rs * (w ? w[j] : 1) + (b ? b[j] : 0);
    *mean = m;
    *rstd = rs;
}

START_TEST(layernorm_forward)
{
    const int64_t shapes[][2] = {{1, 1}, {3, 7}, {5, 33}, {4, 1000}, {2, 8}};
    for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++)
        for (int affine = 0; affine < 2; affine++) {
            const int64_t R = shapes[s][0], C = shapes[s][1], n = R * C;
            float *x = fill_rand(alloc_f(n), n, 3.0f), *y = alloc_f(n);
            float *w = affine ? fill_rand(alloc_f(C), C, 2.0f) : NULL;
            float *b = affine ? fill_rand(alloc_f(C), C, 1.0f) : NULL;
            float *mean = alloc_f(R), *rstd = alloc_f(R);
            double *wy = malloc(sizeof(double) * n), wm, wr;
            for (int64_t j = 0; j < C; j++)
                x[j] += 5.0f; /* an offset row */
            eo_k_layernorm(R, C, x, w, b, 1e-5f, y, mean, rstd, NULL);
            for (int64_t r = 0; r < R; r++) {
                ref_layernorm_row(C, x + r * C, w, b, 1e-5, wy + r * C, &wm, &wr);
                check_close("mean", r, mean[r], wm, 1e-6, 1e-6);
                check_close("rstd", r, rstd[r], wr, 1e-5, 1e-6);
            }
            check_all("layernorm", y, wy, n, 1e-5, 1e-5);
            free(x), free(y), free(w), free(b), free(mean), free(rstd), free(wy);
        }
}
END_TEST

START_TEST(layernorm_constant_and_offset_rows)
{
    enum { C = 77 };
    float x[2 * C], w[C], b[C], y[2 * C], mean[2], rstd[2];
    fill_rand(w, C, 2.0f);
    fill_rand(b, C, 1.0f);
    for (int j = 0; j < C; j++) {
        x[j] = 3.25f;                      /* constant: y must be b exactly */
        x[C + j] = 1e4f + frand();         /* a large offset and O(1) noise */
    }
    eo_k_layernorm(2, C, x, w, b, 1e-5f, y, mean, rstd, NULL);
    for (int j = 0; j < C; j++)
        CHECK_MSG(y[j] == b[j], "constant row: y[%d] = %.9g, b = %.9g", j, y[j], b[j]);
    double wy[C], wm, wr;
    ref_layernorm_row(C, x + C, NULL, NULL, 1e-5, wy, &wm, &wr);
    eo_k_layernorm(1, C, x + C, NULL, NULL, 1e-5f, y, mean, rstd, NULL);
    /* y is the noise in units of its own spread: an error of 1e-3 here is
     * 1e-3 relative to the noise. E[x^2] - E[x]^2 in float fails this by
     * orders of magnitude. */
    check_all("layernorm 1e4 + noise", y, wy, C, 0, 1e-3);
}
END_TEST

START_TEST(layernorm_backward)
{
    const int64_t shapes[][2] = {{1, 1}, {3, 7}, {5, 33}, {4, 1000}};
    for (size_t s = 0; s < sizeof shapes / sizeof *shapes; s++)
        for (int affine = 0; affine < 2; affine++) {
            const int64_t R = shapes[s][0], C = shapes[s][1], n = R * C;
            float *x = fill_rand(alloc_f(n), n, 3.0f), *y = alloc_f(n);
            float *w = affine ? fill_rand(alloc_f(C), C, 2.0f) : NULL;
            float *dy = fill_rand(alloc_f(n), n, 1.0f), *dx = alloc_f(n);
            float *dw = alloc_f(C), *db = alloc_f(C), *mean = alloc_f(R), *rstd = alloc_f(R);
            double *wdx = malloc(sizeof(double) * n), *wdw = calloc((size_t)C, sizeof(double));
            double *wdb = calloc((size_t)C, sizeof(double));
            void *ws = malloc(eo_k_layernorm_backward_ws(R, C, 1));
            eo_k_layernorm(R, C, x, w, NULL, 1e-5f, y, mean, rstd, NULL);
            for (int64_t i = 0; i < n; i++)
                dx[i] = 0.5f;
            for (int64_t j = 0; j < C; j++)
                dw[j] = db[j] = 0.25f, wdw[j] = wdb[j] = 0.25;
            eo_k_layernorm_backward(R, C, x, w, mean, rstd, dy, dx, dw, db, ws, NULL);
            for (int64_t r = 0; r < R; r++) {
                double mg = 0, mgx = 0;
                const double mu = mean[r], rs = rstd[r];
                for (int64_t j = 0; j < C; j++) {
                    const double xh = (x[r * C + j] - mu) * rs, g = dy[r * C + j] * (w ? w[j] : 1);
                    mg += g / C;
                    mgx += g * xh / C;
                    wdw[j] += dy[r * C + j] * xh;
                    wdb[j] += dy[r * C + j];
                }
                for (int64_t j = 0; j < C; j++) {
                    const double xh = (x[r * C + j] - mu) * rs, g = dy[r * C + j] * (w ? w[j] : 1);
                    wdx[r * C + j] = 0.5 + rs * (g - mg - xh * mgx);
                }
            }
            check_all("layernorm dx", dx, wdx, n, 1e-4, 1e-5);
            check_all("layernorm dw", dw, wdw, C, 1e-5, 1e-5);
            check_all("layernorm db", db, wdb, C, 1e-5, 1e-5);
            /* Each output alone gives the same values. */
            float *dx2 = alloc_f(n), *dw2 = alloc_f(C);
            for (int64_t i = 0; i < n; i++)
                dx2[i] = 0.5f;
            for (int64_t j = 0; j < C; j++)
                dw2[j] = 0.25f;
            eo_k_layernorm_backward(R, C, x, w, mean, rstd, dy, dx2, NULL, NULL, NULL, NULL);
            eo_k_layernorm_backward(R, C, x, w, mean, rstd, dy, NULL, dw2, NULL, ws, NULL);
            CHECK(memcmp(dx, dx2, sizeof(float) * n) == 0);
            CHECK(memcmp(dw, dw2, sizeof(float) * C) == 0);
            free(x), free(y), free(w), free(dy), free(dx), free(dw), free(db), free(mean);
            free(rstd), free(wdx), free(wdw), free(wdb), free(ws), free(dx2), free(dw2);
        }
}
END_TEST

/* ---- embedding, dropout ------------------------------------------------- */
START_TEST(embedding_repeated_indices)
{
    enum { V = 5, D = 33, N = 7 };
    float table[V * D], out[N * D], dout[N * D], dtable[V * D];
    double want[V * D];
    const int32_t idx[N] = {3, 0, 3, 4, 3, 1, 0};
    fill_rand(table, V * D, 1.0f);
    fill_rand(dout, N * D, 1.0f);
    eo_k_embedding(N, D, table, idx, out, NULL);
    for (int i = 0; i < N; i++)
        CHECK(memcmp(out + i * D, table + idx[i] * D, sizeof(float) * D) == 0);
    for (int i = 0; i < V * D; i++)
        want[i] = dtable[i] = 1.0f;
    eo_k_embedding_backward(N, D, idx, dout, dtable, NULL);
    for (int i = 0; i < N; i++)
        for (int j = 0; j < D; j++)
            want[idx[i] * D + j] += dout[i * D + j];
    check_all("embedding_backward", dtable, want, V * D, 1e-6, 1e-6);
    for (int j = 0; j < D; j++)
        CHECK(dtable[2 * D + j] == 1.0f); /* row 2 was never used */
}
END_TEST

START_TEST(dropout_mask_and_scale)
{
    const int64_t n = 100001;
    const float p = 0.3f;
    float *x = fill_rand(alloc_f(n), n, 1.0f), *y = alloc_f(n), *dy = fill_rand(alloc_f(n), n, 1.0f);
    float *dx = alloc_f(n);
    eo_k_dropout(n, x, y, p, 42, NULL);
    for (int64_t i = 0; i < n; i++)
        dx[i] = 0.5f;
    eo_k_dropout_backward(n, dy, dx, p, 42, NULL);
    int64_t kept = 0;
    for (int64_t i = 0; i < n; i++) {
        const int k = eo_dropout_keep(42, i, p);
        kept += k;
        CHECK(y[i] == (k ? x[i] / (1.0f - p) : 0.0f));
        CHECK(dx[i] == (k ? 0.5f + dy[i] / (1.0f - p) : 0.5f));
    }
    const double frac = (double)kept / n;
    CHECK_MSG(fabs(frac - 0.7) < 0.01, "kept fraction %g", frac);
    /* Another seed gives another mask; p = 0 keeps everything as is. */
    float *y2 = alloc_f(n);
    eo_k_dropout(n, x, y2, p, 43, NULL);
    CHECK(memcmp(y, y2, sizeof(float) * n) != 0);
    eo_k_dropout(n, x, y2, 0.0f, 43, NULL);
    CHECK(memcmp(x, y2, sizeof(float) * n) == 0);
    free(x), free(y), free(dy), free(dx), free(y2);
}
END_TEST

/* ---- convolution helpers ---------------------------------------------- */
START_TEST(im2col_col2im_maxpool)
{
    enum { C = 2, H = 5, W = 7, KH = 3, KW = 2, PAD = 1, S = 2 };
    const int OH = (H + 2 * PAD - KH) / S + 1, OW = (W + 2 * PAD - KW) / S + 1;
    float x[C * H * W], cols[C * KH * KW * 4 * 4], dc[C * KH * KW * 4 * 4], dx[C * H * W];
    double want[C * H * W];
    ck_assert_int_eq(OH * OW, 12);
    fill_rand(x, C * H * W, 1.0f);
    fill_rand(dc, C * KH * KW * OH * OW, 1.0f);
    eo_k_im2col(1, C, H, W, KH, KW, PAD, S, x, cols, NULL);
    for (int i = 0; i < C * H * W; i++)
        want[i] = dx[i] = 0.5f;
    eo_k_col2im(1, C, H, W, KH, KW, PAD, S, dc, dx, NULL);
    for (int c = 0; c < C; c++)
        for (int i = 0; i < KH; i++)
            for (int j = 0; j < KW; j++)
                for (int oh = 0; oh < OH; oh++)
                    for (int ow = 0; ow < OW; ow++) {
                        const int row = (c * KH + i) * KW + j, o = row * OH * OW + oh * OW + ow;
                        const int ih = oh * S - PAD + i, iw = ow * S - PAD + j;
                        const int in = ih >= 0 && ih < H && iw >= 0 && iw < W;
                        CHECK(cols[o] == (in ? x[(c * H + ih) * W + iw] : 0.0f));
                        if (in)
                            want[(c * H + ih) * W + iw] += dc[o];
                    }
    check_all("col2im", dx, want, C * H * W, 1e-6, 1e-6);

    /* A batch of 2: image n fills columns [n*OH*OW, (n+1)*OH*OW) of each
     * row, exactly as im2col of that image alone; col2im splits back. */
    {
        enum { R = C * KH * KW, P = 12 };
        float x2[2 * C * H * W], c2[R * 2 * P], one[R * P], dx2[2 * C * H * W], d2[R * 2 * P];
        fill_rand(x2, 2 * C * H * W, 1.0f);
        eo_k_im2col(2, C, H, W, KH, KW, PAD, S, x2, c2, NULL);
        for (int n = 0; n < 2; n++) {
            eo_k_im2col(1, C, H, W, KH, KW, PAD, S, x2 + n * C * H * W, one, NULL);
            for (int r = 0; r < R; r++)
                CHECK(memcmp(c2 + r * 2 * P + n * P, one + r * P, sizeof(float) * P) == 0);
        }
        for (int r = 0; r < R; r++)
            for (int n = 0; n < 2; n++)
                memcpy(d2 + r * 2 * P + n * P, dc + r * P, sizeof(float) * P);
        memset(dx2, 0, sizeof dx2);
        eo_k_col2im(2, C, H, W, KH, KW, PAD, S, d2, dx2, NULL);
        for (int n = 0; n < 2; n++)
            for (int i = 0; i < C * H * W; i++)
                check_close("col2im batch", i, dx2[n * C * H * W + i], want[i] - 0.5, 1e-6, 1e-6);
    }

    /* max pool 2x2 over 3 planes of 5x7: a 2x3 output, the odd row and
     * column dropped. */
    enum { P = 3, K = 2 };
    float xp[P * H * W], y[P * 2 * 3], dy[P * 2 * 3], dxp[P * H * W];
    int32_t arg[P * 2 * 3];
    fill_rand(xp, P * H * W, 1.0f);
    fill_rand(dy, P * 6, 1.0f);
    xp[0] = xp[1] = 5.0f; /* a tie: the first one wins */
    eo_k_maxpool2d(P, H, W, K, xp, y, arg, NULL);
    memset(dxp, 0, sizeof dxp);
    eo_k_maxpool2d_backward(P, H, W, K, dy, arg, dxp, NULL);
    double wdx[P * H * W] = {0};
    for (int p = 0; p < P; p++)
        for (int oh = 0; oh < 2; oh++)
            for (int ow = 0; ow < 3; ow++) {
                float m = -INFINITY;
                int best = 0;
                for (int u = 0; u < K; u++)
                    for (int v = 0; v < K; v++) {
                        const int at = (oh * K + u) * W + ow * K + v;
                        if (xp[p * H * W + at] > m)
                            m = xp[p * H * W + at], best = at;
                    }
                const int o = (p * 2 + oh) * 3 + ow;
                CHECK(y[o] == m);
                ck_assert_int_eq(arg[o], best);
                wdx[p * H * W + best] += dy[o];
            }
    ck_assert_int_eq(arg[0], 0);
    check_all("maxpool_backward", dxp, wdx, P * H * W, 0, 0);
}
END_TEST

/* Max pool 2x2 on rows wide enough for the eight-window vector path
 * (OW = 18: two vector blocks and a scalar tail of 2, W odd so the last
 * column is dropped), with ties, -inf, +inf and NaNs placed at every tap
 * of some window, two or three in some: the vector path must keep the
 * scalar rule, PyTorch's (first maximum wins; a NaN wins, and each later
 * NaN replaces it). */
START_TEST(maxpool2x2_wide_rows_nan_ties)
{
    enum { P = 2, H = 6, W = 37, K = 2, OH = 3, OW = 18 };
    float x[P * H * W], y[P * OH * OW];
    int32_t arg[P * OH * OW];
    fill_rand(x, P * H * W, 1.0f);
    for (int i = 0; i < P * H * W; i += 7)
        x[i] = x[i + 1 < P * H * W ? i + 1 : i]; /* ties */
    for (int i = 3; i < P * H * W; i += 11)
        x[i] = NAN;
    for (int i = 5; i < P * H * W; i += 13)
        x[i] = (i / 13) % 2 ? INFINITY : -INFINITY;
    /* several NaNs in one window: rows 2-3, columns 4-5 and 10-11 */
    x[2 * W + 4] = x[3 * W + 4] = NAN;
    x[2 * W + 10] = x[2 * W + 11] = x[3 * W + 11] = NAN;
    eo_k_maxpool2d(P, H, W, K, x, y, arg, NULL);
    for (int p = 0; p < P; p++)
        for (int oh = 0; oh < OH; oh++)
            for (int ow = 0; ow < OW; ow++) {
                const float *xp = x + p * H * W;
                int best = oh * K * W + ow * K;
                float m = xp[best];
                for (int u = 0; u < K; u++)
                    for (int v = 0; v < K; v++) {
                        const int at = (oh * K + u) * W + ow * K + v;
                        if (xp[at] > m || isnan(xp[at]))
                            m = xp[at], best = at;
                    }
                const int o = (p * OH + oh) * OW + ow;
                ck_assert_msg(arg[o] == best, "maxpool 2x2 plane %d (%d, %d): arg %d, want %d", p,
                              oh, ow, (int)arg[o], best);
                CHECK(isnan(m) ? isnan(y[o]) : y[o] == m);
            }
}
END_TEST

/* The fused convolution against a double reference, in both directions,
 * on one thread and on pools of 2 and 3: the forward and dx do not depend
 * on the thread count at all (each image is one matmul of its own); dw
 * and db are sums over images in worker order, so they are checked
 * against the reference and for being the same on a repeat. Enough images
 * that the kernel does hand them to the pool; a padded, strided,
 * non-square case, a 1x1 one (x itself is the column matrix) and two of
 * "same" width at stride 1 (the columns as shifted runs of the plane),
 * and one with a single input channel (K = 9: a matmul of depth 9). */
static void conv_ref(const eo_conv_geom *g, const float *x, const float *w, const float *b,
                     const float *dy, double *y, double *dx, double *dw, double *db)
{
    const int64_t OH = (g->H + 2 * g->pad - g->kh) / g->stride + 1;
    const int64_t OW = (g->W + 2 * g->pad - g->kw) / g->stride + 1;
    memset(dx, 0, sizeof(double) * (size_t)(g->N * g->C * g->H * g->W));
    memset(dw, 0, sizeof(double) * (size_t)(g->Co * g->C * g->kh * g->kw));
    memset(db, 0, sizeof(double) * (size_t)g->Co);
    for (int64_t n = 0; n < g->N; n++)
        for (int64_t o = 0; o < g->Co; o++)
            for (int64_t oh = 0; oh < OH; oh++)
                for (int64_t ow = 0; ow < OW; ow++) {
                    const int64_t yo = ((n * g->Co + o) * OH + oh) * OW + ow;
                    double acc = b[o];
                    db[o] += dy[yo];
                    for (int64_t c = 0; c < g->C; c++)
                        for (int64_t i = 0; i < g->kh; i++)
                            for (int64_t j = 0; j < g->kw; j++) {
                                const int64_t h = oh * g->stride - g->pad + i;
                                const int64_t v = ow * g->stride - g->pad + j;
                                if (h < 0 || h >= g->H || v < 0 || v >= g->W)
                                    continue;
                                const int64_t xi = ((n * g->C + c) * g->H + h) * g->W + v;
                                const int64_t wi = ((o * g->C + c) * g->kh + i) * g->kw + j;
                                acc += (double)x[xi] * w[wi];
                                dx[xi] += (double)dy[yo] * w[wi];
                                dw[wi] += (double)dy[yo] * x[xi];
                            }
                    y[yo] = acc;
                }
}

START_TEST(conv2d_fused_threads)
{
    static const eo_conv_geom geoms[] = {
        { 64, 3, 12, 13, 16, 3, 2, 1, 2 },
        { 40, 5, 8, 7, 12, 1, 1, 0, 1 },
        { 80, 3, 7, 9, 8, 3, 3, 1, 1 },  /* "same" width, stride 1: the shifted-run path */
        { 6, 2, 6, 5, 5, 5, 5, 2, 1 },   /* the same with |dw| up to 2 and rows of padding */
        { 48, 1, 11, 13, 8, 3, 3, 1, 1 }, /* one input channel, as a first layer */
    };
    eo_pool *pool2 = eo_pool_create(2), *pool3 = eo_pool_create(3);
    ck_assert_ptr_nonnull(pool2);
    ck_assert_ptr_nonnull(pool3);
    const eo_exec ex2 = { eo_pool_par(pool2), NULL }, ex3 = { eo_pool_par(pool3), NULL };
    for (int c = 0; c < 5; c++) {
        const eo_conv_geom *g = &geoms[c];
        const int64_t OH = (g->H + 2 * g->pad - g->kh) / g->stride + 1;
        const int64_t OW = (g->W + 2 * g->pad - g->kw) / g->stride + 1;
        const int64_t nx = g->N * g->C * g->H * g->W, nw = g->Co * g->C * g->kh * g->kw;
        const int64_t ny = g->N * g->Co * OH * OW, taps = g->C * g->kh * g->kw;
        float *x = fill_rand(malloc(sizeof(float) * (size_t)nx), nx, 1.0f);
        float *w = fill_rand(malloc(sizeof(float) * (size_t)nw), nw, 1.0f);
        float *b = fill_rand(malloc(sizeof(float) * (size_t)g->Co), g->Co, 1.0f);
        float *dy = fill_rand(malloc(sizeof(float) * (size_t)ny), ny, 1.0f);
        double *ry = malloc(sizeof(double) * (size_t)ny), *rdx = malloc(sizeof(double) * (size_t)nx);
        double *rdw = malloc(sizeof(double) * (size_t)nw), *rdb = malloc(sizeof(double) * (size_t)g->Co);
        conv_ref(g, x, w, b, dy, ry, rdx, rdw, rdb);
        void *ws = malloc(eo_k_conv2d_ws(g, 3));
        float *y[3], *dx[3], *dw[3], *db[3];
        const eo_exec *exs[3] = { NULL, &ex2, &ex3 };
        for (int t = 0; t < 3; t++) {
            y[t] = malloc(sizeof(float) * (size_t)ny);
            dx[t] = calloc((size_t)nx, sizeof(float));
            dw[t] = calloc((size_t)nw, sizeof(float));
            db[t] = calloc((size_t)g->Co, sizeof(float));
            eo_k_conv2d(g, x, w, b, y[t], ws, exs[t]);
            eo_k_conv2d_backward(g, x, w, dy, dx[t], dw[t], db[t], ws, exs[t]);
            check_all("conv2d fused y", y[t], ry, ny, 1e-5, 1e-6 * (double)taps);
            check_all("conv2d fused dx", dx[t], rdx, nx, 1e-5, 1e-6 * (double)g->Co);
            check_all("conv2d fused dw", dw[t], rdw, nw, 1e-5, 1e-6 * (double)ny);
            check_all("conv2d fused db", db[t], rdb, g->Co, 1e-5, 1e-6 * (double)ny);
            CHECK(memcmp(y[t], y[0], sizeof(float) * (size_t)ny) == 0);
            CHECK(memcmp(dx[t], dx[0], sizeof(float) * (size_t)nx) == 0);
        }
        /* The same thread count twice: the same bits. */
        float *dw2 = calloc((size_t)nw, sizeof(float)), *db2 = calloc((size_t)g->Co, sizeof(float));
        eo_k_conv2d_backward(g, x, w, dy, NULL, dw2, db2, ws, &ex2);
        CHECK(memcmp(dw2, dw[1], sizeof(float) * (size_t)nw) == 0);
        CHECK(memcmp(db2, db[1], sizeof(float) * (size_t)g->Co) == 0);
        for (int t = 0; t < 3; t++)
            free(y[t]), free(dx[t]), free(dw[t]), free(db[t]);
        free(dw2), free(db2), free(ws), free(x), free(w), free(b), free(dy);
        free(ry), free(rdx), free(rdw), free(rdb);
    }
    eo_pool_destroy(pool2);
    eo_pool_destroy(pool3);
}
END_TEST

/* ---- optimizers ------------------------------------------------------------
 * Many elements (the vector loop and its scalar tail) against the formulas
 * of kernels.h in double. */
START_TEST(optimizers_many_elements)
{
    enum { N = 37 };
    float w[N], g[N], v[N], m[N];
    double ww[N], wv[N], wm[N];
    for (int variant = 0; variant < 3; variant++) { /* plain momentum, Nesterov, dampening */
        const int nesterov = variant == 1;
        const double damp = variant == 2 ? 0.25 : 0.0;
        fill_rand(w, N, 1.0f), fill_rand(g, N, 1.0f), fill_rand(v, N, 0.5f);
        for (int i = 0; i < N; i++) {
            double d = (double)g[i] + 0.01 * (double)w[i];
            wv[i] = 0.9 * v[i] + (1 - damp) * d;
            d = nesterov ? d + 0.9 * wv[i] : wv[i];
            ww[i] = w[i] - 0.1 * d;
        }
        eo_k_sgd(N, w, g, v, 0.1f, 0.9f, (float)damp, 0.01f, nesterov, NULL);
        check_all("sgd w", w, ww, N, 1e-6, 1e-6);
        check_all("sgd v", v, wv, N, 1e-6, 1e-6);
    }
    fill_rand(w, N, 1.0f), fill_rand(g, N, 1.0f), fill_rand(m, N, 0.1f), fill_rand(v, N, 0.01f);
    /* The hyperparameters as the kernel receives them: floats. */
    const double b1 = 0.9f, b2 = 0.999f, lr = 1e-3f, wd = 0.1f, eps = 1e-8f;
    for (int i = 0; i < N; i++) {
        v[i] = fabsf(v[i]);
        wm[i] = b1 * m[i] + (1 - b1) * g[i];
        wv[i] = b2 * v[i] + (1 - b2) * g[i] * g[i];
        const double bc1 = 1 - pow(b1, 5), bc2 = 1 - pow(b2, 5);
        ww[i] = w[i] * (1 - lr * wd) - lr / bc1 * wm[i] / (sqrt(wv[i]) / sqrt(bc2) + eps);
    }
    eo_k_adamw(N, w, g, m, v, 1e-3f, 0.9f, 0.999f, 1e-8f, 0.1f, 5, NULL);
    check_all("adamw w", w, ww, N, 1e-6, 1e-7);
    check_all("adamw m", m, wm, N, 1e-6, 1e-7);
    check_all("adamw v", v, wv, N, 1e-5, 1e-9);
}
END_TEST

/* ---- optimizers: one step, values worked out by hand ------------------- */
START_TEST(sgd_one_step)
{
    /* w = 1, g = 0.5, v = 0.2, lr = 0.1, momentum 0.9, wd 0.01:
     *   plain:    w = 1 - 0.1 * 0.5 = 0.95
     *   wd:       d = 0.5 + 0.01 = 0.51, w = 1 - 0.051 = 0.949
     *   momentum: v = 0.9 * 0.2 + 0.51 = 0.69, w = 1 - 0.069 = 0.931
     *   nesterov: v = 0.69, d = 0.51 + 0.9 * 0.69 = 1.131, w = 0.8869 */
    const float g[1] = {0.5f};
    float w, v;
    w = 1.0f;
    eo_k_sgd(1, &w, g, NULL, 0.1f, 0.0f, 0.0f, 0.0f, 0, NULL);
    ck_assert_float_eq_tol(w, 0.95f, 1e-7f);
    w = 1.0f;
    eo_k_sgd(1, &w, g, NULL, 0.1f, 0.0f, 0.0f, 0.01f, 0, NULL);
    ck_assert_float_eq_tol(w, 0.949f, 1e-7f);
    w = 1.0f, v = 0.2f;
    eo_k_sgd(1, &w, g, &v, 0.1f, 0.9f, 0.0f, 0.01f, 0, NULL);
    ck_assert_float_eq_tol(w, 0.931f, 1e-7f);
    ck_assert_float_eq_tol(v, 0.69f, 1e-7f);
    w = 1.0f, v = 0.2f;
    eo_k_sgd(1, &w, g, &v, 0.1f, 0.9f, 0.0f, 0.01f, 1, NULL);
    ck_assert_float_eq_tol(w, 0.8869f, 1e-7f);
    ck_assert_float_eq_tol(v, 0.69f, 1e-7f);
}
END_TEST

START_TEST(adamw_one_step)
{
    /* w = 1, g = 0.5, m = 0.1, v = 0.04, lr = 0.01, b1 = 0.9, b2 = 0.999,
     * eps = 1e-8, wd = 0.1, t = 3:
     *   w = 1 * (1 - 0.01 * 0.1) = 0.999
     *   m = 0.9 * 0.1 + 0.1 * 0.5 = 0.14
     *   v = 0.999 * 0.04 + 0.001 * 0.25 = 0.04021
     *   1 - b1^3 = 0.271,  1 - b2^3 = 0.002997001
     *   w -= 0.01 / 0.271 * 0.14 / (sqrt(0.04021) / sqrt(0.002997001) + 1e-8)
     *     = 0.999 - 0.00141037679 = 0.997589623 */
    float w = 1.0f, m = 0.1f, v = 0.04f;
    const float g = 0.5f;
    eo_k_adamw(1, &w, &g, &m, &v, 0.01f, 0.9f, 0.999f, 1e-8f, 0.1f, 3, NULL);
    ck_assert_float_eq_tol(m, 0.14f, 1e-7f);
    ck_assert_float_eq_tol(v, 0.04021f, 1e-8f);
    ck_assert_float_eq_tol(w, 0.997589623f, 1e-7f);
    /* Step 1 without decay: the bias-corrected first step is lr * sign(g). */
    w = 1.0f, m = 0.0f, v = 0.0f;
    eo_k_adamw(1, &w, &g, &m, &v, 0.01f, 0.9f, 0.999f, 1e-8f, 0.0f, 1, NULL);
    ck_assert_float_eq_tol(w, 0.99f, 1e-6f);
}
END_TEST

/* ---- the same bits on one thread and on a split range -------------------- */
/* The strided kernels are cut along the outer rows, or along the inner run
 * when the destination sums over the rows (a bias gradient), or not at
 * all when everything sums into one element: each layout, split and not,
 * must give the same bits. */
START_TEST(strided_kernels_independent_of_split)
{
    enum { R = 40, C = 1001, N = R * C };
    float *x = fill_rand(alloc_f(N), N, 3.0f), *y = fill_rand(alloc_f(N), N, 2.0f);
    float *dy = fill_rand(alloc_f(N), N, 1.0f), *v = fill_rand(alloc_f(C), C, 1.0f);
    float *a = alloc_f(N), *b = alloc_f(N), *a2 = alloc_f(N), *b2 = alloc_f(N);
    const eo_exec *pars[2] = {NULL, &fake_par};
    const int64_t shape[4] = {1, 1, R, C}, full[4] = {0, 0, C, 1}, row[4] = {0, 0, 0, 1};
    const int64_t col[4] = {0, 0, 1, 0}, none[4] = {0, 0, 0, 0}, tr[4] = {0, 0, 1, R};
    for (int op = 0; op < EO_BIN_COUNT; op++) {
        /* forward: full with full, and full with a broadcast row */
        eo_k_binary((eo_binop)op, shape, a, full, x, full, y, full, pars[0]);
        eo_k_binary((eo_binop)op, shape, b, full, x, full, y, full, pars[1]);
        check_same_bits("binary", a, b, sizeof(float) * N);
        eo_k_binary((eo_binop)op, shape, a, full, x, full, v, row, pars[0]);
        eo_k_binary((eo_binop)op, shape, b, full, x, full, v, row, pars[1]);
        check_same_bits("binary broadcast", a, b, sizeof(float) * N);
        /* backward into a row (inner cut), a column (outer cut), a scalar (serial) */
        const int64_t *gst[3] = {row, col, none};
        for (int g = 0; g < 3; g++) {
            memset(a, 0, sizeof(float) * N), memset(b, 0, sizeof(float) * N);
            memset(a2, 0, sizeof(float) * N), memset(b2, 0, sizeof(float) * N);
            eo_k_binary_backward((eo_binop)op, shape, dy, full, x, full, y, gst[g], a, full, a2,
                                 gst[g], pars[0]);
            eo_k_binary_backward((eo_binop)op, shape, dy, full, x, full, y, gst[g], b, full, b2,
                                 gst[g], pars[1]);
            check_same_bits("binary_backward da", a, b, sizeof(float) * N);
            check_same_bits("binary_backward db", a2, b2, sizeof(float) * C);
        }
    }
    /* copy through a transpose; accumulate into full, a row, a column, a scalar */
    eo_k_copy32(shape, a, tr, x, full, pars[0]);
    eo_k_copy32(shape, b, tr, x, full, pars[1]);
    check_same_bits("copy32", a, b, sizeof(float) * N);
    const int64_t *dst[5] = {full, tr, row, col, none};
    for (int d = 0; d < 5; d++) {
        memcpy(a, y, sizeof(float) * N), memcpy(b, y, sizeof(float) * N);
        eo_k_accumulate(shape, a, dst[d], x, full, pars[0]);
        eo_k_accumulate(shape, b, dst[d], x, full, pars[1]);
        check_same_bits("accumulate", a, b, sizeof(float) * N);
    }
    eo_k_fill(N - 3, a, 1.5f, pars[0]);
    eo_k_fill(N - 3, b, 1.5f, pars[1]);
    check_same_bits("fill", a, b, sizeof(float) * N);
    for (int i = 0; i < N - 3; i++)
        CHECK(b[i] == 1.5f);
    free(x), free(y), free(dy), free(v), free(a), free(b), free(a2), free(b2);
}
END_TEST

START_TEST(row_kernels_independent_of_split)
{
    /* Big enough that every kernel hands its work to the hook. */
    enum { R = 40, C = 1001, N = R * C };
    float *x = fill_rand(alloc_f(N), N, 3.0f), *dy = fill_rand(alloc_f(N), N, 1.0f);
    float *a = alloc_f(N), *b = alloc_f(N), *a2 = alloc_f(N), *b2 = alloc_f(N);
    float *w = fill_rand(alloc_f(C), C, 1.0f), *bias = fill_rand(alloc_f(C), C, 1.0f);
    float ma[R], mb[R], ra[R], rb[R];
    int32_t t[R];
    for (int r = 0; r < R; r++)
        t[r] = r == 5 ? -1 : (r * 37) % C;
    const eo_exec *pars[2] = {NULL, &fake_par};

    for (int lg = 0; lg < 2; lg++) {
        void *ws = malloc(eo_k_softmax_ws(lg, R, C, 2) + 1);
        eo_k_softmax(lg, R, C, x, a, ws, pars[0]);
        eo_k_softmax(lg, R, C, x, b, ws, pars[1]);
        free(ws);
        check_same_bits("softmax", a, b, sizeof(float) * N);
        memset(a2, 0, sizeof(float) * N), memset(b2, 0, sizeof(float) * N);
        eo_k_softmax_backward(lg, R, C, a, dy, a2, pars[0]);
        eo_k_softmax_backward(lg, R, C, a, dy, b2, pars[1]);
        check_same_bits("softmax_backward", a2, b2, sizeof(float) * N);
    }

    float la, lb, one = 1.0f, sta[2 * R], stb[2 * R];
    eo_k_cross_entropy(R, C, x, t, -1, EO_CE_MEAN, sta, &la, pars[0]);
    eo_k_cross_entropy(R, C, x, t, -1, EO_CE_MEAN, stb, &lb, pars[1]);
    CHECK(la == lb);
    check_same_bits("cross_entropy stats", sta, stb, sizeof sta);
    memset(a2, 0, sizeof(float) * N), memset(b2, 0, sizeof(float) * N);
    eo_k_cross_entropy_backward(R, C, x, t, -1, EO_CE_MEAN, sta, &one, a2, pars[0]);
    eo_k_cross_entropy_backward(R, C, x, t, -1, EO_CE_MEAN, sta, &one, b2, pars[1]);
    check_same_bits("cross_entropy_backward", a2, b2, sizeof(float) * N);

    eo_k_layernorm(R, C, x, w, bias, 1e-5f, a, ma, ra, pars[0]);
    eo_k_layernorm(R, C, x, w, bias, 1e-5f, b, mb, rb, pars[1]);
    check_same_bits("layernorm", a, b, sizeof(float) * N);
    check_same_bits("layernorm mean", ma, mb, sizeof ma);
    check_same_bits("layernorm rstd", ra, rb, sizeof ra);
    {
        void *ws = malloc(eo_k_layernorm_backward_ws(R, C, 2));
        float *dwa = alloc_f(C), *dwb = alloc_f(C), *dba = alloc_f(C), *dbb = alloc_f(C);
        memset(a2, 0, sizeof(float) * N), memset(b2, 0, sizeof(float) * N);
        eo_k_layernorm_backward(R, C, x, w, ma, ra, dy, a2, dwa, dba, ws, pars[0]);
        eo_k_layernorm_backward(R, C, x, w, ma, ra, dy, b2, dwb, dbb, ws, pars[1]);
        check_same_bits("layernorm_backward dx", a2, b2, sizeof(float) * N);
        /* dw, db: rows are grouped per worker, so only close (documented). */
        for (int j = 0; j < C; j++) {
            check_close("layernorm dw split", j, dwb[j], dwa[j], 1e-5, 1e-5);
            check_close("layernorm db split", j, dbb[j], dba[j], 1e-5, 1e-5);
        }
        free(ws), free(dwa), free(dwb), free(dba), free(dbb);
    }

    const eo_unop ops[] = {EO_UN_GELU_TANH, EO_UN_GELU_ERF, EO_UN_SIGMOID, EO_UN_EXP, EO_UN_TANH};
    for (size_t k = 0; k < sizeof ops / sizeof *ops; k++) {
        eo_k_unary(ops[k], N, x, a, 0.0f, pars[0]);
        eo_k_unary(ops[k], N, x, b, 0.0f, pars[1]);
        check_same_bits("unary", a, b, sizeof(float) * N);
        memset(a2, 0, sizeof(float) * N), memset(b2, 0, sizeof(float) * N);
        eo_k_unary_backward(ops[k], N, x, a, dy, a2, 0.0f, pars[0]);
        eo_k_unary_backward(ops[k], N, x, a, dy, b2, 0.0f, pars[1]);
        check_same_bits("unary_backward", a2, b2, sizeof(float) * N);
    }

    eo_k_dropout(N, x, a, 0.25f, 7, pars[0]);
    eo_k_dropout(N, x, b, 0.25f, 7, pars[1]);
    check_same_bits("dropout", a, b, sizeof(float) * N);
    memset(a2, 0, sizeof(float) * N), memset(b2, 0, sizeof(float) * N);
    eo_k_dropout_backward(N, dy, a2, 0.25f, 7, pars[0]);
    eo_k_dropout_backward(N, dy, b2, 0.25f, 7, pars[1]);
    check_same_bits("dropout_backward", a2, b2, sizeof(float) * N);

    {
        enum { V = 13, D = 1000, NI = 40 };
        int32_t idx[NI];
        for (int i = 0; i < NI; i++)
            idx[i] = (i * 5) % V; /* repeats */
        eo_k_embedding(NI, D, x, idx, a, pars[0]);
        eo_k_embedding(NI, D, x, idx, b, pars[1]);
        check_same_bits("embedding", a, b, sizeof(float) * NI * D);
        memset(a2, 0, sizeof(float) * V * D), memset(b2, 0, sizeof(float) * V * D);
        eo_k_embedding_backward(NI, D, idx, dy, a2, pars[0]);
        eo_k_embedding_backward(NI, D, idx, dy, b2, pars[1]);
        check_same_bits("embedding_backward", a2, b2, sizeof(float) * V * D);
    }

    for (int nesterov = 0; nesterov < 2; nesterov++) {
        memcpy(a, x, sizeof(float) * N), memcpy(b, x, sizeof(float) * N);
        memset(a2, 0, sizeof(float) * N), memset(b2, 0, sizeof(float) * N);
        eo_k_sgd(N, a, dy, a2, 0.1f, 0.9f, 0.0f, 0.01f, nesterov, pars[0]);
        eo_k_sgd(N, b, dy, b2, 0.1f, 0.9f, 0.0f, 0.01f, nesterov, pars[1]);
        check_same_bits("sgd", a, b, sizeof(float) * N);
    }
    {
        float *ma2 = alloc_f(N), *mb2 = alloc_f(N);
        memcpy(a, x, sizeof(float) * N), memcpy(b, x, sizeof(float) * N);
        memset(a2, 0, sizeof(float) * N), memset(b2, 0, sizeof(float) * N);
        eo_k_adamw(N, a, dy, ma2, a2, 1e-3f, 0.9f, 0.999f, 1e-8f, 0.1f, 1, pars[0]);
        eo_k_adamw(N, b, dy, mb2, b2, 1e-3f, 0.9f, 0.999f, 1e-8f, 0.1f, 1, pars[1]);
        check_same_bits("adamw", a, b, sizeof(float) * N);
        free(ma2), free(mb2);
    }

    {
        int32_t *ka = calloc(C, sizeof *ka), *kb = calloc(C, sizeof *kb);
        eo_k_reduce(EO_RED_MAX, 1, R, C, x, a, ka, pars[0]);
        eo_k_reduce(EO_RED_MAX, 1, R, C, x, b, kb, pars[1]);
        check_same_bits("reduce max", a, b, sizeof(float) * C);
        eo_k_reduce(EO_RED_SUM, R, C, 1, x, a, NULL, pars[0]);
        eo_k_reduce(EO_RED_SUM, R, C, 1, x, b, NULL, pars[1]);
        check_same_bits("reduce sum", a, b, sizeof(float) * R);
        memset(a2, 0, sizeof(float) * N), memset(b2, 0, sizeof(float) * N);
        eo_k_reduce_backward(EO_RED_MEAN, R, C, 1, dy, NULL, a2, pars[0]);
        eo_k_reduce_backward(EO_RED_MEAN, R, C, 1, dy, NULL, b2, pars[1]);
        check_same_bits("reduce_backward", a2, b2, sizeof(float) * N);
        free(ka), free(kb);
    }
    {
        enum { P = 39, HW = 32 }; /* P * HW * HW fits in N */
        int32_t *ka = calloc(P * 256, sizeof *ka), *kb = calloc(P * 256, sizeof *kb);
        eo_k_maxpool2d(P, HW, HW, 2, x, a, ka, pars[0]);
        eo_k_maxpool2d(P, HW, HW, 2, x, b, kb, pars[1]);
        check_same_bits("maxpool", a, b, sizeof(float) * P * 256);
        check_same_bits("maxpool arg", ka, kb, sizeof(int32_t) * P * 256);
        memset(a2, 0, sizeof(float) * N), memset(b2, 0, sizeof(float) * N);
        eo_k_maxpool2d_backward(P, HW, HW, 2, dy, ka, a2, pars[0]);
        eo_k_maxpool2d_backward(P, HW, HW, 2, dy, ka, b2, pars[1]);
        check_same_bits("maxpool_backward", a2, b2, sizeof(float) * P * HW * HW);
        free(ka), free(kb);
    }
    free(x), free(dy), free(a), free(b), free(a2), free(b2), free(w), free(bias);
}
END_TEST

/* NaN in, NaN out for every unary op (relu too, as torch.relu), in a
 * vector's body and tail on the vector path, and on the portable one
 * (NATIVE=0): no clamp inside an exp or a sigmoid may swallow it. */
START_TEST(unary_ops_keep_nan)
{
    const int64_t ns[2] = {13, 4099};
    for (int s = 0; s < 2; s++) {
        const int64_t n = ns[s];
        float *x = fill_rand(alloc_f(n), n, 3.0f), *y = alloc_f(n);
        const int64_t at[3] = {0, 9, n - 1};
        for (int k = 0; k < 3; k++)
            x[at[k]] = NAN;
        for (int op = 0; op < EO_UN_COUNT; op++) {
            eo_k_unary((eo_unop)op, n, x, y, 0.5f, NULL);
            for (int k = 0; k < 3; k++)
                CHECK_MSG(isnan(y[at[k]]), "unary op %d, n %lld: f(NaN) at %lld = %g", op,
                          (long long)n, (long long)at[k], (double)y[at[k]]);
        }
        free(x), free(y);
    }
}
END_TEST

Suite *eo_suite_kernels(void)
{
    Suite *s = suite_create("kernels");
    TCase *tc = tcase_create("cpu");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, copy32_strided);
    tcase_add_test(tc, accumulate_sums_broadcast_axes);
    tcase_add_test(tc, fill_writes_n);
    tcase_add_test(tc, zero_clears_exactly_n_bytes);
    tcase_add_test(tc, column_sums_equal_row_by_row);
    tcase_add_test(tc, relu_maxpool_equals_relu_then_pool);
    tcase_add_test(tc, binary_broadcast);
    tcase_add_test(tc, binary_backward_broadcast_accumulates);
    tcase_add_test(tc, unary_forward_backward);
    tcase_add_test(tc, gelu_extremes_finite);
    tcase_add_test(tc, unary_backward_reads_only_what_it_needs);
    tcase_add_test(tc, reduce_sum_mean_max);
    tcase_add_test(tc, reduce_max_first_and_nan);
    tcase_add_test(tc, sumsq_in_double);
    tcase_add_test(tc, softmax_forward_backward);
    tcase_add_test(tc, softmax_nan_rows);
    tcase_add_test(tc, softmax_narrow_rows_match_wide);
    tcase_add_test(tc, layernorm_maxpool_nan);
    tcase_add_test(tc, cross_entropy_forward_backward);
    tcase_add_test(tc, cross_entropy_all_ignored);
    tcase_add_test(tc, cross_entropy_nan_row);
    tcase_add_test(tc, layernorm_forward);
    tcase_add_test(tc, layernorm_constant_and_offset_rows);
    tcase_add_test(tc, layernorm_backward);
    tcase_add_test(tc, embedding_repeated_indices);
    tcase_add_test(tc, dropout_mask_and_scale);
    tcase_add_test(tc, im2col_col2im_maxpool);
    tcase_add_test(tc, maxpool2x2_wide_rows_nan_ties);
    tcase_add_test(tc, conv2d_fused_threads);
    tcase_add_test(tc, sgd_one_step);
    tcase_add_test(tc, adamw_one_step);
    tcase_add_test(tc, optimizers_many_elements);
    tcase_add_test(tc, row_kernels_independent_of_split);
    tcase_add_test(tc, strided_kernels_independent_of_split);
    tcase_add_test(tc, unary_ops_keep_nan);
    tcase_add_test(tc, set_backwards_equal_add_into_zeros);
    /* The vector exp helpers themselves (tests/simd_cases.h), where the
     * CPU runs them, whatever kernel variant EO_CPU chose. */
    const uint32_t f = eo_tool_cpu_features(), avx2 = EO_CPUF_AVX2 | EO_CPUF_FMA;
    if ((f & avx2) == avx2)
        eo_simd_avx2_cases(tc);
    if (f & EO_CPUF_AVX512F)
        eo_simd_avx512_cases(tc);
    suite_add_tcase(s, tc);
    return s;
}
