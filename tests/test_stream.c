/* tests/test_stream.c — layernorm's streaming-store path (outputs of
 * 8 MiB and more bypass the cache, ops/simd.h) must give bit-identical
 * results to the ordinary path, which small calls take; the destination
 * is deliberately misaligned so the masked head and tail run too. */
#include <check.h>
#include <stdlib.h>
#include <string.h>
#include "ops/kernels.h"

START_TEST(layernorm_streaming_matches_row_by_row)
{
    const int64_t rows = 2049, cols = 1025; /* 8.4 MB of output */
    float *x = malloc(sizeof(float) * (size_t)(rows * cols));
    float *w = malloc(sizeof(float) * (size_t)cols), *b = malloc(sizeof(float) * (size_t)cols);
    float *y1 = malloc(sizeof(float) * (size_t)(rows * cols + 1));
    float *y2 = malloc(sizeof(float) * (size_t)(rows * cols));
    float *m1 = malloc(sizeof(float) * (size_t)rows), *r1 = malloc(sizeof(float) * (size_t)rows);
    float *m2 = malloc(sizeof(float) * (size_t)rows), *r2 = malloc(sizeof(float) * (size_t)rows);
    unsigned s = 7;
    for (int64_t i = 0; i < rows * cols; i++) {
        s = s * 1664525u + 1013904223u;
        x[i] = (float)(s >> 8) / 8388608.0f - 1.0f + (float)(i % 7);
    }
    for (int64_t c = 0; c < cols; c++) {
        w[c] = 0.5f + (float)c / (float)cols;
        b[c] = (float)(c % 5) - 2.0f;
    }
    float *y1o = y1 + 1; /* 4 bytes past a 32-byte boundary (malloc aligns to 16) */
    eo_k_layernorm(rows, cols, x, w, b, 1e-5f, y1o, m1, r1, NULL);
    for (int64_t r = 0; r < rows; r++) /* one row at a time: far below the threshold */
        eo_k_layernorm(1, cols, x + r * cols, w, b, 1e-5f, y2 + r * cols, m2 + r, r2 + r, NULL);
    ck_assert_int_eq(memcmp(y1o, y2, sizeof(float) * (size_t)(rows * cols)), 0);
    ck_assert_int_eq(memcmp(m1, m2, sizeof(float) * (size_t)rows), 0);
    ck_assert_int_eq(memcmp(r1, r2, sizeof(float) * (size_t)rows), 0);
    free(x); free(w); free(b); free(y1); free(y2); free(m1); free(r1); free(m2); free(r2);
}
END_TEST

Suite *eo_suite_stream(void)
{
    Suite *s = suite_create("stream");
    TCase *tc = tcase_create("stream");
    tcase_add_test(tc, layernorm_streaming_matches_row_by_row);
    suite_add_tcase(s, tc);
    return s;
}
