/* core/op_reduce.c — sum, mean, max and log-sum-exp over one axis.
 *
 * Any axis of a contiguous tensor splits it into [outer, n, inner]: the
 * kernel reduces the middle index. That one view serves every axis and
 * rank, so there is one kernel instead of one per axis. Log-sum-exp has
 * its own kernel pair (its backward needs x and the output, not an
 * argmax), behind the same shape rule. */
#include "core/internal.h"

static const eo_redop redop_of[EO_OP_COUNT] = {
    [EO_OP_SUM] = EO_RED_SUM, [EO_OP_MEAN] = EO_RED_MEAN, [EO_OP_MAX] = EO_RED_MAX,
};

static void split(const eo_tensor *x, int a, int64_t *outer, int64_t *n, int64_t *inner)
{
    *outer = *inner = 1;
    for (int i = 0; i < a; i++) *outer *= x->shape[i];
    for (int i = a + 1; i < x->rank; i++) *inner *= x->shape[i];
    *n = x->shape[a];
}

static eo_status reduce(eo_ctx *ctx, eo_op_id id, eo_tensor *x, int axis, int keepdim,
                        eo_tensor **out);

static eo_status reduce_body(eo_ctx *ctx, eo_op_id id, eo_tensor *x, int axis, int keepdim,
                             eo_tensor **out)
{
    const char *op = eo_op_names[id];
    if (!out)
        return eo_fail(ctx, EO_ERR_ARG, "%s: NULL output pointer", op);
    eo_tensor *h[1] = { x }; /* bf16 / f16: through f32 (core/op_cast.c) */
    EO_HALF_FALLBACK(ctx, op, h, 1, 0, out, reduce(ctx, id, h[0], axis, keepdim, out));
    EO_CHECK(eo_expect(ctx, op, x, EO_F32));
    int a = eo_axis(axis, x->rank);
    if (a < 0)
        return eo_fail(ctx, EO_ERR_AXIS, "%s: axis %d out of range for %T", op, axis, x);
    if (id == EO_OP_MAX && x->shape[a] == 0)
        return eo_fail(ctx, EO_ERR_SHAPE, "max: axis %d of %T is empty", a, x);
    EO_CHECK(eo_contiguous(ctx, x, &x));
    const eo_backend *be = eo_backend_of(ctx, x);
    const int lse = id == EO_OP_LOGSUMEXP;
    if (lse)
        EO_NEED_KERNEL(ctx, op, be, logsumexp);
    else
        EO_NEED_KERNEL(ctx, op, be, reduce);
    int64_t shape[EO_MAX_RANK], outer, n, inner;
    int rank = 0;
    for (int i = 0; i < x->rank; i++) {
        if (i != a)
            shape[rank++] = x->shape[i];
        else if (keepdim)
            shape[rank++] = 1;
    }
    split(x, a, &outer, &n, &inner);
    eo_tensor *y, *arg = NULL;
    EO_CHECK(eo_new_out(ctx, x->device, EO_F32, rank, shape, &y));
    int grad = eo_needs_grad(ctx, &x, 1);
    if (id == EO_OP_MAX && grad)
        EO_CHECK(eo_new_out(ctx, x->device, EO_I32, rank, shape, &arg));
    /* log-sum-exp saves each output's max and log-sum apart [outer*inner, 2] */
    const int64_t st_shape[2] = { outer * inner, 2 };
    if (lse && grad)
        EO_CHECK(eo_new_out(ctx, x->device, EO_F32, 2, st_shape, &arg));
    if (lse)
        be->logsumexp(outer, n, inner, x->data, y->data, arg ? arg->data : NULL, &ctx->exec);
    else
        be->reduce(redop_of[id], outer, n, inner, x->data, y->data, arg ? arg->data : NULL,
                   &ctx->exec);
    if (grad) {
        eo_node *nd;
        EO_CHECK(eo_record(ctx, id, &x, 1, y, &nd));
        nd->p.reduce.axis = a;
        nd->saved[0] = arg;
    }
    *out = y;
    return EO_OK;
}

static eo_status reduce(eo_ctx *ctx, eo_op_id id, eo_tensor *x, int axis, int keepdim,
                        eo_tensor **out)
{
    EO_RUN(ctx, eo_op_names[id], reduce_body(ctx, id, x, axis, keepdim, out));
}

static eo_status reduce_backward(eo_ctx *ctx, eo_node *n)
{
    eo_tensor *x = n->in[0], *g;
    if (!x->requires_grad)
        return EO_OK;
    const eo_backend *be = eo_backend_of(ctx, x);
    int64_t outer, len, inner;
    split(x, n->p.reduce.axis, &outer, &len, &inner);
    if (n->op == EO_OP_LOGSUMEXP) { /* dx += dy * softmax(x) along the axis */
        EO_NEED_KERNEL(ctx, "logsumexp", be, logsumexp_backward);
        EO_CHECK(eo_grad_of(ctx, x, &g));
        be->logsumexp_backward(outer, len, inner, x->data, n->saved[0]->data,
                               n->out->grad->data, g->data, &ctx->exec);
        return EO_OK;
    }
    EO_NEED_KERNEL(ctx, eo_op_names[n->op], be, reduce_backward);
    EO_CHECK(eo_grad_of(ctx, x, &g));
    be->reduce_backward(redop_of[n->op], outer, len, inner, n->out->grad->data,
                        n->saved[0] ? n->saved[0]->data : NULL, g->data, &ctx->exec);
    return EO_OK;
}

eo_status eo_sum(eo_ctx *ctx, eo_tensor *x, int axis, int keepdim, eo_tensor **out) { return reduce(ctx, EO_OP_SUM, x, axis, keepdim, out); }
eo_status eo_mean(eo_ctx *ctx, eo_tensor *x, int axis, int keepdim, eo_tensor **out) { return reduce(ctx, EO_OP_MEAN, x, axis, keepdim, out); }
eo_status eo_max(eo_ctx *ctx, eo_tensor *x, int axis, int keepdim, eo_tensor **out) { return reduce(ctx, EO_OP_MAX, x, axis, keepdim, out); }
eo_status eo_bwd_sum(eo_ctx *ctx, eo_node *n) { return reduce_backward(ctx, n); }
eo_status eo_bwd_mean(eo_ctx *ctx, eo_node *n) { return reduce_backward(ctx, n); }
eo_status eo_bwd_max(eo_ctx *ctx, eo_node *n) { return reduce_backward(ctx, n); }
eo_status eo_logsumexp(eo_ctx *ctx, eo_tensor *x, int axis, int keepdim, eo_tensor **out) { return reduce(ctx, EO_OP_LOGSUMEXP, x, axis, keepdim, out); }
eo_status eo_bwd_logsumexp(eo_ctx *ctx, eo_node *n) { return reduce_backward(ctx, n); }

EO_PUBLIC(sum_all, (eo_ctx *ctx, eo_tensor *x, eo_tensor **out), (ctx, x, out))
{
    if (!out)
        return eo_fail(ctx, EO_ERR_ARG, "sum_all: NULL output pointer");
    eo_tensor *h[1] = { x }; /* bf16 / f16: through f32 (core/op_cast.c) */
    EO_HALF_FALLBACK(ctx, "sum_all", h, 1, 0, out, eo_sum_all(ctx, h[0], out));
    EO_CHECK(eo_expect(ctx, "sum_all", x, EO_F32));
    int64_t n = eo_numel(x);
    eo_tensor *flat;
    EO_CHECK(eo_reshape(ctx, x, 1, &n, &flat));
    return eo_sum(ctx, flat, 0, 0, out);
}
