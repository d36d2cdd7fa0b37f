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
    eo_tensor *h[1] = { logits }; /* bf16 / f16: through f32 (core/op_cast.c) */
    EO_HALF_FALLBACK(ctx, "cross_entropy", h, 1, 0, out,
                     eo_cross_entropy_ex(ctx, h[0], target, ignore_index, reduction, out));
    EO_CHECK(eo_expect(ctx, "cross_entropy", logits, EO_F32));
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
    EO_CHECK(eo_contiguous(ctx, logits, &logits));
    const eo_backend *be = eo_backend_of(ctx, logits);
    EO_NEED_KERNEL(ctx, "cross_entropy", be, cross_entropy);
    /* stats: each row's max and log-sum of exps, saved for the backward */
    eo_tensor *loss, *stats;
    const int64_t stats_shape[2] = { rows, 2 };
    const eo_ce_reduction red = ce_reduction(reduction);
    EO_CHECK(eo_new_out(ctx, logits->device, EO_F32, red == EO_CE_NONE, &rows, &loss));
    EO_CHECK(eo_new_out(ctx, logits->device, EO_F32, 2, stats_shape, &stats));
    const int32_t *tg = target->data;
    if (target->device != EO_CPU && be->check_ids) /* checked where they are */
        tg = be->check_ids(EO_IDS_TARGET, rows, tg, cols, 1, ignore_index, &ctx->exec);
    be->cross_entropy(rows, cols, logits->data, tg, ignore_index, red, stats->data,
                      loss->data, &ctx->exec);
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
    EO_NEED_KERNEL(ctx, "cross_entropy", be, cross_entropy_backward);
    EO_CHECK(eo_grad_of(ctx, logits, &g));
    const int32_t *tg = target->data;
    if (target->device != EO_CPU && be->check_ids)
        tg = be->check_ids(EO_IDS_TARGET, logits->shape[0], tg, logits->shape[1], 1,
                           n->p.ce.ignore_index, &ctx->exec);
    be->cross_entropy_backward(logits->shape[0], logits->shape[1], logits->data, tg,
                               n->p.ce.ignore_index, (eo_ce_reduction)n->p.ce.reduction,
                               n->saved[0]->data, n->out->grad->data, g->data, &ctx->exec);
    return EO_OK;
}
