/* tools/train/precision.c — the mixed-precision setup and step of
 * eo-train --precision (see precision.h). */
#include <string.h>
#include "tools/train/precision.h"

int eo_precision_parse(const char *name)
{
    if (!name)
        return -1;
    if (strcmp(name, "f32") == 0)
        return EO_F32;
    if (strcmp(name, "bf16") == 0)
        return EO_BF16;
    if (strcmp(name, "f16") == 0)
        return EO_F16;
    return -1;
}

const char *eo_precision_name(int dtype)
{
    return dtype == EO_BF16 ? "bf16" : dtype == EO_F16 ? "f16" : "f32";
}

eo_status eo_precision_setup(eo_ctx *ctx, const eo_params *ps, int dtype, eo_grad_scaler *sc)
{
    eo_status s = eo_grad_scaler_init(ctx, sc, dtype == EO_F16);
    if (s != EO_OK || dtype == EO_F32)
        return s;
    if ((s = eo_params_enable_low(ctx, ps, (eo_dtype)dtype)) != EO_OK)
        return s;
    return eo_ctx_set_autocast(ctx, (eo_dtype)dtype);
}

eo_status eo_precision_finish(eo_ctx *ctx, eo_grad_scaler *sc, const eo_params *ps,
                              eo_optimizer *opt, float clip, int *stepped)
{
    eo_status s = EO_OK;
    if (clip > 0) {
        /* Clip what the update will use: the unscaled gradients. A step
         * the scaler will skip has a non-finite norm, which clipping
         * would return with EO_OK; it is not clipped at all: nothing of
         * it is used. */
        if ((s = eo_grad_scaler_unscale(ctx, sc, ps)) != EO_OK)
            return s;
        if (!sc->found_inf && (s = eo_clip_grad_norm(ctx, ps, clip, NULL)) != EO_OK)
            return s;
    }
    if ((s = eo_grad_scaler_step(ctx, sc, opt, stepped)) != EO_OK)
        return s;
    return eo_grad_scaler_update(ctx, sc);
}

eo_status eo_precision_step(eo_ctx *ctx, eo_grad_scaler *sc, const eo_params *ps,
                            eo_optimizer *opt, eo_tensor *loss, float clip, int *stepped)
{
    eo_tensor *scaled;
    eo_status s = eo_grad_scaler_scale_loss(ctx, sc, loss, &scaled);
    if (s == EO_OK)
        s = eo_backward(ctx, scaled);
    return s == EO_OK ? eo_precision_finish(ctx, sc, ps, opt, clip, stepped) : s;
}
