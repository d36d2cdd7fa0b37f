/* tests/test_cuda_gpt2_hf.c — the Hugging Face GPT-2 parity fixtures
 * (tests/gpt2_fixture.h) on the CUDA path: the model built on EO_CUDA,
 * transformers' file loaded into device parameters, forward and backward
 * through the device kernels, and the same 1e-5 comparisons as on the
 * CPU. Without a GPU (CI) the device is the PTX interpreter behind the
 * driver-API double (tools/ptxsim/driver.h); EO_TEST_CUDA=real uses the
 * machine's GPU. */
#include <check.h>
#include <stdio.h>
#include "ops/cuda/driver.h" /* a CUDA suite: left out of CUDA=0 builds */
#include "tests/gpt2_fixture.h"
#include "tests/gradcheck.h"

START_TEST(matches_transformers_on_the_device)
{
    const char *name = eo_gpt2_fixture_names[_i / 2];
    eo_ctx *ctx = eo_test_cuda_ctx(8, 32);
    eo_gpt2_errs e;
    eo_gpt2_fixture_run(ctx, EO_CUDA, name, NULL, _i % 2, &e);
    printf("gpt2 parity cuda %-5s %-8s logits %.2e loss %.2e gradients %.2e\n", name,
           _i % 2 ? "fused" : "composed", e.logits, e.loss, e.grad);
    eo_test_cuda_ctx_free(ctx);
}
END_TEST

Suite *eo_suite_cuda_gpt2_hf(void)
{
    Suite *s = suite_create("cuda_gpt2_hf");
    TCase *tc = tcase_create("cuda_gpt2_hf");
    tcase_set_timeout(tc, 600);
    tcase_add_loop_test(tc, matches_transformers_on_the_device, 0, 2 * EO_GPT2_FIXTURES);
    suite_add_tcase(s, tc);
    return s;
}
