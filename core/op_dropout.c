/* core/op_dropout.c — inverted dropout with a counter-hash mask (the
 * kernels: ops/cpu/dropout.c, ops/cuda/dropout.c, ptx/dropout.ptx). The
 * mask is recomputed from (seed, index) in the backward, never stored. */
#include "core/internal.h"

EO_PUBLIC(dropout, (eo_ctx *ctx, eo_tensor *x, float p, uint64_t seed, eo_tensor **out),
          (ctx, x, p, seed, out))
{
    if (!out)
        return eo_fail(ctx, EO_ERR_ARG, "dropout: NULL output pointer");
    eo_tensor *h[1] = { x }; /* bf16 / f16: through f32 (core/op_cast.c) */
    EO_HALF_FALLBACK(ctx, "dropout", h, 1, 0, out, eo_dropout(ctx, h[0], p, seed, out));
    EO_CHECK(eo_expect(ctx, "dropout", x, EO_F32));
    if (!(p >= 0.0f && p < 1.0f))
        return eo_fail(ctx, EO_ERR_ARG, "dropout: p must be in [0, 1), got %f", (double)p);
    EO_CHECK(eo_contiguous(ctx, x, &x));
    const eo_backend *be = eo_backend_of(ctx, x);
    EO_NEED_KERNEL(ctx, "dropout", be, dropout);
    eo_tensor *y;
    EO_CHECK(eo_new_out(ctx, x->device, EO_F32, x->rank, x->shape, &y));
    be->dropout(eo_numel(x), x->data, y->data, p, seed, &ctx->exec);
    if (eo_needs_grad(ctx, &x, 1)) {
        eo_node *nd;
        EO_CHECK(eo_record(ctx, EO_OP_DROPOUT, &x, 1, y, &nd));
        nd->p.dropout.p = p;
        nd->p.dropout.seed = seed;
    }
    *out = y;
    return EO_OK;
}

eo_status eo_bwd_dropout(eo_ctx *ctx, eo_node *n)
{
    eo_tensor *x = n->in[0], *g;
    if (!x->requires_grad)
        return EO_OK;
    const eo_backend *be = eo_backend_of(ctx, x);
    EO_NEED_KERNEL(ctx, "dropout", be, dropout_backward);
    EO_CHECK(eo_grad_of(ctx, x, &g));
    be->dropout_backward(eo_numel(x), n->out->grad->data, g->data, n->p.dropout.p,
                         n->p.dropout.seed, &ctx->exec);
    return EO_OK;
}
