/* core/transformer.h — transformer layers built only from existing ops:
 * multi-head self-attention, a pre-LayerNorm block, a character-level GPT
 * and a small Vision Transformer for 28x28 images.
 *
 * Like core/nn.h these are plain structs that own parameters (persistent
 * arena) and call differentiable ops in their forward, so autograd, every
 * backend and the optimizers work on them unchanged.
 *
 * Parameter names follow one PyTorch module layout (tools/reference/ref_transformer.py
 * builds the same modules), so a checkpoint loads straight into it:
 *   GPT: wte.weight [V, C], wpe.weight [Tmax, C],
 *        h.<i>.ln_1.{weight,bias}, h.<i>.attn.c_attn.{weight,bias} [3C, C],
 *        h.<i>.attn.c_proj.{weight,bias} [C, C], h.<i>.ln_2.{weight,bias},
 *        h.<i>.mlp.c_fc.{weight,bias} [4C, C], h.<i>.mlp.c_proj.{weight,bias}
 *        [C, 4C], ln_f.{weight,bias}, lm_head.weight [V, C] (no bias);
 *   ViT: patch_embed.{weight,bias} [C, P*P], pos_embed [N, C],
 *        blocks.<i>.* as h.<i>.* above, norm.{weight,bias},
 *        head.{weight,bias} [classes, C].
 * Weights are [out, in] as torch.nn.Linear stores them.
 *
 * Initialisation (GPT-2's scheme): every Linear weight and embedding table
 * N(0, 0.02²), biases 0, LayerNorm weight 1 and bias 0. */
#ifndef EO_TRANSFORMER_H
#define EO_TRANSFORMER_H

#include "core/everyo.h"
#include "core/nn.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Multi-head self-attention over x [B, T, C].
 *
 * One fused projection c_attn [3C, C] makes q, k and v in a single matmul
 * (one large GEMM is faster than three small ones, and it is GPT-2's
 * layout, so checkpoints map one to one). Its output [B, T, 3C] is viewed
 * as [B, T, 3H, D] (D = C / H) and sliced into q, k, v [B, T, H, D], each
 * transposed to [B, H, T, D] — all views, no copies. The attention result
 * [B, H, T, D] is transposed back to [B, T, H, D] and reshaped to [B, T, C]
 * (the one copy), then projected by c_proj [C, C]. */
typedef struct eo_mha {
    eo_module c_attn, c_proj;
    int64_t n_embd, n_head;
    int causal; /* 1: position t sees only positions <= t (GPT) */
    int fused;  /* 1: eo_attention_fused, 0: eo_attention (composed) */
} eo_mha;

/* Pre-LayerNorm block (as GPT-2):
 *   x = x + attn(ln_1(x));  x = x + mlp(ln_2(x)),
 *   mlp = c_proj(gelu_tanh(c_fc(x))), hidden size 4C. */
typedef struct eo_block {
    eo_module ln_1, ln_2, c_fc, c_proj;
    eo_mha attn;
} eo_block;

/* LayerNorm epsilon of every norm here (PyTorch's default). */
#define EO_TRANSFORMER_LN_EPS 1e-5f

/* Build a block whose parameters are named "<prefix>.ln_1.weight" and so
 * on (see above), appended to ps. C must be a multiple of n_head and 4C
 * must fit (EO_ERR_ARG). A failed init gives back what it took and leaves
 * a block whose forward returns EO_ERR_STATE (so do the models below). */
eo_status eo_block_init(eo_ctx *ctx, eo_params *ps, eo_device dev, const char *prefix,
                        int64_t n_embd, int64_t n_head, int causal, eo_block *b);
/* x [B, T, C] -> y [B, T, C]. */
eo_status eo_mha_forward(eo_ctx *ctx, const eo_mha *a, eo_tensor *x, eo_tensor **y);
eo_status eo_block_forward(eo_ctx *ctx, const eo_block *b, eo_tensor *x, eo_tensor **y);

/* ---- GPT ------------------------------------------------------------------ */

typedef struct eo_gpt_config {
    int64_t vocab;    /* V */
    int64_t context;  /* Tmax: the longest sequence, rows of wpe */
    int64_t d_model;  /* C */
    int64_t heads;    /* H, divides C */
    int64_t layers;   /* N blocks */
    int tied;         /* 0: lm_head is its own [V, C] matrix (the default,
                         what the reference figures used); 1: the head is
                         wte itself, as in GPT-2 (Radford et al. 2019;
                         Press & Wolf, "Using the Output Embedding to
                         Improve Language Models", 2017) */
} eo_gpt_config;

/* Token embedding + learned position embedding, N causal blocks, a final
 * LayerNorm and an output head without bias.
 *
 * Tied head (cfg.tied = 1): lm_head.w is the wte tensor, so one parameter
 * is used by two ops, the embedding lookup and the head's matmul. Its
 * gradient is the sum of both uses because every backward accumulates into
 * a gradient (+=, core/tape.c), also under mixed precision (the head's
 * matmul reads wte's one 16-bit working copy and adds into the f32
 * master's gradient). The parameter list holds wte once and no
 * "lm_head.weight", so the optimizer updates it once, clipping counts it
 * once and a checkpoint saves it once (Hugging Face's GPT-2 files hold
 * no lm_head.weight either, or one equal to wte: tools/formats/gpt2.h). */
typedef struct eo_gpt {
    eo_gpt_config cfg;
    eo_params params;
    eo_tensor *wte, *wpe;
    eo_block *h;      /* cfg.layers blocks, persistent arena */
    eo_module ln_f, lm_head;
} eo_gpt;

/* Make the model and initialise it from the context's generator (seed it
 * first). EO_ERR_ARG for sizes < 1, d_model not divisible by heads, or
 * more layers than a parameter list holds, tied not 0 or 1; EO_ERR_SHAPE when a table
 * (vocab × d_model, context × d_model) does not fit. */
eo_status eo_gpt_build(eo_ctx *ctx, eo_device dev, const eo_gpt_config *cfg, eo_gpt *m);
/* Use eo_attention_fused (1) or the composed eo_attention (0, default). */
void eo_gpt_set_fused(eo_gpt *m, int fused);

/* idx [B, T] (I32, token ids in [0, V), T <= context) -> logits [B, T, V]. */
eo_status eo_gpt_forward(eo_ctx *ctx, const eo_gpt *m, eo_tensor *idx, eo_tensor **logits);
/* Mean next-token cross-entropy: logits for idx against targets [B, T]
 * (I32). *logits (may be NULL) receives the logits too. */
eo_status eo_gpt_loss(eo_ctx *ctx, const eo_gpt *m, eo_tensor *idx, eo_tensor *targets,
                      eo_tensor **logits, eo_tensor **loss);

/* A key/value cache for generation: per block, the k and v of every
 * position seen so far, [B, H, context, D] each (persistent arena, the
 * model's device). With it a new token costs O(positions so far) -- its
 * own projections and MLP, and attention against the cached keys --
 * instead of a forward over the whole window.
 * Its dtype is chosen once, by eo_gpt_cache_init: the autocast dtype
 * (eo_ctx_set_autocast) when autocast is on -- the dtype the cached
 * forwards then make k and v in, so they are stored as they are (half the
 * memory of f32) --, else a bf16 / f16 model's own dtype, else f32. Make
 * the cache under the autocast setting you will generate with: a forward
 * in another dtype still works, its k and v rounded into the cache's
 * dtype and the cache read back converted to its own (an extra cast of
 * the whole cache per block and token). */
typedef struct eo_gpt_cache {
    int64_t batch;
    int64_t len;          /* positions held, 0 .. context */
    eo_tensor **k, **v;   /* cfg.layers each */
} eo_gpt_cache;

/* EO_ERR_ARG for NULL m or c or batch < 1; EO_ERR_STATE for a model that
 * was not built (or whose CUDA tensors are of an ended attach). The
 * cache's dtype: see eo_gpt_cache. A failed init leaves *c zeroed. */
eo_status eo_gpt_cache_init(eo_ctx *ctx, const eo_gpt *m, int64_t batch, eo_gpt_cache *c);
/* Forget every position (the storage is kept). */
void eo_gpt_cache_reset(eo_gpt_cache *c);
/* idx [B, Tn]: the Tn tokens that follow the c->len cached positions
 * (c->len + Tn <= context) -> logits [B, Tn, V], the same as the last Tn
 * rows of eo_gpt_forward over all c->len + Tn tokens; their k and v are
 * appended (c->len += Tn). Uses the fused attention (causal, queries at
 * the end). For inference: no gradient reaches the cache.
 * EO_ERR_ARG for a NULL argument; EO_ERR_STATE for a model not built or a
 * cache that is not one eo_gpt_cache_init made for this model and batch
 * (batch < 1, k or v NULL, len outside 0..context, a k or v tensor not
 * [batch, heads, context, d_model / heads] on the model's device, all of
 * one float dtype; a CUDA tensor of an ended attach);
 * EO_ERR_SHAPE for idx not [batch, Tn] with 1 <= Tn <= context - c->len.
 * On failure c->len is unchanged. */
eo_status eo_gpt_forward_cached(eo_ctx *ctx, const eo_gpt *m, eo_gpt_cache *c, eo_tensor *idx,
                                eo_tensor **logits);

/* ---- ViT ------------------------------------------------------------------- */

typedef struct eo_vit_config {
    int64_t image;    /* side of the square grey image (28) */
    int64_t patch;    /* side of a patch (4): (image/patch)^2 tokens */
    int64_t d_model;
    int64_t heads;
    int64_t layers;
    int64_t classes;
} eo_vit_config;

/* Vision Transformer (Dosovitskiy et al., "An Image is Worth 16x16 Words",
 * 2021) for small grey images: non-overlapping patches flattened and
 * embedded by one Linear(P*P -> C), plus a learned position embedding, N
 * non-causal blocks, a final LayerNorm, then the mean over tokens (mean
 * pooling rather than a class token: no concatenation, and it trains at
 * least as well at this size) into a Linear head. */
typedef struct eo_vit {
    eo_vit_config cfg;
    eo_params params;
    eo_module patch_embed, norm, head;
    eo_tensor *pos_embed;
    eo_block *blocks;
} eo_vit;

/* EO_ERR_ARG for sizes < 1, a patch that does not divide the image, an
 * image whose pixel count does not fit, d_model not divisible by heads. */
eo_status eo_vit_build(eo_ctx *ctx, eo_device dev, const eo_vit_config *cfg, eo_vit *m);
void eo_vit_set_fused(eo_vit *m, int fused);
/* x [B, image*image] (row-major pixels) -> logits [B, classes]. */
eo_status eo_vit_forward(eo_ctx *ctx, const eo_vit *m, eo_tensor *x, eo_tensor **logits);

#ifdef __cplusplus
}
#endif

#endif
