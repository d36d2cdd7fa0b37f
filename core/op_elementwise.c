/* core/op_elementwise.c — add, sub, mul, div, maximum, minimum with
 * broadcasting; scale and the unary activations.
 *
 * Broadcasting follows NumPy: align shapes at the right, and an axis of
 * size 1 stretches to match the other. No data is copied: the stretched
 * operand simply gets stride 0 on that axis. The backward uses the same
 * trick in reverse — the input's gradient buffer is given stride 0 on the
 * broadcast axes, so "+=" there sums over them, which is exactly the
 * reduction the chain rule asks for. */
#include "core/internal.h"

static const eo_binop binop_of[EO_OP_COUNT] = {
    [EO_OP_ADD] = EO_BIN_ADD, [EO_OP_SUB] = EO_BIN_SUB,
    [EO_OP_MUL] = EO_BIN_MUL, [EO_OP_DIV] = EO_BIN_DIV,
    [EO_OP_MAXIMUM] = EO_BIN_MAX, [EO_OP_MINIMUM] = EO_BIN_MIN,
};

/* 4-D strides of t seen through the broadcast shape `shape` (0 where t has
 * size 1 and the output more). */
static void broadcast_strides(const eo_tensor *t, const int64_t shape[4], int64_t st[4])
{
    int64_t ts[4];
    eo_pad4(t, ts, st);
    for (int i = 0; i < 4; i++)
        if (ts[i] != shape[i])
            st[i] = 0;
}

static eo_status binary(eo_ctx *ctx, eo_op_id id, eo_tensor *a, eo_tensor *b, eo_tensor **out);

static eo_status binary_body(eo_ctx *ctx, eo_op_id id, eo_tensor *a, eo_tensor *b,
                             eo_tensor **out)
{
    const char *op = eo_op_names[id];
    if (!out)
        return eo_fail(ctx, EO_ERR_ARG, "%s: NULL output pointer", op);
    EO_NONNULL(ctx, op, a);
    EO_NONNULL(ctx, op, b);
    EO_CHECK(eo_expect_any(ctx, op, a));
    EO_CHECK(eo_expect_any(ctx, op, b));
    eo_tensor *h[2] = { a, b };
    /* Autocast: a 16-bit operand of the autocast dtype meeting an f32 one
     * (a bias, a position table, a parameter's view) casts the f32 one
     * down, a parameter through its working copy, instead of PyTorch's
     * promotion to f32, which would widen the activation (core/autocast.c). */
    if (ctx->autocast != EO_F32 && (a->dtype == ctx->autocast) != (b->dtype == ctx->autocast) &&
        (a->dtype == EO_F32 || b->dtype == EO_F32) && eo_is_float(a->dtype) &&
        eo_is_float(b->dtype))
        EO_AUTOCAST(ctx, EO_AUTOCAST_LOW, h, 2, binary(ctx, id, h[0], h[1], out));
    /* bf16 / f16: both operands of one 16-bit dtype run in the backend's
     * 16-bit kernel (its backward too when a gradient will be needed);
     * anything else through f32, with PyTorch's promotion (core/op_cast.c). */
    const eo_backend *be = eo_backend_of(ctx, a);
    const eo_dtype dt = a->dtype;
    const int native16 = eo_is_half(dt) && b->dtype == dt && a->device == b->device &&
                         be->binary16 && (be->binary_backward16 || !eo_needs_grad(ctx, h, 2));
    if (!native16)
        EO_HALF_FALLBACK(ctx, op, h, 2, 1, out, binary(ctx, id, h[0], h[1], out));
    EO_CHECK(eo_expect(ctx, op, a, native16 ? dt : EO_F32));
    EO_CHECK(eo_expect(ctx, op, b, native16 ? dt : EO_F32));
    EO_CHECK(eo_same_device(ctx, op, a, b));
    int64_t sa4[4], sb4[4], ta[4], tb[4], shape[4];
    eo_pad4(a, sa4, ta);
    eo_pad4(b, sb4, tb);
    for (int i = 0; i < 4; i++) {
        if (sa4[i] != sb4[i] && sa4[i] != 1 && sb4[i] != 1)
            return eo_fail(ctx, EO_ERR_SHAPE,
                           "%s: shapes %T and %T do not broadcast (sizes must match or be 1)",
                           op, a, b);
        shape[i] = sa4[i] == 1 ? sb4[i] : sa4[i];
    }
    int rank = a->rank > b->rank ? a->rank : b->rank;
    if (!native16)
        EO_NEED_KERNEL(ctx, op, be, binary);
    eo_tensor *y;
    EO_CHECK(eo_new_out(ctx, a->device, dt, rank, shape + 4 - rank, &y));
    int64_t sa[4], sb[4], sy[4];
    broadcast_strides(a, shape, sa);
    broadcast_strides(b, shape, sb);
    eo_pad4(y, shape, sy);
    if (native16) /* strided and broadcast operands as the f32 kernel takes them */
        be->binary16(binop_of[id], (int)dt, shape, y->data, sy, a->data, sa, b->data, sb,
                     &ctx->exec);
    else
        be->binary(binop_of[id], shape, y->data, sy, a->data, sa, b->data, sb, &ctx->exec);
    eo_tensor *in[2] = { a, b };
    if (eo_needs_grad(ctx, in, 2))
        EO_CHECK(eo_record(ctx, id, in, 2, y, NULL));
    *out = y;
    return EO_OK;
}

static eo_status binary(eo_ctx *ctx, eo_op_id id, eo_tensor *a, eo_tensor *b, eo_tensor **out)
{
    EO_RUN(ctx, eo_op_names[id], binary_body(ctx, id, a, b, out));
}

static int same_shape(const eo_tensor *a, const eo_tensor *b)
{
    if (a->rank != b->rank)
        return 0;
    for (int i = 0; i < a->rank; i++)
        if (a->shape[i] != b->shape[i])
            return 0;
    return 1;
}

static eo_status binary_backward(eo_ctx *ctx, eo_node *n)
{
    eo_tensor *a = n->in[0], *b = n->in[1], *y = n->out, *ga = NULL, *gb = NULL;
    const eo_backend *be = eo_backend_of(ctx, y);
    const int native16 = eo_is_half(y->dtype); /* recorded by the 16-bit forward */
    if (native16)
        EO_NEED_KERNEL(ctx, eo_op_names[n->op], be, binary_backward16);
    else
        EO_NEED_KERNEL(ctx, eo_op_names[n->op], be, binary_backward);
    /* add and sub pass dy unchanged to an operand of y's own shape (the
     * residual stream, a bias add's activation): that operand takes or
     * adds dy directly (eo_grad_add) instead of the kernel's zero fill
     * and add; only what is left (a broadcast operand's sum, sub's -dy)
     * goes to the kernel. The operands must differ: x + x adds twice. */
    int need_a = a->requires_grad, need_b = b->requires_grad, took = 0;
    if ((n->op == EO_OP_ADD || n->op == EO_OP_SUB) && a != b) {
        if (need_a && same_shape(a, y) && eo_grad_passes(a, y->grad)) {
            EO_CHECK(eo_grad_add(ctx, a, y->grad, 1));
            need_a = 0;
            took = 1;
        }
        if (n->op == EO_OP_ADD && need_b && same_shape(b, y) && eo_grad_passes(b, y->grad)) {
            EO_CHECK(eo_grad_add(ctx, b, y->grad, !took));
            need_b = 0;
        }
        if (!need_a && !need_b)
            return EO_OK;
    }
    if (need_a)
        EO_CHECK(eo_grad_of(ctx, a, &ga));
    if (need_b)
        EO_CHECK(eo_grad_of(ctx, b, &gb));
    int64_t shape[4], sy[4], sa[4], sb[4], sga[4] = {0}, sgb[4] = {0};
    eo_pad4(y, shape, sy);
    broadcast_strides(a, shape, sa);
    broadcast_strides(b, shape, sb);
    if (ga)
        broadcast_strides(ga, shape, sga);
    if (gb)
        broadcast_strides(gb, shape, sgb);
    if (native16) /* gradients of the operands' dtype; broadcast sums in f32 */
        be->binary_backward16(binop_of[n->op], (int)y->dtype, shape, y->grad->data, sy, a->data,
                              sa, b->data, sb, ga ? ga->data : NULL, sga,
                              gb ? gb->data : NULL, sgb, &ctx->exec);
    else
        be->binary_backward(binop_of[n->op], shape, y->grad->data, sy, a->data, sa, b->data,
                            sb, ga ? ga->data : NULL, sga, gb ? gb->data : NULL, sgb,
                            &ctx->exec);
    return EO_OK;
}

eo_status eo_add(eo_ctx *ctx, eo_tensor *a, eo_tensor *b, eo_tensor **out) { return binary(ctx, EO_OP_ADD, a, b, out); }
eo_status eo_sub(eo_ctx *ctx, eo_tensor *a, eo_tensor *b, eo_tensor **out) { return binary(ctx, EO_OP_SUB, a, b, out); }
eo_status eo_mul(eo_ctx *ctx, eo_tensor *a, eo_tensor *b, eo_tensor **out) { return binary(ctx, EO_OP_MUL, a, b, out); }
eo_status eo_div(eo_ctx *ctx, eo_tensor *a, eo_tensor *b, eo_tensor **out) { return binary(ctx, EO_OP_DIV, a, b, out); }
eo_status eo_bwd_add(eo_ctx *ctx, eo_node *n) { return binary_backward(ctx, n); }
eo_status eo_bwd_sub(eo_ctx *ctx, eo_node *n) { return binary_backward(ctx, n); }
eo_status eo_bwd_mul(eo_ctx *ctx, eo_node *n) { return binary_backward(ctx, n); }
eo_status eo_bwd_div(eo_ctx *ctx, eo_node *n) { return binary_backward(ctx, n); }
eo_status eo_maximum(eo_ctx *ctx, eo_tensor *a, eo_tensor *b, eo_tensor **out) { return binary(ctx, EO_OP_MAXIMUM, a, b, out); }
eo_status eo_minimum(eo_ctx *ctx, eo_tensor *a, eo_tensor *b, eo_tensor **out) { return binary(ctx, EO_OP_MINIMUM, a, b, out); }
eo_status eo_bwd_maximum(eo_ctx *ctx, eo_node *n) { return binary_backward(ctx, n); }
eo_status eo_bwd_minimum(eo_ctx *ctx, eo_node *n) { return binary_backward(ctx, n); }

/* ---- unary ---------------------------------------------------------------- */

static const eo_unop unop_of[EO_OP_COUNT] = {
    [EO_OP_SCALE] = EO_UN_SCALE, [EO_OP_RELU] = EO_UN_RELU, [EO_OP_GELU] = EO_UN_GELU_TANH,
    [EO_OP_GELU_ERF] = EO_UN_GELU_ERF, [EO_OP_TANH] = EO_UN_TANH,
    [EO_OP_SIGMOID] = EO_UN_SIGMOID, [EO_OP_EXP] = EO_UN_EXP, [EO_OP_LOG] = EO_UN_LOG,
};

/* The native 16-bit forward: output in x's dtype, the same tape node as
 * the f32 op (its backward rule dispatches on the dtype). */
static eo_status unary16(eo_ctx *ctx, eo_op_id id, eo_unop k, float alpha, eo_tensor *x,
                         eo_tensor **out)
{
    EO_CHECK(eo_contiguous(ctx, x, &x));
    const eo_backend *be = eo_backend_of(ctx, x);
    eo_tensor *y;
    EO_CHECK(eo_new_out(ctx, x->device, x->dtype, x->rank, x->shape, &y));
    be->unary16(k, (int)x->dtype, eo_numel(x), x->data, y->data, alpha, &ctx->exec);
    if (eo_needs_grad(ctx, &x, 1)) {
        eo_node *nd;
        EO_CHECK(eo_record(ctx, id, &x, 1, y, &nd));
        nd->p.scale.s = alpha;
    }
    *out = y;
    return EO_OK;
}

static eo_status unary_body(eo_ctx *ctx, eo_op_id id, eo_unop k, float alpha, eo_tensor *x,
                           eo_tensor **out)
{
    const char *op = eo_op_names[id];
    if (!out)
        return eo_fail(ctx, EO_ERR_ARG, "%s: NULL output pointer", op);
    eo_tensor *ac[1] = { x };
    if (id == EO_OP_EXP || id == EO_OP_LOG) /* autocast's f32 list */
        EO_AUTOCAST(ctx, EO_AUTOCAST_F32, ac, 1, eo_unary_op(ctx, id, k, alpha, ac[0], out));
    /* bf16 / f16: the backend's 16-bit kernels, else through f32 (core/
     * op_cast.c; also for log, whose domain check reads f32 values). */
    EO_CHECK(eo_expect_any(ctx, op, x));
    const eo_backend *be16 = eo_backend_of(ctx, x);
    const int native16 = eo_is_half(x->dtype) && k != EO_UN_LOG && be16->unary16 &&
                         be16->unary_backward16;
    eo_tensor *h[1] = { x };
    if (!native16)
        EO_HALF_FALLBACK(ctx, op, h, 1, 0, out, eo_unary_op(ctx, id, k, alpha, h[0], out));
    else if (eo_is_half(x->dtype))
        return unary16(ctx, id, k, alpha, x, out);
    EO_CHECK(eo_expect(ctx, op, x, EO_F32));
    /* The domain check below reads the contiguous copy; if it fails, the
     * copy and its tape node are undone so a failed call leaves nothing. */
    eo_mark before = eo_mark_get(ctx);
    EO_CHECK(eo_contiguous(ctx, x, &x));
    const eo_backend *be = eo_backend_of(ctx, x);
    EO_NEED_KERNEL(ctx, op, be, unary);
    int64_t n = eo_numel(x);
    if (k == EO_UN_LOG && x->device == EO_CPU) {
        const float *v = x->data;
        for (int64_t i = 0; i < n; i++)
            if (!(v[i] > 0.0f)) {
                eo_status s = eo_fail(ctx, EO_ERR_NUMERIC,
                                      "log: element %lld of %T is %f; log needs positive input",
                                      (long long)i, x, (double)v[i]);
                eo_rewind(ctx, before);
                return s;
            }
    }
    eo_tensor *y;
    EO_CHECK(eo_new_out(ctx, x->device, EO_F32, x->rank, x->shape, &y));
    be->unary(k, n, x->data, y->data, alpha, &ctx->exec);
    if (eo_needs_grad(ctx, &x, 1)) {
        eo_node *nd;
        EO_CHECK(eo_record(ctx, id, &x, 1, y, &nd));
        nd->p.scale.s = alpha;
    }
    *out = y;
    return EO_OK;
}

eo_status eo_unary_op(eo_ctx *ctx, eo_op_id id, eo_unop k, float alpha, eo_tensor *x,
                      eo_tensor **out)
{
    EO_RUN(ctx, eo_op_names[id], unary_body(ctx, id, k, alpha, x, out));
}

static eo_status unary_backward(eo_ctx *ctx, eo_node *n)
{
    eo_tensor *x = n->in[0], *y = n->out, *g;
    if (!x->requires_grad)
        return EO_OK;
    const eo_backend *be = eo_backend_of(ctx, y);
    if (eo_is_half(x->dtype)) { /* recorded by unary16: gradients of x's dtype */
        EO_NEED_KERNEL(ctx, eo_op_names[n->op], be, unary_backward16);
        EO_CHECK(eo_grad_of(ctx, x, &g));
        be->unary_backward16(unop_of[n->op], (int)x->dtype, eo_numel(x), x->data, y->data,
                             y->grad->data, g->data, n->p.scale.s, &ctx->exec);
        return EO_OK;
    }
    EO_NEED_KERNEL(ctx, eo_op_names[n->op], be, unary_backward);
    int set; /* a fresh gradient written by the _set kernel (ops/kernels.h) */
    EO_CHECK(eo_grad_for_set(ctx, x, be->unary_backward_set != NULL, &g, &set));
    (set ? be->unary_backward_set : be->unary_backward)(
        unop_of[n->op], eo_numel(x), x->data, y->data, y->grad->data, g->data, n->p.scale.s,
        &ctx->exec);
    return EO_OK;
}

eo_status eo_scale(eo_ctx *ctx, eo_tensor *x, float s, eo_tensor **out) { return eo_unary_op(ctx, EO_OP_SCALE, EO_UN_SCALE, s, x, out); }
eo_status eo_relu(eo_ctx *ctx, eo_tensor *x, eo_tensor **out) { return eo_unary_op(ctx, EO_OP_RELU, EO_UN_RELU, 0, x, out); }
eo_status eo_gelu(eo_ctx *ctx, eo_tensor *x, eo_tensor **out) { return eo_unary_op(ctx, EO_OP_GELU, EO_UN_GELU_TANH, 0, x, out); }
eo_status eo_gelu_erf(eo_ctx *ctx, eo_tensor *x, eo_tensor **out) { return eo_unary_op(ctx, EO_OP_GELU_ERF, EO_UN_GELU_ERF, 0, x, out); }
eo_status eo_tanh(eo_ctx *ctx, eo_tensor *x, eo_tensor **out) { return eo_unary_op(ctx, EO_OP_TANH, EO_UN_TANH, 0, x, out); }
eo_status eo_sigmoid(eo_ctx *ctx, eo_tensor *x, eo_tensor **out) { return eo_unary_op(ctx, EO_OP_SIGMOID, EO_UN_SIGMOID, 0, x, out); }
eo_status eo_exp(eo_ctx *ctx, eo_tensor *x, eo_tensor **out) { return eo_unary_op(ctx, EO_OP_EXP, EO_UN_EXP, 0, x, out); }
eo_status eo_log(eo_ctx *ctx, eo_tensor *x, eo_tensor **out) { return eo_unary_op(ctx, EO_OP_LOG, EO_UN_LOG, 0, x, out); }
eo_status eo_bwd_scale(eo_ctx *ctx, eo_node *n) { return unary_backward(ctx, n); }
eo_status eo_bwd_relu(eo_ctx *ctx, eo_node *n) { return unary_backward(ctx, n); }
eo_status eo_bwd_gelu(eo_ctx *ctx, eo_node *n) { return unary_backward(ctx, n); }
eo_status eo_bwd_gelu_erf(eo_ctx *ctx, eo_node *n) { return unary_backward(ctx, n); }
eo_status eo_bwd_tanh(eo_ctx *ctx, eo_node *n) { return unary_backward(ctx, n); }
eo_status eo_bwd_sigmoid(eo_ctx *ctx, eo_node *n) { return unary_backward(ctx, n); }
eo_status eo_bwd_exp(eo_ctx *ctx, eo_node *n) { return unary_backward(ctx, n); }
eo_status eo_bwd_log(eo_ctx *ctx, eo_node *n) { return unary_backward(ctx, n); }
