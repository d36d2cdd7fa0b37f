/* tests/test_cuda_gpt2_generate.c — the greedy-generation fixture
 * (tests/gpt2_generate.h) with the model and its key/value cache on the
 * CUDA path: the PTX interpreter behind the driver-API double in CI,
 * the machine's GPU with EO_TEST_CUDA=real. */
#include <check.h>
#include "ops/cuda/driver.h" /* a CUDA suite: left out of CUDA=0 builds */
#include "tests/gpt2_generate.h"
#include "tests/gradcheck.h"

START_TEST(greedy_matches_transformers_on_the_device)
{
    eo_ctx *ctx = eo_test_cuda_ctx(8, 32);
    eo_gen_fixture_check(ctx, EO_CUDA, _i);
    eo_test_cuda_ctx_free(ctx);
}
END_TEST

Suite *eo_suite_cuda_gpt2_generate(void)
{
    Suite *s = suite_create("cuda_gpt2_generate");
    TCase *tc = tcase_create("cuda_gpt2_generate");
    tcase_set_timeout(tc, 600);
    tcase_add_loop_test(tc, greedy_matches_transformers_on_the_device, 0, 2);
    suite_add_tcase(s, tc);
    return s;
}
