/* tests/test_grad_scaler.c — dynamic loss scaling (core/grad_scaler.c)
 * against PyTorch's GradScaler: the sequences of tests/fixtures/
 * grad_scaler.h (tools/reference/ref_grad_scaler.py) replayed step by
 * step — skipped or not, scale, growth tracker, weights — compared
 * exactly; the state machine's refusals; the disabled pass-through. The
 * same replay runs on CUDA in test_cuda_amp.c. */
#include <check.h>
#include <math.h>
#include "core/nn.h"
#include "ops/kernels.h"
#include "tools/cli/cpu_kernels.h"
#include "tests/amp_test.h"
#include "tests/fixtures/grad_scaler.h"
#include "tests/gradcheck.h"

/* One step of loss = sum(w * c), scaled, with the scaler's calls in
 * GradScaler's order; *stepped as eo_grad_scaler_step says. */
static void scaled_step(eo_ctx *ctx, eo_grad_scaler *sc, eo_optimizer *o, eo_params *ps,
                        eo_device dev, const float c[4], int unscale_first, int *stepped)
{
    eo_mark m = eo_mark_get(ctx);
    int64_t four = 4;
    eo_tensor *ch, *cd, *prod, *loss, *scaled;
    ck_assert_int_eq(eo_params_zero_grad(ctx, ps), EO_OK);
    ck_assert_int_eq(eo_tensor_new(ctx, EO_STEP, EO_CPU, EO_F32, 1, &four, &ch), EO_OK);
    for (int i = 0; i < 4; i++)
        ((float *)ch->data)[i] = c[i];
    ck_assert_int_eq(eo_to_device(ctx, ch, dev, EO_STEP, &cd), EO_OK);
    ck_assert_int_eq(eo_mul(ctx, ps->items[0], cd, &prod), EO_OK);
    ck_assert_int_eq(eo_sum_all(ctx, prod, &loss), EO_OK);
    ck_assert_int_eq(eo_grad_scaler_scale_loss(ctx, sc, loss, &scaled), EO_OK);
    ck_assert_int_eq(eo_backward(ctx, scaled), EO_OK);
    if (unscale_first)
        ck_assert_msg(eo_grad_scaler_unscale(ctx, sc, ps) == EO_OK, "%s", eo_last_error(ctx));
    ck_assert_msg(eo_grad_scaler_step(ctx, sc, o, stepped) == EO_OK, "%s", eo_last_error(ctx));
    ck_assert_int_eq(eo_grad_scaler_update(ctx, sc), EO_OK);
    eo_rewind(ctx, m);
}

/* A fresh 4-weight model at fx_gs_w0, SGD(lr 0.5), and a scaler. */
static void start(eo_ctx *ctx, eo_device dev, eo_params *ps, eo_optimizer *o,
                  eo_grad_scaler *sc, float init_scale, int64_t interval)
{
    int64_t four = 4;
    eo_tensor *w;
    ck_assert_int_eq(eo_params_init(ctx, ps, 1), EO_OK);
    ck_assert_int_eq(eo_param_new(ctx, dev, "w", 1, &four, &w), EO_OK);
    ck_assert_int_eq(eo_write(ctx, w, fx_gs_w0, sizeof fx_gs_w0), EO_OK);
    ck_assert_int_eq(eo_params_add(ctx, ps, w), EO_OK);
    ck_assert_int_eq(eo_sgd_init(ctx, o, ps, FX_GS_LR, 0.0f, 0.0f, 0), EO_OK);
    ck_assert_int_eq(eo_grad_scaler_init_ex(ctx, sc, 1, init_scale, 2.0f, 0.5f, interval), EO_OK);
}

static void expect_weights(eo_ctx *ctx, const eo_params *ps, const float want[4], int step)
{
    float got[4];
    ck_assert_int_eq(eo_read(ctx, ps->items[0], got, sizeof got), EO_OK);
    for (int i = 0; i < 4; i++)
        ck_assert_msg(got[i] == want[i], "step %d: w[%d] = %a, torch %a", step, i,
                      (double)got[i], (double)want[i]);
}

/* B: the defaults; the scale doubles after 2000 good steps. */
static void replay_b(eo_ctx *ctx, eo_device dev)
{
    eo_params ps;
    eo_optimizer o;
    eo_grad_scaler sc;
    start(ctx, dev, &ps, &o, &sc, 65536.0f, 2000);
    eo_grad_scaler def;
    ck_assert_int_eq(eo_grad_scaler_init(ctx, &def, 1), EO_OK);
    ck_assert(def.scale == 65536.0f && def.growth_factor == 2.0f && def.backoff_factor == 0.5f &&
              def.growth_interval == 2000);
    sc = def;
    for (int k = 0; k < FX_GS_B_STEPS; k++) {
        int stepped = 0;
        scaled_step(ctx, &sc, &o, &ps, dev, fx_gs_fin, 0, &stepped);
        ck_assert(stepped);
        if (k >= 1998) {
            ck_assert_msg(sc.scale == fx_gs_b_scale[k - 1998], "B step %d: scale %a", k,
                          (double)sc.scale);
            ck_assert_int_eq(sc.growth_tracker, fx_gs_b_tracker[k - 1998]);
        }
    }
    expect_weights(ctx, &ps, fx_gs_b_w, FX_GS_B_STEPS);
}

void eo_test_grad_scaler_replay(eo_ctx *ctx, eo_device dev, int with_b)
{
    eo_params ps;
    eo_optimizer o;
    eo_grad_scaler sc;
    /* A: interval 3, infs, a NaN, an overflow of c * S; some steps
     * unscale explicitly first (as before clipping). */
    start(ctx, dev, &ps, &o, &sc, 65536.0f, FX_GS_A_INTERVAL);
    for (int k = 0; k < FX_GS_A_STEPS; k++) {
        const fx_gs_step *f = &fx_gs_a[k];
        int stepped = -1;
        scaled_step(ctx, &sc, &o, &ps, dev, f->c, f->unscale_first, &stepped);
        ck_assert_msg(stepped == !f->skipped, "A step %d: stepped %d, torch skipped %d", k,
                      stepped, f->skipped);
        ck_assert_msg(sc.scale == f->scale, "A step %d: scale %a, torch %a", k, (double)sc.scale,
                      (double)f->scale);
        ck_assert_int_eq(sc.growth_tracker, f->tracker);
        expect_weights(ctx, &ps, f->w, k);
    }
    if (with_b)
        replay_b(ctx, dev);
    /* C: growth that would reach inf keeps the old scale. */
    start(ctx, dev, &ps, &o, &sc, 0x1p126f, 1);
    for (int k = 0; k < 3; k++) {
        scaled_step(ctx, &sc, &o, &ps, dev, fx_gs_fin, 0, NULL);
        ck_assert_msg(sc.scale == fx_gs_c_scale[k], "C step %d: scale %a", k, (double)sc.scale);
    }
    ck_assert_int_eq(sc.skipped, 0);
}

START_TEST(grad_scaler_matches_torch_cpu)
{
    eo_ctx *ctx = eo_test_ctx(1, 4);
    eo_test_grad_scaler_replay(ctx, EO_CPU, 1);
    eo_test_ctx_free(ctx);
}
END_TEST

/* GradScaler's refusals (RuntimeError / assert there, EO_ERR_STATE or
 * EO_ERR_ARG here), each leaving the scaler usable; and enabled 0 as a
 * pass-through that steps whatever the gradients hold. */
START_TEST(grad_scaler_state_machine_and_disabled)
{
    eo_ctx *ctx = eo_test_ctx(1, 4);
    eo_params ps;
    eo_optimizer o;
    eo_grad_scaler sc;
    start(ctx, EO_CPU, &ps, &o, &sc, 65536.0f, 2000);
    ck_assert_int_eq(eo_grad_scaler_update(ctx, &sc), EO_ERR_STATE); /* no check yet */
    ck_assert_int_eq(eo_grad_scaler_unscale(ctx, &sc, &ps), EO_OK);
    ck_assert_int_eq(eo_grad_scaler_unscale(ctx, &sc, &ps), EO_ERR_STATE); /* twice */
    ck_assert_int_eq(eo_grad_scaler_step(ctx, &sc, &o, NULL), EO_OK);
    ck_assert_int_eq(eo_grad_scaler_step(ctx, &sc, &o, NULL), EO_ERR_STATE); /* twice */
    ck_assert_int_eq(eo_grad_scaler_unscale(ctx, &sc, &ps), EO_ERR_STATE); /* after step */
    ck_assert_int_eq(eo_grad_scaler_update(ctx, &sc), EO_OK);
    ck_assert_int_eq(sc.growth_tracker, 1);
    /* bad settings */
    eo_grad_scaler bad;
    ck_assert_int_eq(eo_grad_scaler_init_ex(ctx, &bad, 1, 0.0f, 2.0f, 0.5f, 1), EO_ERR_ARG);
    ck_assert_int_eq(eo_grad_scaler_init_ex(ctx, &bad, 1, 1.0f, 1.0f, 0.5f, 1), EO_ERR_ARG);
    ck_assert_int_eq(eo_grad_scaler_init_ex(ctx, &bad, 1, 1.0f, 2.0f, 1.0f, 1), EO_ERR_ARG);
    ck_assert_int_eq(eo_grad_scaler_init_ex(ctx, &bad, 1, 1.0f, 2.0f, 0.5f, 0), EO_ERR_ARG);
    ck_assert_int_eq(eo_grad_scaler_init_ex(ctx, &bad, 1, NAN, 2.0f, 0.5f, 1), EO_ERR_ARG);
    ck_assert_int_eq(eo_grad_scaler_step(ctx, &bad, &o, NULL), EO_ERR_STATE); /* failed init */
    ck_assert_int_eq(eo_grad_scaler_init(ctx, NULL, 1), EO_ERR_ARG);
    /* disabled: the loss unchanged, an inf gradient still steps */
    eo_grad_scaler off;
    ck_assert_int_eq(eo_grad_scaler_init(ctx, &off, 0), EO_OK);
    const float c[4] = { INFINITY, 0, 0, 0 };
    int stepped = 0;
    scaled_step(ctx, &off, &o, &ps, EO_CPU, c, 1, &stepped);
    ck_assert_int_eq(stepped, 1);
    ck_assert_float_eq(off.scale, 65536.0f);
    float w[4];
    ck_assert_int_eq(eo_read(ctx, ps.items[0], w, sizeof w), EO_OK);
    ck_assert(isinf(w[0]));
    eo_test_ctx_free(ctx);
}
END_TEST

/* A step whose optimizer step fails is not a step: the scaler is not
 * marked as stepped, so the call can be retried (without unscaling the
 * gradients again) and counts as a good step once it has run; an update
 * without a successful retry neither grows nor backs off. It used to
 * refuse the retry (EO_ERR_STATE) and count the failed step as good. */
START_TEST(failed_step_can_be_retried_and_is_not_counted)
{
    eo_ctx *ctx = eo_test_ctx(1, 4);
    eo_params ps;
    eo_optimizer o;
    eo_grad_scaler sc;
    start(ctx, EO_CPU, &ps, &o, &sc, 4.0f, 2000);
    float *g = ps.items[0]->grad->data;
    for (int i = 0; i < 4; i++)
        g[i] = 8.0f; /* scaled by 4: 2 once unscaled */
    o.lr = NAN; /* the optimizer step refuses it before changing anything */
    int stepped = -1;
    ck_assert_int_eq(eo_grad_scaler_step(ctx, &sc, &o, &stepped), EO_ERR_ARG);
    ck_assert_int_eq(stepped, 0);
    ck_assert_float_eq(g[0], 2.0f); /* unscaled once */
    ck_assert_int_eq(eo_grad_scaler_unscale(ctx, &sc, &ps), EO_ERR_STATE); /* not again */
    o.lr = FX_GS_LR;
    ck_assert_msg(eo_grad_scaler_step(ctx, &sc, &o, &stepped) == EO_OK, "%s",
                  eo_last_error(ctx));
    ck_assert_int_eq(stepped, 1);
    ck_assert_float_eq(g[0], 2.0f); /* still unscaled once */
    ck_assert_int_eq(o.step, 1);
    ck_assert_int_eq(eo_grad_scaler_step(ctx, &sc, &o, NULL), EO_ERR_STATE); /* now twice */
    ck_assert_int_eq(eo_grad_scaler_update(ctx, &sc), EO_OK);
    ck_assert_int_eq(sc.growth_tracker, 1);
    /* failed and given up: the update counts nothing, the next step runs */
    for (int i = 0; i < 4; i++)
        g[i] = 8.0f;
    o.lr = NAN;
    ck_assert_int_eq(eo_grad_scaler_step(ctx, &sc, &o, NULL), EO_ERR_ARG);
    ck_assert_int_eq(eo_grad_scaler_update(ctx, &sc), EO_OK);
    ck_assert_int_eq(sc.growth_tracker, 1);
    ck_assert_float_eq(sc.scale, 4.0f);
    o.lr = FX_GS_LR;
    ck_assert_int_eq(eo_grad_scaler_step(ctx, &sc, &o, &stepped), EO_OK);
    ck_assert_int_eq(stepped, 1);
    ck_assert_int_eq(eo_grad_scaler_update(ctx, &sc), EO_OK);
    ck_assert_int_eq(sc.growth_tracker, 2);
    eo_test_ctx_free(ctx);
}
END_TEST

/* core/nn.h's recipe with every status checked, through a step whose
 * gradients overflow: clipping returns the inf norm with EO_OK (it used
 * to return EO_ERR_NUMERIC, ending the run at its first overflow), the
 * step is skipped, the scale backs off, and the next step trains. */
START_TEST(recipe_survives_an_overflow_with_every_status_checked)
{
    eo_ctx *ctx = eo_test_ctx(1, 4);
    eo_params ps;
    eo_optimizer o;
    eo_grad_scaler sc;
    start(ctx, EO_CPU, &ps, &o, &sc, 65536.0f, 2000);
    const float big[4] = { INFINITY, 1, 1, 1 }, fine[4] = { 1, 1, 1, 1 };
    for (int step = 0; step < 2; step++) {
        eo_mark m = eo_mark_get(ctx);
        int64_t four = 4;
        eo_tensor *c, *prod, *loss, *scaled;
        ck_assert_int_eq(eo_params_zero_grad(ctx, &ps), EO_OK);
        ck_assert_int_eq(eo_tensor_new(ctx, EO_STEP, EO_CPU, EO_F32, 1, &four, &c), EO_OK);
        ck_assert_int_eq(eo_write(ctx, c, step ? fine : big, sizeof big), EO_OK);
        ck_assert_int_eq(eo_mul(ctx, ps.items[0], c, &prod), EO_OK);
        ck_assert_int_eq(eo_sum_all(ctx, prod, &loss), EO_OK);
        ck_assert_int_eq(eo_grad_scaler_scale_loss(ctx, &sc, loss, &scaled), EO_OK);
        ck_assert_int_eq(eo_backward(ctx, scaled), EO_OK);
        ck_assert_int_eq(eo_grad_scaler_unscale(ctx, &sc, &ps), EO_OK);
        float norm = 0;
        ck_assert_msg(eo_clip_grad_norm(ctx, &ps, 1.0f, &norm) == EO_OK, "step %d: %s", step,
                      eo_last_error(ctx));
        ck_assert(step ? norm == 2.0f : isinf(norm));
        int stepped = -1;
        ck_assert_int_eq(eo_grad_scaler_step(ctx, &sc, &o, &stepped), EO_OK);
        ck_assert_int_eq(stepped, step);
        ck_assert_int_eq(eo_grad_scaler_update(ctx, &sc), EO_OK);
        ck_assert_int_eq(eo_rewind(ctx, m), EO_OK);
    }
    ck_assert_float_eq(sc.scale, 32768.0f);
    ck_assert_int_eq(o.step, 1);
    eo_test_ctx_free(ctx);
}
END_TEST

/* The kernel alone: the flag is set by inf and NaN only (not by the
 * largest finite float), never cleared, and every element is scaled. */
START_TEST(unscale_check_kernel)
{
    float g[5] = { 2.0f, -0x1.fffffep127f, 0.0f, -4.0f, 1.0f }, found = 0;
    eo_k_unscale_check(5, g, 0.5f, &found, NULL);
    ck_assert_float_eq(found, 0.0f);
    ck_assert_float_eq(g[0], 1.0f);
    ck_assert_float_eq(g[3], -2.0f);
    g[2] = NAN;
    eo_k_unscale_check(5, g, 1.0f, &found, NULL);
    ck_assert_float_eq(found, 1.0f);
    g[2] = 0;
    eo_k_unscale_check(5, g, 1.0f, &found, NULL); /* stays set */
    ck_assert_float_eq(found, 1.0f);
    found = 0;
    g[4] = -INFINITY;
    eo_k_unscale_check(5, g, 1.0f, &found, NULL);
    ck_assert_float_eq(found, 1.0f);
}
END_TEST

Suite *eo_suite_grad_scaler(void)
{
    Suite *s = suite_create("grad_scaler");
    TCase *tc = tcase_create("grad_scaler");
    tcase_add_test(tc, grad_scaler_matches_torch_cpu);
    tcase_add_test(tc, grad_scaler_state_machine_and_disabled);
    tcase_add_test(tc, failed_step_can_be_retried_and_is_not_counted);
    tcase_add_test(tc, recipe_survives_an_overflow_with_every_status_checked);
    tcase_add_test(tc, unscale_check_kernel);
    suite_add_tcase(s, tc);
    return s;
}
