/* core/grad_scaler.c — dynamic loss scaling for f16 training, with the
 * semantics of PyTorch's torch.amp.GradScaler (the state machine of its
 * scale / unscale_ / step / update, and the arithmetic of its two kernels,
 * _amp_foreach_non_finite_check_and_unscale_ and _amp_update_scale_);
 * the method is Micikevicius et al., "Mixed Precision Training" (ICLR
 * 2018), section 3.2. Declarations and the usage pattern: core/nn.h.
 *
 * Where the work happens: the scale S is a host float (it changes at most
 * once a step, and the host decides whether to step anyway), the check
 * and the unscale run on the gradients' device (the backend's
 * unscale_check kernel: ops/cpu/grad_scaler.c, ptx/grad_scaler.ptx), and
 * one float — "some gradient was inf or NaN" — comes home per step, as
 * GradScaler's found_inf.item() does before it decides to step. */
#include <math.h>
#include "core/internal.h"
#include "core/nn.h"

/* GradScaler's OptState, and one of ours: the optimizer's step failed
 * after the gradients were unscaled (they stay unscaled; a retry steps
 * without unscaling them again, and an update without a retry counts no
 * step: none was taken). */
enum { STAGE_READY = 0, STAGE_UNSCALED = 1, STAGE_STEPPED = 2, STAGE_FAILED = 3 };

EO_PUBLIC(grad_scaler_init_ex, (eo_ctx *ctx, eo_grad_scaler *sc, int enabled, float init_scale,
                               float growth_factor, float backoff_factor,
                               int64_t growth_interval),
          (ctx, sc, enabled, init_scale, growth_factor, backoff_factor, growth_interval))
{
    if (!sc)
        return eo_fail(ctx, EO_ERR_ARG, "grad_scaler_init: NULL scaler");
    eo_grad_scaler z = {0};
    *sc = z;
    EO_CHECK(eo_need(ctx, init_scale > 0 && init_scale < INFINITY, "init_scale",
                     "finite and > 0", (double)init_scale));
    EO_CHECK(eo_need(ctx, growth_factor > 1 && growth_factor < INFINITY, "growth_factor",
                     "finite and > 1", (double)growth_factor));
    EO_CHECK(eo_need(ctx, backoff_factor > 0 && backoff_factor < 1, "backoff_factor",
                     "in (0, 1)", (double)backoff_factor));
    EO_CHECK(eo_need(ctx, growth_interval >= 1, "growth_interval", ">= 1",
                     (double)growth_interval));
    sc->enabled = enabled != 0;
    sc->scale = init_scale;
    sc->growth_factor = growth_factor;
    sc->backoff_factor = backoff_factor;
    sc->growth_interval = growth_interval;
    return EO_OK;
}

EO_PUBLIC(grad_scaler_init, (eo_ctx *ctx, eo_grad_scaler *sc, int enabled), (ctx, sc, enabled))
{
    return eo_grad_scaler_init_ex(ctx, sc, enabled, 65536.0f, 2.0f, 0.5f, 2000);
}

static eo_status need_scaler(eo_ctx *ctx, const eo_grad_scaler *sc)
{
    if (!sc)
        return eo_fail(ctx, EO_ERR_ARG, "NULL scaler");
    if (!(sc->scale > 0)) /* zeroed or a failed init */
        return eo_fail(ctx, EO_ERR_STATE, "the scaler was not initialised (or its init failed)");
    return EO_OK;
}

EO_PUBLIC(grad_scaler_scale_loss, (eo_ctx *ctx, const eo_grad_scaler *sc, eo_tensor *loss,
                                  eo_tensor **out),
          (ctx, sc, loss, out))
{
    EO_CHECK(need_scaler(ctx, sc));
    if (!out)
        return eo_fail(ctx, EO_ERR_ARG, "NULL output pointer");
    EO_CHECK(eo_expect(ctx, "grad_scaler_scale_loss", loss, EO_F32));
    if (eo_numel(loss) != 1)
        return eo_fail(ctx, EO_ERR_SHAPE, "the loss must be a scalar, got %T", loss);
    if (!sc->enabled) {
        *out = loss;
        return EO_OK;
    }
    return eo_scale(ctx, loss, sc->scale, out);
}

/* Check and unscale every gradient, then read the one flag they share. */
static eo_status unscale_all(eo_ctx *ctx, eo_grad_scaler *sc, const eo_params *ps)
{
    EO_CHECK(eo_expect_params(ctx, ctx->op, ps));
    if (ctx->grads_pending) /* the global gradients: every rank finds the same */
        EO_CHECK(eo_grad_allreduce(ctx, ps));
    /* Every gradient checked before any is unscaled: a refusal leaves them
     * all scaled, so the call can be made again. */
    for (int i = 0; i < ps->count; i++) {
        const eo_tensor *g = ps->items[i]->grad;
        if (g && g->dtype != EO_F32)
            return eo_fail(ctx, EO_ERR_DTYPE, "grad_scaler_unscale: the gradient of %s is %T; "
                           "gradients must be f32 (master weights)",
                           ps->items[i]->name ? ps->items[i]->name : "a parameter", g);
    }
    /* 1/S in double, then rounded once, as GradScaler does (exact for
     * the powers of two S normally is). */
    float inv = (float)(1.0 / (double)sc->scale);
    int found = 0;
    for (eo_device d = 0; d < EO_DEVICE_COUNT; d++) {
        /* One flag per device that holds gradients, zeroed, set by the
         * kernels, read once. */
        int any = 0;
        for (int i = 0; i < ps->count; i++)
            any |= ps->items[i]->grad && ps->items[i]->grad->device == d;
        if (!any)
            continue;
        const eo_backend *be = ctx->backend[d];
        EO_NEED_KERNEL(ctx, "grad_scaler_unscale", be, unscale_check);
        eo_lent l;
        EO_CHECK(eo_lend(ctx, d, sizeof(float), &l));
        float flag = 0;
        eo_status s = be->zero(ctx, l.p, sizeof(float));
        for (int i = 0; i < ps->count && s == EO_OK; i++) {
            eo_tensor *g = ps->items[i]->grad;
            if (!g || g->device != d)
                continue;
            be->unscale_check(eo_numel(g), g->data, inv, l.p, &ctx->exec);
        }
        if (s == EO_OK)
            s = be->download(ctx, &flag, l.p, sizeof flag);
        eo_give_back(&l);
        EO_CHECK(s);
        found |= flag != 0.0f;
    }
    sc->found_inf = found;
    sc->stage = STAGE_UNSCALED;
    return EO_OK;
}

EO_PUBLIC(grad_scaler_unscale, (eo_ctx *ctx, eo_grad_scaler *sc, const eo_params *ps),
          (ctx, sc, ps))
{
    EO_CHECK(need_scaler(ctx, sc));
    if (!ps)
        return eo_fail(ctx, EO_ERR_ARG, "grad_scaler_unscale: NULL parameter list");
    if (!sc->enabled)
        return EO_OK;
    if (sc->stage == STAGE_UNSCALED || sc->stage == STAGE_FAILED)
        return eo_fail(ctx, EO_ERR_STATE, "grad_scaler_unscale: already called since the last "
                                          "grad_scaler_update");
    if (sc->stage == STAGE_STEPPED)
        return eo_fail(ctx, EO_ERR_STATE, "grad_scaler_unscale: called after grad_scaler_step");
    return unscale_all(ctx, sc, ps);
}

EO_PUBLIC(grad_scaler_step, (eo_ctx *ctx, eo_grad_scaler *sc, eo_optimizer *o, int *stepped),
          (ctx, sc, o, stepped))
{
    EO_CHECK(need_scaler(ctx, sc));
    if (stepped)
        *stepped = 0;
    if (!o)
        return eo_fail(ctx, EO_ERR_ARG, "grad_scaler_step: NULL optimizer");
    if (!o->params)
        return eo_fail(ctx, EO_ERR_ARG, "grad_scaler_step: uninitialised optimizer");
    if (!sc->enabled) {
        EO_CHECK(eo_optimizer_step(ctx, o));
        if (stepped)
            *stepped = 1;
        return EO_OK;
    }
    if (sc->stage == STAGE_STEPPED)
        return eo_fail(ctx, EO_ERR_STATE, "grad_scaler_step: already called since the last "
                                          "grad_scaler_update");
    if (sc->stage == STAGE_READY)
        EO_CHECK(unscale_all(ctx, sc, o->params));
    if (sc->found_inf) {
        sc->stage = STAGE_STEPPED;
        sc->skipped++;
        return EO_OK; /* the update is skipped: parameters and state untouched */
    }
    /* Stepped only once the step is done: a failed step may be retried
     * (the gradients stay unscaled), as with GradScaler, whose stage
     * stays UNSCALED when optimizer.step() raises. */
    eo_status s = eo_optimizer_step(ctx, o);
    sc->stage = s == EO_OK ? STAGE_STEPPED : STAGE_FAILED;
    EO_CHECK(s);
    if (stepped)
        *stepped = 1;
    return EO_OK;
}

/* torch._amp_update_scale_: the products are taken in double (its
 * factors are Python floats) and rounded to the float scale. */
static void update_scale(eo_grad_scaler *sc)
{
    if (sc->found_inf) {
        sc->scale = (float)((double)sc->scale * (double)sc->backoff_factor);
        sc->growth_tracker = 0;
    } else if (sc->growth_tracker + 1 == sc->growth_interval) {
        float grown = (float)((double)sc->scale * (double)sc->growth_factor);
        if (grown < INFINITY) /* finite: a scale of inf would turn every gradient into NaN */
            sc->scale = grown;
        sc->growth_tracker = 0;
    } else {
        sc->growth_tracker++;
    }
}

EO_PUBLIC(grad_scaler_update, (eo_ctx *ctx, eo_grad_scaler *sc), (ctx, sc))
{
    EO_CHECK(need_scaler(ctx, sc));
    if (!sc->enabled)
        return EO_OK;
    if (sc->stage == STAGE_READY)
        return eo_fail(ctx, EO_ERR_STATE, "grad_scaler_update: no inf/NaN check ran this step "
                                          "(call grad_scaler_unscale or grad_scaler_step first)");
    /* A step that failed and was not retried is neither good nor bad: the
     * scale and the run of good steps stay. */
    if (sc->stage != STAGE_FAILED)
        update_scale(sc);
    sc->found_inf = 0;
    sc->stage = STAGE_READY;
    return EO_OK;
}
