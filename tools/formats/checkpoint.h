/* tools/formats/checkpoint.h — a model's parameters to and from a safetensors
 * file (tools/formats/safetensors.h), so weights move between EveryO and PyTorch.
 *
 * Loading is all-or-nothing: every parameter's name, dtype and shape is
 * checked against the file before a single value is copied (the
 * library's eo_weights_bind does it), so a mismatched or corrupt file
 * leaves the model exactly as it was. */
#ifndef EO_TOOLS_CHECKPOINT_H
#define EO_TOOLS_CHECKPOINT_H

#include <stddef.h>
#include "core/everyo.h"
#include "core/nn.h"
#include "core/safetensors.h"

/* Installed as part of libeveryo-io (everyo-io.pc): C and C++ callers. */
#ifdef __cplusplus
extern "C" {
#endif

/* Write every parameter (its name as key, list order) plus optional
 * metadata pairs (keys[i] -> values[i]), followed by the two every file
 * of EveryO carries unless the caller gave them: "format": "pt" (what
 * PyTorch's safetensors writer puts there; transformers' from_pretrained
 * refuses a file without it) and "weight_layout": "out_in" (Linear
 * weights [out, in], as torch.nn.Linear; GPT-2 files from Hugging Face
 * say "conv1d_in_out", tools/formats/gpt2.h). The caller gives the
 * architecture (eo-train: "model" and its sizes). An f32 parameter is written as
 * F32 (under mixed precision that is the master: its 16-bit working copy,
 * eo_params_enable_low, is not saved); a bf16 or f16 parameter (a model
 * built in 16 bits) as BF16 / F16, bit for bit. EO_ERR_IO on write
 * failure; EO_ERR_ARG for a NULL ctx, ps or path, a parameter list with a
 * negative count or NULL items, and nmeta > 0 with NULL keys or values
 * (a NULL string inside them too, from eo_st_write); EO_ERR_OOM when the
 * staging buffers cannot be had. */
eo_status eo_checkpoint_save(eo_ctx *ctx, const eo_params *ps, const char *path,
                             const char *const *keys, const char *const *values, size_t nmeta,
                             char *err, size_t errlen);

/* The same with each f32 parameter stored as `dtype`: EO_ST_F32, or
 * EO_ST_BF16 / EO_ST_F16 rounded to nearest even (eo_f32_to_bf16,
 * as PyTorch's .to(torch.bfloat16) and .half()); 16-bit parameters keep
 * their own dtype. EO_ERR_ARG for another dtype. */
eo_status eo_checkpoint_save_as(eo_ctx *ctx, const eo_params *ps, const char *path,
                                eo_st_dtype dtype, const char *const *keys,
                                const char *const *values, size_t nmeta, char *err,
                                size_t errlen);

/* Read `path` and copy each parameter's values from the entry of the same
 * name, through the library's eo_weights_bind (core/safetensors.h: all or
 * nothing; F32, or BF16/F16 widened exactly into f32 parameters; BF16 or
 * F16 into parameters of that dtype), then rewrite the 16-bit working
 * copies of the parameters that have one (eo_params_refresh_low), so a
 * model loaded under mixed precision computes with the loaded weights.
 * EO_ERR_ARG (NULL ctx, ps or path; a parameter list as saving refuses),
 * EO_ERR_IO (cannot read, or path is not a regular file), EO_ERR_FORMAT (corrupt file, missing name,
 * wrong dtype or shape; the message names the file and tensor), EO_ERR_OOM
 * (the step arena cannot hold the parser's workspace). */
eo_status eo_checkpoint_load(eo_ctx *ctx, const eo_params *ps, const char *path, char *err,
                             size_t errlen);

#ifdef __cplusplus
}
#endif

#endif
