/* tests/test_cpu_kernels.c — a context with only the CPU kernels a program
 * lists (eo_ctx_init_kernels, core/cpu_kernels.c): the ops of the listed
 * families give eo_ctx_init's results bit for bit, forward and backward;
 * an op outside them, its backward without the *_backward family, and a
 * 16-bit tensor without the half family return EO_ERR_UNSUPPORTED naming
 * the op, never call through an empty slot; bad lists are refused. */
#include <check.h>
#include <string.h>
#include "core/everyo.h"

static _Alignas(64) unsigned char pbuf[2][1 << 14], sbuf[2][1 << 16];
static const float xv[4 * 8] = {
    0.5f, -1, 2, 0.25f, -0.75f, 1.5f, -2, 1, 1, 0, -1, 2, 0.5f, -0.5f, 0.125f, 3,
    -3, 1.25f, 0.5f, -0.25f, 2, -1.5f, 0.75f, -1, 0.5f, 0.5f, -0.5f, 1, 2, 0, 1, -2};
static const float wv[3 * 8] = {
    0.1f, -0.2f, 0.3f, 0.05f, -0.1f, 0.2f, 0.15f, -0.3f, -0.25f, 0.1f, 0.2f, -0.05f,
    0.3f, -0.15f, 0.1f, 0.2f, 0.05f, 0.25f, -0.1f, 0.15f, -0.2f, 0.1f, -0.3f, 0.05f};
static const float bv[3] = {0.1f, -0.2f, 0.05f};

/* relu(x w^T + b) and, with grad, d sum / d w into *dw. */
static eo_status mlp_layer(eo_ctx *ctx, int grad, float y[12], float dw[24])
{
    eo_tensor *x, *w, *b, *xw, *h, *r, *L;
    const int64_t sx[2] = {4, 8}, sw[2] = {3, 8}, sb[1] = {3};
    eo_status s = eo_tensor_wrap(ctx, EO_F32, 2, sx, (void *)xv, &x);
    if (s == EO_OK) s = eo_tensor_new(ctx, EO_PERSIST, EO_CPU, EO_F32, 2, sw, &w);
    if (s == EO_OK) s = eo_write(ctx, w, wv, sizeof wv);
    if (s == EO_OK) s = eo_tensor_wrap(ctx, EO_F32, 1, sb, (void *)bv, &b);
    if (s == EO_OK && grad) s = eo_set_requires_grad(ctx, w, 1);
    if (s == EO_OK) s = eo_matmul(ctx, x, w, 0, 1, &xw);
    if (s == EO_OK) s = eo_add(ctx, xw, b, &h);
    if (s == EO_OK) s = eo_relu(ctx, h, &r);
    if (s == EO_OK) s = eo_read(ctx, r, y, 12 * sizeof(float));
    if (s == EO_OK && grad) s = eo_sum_all(ctx, r, &L);
    if (s == EO_OK && grad) s = eo_backward(ctx, L);
    if (s == EO_OK && grad) s = eo_read(ctx, w->grad, dw, 24 * sizeof(float));
    return s;
}

START_TEST(forward_of_listed_families_as_full_table)
{
    eo_ctx full, some;
    static eo_cpu_kernels_fn *const fams[] = {eo_cpu_kernels_matmul, eo_cpu_kernels_elementwise};
    float y0[12], y1[12];
    ck_assert_int_eq(eo_ctx_init(&full, pbuf[0], sizeof pbuf[0], sbuf[0], sizeof sbuf[0]), EO_OK);
    ck_assert_int_eq(eo_ctx_init_kernels(&some, pbuf[1], sizeof pbuf[1], sbuf[1], sizeof sbuf[1], fams, 2),
                     EO_OK);
    eo_set_grad(&full, 0);
    eo_set_grad(&some, 0);
    ck_assert_int_eq(mlp_layer(&full, 0, y0, NULL), EO_OK);
    ck_assert_int_eq(mlp_layer(&some, 0, y1, NULL), EO_OK);
    ck_assert_mem_eq(y0, y1, sizeof y0);

    /* softmax is not in the list: a status and a message, no call through NULL. */
    eo_tensor *x, *p;
    const int64_t sx[2] = {4, 8};
    ck_assert_int_eq(eo_tensor_wrap(&some, EO_F32, 2, sx, (void *)xv, &x), EO_OK);
    ck_assert_int_eq(eo_softmax(&some, x, &p), EO_ERR_UNSUPPORTED);
    ck_assert_msg(strstr(eo_last_error(&some), "softmax") &&
                      strstr(eo_last_error(&some), "eo_ctx_init_kernels"),
                  "message: %s", eo_last_error(&some));
    /* ... and the context still works. */
    ck_assert_int_eq(mlp_layer(&some, 0, y1, NULL), EO_OK);
    ck_assert_mem_eq(y0, y1, sizeof y0);
}
END_TEST

START_TEST(backward_needs_its_family)
{
    eo_ctx full, some;
    static eo_cpu_kernels_fn *const fwd[] = {eo_cpu_kernels_matmul, eo_cpu_kernels_elementwise,
                                             eo_cpu_kernels_reduce, eo_cpu_kernels_reduce_backward};
    static eo_cpu_kernels_fn *const both[] = {
        eo_cpu_kernels_matmul, eo_cpu_kernels_elementwise, eo_cpu_kernels_reduce,
        eo_cpu_kernels_reduce_backward, eo_cpu_kernels_elementwise_backward};
    float y0[12], y1[12], dw0[24], dw1[24];
    ck_assert_int_eq(eo_ctx_init(&full, pbuf[0], sizeof pbuf[0], sbuf[0], sizeof sbuf[0]), EO_OK);
    ck_assert_int_eq(mlp_layer(&full, 1, y0, dw0), EO_OK);

    ck_assert_int_eq(eo_ctx_init_kernels(&some, pbuf[1], sizeof pbuf[1], sbuf[1], sizeof sbuf[1], fwd, 4),
                     EO_OK);
    ck_assert_int_eq(mlp_layer(&some, 1, y1, dw1), EO_ERR_UNSUPPORTED);
    ck_assert_msg(strstr(eo_last_error(&some), "relu"), "message: %s", eo_last_error(&some));

    ck_assert_int_eq(eo_ctx_init_kernels(&some, pbuf[1], sizeof pbuf[1], sbuf[1], sizeof sbuf[1], both, 5),
                     EO_OK);
    ck_assert_int_eq(mlp_layer(&some, 1, y1, dw1), EO_OK);
    ck_assert_mem_eq(y0, y1, sizeof y0);
    ck_assert_mem_eq(dw0, dw1, sizeof dw0);
}
END_TEST

START_TEST(half_needs_its_family)
{
    eo_ctx some;
    static eo_cpu_kernels_fn *const fams[] = {eo_cpu_kernels_matmul, eo_cpu_kernels_elementwise};
    ck_assert_int_eq(eo_ctx_init_kernels(&some, pbuf[1], sizeof pbuf[1], sbuf[1], sizeof sbuf[1], fams, 2),
                     EO_OK);
    eo_tensor *x, *h;
    const int64_t sx[2] = {4, 8};
    ck_assert_int_eq(eo_tensor_wrap(&some, EO_F32, 2, sx, (void *)xv, &x), EO_OK);
    ck_assert_int_eq(eo_cast(&some, x, EO_BF16, &h), EO_ERR_UNSUPPORTED);
    ck_assert_msg(strstr(eo_last_error(&some), "cast"), "message: %s", eo_last_error(&some));
}
END_TEST

START_TEST(bad_lists_refused)
{
    eo_ctx c;
    static eo_cpu_kernels_fn *const holey[] = {eo_cpu_kernels_matmul, NULL};
    ck_assert_int_eq(eo_ctx_init_kernels(&c, pbuf[1], sizeof pbuf[1], sbuf[1], sizeof sbuf[1], NULL, 1),
                     EO_ERR_ARG);
    ck_assert_msg(strstr(eo_last_error(&c), "ctx_init_kernels"), "message: %s", eo_last_error(&c));
    ck_assert_int_eq(eo_ctx_init_kernels(&c, pbuf[1], sizeof pbuf[1], sbuf[1], sizeof sbuf[1], holey, 2),
                     EO_ERR_ARG);
    ck_assert_msg(strstr(eo_last_error(&c), "families[1]"), "message: %s", eo_last_error(&c));
    /* The table lives in the persistent arena: too small a one says so. */
    ck_assert_int_eq(eo_ctx_init_kernels(&c, pbuf[1], 64, sbuf[1], sizeof sbuf[1], holey, 1), EO_ERR_OOM);
    ck_assert_msg(strstr(eo_last_error(&c), "ctx_init_kernels") && strstr(eo_last_error(&c), "persistent"),
                  "message: %s", eo_last_error(&c));
    /* No family at all: memory and copies only, every op unsupported. */
    ck_assert_int_eq(eo_ctx_init_kernels(&c, pbuf[1], sizeof pbuf[1], sbuf[1], sizeof sbuf[1], NULL, 0),
                     EO_OK);
    eo_tensor *x, *y;
    const int64_t sx[2] = {4, 8};
    ck_assert_int_eq(eo_tensor_wrap(&c, EO_F32, 2, sx, (void *)xv, &x), EO_OK);
    ck_assert_int_eq(eo_relu(&c, x, &y), EO_ERR_UNSUPPORTED);
}
END_TEST

Suite *eo_suite_cpu_kernels(void)
{
    Suite *s = suite_create("cpu_kernels");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, forward_of_listed_families_as_full_table);
    tcase_add_test(tc, backward_needs_its_family);
    tcase_add_test(tc, half_needs_its_family);
    tcase_add_test(tc, bad_lists_refused);
    suite_add_tcase(s, tc);
    return s;
}
