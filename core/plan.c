/* core/plan.c — measuring what the arenas need (core/everyo.h, "sizing
 * the arenas"; eo_sequential_plan in core/nn.h).
 *
 * Measuring is running: the arenas already keep a high-water mark, so
 * the figure for a step is that mark after the step ran once, restarted
 * at the step's beginning. Nothing here estimates: an op that takes
 * scratch, a tape node, a saved tensor — all of it is in the figure
 * because it was really allocated. */
#include "core/internal.h"
#include "core/nn.h"

void eo_measure_begin(eo_ctx *ctx)
{
    if (!ctx)
        return;
    eo_arena_high_reset(&ctx->persist);
    eo_arena_high_reset(&ctx->step);
    eo_arena_high_reset(&ctx->dev_persist);
    eo_arena_high_reset(&ctx->dev_step);
}

eo_arena_needs eo_measure(const eo_ctx *ctx)
{
    eo_arena_needs n = {0, 0, 0, 0};
    if (!ctx)
        return n;
    n.persist = eo_arena_high(&ctx->persist);
    n.step = eo_arena_high(&ctx->step);
    n.dev_persist = eo_arena_high(&ctx->dev_persist);
    n.dev_step = eo_arena_high(&ctx->dev_step);
    return n;
}

static eo_status run_step(eo_ctx *ctx, const eo_sequential *net, const eo_params *ps,
                          eo_tensor *x, eo_tensor *target)
{
    eo_tensor *logits, *loss;
    if (target)
        EO_CHECK(eo_params_zero_grad(ctx, ps));
    EO_CHECK(eo_sequential_forward(ctx, net, x, &logits));
    if (!target)
        return EO_OK;
    EO_CHECK(eo_cross_entropy(ctx, logits, target, -100, &loss));
    return eo_backward(ctx, loss);
}

EO_PUBLIC(sequential_plan, (eo_ctx *ctx, const eo_sequential *net, const eo_params *ps,
                            eo_tensor *x, eo_tensor *target, eo_arena_needs *out),
          (ctx, net, ps, x, target, out))
{
    if (!net || !x || !out || (target && !ps))
        return eo_fail(ctx, EO_ERR_ARG, "NULL %s", !net ? "model" : !x ? "input" : !out ? "output"
                                                                                       : "parameter list");
    eo_mark m = eo_mark_get(ctx);
    int grad = eo_set_grad(ctx, target != NULL), train = eo_set_training(ctx, target != NULL);
    /* No eo_measure_begin: the peaks so far (building the model borrows
     * step memory for its initial values) stay in the figure, since the
     * buffers must hold both. */
    eo_status s = run_step(ctx, net, ps, x, target);
    *out = eo_measure(ctx);
    eo_rewind(ctx, m);
    eo_set_grad(ctx, grad);
    eo_set_training(ctx, train);
    return s;
}
