/* tests/test_stream.c — the streaming-store paths (outputs of 32 MiB and
 * more bypass the cache, ops/cpu/simd.h) of layernorm, softmax, log_softmax
 * and the unary ops must give bit-identical results to the ordinary
 * path, which small calls take (and so must the softmax backward's
 * prefetching of the next rows); the destination is deliberately
 * misaligned so the masked heads and tails run too. */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "ops/kernels.h"

#define ROWS 4097 /* ROWS x COLS floats: 33.6 MB, over the 32 MiB threshold */
#define COLS 2049

static float *inputs(int64_t n)
{
    float *x = malloc(sizeof(float) * (size_t)n);
    unsigned s = 7;
    for (int64_t i = 0; i < n; i++) {
        s = s * 1664525u + 1013904223u;
        x[i] = (float)(s >> 8) / 8388608.0f - 1.0f + (float)(i % 7);
    }
    return x;
}

START_TEST(layernorm_streaming_matches_row_by_row)
{
    const int64_t rows = ROWS, cols = COLS;
    float *x = inputs(rows * cols);
    float *w = malloc(sizeof(float) * (size_t)cols), *b = malloc(sizeof(float) * (size_t)cols);
    float *y1 = malloc(sizeof(float) * (size_t)(rows * cols + 1));
    float *y2 = malloc(sizeof(float) * (size_t)(rows * cols));
    float *m1 = malloc(sizeof(float) * (size_t)rows), *r1 = malloc(sizeof(float) * (size_t)rows);
    float *m2 = malloc(sizeof(float) * (size_t)rows), *r2 = malloc(sizeof(float) * (size_t)rows);
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

START_TEST(softmax_streaming_matches_row_by_row)
{
    const int64_t rows = ROWS, cols = COLS, n = rows * cols;
    float *x = inputs(n), *y1 = malloc(sizeof(float) * (size_t)(n + 1));
    float *y2 = malloc(sizeof(float) * (size_t)n);
    void *ws = malloc(eo_k_softmax_ws(0, rows, cols, 1) + 1);
    for (int64_t j = 0; j < cols; j++)
        x[5 * cols + j] = -INFINITY; /* a row with no mass amid streamed ones */
    for (int log = 0; log < 2; log++) {
        eo_k_softmax(log, rows, cols, x, y1 + 1, ws, NULL);
        for (int64_t r = 0; r < rows; r++)
            eo_k_softmax(log, 1, cols, x + r * cols, y2 + r * cols, ws, NULL);
        ck_assert_int_eq(memcmp(y1 + 1, y2, sizeof(float) * (size_t)n), 0);
    }
    free(x); free(y1); free(y2); free(ws);
}
END_TEST

/* The softmax backward prefetches the next rows when y, dy and dx
 * together pass the threshold (ops/cpu/softmax.c), and its _set form
 * streams dx: same dx as row by row
 * (each row alone stays below it), for softmax and log_softmax, on a
 * misaligned dx, at row lengths around the vector width and the long
 * rows, with a row of -inf (log_softmax: no mass) and NaN, +inf and huge
 * values in y and dy. */
START_TEST(softmax_backward_prefetch_matches_row_by_row)
{
    const int64_t lens[] = {1, 7, 8, 9, 2049, 50257};
    for (size_t k = 0; k < sizeof lens / sizeof *lens; k++) {
        const int64_t cols = lens[k], rows = (int64_t)ROWS * COLS / 3 / cols + 1, n = rows * cols;
        float *y = inputs(n), *dy = inputs(n), *dx1 = malloc(sizeof(float) * (size_t)(n + 1));
        float *dx2 = malloc(sizeof(float) * (size_t)n);
        for (int64_t i = 0; i < n; i++)
            y[i] = y[i] / 16.0f - 0.5f, dy[i] = dy[i] * 0.25f - 1.0f;
        for (int64_t j = 0; j < cols; j++)
            y[1 * cols + j] = -INFINITY;
        y[2 * cols] = NAN, dy[3 * cols + cols / 2] = INFINITY, y[4 * cols + cols - 1] = 3e38f;
        dy[5 * cols] = -1e30f;
        for (int log = 0; log < 2; log++) {
            for (int64_t i = 0; i < n; i++)
                dx1[i + 1] = dx2[i] = (float)(i % 3);
            eo_k_softmax_backward(log, rows, cols, y, dy, dx1 + 1, NULL);
            for (int64_t r = 0; r < rows; r++)
                eo_k_softmax_backward(log, 1, cols, y + r * cols, dy + r * cols, dx2 + r * cols,
                                      NULL);
            /* bytes, so NaNs compare too */
            ck_assert_int_eq(memcmp(dx1 + 1, dx2, sizeof(float) * (size_t)n), 0);
            /* The _set form streams a large fresh dx from its first 32-byte
             * boundary (dx1 + 1 is misaligned): the bytes of the add into
             * zeros, row by row, and it never reads dx (NaN before). */
            for (int64_t i = 0; i < n; i++)
                dx1[i + 1] = NAN, dx2[i] = 0.0f;
            eo_k_softmax_backward_set(log, rows, cols, y, dy, dx1 + 1, NULL);
            for (int64_t r = 0; r < rows; r++)
                eo_k_softmax_backward(log, 1, cols, y + r * cols, dy + r * cols, dx2 + r * cols,
                                      NULL);
            ck_assert_int_eq(memcmp(dx1 + 1, dx2, sizeof(float) * (size_t)n), 0);
        }
        free(y); free(dy); free(dx1); free(dx2);
    }
}
END_TEST

START_TEST(unary_streaming_matches_blocks)
{
    const int64_t n = (int64_t)ROWS * COLS;
    float *x = inputs(n), *y1 = malloc(sizeof(float) * (size_t)(n + 1));
    float *y2 = malloc(sizeof(float) * (size_t)n);
    const eo_unop ops[] = {EO_UN_GELU_TANH, EO_UN_RELU, EO_UN_SIGMOID};
    for (size_t k = 0; k < sizeof ops / sizeof *ops; k++) {
        eo_k_unary(ops[k], n, x, y1 + 1, 0.0f, NULL);
        for (int64_t i = 0; i < n; i += 1000)
            eo_k_unary(ops[k], n - i < 1000 ? n - i : 1000, x + i, y2 + i, 0.0f, NULL);
        ck_assert_int_eq(memcmp(y1 + 1, y2, sizeof(float) * (size_t)n), 0);
        /* The _set backward streams a large fresh dx (misaligned here):
         * the bytes of the add into zeros, block by block. */
        float *dy = inputs(n);
        for (int64_t i = 0; i < n; i++)
            y1[i + 1] = NAN, y2[i] = 0.0f;
        eo_k_unary(ops[k], n, x, y2, 0.0f, NULL); /* the forward output: y for sigmoid */
        float *yf = malloc(sizeof(float) * (size_t)n), *g = malloc(sizeof(float) * (size_t)n);
        memcpy(yf, y2, sizeof(float) * (size_t)n);
        memset(g, 0, sizeof(float) * (size_t)n);
        eo_k_unary_backward_set(ops[k], n, x, yf, dy, y1 + 1, 0.0f, NULL);
        for (int64_t i = 0; i < n; i += 1000)
            eo_k_unary_backward(ops[k], n - i < 1000 ? n - i : 1000, x + i, yf + i, dy + i,
                                g + i, 0.0f, NULL);
        ck_assert_int_eq(memcmp(y1 + 1, g, sizeof(float) * (size_t)n), 0);
        free(dy); free(yf); free(g);
    }
    free(x); free(y1); free(y2);
}
END_TEST

Suite *eo_suite_stream(void)
{
    Suite *s = suite_create("stream");
    TCase *tc = tcase_create("stream");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, layernorm_streaming_matches_row_by_row);
    tcase_add_test(tc, softmax_streaming_matches_row_by_row);
    tcase_add_test(tc, softmax_backward_prefetch_matches_row_by_row);
    tcase_add_test(tc, unary_streaming_matches_blocks);
    suite_add_tcase(s, tc);
    return s;
}
