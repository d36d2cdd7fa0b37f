/* tests/test_cuda_amp.c — mixed precision on the CUDA backend (the PTX
 * interpreter in `make test`, a real GPU with EO_TEST_CUDA=real): the
 * GradScaler replay of test_grad_scaler.c with the gradients on the
 * device, so the check and unscale run in ptx/grad_scaler.ptx (the
 * 2,001-step sequence only on the CPU: it tests the host's counting). */
#include <check.h>
#include "core/nn.h"
#include "ops/cuda/driver.h"
#include "tests/amp_test.h"
#include "tests/gradcheck.h"

START_TEST(grad_scaler_matches_torch_cuda)
{
    eo_ctx *ctx = eo_test_cuda_ctx(1, 4);
    eo_test_grad_scaler_replay(ctx, EO_CUDA, 0); /* B runs on the CPU */
    eo_test_cuda_ctx_free(ctx);
}
END_TEST

Suite *eo_suite_cuda_amp(void)
{
    Suite *s = suite_create("cuda_amp");
    TCase *tc = tcase_create("cuda_amp");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, grad_scaler_matches_torch_cuda);
    suite_add_tcase(s, tc);
    return s;
}
