/* tests/test_ops_torch.c — EveryO against PyTorch's own values for the
 * numerical edge cases, from tests/fixtures/numerics.h (written by
 * tools/reference/ref_numerics.py; CI needs no Python):
 *   cross-entropy at common offsets of 0, 1e4, 1e6 and 1e8 with reductions
 *   none, sum and mean (values and gradients), and with a NaN logit;
 *   softmax and log_softmax of rows holding NaN, +inf or a 1e8 offset;
 *   logsumexp (offsets, ±inf, NaN) and its gradient; maximum / minimum with
 *   NaN and ties; max with NaN (value and where the gradient goes); max
 *   pooling with NaN (several in a window, and after a ReLU); GELU far
 *   from 0 and at ±inf; the ReLU gradient at NaN; the log_softmax gradient
 *   at -inf entries; SGD with dampening; attention with NaN scores. Also,
 *   without fixtures, PyTorch's rules for maximum / minimum ties of ±0 and
 *   for dropout of NaN and inf (x * mask / (1 - p)).
 * Every case runs on the CPU and on CUDA (the PTX interpreter, or the GPU
 * with EO_TEST_CUDA=real): a loop test over the two devices.
 *
 * Tolerances: 1e-5 relative (plus 1e-6 absolute for probabilities and
 * gradients) against PyTorch's float32 results, whose rounding differs from
 * ours in the last bits; NaN must meet NaN and an infinity the same
 * infinity; maximum, minimum, max and pooling must be exact. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/everyo.h"
#include "core/nn.h"
#include "ops/kernels.h" /* eo_dropout_keep */
#include "tests/fixtures/numerics.h"
#include "tests/gradcheck.h"

#define DEVICES (EO_HAVE_CUDA ? 2 : 1)

static eo_ctx *ctx_on(eo_device dev)
{
    return dev == EO_CUDA ? eo_test_cuda_ctx(4, 16) : eo_test_ctx(4, 16);
}

static void ctx_done(eo_ctx *ctx, eo_device dev)
{
    if (dev == EO_CUDA)
        eo_test_cuda_ctx_free(ctx);
    else
        eo_test_ctx_free(ctx);
}

/* A tensor on dev holding n host values (F32 or I32). */
static eo_tensor *on(eo_ctx *ctx, eo_device dev, eo_dtype dt, int rank, const int64_t *shape,
                     const void *v, int requires_grad)
{
    eo_tensor *t;
    ck_assert_int_eq(eo_tensor_new(ctx, EO_STEP, dev, dt, rank, shape, &t), EO_OK);
    ck_assert_int_eq(eo_write(ctx, t, v, (size_t)eo_numel(t) * 4), EO_OK);
    t->requires_grad = (uint8_t)requires_grad;
    return t;
}

/* Compare t (any device) with PyTorch's n values. */
static void expect(eo_ctx *ctx, const char *what, const eo_tensor *t, const float *want, int64_t n,
                   double rtol, double atol)
{
    ck_assert_msg(eo_numel(t) == n, "%s: %lld values, want %lld", what, (long long)eo_numel(t),
                  (long long)n);
    float *got = malloc(sizeof(float) * (size_t)n);
    ck_assert_msg(eo_read(ctx, t, got, (size_t)n * 4) == EO_OK, "%s: %s", what, eo_last_error(ctx));
    for (int64_t i = 0; i < n; i++) {
        const double g = got[i], w = want[i];
        const int ok = isnan(w) ? isnan(g) : isinf(w) ? g == w : fabs(g - w) <= atol + rtol * fabs(w);
        ck_assert_msg(ok, "%s on %s [%lld]: %.9g, PyTorch %.9g", what,
                      t->device == EO_CUDA ? "cuda" : "cpu", (long long)i, g, w);
    }
    free(got);
}

static eo_tensor *backward_of(eo_ctx *ctx, eo_tensor *loss, eo_tensor *x)
{
    ck_assert_msg(eo_backward(ctx, loss) == EO_OK, "backward: %s", eo_last_error(ctx));
    return x->grad;
}

/* ---- cross-entropy ------------------------------------------------------------- */
static void ce_case(eo_device dev, const char *tag, const float *x, const float *none,
                    const float *sum, const float *mean, const float *gmean, const float *gnone)
{
    eo_ctx *ctx = ctx_on(dev);
    const int64_t sx[2] = { FX_CE_R, FX_CE_C }, sr[1] = { FX_CE_R };
    char what[64];
    eo_tensor *t = on(ctx, dev, EO_I32, 1, sr, fx_ce_target, 0), *y, *w, *p, *L;
    eo_tensor *a = on(ctx, dev, EO_F32, 2, sx, x, 1), *b = on(ctx, dev, EO_F32, 2, sx, x, 1);
    ck_assert_int_eq(eo_cross_entropy_ex(ctx, a, t, -100, EO_REDUCTION_NONE, &y), EO_OK);
    snprintf(what, sizeof what, "cross_entropy none, offset %s", tag);
    expect(ctx, what, y, none, FX_CE_R, 1e-5, 1e-5);
    w = on(ctx, dev, EO_F32, 1, sr, fx_ce_w, 0);
    ck_assert_int_eq(eo_mul(ctx, y, w, &p), EO_OK);
    ck_assert_int_eq(eo_sum_all(ctx, p, &L), EO_OK);
    snprintf(what, sizeof what, "d sum(w * none) / dlogits, offset %s", tag);
    expect(ctx, what, backward_of(ctx, L, a), gnone, FX_CE_R * FX_CE_C, 1e-4, 1e-6);
    ck_assert_int_eq(eo_cross_entropy_ex(ctx, b, t, -100, EO_REDUCTION_SUM, &y), EO_OK);
    snprintf(what, sizeof what, "cross_entropy sum, offset %s", tag);
    expect(ctx, what, y, sum, 1, 1e-5, 1e-5);
    ck_assert_int_eq(eo_cross_entropy(ctx, b, t, -100, &y), EO_OK);
    snprintf(what, sizeof what, "cross_entropy mean, offset %s", tag);
    expect(ctx, what, y, mean, 1, 1e-5, 1e-5);
    snprintf(what, sizeof what, "d mean / dlogits, offset %s", tag);
    expect(ctx, what, backward_of(ctx, y, b), gmean, FX_CE_R * FX_CE_C, 1e-4, 1e-6);
    ctx_done(ctx, dev);
}

START_TEST(cross_entropy_at_huge_offsets)
{
    const eo_device dev = _i ? EO_CUDA : EO_CPU;
    ce_case(dev, "0", fx_ce_x_0, fx_ce_none_0, fx_ce_sum_0, fx_ce_mean_0, fx_ce_gmean_0, fx_ce_gnone_0);
    ce_case(dev, "1e4", fx_ce_x_1e4, fx_ce_none_1e4, fx_ce_sum_1e4, fx_ce_mean_1e4, fx_ce_gmean_1e4,
            fx_ce_gnone_1e4);
    ce_case(dev, "1e6", fx_ce_x_1e6, fx_ce_none_1e6, fx_ce_sum_1e6, fx_ce_mean_1e6, fx_ce_gmean_1e6,
            fx_ce_gnone_1e6);
    ce_case(dev, "1e8", fx_ce_x_1e8, fx_ce_none_1e8, fx_ce_sum_1e8, fx_ce_mean_1e8, fx_ce_gmean_1e8,
            fx_ce_gnone_1e8);
    eo_ctx *ctx = ctx_on(dev);
    const int64_t sx[2] = { FX_CE_R, FX_CE_C }, sr[1] = { FX_CE_R };
    eo_tensor *t = on(ctx, dev, EO_I32, 1, sr, fx_ce_target, 0), *y;
    eo_tensor *x = on(ctx, dev, EO_F32, 2, sx, fx_ce_x_nan, 0);
    ck_assert_int_eq(eo_cross_entropy_ex(ctx, x, t, -100, EO_REDUCTION_NONE, &y), EO_OK);
    expect(ctx, "cross_entropy none, a NaN logit", y, fx_ce_none_nan, FX_CE_R, 1e-5, 1e-5);
    ctx_done(ctx, dev);
}
END_TEST

/* ---- softmax, log_softmax, logsumexp ------------------------------------------------ */
START_TEST(softmax_rows_with_nan_and_inf)
{
    const eo_device dev = _i ? EO_CUDA : EO_CPU;
    eo_ctx *ctx = ctx_on(dev);
    const int64_t s[2] = { FX_SM_R, FX_SM_C };
    eo_tensor *x = on(ctx, dev, EO_F32, 2, s, fx_sm_x, 0), *y;
    ck_assert_int_eq(eo_softmax(ctx, x, &y), EO_OK);
    expect(ctx, "softmax", y, fx_sm_softmax, FX_SM_R * FX_SM_C, 1e-5, 1e-6);
    ck_assert_int_eq(eo_log_softmax(ctx, x, &y), EO_OK);
    expect(ctx, "log_softmax", y, fx_sm_log_softmax, FX_SM_R * FX_SM_C, 1e-5, 1e-5);
    ctx_done(ctx, dev);
}
END_TEST

START_TEST(logsumexp_as_torch)
{
    const eo_device dev = _i ? EO_CUDA : EO_CPU;
    eo_ctx *ctx = ctx_on(dev);
    const int64_t s[2] = { FX_LSE_R, FX_LSE_C };
    eo_tensor *x = on(ctx, dev, EO_F32, 2, s, fx_lse_x, 1), *y, *L;
    ck_assert_int_eq(eo_logsumexp(ctx, x, 1, 0, &y), EO_OK);
    expect(ctx, "logsumexp", y, fx_lse_y, FX_LSE_R, 1e-6, 1e-6);
    ck_assert_int_eq(eo_sum_all(ctx, y, &L), EO_OK);
    expect(ctx, "logsumexp gradient", backward_of(ctx, L, x), fx_lse_grad, FX_LSE_R * FX_LSE_C,
           1e-5, 1e-6);
    ctx_done(ctx, dev);
}
END_TEST

/* ---- maximum / minimum, max, max pooling --------------------------------------------- */
START_TEST(maximum_minimum_max_pool_with_nan)
{
    const eo_device dev = _i ? EO_CUDA : EO_CPU;
    eo_ctx *ctx = ctx_on(dev);
    const int64_t n8[1] = { 8 };
    for (int mx = 0; mx < 2; mx++) {
        eo_tensor *a = on(ctx, dev, EO_F32, 1, n8, fx_mm_a, 1), *b = on(ctx, dev, EO_F32, 1, n8, fx_mm_b, 1);
        eo_tensor *y, *L;
        ck_assert_int_eq((mx ? eo_maximum : eo_minimum)(ctx, a, b, &y), EO_OK);
        expect(ctx, mx ? "maximum" : "minimum", y, mx ? fx_mm_max_y : fx_mm_min_y, 8, 0, 0);
        ck_assert_int_eq(eo_sum_all(ctx, y, &L), EO_OK);
        ck_assert_int_eq(eo_backward(ctx, L), EO_OK);
        expect(ctx, mx ? "maximum da" : "minimum da", a->grad, mx ? fx_mm_max_ga : fx_mm_min_ga, 8, 0, 0);
        expect(ctx, mx ? "maximum db" : "minimum db", b->grad, mx ? fx_mm_max_gb : fx_mm_min_gb, 8, 0, 0);
    }
    /* max over rows: the value, and the gradient lands on torch's index */
    const int64_t s34[2] = { 3, 4 };
    eo_tensor *x = on(ctx, dev, EO_F32, 2, s34, fx_max_x, 1), *y, *L;
    ck_assert_int_eq(eo_max(ctx, x, 1, 0, &y), EO_OK);
    expect(ctx, "max", y, fx_max_v, 3, 0, 0);
    ck_assert_int_eq(eo_sum_all(ctx, y, &L), EO_OK);
    float onehot[12] = { 0 };
    for (int r = 0; r < 3; r++)
        onehot[r * 4 + fx_max_i[r]] = 1.0f;
    expect(ctx, "max gradient (torch's indices)", backward_of(ctx, L, x), onehot, 12, 0, 0);
    /* max pooling */
    const int64_t s44[4] = { 1, 1, 4, 4 };
    eo_tensor *p = on(ctx, dev, EO_F32, 4, s44, fx_pool_x, 1);
    ck_assert_int_eq(eo_maxpool2d(ctx, p, 2, &y), EO_OK);
    expect(ctx, "max_pool2d", y, fx_pool_y, 4, 0, 0);
    ck_assert_int_eq(eo_sum_all(ctx, y, &L), EO_OK);
    expect(ctx, "max_pool2d gradient", backward_of(ctx, L, p), fx_pool_grad, 16, 0, 0);
    ctx_done(ctx, dev);
}
END_TEST

/* Several NaNs in a window: the last one takes the gradient (torch's rule);
 * the fused ReLU + pool as F.max_pool2d(F.relu(x)). k 2 (the vector path
 * on the CPU) and 3 (the scalar one). */
START_TEST(max_pool_with_several_nans)
{
    const eo_device dev = _i ? EO_CUDA : EO_CPU;
    eo_ctx *ctx = ctx_on(dev);
    for (int k = 2; k <= 3; k++)
        for (int fused = 0; fused < 2; fused++) {
            const int64_t side = k == 2 ? 4 : 3, s[4] = { 1, 1, side, side };
            const float *x = k == 2 ? fx_pool2_x : fx_pool3_x;
            const float *wy = k == 2 ? (fused ? fx_pool2_relu_y : fx_pool2_y)
                                     : (fused ? fx_pool3_relu_y : fx_pool3_y);
            const float *wg = k == 2 ? (fused ? fx_pool2_relu_grad : fx_pool2_grad)
                                     : (fused ? fx_pool3_relu_grad : fx_pool3_grad);
            eo_tensor *p = on(ctx, dev, EO_F32, 4, s, x, 1), *y, *L;
            ck_assert_int_eq((fused ? eo_relu_maxpool2d : eo_maxpool2d)(ctx, p, k, &y), EO_OK);
            char what[64];
            snprintf(what, sizeof what, "%smax_pool2d k %d", fused ? "relu + " : "", k);
            expect(ctx, what, y, wy, k == 2 ? 4 : 1, 0, 0);
            ck_assert_int_eq(eo_sum_all(ctx, y, &L), EO_OK);
            snprintf(what, sizeof what, "%smax_pool2d k %d gradient", fused ? "relu + " : "", k);
            expect(ctx, what, backward_of(ctx, L, p), wg, s[2] * s[3], 0, 0);
        }
    ctx_done(ctx, dev);
}
END_TEST

/* ---- activations far out, gradients at NaN and -inf ------------------------------------ */
START_TEST(gelu_relu_log_softmax_edges_as_torch)
{
    const eo_device dev = _i ? EO_CUDA : EO_CPU;
    eo_ctx *ctx = ctx_on(dev);
    const int64_t ng[1] = { FX_GELU_N }, nr[1] = { FX_RELU_N }, s34[2] = { 3, 4 };
    for (int erf = 0; erf < 2; erf++) {
        eo_tensor *x = on(ctx, dev, EO_F32, 1, ng, fx_gelu_x, 1), *y, *L;
        ck_assert_int_eq((erf ? eo_gelu_erf : eo_gelu)(ctx, x, &y), EO_OK);
        expect(ctx, erf ? "gelu_erf" : "gelu", y, erf ? fx_gelu_erf_y : fx_gelu_tanh_y, FX_GELU_N,
               1e-5, 1e-6);
        ck_assert_int_eq(eo_sum_all(ctx, y, &L), EO_OK);
        expect(ctx, erf ? "gelu_erf gradient" : "gelu gradient", backward_of(ctx, L, x),
               erf ? fx_gelu_erf_grad : fx_gelu_tanh_grad, FX_GELU_N, 1e-4, 1e-6);
    }
    /* the weights 1..n make each gradient entry tell which dy it carries */
    float w[12];
    for (int i = 0; i < 12; i++)
        w[i] = (float)(i + 1);
    eo_tensor *x = on(ctx, dev, EO_F32, 1, nr, fx_relu_x, 1), *y, *p, *L;
    ck_assert_int_eq(eo_relu(ctx, x, &y), EO_OK);
    ck_assert_int_eq(eo_mul(ctx, y, on(ctx, dev, EO_F32, 1, nr, w, 0), &p), EO_OK);
    ck_assert_int_eq(eo_sum_all(ctx, p, &L), EO_OK);
    expect(ctx, "relu gradient", backward_of(ctx, L, x), fx_relu_grad, FX_RELU_N, 0, 0);
    x = on(ctx, dev, EO_F32, 2, s34, fx_lsm_x, 1);
    ck_assert_int_eq(eo_log_softmax(ctx, x, &y), EO_OK);
    ck_assert_int_eq(eo_mul(ctx, y, on(ctx, dev, EO_F32, 2, s34, w, 0), &p), EO_OK);
    ck_assert_int_eq(eo_sum_all(ctx, p, &L), EO_OK);
    expect(ctx, "log_softmax gradient at -inf entries", backward_of(ctx, L, x), fx_lsm_grad, 12,
           1e-5, 1e-6);
    ctx_done(ctx, dev);
}
END_TEST

/* torch.maximum / minimum give their first operand on a tie, so the sign
 * of zero follows it; compared bit for bit. */
START_TEST(maximum_minimum_signed_zero_ties)
{
    const eo_device dev = _i ? EO_CUDA : EO_CPU;
    eo_ctx *ctx = ctx_on(dev);
    const int64_t n4[1] = { 4 };
    const float a[4] = { -0.0f, 0.0f, -0.0f, 0.0f }, b[4] = { 0.0f, -0.0f, -0.0f, 0.0f };
    for (int mx = 0; mx < 2; mx++) {
        eo_tensor *y;
        ck_assert_int_eq((mx ? eo_maximum : eo_minimum)(ctx, on(ctx, dev, EO_F32, 1, n4, a, 0),
                                                        on(ctx, dev, EO_F32, 1, n4, b, 0), &y),
                         EO_OK);
        float got[4];
        ck_assert_int_eq(eo_read(ctx, y, got, sizeof got), EO_OK);
        for (int i = 0; i < 4; i++)
            ck_assert_msg(signbit(got[i]) == signbit(a[i]), "%s on %s [%d]: %g, want a's %g",
                          mx ? "maximum" : "minimum", dev == EO_CUDA ? "cuda" : "cpu", i,
                          (double)got[i], (double)a[i]);
    }
    ctx_done(ctx, dev);
}
END_TEST

/* Dropout as PyTorch's x * mask / (1 - p): a dropped NaN or inf is NaN, a
 * dropped -3 is -0, never a silent +0; the backward likewise with dy. */
START_TEST(dropout_never_hides_nan)
{
    const eo_device dev = _i ? EO_CUDA : EO_CPU;
    eo_ctx *ctx = ctx_on(dev);
    enum { N = 203 }; /* odd: vector body and tail */
    const int64_t n[1] = { N };
    float x[N], got[N], g[N];
    const float vals[4] = { NAN, INFINITY, -3.0f, 2.0f };
    for (int i = 0; i < N; i++)
        x[i] = vals[i % 4];
    eo_tensor *t = on(ctx, dev, EO_F32, 1, n, x, 1), *y, *p, *L;
    ck_assert_int_eq(eo_dropout(ctx, t, 0.5f, 7, &y), EO_OK);
    ck_assert_int_eq(eo_read(ctx, y, got, sizeof got), EO_OK);
    /* dy = x itself, so a dropped entry's gradient is x * 0 as well */
    ck_assert_int_eq(eo_mul(ctx, y, on(ctx, dev, EO_F32, 1, n, x, 0), &p), EO_OK);
    ck_assert_int_eq(eo_sum_all(ctx, p, &L), EO_OK);
    ck_assert_int_eq(eo_backward(ctx, L), EO_OK);
    ck_assert_int_eq(eo_read(ctx, t->grad, g, sizeof g), EO_OK);
    int dropped = 0, kept = 0;
    for (int i = 0; i < N; i++) {
        const int keep = eo_dropout_keep(7, i, 0.5f);
        const float want = keep ? x[i] / 0.5f : x[i] * 0.0f; /* y, and dx with dy = x */
        dropped += !keep;
        kept += keep;
        for (int bwd = 0; bwd < 2; bwd++) {
            const float v = bwd ? g[i] : got[i];
            /* the gradient lands in a +0-filled buffer: -0 + +0 is +0 */
            const int same = isnan(want) ? isnan(v)
                                         : v == want && (bwd || signbit(v) == signbit(want));
            ck_assert_msg(same, "dropout%s on %s [%d] (%s): %g, want %g", bwd ? " gradient" : "",
                          dev == EO_CUDA ? "cuda" : "cpu", i, keep ? "kept" : "dropped", (double)v,
                          (double)want);
        }
    }
    ck_assert(dropped > 0 && kept > 0);
    ctx_done(ctx, dev);
}
END_TEST

/* ---- SGD with dampening ------------------------------------------------------------ */
START_TEST(sgd_dampening_matches_torch)
{
    const eo_device dev = _i ? EO_CUDA : EO_CPU;
    eo_ctx *ctx = ctx_on(dev);
    const int64_t n3[1] = { 3 };
    const float w0[3] = { 1.0f, -2.0f, 0.5f };
    eo_params ps;
    eo_tensor *p;
    ck_assert_int_eq(eo_params_init(ctx, &ps, 1), EO_OK);
    ck_assert_int_eq(eo_param_new(ctx, dev, "p", 1, n3, &p), EO_OK);
    ck_assert_int_eq(eo_params_add(ctx, &ps, p), EO_OK);
    ck_assert_int_eq(eo_write(ctx, p, w0, sizeof w0), EO_OK);
    eo_optimizer o;
    ck_assert_int_eq(eo_sgd_init_ex(ctx, &o, &ps, 0.1f, 0.9f, 0.3f, 0.01f, 0), EO_OK);
    for (int step = 0; step < 3; step++) {
        ck_assert_int_eq(eo_write(ctx, p->grad, fx_sgd_grads + 3 * step, 12), EO_OK);
        ck_assert_int_eq(eo_optimizer_step(ctx, &o), EO_OK);
        expect(ctx, "sgd weights", p, fx_sgd_w + 3 * step, 3, 1e-6, 1e-7);
    }
    ctx_done(ctx, dev);
}
END_TEST

/* ---- attention ------------------------------------------------------------------------ */
START_TEST(attention_nan_scores_as_torch)
{
    const eo_device dev = _i ? EO_CUDA : EO_CPU;
    eo_ctx *ctx = ctx_on(dev);
    const int64_t s[4] = { 1, 1, FX_ATTN_T, FX_ATTN_D }, sm[2] = { FX_ATTN_T, FX_ATTN_T };
    eo_tensor *q = on(ctx, dev, EO_F32, 4, s, fx_attn_q, 0), *k = on(ctx, dev, EO_F32, 4, s, fx_attn_k, 0);
    eo_tensor *v = on(ctx, dev, EO_F32, 4, s, fx_attn_v, 0), *y;
    eo_tensor *m = on(ctx, dev, EO_F32, 2, sm, fx_attn_mask, 0);
    ck_assert_int_eq(eo_attention(ctx, q, k, v, m, 0, 0.5f, &y), EO_OK);
    expect(ctx, "attention (composed)", y, fx_attn_out, FX_ATTN_T * FX_ATTN_D, 1e-5, 1e-6);
    ck_assert_int_eq(eo_attention_fused(ctx, q, k, v, m, 0, 0.5f, &y), EO_OK);
    expect(ctx, "attention (fused)", y, fx_attn_out, FX_ATTN_T * FX_ATTN_D, 1e-5, 1e-6);
    ctx_done(ctx, dev);
}
END_TEST

Suite *eo_suite_ops_torch(void)
{
    Suite *s = suite_create("ops_torch");
    TCase *tc = tcase_create("fixtures"); /* loop index: 0 CPU, 1 CUDA */
    /* _i is the device: 0 the CPU, 1 CUDA on the interpreter (not in a CUDA=0 build) */
    tcase_add_loop_test(tc, cross_entropy_at_huge_offsets, 0, DEVICES);
    tcase_add_loop_test(tc, softmax_rows_with_nan_and_inf, 0, DEVICES);
    tcase_add_loop_test(tc, logsumexp_as_torch, 0, DEVICES);
    tcase_add_loop_test(tc, maximum_minimum_max_pool_with_nan, 0, DEVICES);
    tcase_add_loop_test(tc, max_pool_with_several_nans, 0, DEVICES);
    tcase_add_loop_test(tc, gelu_relu_log_softmax_edges_as_torch, 0, DEVICES);
    tcase_add_loop_test(tc, maximum_minimum_signed_zero_ties, 0, DEVICES);
    tcase_add_loop_test(tc, dropout_never_hides_nan, 0, DEVICES);
    tcase_add_loop_test(tc, sgd_dampening_matches_torch, 0, DEVICES);
    tcase_add_loop_test(tc, attention_nan_scores_as_torch, 0, DEVICES);
    tcase_set_timeout(tc, 60);
    suite_add_tcase(s, tc);
    return s;
}
