/* core/op_layernorm.c — layer normalisation over the last axis.
 *
 * Fused rather than composed from mean/sub/mul: the forward keeps only
 * the per-row mean and 1/std (two floats a row), and the backward is one
 * pass instead of the half-dozen a composed graph would record. The tests
 * check it against the composition of primitive ops. */
#include <math.h>
#include "core/internal.h"

EO_PUBLIC(layernorm, (eo_ctx *ctx, eo_tensor *x, eo_tensor *w, eo_tensor *b, float eps,
                     eo_tensor **out),
          (ctx, x, w, b, eps, out))
{
    if (!out)
        return eo_fail(ctx, EO_ERR_ARG, "layernorm: NULL output pointer");
    EO_CHECK(eo_expect_any(ctx, "layernorm", x));
    eo_tensor *h[3] = { x, w, b };
    /* Autocast (core/autocast.c): a 16-bit x keeps its dtype and the
     * affine parameters join it through their working copies; an f32 x
     * stays f32. The statistics are f32 either way. */
    if (eo_is_half(x->dtype))
        EO_AUTOCAST(ctx, EO_AUTOCAST_LOW, h, 3, eo_layernorm(ctx, h[0], h[1], h[2], eps, out));
    /* bf16 / f16: the backend's 16-bit kernel (reads x, w, b in 16 bits,
     * mean and variance in f32, y rounded once), when it has it and, if a
     * gradient will be needed, its backward; else through f32 copies
     * (core/op_cast.c). */
    const eo_backend *be = eo_backend_of(ctx, x);
    const eo_dtype dt = x->dtype;
    int native16 = eo_is_half(dt) && be->layernorm16 &&
                   (be->layernorm_backward16 || !eo_needs_grad(ctx, h, 3));
    for (int i = 1; i < 3; i++)
        if (h[i] && (h[i]->dtype != dt || h[i]->device != x->device))
            native16 = 0;
    if (!native16)
        EO_HALF_FALLBACK(ctx, "layernorm", h, 3, 0, out,
                         eo_layernorm(ctx, h[0], h[1], h[2], eps, out));
    EO_CHECK(eo_expect(ctx, "layernorm", x, native16 ? dt : EO_F32));
    if (x->rank < 1)
        return eo_fail(ctx, EO_ERR_AXIS, "layernorm: needs rank >= 1, got %T", x);
    EO_CHECK(eo_need(ctx, eps > 0.0f && eps < INFINITY, "layernorm: eps", "finite and > 0",
                     (double)eps));
    int64_t cols = x->shape[x->rank - 1], rows = cols ? eo_numel(x) / cols : 0;
    eo_tensor *aff[2] = { w, b };
    for (int i = 0; i < 2; i++) {
        if (!aff[i])
            continue;
        EO_CHECK(eo_expect(ctx, "layernorm", aff[i], dt));
        EO_CHECK(eo_same_device(ctx, "layernorm", x, aff[i]));
        if (aff[i]->rank != 1 || aff[i]->shape[0] != cols)
            return eo_fail(ctx, EO_ERR_SHAPE, "layernorm: %s must be [%lld] for x %T, got %T",
                           i ? "bias" : "weight", (long long)cols, x, aff[i]);
        EO_CHECK(eo_contiguous(ctx, aff[i], &aff[i]));
    }
    w = aff[0];
    b = aff[1];
    EO_CHECK(eo_contiguous(ctx, x, &x));
    if (!native16)
        EO_NEED_KERNEL(ctx, "layernorm", be, layernorm);
    eo_tensor *y, *mean, *rstd;
    EO_CHECK(eo_new_out(ctx, x->device, dt, x->rank, x->shape, &y));
    EO_CHECK(eo_new_out(ctx, x->device, EO_F32, 1, &rows, &mean));
    EO_CHECK(eo_new_out(ctx, x->device, EO_F32, 1, &rows, &rstd));
    if (native16) {
        size_t bytes = be->layernorm_ws16
                           ? be->layernorm_ws16(rows, cols, eo_par_threads(&ctx->exec.par))
                           : 0;
        eo_lent ws;
        EO_CHECK(eo_lend(ctx, x->device, bytes, &ws));
        be->layernorm16((int)dt, rows, cols, x->data, w ? w->data : NULL, b ? b->data : NULL,
                        eps, y->data, mean->data, rstd->data, ws.p, &ctx->exec);
        eo_give_back(&ws);
    } else {
        be->layernorm(rows, cols, x->data, w ? w->data : NULL, b ? b->data : NULL, eps,
                      y->data, mean->data, rstd->data, &ctx->exec);
    }
    eo_tensor *in[3] = { x, w, b };
    if (eo_needs_grad(ctx, in, 3)) {
        eo_node *nd;
        EO_CHECK(eo_record(ctx, EO_OP_LAYERNORM, in, 3, y, &nd));
        nd->saved[0] = mean;
        nd->saved[1] = rstd;
        nd->p.ln.eps = eps;
    }
    *out = y;
    return EO_OK;
}

eo_status eo_bwd_layernorm(eo_ctx *ctx, eo_node *n)
{
    eo_tensor *x = n->in[0], *w = n->in[1], *b = n->in[2];
    eo_tensor *gx = NULL, *gw = NULL, *gb = NULL;
    const eo_backend *be = eo_backend_of(ctx, x);
    const int native16 = eo_is_half(x->dtype); /* recorded by the 16-bit forward */
    if (native16)
        EO_NEED_KERNEL(ctx, "layernorm", be, layernorm_backward16);
    else
        EO_NEED_KERNEL(ctx, "layernorm", be, layernorm_backward);
    if (x->requires_grad) EO_CHECK(eo_grad_of(ctx, x, &gx));
    if (w && w->requires_grad) EO_CHECK(eo_grad_of(ctx, w, &gw));
    if (b && b->requires_grad) EO_CHECK(eo_grad_of(ctx, b, &gb));
    int64_t cols = x->shape[x->rank - 1], rows = cols ? eo_numel(x) / cols : 0;
    if (native16) { /* dx, dw, db of x's dtype; dw and db summed in f32, rounded once */
        size_t bytes = be->layernorm_ws16
                           ? be->layernorm_ws16(rows, cols, eo_par_threads(&ctx->exec.par))
                           : 0;
        eo_lent ws;
        EO_CHECK(eo_lend(ctx, x->device, bytes, &ws));
        be->layernorm_backward16((int)x->dtype, rows, cols, x->data, w ? w->data : NULL,
                                 n->saved[0]->data, n->saved[1]->data, n->out->grad->data,
                                 gx ? gx->data : NULL, gw ? gw->data : NULL,
                                 gb ? gb->data : NULL, ws.p, &ctx->exec);
        eo_give_back(&ws);
        return EO_OK;
    }
    size_t bytes = be->layernorm_backward_ws
                       ? be->layernorm_backward_ws(rows, cols, eo_par_threads(&ctx->exec.par))
                       : 0;
    eo_lent ws;
    EO_CHECK(eo_lend(ctx, x->device, bytes, &ws));
    be->layernorm_backward(rows, cols, x->data, w ? w->data : NULL, n->saved[0]->data,
                           n->saved[1]->data, n->out->grad->data, gx ? gx->data : NULL,
                           gw ? gw->data : NULL, gb ? gb->data : NULL, ws.p, &ctx->exec);
    eo_give_back(&ws);
    return EO_OK;
}
