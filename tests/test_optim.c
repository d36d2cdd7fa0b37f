/* tests/test_optim.c — optimizer steps, gradient clipping and learning-
 * rate schedules through the public API (core/nn.h), each against values
 * worked out here from the papers' formulas in double precision. */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <string.h>
#include "core/nn.h"
#include "tests/gradcheck.h"

/* One parameter of n elements with gradient g, in a list of its own. */
static eo_tensor *one_param(eo_ctx *ctx, eo_params *ps, const float *w, const float *g, int n)
{
    eo_tensor *p;
    int64_t shape[1] = { n };
    ck_assert_int_eq(eo_params_init(ctx, ps, 1), EO_OK);
    ck_assert_int_eq(eo_param_new(ctx, EO_CPU, "p", 1, shape, &p), EO_OK);
    ck_assert_int_eq(eo_params_add(ctx, ps, p), EO_OK);
    for (int i = 0; i < n; i++) {
        ((float *)p->data)[i] = w[i];
        ((float *)p->grad->data)[i] = g[i];
    }
    return p;
}

/* torch.optim.SGD's dampening: the buffer starts undamped (v = d on the
 * first step), then v = mu v + (1 - dampening) d. Three steps with a
 * gradient that changes, against that recurrence in double; and the
 * arguments torch refuses, refused. */
START_TEST(sgd_dampening_as_torch)
{
    const float w0[2] = { 1.0f, -2.0f };
    const double lr = 0.1, mu = 0.9, damp = 0.3, wd = 0.01;
    eo_ctx *ctx = eo_test_ctx(1, 1);
    eo_params ps;
    float g0[2] = { 0.5f, 0.25f };
    eo_tensor *p = one_param(ctx, &ps, w0, g0, 2);
    eo_optimizer o;
    ck_assert_int_eq(eo_sgd_init_ex(ctx, &o, &ps, (float)lr, (float)mu, (float)damp, (float)wd, 0),
                     EO_OK);
    double w[2] = { w0[0], w0[1] }, v[2] = { 0, 0 };
    for (int step = 0; step < 3; step++) {
        for (int i = 0; i < 2; i++)
            ((float *)p->grad->data)[i] = g0[i] * (float)(step + 1);
        ck_assert_int_eq(eo_optimizer_step(ctx, &o), EO_OK);
        for (int i = 0; i < 2; i++) {
            const double d = (double)((float)(g0[i] * (float)(step + 1))) + wd * w[i];
            v[i] = step == 0 ? d : mu * v[i] + (1 - damp) * d;
            w[i] -= lr * v[i];
            ck_assert_double_eq_tol(((float *)p->data)[i], w[i], 1e-6);
        }
    }
    eo_optimizer bad;
    ck_assert_int_eq(eo_sgd_init_ex(ctx, &bad, &ps, 0.1f, 0.9f, 0.1f, 0.0f, 1), EO_ERR_ARG);
    ck_assert_int_eq(eo_sgd_init_ex(ctx, &bad, &ps, 0.1f, 0.9f, NAN, 0.0f, 0), EO_ERR_ARG);
    ck_assert_int_eq(eo_sgd_init_ex(ctx, &bad, &ps, 0.1f, 0.9f, 1.5f, 0.0f, 0), EO_ERR_ARG);
    eo_test_ctx_free(ctx);
}
END_TEST

START_TEST(sgd_plain_momentum_nesterov_weight_decay)
{
    /* torch.optim.SGD (dampening 0): d = g + wd w; v = mu v + d;
     * d = nesterov ? d + mu v : v; w -= lr d. Two steps, same gradient. */
    const float w0[3] = { 1.0f, -2.0f, 0.5f }, g[3] = { 0.5f, 0.25f, -1.0f };
    const double lr = 0.1, mu = 0.9, wd = 0.01;
    for (int variant = 0; variant < 3; variant++) { /* plain, momentum, nesterov */
        eo_ctx *ctx = eo_test_ctx(1, 1);
        eo_params ps;
        eo_tensor *p = one_param(ctx, &ps, w0, g, 3);
        eo_optimizer o;
        double m = variant ? mu : 0.0;
        ck_assert_int_eq(eo_sgd_init(ctx, &o, &ps, (float)lr, (float)m, (float)wd, variant == 2), EO_OK);
        double w[3] = { w0[0], w0[1], w0[2] }, v[3] = { 0, 0, 0 };
        for (int step = 0; step < 2; step++) {
            ck_assert_int_eq(eo_optimizer_step(ctx, &o), EO_OK);
            for (int i = 0; i < 3; i++) {
                double d = g[i] + wd * w[i];
                if (m > 0) {
                    v[i] = m * v[i] + d;
                    d = variant == 2 ? d + m * v[i] : v[i];
                }
                w[i] -= lr * d;
                ck_assert_double_eq_tol(((float *)p->data)[i], w[i], 1e-6);
            }
        }
        eo_test_ctx_free(ctx);
    }
    /* One value by hand: w 1, g 0.5, lr 0.1, wd 0.01, Nesterov 0.9:
     * d = 0.51, v = 0.51, d + 0.9 v = 0.969, w = 1 - 0.0969 = 0.9031. */
    eo_ctx *ctx = eo_test_ctx(1, 1);
    eo_params ps;
    float one = 1.0f, half = 0.5f;
    eo_tensor *p = one_param(ctx, &ps, &one, &half, 1);
    eo_optimizer o;
    eo_sgd_init(ctx, &o, &ps, 0.1f, 0.9f, 0.01f, 1);
    eo_optimizer_step(ctx, &o);
    ck_assert_float_eq_tol(*(float *)p->data, 0.9031f, 1e-6f);
    ck_assert_int_eq(eo_sgd_init(ctx, &o, &ps, 0.1f, 0.0f, 0.0f, 1), EO_ERR_ARG);
    eo_test_ctx_free(ctx);
}
END_TEST

START_TEST(adamw_two_steps_match_the_paper)
{
    /* Loshchilov & Hutter 2019, Algorithm 2, with Adam's bias correction:
     * w -= lr wd w; m = b1 m + (1-b1) g; v = b2 v + (1-b2) g^2;
     * w -= lr (m / (1-b1^t)) / (sqrt(v / (1-b2^t)) + eps). */
    const float w0[4] = { 1.0f, -0.5f, 2.0f, 0.0f }, g[4] = { 0.5f, -0.1f, 3.0f, 1e-4f };
    const double lr = 0.01, b1 = 0.9, b2 = 0.999, eps = 1e-8, wd = 0.1;
    eo_ctx *ctx = eo_test_ctx(1, 1);
    eo_params ps;
    eo_tensor *p = one_param(ctx, &ps, w0, g, 4);
    eo_optimizer o;
    ck_assert_int_eq(eo_adamw_init(ctx, &o, &ps, (float)lr, (float)b1, (float)b2, (float)eps, (float)wd), EO_OK);
    double w[4], m[4] = { 0 }, v[4] = { 0 };
    for (int i = 0; i < 4; i++)
        w[i] = w0[i];
    for (int t = 1; t <= 3; t++) {
        ck_assert_int_eq(eo_optimizer_step(ctx, &o), EO_OK);
        for (int i = 0; i < 4; i++) {
            w[i] -= lr * wd * w[i];
            m[i] = b1 * m[i] + (1 - b1) * g[i];
            v[i] = b2 * v[i] + (1 - b2) * (double)g[i] * g[i];
            double mh = m[i] / (1 - pow(b1, t)), vh = v[i] / (1 - pow(b2, t));
            w[i] -= lr * mh / (sqrt(vh) + eps);
            ck_assert_double_eq_tol(((float *)p->data)[i], w[i], 2e-6);
        }
    }
    /* By hand, first step of element 0: w = 1 - 0.001 = 0.999, then the
     * bias-corrected ratio is exactly g/|g| = 1, so w = 0.999 - 0.01. */
    ck_assert_int_eq(o.step, 3);
    eo_test_ctx_free(ctx);
}
END_TEST

/* decay_min_rank 2 (nanoGPT's parameter groups): a 2-D weight is decayed,
 * a 1-D bias and a gain are not. With a zero gradient AdamW's update is
 * the decay alone (m = v = 0, the ratio 0), so a 2-D weight becomes
 * w (1 - lr wd) and a 1-D one stays bit-identical; with the default 0
 * both decay (the old behaviour). */
START_TEST(adamw_decay_min_rank_spares_1d_parameters)
{
    const double lr = 0.1, wd = 0.5;
    for (int min_rank = 0; min_rank <= 2; min_rank += 2) {
        eo_ctx *ctx = eo_test_ctx(1, 1);
        eo_params ps;
        eo_tensor *w2, *b1;
        int64_t s2[2] = { 2, 3 }, s1[1] = { 3 };
        ck_assert_int_eq(eo_params_init(ctx, &ps, 2), EO_OK);
        ck_assert_int_eq(eo_param_new(ctx, EO_CPU, "w", 2, s2, &w2), EO_OK);
        ck_assert_int_eq(eo_param_new(ctx, EO_CPU, "b", 1, s1, &b1), EO_OK);
        ck_assert_int_eq(eo_params_add(ctx, &ps, w2), EO_OK);
        ck_assert_int_eq(eo_params_add(ctx, &ps, b1), EO_OK);
        for (int i = 0; i < 6; i++) {
            ((float *)w2->data)[i] = 1.0f + (float)i;
            ((float *)w2->grad->data)[i] = 0.0f;
        }
        for (int i = 0; i < 3; i++) {
            ((float *)b1->data)[i] = -1.0f - (float)i;
            ((float *)b1->grad->data)[i] = 0.0f;
        }
        eo_optimizer o;
        ck_assert_int_eq(eo_adamw_init(ctx, &o, &ps, (float)lr, 0.9f, 0.999f, 1e-8f, (float)wd),
                         EO_OK);
        ck_assert_int_eq(o.decay_min_rank, 0); /* the init's default: decay everything */
        o.decay_min_rank = min_rank;
        ck_assert_int_eq(eo_optimizer_step(ctx, &o), EO_OK);
        for (int i = 0; i < 6; i++)
            ck_assert_double_eq_tol(((float *)w2->data)[i], (1.0 + i) * (1 - lr * wd), 1e-6);
        for (int i = 0; i < 3; i++) {
            double b0 = -1.0 - i;
            ck_assert_double_eq_tol(((float *)b1->data)[i], min_rank == 2 ? b0 : b0 * (1 - lr * wd),
                                    1e-6);
        }
        eo_test_ctx_free(ctx);
    }
}
END_TEST

START_TEST(clip_grad_norm_scales_to_the_limit)
{
    eo_ctx *ctx = eo_test_ctx(1, 1);
    eo_params ps;
    const float w[2] = { 0, 0 }, g[2] = { 3.0f, 4.0f };
    eo_tensor *p = one_param(ctx, &ps, w, g, 2);
    float norm;
    ck_assert_int_eq(eo_clip_grad_norm(ctx, &ps, 10.0f, &norm), EO_OK); /* under: unchanged */
    ck_assert_float_eq_tol(norm, 5.0f, 1e-6f);
    ck_assert_float_eq(((float *)p->grad->data)[0], 3.0f);
    ck_assert_int_eq(eo_clip_grad_norm(ctx, &ps, 1.0f, &norm), EO_OK);
    ck_assert_float_eq_tol(((float *)p->grad->data)[0], 3.0f / (5.0f + 1e-6f), 1e-6f);
    ck_assert_float_eq_tol(((float *)p->grad->data)[1], 4.0f / (5.0f + 1e-6f), 1e-6f);
    /* A non-finite norm is a result (torch's error_if_nonfinite=False):
     * EO_OK, the norm returned, the gradients multiplied as torch's
     * clamp(max_norm / (norm + 1e-6), max=1) does -- by 0 for inf (inf
     * * 0 is NaN, the rest 0), by NaN for NaN. Only when asked is it an
     * error, and then nothing changes. */
    float *gd = p->grad->data;
    gd[0] = INFINITY, gd[1] = 2.0f;
    ck_assert_int_eq(eo_clip_grad_norm_ex(ctx, &ps, 1.0f, 1, &norm), EO_ERR_NUMERIC);
    ck_assert(isinf(norm) && isinf(gd[0]) && gd[1] == 2.0f);
    ck_assert_ptr_nonnull(strstr(eo_last_error(ctx), "error_if_nonfinite"));
    norm = 0;
    ck_assert_int_eq(eo_clip_grad_norm(ctx, &ps, 1.0f, &norm), EO_OK);
    ck_assert(isinf(norm) && isnan(gd[0]) && gd[1] == 0.0f);
    gd[0] = NAN, gd[1] = 2.0f;
    ck_assert_int_eq(eo_clip_grad_norm_ex(ctx, &ps, 1.0f, 1, &norm), EO_ERR_NUMERIC);
    ck_assert_int_eq(eo_clip_grad_norm(ctx, &ps, 1.0f, &norm), EO_OK);
    ck_assert(isnan(norm) && isnan(gd[0]) && isnan(gd[1]));
    eo_test_ctx_free(ctx);
}
END_TEST

/* The optimizer keeps its own copy of the list it was given: a
 * parameter added to the caller's list afterwards is not stepped (it has
 * no state; it used to be read past the end of the state array), and the
 * caller's list may go away (a step used to read it, and with a cleared
 * or reused list "succeeded" without updating). Every init. */
static void list_changes_after_init(int kind)
{
    eo_ctx *ctx = eo_test_ctx(1, 1);
    eo_params ps;
    const float w[2] = { 1.0f, 1.0f }, g[2] = { 1.0f, 1.0f };
    eo_tensor *a = one_param(ctx, &ps, w, g, 2), *b;
    int64_t two = 2;
    eo_optimizer o;
    if (kind == 0)
        ck_assert_int_eq(eo_sgd_init(ctx, &o, &ps, 0.5f, 0.9f, 0.0f, 0), EO_OK);
    else if (kind == 1)
        ck_assert_int_eq(eo_adamw_init(ctx, &o, &ps, 0.5f, 0.9f, 0.999f, 1e-8f, 0.0f), EO_OK);
    else
        ck_assert_int_eq(eo_adamw_init_shard(ctx, &o, &ps, 0.5f, 0.9f, 0.999f, 1e-8f, 0.0f,
                                             0, 2), EO_OK);
    ck_assert_ptr_ne(o.params, &ps);
    /* more room than the list had: the new entry lands inside its array */
    eo_params grown;
    ck_assert_int_eq(eo_params_init(ctx, &grown, 2), EO_OK);
    ck_assert_int_eq(eo_params_add(ctx, &grown, a), EO_OK);
    ps = grown;
    ck_assert_int_eq(eo_param_new(ctx, EO_CPU, "b", 1, &two, &b), EO_OK);
    ck_assert_int_eq(eo_fill(ctx, b, 1.0f), EO_OK);
    ck_assert_int_eq(eo_fill(ctx, b->grad, 1.0f), EO_OK);
    ck_assert_int_eq(eo_params_add(ctx, &ps, b), EO_OK);
    ck_assert_msg(eo_optimizer_step(ctx, &o) == EO_OK, "%s", eo_last_error(ctx));
    ck_assert_float_eq(((float *)a->data)[0], 0.5f); /* stepped: 1 - 0.5 * 1 */
    ck_assert_float_eq(((float *)b->data)[0], 1.0f); /* added later: not stepped */
    /* the caller's list gone (cleared here, as a reused stack slot would be) */
    eo_params empty = { NULL, 0, 0, 0 };
    ps = empty;
    float before = ((float *)a->data)[0];
    ck_assert_int_eq(eo_optimizer_step(ctx, &o), EO_OK);
    ck_assert_float_ne(((float *)a->data)[0], before);
    ck_assert_int_eq(o.params->count, 1);
    /* a list that was never made is refused with a message, not read */
    eo_params junk = { NULL, 3, 3, 0 };
    eo_optimizer o2;
    ck_assert_int_eq(eo_sgd_init(ctx, &o2, &junk, 0.5f, 0.0f, 0.0f, 0), EO_ERR_ARG);
    ck_assert_ptr_nonnull(strstr(eo_last_error(ctx), "sgd_init"));
    ck_assert_int_eq(eo_optimizer_step(ctx, &o2), EO_ERR_STATE);
    eo_test_ctx_free(ctx);
}

START_TEST(optimizer_owns_its_parameter_list)
{
    for (int kind = 0; kind < 3; kind++)
        list_changes_after_init(kind);
}
END_TEST

START_TEST(learning_rate_schedules)
{
    eo_lr_schedule c = { EO_LR_CONSTANT, 0.5f, 0, 0, 0, 0, 0 };
    ck_assert_float_eq(eo_lr_at(&c, 1000), 0.5f);
    eo_lr_schedule s = { EO_LR_STEP, 1.0f, 0, 0.1f, 10, 0, 0 };
    ck_assert_float_eq_tol(eo_lr_at(&s, 9), 1.0f, 1e-7f);
    ck_assert_float_eq_tol(eo_lr_at(&s, 10), 0.1f, 1e-7f);
    ck_assert_float_eq_tol(eo_lr_at(&s, 25), 0.01f, 1e-8f);
    eo_lr_schedule k = { EO_LR_COSINE, 1.0f, 0.0f, 0, 0, 10, 110 };
    ck_assert_float_eq_tol(eo_lr_at(&k, 0), 0.1f, 1e-7f);  /* warm-up: (0+1)/10 */
    ck_assert_float_eq_tol(eo_lr_at(&k, 9), 1.0f, 1e-7f);
    ck_assert_float_eq_tol(eo_lr_at(&k, 10), 1.0f, 1e-6f); /* cosine starts at the peak */
    ck_assert_float_eq_tol(eo_lr_at(&k, 60), 0.5f, 1e-6f); /* half way: (1 + cos(pi/2)) / 2 */
    ck_assert_float_eq_tol(eo_lr_at(&k, 110), 0.0f, 1e-6f);
    ck_assert_float_eq_tol(eo_lr_at(&k, 500), 0.0f, 1e-6f); /* clamped after the end */
}
END_TEST

/* The STEP walk against the plain in-order product it has always been:
 * equal bits for every small k (early settling included), and a step
 * number of any size answers at once (it was one multiplication per
 * step_size steps: INT64_MAX steps never finished). */
static float step_walk(float base, float gamma, int64_t k)
{
    volatile float lr = base; /* volatile: the same float multiplications, in order */
    for (; k > 0; k--)
        lr = lr * gamma;
    return lr;
}

static uint32_t bits_of(float x)
{
    union { float f; uint32_t u; } v = { x };
    return v.u;
}

START_TEST(lr_step_any_step_number_is_fast_and_keeps_bits)
{
    const float gammas[] = { 0.5f, 0.1f, 0.9f, 1.0f, 2.0f, 0.0f, -0.5f, -1.0f,
                             nextafterf(1.0f, 0.0f) };
    for (size_t g = 0; g < sizeof gammas / sizeof gammas[0]; g++)
        for (int64_t k = 0; k <= 400; k++) {
            eo_lr_schedule s = { EO_LR_STEP, 0.1f, 0, gammas[g], 3, 0, 0 };
            float want = step_walk(0.1f, gammas[g], k);
            float got = eo_lr_at(&s, 3 * k + 2);
            ck_assert_msg(bits_of(got) == bits_of(want) || (isnan(got) && isnan(want)),
                          "gamma %g k %lld: got %a, the in-order product %a",
                          (double)gammas[g], (long long)k, (double)got, (double)want);
        }
    eo_lr_schedule s = { EO_LR_STEP, 0.1f, 0, 0.5f, 1, 0, 0 };
    ck_assert_uint_eq(bits_of(eo_lr_at(&s, INT64_MAX)), bits_of(step_walk(0.1f, 0.5f, 400)));
    s.gamma = 1.0f;
    ck_assert_uint_eq(bits_of(eo_lr_at(&s, INT64_MAX)), bits_of(0.1f));
    s.gamma = 2.0f;
    ck_assert(isinf(eo_lr_at(&s, INT64_MAX)));
    /* A negative gamma settles into a two-cycle of signs (+0, -0): the
     * parity of k still picks the right one. */
    s.gamma = -0.5f;
    ck_assert_uint_eq(bits_of(eo_lr_at(&s, INT64_MAX)), bits_of(step_walk(0.1f, -0.5f, 401)));
    ck_assert_uint_eq(bits_of(eo_lr_at(&s, INT64_MAX - 1)), bits_of(step_walk(0.1f, -0.5f, 400)));
    /* gamma one ulp below 1 moves one ulp per factor and never settles
     * early: the squaring finishes it, near 0 and not below it. */
    s.gamma = nextafterf(1.0f, 0.0f);
    float far = eo_lr_at(&s, INT64_MAX);
    ck_assert_msg(far >= 0 && far < 1e-30f, "gamma 1 - 2^-24, step INT64_MAX: %a", (double)far);
    /* Negative steps and step_size <= 0 stay at base. */
    s.gamma = 0.5f;
    ck_assert_float_eq(eo_lr_at(&s, INT64_MIN), 0.1f);
    s.step_size = 0;
    ck_assert_float_eq(eo_lr_at(&s, INT64_MAX), 0.1f);
}
END_TEST

/* COSINE with fields outside their range: nothing wraps (UBSan saw
 * total - warmup and step - warmup overflow) and the rate stays in
 * [min, base] — a negative step was a negative rate. A valid schedule's
 * rates keep their bits. eo_lr_schedule_check refuses the nonsense. */
START_TEST(lr_cosine_out_of_range_fields_are_clamped_and_refused)
{
    eo_lr_schedule k = { EO_LR_COSINE, 1.0f, 0.25f, 0, 0, 10, 110 };
    ck_assert_float_eq(eo_lr_at(&k, -3), eo_lr_at(&k, 0)); /* a step below 0 reads as 0 */
    ck_assert_float_eq(eo_lr_at(&k, INT64_MIN), eo_lr_at(&k, 0));
    ck_assert_float_eq(eo_lr_at(&k, INT64_MAX), 0.25f);
    const eo_lr_schedule bad[] = {
        { EO_LR_COSINE, 0.1f, 0.0f, 0, 0, -5, INT64_MAX },
        { EO_LR_COSINE, 0.1f, 0.0f, 0, 0, INT64_MAX, INT64_MIN },
        { EO_LR_COSINE, 0.1f, 0.0f, 0, 0, 5, INT64_MIN },
        { EO_LR_COSINE, 0.1f, 0.0f, 0, 0, INT64_MIN, INT64_MAX },
    };
    const int64_t steps[] = { INT64_MIN, -1, 0, 1, 4, 5, 6, INT64_MAX - 1, INT64_MAX };
    for (size_t b = 0; b < sizeof bad / sizeof bad[0]; b++)
        for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++) {
            float r = eo_lr_at(&bad[b], steps[i]);
            ck_assert_msg(r >= 0.0f && r <= 0.1f, "schedule %zu step %lld: rate %g",
                          b, (long long)steps[i], (double)r);
        }
    /* Warm-up below 0 reads as none: the cosine from step 0. */
    eo_lr_schedule w = { EO_LR_COSINE, 1.0f, 0.0f, 0, 0, -5, 100 };
    eo_lr_schedule w0 = { EO_LR_COSINE, 1.0f, 0.0f, 0, 0, 0, 100 };
    ck_assert_float_eq(eo_lr_at(&w, 50), eo_lr_at(&w0, 50));

    eo_ctx *ctx = eo_test_ctx(1, 1);
    ck_assert_int_eq(eo_lr_schedule_check(ctx, &k), EO_OK);
    for (size_t b = 0; b < sizeof bad / sizeof bad[0]; b++) {
        ck_assert_int_eq(eo_lr_schedule_check(ctx, &bad[b]), EO_ERR_ARG);
        ck_assert_ptr_nonnull(strstr(eo_last_error(ctx), "lr_schedule_check: warmup"));
    }
    ck_assert_str_eq(eo_last_error(ctx), "lr_schedule_check: warmup -9223372036854775808 and "
                                         "total 9223372036854775807 must satisfy 0 <= warmup <= total");
    eo_lr_schedule st = { EO_LR_STEP, 0.1f, 0, 0.5f, 1, 0, 0 };
    ck_assert_int_eq(eo_lr_schedule_check(ctx, &st), EO_OK);
    st.step_size = 0;
    ck_assert_int_eq(eo_lr_schedule_check(ctx, &st), EO_ERR_ARG);
    ck_assert_str_eq(eo_last_error(ctx), "lr_schedule_check: step_size must be > 0, got 0");
    st.step_size = 1;
    st.gamma = NAN;
    ck_assert_int_eq(eo_lr_schedule_check(ctx, &st), EO_ERR_ARG);
    ck_assert_ptr_nonnull(strstr(eo_last_error(ctx), "gamma"));
    st.gamma = 0.5f;
    st.base = -1.0f;
    ck_assert_int_eq(eo_lr_schedule_check(ctx, &st), EO_ERR_ARG);
    ck_assert_ptr_nonnull(strstr(eo_last_error(ctx), "base"));
    eo_lr_schedule c = { EO_LR_CONSTANT, 0.5f, -1.0f, -1.0f, -1, -1, -9 }; /* only base is read */
    ck_assert_int_eq(eo_lr_schedule_check(ctx, &c), EO_OK);
    c.kind = (eo_lr_kind)7;
    ck_assert_int_eq(eo_lr_schedule_check(ctx, &c), EO_ERR_ARG);
    ck_assert_int_eq(eo_lr_schedule_check(ctx, NULL), EO_ERR_ARG);
    ck_assert_int_eq(eo_lr_schedule_check(NULL, &st), EO_ERR_ARG);
    eo_test_ctx_free(ctx);
}
END_TEST

Suite *eo_suite_optim(void)
{
    Suite *s = suite_create("optim");
    TCase *tc = tcase_create("optim");
    tcase_add_test(tc, sgd_plain_momentum_nesterov_weight_decay);
    tcase_add_test(tc, sgd_dampening_as_torch);
    tcase_add_test(tc, adamw_two_steps_match_the_paper);
    tcase_add_test(tc, adamw_decay_min_rank_spares_1d_parameters);
    tcase_add_test(tc, clip_grad_norm_scales_to_the_limit);
    tcase_add_test(tc, optimizer_owns_its_parameter_list);
    tcase_add_test(tc, learning_rate_schedules);
    tcase_add_test(tc, lr_step_any_step_number_is_fast_and_keeps_bits);
    tcase_add_test(tc, lr_cosine_out_of_range_fields_are_clamped_and_refused);
    suite_add_tcase(s, tc);
    return s;
}
