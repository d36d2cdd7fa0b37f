/* tests/test_cuda_amp.c — mixed precision on the CUDA backend (the PTX
 * interpreter in `make test`, a real GPU with EO_TEST_CUDA=real): the
 * GradScaler replay of test_grad_scaler.c with the gradients on the
 * device, so the check and unscale run in ptx/grad_scaler.ptx (the
 * 2,001-step sequence only on the CPU: it tests the host's counting);
 * and the tiny MLP of test_amp.c trained in bf16 and f16 on the device. */
#include <check.h>
#include <math.h>
#include "core/nn.h"
#include "ops/cuda/driver.h"
#include "tests/amp_test.h"
#include "tests/gradcheck.h"

/* The tiny MLP of test_amp.c trained on the device in bf16 and in f16
 * (with loss scaling) against the same run on the CPU: the master-weight
 * checks run on every step, and the two devices' losses agree to 16-bit
 * rounding (their kernels sum in different orders). */
START_TEST(mlp_bf16_f16_on_cuda_match_cpu)
{
    for (int d = 0; d < 2; d++) {
        eo_dtype dt = d ? EO_F16 : EO_BF16;
        float lc[8], lg[8];
        eo_ctx *cpu = eo_test_ctx(2, 8);
        eo_test_train_mlp(cpu, EO_CPU, dt, 8, lc, NULL);
        eo_test_ctx_free(cpu);
        eo_ctx *ctx = eo_test_cuda_ctx(2, 8);
        eo_grad_scaler sc;
        eo_test_train_mlp(ctx, EO_CUDA, dt, 8, lg, &sc);
        eo_test_cuda_ctx_free(ctx);
        ck_assert_int_eq(sc.skipped, 0);
        for (int k = 0; k < 8; k++)
            ck_assert_msg(fabsf(lg[k] - lc[k]) <= 0.01f * lc[k], "%s step %d: cuda %g, cpu %g",
                          d ? "f16" : "bf16", k, (double)lg[k], (double)lc[k]);
    }
}
END_TEST

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
    tcase_add_test(tc, mlp_bf16_f16_on_cuda_match_cpu);
    suite_add_tcase(s, tc);
    return s;
}
