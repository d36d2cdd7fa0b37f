/* tools/train/models.h — the image classifiers the training tool knows, built
 * from core/nn layers. Shared by eo-train and the tests so both train
 * exactly the same network. */
#ifndef EO_TOOLS_MODELS_H
#define EO_TOOLS_MODELS_H

#include "core/everyo.h"
#include "core/nn.h"
#include "core/transformer.h"

typedef enum eo_model_kind { EO_MODEL_MLP, EO_MODEL_CNN, EO_MODEL_VIT } eo_model_kind;

typedef struct eo_classifier {
    eo_model_kind kind;
    eo_params params;
    eo_sequential net;  /* MLP, CNN */
    eo_vit vit;         /* VIT (its parameters are vit.params, copied into params) */
} eo_classifier;

/* Build a classifier for 28x28 grey images and 10 classes, parameters on
 * `dev`, initialised from the context's generator (seed it first):
 *   MLP: 784-256-10, ReLU (PyTorch names "0.weight", "0.bias", "2.*");
 *   CNN: conv3x3(1→32, pad 1)-ReLU-maxpool2 - conv3x3(32→64, pad 1)-ReLU-
 *        maxpool2 - flatten - fc(3136→128)-ReLU - fc(128→10);
 *   VIT: core/transformer.h's ViT, 4x4 patches (49 tokens), d_model 64,
 *        4 heads, 2 blocks, mean pooling, N(0, 0.02) init — the
 *        configuration of the PyTorch reference figures. */
eo_status eo_classifier_build(eo_ctx *ctx, eo_model_kind kind, eo_device dev, eo_classifier *m);

/* Logits [B, 10] for a batch x [B, 784] (pixels in [0, 1]). */
eo_status eo_classifier_forward(eo_ctx *ctx, const eo_classifier *m, eo_tensor *x,
                                eo_tensor **logits);

/* Parse "mlp"/"cnn"/"vit"; -1 if unknown. */
int eo_model_parse(const char *name);
const char *eo_model_name(eo_model_kind k);

#endif
