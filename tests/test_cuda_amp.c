/* tests/test_cuda_amp.c — mixed precision on the CUDA backend (the PTX
 * interpreter in `make test`, a real GPU with EO_TEST_CUDA=real): the
 * GradScaler replay of test_grad_scaler.c with the gradients on the
 * device, so the check and unscale run in ptx/grad_scaler.ptx (the
 * 2,001-step sequence only on the CPU: it tests the host's counting);
 * and the tiny MLP of test_amp.c trained in bf16 and f16 on the device. */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "core/nn.h"
#include "ops/cuda/driver.h"
#include "tests/amp_test.h"
#include "tests/gradcheck.h"
#include "tests/tmpdir.h"
#include "tools/ptxsim/driver.h"

/* The tiny MLP of test_amp.c trained on the device in bf16 and in f16
 * (with loss scaling) against the same run on the CPU: the master-weight
 * checks run on every step, and the two devices' losses agree to 16-bit
 * rounding (their kernels sum in different orders). */
static eo_cuda_driver D;

START_TEST(mlp_bf16_f16_on_cuda_match_cpu)
{
    if (eo_test_skip_16bit_device("cuda_amp: mlp_bf16_f16_on_cuda_match_cpu"))
        return;
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

/* eo-train's loops with --device cuda: the MLP in bf16 and the GPT in f16
 * (with loss scaling) give the CPU run's losses to 16-bit rounding. (The
 * CNN and ViT take minutes on the interpreter; test_amp.c runs every
 * model on the CPU.) */
START_TEST(models_train_in_16_bit_on_cuda)
{
    if (eo_test_skip_16bit_device("cuda_amp: models_train_in_16_bit_on_cuda"))
        return;
    const char *mode = getenv("EO_TEST_CUDA");
    int sim = !mode || strcmp(mode, "real") != 0;
    char err[512];
    eo_train_config c;
    eo_train_result rc, rd;
    eo_test_image_config(&c, EO_MODEL_MLP, EO_BF16);
    c.max_steps = 1;
    ck_assert_msg(eo_train_run(&c, &rc, NULL, err, sizeof err) == EO_OK, "cpu: %s", err);
    if (sim) {
        eo_ptxsim_driver_reset();
        eo_ptxsim_driver(&D);
        c.cuda_driver = &D;
    }
    c.cuda = 1;
    c.persist_mb = c.step_mb = 0; /* measured: tools/train/arena_size.h */
    ck_assert_msg(eo_train_run(&c, &rd, NULL, err, sizeof err) == EO_OK, "cuda: %s", err);
    ck_assert_msg(fabs(rc.last_loss - rd.last_loss) < 1e-2 * rc.last_loss,
                  "mlp bf16: loss cpu %.5f cuda %.5f", rc.last_loss, rd.last_loss);
    ck_assert_ptr_nonnull(eo_tmpdir_make());
    const char *path = eo_tmpdir_file("text.txt", eo_test_gpt_text, strlen(eo_test_gpt_text));
    ck_assert_ptr_nonnull(path);
    eo_lm_config g;
    eo_lm_result gc, gd;
    eo_test_gpt_config(&g, path, EO_F16); /* with the loss scaler */
    g.steps = 2;
    ck_assert_msg(eo_lm_train_run(&g, &gc, NULL, err, sizeof err) == EO_OK, "cpu: %s", err);
    if (sim) {
        eo_ptxsim_driver_reset();
        eo_ptxsim_driver(&D);
        g.cuda_driver = &D;
    }
    g.cuda = 1;
    /* The arenas measured (tools/train/arena_size.h): on the CPU, and
     * enough for the CUDA ops too (eo_arena_device). */
    g.persist_mb = g.step_mb = 0;
    ck_assert_msg(eo_lm_train_run(&g, &gd, NULL, err, sizeof err) == EO_OK, "cuda: %s", err);
    eo_tmpdir_remove();
    ck_assert_msg(fabs(gc.val_loss - gd.val_loss) < 1e-2 * gc.val_loss,
                  "gpt f16: validation loss cpu %.5f cuda %.5f", gc.val_loss, gd.val_loss);
    ck_assert_int_eq(gc.skipped_steps, gd.skipped_steps);
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
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, grad_scaler_matches_torch_cuda);
    tcase_add_test(tc, mlp_bf16_f16_on_cuda_match_cpu);
    tcase_add_test(tc, models_train_in_16_bit_on_cuda);
    suite_add_tcase(s, tc);
    return s;
}
