/* core/op_cross_entropy.c — the fused cross-entropy loss over class
 * indices (the kernels: ops/cpu/cross_entropy.c, ops/cuda/cross_entropy.c,
 * ptx/cross_entropy.ptx).
 *
 * Cross-entropy is its own fused op rather than log_softmax followed by a
 * gather: its backward is simply softmax minus the one-hot target, and it
 * only needs to keep two numbers per row (the max and the log of the sum
 * of exps, kept apart so that huge logits lose no digits) instead of a
 * whole probability matrix. The tests check it against the composition. */
#include "core/internal.h"

/* The public reduction as the kernels spell it. */
static eo_ce_reduction ce_reduction(eo_reduction r)
{
    return r == EO_REDUCTION_SUM ? EO_CE_SUM : r == EO_REDUCTION_NONE ? EO_CE_NONE : EO_CE_MEAN;
}

static eo_status cross_entropy_body(eo_ctx *ctx, eo_tensor *logits, eo_tensor *target,
                                    int32_t ignore_index, eo_reduction reduction,
                                    eo_tensor **out);

/* The 16-bit kernels' scratch bytes (forward and backward share one size). */
static size_t ce16_ws(eo_ctx *ctx, const eo_backend *be, int64_t rows, int64_t cols)
{
    return be->cross_entropy_ws16
               ? be->cross_entropy_ws16(rows, cols, eo_par_threads(&ctx->exec.par))
               : 0;
}

/* Both entry points run one body under the caller-facing name "cross_entropy". */
eo_status eo_cross_entropy_ex(eo_ctx *ctx, eo_tensor *logits, eo_tensor *target,
                              int32_t ignore_index, eo_reduction reduction, eo_tensor **out)
{
    EO_RUN(ctx, "cross_entropy",
           cross_entropy_body(ctx, logits, target, ignore_index, reduction, out));
}

eo_status eo_cross_entropy(eo_ctx *ctx, eo_tensor *logits, eo_tensor *target,
                           int32_t ignore_index, eo_tensor **out)
{
    return eo_cross_entropy_ex(ctx, logits, target, ignore_index, EO_REDUCTION_MEAN, out);
}

static eo_status cross_entropy_body(eo_ctx *ctx, eo_tensor *logits, eo_tensor *target,
                                    int32_t ignore_index, eo_reduction reduction,
                                    eo_tensor **out)
{
    if (reduction != EO_REDUCTION_MEAN && reduction != EO_REDUCTION_SUM &&
        reduction != EO_REDUCTION_NONE)
        return eo_fail(ctx, EO_ERR_ARG, "cross_entropy: reduction %d is not mean, sum or none",
                       (int)reduction);
    if (!out)
        return eo_fail(ctx, EO_ERR_ARG, "cross_entropy: NULL output pointer");
    EO_NONNULL(ctx, "cross_entropy", logits);
    EO_NONNULL(ctx, "cross_entropy", target);
    EO_CHECK(eo_expect_any(ctx, "cross_entropy", logits));
    eo_tensor *h[1] = { logits };
    /* bf16 / f16: the backend's 16-bit kernel (and its backward, if a
     * gradient will be needed) with a loss of the logits' dtype (the
     * slot's contract, as torch); else through an f32 copy (core/
     * op_cast.c). */
    const eo_backend *be = eo_backend_of(ctx, logits);
    const eo_dtype dt = logits->dtype;
    /* Past the 16-bit kernel's row limit (core/backend.h) the f32 route
     * takes any N, so the limit never reaches the launch. */
    const int64_t lim16 = be->limits.cross_entropy16_max_rows;
    const int native16 = eo_is_half(dt) && be->cross_entropy16 &&
                         (be->cross_entropy_backward16 || !eo_needs_grad(ctx, h, 1)) &&
                         !(lim16 && logits->rank >= 1 && logits->shape[0] > lim16);
    /* Autocast (core/autocast.c): the loss is f32 whatever the logits'
     * dtype, for the grad scaler and for the report. bf16 logits are read
     * by the 16-bit kernel and its bf16 loss is widened (a [1] or [N]
     * cast). f16 logits go through an f32 copy instead: the loss's
     * gradient is the loss scale (2^16 at the start, past f16's 65504),
     * which a f16 loss could not carry back. */
    if (ctx->autocast != EO_F32 && eo_is_half(dt)) {
        if (dt == EO_F16 || !native16)
            EO_AUTOCAST(ctx, EO_AUTOCAST_F32, h, 1,
                        eo_cross_entropy_ex(ctx, h[0], target, ignore_index, reduction, out));
        const eo_dtype ac = ctx->autocast;
        ctx->autocast = EO_F32;
        eo_status s = eo_cross_entropy_ex(ctx, logits, target, ignore_index, reduction, out);
        ctx->autocast = ac;
        EO_CHECK(s);
        return eo_cast(ctx, *out, EO_F32, out);
    }
    if (!native16)
        EO_HALF_FALLBACK(ctx, "cross_entropy", h, 1, 0, out,
                         eo_cross_entropy_ex(ctx, h[0], target, ignore_index, reduction, out));
    EO_CHECK(eo_expect(ctx, "cross_entropy", logits, native16 ? dt : EO_F32));
    EO_CHECK(eo_expect(ctx, "cross_entropy", target, EO_I32));
    EO_CHECK(eo_same_device(ctx, "cross_entropy", logits, target));
    if (logits->rank != 2 || target->rank != 1 || target->shape[0] != logits->shape[0])
        return eo_fail(ctx, EO_ERR_SHAPE,
                       "cross_entropy: expected logits [N, C] and target [N], got %T and %T",
                       logits, target);
    int64_t rows = logits->shape[0], cols = logits->shape[1];
    /* Targets are checked before the logits are copied, so a bad target
     * leaves no copy (and no tape node) behind. */
    EO_CHECK(eo_contiguous(ctx, target, &target));
    if (target->device == EO_CPU) {
        const int32_t *t = target->data;
        for (int64_t r = 0; r < rows; r++)
            if (t[r] != ignore_index && (t[r] < 0 || t[r] >= cols))
                return eo_fail(ctx, EO_ERR_ARG,
                               "cross_entropy: target[%lld] = %d is outside [0, %lld) and is "
                               "not the ignore index %d",
                               (long long)r, (int)t[r], (long long)cols, (int)ignore_index);
    }
    EO_CHECK(eo_contiguous(ctx, logits, &logits)); /* in its own dtype */
    if (!native16)
        EO_NEED_KERNEL(ctx, "cross_entropy", be, cross_entropy);
    /* stats: each row's max and log-sum of exps (f32), saved for the backward */
    eo_tensor *loss, *stats;
    const int64_t stats_shape[2] = { rows, 2 };
    const eo_ce_reduction red = ce_reduction(reduction);
    EO_CHECK(eo_new_out(ctx, logits->device, dt, red == EO_CE_NONE, &rows, &loss));
    EO_CHECK(eo_new_out(ctx, logits->device, EO_F32, 2, stats_shape, &stats));
    const int32_t *tg = target->data;
    if (target->device != EO_CPU && be->check_ids) /* checked where they are */
        tg = be->check_ids(EO_IDS_TARGET, rows, tg, cols, 1, ignore_index, &ctx->exec);
    if (native16) {
        eo_lent ws;
        EO_CHECK(eo_lend(ctx, logits->device, ce16_ws(ctx, be, rows, cols), &ws));
        be->cross_entropy16((int)dt, rows, cols, logits->data, tg, ignore_index, red,
                            stats->data, loss->data, ws.p, &ctx->exec);
        eo_give_back(&ws);
    } else {
        be->cross_entropy(rows, cols, logits->data, tg, ignore_index, red, stats->data,
                          loss->data, &ctx->exec);
    }
    eo_tensor *in[2] = { logits, target };
    if (eo_needs_grad(ctx, in, 1)) {
        eo_node *nd;
        EO_CHECK(eo_record(ctx, EO_OP_CROSS_ENTROPY, in, 2, loss, &nd));
        nd->saved[0] = stats;
        nd->p.ce.ignore_index = ignore_index;
        nd->p.ce.reduction = (int)red;
    }
    *out = loss;
    return EO_OK;
}

eo_status eo_bwd_cross_entropy(eo_ctx *ctx, eo_node *n)
{
    eo_tensor *logits = n->in[0], *target = n->in[1], *g;
    if (!logits->requires_grad)
        return EO_OK;
    const eo_backend *be = eo_backend_of(ctx, logits);
    const int native16 = eo_is_half(logits->dtype); /* recorded by the 16-bit forward */
    if (native16)
        EO_NEED_KERNEL(ctx, "cross_entropy", be, cross_entropy_backward16);
    else
        EO_NEED_KERNEL(ctx, "cross_entropy", be, cross_entropy_backward);
    EO_CHECK(eo_grad_of(ctx, logits, &g));
    const int32_t *tg = target->data;
    if (target->device != EO_CPU && be->check_ids)
        tg = be->check_ids(EO_IDS_TARGET, logits->shape[0], tg, logits->shape[1], 1,
                           n->p.ce.ignore_index, &ctx->exec);
    if (native16) { /* dloss and dlogits of the logits' dtype */
        eo_lent ws;
        EO_CHECK(eo_lend(ctx, logits->device,
                         ce16_ws(ctx, be, logits->shape[0], logits->shape[1]), &ws));
        be->cross_entropy_backward16((int)logits->dtype, logits->shape[0], logits->shape[1],
                                     logits->data, tg, n->p.ce.ignore_index,
                                     (eo_ce_reduction)n->p.ce.reduction, n->saved[0]->data,
                                     n->out->grad->data, g->data, ws.p, &ctx->exec);
        eo_give_back(&ws);
        return EO_OK;
    }
    be->cross_entropy_backward(logits->shape[0], logits->shape[1], logits->data, tg,
                               n->p.ce.ignore_index, (eo_ce_reduction)n->p.ce.reduction,
                               n->saved[0]->data, n->out->grad->data, g->data, &ctx->exec);
    return EO_OK;
}
