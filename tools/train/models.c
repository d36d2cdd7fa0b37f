/* tools/train/models.c — see models.h. The layer indices in the parameter
 * names match torch.nn.Sequential's, so a checkpoint loads straight into
 * the equivalent PyTorch model (the ViT's names are those of the ViT
 * class in tools/reference/ref_transformer.py). */
#include <string.h>
#include "tools/train/models.h"

int eo_model_parse(const char *name)
{
    if (strcmp(name, "mlp") == 0) return EO_MODEL_MLP;
    if (strcmp(name, "cnn") == 0) return EO_MODEL_CNN;
    if (strcmp(name, "vit") == 0) return EO_MODEL_VIT;
    return -1;
}

const char *eo_model_name(eo_model_kind k)
{
    return k == EO_MODEL_CNN ? "cnn" : k == EO_MODEL_VIT ? "vit" : "mlp";
}

#define TRY(x) do { eo_status s_ = (x); if (s_ != EO_OK) return s_; } while (0)

static eo_status classifier_make(eo_ctx *ctx, eo_model_kind kind, eo_device dev,
                                 eo_classifier *m);

/* The builder makes many library calls; each gives back its own memory
 * when it fails, and this gives back those that had already worked, so a
 * failed build leaves the persistent arena as it found it and a model
 * that every later call refuses (eo_classifier_forward: EO_ERR_STATE). */
eo_status eo_classifier_build(eo_ctx *ctx, eo_model_kind kind, eo_device dev, eo_classifier *m)
{
    if (!ctx || !m || (unsigned)kind > EO_MODEL_VIT)
        return EO_ERR_ARG;
    eo_classifier none = { 0 };
    *m = none;
    eo_arena_mark host = eo_arena_mark_get(&ctx->persist);
    eo_arena_mark dev_mark = eo_arena_mark_get(&ctx->dev_persist);
    eo_status s = classifier_make(ctx, kind, dev, m);
    if (s != EO_OK) {
        eo_arena_rewind(&ctx->persist, host);
        eo_arena_rewind(&ctx->dev_persist, dev_mark);
        *m = none;
    }
    return s;
}

static eo_status classifier_make(eo_ctx *ctx, eo_model_kind kind, eo_device dev,
                                 eo_classifier *m)
{
    eo_module l;
    m->kind = kind;
    if (kind == EO_MODEL_VIT) {
        const eo_vit_config vc = { 28, 4, 64, 4, 2, 10 };
        TRY(eo_vit_build(ctx, dev, &vc, &m->vit));
        m->params = m->vit.params; /* same array: checkpoints and optimizers see it */
        m->net.mods = NULL;
        m->net.count = m->net.cap = 0;
        return EO_OK;
    }
    TRY(eo_params_init(ctx, &m->params, 16));
    TRY(eo_sequential_init(ctx, &m->net, 16));
    if (kind == EO_MODEL_MLP) {
        TRY(eo_linear_init(ctx, &m->params, dev, "0", 784, 256, 1, EO_INIT_KAIMING_UNIFORM, &l));
        TRY(eo_sequential_add(ctx, &m->net, l));
        TRY(eo_sequential_add(ctx, &m->net, eo_relu_module()));
        TRY(eo_linear_init(ctx, &m->params, dev, "2", 256, 10, 1, EO_INIT_KAIMING_UNIFORM, &l));
        return eo_sequential_add(ctx, &m->net, l);
    }
    TRY(eo_conv2d_init(ctx, &m->params, dev, "0", 1, 32, 3, 1, 1, &l));
    TRY(eo_sequential_add(ctx, &m->net, l));
    TRY(eo_sequential_add(ctx, &m->net, eo_relu_module()));
    TRY(eo_sequential_add(ctx, &m->net, eo_maxpool2d_module(2)));
    TRY(eo_conv2d_init(ctx, &m->params, dev, "3", 32, 64, 3, 1, 1, &l));
    TRY(eo_sequential_add(ctx, &m->net, l));
    TRY(eo_sequential_add(ctx, &m->net, eo_relu_module()));
    TRY(eo_sequential_add(ctx, &m->net, eo_maxpool2d_module(2)));
    TRY(eo_sequential_add(ctx, &m->net, eo_flatten_module()));
    TRY(eo_linear_init(ctx, &m->params, dev, "7", 64 * 7 * 7, 128, 1, EO_INIT_KAIMING_UNIFORM, &l));
    TRY(eo_sequential_add(ctx, &m->net, l));
    TRY(eo_sequential_add(ctx, &m->net, eo_relu_module()));
    TRY(eo_linear_init(ctx, &m->params, dev, "9", 128, 10, 1, EO_INIT_KAIMING_UNIFORM, &l));
    return eo_sequential_add(ctx, &m->net, l);
}

eo_status eo_classifier_forward(eo_ctx *ctx, const eo_classifier *m, eo_tensor *x,
                                eo_tensor **logits)
{
    if (!m)
        return EO_ERR_ARG;
    /* A model whose build failed is all zeros: an MLP whose container was
     * never made, which eo_sequential_forward refuses with EO_ERR_STATE. */
    if (m->kind == EO_MODEL_VIT)
        return eo_vit_forward(ctx, &m->vit, x, logits);
    if (m->kind == EO_MODEL_CNN && x && x->rank >= 1 && x->rank <= EO_MAX_RANK) {
        int64_t s[4] = { x->shape[0], 1, 28, 28 };
        TRY(eo_reshape(ctx, x, 4, s, &x));
    }
    return eo_sequential_forward(ctx, &m->net, x, logits);
}
