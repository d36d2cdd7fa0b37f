/* tools/train/precision.h — eo-train --precision f32|bf16|f16: the
 * mixed-precision recipe both training loops (trainer.c, textlm.c) share.
 *
 *  f32   nothing changes (the scaler is a pass-through);
 *  bf16  autocast to bf16 (core/everyo.h), every parameter an f32 master
 *        with a bf16 working copy (eo_params_enable_low, core/nn.h), no
 *        loss scaling (bf16 has f32's exponent range);
 *  f16   the same with f16, plus dynamic loss scaling with GradScaler's
 *        defaults (eo_grad_scaler_*, core/nn.h): a step whose gradients
 *        hold an inf or NaN is skipped and the scale halves.
 * The recipe is Micikevicius et al., "Mixed Precision Training" (ICLR
 * 2018) as PyTorch's AMP applies it (torch.autocast + GradScaler). */
#ifndef EO_TOOLS_PRECISION_H
#define EO_TOOLS_PRECISION_H

#include "core/nn.h"

/* "f32", "bf16", "f16" -> EO_F32, EO_BF16, EO_F16; -1 for another name. */
int eo_precision_parse(const char *name);
const char *eo_precision_name(int dtype);

/* Set the context and the parameters up for `dtype` (after the model is
 * built and any checkpoint loaded) and initialise the scaler (enabled for
 * f16 only). */
eo_status eo_precision_setup(eo_ctx *ctx, const eo_params *ps, int dtype, eo_grad_scaler *sc);

/* From a scalar f32 loss: backward (of the scaled loss), unscale, clip
 * when clip > 0, the optimizer step unless an inf/NaN was found, and the
 * scale update. *stepped (may be NULL) is 0 for a skipped step. */
eo_status eo_precision_step(eo_ctx *ctx, eo_grad_scaler *sc, const eo_params *ps,
                            eo_optimizer *opt, eo_tensor *loss, float clip, int *stepped);

/* After the gradients were computed by hand (the data-parallel loops run
 * the backward themselves, on loss scaled by eo_grad_scaler_scale_loss):
 * unscale, clip, step, update. */
eo_status eo_precision_finish(eo_ctx *ctx, eo_grad_scaler *sc, const eo_params *ps,
                              eo_optimizer *opt, float clip, int *stepped);

#endif
