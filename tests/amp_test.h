/* tests/amp_test.h — mixed-precision checks shared by the CPU suite
 * (test_grad_scaler.c, test_amp.c) and the CUDA one (test_cuda_amp.c), which run
 * the same code on a context whose tensors live on another device. */
#ifndef EO_TESTS_AMP_TEST_H
#define EO_TESTS_AMP_TEST_H

#include "core/nn.h"

/* Replay PyTorch's GradScaler sequences (tests/fixtures/grad_scaler.h)
 * with the weights on `dev` and compare every step exactly; with_b 0
 * leaves out the 2,001-step sequence (slow on the PTX interpreter). */
void eo_test_grad_scaler_replay(eo_ctx *ctx, eo_device dev, int with_b);

#endif
