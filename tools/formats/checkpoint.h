/* tools/formats/checkpoint.h — a model's parameters to and from a safetensors
 * file (tools/formats/safetensors.h), so weights move between EveryO and PyTorch.
 *
 * Loading is all-or-nothing: every parameter's name, dtype (F32) and
 * shape is checked against the file before a single value is copied, so
 * a mismatched or corrupt file leaves the model exactly as it was. */
#ifndef EO_TOOLS_CHECKPOINT_H
#define EO_TOOLS_CHECKPOINT_H

#include <stddef.h>
#include "core/everyo.h"
#include "core/nn.h"

/* Write every parameter (F32, its name as key, list order) plus optional
 * metadata pairs (keys[i] -> values[i]). EO_ERR_IO on write failure. */
eo_status eo_checkpoint_save(eo_ctx *ctx, const eo_params *ps, const char *path,
                             const char *const *keys, const char *const *values, size_t nmeta,
                             char *err, size_t errlen);

/* Read `path` and copy each parameter's values from the entry of the same
 * name. EO_ERR_IO (cannot read), EO_ERR_FORMAT (corrupt file, missing
 * name, wrong dtype or shape; the message names the file and tensor). */
eo_status eo_checkpoint_load(eo_ctx *ctx, const eo_params *ps, const char *path, char *err,
                             size_t errlen);

#endif
