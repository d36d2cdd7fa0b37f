/* tests/test_autograd.c — the tape itself: fan-out accumulation, backward
 * twice, no-grad mode, broadcast reduction, errors that leave the context
 * usable, and a small MLP that learns XOR through the public API. */
#include <check.h>
#include <math.h>
#include <string.h>
#include "core/everyo.h"
#include "core/nn.h"
#include "tests/gradcheck.h"

static eo_tensor *scalar_param(eo_ctx *ctx, float v)
{
    eo_tensor *t;
    ck_assert_int_eq(eo_param_new(ctx, EO_CPU, "p", 0, NULL, &t), EO_OK);
    *(float *)t->data = v;
    return t;
}

START_TEST(fan_out_accumulates_and_backward_twice_adds_leaves_only)
{
    eo_ctx *ctx = eo_test_ctx(1, 4);
    eo_tensor *x = scalar_param(ctx, 3.0f), *y, *z;
    /* z = x*x + x  →  dz/dx = 2x + 1 = 7 */
    ck_assert_int_eq(eo_mul(ctx, x, x, &y), EO_OK);
    ck_assert_int_eq(eo_add(ctx, y, x, &z), EO_OK);
    ck_assert_int_eq(eo_backward_ex(ctx, z, 1), EO_OK); /* retain_graph */
    ck_assert_float_eq_tol(*(float *)x->grad->data, 7.0f, 1e-6f);
    ck_assert_float_eq_tol(*(float *)y->grad->data, 1.0f, 1e-6f);
    ck_assert_int_eq(eo_backward(ctx, z), EO_OK);
    ck_assert_float_eq_tol(*(float *)x->grad->data, 14.0f, 1e-6f); /* leaf: accumulated */
    ck_assert_float_eq_tol(*(float *)y->grad->data, 1.0f, 1e-6f);  /* intermediate: fresh */
    eo_test_ctx_free(ctx);
}
END_TEST

/* PyTorch's "Trying to backward through the graph a second time": a
 * backward through a node that an earlier backward (without
 * retain_graph) went through is refused before any gradient changes --
 * the same loss, a loss built on it, and a second loss that shares part
 * of the graph. It used to return EO_OK and add the leaves' gradients
 * again. A loss on a graph of its own still runs. */
START_TEST(backward_twice_is_refused_unless_retained)
{
    eo_ctx *ctx = eo_test_ctx(1, 4);
    eo_tensor *x = scalar_param(ctx, 3.0f), *y, *z, *z2, *w, *u;
    ck_assert_int_eq(eo_mul(ctx, x, x, &y), EO_OK);
    ck_assert_int_eq(eo_add(ctx, y, x, &z), EO_OK);
    ck_assert_int_eq(eo_scale(ctx, y, 2.0f, &w), EO_OK); /* shares y's node with z */
    ck_assert_int_eq(eo_backward(ctx, z), EO_OK);
    ck_assert_float_eq_tol(*(float *)x->grad->data, 7.0f, 1e-6f);
    ck_assert_int_eq(eo_backward(ctx, z), EO_ERR_STATE);
    ck_assert_ptr_nonnull(strstr(eo_last_error(ctx), "retain_graph"));
    ck_assert_float_eq_tol(*(float *)x->grad->data, 7.0f, 1e-6f);
    ck_assert_int_eq(eo_scale(ctx, z, 3.0f, &z2), EO_OK);
    ck_assert_int_eq(eo_backward(ctx, z2), EO_ERR_STATE);
    ck_assert_int_eq(eo_backward(ctx, w), EO_ERR_STATE);
    ck_assert_float_eq_tol(*(float *)x->grad->data, 7.0f, 1e-6f);
    ck_assert_int_eq(eo_mul(ctx, x, x, &u), EO_OK); /* a new forward */
    ck_assert_int_eq(eo_backward(ctx, u), EO_OK);
    ck_assert_float_eq_tol(*(float *)x->grad->data, 13.0f, 1e-6f);
    eo_test_ctx_free(ctx);
}
END_TEST

/* A leaf in the step arena, made before the step's mark (eo_tensor_wrap
 * over the caller's batch, given eo_set_requires_grad), whose gradient a
 * backward made after the mark: the rewind drops the gradient. It used to
 * keep pointing into the given-back memory, and the next step's backward
 * added into whatever had been put there. eo_sequential_plan rewinds the
 * same way. */
START_TEST(step_leaf_gradient_is_dropped_by_the_rewind)
{
    eo_ctx *ctx = eo_test_ctx(1, 4);
    float xv[4] = { 1, 2, 3, 4 };
    int64_t four = 4;
    eo_tensor *x;
    ck_assert_int_eq(eo_tensor_wrap(ctx, EO_F32, 1, &four, xv, &x), EO_OK);
    ck_assert_int_eq(eo_set_requires_grad(ctx, x, 1), EO_OK);
    for (int step = 0; step < 3; step++) {
        eo_mark m = eo_mark_get(ctx);
        eo_tensor *y, *filler, *L;
        ck_assert_int_eq(eo_mul(ctx, x, x, &y), EO_OK);
        ck_assert_int_eq(eo_sum_all(ctx, y, &L), EO_OK);
        ck_assert_int_eq(eo_backward(ctx, L), EO_OK);
        for (int i = 0; i < 4; i++) /* 2x, not accumulated over steps */
            ck_assert_float_eq(((float *)x->grad->data)[i], 2.0f * xv[i]);
        ck_assert_int_eq(eo_rewind(ctx, m), EO_OK);
        ck_assert_ptr_null(x->grad);
        /* what the next step puts where the gradient was */
        int64_t big = 4096;
        ck_assert_int_eq(eo_tensor_new(ctx, EO_STEP, EO_CPU, EO_F32, 1, &big, &filler), EO_OK);
        ck_assert_int_eq(eo_fill(ctx, filler, 100.0f), EO_OK);
        ck_assert_int_eq(eo_rewind(ctx, m), EO_OK);
    }
    /* a gradient made before the mark is the caller's to keep */
    eo_tensor *y, *L;
    ck_assert_int_eq(eo_mul(ctx, x, x, &y), EO_OK);
    ck_assert_int_eq(eo_sum_all(ctx, y, &L), EO_OK);
    ck_assert_int_eq(eo_backward(ctx, L), EO_OK);
    eo_mark m = eo_mark_get(ctx);
    eo_tensor *t;
    ck_assert_int_eq(eo_tensor_new(ctx, EO_STEP, EO_CPU, EO_F32, 1, &four, &t), EO_OK);
    ck_assert_int_eq(eo_rewind(ctx, m), EO_OK);
    ck_assert_ptr_nonnull(x->grad);
    ck_assert_float_eq(((float *)x->grad->data)[3], 8.0f);

    /* eo_sequential_plan: its backward reaches an input that requires
     * grad, and it rewinds before returning */
    eo_params ps;
    eo_module lin;
    eo_sequential net;
    int64_t xs[2] = { 2, 4 };
    eo_tensor *in, *target;
    float iv[8] = { 0 };
    int32_t tv[2] = { 0, 1 };
    ck_assert_int_eq(eo_params_init(ctx, &ps, 2), EO_OK);
    ck_assert_int_eq(eo_linear_init(ctx, &ps, EO_CPU, "l", 4, 3, 1, EO_INIT_KAIMING_UNIFORM,
                                    &lin), EO_OK);
    ck_assert_int_eq(eo_sequential_init(ctx, &net, 1), EO_OK);
    ck_assert_int_eq(eo_sequential_add(ctx, &net, lin), EO_OK);
    ck_assert_int_eq(eo_tensor_wrap(ctx, EO_F32, 2, xs, iv, &in), EO_OK);
    ck_assert_int_eq(eo_tensor_wrap(ctx, EO_I32, 1, xs, tv, &target), EO_OK);
    ck_assert_int_eq(eo_set_requires_grad(ctx, in, 1), EO_OK);
    eo_arena_needs needs;
    ck_assert_msg(eo_sequential_plan(ctx, &net, &ps, in, target, &needs) == EO_OK, "%s",
                  eo_last_error(ctx));
    ck_assert_ptr_null(in->grad);
    eo_test_ctx_free(ctx);
}
END_TEST

/* Marks nest. Rewinding an outer mark and then an inner one (taken after
 * it) used to put back the inner mark's tape over given-back memory, and
 * the next backward looped forever; now the stale mark is refused,
 * changing nothing, whether the arena is still below it or has grown
 * back past it. */
START_TEST(stale_mark_is_refused)
{
    eo_ctx *ctx = eo_test_ctx(1, 4);
    eo_tensor *x = scalar_param(ctx, 3.0f), *a, *b, *c, *L;
    eo_mark outer = eo_mark_get(ctx);
    ck_assert_int_eq(eo_mul(ctx, x, x, &a), EO_OK);
    eo_mark inner = eo_mark_get(ctx);
    ck_assert_int_eq(eo_add(ctx, a, x, &b), EO_OK);
    ck_assert_int_eq(eo_rewind(ctx, outer), EO_OK);
    eo_mark now = eo_mark_get(ctx);
    ck_assert_int_eq(eo_rewind(ctx, inner), EO_ERR_STATE);
    ck_assert_ptr_nonnull(strstr(eo_last_error(ctx), "rewind: a stale mark"));
    eo_mark after = eo_mark_get(ctx);
    ck_assert(after.host == now.host && after.tape == now.tape);
    /* the arena grows back past the inner mark with another tape */
    for (int i = 0; i < 4; i++)
        ck_assert_int_eq(eo_scale(ctx, x, 2.0f, &c), EO_OK);
    now = eo_mark_get(ctx);
    ck_assert_uint_gt(now.host, inner.host);
    ck_assert_int_eq(eo_rewind(ctx, inner), EO_ERR_STATE);
    after = eo_mark_get(ctx);
    ck_assert(after.host == now.host && after.tape == now.tape);
    ck_assert_int_eq(eo_mul(ctx, c, c, &L), EO_OK);
    ck_assert_int_eq(eo_backward(ctx, L), EO_OK); /* terminates */
    ck_assert_float_eq_tol(*(float *)x->grad->data, 24.0f, 1e-5f); /* 2c * 2, c = 6 */
    /* in order, every mark is good */
    eo_mark m1 = eo_mark_get(ctx);
    ck_assert_int_eq(eo_mul(ctx, x, x, &a), EO_OK);
    eo_mark m2 = eo_mark_get(ctx);
    ck_assert_int_eq(eo_mul(ctx, a, x, &b), EO_OK);
    ck_assert_int_eq(eo_rewind(ctx, m2), EO_OK);
    ck_assert_int_eq(eo_rewind(ctx, m1), EO_OK);
    ck_assert_int_eq(eo_rewind(ctx, m1), EO_OK); /* twice: nothing more to give back */
    ck_assert_int_eq(eo_rewind(NULL, m1), EO_ERR_ARG);
    eo_test_ctx_free(ctx);
}
END_TEST

START_TEST(no_grad_mode_records_nothing)
{
    eo_ctx *ctx = eo_test_ctx(1, 4);
    eo_tensor *x = scalar_param(ctx, 2.0f), *y;
    int was = eo_set_grad(ctx, 0);
    ck_assert_int_eq(eo_mul(ctx, x, x, &y), EO_OK);
    eo_set_grad(ctx, was);
    ck_assert_ptr_null(y->node);
    ck_assert_int_eq(y->requires_grad, 0);
    ck_assert_int_eq(eo_backward(ctx, y), EO_ERR_STATE);
    ck_assert_ptr_nonnull(strstr(eo_last_error(ctx), "does not require grad"));
    eo_test_ctx_free(ctx);
}
END_TEST

START_TEST(broadcast_gradient_is_summed)
{
    eo_ctx *ctx = eo_test_ctx(1, 4);
    int64_t sa[2] = { 3, 4 }, sb[1] = { 4 };
    eo_tensor *a = eo_test_rand(ctx, 2, sa, -1, 1, 1, 1), *b, *y, *L;
    ck_assert_int_eq(eo_param_new(ctx, EO_CPU, "b", 1, sb, &b), EO_OK);
    ck_assert_int_eq(eo_add(ctx, a, b, &y), EO_OK);
    ck_assert_int_eq(eo_sum_all(ctx, y, &L), EO_OK);
    ck_assert_int_eq(eo_backward(ctx, L), EO_OK);
    for (int i = 0; i < 4; i++)
        ck_assert_float_eq_tol(((float *)b->grad->data)[i], 3.0f, 1e-6f);
    eo_test_ctx_free(ctx);
}
END_TEST

/* Gradients that pass through unchanged are taken, not added (core/
 * tape.c), and a chain of views adds straight into the deepest gradient
 * (core/op_view.c). Against finite differences, x reaches the loss
 * through a chain of views (reshape, slice, transpose, contiguous) whose
 * reshape is also used on its own, as both operands of one add, as the
 * residual of another, and through sub with a broadcast bias. */
#define TRY(e)                                                                           \
    do {                                                                                 \
        eo_status st_ = (e);                                                             \
        if (st_ != EO_OK)                                                                \
            return st_;                                                                  \
    } while (0)

static eo_status gf_passthrough(eo_ctx *ctx, eo_tensor *const *in, void *user, eo_tensor **out)
{
    (void)user;
    eo_tensor *x = in[0], *y = in[1], *b = in[2], *r, *t, *c, *u, *v, *w, *a, *d, *L[4];
    const int64_t s4[4] = { 2, 3, 2, 4 };
    TRY(eo_reshape(ctx, x, 4, s4, &r));    /* [2, 3, 2, 4] */
    TRY(eo_slice(ctx, r, 2, 1, 1, &t));    /* [2, 3, 1, 4] */
    TRY(eo_transpose(ctx, t, 1, 3, &t));   /* [2, 4, 1, 3] */
    TRY(eo_contiguous(ctx, t, &c));
    TRY(eo_mul(ctx, c, c, &u));
    TRY(eo_sum_all(ctx, u, &L[0]));
    TRY(eo_mul(ctx, r, r, &v));            /* r feeds the chain and this */
    TRY(eo_sum_all(ctx, v, &L[1]));
    TRY(eo_add(ctx, x, x, &w));            /* one tensor as both operands */
    TRY(eo_add(ctx, w, x, &a));            /* a residual: both full shape */
    TRY(eo_mul(ctx, a, y, &a));
    TRY(eo_sum_all(ctx, a, &L[2]));
    TRY(eo_sub(ctx, y, x, &d));
    TRY(eo_sub(ctx, d, b, &d));            /* broadcast bias on the right */
    TRY(eo_mul(ctx, d, d, &d));
    TRY(eo_sum_all(ctx, d, &L[3]));
    TRY(eo_add(ctx, L[0], L[1], &L[0]));
    TRY(eo_add(ctx, L[0], L[2], &L[0]));
    return eo_add(ctx, L[0], L[3], out);
}

START_TEST(pass_through_gradients_and_view_chains)
{
    eo_ctx *ctx = eo_test_ctx(1, 8);
    const int64_t sx[3] = { 2, 3, 8 }, sb[1] = { 8 };
    eo_tensor *in[3] = { eo_test_rand(ctx, 3, sx, -1, 1, 1, 11),
                         eo_test_rand(ctx, 3, sx, -1, 1, 1, 12),
                         eo_test_rand(ctx, 1, sb, -1, 1, 1, 13) };
    char msg[256];
    ck_assert_msg(eo_gradcheck(ctx, gf_passthrough, in, 3, NULL, NULL, msg, sizeof msg), "%s",
                  msg);
    eo_test_ctx_free(ctx);
}
END_TEST

START_TEST(errors_name_the_op_and_leave_context_usable)
{
    eo_ctx *ctx = eo_test_ctx(1, 1);
    int64_t s1[2] = { 2, 3 }, s2[2] = { 4, 5 };
    eo_tensor *a = eo_test_rand(ctx, 2, s1, 0, 1, 1, 0), *b = eo_test_rand(ctx, 2, s2, 0, 1, 2, 0), *y;
    ck_assert_int_eq(eo_add(ctx, a, b, &y), EO_ERR_SHAPE);
    ck_assert_ptr_nonnull(strstr(eo_last_error(ctx), "add"));
    ck_assert_ptr_nonnull(strstr(eo_last_error(ctx), "[2x3 f32]"));
    ck_assert_int_eq(eo_matmul(ctx, a, b, 0, 0, &y), EO_ERR_SHAPE);
    ck_assert_int_eq(eo_sum(ctx, a, 2, 0, &y), EO_ERR_AXIS);
    ck_assert_int_eq(eo_add(ctx, NULL, b, &y), EO_ERR_ARG);
    /* 64 MiB: more than the 1 MiB arena, yet a size every target can
     * address (4 GiB would be refused as too large on a 32-bit one). */
    int64_t huge[2] = { 1 << 14, 1 << 10 };
    eo_tensor *h;
    ck_assert_int_eq(eo_tensor_new(ctx, EO_STEP, EO_CPU, EO_F32, 2, huge, &h), EO_ERR_OOM);
    ck_assert_msg(strstr(eo_last_error(ctx), "need 671088") != NULL, "%s", eo_last_error(ctx));
    /* An op's out-of-memory message names the op: b is a view of a small
     * buffer, so only the [2 x 2^24] output cannot be allocated. */
    float small[3];
    int64_t wide[2] = { 3, (int64_t)1 << 24 };
    eo_tensor *bw;
    ck_assert_int_eq(eo_tensor_wrap(ctx, EO_F32, 2, wide, small, &bw), EO_OK);
    ck_assert_int_eq(eo_matmul(ctx, a, bw, 0, 0, &y), EO_ERR_OOM);
    ck_assert_ptr_nonnull(strstr(eo_last_error(ctx), "matmul: arena 'step': need"));
    int64_t s3[2] = { 3, 2 };
    eo_tensor *c = eo_test_rand(ctx, 2, s3, 0, 1, 3, 0);
    ck_assert_int_eq(eo_matmul(ctx, a, c, 0, 0, &y), EO_OK); /* still usable */
    eo_test_ctx_free(ctx);
}
END_TEST

START_TEST(mlp_learns_xor)
{
    eo_ctx *ctx = eo_test_ctx(1, 4);
    eo_seed(ctx, 42);
    eo_params ps;
    eo_sequential net;
    eo_module l1, l2;
    ck_assert_int_eq(eo_params_init(ctx, &ps, 8), EO_OK);
    ck_assert_int_eq(eo_sequential_init(ctx, &net, 4), EO_OK);
    ck_assert_int_eq(eo_linear_init(ctx, &ps, EO_CPU, "0", 2, 16, 1, EO_INIT_KAIMING_UNIFORM, &l1), EO_OK);
    ck_assert_int_eq(eo_linear_init(ctx, &ps, EO_CPU, "2", 16, 2, 1, EO_INIT_KAIMING_UNIFORM, &l2), EO_OK);
    eo_sequential_add(ctx, &net, l1);
    eo_sequential_add(ctx, &net, eo_tanh_module());
    eo_sequential_add(ctx, &net, l2);
    eo_optimizer opt;
    ck_assert_int_eq(eo_adamw_init(ctx, &opt, &ps, 0.05f, 0.9f, 0.999f, 1e-8f, 0.0f), EO_OK);
    float xs[8] = { 0, 0, 0, 1, 1, 0, 1, 1 };
    int32_t ys[4] = { 0, 1, 1, 0 };
    int64_t sx[2] = { 4, 2 }, sy[1] = { 4 };
    float loss = 1;
    for (int step = 0; step < 300; step++) {
        eo_mark m = eo_mark_get(ctx);
        eo_tensor *x, *y, *logits, *L;
        ck_assert_int_eq(eo_tensor_wrap(ctx, EO_F32, 2, sx, xs, &x), EO_OK);
        ck_assert_int_eq(eo_tensor_wrap(ctx, EO_I32, 1, sy, ys, &y), EO_OK);
        ck_assert_int_eq(eo_params_zero_grad(ctx, &ps), EO_OK);
        ck_assert_int_eq(eo_sequential_forward(ctx, &net, x, &logits), EO_OK);
        ck_assert_int_eq(eo_cross_entropy(ctx, logits, y, -100, &L), EO_OK);
        ck_assert_int_eq(eo_backward(ctx, L), EO_OK);
        ck_assert_int_eq(eo_optimizer_step(ctx, &opt), EO_OK);
        loss = *(float *)L->data;
        eo_rewind(ctx, m);
    }
    ck_assert_float_lt(loss, 0.01f);
    eo_test_ctx_free(ctx);
}
END_TEST

/* eo_sequential_forward runs a ReLU followed by a max pool as one op
 * (eo_relu_maxpool2d): the output and every gradient are the same bits
 * as the layers run one by one (eo_module_forward), on conv -> ReLU ->
 * pool -> conv -> ReLU -> pool with odd sizes and a fan-out of the
 * input's gradient. */
START_TEST(sequential_relu_pool_fusion_changes_nothing)
{
    eo_ctx *ctx = eo_test_ctx(2, 16);
    eo_seed(ctx, 7);
    eo_params ps;
    eo_sequential net;
    eo_module c1, c2;
    ck_assert_int_eq(eo_params_init(ctx, &ps, 8), EO_OK);
    ck_assert_int_eq(eo_sequential_init(ctx, &net, 6), EO_OK);
    ck_assert_int_eq(eo_conv2d_init(ctx, &ps, EO_CPU, "0", 2, 3, 3, 1, 1, &c1), EO_OK);
    ck_assert_int_eq(eo_conv2d_init(ctx, &ps, EO_CPU, "3", 3, 4, 3, 1, 1, &c2), EO_OK);
    eo_sequential_add(ctx, &net, c1);
    eo_sequential_add(ctx, &net, eo_relu_module());
    eo_sequential_add(ctx, &net, eo_maxpool2d_module(2));
    eo_sequential_add(ctx, &net, c2);
    eo_sequential_add(ctx, &net, eo_relu_module());
    eo_sequential_add(ctx, &net, eo_maxpool2d_module(2));
    const int64_t sx[4] = {3, 2, 11, 9};
    float out[2][3 * 4 * 2 * 2], gx[2][3 * 2 * 11 * 9], gw[2][4 * 3 * 9];
    for (int fused = 0; fused < 2; fused++) {
        eo_mark m = eo_mark_get(ctx);
        eo_tensor *x, *y, *L, *y2;
        ck_assert_int_eq(eo_tensor_zeros(ctx, EO_STEP, EO_CPU, EO_F32, 4, sx, &x), EO_OK);
        float *xv = x->data;
        for (int i = 0; i < 3 * 2 * 11 * 9; i++)
            xv[i] = (float)((i * 37) % 23) / 7.0f - 1.5f;
        x->requires_grad = 1;
        ck_assert_int_eq(eo_params_zero_grad(ctx, &ps), EO_OK);
        if (fused) {
            ck_assert_int_eq(eo_sequential_forward(ctx, &net, x, &y), EO_OK);
        } else {
            y = x;
            for (int i = 0; i < net.count; i++)
                ck_assert_int_eq(eo_module_forward(ctx, &net.mods[i], y, &y), EO_OK);
        }
        ck_assert_int_eq(eo_mul(ctx, y, y, &y2), EO_OK);
        ck_assert_int_eq(eo_sum_all(ctx, y2, &L), EO_OK);
        ck_assert_int_eq(eo_backward(ctx, L), EO_OK);
        ck_assert_int_eq((int)eo_numel(y), 3 * 4 * 2 * 2);
        memcpy(out[fused], y->data, sizeof out[0]);
        memcpy(gx[fused], x->grad->data, sizeof gx[0]);
        memcpy(gw[fused], c2.w->grad->data, sizeof gw[0]);
        eo_rewind(ctx, m);
    }
    ck_assert(memcmp(out[0], out[1], sizeof out[0]) == 0);
    ck_assert(memcmp(gx[0], gx[1], sizeof gx[0]) == 0);
    ck_assert(memcmp(gw[0], gw[1], sizeof gw[0]) == 0);
    eo_test_ctx_free(ctx);
}
END_TEST

/* The profiling hook hears every public call and every backward rule in
 * properly nested begin/end pairs, also around a call that fails, and
 * changes no result. */
typedef struct prof_log {
    int open, max_depth, bad, calls, rules, mul_rule;
} prof_log;

static void prof_event(void *user, const char *name, eo_profile_dir dir, int end, int depth)
{
    prof_log *l = user;
    if (!end) {
        if (depth != l->open + 1)
            l->bad++;
        l->open++;
        l->max_depth = depth > l->max_depth ? depth : l->max_depth;
        *(dir == EO_PROFILE_FORWARD ? &l->calls : &l->rules) += 1;
        if (dir == EO_PROFILE_BACKWARD && !strcmp(name, "mul"))
            l->mul_rule++;
    } else {
        if (depth != l->open)
            l->bad++;
        l->open--;
    }
}

START_TEST(profile_hook_nests_and_changes_nothing)
{
    float grads[2];
    for (int hooked = 0; hooked < 2; hooked++) {
        eo_ctx *ctx = eo_test_ctx(1, 4);
        prof_log l = {0};
        if (hooked) {
            eo_profile_hook h = {prof_event, &l};
            eo_ctx_set_profile(ctx, h);
        }
        eo_tensor *x = scalar_param(ctx, 3.0f), *y, *z;
        ck_assert_int_eq(eo_mul(ctx, x, x, &y), EO_OK);
        ck_assert_int_eq(eo_add(ctx, y, x, &z), EO_OK);
        ck_assert_int_eq(eo_backward(ctx, z), EO_OK);
        ck_assert_int_eq(eo_add(ctx, NULL, x, &z), EO_ERR_ARG); /* fails: still a pair */
        grads[hooked] = *(float *)x->grad->data;
        if (hooked) {
            ck_assert_int_eq(l.open, 0);
            ck_assert_int_eq(l.bad, 0);
            ck_assert_int_ge(l.calls, 4);      /* mul, add, backward, the failed add */
            ck_assert_int_eq(l.rules, 2);      /* add's rule and mul's */
            ck_assert_int_eq(l.mul_rule, 1);
            ck_assert_int_ge(l.max_depth, 2);  /* the rules run inside backward */
        }
        eo_test_ctx_free(ctx);
    }
    ck_assert_float_eq(grads[0], grads[1]);
}
END_TEST

Suite *eo_suite_autograd(void)
{
    Suite *s = suite_create("autograd");
    TCase *tc = tcase_create("autograd");
    tcase_add_test(tc, fan_out_accumulates_and_backward_twice_adds_leaves_only);
    tcase_add_test(tc, backward_twice_is_refused_unless_retained);
    tcase_add_test(tc, step_leaf_gradient_is_dropped_by_the_rewind);
    tcase_add_test(tc, stale_mark_is_refused);
    tcase_add_test(tc, no_grad_mode_records_nothing);
    tcase_add_test(tc, broadcast_gradient_is_summed);
    tcase_add_test(tc, pass_through_gradients_and_view_chains);
    tcase_add_test(tc, errors_name_the_op_and_leave_context_usable);
    tcase_add_test(tc, mlp_learns_xor);
    tcase_add_test(tc, sequential_relu_pool_fusion_changes_nothing);
    tcase_add_test(tc, profile_hook_nests_and_changes_nothing);
    suite_add_tcase(s, tc);
    return s;
}
