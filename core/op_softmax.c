/* core/op_softmax.c — softmax and log_softmax over the last axis: shape
 * rule, forward dispatch and backward rule (the kernels: ops/cpu/softmax.c,
 * ops/cuda/softmax.c, ptx/softmax.ptx). The fused cross-entropy, which
 * shares their arithmetic, is core/op_cross_entropy.c. */
#include "core/internal.h"

static eo_status softmax(eo_ctx *ctx, eo_op_id id, eo_tensor *x, eo_tensor **out);

static eo_status softmax_body(eo_ctx *ctx, eo_op_id id, eo_tensor *x, eo_tensor **out)
{
    const char *op = eo_op_names[id];
    if (!out)
        return eo_fail(ctx, EO_ERR_ARG, "%s: NULL output pointer", op);
    /* bf16 / f16 (autocast or not: softmax follows its input, core/
     * autocast.c): the backend's 16-bit kernel, which reads the 16-bit
     * row, works in f32 and rounds the result once into x's dtype; where
     * the backend lacks it (or its backward, when a gradient will be
     * needed), the same through f32 copies (core/op_cast.c). */
    EO_CHECK(eo_expect_any(ctx, op, x));
    const eo_backend *be = eo_backend_of(ctx, x);
    const eo_dtype dt = x->dtype;
    eo_tensor *h[1] = { x };
    const int native16 = eo_is_half(dt) && be->softmax16 &&
                         (be->softmax_backward16 || !eo_needs_grad(ctx, h, 1));
    if (!native16)
        EO_HALF_FALLBACK(ctx, op, h, 1, 0, out, softmax(ctx, id, h[0], out));
    EO_CHECK(eo_expect(ctx, op, x, native16 ? dt : EO_F32));
    if (x->rank < 1)
        return eo_fail(ctx, EO_ERR_AXIS, "%s: needs rank >= 1, got %T", op, x);
    EO_CHECK(eo_contiguous(ctx, x, &x)); /* in its own dtype */
    if (!native16)
        EO_NEED_KERNEL(ctx, op, be, softmax);
    int64_t cols = x->shape[x->rank - 1], rows = cols ? eo_numel(x) / cols : 0;
    eo_tensor *y;
    EO_CHECK(eo_new_out(ctx, x->device, dt, x->rank, x->shape, &y));
    /* The kernel's scratch (a row of exps per worker) lives only for the
     * call: lent after y is taken, and given back. */
    const int log = id == EO_OP_LOG_SOFTMAX, nt = eo_par_threads(&ctx->exec.par);
    size_t bytes = native16 ? (be->softmax_ws16 ? be->softmax_ws16(rows, cols, nt) : 0)
                            : (be->softmax_ws ? be->softmax_ws(log, rows, cols, nt) : 0);
    eo_lent ws;
    EO_CHECK(eo_lend(ctx, x->device, bytes, &ws));
    if (native16)
        be->softmax16(log, (int)dt, rows, cols, x->data, y->data, ws.p, &ctx->exec);
    else
        be->softmax(log, rows, cols, x->data, y->data, ws.p, &ctx->exec);
    eo_give_back(&ws);
    if (eo_needs_grad(ctx, &x, 1))
        EO_CHECK(eo_record(ctx, id, &x, 1, y, NULL));
    *out = y;
    return EO_OK;
}

static eo_status softmax(eo_ctx *ctx, eo_op_id id, eo_tensor *x, eo_tensor **out)
{ /* the public call behind eo_softmax and eo_log_softmax */
    EO_RUN(ctx, eo_op_names[id], softmax_body(ctx, id, x, out));
}

static eo_status softmax_backward(eo_ctx *ctx, eo_node *n)
{
    eo_tensor *x = n->in[0], *y = n->out, *g;
    if (!x->requires_grad)
        return EO_OK;
    const eo_backend *be = eo_backend_of(ctx, x);
    int64_t cols = x->shape[x->rank - 1], rows = cols ? eo_numel(x) / cols : 0;
    const int log = n->op == EO_OP_LOG_SOFTMAX;
    if (eo_is_half(y->dtype)) { /* recorded by the 16-bit forward: y, dy, dx of its dtype */
        EO_NEED_KERNEL(ctx, eo_op_names[n->op], be, softmax_backward16);
        EO_CHECK(eo_grad_of(ctx, x, &g));
        size_t bytes = be->softmax_ws16
                           ? be->softmax_ws16(rows, cols, eo_par_threads(&ctx->exec.par))
                           : 0;
        eo_lent ws;
        EO_CHECK(eo_lend(ctx, x->device, bytes, &ws));
        be->softmax_backward16(log, (int)y->dtype, rows, cols, y->data, y->grad->data, g->data,
                               ws.p, &ctx->exec);
        eo_give_back(&ws);
        return EO_OK;
    }
    EO_NEED_KERNEL(ctx, eo_op_names[n->op], be, softmax_backward);
    int set; /* a fresh gradient written by the _set kernel (ops/kernels.h) */
    EO_CHECK(eo_grad_for_set(ctx, x, be->softmax_backward_set != NULL, &g, &set));
    (set ? be->softmax_backward_set : be->softmax_backward)(
        log, rows, cols, y->data, y->grad->data, g->data, &ctx->exec);
    return EO_OK;
}

eo_status eo_softmax(eo_ctx *ctx, eo_tensor *x, eo_tensor **out) { return softmax(ctx, EO_OP_SOFTMAX, x, out); }
eo_status eo_log_softmax(eo_ctx *ctx, eo_tensor *x, eo_tensor **out) { return softmax(ctx, EO_OP_LOG_SOFTMAX, x, out); }
eo_status eo_bwd_softmax(eo_ctx *ctx, eo_node *n) { return softmax_backward(ctx, n); }
eo_status eo_bwd_log_softmax(eo_ctx *ctx, eo_node *n) { return softmax_backward(ctx, n); }
