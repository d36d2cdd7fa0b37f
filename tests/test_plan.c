/* tests/test_plan.c — sizing the arenas (core/everyo.h, eo_measure;
 * core/nn.h, eo_sequential_plan): the figures measured in a roomy
 * context are exact — a context with buffers of exactly those sizes runs
 * the same inference or training step, one byte less fails with
 * EO_ERR_OOM naming the arena. */
#include <check.h>
#include <stdlib.h>
#include <string.h>
#include "core/nn.h"

typedef struct mlp {
    eo_ctx ctx;
    eo_params ps;
    eo_sequential net;
    eo_module l1, l2;
    eo_optimizer opt;
    void *pbuf, *sbuf;
} mlp;

/* 784-64-10 over 64-byte aligned buffers; with_opt adds AdamW. */
static eo_status make(mlp *m, size_t persist, size_t step, int with_opt)
{
    memset(m, 0, sizeof *m);
    m->pbuf = aligned_alloc(64, (persist + 63) / 64 * 64);
    m->sbuf = aligned_alloc(64, (step + 63) / 64 * 64);
    eo_status s = eo_ctx_init(&m->ctx, m->pbuf, persist, m->sbuf, step);
    eo_seed(&m->ctx, 1);
    if (s == EO_OK) s = eo_params_init(&m->ctx, &m->ps, 4);
    if (s == EO_OK) s = eo_linear_init(&m->ctx, &m->ps, EO_CPU, "0", 784, 64, 1, EO_INIT_KAIMING_UNIFORM, &m->l1);
    if (s == EO_OK) s = eo_linear_init(&m->ctx, &m->ps, EO_CPU, "2", 64, 10, 1, EO_INIT_KAIMING_UNIFORM, &m->l2);
    if (s == EO_OK) s = eo_sequential_init(&m->ctx, &m->net, 3);
    if (s == EO_OK) s = eo_sequential_add(&m->ctx, &m->net, m->l1);
    if (s == EO_OK) s = eo_sequential_add(&m->ctx, &m->net, eo_relu_module());
    if (s == EO_OK) s = eo_sequential_add(&m->ctx, &m->net, m->l2);
    if (s == EO_OK && with_opt)
        s = eo_adamw_init(&m->ctx, &m->opt, &m->ps, 1e-3f, 0.9f, 0.999f, 1e-8f, 0.0f);
    return s;
}

static void drop(mlp *m)
{
    free(m->pbuf);
    free(m->sbuf);
}

static float xs[32 * 784];
static int32_t ys[32];

/* One step as a program runs it: wrap, forward (and loss, backward, update). */
static eo_status step(mlp *m, int train)
{
    eo_ctx *ctx = &m->ctx;
    eo_mark mk = eo_mark_get(ctx);
    eo_tensor *x, *y, *logits, *L;
    const int64_t sx[2] = {32, 784}, sy[1] = {32};
    eo_set_grad(ctx, train);
    eo_status s = eo_tensor_wrap(ctx, EO_F32, 2, sx, xs, &x);
    if (s == EO_OK && train) s = eo_tensor_wrap(ctx, EO_I32, 1, sy, ys, &y);
    if (s == EO_OK && train) s = eo_params_zero_grad(ctx, &m->ps);
    if (s == EO_OK) s = eo_sequential_forward(ctx, &m->net, x, &logits);
    if (s == EO_OK && train) s = eo_cross_entropy(ctx, logits, y, -100, &L);
    if (s == EO_OK && train) s = eo_backward(ctx, L);
    if (s == EO_OK && train) s = eo_optimizer_step(ctx, &m->opt);
    eo_rewind(ctx, mk);
    return s;
}

static eo_arena_needs plan(int train)
{
    mlp m;
    ck_assert_int_eq(make(&m, 8 << 20, 8 << 20, train), EO_OK);
    eo_ctx *ctx = &m.ctx;
    eo_mark mk = eo_mark_get(ctx);
    eo_tensor *x, *y = NULL;
    const int64_t sx[2] = {32, 784}, sy[1] = {32};
    ck_assert_int_eq(eo_tensor_wrap(ctx, EO_F32, 2, sx, xs, &x), EO_OK);
    if (train)
        ck_assert_int_eq(eo_tensor_wrap(ctx, EO_I32, 1, sy, ys, &y), EO_OK);
    eo_arena_needs n;
    ck_assert_msg(eo_sequential_plan(ctx, &m.net, &m.ps, x, y, &n) == EO_OK, "%s",
                  eo_last_error(ctx));
    eo_rewind(ctx, mk);
    ck_assert_uint_eq(eo_arena_used(&ctx->step), 0); /* all given back */
    ck_assert_uint_eq(n.persist, eo_arena_used(&ctx->persist));
    drop(&m);
    return n;
}

START_TEST(measured_sizes_are_exact)
{
    for (int i = 0; i < 32 * 784; i++)
        xs[i] = (float)(i % 255) / 255.0f;
    for (int i = 0; i < 32; i++)
        ys[i] = i % 10;
    for (int train = 0; train < 2; train++) {
        eo_arena_needs n = plan(train);
        ck_assert_uint_gt(n.step, 0);
        mlp m;
        ck_assert_int_eq(make(&m, n.persist, n.step, train), EO_OK);
        for (int k = 0; k < 3; k++) /* and steady: the same every step */
            ck_assert_msg(step(&m, train) == EO_OK, "train %d: %s", train,
                          eo_last_error(&m.ctx));
        drop(&m);
        /* One byte less: the build (whose initialisation borrows step
         * memory) or the step runs out, whichever needed the peak. */
        eo_status s = make(&m, n.persist, n.step - 1, train);
        if (s == EO_OK)
            s = step(&m, train);
        ck_assert_int_eq(s, EO_ERR_OOM);
        ck_assert_msg(strstr(eo_last_error(&m.ctx), "arena 'step': need") != NULL, "%s",
                      eo_last_error(&m.ctx));
        drop(&m);
        ck_assert_int_eq(make(&m, n.persist - 1, n.step, train), EO_ERR_OOM);
        ck_assert_msg(strstr(eo_last_error(&m.ctx), "arena 'persistent'") != NULL, "%s",
                      eo_last_error(&m.ctx));
        drop(&m);
    }
}
END_TEST

Suite *eo_suite_plan(void)
{
    Suite *s = suite_create("plan");
    TCase *tc = tcase_create("plan");
    tcase_add_test(tc, measured_sizes_are_exact);
    suite_add_tcase(s, tc);
    return s;
}
