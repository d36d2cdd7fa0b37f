/* tests/test_ops_errors.c — bad input returns its documented status
 * (suite ops_errors).
 *
 * For each status (EO_ERR_SHAPE, _AXIS, _DTYPE, _ARG, _NUMERIC, _STATE,
 * _DEVICE, _OOM) a list of bad calls: each must return exactly that status, with a
 * message that names the op and (where the call has a tensor to show)
 * its shape as "[2x3 f32]"; a failed validation must record nothing on
 * the tape. After every failure the same context must still work: a
 * small forward and backward run and give the right numbers.
 *
 * Arena exhaustion is swept: each op runs with exactly k bytes left in
 * the step arena for every k from 0 up to what it needs, so every
 * allocation inside it fails once. Each run must either succeed with the
 * right result or return EO_ERR_OOM with "need N bytes, M free" (N > M),
 * and after rewinding, the op must work again. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "core/everyo.h"
#include "core/nn.h"
#include "tests/gradcheck.h"
#include "tests/optest.h"

/* Prove the context still works: y = a * b, L = sum(y), backward gives
 * dL/da = b. Everything is rewound afterwards. */
static void still_usable(const char *after)
{
    eo_mark m = eo_mark_get(ot_ctx);
    int64_t s[2] = { 2, 3 };
    eo_tensor *a = eo_test_rand(ot_ctx, 2, s, -1, 1, 5, 1), *b, *y, *L;
    ck_assert_msg(a != NULL, "after %s: cannot make a tensor: %s", after, eo_last_error(ot_ctx));
    b = ot_rand(2, s, -1, 1, 6);
    ck_assert_msg(ot_ctx->grad_enabled == 1, "after %s: grad mode was left off", after);
    eo_status st = eo_mul(ot_ctx, a, b, &y);
    if (st == EO_OK)
        st = eo_sum_all(ot_ctx, y, &L);
    if (st == EO_OK)
        st = eo_backward(ot_ctx, L);
    ck_assert_msg(st == EO_OK, "after %s: the context no longer works: %s", after,
                  eo_last_error(ot_ctx));
    for (int i = 0; i < 6; i++)
        ck_assert_msg(((float *)a->grad->data)[i] == ((float *)b->data)[i],
                      "after %s: wrong gradient from a fresh graph", after);
    eo_rewind(ot_ctx, m);
}

/* Check one failed call: status, message contents, tape untouched. */
static void expect_fail(eo_status got, eo_status want, const char *call, const char *op,
                        const char *shape, const struct eo_node *tape_before)
{
    const char *msg = eo_last_error(ot_ctx);
    ck_assert_msg(got == want, "%s: returned %s, expected %s (message: %s)", call,
                  eo_status_name(got), eo_status_name(want), msg);
    ck_assert_msg(strstr(msg, op) != NULL, "%s: message \"%s\" does not name the op \"%s\"",
                  call, msg, op);
    if (shape)
        ck_assert_msg(strstr(msg, shape) != NULL,
                      "%s: message \"%s\" does not show the shape \"%s\"", call, msg, shape);
    ck_assert_msg(ot_ctx->tape == tape_before, "%s: a failed call left a node on the tape", call);
    still_usable(call);
}

/* A bad call: run it, then check. `shape` may be NULL. */
#define BAD(call, want, op, shape)                                                         \
    do {                                                                                   \
        const struct eo_node *tape_ = ot_ctx->tape;                                        \
        eo_status s_ = (call);                                                             \
        expect_fail(s_, (want), #call, (op), (shape), tape_);                              \
    } while (0)

/* Inputs shared by the bad calls: f32 [2x3] that requires grad (so a
 * wrongly recorded node would show), f32 [4x5], i32 [2x3], i32 [3]. */
typedef struct bad_inputs {
    eo_tensor *a, *b, *ai, *ti, *t2, *w4, *x4, *w4c;
} bad_inputs;

static bad_inputs make_inputs(void)
{
    bad_inputs in;
    int64_t s23[2] = { 2, 3 }, s45[2] = { 4, 5 }, s3 = 3, s2 = 2, s4 = 4;
    int64_t sx[4] = { 1, 2, 5, 5 }, sw[4] = { 3, 3, 3, 3 };
    int32_t iv[6] = { 0, 1, 2, 0, 1, 2 };
    in.a = eo_test_rand(ot_ctx, 2, s23, -1, 1, 1, 1);
    in.b = ot_rand(2, s45, -1, 1, 2);
    in.ai = ot_i32(2, s23, iv);
    in.ti = ot_i32(1, &s3, iv);
    in.t2 = ot_i32(1, &s2, iv);
    in.w4 = ot_rand(1, &s4, -1, 1, 3);
    in.x4 = ot_rand(4, sx, -1, 1, 4);
    in.w4c = ot_rand(4, sw, -1, 1, 5);
    return in;
}

START_TEST(shape_errors)
{
    bad_inputs t = make_inputs();
    eo_tensor *y;
    int64_t s3[3] = { 2, 3, 4 }, s3b[3] = { 3, 4, 5 }, s4[4] = { 1, 2, 3, 4 }, s1 = 4;
    eo_tensor *r3 = ot_rand(3, s3, -1, 1, 7), *r3b = ot_rand(3, s3b, -1, 1, 8);
    eo_tensor *r4 = ot_rand(4, s4, -1, 1, 9);
    int64_t s32[2] = { 3, 2 };
    eo_tensor *c32 = ot_rand(2, s32, -1, 1, 10);
    BAD(eo_add(ot_ctx, t.a, t.b, &y), EO_ERR_SHAPE, "add", "[2x3 f32]");
    BAD(eo_sub(ot_ctx, t.a, c32, &y), EO_ERR_SHAPE, "sub", "[3x2 f32]");
    BAD(eo_mul(ot_ctx, r3, t.a, &y), EO_ERR_SHAPE, "mul", "[2x3x4 f32]");
    BAD(eo_div(ot_ctx, t.a, t.w4, &y), EO_ERR_SHAPE, "div", "[4 f32]");
    BAD(eo_matmul(ot_ctx, t.a, t.b, 0, 0, &y), EO_ERR_SHAPE, "matmul", "[2x3 f32]");
    BAD(eo_matmul(ot_ctx, t.a, c32, 1, 0, &y), EO_ERR_SHAPE, "matmul", "[3x2 f32]");
    BAD(eo_matmul(ot_ctx, r3, r3b, 0, 0, &y), EO_ERR_SHAPE, "matmul", "[2x3x4 f32]");
    BAD(eo_matmul(ot_ctx, r4, r3b, 0, 0, &y), EO_ERR_SHAPE, "matmul", "[1x2x3x4 f32]");
    BAD(eo_layernorm(ot_ctx, t.a, t.w4, NULL, 1e-5f, &y), EO_ERR_SHAPE, "layernorm", "[4 f32]");
    BAD(eo_layernorm(ot_ctx, t.a, NULL, c32, 1e-5f, &y), EO_ERR_SHAPE, "layernorm", "[3x2 f32]");
    BAD(eo_cross_entropy(ot_ctx, t.a, t.ti, -100, &y), EO_ERR_SHAPE, "cross_entropy", "[3 i32]");
    BAD(eo_cross_entropy(ot_ctx, r3, t.t2, -100, &y), EO_ERR_SHAPE, "cross_entropy",
        "[2x3x4 f32]");
    eo_tensor *pair[2] = { t.a, t.b }, *pair3[2] = { t.a, r3 };
    BAD(eo_concat(ot_ctx, pair, 2, 0, &y), EO_ERR_SHAPE, "concat", "[4x5 f32]");
    BAD(eo_concat(ot_ctx, pair3, 2, 0, &y), EO_ERR_SHAPE, "concat", "[2x3x4 f32]");
    BAD(eo_reshape(ot_ctx, t.a, 1, &s1, &y), EO_ERR_SHAPE, "reshape", "[2x3 f32]");
    BAD(eo_slice(ot_ctx, t.a, 1, 2, 2, &y), EO_ERR_SHAPE, "slice", "[2x3 f32]");
    BAD(eo_slice(ot_ctx, t.a, 0, -1, 1, &y), EO_ERR_SHAPE, "slice", "[2x3 f32]");
    BAD(eo_conv2d(ot_ctx, t.x4, t.w4c, NULL, 0, 1, &y), EO_ERR_SHAPE, "conv2d", "[3x3x3x3 f32]");
    int64_t sw2[4] = { 3, 2, 3, 3 }, sw7[4] = { 1, 2, 8, 8 };
    eo_tensor *w2 = ot_rand(4, sw2, -1, 1, 11), *w7 = ot_rand(4, sw7, -1, 1, 12);
    BAD(eo_conv2d(ot_ctx, t.x4, w2, t.w4, 0, 1, &y), EO_ERR_SHAPE, "conv2d", "[4 f32]");
    BAD(eo_conv2d(ot_ctx, t.x4, w7, NULL, 1, 1, &y), EO_ERR_SHAPE, "conv2d", "[1x2x8x8 f32]");
    BAD(eo_conv2d(ot_ctx, t.a, w2, NULL, 0, 1, &y), EO_ERR_SHAPE, "conv2d", "[2x3 f32]");
    BAD(eo_maxpool2d(ot_ctx, t.x4, 6, &y), EO_ERR_SHAPE, "maxpool2d", "[1x2x5x5 f32]");
    BAD(eo_maxpool2d(ot_ctx, r3, 2, &y), EO_ERR_SHAPE, "maxpool2d", "[2x3x4 f32]");
    BAD(eo_embedding(ot_ctx, t.w4, t.ti, &y), EO_ERR_SHAPE, "embedding", "[4 f32]");
    int64_t neg[2] = { 2, -3 };
    BAD(eo_tensor_new(ot_ctx, EO_STEP, EO_CPU, EO_F32, 2, neg, &y), EO_ERR_SHAPE, "tensor_new",
        NULL);
}
END_TEST

START_TEST(axis_errors)
{
    bad_inputs t = make_inputs();
    eo_tensor *y;
    int64_t s5[5] = { 1, 1, 1, 1, 2 };
    BAD(eo_sum(ot_ctx, t.a, 5, 0, &y), EO_ERR_AXIS, "sum", "[2x3 f32]");
    BAD(eo_sum(ot_ctx, t.a, 2, 1, &y), EO_ERR_AXIS, "sum", "[2x3 f32]");
    BAD(eo_mean(ot_ctx, t.a, -3, 0, &y), EO_ERR_AXIS, "mean", "[2x3 f32]");
    BAD(eo_max(ot_ctx, t.a, 2, 0, &y), EO_ERR_AXIS, "max", "[2x3 f32]");
    BAD(eo_transpose(ot_ctx, t.a, 0, 2, &y), EO_ERR_AXIS, "transpose", "[2x3 f32]");
    BAD(eo_transpose(ot_ctx, t.a, -3, 1, &y), EO_ERR_AXIS, "transpose", "[2x3 f32]");
    int dup[2] = { 0, 0 }, big[2] = { 0, 2 };
    BAD(eo_permute(ot_ctx, t.a, dup, &y), EO_ERR_AXIS, "permute", "[2x3 f32]");
    BAD(eo_permute(ot_ctx, t.a, big, &y), EO_ERR_AXIS, "permute", "[2x3 f32]");
    BAD(eo_slice(ot_ctx, t.a, 2, 0, 1, &y), EO_ERR_AXIS, "slice", "[2x3 f32]");
    eo_tensor *pair[2] = { t.a, t.a };
    BAD(eo_concat(ot_ctx, pair, 2, 2, &y), EO_ERR_AXIS, "concat", "[2x3 f32]");
    BAD(eo_tensor_new(ot_ctx, EO_STEP, EO_CPU, EO_F32, 5, s5, &y), EO_ERR_AXIS, "tensor_new",
        "rank 5");
    BAD(eo_tensor_new(ot_ctx, EO_STEP, EO_CPU, EO_F32, -1, s5, &y), EO_ERR_AXIS, "tensor_new",
        NULL);
    BAD(eo_reshape(ot_ctx, t.a, 5, s5, &y), EO_ERR_AXIS, "reshape", NULL);
    BAD(eo_matmul(ot_ctx, t.w4, t.a, 0, 0, &y), EO_ERR_AXIS, "matmul", "[4 f32]");
    float v = 1;
    eo_tensor *sc = ot_f32(0, NULL, &v);
    sc->requires_grad = 1;
    BAD(eo_softmax(ot_ctx, sc, &y), EO_ERR_AXIS, "softmax", "[f32]");
    BAD(eo_log_softmax(ot_ctx, sc, &y), EO_ERR_AXIS, "log_softmax", "[f32]");
    BAD(eo_layernorm(ot_ctx, sc, NULL, NULL, 1e-5f, &y), EO_ERR_AXIS, "layernorm", "[f32]");
}
END_TEST

typedef eo_status (*unary_fn)(eo_ctx *, eo_tensor *, eo_tensor **);
static eo_status scale2(eo_ctx *c, eo_tensor *x, eo_tensor **o) { return eo_scale(c, x, 2, o); }
static const struct { const char *name; unary_fn f; } unaries[] = {
    { "scale", scale2 }, { "relu", eo_relu }, { "gelu", eo_gelu }, { "gelu_erf", eo_gelu_erf },
    { "tanh", eo_tanh }, { "sigmoid", eo_sigmoid }, { "exp", eo_exp }, { "log", eo_log },
    { "softmax", eo_softmax }, { "log_softmax", eo_log_softmax },
};
#define N_UNARIES ((int)(sizeof unaries / sizeof unaries[0]))

START_TEST(dtype_errors)
{
    bad_inputs t = make_inputs();
    eo_tensor *y;
    BAD(eo_add(ot_ctx, t.a, t.ai, &y), EO_ERR_DTYPE, "add", "[2x3 i32]");
    BAD(eo_mul(ot_ctx, t.ai, t.a, &y), EO_ERR_DTYPE, "mul", "[2x3 i32]");
    for (int i = 0; i < N_UNARIES; i++) {
        char call[64];
        snprintf(call, sizeof call, "%s(i32 tensor)", unaries[i].name);
        const struct eo_node *tape = ot_ctx->tape;
        expect_fail(unaries[i].f(ot_ctx, t.ai, &y), EO_ERR_DTYPE, call, unaries[i].name,
                    "[2x3 i32]", tape);
    }
    int64_t s32[2] = { 3, 2 };
    int32_t iv[6] = { 0 };
    eo_tensor *ai32 = ot_i32(2, s32, iv);
    BAD(eo_matmul(ot_ctx, t.ai, ai32, 0, 0, &y), EO_ERR_DTYPE, "matmul", "[2x3 i32]");
    BAD(eo_sum(ot_ctx, t.ai, 0, 0, &y), EO_ERR_DTYPE, "sum", "[2x3 i32]");
    BAD(eo_mean(ot_ctx, t.ai, 0, 0, &y), EO_ERR_DTYPE, "mean", "[2x3 i32]");
    BAD(eo_max(ot_ctx, t.ai, 0, 0, &y), EO_ERR_DTYPE, "max", "[2x3 i32]");
    BAD(eo_layernorm(ot_ctx, t.ai, NULL, NULL, 1e-5f, &y), EO_ERR_DTYPE, "layernorm", "[2x3 i32]");
    BAD(eo_layernorm(ot_ctx, t.a, t.ti, NULL, 1e-5f, &y), EO_ERR_DTYPE, "layernorm", "[3 i32]");
    int64_t s2 = 2;
    float fv[2] = { 0, 1 };
    eo_tensor *tf = ot_f32(1, &s2, fv);
    BAD(eo_cross_entropy(ot_ctx, t.a, tf, -100, &y), EO_ERR_DTYPE, "cross_entropy", "[2 f32]");
    BAD(eo_cross_entropy(ot_ctx, t.ai, t.t2, -100, &y), EO_ERR_DTYPE, "cross_entropy",
        "[2x3 i32]");
    BAD(eo_embedding(ot_ctx, t.b, tf, &y), EO_ERR_DTYPE, "embedding", "[2 f32]");
    BAD(eo_embedding(ot_ctx, t.ai, t.t2, &y), EO_ERR_DTYPE, "embedding", "[2x3 i32]");
    BAD(eo_dropout(ot_ctx, t.ai, 0.5f, 1, &y), EO_ERR_DTYPE, "dropout", "[2x3 i32]");
    int64_t sxi[4] = { 1, 1, 3, 3 };
    int32_t z9[9] = { 0 };
    eo_tensor *xi = ot_i32(4, sxi, z9);
    BAD(eo_conv2d(ot_ctx, xi, t.w4c, NULL, 0, 1, &y), EO_ERR_DTYPE, "conv2d", "[1x1x3x3 i32]");
    BAD(eo_maxpool2d(ot_ctx, xi, 1, &y), EO_ERR_DTYPE, "maxpool2d", "[1x1x3x3 i32]");
    BAD(eo_tensor_new(ot_ctx, EO_STEP, EO_CPU, EO_DTYPE_COUNT, 1, &s2, &y), EO_ERR_DTYPE,
        "tensor_new", NULL);
    int64_t sa[4] = { 1, 1, 2, 3 };
    int32_t z6[6] = { 0 };
    eo_tensor *qf = ot_rand(4, sa, -1, 1, 9), *qi = ot_i32(4, sa, z6);
    BAD(eo_attention_fused(ot_ctx, qi, qf, qf, NULL, 0, 1, &y), EO_ERR_DTYPE, "attention_fused",
        "[1x1x2x3 i32]");
    BAD(eo_attention_fused(ot_ctx, qf, qf, qf, qi, 0, 1, &y), EO_ERR_DTYPE, "attention_fused",
        "[1x1x2x3 i32]");
    BAD(eo_attention(ot_ctx, qf, qf, qi, NULL, 0, 1, &y), EO_ERR_DTYPE, "attention",
        "[1x1x2x3 i32]");
}
END_TEST

START_TEST(arg_errors)
{
    bad_inputs t = make_inputs();
    eo_tensor *y;
    /* NULL inputs */
    BAD(eo_add(ot_ctx, NULL, t.a, &y), EO_ERR_ARG, "add", NULL);
    BAD(eo_sub(ot_ctx, t.a, NULL, &y), EO_ERR_ARG, "sub", NULL);
    BAD(eo_mul(ot_ctx, NULL, NULL, &y), EO_ERR_ARG, "mul", NULL);
    BAD(eo_div(ot_ctx, t.a, NULL, &y), EO_ERR_ARG, "div", NULL);
    for (int i = 0; i < N_UNARIES; i++) {
        char call[64];
        snprintf(call, sizeof call, "%s(NULL)", unaries[i].name);
        const struct eo_node *tape = ot_ctx->tape;
        expect_fail(unaries[i].f(ot_ctx, NULL, &y), EO_ERR_ARG, call, unaries[i].name, NULL,
                    tape);
        snprintf(call, sizeof call, "%s(x, NULL out)", unaries[i].name);
        expect_fail(unaries[i].f(ot_ctx, t.a, NULL), EO_ERR_ARG, call, unaries[i].name, NULL,
                    tape);
    }
    BAD(eo_matmul(ot_ctx, NULL, t.a, 0, 0, &y), EO_ERR_ARG, "matmul", NULL);
    BAD(eo_matmul(ot_ctx, t.a, NULL, 0, 1, &y), EO_ERR_ARG, "matmul", NULL);
    BAD(eo_sum(ot_ctx, NULL, 0, 0, &y), EO_ERR_ARG, "sum", NULL);
    BAD(eo_mean(ot_ctx, NULL, 0, 0, &y), EO_ERR_ARG, "mean", NULL);
    BAD(eo_max(ot_ctx, NULL, 0, 0, &y), EO_ERR_ARG, "max", NULL);
    BAD(eo_sum_all(ot_ctx, NULL, &y), EO_ERR_ARG, "sum_all", NULL);
    BAD(eo_cross_entropy(ot_ctx, NULL, t.t2, -100, &y), EO_ERR_ARG, "cross_entropy", NULL);
    BAD(eo_cross_entropy(ot_ctx, t.a, NULL, -100, &y), EO_ERR_ARG, "cross_entropy", NULL);
    BAD(eo_layernorm(ot_ctx, NULL, NULL, NULL, 1e-5f, &y), EO_ERR_ARG, "layernorm", NULL);
    BAD(eo_embedding(ot_ctx, NULL, t.t2, &y), EO_ERR_ARG, "embedding", NULL);
    BAD(eo_embedding(ot_ctx, t.b, NULL, &y), EO_ERR_ARG, "embedding", NULL);
    BAD(eo_dropout(ot_ctx, NULL, 0.5f, 1, &y), EO_ERR_ARG, "dropout", NULL);
    BAD(eo_conv2d(ot_ctx, NULL, t.w4c, NULL, 0, 1, &y), EO_ERR_ARG, "conv2d", NULL);
    BAD(eo_conv2d(ot_ctx, t.x4, NULL, NULL, 0, 1, &y), EO_ERR_ARG, "conv2d", NULL);
    BAD(eo_maxpool2d(ot_ctx, NULL, 2, &y), EO_ERR_ARG, "maxpool2d", NULL);
    eo_tensor *with_null[2] = { t.a, NULL };
    BAD(eo_concat(ot_ctx, with_null, 2, 0, &y), EO_ERR_ARG, "concat", NULL);
    BAD(eo_concat(ot_ctx, NULL, 2, 0, &y), EO_ERR_ARG, "concat", NULL);
    int64_t s6 = 6;
    int perm[2] = { 1, 0 };
    BAD(eo_reshape(ot_ctx, NULL, 1, &s6, &y), EO_ERR_ARG, "reshape", NULL);
    BAD(eo_reshape(ot_ctx, t.a, 1, NULL, &y), EO_ERR_ARG, "reshape", NULL);
    BAD(eo_permute(ot_ctx, t.a, NULL, &y), EO_ERR_ARG, "permute", NULL);
    BAD(eo_permute(ot_ctx, NULL, perm, &y), EO_ERR_ARG, "permute", NULL);
    BAD(eo_transpose(ot_ctx, NULL, 0, 1, &y), EO_ERR_ARG, "transpose", NULL);
    BAD(eo_slice(ot_ctx, NULL, 0, 0, 1, &y), EO_ERR_ARG, "slice", NULL);
    BAD(eo_contiguous(ot_ctx, NULL, &y), EO_ERR_ARG, "contiguous", NULL);
    BAD(eo_backward(ot_ctx, NULL), EO_ERR_ARG, "backward", NULL);
    BAD(eo_tensor_new(ot_ctx, EO_STEP, EO_CPU, EO_F32, 1, &s6, NULL), EO_ERR_ARG, "tensor_new",
        NULL);
    BAD(eo_tensor_new(ot_ctx, EO_STEP, EO_CPU, EO_F32, 1, NULL, &y), EO_ERR_ARG, "tensor_new",
        NULL);
    /* NULL output pointers */
    BAD(eo_add(ot_ctx, t.a, t.a, NULL), EO_ERR_ARG, "add", NULL);
    BAD(eo_matmul(ot_ctx, t.a, t.a, 0, 1, NULL), EO_ERR_ARG, "matmul", NULL);
    BAD(eo_sum(ot_ctx, t.a, 0, 0, NULL), EO_ERR_ARG, "sum", NULL);
    BAD(eo_max(ot_ctx, t.a, 0, 0, NULL), EO_ERR_ARG, "max", NULL);
    BAD(eo_cross_entropy(ot_ctx, t.a, t.t2, -100, NULL), EO_ERR_ARG, "cross_entropy", NULL);
    BAD(eo_layernorm(ot_ctx, t.a, NULL, NULL, 1e-5f, NULL), EO_ERR_ARG, "layernorm", NULL);
    BAD(eo_embedding(ot_ctx, t.b, t.t2, NULL), EO_ERR_ARG, "embedding", NULL);
    BAD(eo_dropout(ot_ctx, t.a, 0.5f, 1, NULL), EO_ERR_ARG, "dropout", NULL);
    BAD(eo_conv2d(ot_ctx, t.x4, t.w4c, NULL, 0, 1, NULL), EO_ERR_ARG, "conv2d", NULL);
    BAD(eo_maxpool2d(ot_ctx, t.x4, 2, NULL), EO_ERR_ARG, "maxpool2d", NULL);
    eo_tensor *pair[2] = { t.a, t.a };
    BAD(eo_concat(ot_ctx, pair, 2, 0, NULL), EO_ERR_ARG, "concat", NULL);
    BAD(eo_reshape(ot_ctx, t.a, 1, &s6, NULL), EO_ERR_ARG, "reshape", NULL);
    BAD(eo_transpose(ot_ctx, t.a, 0, 1, NULL), EO_ERR_ARG, "transpose", NULL);
    BAD(eo_slice(ot_ctx, t.a, 0, 0, 1, NULL), EO_ERR_ARG, "slice", NULL);
    BAD(eo_contiguous(ot_ctx, t.a, NULL), EO_ERR_ARG, "contiguous", NULL);
    /* values out of range */
    BAD(eo_dropout(ot_ctx, t.a, 1.0f, 1, &y), EO_ERR_ARG, "dropout", NULL);
    BAD(eo_dropout(ot_ctx, t.a, -0.1f, 1, &y), EO_ERR_ARG, "dropout", NULL);
    BAD(eo_dropout(ot_ctx, t.a, NAN, 1, &y), EO_ERR_ARG, "dropout", NULL);
    int64_t s3 = 3;
    int32_t hi[3] = { 0, 4, 1 }, lo[3] = { 0, -1, 1 }, ce_hi[2] = { 0, 3 }, ce_lo[2] = { -1, 0 };
    int64_t s2 = 2;
    BAD(eo_embedding(ot_ctx, t.b, ot_i32(1, &s3, hi), &y), EO_ERR_ARG, "embedding", "index 4");
    BAD(eo_embedding(ot_ctx, t.b, ot_i32(1, &s3, lo), &y), EO_ERR_ARG, "embedding", "index -1");
    BAD(eo_cross_entropy(ot_ctx, t.a, ot_i32(1, &s2, ce_hi), -100, &y), EO_ERR_ARG,
        "cross_entropy", "target[1] = 3");
    BAD(eo_cross_entropy(ot_ctx, t.a, ot_i32(1, &s2, ce_lo), -100, &y), EO_ERR_ARG,
        "cross_entropy", "target[0] = -1");
    BAD(eo_concat(ot_ctx, pair, 0, 0, &y), EO_ERR_ARG, "concat", NULL);
    eo_tensor *many[17];
    for (int i = 0; i < 17; i++)
        many[i] = t.a;
    BAD(eo_concat(ot_ctx, many, 17, 0, &y), EO_ERR_ARG, "concat", NULL);
    BAD(eo_layernorm(ot_ctx, t.a, NULL, NULL, 0.0f, &y), EO_ERR_ARG, "layernorm", NULL);
    BAD(eo_layernorm(ot_ctx, t.a, NULL, NULL, NAN, &y), EO_ERR_ARG, "layernorm", NULL);
    int64_t sw[4] = { 2, 2, 3, 3 };
    eo_tensor *w = ot_rand(4, sw, -1, 1, 3);
    BAD(eo_conv2d(ot_ctx, t.x4, w, NULL, 0, 0, &y), EO_ERR_ARG, "conv2d", NULL);
    BAD(eo_conv2d(ot_ctx, t.x4, w, NULL, -1, 1, &y), EO_ERR_ARG, "conv2d", NULL);
    int64_t sa[4] = { 1, 1, 2, 3 };
    eo_tensor *q = eo_test_rand(ot_ctx, 4, sa, -1, 1, 9, 1);
    BAD(eo_attention_fused(ot_ctx, NULL, q, q, NULL, 0, 1, &y), EO_ERR_ARG, "attention_fused", NULL);
    BAD(eo_attention_fused(ot_ctx, q, q, q, NULL, 0, 1, NULL), EO_ERR_ARG, "attention_fused", NULL);
    BAD(eo_attention_fused(ot_ctx, q, q, q, NULL, 0, NAN, &y), EO_ERR_ARG, "attention_fused", NULL);
    BAD(eo_attention_fused(ot_ctx, q, q, q, NULL, 0, INFINITY, &y), EO_ERR_ARG, "attention_fused",
        NULL);
    BAD(eo_attention(ot_ctx, q, NULL, q, NULL, 1, 1, &y), EO_ERR_ARG, "attention", NULL);
}
END_TEST

START_TEST(numeric_state_and_device_errors)
{
    int64_t s[2] = { 2, 2 };
    float v[4] = { 1, 0, 2, 3 }, neg[4] = { 1, 2, -3, 4 };
    eo_tensor *y, *x = ot_f32(2, s, v), *xn = ot_f32(2, s, neg);
    x->requires_grad = 1;
    BAD(eo_log(ot_ctx, x, &y), EO_ERR_NUMERIC, "log", "[2x2 f32]");
    BAD(eo_log(ot_ctx, xn, &y), EO_ERR_NUMERIC, "log", "[2x2 f32]");
    /* The same checks on non-contiguous inputs that require grad: the op
     * copies them first, and that copy must not stay on the tape. */
    eo_tensor *xt;
    OT_OK(eo_transpose(ot_ctx, x, 0, 1, &xt), "transpose");
    BAD(eo_log(ot_ctx, xt, &y), EO_ERR_NUMERIC, "log", "[2x2 f32]");
    int64_t s3 = 3;
    int32_t bad_t[3] = { 0, 7, 1 }, bad_i[3] = { 0, 1, 9 };
    eo_tensor *lt, *l = eo_test_rand(ot_ctx, 2, (int64_t[2]){ 4, 3 }, -1, 1, 4, 1);
    OT_OK(eo_transpose(ot_ctx, l, 0, 1, &lt), "transpose");
    BAD(eo_cross_entropy(ot_ctx, lt, ot_i32(1, &s3, bad_t), -100, &y), EO_ERR_ARG,
        "cross_entropy", "target[1] = 7");
    BAD(eo_embedding(ot_ctx, lt, ot_i32(1, &s3, bad_i), &y), EO_ERR_ARG, "embedding", "index 9");
    /* backward of a non-scalar, and of a scalar that needs no grad */
    eo_tensor *m, *z = ot_rand(0, NULL, 0, 1, 3), *zz;
    OT_OK(eo_mul(ot_ctx, x, x, &m), "x * x");
    BAD(eo_backward(ot_ctx, m), EO_ERR_STATE, "backward", "[2x2 f32]");
    OT_OK(eo_scale(ot_ctx, z, 2, &zz), "scale");
    BAD(eo_backward(ot_ctx, zz), EO_ERR_STATE, "backward", "[f32]");
    /* a device whose backend was never opened */
    BAD(eo_tensor_new(ot_ctx, EO_STEP, EO_CUDA, EO_F32, 2, s, &y), EO_ERR_DEVICE, "tensor_new",
        "not open");
    BAD(eo_tensor_new(ot_ctx, EO_STEP, (eo_device)7, EO_F32, 2, s, &y), EO_ERR_DEVICE,
        "tensor_new", NULL);
}
END_TEST

/* Tensors the library did not make, and shapes that hold nothing but
 * whose strides would wrap: each refused with its status before any
 * kernel reads the handle. */
START_TEST(handles_and_empty_extents)
{
    int64_t s[2] = { 2, 3 };
    eo_tensor *y, *ok = ot_rand(2, s, -1, 1, 7);
    eo_tensor z = { 0 }; /* zeroed: rank 0, one element, no data */
    BAD(eo_relu(ot_ctx, &z, &y), EO_ERR_STATE, "relu", "no data");
    BAD(eo_add(ot_ctx, ok, &z, &y), EO_ERR_STATE, "add", "no data");
    eo_tensor d = *ok;
    d.dtype = (eo_dtype)9;
    BAD(eo_relu(ot_ctx, &d, &y), EO_ERR_DTYPE, "relu", "dtype 9");
    d = *ok;
    d.shape[0] = -4;
    BAD(eo_relu(ot_ctx, &d, &y), EO_ERR_SHAPE, "relu", NULL);
    /* empty, with sides whose product wraps */
    const int64_t e1[3] = { 0, 2, INT64_MAX }, e2[4] = { 0, 1, INT64_MAX, INT64_MAX },
                  e3[2] = { 0, INT64_MAX };
    BAD(eo_tensor_new(ot_ctx, EO_STEP, EO_CPU, EO_F32, 3, e1, &y), EO_ERR_SHAPE, "tensor_new",
        "strides");
    BAD(eo_tensor_new(ot_ctx, EO_STEP, EO_CPU, EO_F32, 4, e2, &y), EO_ERR_SHAPE, "tensor_new",
        "strides");
    BAD(eo_tensor_new(ot_ctx, EO_STEP, EO_CPU, EO_F32, 2, e3, &y), EO_ERR_SHAPE, "tensor_new",
        "strides");
    eo_tensor *empty;
    const int64_t e0[2] = { 0, 4 }, big[3] = { 0, INT64_MAX / 2, 4 };
    OT_OK(eo_tensor_new(ot_ctx, EO_STEP, EO_CPU, EO_F32, 2, e0, &empty), "an empty [0x4]");
    BAD(eo_reshape(ot_ctx, empty, 3, big, &y), EO_ERR_SHAPE, "reshape", "strides");
    /* a lifetime that is neither */
    BAD(eo_tensor_new(ot_ctx, (eo_lifetime)5, EO_CPU, EO_F32, 2, s, &y), EO_ERR_ARG,
        "tensor_new", "lifetime 5");
    /* copy_into checks both handles like any op */
    d = *ok;
    d.device = (eo_device)5;
    BAD(eo_copy_into(ot_ctx, ok, &d), EO_ERR_DEVICE, "copy_into", NULL);
    d = *ok;
    d.rank = -1;
    BAD(eo_copy_into(ot_ctx, &d, ok), EO_ERR_AXIS, "copy_into", NULL);
}
END_TEST

/* Handles made after a mark are refused once eo_rewind has gone back past
 * them: a loss whose tape was rewound, an op's input, a view. The context
 * goes on working (BAD runs a fresh graph after each). */
START_TEST(rewound_handles_are_refused)
{
    int64_t s[2] = { 2, 3 };
    eo_tensor *w = eo_test_rand(ot_ctx, 2, s, -1, 1, 3, 1), *y, *L, *v, *z;
    eo_mark m = eo_mark_get(ot_ctx);
    OT_OK(eo_mul(ot_ctx, w, w, &y), "mul");
    OT_OK(eo_sum_all(ot_ctx, y, &L), "sum_all");
    OT_OK(eo_transpose(ot_ctx, y, 0, 1, &v), "transpose");
    eo_rewind(ot_ctx, m);
    BAD(eo_backward(ot_ctx, L), EO_ERR_STATE, "backward", "rewound");
    BAD(eo_relu(ot_ctx, y, &z), EO_ERR_STATE, "relu", "rewound");
    BAD(eo_add(ot_ctx, w, v, &z), EO_ERR_STATE, "add", "rewound");
    BAD(eo_copy_into(ot_ctx, w, y), EO_ERR_STATE, "copy_into", "rewound");
    BAD(eo_set_requires_grad(ot_ctx, y, 1), EO_ERR_STATE, "set_requires_grad", "rewound");
}
END_TEST

/* Only a float leaf's mode can be set, as in PyTorch. */
START_TEST(set_requires_grad_on_leaves_only)
{
    int64_t s[2] = { 2, 3 };
    eo_tensor *a = ot_rand(2, s, -1, 1, 4), *y, *L;
    const int32_t iv[3] = { 1, 2, 3 };
    const int64_t s3 = 3;
    eo_tensor *ti = ot_i32(1, &s3, iv);
    BAD(eo_set_requires_grad(ot_ctx, NULL, 1), EO_ERR_ARG, "set_requires_grad", "NULL");
    BAD(eo_set_requires_grad(ot_ctx, ti, 1), EO_ERR_DTYPE, "set_requires_grad", "[3 i32]");
    OT_OK(eo_set_requires_grad(ot_ctx, a, 1), "a leaf");
    OT_OK(eo_mul(ot_ctx, a, a, &y), "mul");
    ck_assert(y->requires_grad && y->node);
    BAD(eo_set_requires_grad(ot_ctx, y, 0), EO_ERR_STATE, "set_requires_grad", "not a leaf");
    OT_OK(eo_sum_all(ot_ctx, y, &L), "sum_all");
    OT_OK(eo_backward(ot_ctx, L), "backward");
    for (int i = 0; i < 6; i++) /* d/da sum(a*a) = 2a */
        ck_assert(((float *)a->grad->data)[i] == 2 * ((float *)a->data)[i]);
    OT_OK(eo_set_requires_grad(ot_ctx, a, 0), "off again");
    OT_OK(eo_mul(ot_ctx, a, a, &y), "mul");
    ck_assert(!y->requires_grad && !y->node && a->grad); /* not recorded; the gradient stays */
}
END_TEST

/* A leaf made with EO_PERSIST outlives the step: its gradient must too.
 * Three steps of mark, forward, backward, rewind, with the next step's
 * tensors written over the rewound memory in between: the gradient
 * accumulates as in PyTorch (no zeroing here: k steps give k times the
 * one-step gradient), through a product, a reshape (whose gradient is
 * otherwise taken, not copied), a transpose (written fresh) and a matmul. */
START_TEST(persistent_leaf_gradient_survives_rewind)
{
    int64_t s[2] = { 2, 3 }, s6 = 6, s32[2] = { 3, 2 };
    eo_tensor *w;
    OT_OK(eo_tensor_new(ot_ctx, EO_PERSIST, EO_CPU, EO_F32, 2, s, &w), "persistent leaf");
    const float wv[6] = { 0.5f, -1, 2, 0.25f, -0.75f, 1.5f };
    for (int i = 0; i < 6; i++)
        ((float *)w->data)[i] = wv[i];
    OT_OK(eo_set_requires_grad(ot_ctx, w, 1), "set_requires_grad");
    for (int step = 1; step <= 3; step++) {
        eo_mark m = eo_mark_get(ot_ctx);
        eo_tensor *sq, *r, *t, *mm, *l1, *l2, *l3, *l4, *a, *b, *L;
        OT_OK(eo_mul(ot_ctx, w, w, &sq), "mul");
        OT_OK(eo_sum_all(ot_ctx, sq, &l1), "sum_all");            /* d/dw: 2w */
        OT_OK(eo_reshape(ot_ctx, w, 1, &s6, &r), "reshape");
        OT_OK(eo_sum_all(ot_ctx, r, &l2), "sum_all");             /* 1 */
        OT_OK(eo_transpose(ot_ctx, w, 0, 1, &t), "transpose");
        OT_OK(eo_contiguous(ot_ctx, t, &t), "contiguous");
        OT_OK(eo_sum_all(ot_ctx, t, &l3), "sum_all");             /* 1 */
        eo_tensor *ones = ot_f32(2, s32, (const float[6]){ 1, 1, 1, 1, 1, 1 });
        OT_OK(eo_matmul(ot_ctx, w, ones, 0, 0, &mm), "matmul");   /* row sums, twice */
        OT_OK(eo_sum_all(ot_ctx, mm, &l4), "sum_all");            /* 2 */
        OT_OK(eo_add(ot_ctx, l1, l2, &a), "add");
        OT_OK(eo_add(ot_ctx, l3, l4, &b), "add");
        OT_OK(eo_add(ot_ctx, a, b, &L), "add");
        OT_OK(eo_backward(ot_ctx, L), "backward");
        ck_assert_msg((uintptr_t)w->grad - ot_ctx->step.base >= ot_ctx->step.cap,
                      "step %d: the persistent leaf's gradient is in the step arena", step);
        for (int i = 0; i < 6; i++) {
            const float want = (float)step * (2 * wv[i] + 4);
            ck_assert_msg(((float *)w->grad->data)[i] == want, "step %d: grad[%d] = %g, want %g",
                          step, i, (double)((float *)w->grad->data)[i], (double)want);
        }
        eo_rewind(ot_ctx, m);
        /* the next step's tensors land on the rewound memory */
        const int64_t big = 4096;
        eo_tensor *junk;
        OT_OK(eo_tensor_new(ot_ctx, EO_STEP, EO_CPU, EO_F32, 1, &big, &junk), "junk");
        memset(junk->data, 0x7f, (size_t)big * sizeof(float));
        eo_rewind(ot_ctx, m);
    }
}
END_TEST

/* a[:, 1:3] = a[:, 0:2] on one buffer: the source is read whole before
 * anything is written (PyTorch refuses such a partial overlap; EveryO
 * copies through scratch), and a view copied onto itself is unchanged. */
START_TEST(copy_into_overlapping_views)
{
    int64_t s[2] = { 2, 3 };
    const float v[6] = { 1, 2, 3, 4, 5, 6 };
    eo_tensor *a = ot_f32(2, s, v), *dst, *src;
    OT_OK(eo_slice(ot_ctx, a, 1, 1, 2, &dst), "slice");
    OT_OK(eo_slice(ot_ctx, a, 1, 0, 2, &src), "slice");
    OT_OK(eo_copy_into(ot_ctx, dst, src), "copy_into, overlapping");
    const float want[6] = { 1, 1, 2, 4, 4, 5 };
    for (int i = 0; i < 6; i++)
        ck_assert_msg(((float *)a->data)[i] == want[i], "a[%d] = %g, want %g", i,
                      (double)((float *)a->data)[i], (double)want[i]);
    OT_OK(eo_slice(ot_ctx, a, 1, 1, 2, &src), "slice");
    OT_OK(eo_copy_into(ot_ctx, dst, src), "copy_into, onto itself");
    for (int i = 0; i < 6; i++)
        ck_assert(((float *)a->data)[i] == want[i]);
    /* the other way: a[:, 0:2] = a[:, 1:3] */
    const float v2[6] = { 1, 2, 3, 4, 5, 6 }, want2[6] = { 2, 3, 3, 5, 6, 6 };
    a = ot_f32(2, s, v2);
    OT_OK(eo_slice(ot_ctx, a, 1, 0, 2, &dst), "slice");
    OT_OK(eo_slice(ot_ctx, a, 1, 1, 2, &src), "slice");
    OT_OK(eo_copy_into(ot_ctx, dst, src), "copy_into, overlapping");
    for (int i = 0; i < 6; i++)
        ck_assert_msg(((float *)a->data)[i] == want2[i], "a[%d] = %g, want %g", i,
                      (double)((float *)a->data)[i], (double)want2[i]);
    still_usable("copy_into of overlapping views");
}
END_TEST

/* ---- arena exhaustion ----------------------------------------------------- */

START_TEST(oom_message_and_recovery)
{
    /* A context of its own with a 128 KiB step arena. */
    static unsigned char persist[1 << 16], step[1 << 17];
    eo_ctx ctx;
    ck_assert_int_eq(eo_ctx_init(&ctx, persist, sizeof persist, step, sizeof step), EO_OK);
    int64_t s[2] = { 64, 64 };
    eo_tensor *a, *b, *y;
    ck_assert_int_eq(eo_param_new(&ctx, EO_CPU, "a", 2, s, &a), EO_OK);
    ck_assert_int_eq(eo_tensor_new(&ctx, EO_STEP, EO_CPU, EO_F32, 2, s, &b), EO_OK);
    ck_assert_int_eq(eo_fill(&ctx, a, 0.5f), EO_OK);
    ck_assert_int_eq(eo_fill(&ctx, b, 2.0f), EO_OK);
    eo_mark m = eo_mark_get(&ctx);
    /* 16 KiB each: the arena fills after a few products */
    eo_status st = EO_OK;
    int made = 0;
    while (st == EO_OK && made < 16) {
        st = eo_mul(&ctx, a, b, &y);
        made += st == EO_OK;
    }
    ck_assert_int_eq(st, EO_ERR_OOM);
    const char *msg = eo_last_error(&ctx), *p = strstr(msg, "need ");
    ck_assert_msg(p != NULL, "OOM message \"%s\" does not say what was needed", msg);
    unsigned long long need = 0, left = 0;
    ck_assert_msg(sscanf(p, "need %llu bytes, %llu free", &need, &left) == 2,
                  "OOM message \"%s\" is not \"need N bytes, M free\"", msg);
    ck_assert_msg(need > left && need >= 64 * 64 * 4,
                  "OOM message \"%s\": need %llu, free %llu", msg, need, left);
    ck_assert_int_eq(ctx.grad_enabled, 1);
    /* Still usable without a rewind: a small op fits in what is left. */
    eo_tensor *sa, *sy;
    ck_assert_int_eq(eo_slice(&ctx, a, 0, 0, 2, &sa), EO_OK);
    ck_assert_int_eq(eo_sum_all(&ctx, sa, &sy), EO_OK);
    ck_assert_float_eq(*(float *)sy->data, 64.0f);
    /* And after a rewind the big op works and backward reaches a. */
    eo_rewind(&ctx, m);
    eo_tensor *L;
    ck_assert_int_eq(eo_mul(&ctx, a, b, &y), EO_OK);
    ck_assert_int_eq(eo_sum_all(&ctx, y, &L), EO_OK);
    ck_assert_int_eq(eo_backward(&ctx, L), EO_OK);
    ck_assert_float_eq(((float *)a->grad->data)[4095], 2.0f);
    /* The persistent arena reports OOM the same way. */
    ck_assert_int_eq(eo_param_new(&ctx, EO_CPU, "big", 2, s, &y), EO_ERR_OOM);
    ck_assert_ptr_nonnull(strstr(eo_last_error(&ctx), "persistent"));
    ck_assert_ptr_nonnull(strstr(eo_last_error(&ctx), "free"));
}
END_TEST

/* One op under the OOM sweep: builds its output from prepared inputs. */
typedef struct oom_case {
    const char *name;
    eo_status (*run)(eo_ctx *ctx, eo_tensor *const *in, eo_tensor **out);
    int n_in;
    int rank[3];
    int64_t shape[3][4];
    int is_int[3]; /* i32 inputs hold small valid indices */
} oom_case;

#define IN0 in[0]
static eo_status r_add(eo_ctx *c, eo_tensor *const *in, eo_tensor **o) { return eo_add(c, IN0, in[1], o); }
static eo_status r_gelu(eo_ctx *c, eo_tensor *const *in, eo_tensor **o)
{
    eo_tensor *t; /* through a transposed view: the copy allocates too */
    OT_TRY(eo_transpose(c, IN0, 0, 1, &t));
    return eo_gelu(c, t, o);
}
static eo_status r_matmul(eo_ctx *c, eo_tensor *const *in, eo_tensor **o) { return eo_matmul(c, IN0, in[1], 0, 1, o); }
static eo_status r_max(eo_ctx *c, eo_tensor *const *in, eo_tensor **o) { return eo_max(c, IN0, 1, 0, o); }
static eo_status r_mean(eo_ctx *c, eo_tensor *const *in, eo_tensor **o) { return eo_mean(c, IN0, 0, 1, o); }
static eo_status r_softmax(eo_ctx *c, eo_tensor *const *in, eo_tensor **o) { return eo_log_softmax(c, IN0, o); }
static eo_status r_ce(eo_ctx *c, eo_tensor *const *in, eo_tensor **o) { return eo_cross_entropy(c, IN0, in[1], -100, o); }
static eo_status r_ln(eo_ctx *c, eo_tensor *const *in, eo_tensor **o) { return eo_layernorm(c, IN0, in[1], in[2], 1e-5f, o); }
static eo_status r_emb(eo_ctx *c, eo_tensor *const *in, eo_tensor **o) { return eo_embedding(c, IN0, in[1], o); }
static eo_status r_drop(eo_ctx *c, eo_tensor *const *in, eo_tensor **o) { return eo_dropout(c, IN0, 0.25f, 9, o); }
static eo_status r_concat(eo_ctx *c, eo_tensor *const *in, eo_tensor **o) { return eo_concat(c, in, 2, 1, o); }
static eo_status r_conv(eo_ctx *c, eo_tensor *const *in, eo_tensor **o) { return eo_conv2d(c, IN0, in[1], in[2], 1, 1, o); }
static eo_status r_pool(eo_ctx *c, eo_tensor *const *in, eo_tensor **o) { return eo_maxpool2d(c, IN0, 2, o); }
static eo_status r_reshape(eo_ctx *c, eo_tensor *const *in, eo_tensor **o)
{
    eo_tensor *t;
    int64_t s = -1;
    OT_TRY(eo_transpose(c, IN0, 0, 1, &t));
    return eo_reshape(c, t, 1, &s, o);
}

static eo_status r_attn(eo_ctx *c, eo_tensor *const *in, eo_tensor **o)
{
    return eo_attention_fused(c, IN0, in[1], in[2], NULL, 1, 0.5f, o);
}
static eo_status r_attn_composed(eo_ctx *c, eo_tensor *const *in, eo_tensor **o)
{
    return eo_attention(c, IN0, in[1], in[2], NULL, 1, 0.5f, o);
}

static const oom_case oom_cases[] = {
    { "add", r_add, 2, {2, 1}, { {5, 7}, {7} }, {0} },
    { "gelu", r_gelu, 1, {2}, { {5, 7} }, {0} },
    { "matmul", r_matmul, 2, {3, 2}, { {2, 5, 7}, {3, 7} }, {0} },
    { "max", r_max, 1, {3}, { {3, 5, 7} }, {0} },
    { "mean", r_mean, 1, {2}, { {5, 7} }, {0} },
    { "log_softmax", r_softmax, 1, {2}, { {5, 7} }, {0} },
    { "cross_entropy", r_ce, 2, {2, 1}, { {5, 7}, {5} }, {0, 1} },
    { "layernorm", r_ln, 3, {2, 1, 1}, { {5, 7}, {7}, {7} }, {0} },
    { "embedding", r_emb, 2, {2, 2}, { {5, 7}, {2, 3} }, {0, 1} },
    { "dropout", r_drop, 1, {2}, { {5, 7} }, {0} },
    { "concat", r_concat, 2, {2, 2}, { {5, 7}, {5, 2} }, {0} },
    { "conv2d", r_conv, 3, {4, 4, 1}, { {2, 2, 5, 4}, {3, 2, 3, 3}, {3} }, {0} },
    { "maxpool2d", r_pool, 1, {4}, { {2, 2, 5, 4} }, {0} },
    { "reshape", r_reshape, 1, {2}, { {5, 7} }, {0} },
    { "attention_fused", r_attn, 3, {4, 4, 4}, { {1, 2, 5, 3}, {1, 2, 5, 3}, {1, 2, 5, 3} }, {0} },
    { "attention", r_attn_composed, 3, {4, 4, 4}, { {1, 2, 5, 3}, {1, 2, 5, 3}, {1, 2, 5, 3} }, {0} },
};
#define N_OOM ((int)(sizeof oom_cases / sizeof oom_cases[0]))

/* Leave exactly `k` bytes free in the step arena (after the filler's own
 * alignment), or fail the test if less is free already. */
static void leave_free(size_t k)
{
    size_t rem = eo_arena_remaining(&ot_ctx->step);
    ck_assert_msg(rem >= k, "oom sweep: only %zu bytes free", rem);
    void *p;
    ck_assert_int_eq(eo_arena_alloc(&ot_ctx->step, rem - k, 1, &p), EO_OK);
}

/* Make the inputs of an OOM case; f32 ones require grad so the op also
 * allocates its tape node. */
static void oom_inputs(const oom_case *oc, eo_tensor **in)
{
    for (int i = 0; i < oc->n_in; i++) {
        if (oc->is_int[i]) {
            int32_t v[16];
            for (int j = 0; j < 16; j++)
                v[j] = j % 3;
            in[i] = ot_i32(oc->rank[i], oc->shape[i], v);
        } else {
            in[i] = eo_test_rand(ot_ctx, oc->rank[i], oc->shape[i], -1, 1, 17u + (unsigned)i, 1);
        }
    }
}

static void expect_oom_message(const char *what)
{
    const char *msg = eo_last_error(ot_ctx), *p = strstr(msg, "need ");
    unsigned long long need = 0, left = 0;
    ck_assert_msg(p && sscanf(p, "need %llu bytes, %llu free", &need, &left) == 2 && need > left,
                  "%s: OOM message \"%s\" is not \"need N bytes, M free\" with N > M", what, msg);
}

START_TEST(oom_sweep_forward)
{
    const oom_case *oc = &oom_cases[_i];
    eo_tensor *in[3], *y;
    oom_inputs(oc, in);
    /* The reference run: how much it takes, and what it gives. */
    eo_mark m0 = eo_mark_get(ot_ctx);
    size_t used0 = eo_arena_used(&ot_ctx->step);
    OT_OK(oc->run(ot_ctx, in, &y), oc->name);
    size_t need = eo_arena_used(&ot_ctx->step) - used0;
    double *ref = ot_get(y);
    int64_t n = eo_numel(y);
    eo_rewind(ot_ctx, m0);
    /* Every k below the need (in 16-byte steps: allocations are 64-byte
     * aligned, so finer steps only repeat cases) and a little above. */
    int ooms = 0;
    for (size_t k = 0; k <= need + 256; k += 16) {
        eo_mark m = eo_mark_get(ot_ctx);
        leave_free(k);
        char what[96];
        snprintf(what, sizeof what, "%s with %zu of %zu bytes", oc->name, k, need);
        eo_status st = oc->run(ot_ctx, in, &y);
        ck_assert_msg(st == EO_OK || st == EO_ERR_OOM, "%s: returned %s: %s", what,
                      eo_status_name(st), eo_last_error(ot_ctx));
        if (st == EO_OK) {
            ck_assert_int_eq(eo_numel(y), n);
            ot_expect_close(what, y, ref, 0, 0);
        } else {
            ooms++;
            expect_oom_message(what);
        }
        ck_assert_msg(ot_ctx->grad_enabled == 1, "%s: grad mode left off", what);
        eo_rewind(ot_ctx, m);
    }
    ck_assert_msg(ooms > 0, "%s: never ran out of memory in the sweep", oc->name);
    still_usable(oc->name);
}
END_TEST

/* Backward under exhaustion: parameters' gradients live in the persistent
 * arena, so a rewind after a failed backward leaves them valid; after
 * zeroing them, a backward with room must give the reference gradients. */
typedef struct bwd_graph { eo_tensor *x, *t, *w, *b; } bwd_graph;

/* loss = cross_entropy(layernorm(attention(a, a, a))), a = gelu(x wᵀ + b)
 * as one head [1, 1, 3, 4]; parameter grads zeroed. */
static eo_tensor *bwd_forward(const bwd_graph *g)
{
    eo_tensor *h, *a, *a4, *at, *ln, *L;
    int64_t s4[4] = { 1, 1, 3, 4 }, s2[2] = { 3, 4 };
    OT_OK(eo_matmul(ot_ctx, g->x, g->w, 0, 1, &h), "forward");
    OT_OK(eo_add(ot_ctx, h, g->b, &h), "forward");
    OT_OK(eo_gelu(ot_ctx, h, &a), "forward");
    OT_OK(eo_reshape(ot_ctx, a, 4, s4, &a4), "forward");
    OT_OK(eo_attention_fused(ot_ctx, a4, a4, a4, NULL, 1, 0.5f, &at), "forward");
    OT_OK(eo_reshape(ot_ctx, at, 2, s2, &a), "forward");
    OT_OK(eo_layernorm(ot_ctx, a, NULL, NULL, 1e-5f, &ln), "forward");
    OT_OK(eo_cross_entropy(ot_ctx, ln, g->t, -100, &L), "forward");
    memset(g->w->grad->data, 0, sizeof(float) * (size_t)eo_numel(g->w));
    memset(g->b->grad->data, 0, sizeof(float) * (size_t)eo_numel(g->b));
    return L;
}

START_TEST(oom_sweep_backward)
{
    int64_t sx[2] = { 3, 5 }, sw[2] = { 4, 5 }, sb = 4, n3 = 3;
    int32_t tv[3] = { 1, 3, 0 };
    bwd_graph g = { ot_rand(2, sx, -1, 1, 1), ot_i32(1, &n3, tv), NULL, NULL };
    OT_OK(eo_param_new(ot_ctx, EO_CPU, "w", 2, sw, &g.w), "param");
    OT_OK(eo_param_new(ot_ctx, EO_CPU, "b", 1, &sb, &g.b), "param");
    const eo_tensor *wr = ot_rand(2, sw, -1, 1, 2), *br = ot_rand(1, &sb, -1, 1, 3);
    memcpy(g.w->data, wr->data, sizeof(float) * 20);
    memcpy(g.b->data, br->data, sizeof(float) * 4);

    /* The reference: plenty of room. */
    eo_mark m0 = eo_mark_get(ot_ctx);
    eo_tensor *L = bwd_forward(&g);
    size_t u0 = eo_arena_used(&ot_ctx->step);
    OT_OK(eo_backward(ot_ctx, L), "reference backward");
    size_t need = eo_arena_used(&ot_ctx->step) - u0;
    const double *gw_ref = ot_get(g.w->grad), *gb_ref = ot_get(g.b->grad);
    eo_rewind(ot_ctx, m0);

    int ooms = 0;
    for (size_t k = 0; k <= need + 256; k += 16) {
        eo_mark m = eo_mark_get(ot_ctx);
        L = bwd_forward(&g);
        leave_free(k);
        char what[96];
        snprintf(what, sizeof what, "backward with %zu of %zu bytes", k, need);
        eo_status st = eo_backward(ot_ctx, L);
        ck_assert_msg(st == EO_OK || st == EO_ERR_OOM, "%s: returned %s: %s", what,
                      eo_status_name(st), eo_last_error(ot_ctx));
        ck_assert_msg(ot_ctx->grad_enabled == 1, "%s: grad mode left off", what);
        if (st == EO_OK) {
            ot_expect_close(what, g.w->grad, gw_ref, 0, 0);
            ot_expect_close(what, g.b->grad, gb_ref, 0, 0);
        } else {
            ooms++;
            expect_oom_message(what);
        }
        eo_rewind(ot_ctx, m);
    }
    ck_assert_msg(ooms > 0, "backward never ran out of memory in the sweep");
    still_usable("backward sweep");
}
END_TEST

/* Issue 26, item 16: a NULL argument is reported as NULL, naming the
 * argument (eo_read with a NULL dst said "holds 48 bytes, asked for 48"),
 * and dtypes and devices are named, not numbered ("dtype 1", "device 1
 * is not open"). */
static void expect_msg(eo_status got, eo_status want, const char *call, const char *text)
{
    const char *msg = eo_last_error(ot_ctx);
    ck_assert_msg(got == want, "%s returned %s, expected %s: %s", call, eo_status_name(got),
                  eo_status_name(want), msg);
    ck_assert_msg(strstr(msg, text) != NULL, "%s: message \"%s\" lacks \"%s\"", call, msg, text);
}
#define MSG(call, want, text) expect_msg((call), (want), #call, (text))

START_TEST(null_arguments_are_named)
{
    bad_inputs t = make_inputs();
    eo_tensor *y;
    float buf[6];
    MSG(eo_read(ot_ctx, t.a, NULL, sizeof buf), EO_ERR_ARG, "read: NULL destination (dst)");
    MSG(eo_write(ot_ctx, t.a, NULL, sizeof buf), EO_ERR_ARG, "write: NULL source (src)");
    MSG(eo_add(ot_ctx, t.a, NULL, &y), EO_ERR_ARG, "add: NULL b");
    MSG(eo_sub(ot_ctx, NULL, t.a, &y), EO_ERR_ARG, "sub: NULL a");
    MSG(eo_matmul(ot_ctx, NULL, t.a, 0, 0, &y), EO_ERR_ARG, "matmul: NULL a");
    MSG(eo_matmul(ot_ctx, t.a, NULL, 0, 0, &y), EO_ERR_ARG, "matmul: NULL b");
    MSG(eo_cross_entropy(ot_ctx, t.a, NULL, -100, &y), EO_ERR_ARG, "cross_entropy: NULL target");
    MSG(eo_cross_entropy(ot_ctx, NULL, t.t2, -100, &y), EO_ERR_ARG, "cross_entropy: NULL logits");
    MSG(eo_embedding(ot_ctx, t.a, NULL, &y), EO_ERR_ARG, "embedding: NULL idx");
    MSG(eo_embedding(ot_ctx, NULL, t.ti, &y), EO_ERR_ARG, "embedding: NULL table");
    MSG(eo_conv2d(ot_ctx, t.x4, NULL, NULL, 0, 1, &y), EO_ERR_ARG, "conv2d: NULL w");
    MSG(eo_attention(ot_ctx, t.x4, NULL, t.x4, NULL, 0, 1.0f, &y), EO_ERR_ARG, "attention: NULL k");
    MSG(eo_attention_fused(ot_ctx, t.x4, t.x4, NULL, NULL, 0, 1.0f, &y), EO_ERR_ARG,
        "attention_fused: NULL v");
    MSG(eo_concat(ot_ctx, NULL, 2, 0, &y), EO_ERR_ARG, "concat: NULL tensor array");
    MSG(eo_copy_into(ot_ctx, t.a, NULL), EO_ERR_ARG, "copy_into: NULL source (src)");
    MSG(eo_permute(ot_ctx, t.a, NULL, &y), EO_ERR_ARG, "permute: NULL permutation");
    MSG(eo_padding_mask(ot_ctx, EO_CPU, 1, 2, NULL, &y), EO_ERR_ARG, "padding_mask: NULL valid");
    MSG(eo_causal_mask(ot_ctx, EO_CPU, 2, NULL), EO_ERR_ARG, "causal_mask: NULL output pointer");
    MSG(eo_params_add(ot_ctx, NULL, t.a), EO_ERR_ARG, "params_add: NULL parameter list");
    eo_params ps;
    OT_OK(eo_params_init(ot_ctx, &ps, 2), "params_init");
    MSG(eo_params_add(ot_ctx, &ps, NULL), EO_ERR_ARG, "params_add: NULL tensor");
    eo_module m;
    memset(&m, 0, sizeof m);
    MSG(eo_linear_init(ot_ctx, &ps, EO_CPU, NULL, 2, 2, 1, EO_INIT_KAIMING_UNIFORM, &m), EO_ERR_ARG,
        "NULL name prefix");
    MSG(eo_module_forward(ot_ctx, &m, NULL, &y), EO_ERR_ARG, "NULL input");
    still_usable("null_arguments_are_named");
}
END_TEST

START_TEST(dtypes_and_devices_are_named)
{
    bad_inputs t = make_inputs();
    eo_tensor *y;
    const int64_t s2[1] = { 2 };
    ck_assert_str_eq(eo_device_name(EO_CPU), "cpu");
    ck_assert_str_eq(eo_device_name(EO_CUDA), "cuda");
    ck_assert_str_eq(eo_device_name(EO_DEVICE_COUNT), "?");
    MSG(eo_ctx_set_autocast(ot_ctx, EO_I32), EO_ERR_ARG, "dtype i32 is not f32 (off), bf16 or f16");
    MSG(eo_ctx_set_autocast(ot_ctx, (eo_dtype)9), EO_ERR_ARG, "unknown dtype 9");
    eo_params ps;
    OT_OK(eo_params_init(ot_ctx, &ps, 1), "params_init");
    MSG(eo_params_enable_low(ot_ctx, &ps, EO_F32), EO_ERR_ARG, "dtype f32 is not bf16 or f16");
    /* ot_ctx has no CUDA device attached */
    MSG(eo_tensor_new(ot_ctx, EO_STEP, EO_CUDA, EO_F32, 1, s2, &y), EO_ERR_DEVICE,
        "device cuda is not open (eo_cuda_attach opens it)");
    MSG(eo_tensor_new(ot_ctx, EO_STEP, (eo_device)7, EO_F32, 1, s2, &y), EO_ERR_DEVICE,
        "unknown device 7");
    eo_tensor fake = *t.a;
    fake.device = EO_CUDA;
    MSG(eo_relu(ot_ctx, &fake, &y), EO_ERR_DEVICE, "is on device cuda, which is not open");
    still_usable("dtypes_and_devices_are_named");
}
END_TEST

Suite *eo_suite_ops_errors(void)
{
    Suite *s = suite_create("ops_errors");
    TCase *tc = tcase_create("statuses");
    tcase_add_checked_fixture(tc, ot_setup, ot_teardown);
    tcase_add_test(tc, shape_errors);
    tcase_add_test(tc, axis_errors);
    tcase_add_test(tc, dtype_errors);
    tcase_add_test(tc, arg_errors);
    tcase_add_test(tc, null_arguments_are_named);
    tcase_add_test(tc, dtypes_and_devices_are_named);
    tcase_add_test(tc, numeric_state_and_device_errors);
    tcase_add_test(tc, handles_and_empty_extents);
    tcase_add_test(tc, copy_into_overlapping_views);
    tcase_add_test(tc, rewound_handles_are_refused);
    tcase_add_test(tc, persistent_leaf_gradient_survives_rewind);
    tcase_add_test(tc, set_requires_grad_on_leaves_only);
    tcase_add_test(tc, oom_message_and_recovery);
    suite_add_tcase(s, tc);
    tc = tcase_create("oom_sweep");
    tcase_add_checked_fixture(tc, ot_setup, ot_teardown);
    tcase_add_loop_test(tc, oom_sweep_forward, 0, N_OOM);
    tcase_add_test(tc, oom_sweep_backward);
    tcase_set_timeout(tc, 30);
    suite_add_tcase(s, tc);
    return s;
}
