/* tools/formats/gpt2.h — GPT-2 weights between Hugging Face's layout and
 * EveryO's GPT (core/transformer.h), both ways. Stable.
 *
 * EveryO's GPT block is GPT-2's architecture exactly (pre-LN, a final
 * ln_f, LayerNorm eps 1e-5, tanh GELU, 1/sqrt(D) scaling, one fused q|k|v
 * projection, biases), so the two files differ only in naming and layout:
 *
 *                      Hugging Face GPT2LMHeadModel     EveryO eo_gpt
 *   names              "transformer.wte.weight" (from   "wte.weight"
 *                      save_pretrained) or "wte.weight"
 *                      (many files on the Hub)
 *   attn.c_attn.weight [C, 3C]: Conv1D stores [in, out] [3C, C]: [out, in], as
 *   attn.c_proj.weight [C, C]                           torch.nn.Linear
 *   mlp.c_fc.weight    [C, 4C]                          [4C, C]
 *   mlp.c_proj.weight  [4C, C]                          [C, 4C]
 *   head               lm_head.weight absent, or equal  tied (cfg.tied) or
 *                      to wte: tied                     lm_head.weight
 *   buffers            h.<i>.attn.bias, .masked_bias    none
 *                      (causal masks): ignored
 *
 * Every other tensor and every missing one is an error naming it. The
 * four Conv1D weights are transposed on the way in and on the way out;
 * attn.c_proj is square, so a missed transpose there would load without
 * a shape error and give wrong logits — tests/test_gpt2_hf.c compares
 * logits and gradients with transformers' own (tests/fixtures/gpt2_*),
 * which catches any one of the four.
 *
 * Metadata (written by eo_gpt2_save in both layouts, and by eo-train):
 *   format              "pt" (transformers refuses a file without it)
 *   weight_layout       "out_in" (EveryO) or "conv1d_in_out" (Hugging Face)
 *   architecture        "gpt2" (pre-LN blocks, ln_f, learned positions)
 *   n_layer, n_head, n_embd, vocab_size, n_positions   GPT2Config's names
 *   layer_norm_epsilon  "1e-05";  activation_function "gelu_new" (tanh GELU)
 *   tie_word_embeddings "true" or "false"
 *
 * The number of heads is not in the tensors' shapes. It is taken from the
 * file's metadata (n_head, or eo-train's heads), else from a config.json
 * beside the file (what save_pretrained writes), else d_model / 64 (every
 * released GPT-2 size has 64-wide heads) when 64 divides d_model; else
 * the caller must give it. */
#ifndef EO_TOOLS_GPT2_H
#define EO_TOOLS_GPT2_H

#include <stddef.h>
#include "core/transformer.h"
#include "tools/formats/safetensors.h"

typedef enum eo_gpt2_layout {
    EO_GPT2_EVERYO = 0, /* [out, in] weights, EveryO's names */
    EO_GPT2_HF = 1,     /* Conv1D [in, out] weights, "transformer." names */
} eo_gpt2_layout;

/* What a file holds. */
typedef struct eo_gpt2_info {
    eo_gpt_config cfg;     /* vocab, context, d_model, layers from shapes;
                              heads as above; tied */
    eo_gpt2_layout layout; /* how the weights are stored */
    int prefixed;          /* names carry "transformer." */
    const char *heads_from; /* "metadata", "config.json", "d_model / 64" or
                               "caller" */
} eo_gpt2_info;

/* Work out the layout and model of a file already read (eo_st_read).
 * heads > 0 overrides every other source of the head count. The layout
 * is HF when the names carry "transformer.", or when metadata
 * weight_layout says so, or when h.0.attn.c_attn.weight is [C, 3C].
 * EO_ERR_FORMAT (the message names `path` and the tensor) when
 * wte.weight or wpe.weight is missing or not 2-D, no block h.0 exists, a
 * tensor is neither a GPT-2 parameter nor an ignored buffer, or the head
 * count cannot be found or does not divide d_model; EO_ERR_ARG for NULL
 * arguments. */
eo_status eo_gpt2_inspect(const eo_st_file *f, const char *path, int64_t heads,
                          eo_gpt2_info *info, char *err, size_t errlen);

/* Copy the file's weights into m (built from info->cfg, any device,
 * f32 parameters; transposing the Conv1D weights of an HF file; F32, and
 * BF16/F16 widened exactly), then refresh mixed precision's 16-bit
 * working copies. All or nothing: every tensor's presence, dtype and
 * shape is checked before the first value is written. EO_ERR_FORMAT for
 * a missing tensor, a shape or dtype that does not match (naming both),
 * an lm_head.weight in a file for a tied model that differs from wte;
 * EO_ERR_DTYPE for a parameter that is not f32; EO_ERR_STATE for a model
 * not built; EO_ERR_ARG for NULL arguments; EO_ERR_OOM. */
eo_status eo_gpt2_load(eo_ctx *ctx, const eo_gpt *m, const eo_st_file *f,
                       const eo_gpt2_info *info, const char *path, char *err, size_t errlen);

/* Read path, inspect it (heads as eo_gpt2_inspect) and build a model of
 * its configuration on dev with its weights loaded: what eo-safetensors
 * convert-gpt2 and the tests do. *info may be NULL. */
eo_status eo_gpt2_open(eo_ctx *ctx, eo_device dev, const char *path, int64_t heads, eo_gpt *m,
                       eo_gpt2_info *info, char *err, size_t errlen);

/* Write m's parameters as F32 in `layout`: EO_GPT2_HF gives the tensors
 * transformers' save_pretrained writes for a GPT2LMHeadModel
 * ("transformer."-prefixed, Conv1D [in, out], no lm_head.weight when
 * tied, no mask buffers), so GPT2LMHeadModel.from_pretrained loads it
 * with a config.json of the same sizes; EO_GPT2_EVERYO gives what
 * eo_checkpoint_save does. Both with the metadata above. EO_ERR_IO,
 * EO_ERR_OOM, EO_ERR_DTYPE (a parameter not f32), EO_ERR_STATE (a model
 * not built), EO_ERR_ARG. */
eo_status eo_gpt2_save(eo_ctx *ctx, const eo_gpt *m, const char *path, eo_gpt2_layout layout,
                       char *err, size_t errlen);
/* The same, also writing the metadata pairs `extra` (n of them) whose
 * keys are not among those above (those are always this model's): how
 * eo-safetensors convert-gpt2 keeps what eo-train wrote (its character
 * vocabulary, steps, seed) across a conversion. */
eo_status eo_gpt2_save_with(eo_ctx *ctx, const eo_gpt *m, const char *path,
                            eo_gpt2_layout layout, const eo_st_meta *extra, size_t n, char *err,
                            size_t errlen);

/* The metadata pairs above for a model of config c in `layout` (keys and
 * values point into *buf, which must outlive them): for writers that
 * save a GPT another way (eo-train --save). Returns the number of pairs,
 * at most EO_GPT2_META_MAX. */
#define EO_GPT2_META_MAX 12
typedef struct eo_gpt2_meta_buf {
    char num[6][24];
} eo_gpt2_meta_buf;
size_t eo_gpt2_meta(const eo_gpt_config *c, eo_gpt2_layout layout, eo_gpt2_meta_buf *buf,
                    const char **keys, const char **values);

#endif
