/* tests/test_batch.c — PCG32 against the published reference outputs, and
 * the shuffling built on it: a permutation is a permutation, the same seed
 * gives the same order, other seeds and epochs give other orders, and
 * batches copy the right rows (with the last partial batch kept or
 * dropped as asked). */
#include <check.h>
#include <stdlib.h>
#include <string.h>
#include "tools/train/batch.h"
#include "tools/train/pcg32.h"

static char err[256];

START_TEST(pcg32_matches_the_reference)
{
    /* pcg32-demo's first outputs for seed 42, stream 54. */
    static const uint32_t want[6] = {0xa15c02b7u, 0x7b47f409u, 0xba1d3330u,
                                     0x83d2f293u, 0xbfa4784bu, 0xcbed606eu};
    eo_pcg32 r;
    eo_pcg32_seed(&r, 42, 54);
    for (int k = 0; k < 6; k++)
        ck_assert_uint_eq(eo_pcg32_next(&r), want[k]);
    for (int k = 0; k < 1000; k++)
        ck_assert_uint_lt(eo_pcg32_below(&r, 7), 7);
    ck_assert_uint_eq(eo_pcg32_below(&r, 1), 0);
}
END_TEST

static int is_permutation(const uint32_t *p, size_t n)
{
    unsigned char *seen = calloc(n ? n : 1, 1);
    int ok = seen != NULL;
    for (size_t i = 0; i < n && ok; i++) {
        ok = p[i] < n && !seen[p[i]];
        if (ok)
            seen[p[i]] = 1;
    }
    free(seen);
    return ok;
}

START_TEST(permutation_is_a_seeded_permutation)
{
    enum { N = 1000 };
    static uint32_t a[N], b[N], c[N], d[N];
    ck_assert_int_eq(eo_permutation(a, N, 1234, 0, err, sizeof err), EO_OK);
    ck_assert_int_eq(eo_permutation(b, N, 1234, 0, err, sizeof err), EO_OK);
    ck_assert_int_eq(eo_permutation(c, N, 1235, 0, err, sizeof err), EO_OK);
    ck_assert_int_eq(eo_permutation(d, N, 1234, 1, err, sizeof err), EO_OK);
    ck_assert(is_permutation(a, N));
    ck_assert(is_permutation(c, N));
    ck_assert(memcmp(a, b, sizeof a) == 0);
    ck_assert(memcmp(a, c, sizeof a) != 0);
    ck_assert(memcmp(a, d, sizeof a) != 0);
    size_t fixed = 0;
    for (size_t i = 0; i < N; i++)
        fixed += a[i] == i;
    ck_assert_uint_lt(fixed, 10); /* about 1 expected; 10 would mean no shuffle */
    ck_assert_int_eq(eo_permutation(NULL, 0, 1, 0, err, sizeof err), EO_OK);
    ck_assert_int_eq(eo_permutation(NULL, 3, 1, 0, err, sizeof err), EO_ERR_ARG);
}
END_TEST

START_TEST(shuffle_is_unbiased_enough)
{
    /* Each of the 6 orders of 3 items should come up about 1/6 of the time. */
    int count[3][3] = {{0}};
    uint32_t p[3];
    for (uint64_t s = 0; s < 6000; s++) {
        eo_permutation(p, 3, s, 0, err, sizeof err);
        for (int i = 0; i < 3; i++)
            count[i][p[i]]++;
    }
    for (int i = 0; i < 3; i++)
        for (int v = 0; v < 3; v++)
            ck_assert_msg(count[i][v] > 1800 && count[i][v] < 2200, "position %d value %d: %d", i,
                          v, count[i][v]);
}
END_TEST

/* 10 examples of 2 byte features: x = (i, 100 + i), y = i; a batch
 * brings them back as floats divided by 255. */
static uint8_t xs[20];
static int32_t ys[10];
static eo_dataset tiny(void)
{
    for (int i = 0; i < 10; i++) {
        xs[2 * i] = (uint8_t)i;
        xs[2 * i + 1] = (uint8_t)(100 + i);
        ys[i] = i;
    }
    eo_dataset ds = {.n = 10, .dim = 2, .classes = 10, .x = xs, .y = ys};
    return ds;
}

START_TEST(batches_cover_the_epoch_and_copy_rows)
{
    eo_dataset ds = tiny();
    eo_batcher b;
    eo_batch_opts o = {.batch = 4, .shuffle = 1, .drop_last = 0, .seed = 7};
    ck_assert_int_eq(eo_batcher_init(&b, &ds, o, err, sizeof err), EO_OK);
    ck_assert_uint_eq(b.nbatches, 3);
    float x[8];
    int32_t y[4];
    size_t rows, total = 0;
    int seen[10] = {0};
    for (size_t i = 0; i < b.nbatches; i++) {
        ck_assert_int_eq(eo_batcher_get(&b, i, x, y, &rows, err, sizeof err), EO_OK);
        ck_assert_uint_eq(rows, i < 2 ? 4 : 2);
        for (size_t r = 0; r < rows; r++) {
            ck_assert_float_eq(x[2 * r], (float)y[r] / 255.0f);
            ck_assert_float_eq(x[2 * r + 1], (100.0f + (float)y[r]) / 255.0f);
            seen[y[r]]++;
        }
        total += rows;
    }
    ck_assert_uint_eq(total, 10);
    for (int i = 0; i < 10; i++)
        ck_assert_int_eq(seen[i], 1);
    ck_assert_int_eq(eo_batcher_get(&b, 3, x, y, &rows, err, sizeof err), EO_ERR_ARG);
    /* A NULL argument is named (issue 26: "NULL argument" said which not). */
    ck_assert_int_eq(eo_batcher_get(&b, 0, x, NULL, &rows, err, sizeof err), EO_ERR_ARG);
    ck_assert_str_eq(err, "eo_batcher_get: NULL y");
    ck_assert_int_eq(eo_batcher_get(NULL, 0, x, y, &rows, err, sizeof err), EO_ERR_ARG);
    ck_assert_str_eq(err, "eo_batcher_get: NULL batcher");

    /* Same seed and epoch: same order; next epoch: a different one. */
    uint32_t first[10];
    memcpy(first, b.perm, sizeof first);
    eo_batcher_epoch(&b, 1);
    ck_assert(memcmp(first, b.perm, sizeof first) != 0);
    eo_batcher_epoch(&b, 0);
    ck_assert(memcmp(first, b.perm, sizeof first) == 0);
    eo_batcher_free(&b);

    o.drop_last = 1;
    ck_assert_int_eq(eo_batcher_init(&b, &ds, o, err, sizeof err), EO_OK);
    ck_assert_uint_eq(b.nbatches, 2);
    eo_batcher_free(&b);

    o.shuffle = 0;
    o.drop_last = 0;
    ck_assert_int_eq(eo_batcher_init(&b, &ds, o, err, sizeof err), EO_OK);
    ck_assert_int_eq(eo_batcher_get(&b, 2, x, y, &rows, err, sizeof err), EO_OK);
    ck_assert_uint_eq(rows, 2);
    ck_assert_int_eq(y[0], 8);
    ck_assert_int_eq(y[1], 9);
    eo_batcher_free(&b);

    o.batch = 11;
    o.drop_last = 1;
    ck_assert_int_eq(eo_batcher_init(&b, &ds, o, err, sizeof err), EO_ERR_ARG);
    o.batch = 0;
    ck_assert_int_eq(eo_batcher_init(&b, &ds, o, err, sizeof err), EO_ERR_ARG);
}
END_TEST

Suite *eo_suite_batch(void)
{
    Suite *s = suite_create("batch");
    TCase *tc = tcase_create("batch");
    tcase_add_test(tc, pcg32_matches_the_reference);
    tcase_add_test(tc, permutation_is_a_seeded_permutation);
    tcase_add_test(tc, shuffle_is_unbiased_enough);
    tcase_add_test(tc, batches_cover_the_epoch_and_copy_rows);
    suite_add_tcase(s, tc);
    return s;
}
