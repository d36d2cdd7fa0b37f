/* tests/test_matmul.c — the CPU matmul against a double-precision
 * reference, on shapes chosen to hit every edge of the blocked code:
 * 1x1x1, sizes that are multiples of no tile, K deeper than one KC slice,
 * M taller than one MC block, N wider than one NC block, blocks wide
 * enough that A is packed and narrow enough that it is read in place;
 * all four transpose variants; padded leading dimensions; batches with a
 * shared operand (stride 0); beta = 1 accumulation; beta = 0 over NaN
 * (C must not be read); both code paths; and bit-identical results for
 * any thread count. */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "ops/kernels.h"
#include "tools/cli/cpu_kernels.h"
#include "ops/cpu/matmul.h"
#include "tools/threads/pool.h"

typedef struct mm_case {
    int ta, tb;
    int64_t batch, M, N, K;
    int64_t pad_a, pad_b, pad_c; /* extra elements per row of A, B, C */
    int share_a, share_b;        /* batch stride 0 */
    float beta;
} mm_case;

/* Deterministic values in [-1, 1): a 64-bit LCG, top bits. */
static uint64_t rng_state;
static float rnd(void)
{
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return (float)(rng_state >> 40) * (2.0f / 16777216.0f) - 1.0f;
}

typedef struct mm_data {
    mm_case c;
    int64_t lda, ldb, ldc, sa, sb, sc;
    float *A, *B, *C0, *C;
    size_t nA, nB, nC;
} mm_data;

static void data_init(mm_data *d, const mm_case *c)
{
    d->c = *c;
    int64_t arows = c->ta ? c->K : c->M, acols = c->ta ? c->M : c->K;
    int64_t brows = c->tb ? c->N : c->K, bcols = c->tb ? c->K : c->N;
    d->lda = acols + c->pad_a;
    d->ldb = bcols + c->pad_b;
    d->ldc = c->N + c->pad_c;
    d->sa = c->share_a ? 0 : arows * d->lda;
    d->sb = c->share_b ? 0 : brows * d->ldb;
    d->sc = c->M * d->ldc;
    d->nA = (size_t)(c->share_a ? 1 : c->batch) * (size_t)(arows * d->lda);
    d->nB = (size_t)(c->share_b ? 1 : c->batch) * (size_t)(brows * d->ldb);
    d->nC = (size_t)(c->batch * d->sc);
    d->A = malloc(d->nA * sizeof(float));
    d->B = malloc(d->nB * sizeof(float));
    d->C0 = malloc(d->nC * sizeof(float));
    d->C = malloc(d->nC * sizeof(float));
    ck_assert(d->A && d->B && d->C0 && d->C);
    for (size_t i = 0; i < d->nA; i++)
        d->A[i] = rnd();
    for (size_t i = 0; i < d->nB; i++)
        d->B[i] = rnd();
    for (size_t i = 0; i < d->nC; i++)
        d->C0[i] = c->beta != 0.0f ? rnd() : NAN; /* beta 0: C is garbage */
}

static void data_free(mm_data *d)
{
    free(d->A);
    free(d->B);
    free(d->C0);
    free(d->C);
}

/* C = C0, then the kernel, with a workspace of exactly the advertised
 * size placed at an odd address (the kernel must align it itself). */
static void data_run(mm_data *d, eo_mm_path path, const eo_par *par)
{
    const mm_case *c = &d->c;
    memcpy(d->C, d->C0, d->nC * sizeof(float));
    size_t ws = eo_k_matmul_ws(c->M, c->N, c->K, eo_par_threads(par));
    unsigned char *w = malloc(ws + 4);
    ck_assert_ptr_nonnull(w);
    eo_mm_run(path, c->ta, c->tb, c->batch, c->M, c->N, c->K, d->A, d->lda, d->sa, d->B, d->ldb,
              d->sb, c->beta, d->C, d->ldc, d->sc, w + 4, par);
    free(w);
}

/* Every element within a float error bound of the double result, and the
 * padding columns of C untouched. */
static void data_check(const mm_data *d)
{
    const mm_case *c = &d->c;
    for (int64_t b = 0; b < c->batch; b++) {
        const float *A = d->A + b * d->sa, *B = d->B + b * d->sb;
        for (int64_t i = 0; i < c->M; i++) {
            for (int64_t j = 0; j < c->N; j++) {
                double s = 0, mag = 0;
                for (int64_t k = 0; k < c->K; k++) {
                    double a = c->ta ? A[k * d->lda + i] : A[i * d->lda + k];
                    double x = c->tb ? B[j * d->ldb + k] : B[k * d->ldb + j];
                    s += a * x;
                    mag += fabs(a * x);
                }
                size_t at = (size_t)(b * d->sc + i * d->ldc + j);
                if (c->beta != 0.0f) {
                    s += d->C0[at];
                    mag += fabs(d->C0[at]);
                }
                double got = d->C[at];
                double tol = 1e-30 + (double)(c->K + 2) * 1.2e-7 * mag;
                ck_assert_msg(fabs(got - s) <= tol,
                              "ta%d tb%d %lldx%lldx%lld b%lld [%lld,%lld]: got %g want %g",
                              c->ta, c->tb, (long long)c->M, (long long)c->N, (long long)c->K,
                              (long long)b, (long long)i, (long long)j, got, s);
            }
            for (int64_t j = c->N; j < d->ldc; j++) {
                size_t at = (size_t)(b * d->sc + i * d->ldc + j);
                ck_assert(memcmp(&d->C[at], &d->C0[at], sizeof(float)) == 0);
            }
        }
    }
}

static void check_case(mm_case c)
{
    for (int p = 0; p < 2; p++) {
        mm_data d;
        data_init(&d, &c);
        data_run(&d, p ? EO_MM_SIMD : EO_MM_PORTABLE, NULL);
        data_check(&d);
        data_free(&d);
    }
}

static void check_all_transposes(mm_case c)
{
    for (int v = 0; v < 4; v++) {
        c.ta = v & 1;
        c.tb = v >> 1;
        check_case(c);
    }
}

START_TEST(odd_shapes_all_transposes)
{
    rng_state = 1;
    static const int64_t shapes[][3] = {
        {1, 1, 1},   {7, 13, 5},  {33, 17, 65}, {6, 16, 8},   {12, 32, 1},
        {5, 3, 300}, {13, 35, 9}, {2, 1, 7},    {1, 40, 20},  {40, 1, 20},
    };
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        mm_case c = {0, 0, 1, shapes[s][0], shapes[s][1], shapes[s][2], 0, 0, 0, 0, 0, 0.0f};
        check_all_transposes(c);
    }
}
END_TEST

/* K over two KC slices, M over two MC blocks, N wide enough that A gets
 * packed, and over one NC block. */
START_TEST(multiple_blocks)
{
    rng_state = 2;
    mm_case c = {0, 0, 1, 151, 19, 300, 0, 0, 0, 0, 0, 0.0f};
    check_all_transposes(c);
    mm_case wide = {0, 0, 1, 8, 600, 7, 0, 0, 0, 0, 0, 0.0f};
    check_all_transposes(wide);
    mm_case widest = {0, 0, 1, 3, 2100, 3, 0, 0, 0, 0, 0, 1.0f};
    check_all_transposes(widest);
}
END_TEST

START_TEST(padded_leading_dimensions)
{
    rng_state = 3;
    mm_case c = {0, 0, 1, 19, 23, 29, 3, 5, 2, 0, 0, 0.0f};
    check_all_transposes(c);
}
END_TEST

START_TEST(batched_with_shared_operands)
{
    rng_state = 4;
    mm_case c = {0, 0, 3, 9, 18, 11, 1, 0, 1, 1, 0, 0.0f}; /* one A for every item */
    check_all_transposes(c);
    mm_case d = {0, 0, 4, 7, 5, 6, 0, 2, 0, 0, 1, 1.0f}; /* one B, accumulate */
    check_all_transposes(d);
}
END_TEST

START_TEST(beta_one_accumulates)
{
    rng_state = 5;
    mm_case c = {0, 0, 2, 14, 19, 270, 0, 0, 3, 0, 0, 1.0f};
    check_all_transposes(c);
}
END_TEST

/* C starts as NaN; beta = 0 must overwrite it without reading it. The
 * tolerance check fails on any NaN that leaks through. */
START_TEST(beta_zero_ignores_nan)
{
    rng_state = 6;
    mm_case c = {0, 0, 2, 25, 33, 300, 1, 1, 1, 0, 0, 0.0f};
    check_all_transposes(c);
}
END_TEST

START_TEST(empty_k)
{
    float C[6] = {1, 2, 3, 4, 5, 6};
    float x = 0;
    eo_k_matmul(0, 0, 1, 2, 3, 0, &x, 0, 0, &x, 3, 0, 1.0f, C, 3, 0, NULL, NULL);
    ck_assert_float_eq(C[5], 6.0f); /* beta 1: unchanged */
    eo_k_matmul(0, 0, 1, 2, 3, 0, &x, 0, 0, &x, 3, 0, 0.0f, C, 3, 0, NULL, NULL);
    for (int i = 0; i < 6; i++)
        ck_assert_float_eq(C[i], 0.0f); /* beta 0: zeros */
}
END_TEST

/* The two paths differ only in rounding (the portable kernel may or may
 * not contract a*b+c into an FMA): within float tolerance of each other. */
START_TEST(portable_matches_simd)
{
    rng_state = 7;
    for (int v = 0; v < 4; v++) {
        mm_case c = {v & 1, v >> 1, 2, 31, 45, 270, 2, 0, 1, 0, 0, 1.0f};
        mm_data d;
        data_init(&d, &c);
        data_run(&d, EO_MM_PORTABLE, NULL);
        float *port = malloc(d.nC * sizeof(float));
        ck_assert_ptr_nonnull(port);
        memcpy(port, d.C, d.nC * sizeof(float));
        data_run(&d, EO_MM_SIMD, NULL);
        for (size_t i = 0; i < d.nC; i++)
            ck_assert_msg(fabsf(port[i] - d.C[i]) <= 1e-4f * (1.0f + fabsf(port[i])),
                          "element %zu: portable %g simd %g", i, port[i], d.C[i]);
        free(port);
        data_free(&d);
    }
}
END_TEST

/* A fake hook with two workers that runs chunk 1 before chunk 0: the
 * opposite order to the serial run, on purpose. */
static void fake_run(void *user, eo_par_body body, void *arg, int64_t n)
{
    int t = *(int *)user;
    for (int w = t - 1; w >= 0; w--) {
        int64_t b = n * w / t, e = n * (w + 1) / t;
        if (b < e)
            body(arg, b, e, w);
    }
}

static void expect_same_bits(mm_case c, const eo_par *par)
{
    mm_data d;
    data_init(&d, &c);
    data_run(&d, EO_MM_BEST, NULL);
    float *serial = malloc(d.nC * sizeof(float));
    ck_assert_ptr_nonnull(serial);
    memcpy(serial, d.C, d.nC * sizeof(float));
    data_run(&d, EO_MM_BEST, par);
    ck_assert(memcmp(serial, d.C, d.nC * sizeof(float)) == 0);
    free(serial);
    data_free(&d);
}

START_TEST(thread_count_does_not_change_bits)
{
    rng_state = 8;
    int two = 2;
    eo_par fake = {fake_run, &two, 2};
    eo_pool *pool = eo_pool_create(3);
    ck_assert_ptr_nonnull(pool);
    eo_par three = eo_pool_par(pool);
    /* Each big enough (> 2^19 multiply-adds) for the kernel to use the
     * threads at all. */
    static const mm_case cases[] = {
        {0, 0, 1, 67, 45, 300, 0, 0, 0, 0, 0, 0.0f},  /* one matrix cut along N */
        {1, 1, 1, 97, 24, 270, 0, 0, 0, 0, 0, 1.0f},  /* cut along M */
        {0, 1, 3, 20, 29, 400, 0, 0, 0, 1, 0, 0.0f},  /* batch not a multiple of t */
        {1, 0, 1, 9, 700, 100, 0, 0, 0, 0, 0, 0.0f},  /* wide: A packed */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        expect_same_bits(cases[i], &fake);
        expect_same_bits(cases[i], &three);
    }
    eo_pool_destroy(pool);
}
END_TEST

START_TEST(micro_kernel_portable_alone)
{
    /* The portable micro-kernel on a packed 6x16 problem with kc = 3,
     * then accumulating into C: the contract in matmul.h. */
    float a[3 * EO_MM_MR], b[3 * EO_MM_NR], c[EO_MM_MR * EO_MM_NR];
    for (int i = 0; i < 3 * EO_MM_MR; i++)
        a[i] = (float)(i % 5) - 2.0f;
    for (int i = 0; i < 3 * EO_MM_NR; i++)
        b[i] = (float)(i % 7) - 3.0f;
    for (int i = 0; i < EO_MM_MR * EO_MM_NR; i++)
        c[i] = NAN;
    eo_mm_micro_portable(3, a, 1, EO_MM_MR, b, c, EO_MM_NR, 0);
    eo_mm_micro_portable(3, a, 1, EO_MM_MR, b, c, EO_MM_NR, 1);
    for (int i = 0; i < EO_MM_MR; i++)
        for (int j = 0; j < EO_MM_NR; j++) {
            float s = 0;
            for (int k = 0; k < 3; k++)
                s += a[k * EO_MM_MR + i] * b[k * EO_MM_NR + j];
            ck_assert_float_eq(c[i * EO_MM_NR + j], 2 * s);
        }
}
END_TEST

Suite *eo_suite_matmul(void)
{
    Suite *s = suite_create("matmul");
    TCase *tc = tcase_create("matmul");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, odd_shapes_all_transposes);
    tcase_add_test(tc, multiple_blocks);
    tcase_add_test(tc, padded_leading_dimensions);
    tcase_add_test(tc, batched_with_shared_operands);
    tcase_add_test(tc, beta_one_accumulates);
    tcase_add_test(tc, beta_zero_ignores_nan);
    tcase_add_test(tc, empty_k);
    tcase_add_test(tc, portable_matches_simd);
    tcase_add_test(tc, thread_count_does_not_change_bits);
    tcase_add_test(tc, micro_kernel_portable_alone);
    suite_add_tcase(s, tc);
    return s;
}
