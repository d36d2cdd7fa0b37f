/* tests/amp_test.h — mixed-precision checks shared by the CPU suite
 * (test_grad_scaler.c, test_amp.c) and the CUDA one (test_cuda_amp.c), which run
 * the same code on a context whose tensors live on another device. */
#ifndef EO_TESTS_AMP_TEST_H
#define EO_TESTS_AMP_TEST_H

#include "core/nn.h"
#include "tools/train/textlm.h"
#include "tools/train/trainer.h"

/* Replay PyTorch's GradScaler sequences (tests/fixtures/grad_scaler.h)
 * with the weights on `dev` and compare every step exactly; with_b 0
 * leaves out the 2,001-step sequence (slow on the PTX interpreter). */
void eo_test_grad_scaler_replay(eo_ctx *ctx, eo_device dev, int with_b);

/* A tiny MLP, 16 -> 32 (GELU) -> 4, parameters on dev. */
typedef struct eo_test_mlp {
    eo_params params;
    eo_sequential net;
} eo_test_mlp;
void eo_test_tiny_mlp(eo_ctx *ctx, eo_device dev, eo_test_mlp *m);
/* Train it `steps` AdamW steps on a fixed batch in `precision` (f32, or
 * autocast with master weights; f16 with the default loss scaler),
 * checking after every step that the masters and their gradients are
 * f32 and each working copy equals cast(master); losses[k] gets step k's
 * loss, *out_scaler (may be NULL) the scaler at the end. */
void eo_test_train_mlp(eo_ctx *ctx, eo_device dev, eo_dtype precision, int steps, float *losses,
                       eo_grad_scaler *out_scaler);

/* Tiny eo-train configurations (test_amp.c): an image model for 2 steps
 * of batch 8, and a 1-layer GPT on eo_test_gpt_text for 3 steps. */
void eo_test_image_config(eo_train_config *c, eo_model_kind model, int precision);
void eo_test_gpt_config(eo_lm_config *c, const char *text_path, int precision);
extern const char eo_test_gpt_text[];

#endif
