/* tests/test_ops_fused.c — the fused ops against their composition from
 * primitive ops, forward and backward (suite ops_fused).
 *
 * layernorm, softmax, log_softmax and cross_entropy are single ops with
 * hand-written backward rules; the same function built from mean, sub,
 * mul, exp, log, max, sum, ... gets its gradient from the primitives'
 * rules instead. Both graphs see the same input values and the same
 * upstream gradient R (L = sum(y * R)), so their outputs and every input
 * gradient must agree to float accuracy. Each graph has its own leaves,
 * so the two backward passes cannot add into each other's buffers. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "core/everyo.h"
#include "tests/gradcheck.h"
#include "tests/optest.h"

/* A leaf that requires grad, holding a copy of t's values. */
static eo_tensor *leaf_copy(const eo_tensor *t)
{
    eo_tensor *c = ot_f32(t->rank, t->shape, t->data);
    c->requires_grad = 1;
    return c;
}

/* A rank-0 constant. */
static eo_tensor *scalar(float v)
{
    return ot_f32(0, NULL, &v);
}

/* L = sum(y * R) with R fixed by the shape, then backward. */
static void backward_weighted(const char *what, eo_tensor *y)
{
    eo_tensor *r = ot_rand(y->rank, y->shape, 0.5f, 1.5f, 999), *p, *L;
    OT_OK(eo_mul(ot_ctx, y, r, &p), what);
    OT_OK(eo_sum_all(ot_ctx, p, &L), what);
    OT_OK(eo_backward(ot_ctx, L), what);
}

/* Compare two tensors of the same shape (the fused result first). */
static void expect_same(const char *what, const eo_tensor *fused, const eo_tensor *composed,
                        double rtol, double atol)
{
    ck_assert_msg(fused && composed, "%s: missing tensor (no gradient flowed?)", what);
    ot_expect_shape(what, composed, fused->rank, fused->shape);
    ot_expect_close(what, fused, ot_get(composed), rtol, atol);
}

/* ---- layernorm ------------------------------------------------------------ */

/* (x - mean) * (var + eps)^-1/2 * w + b, with the power written as
 * exp(-0.5 log(.)) because there is no sqrt op. */
static eo_status composed_layernorm(eo_ctx *ctx, eo_tensor *x, eo_tensor *w, eo_tensor *b,
                                    float eps, eo_tensor **out)
{
    eo_tensor *mean, *xc, *sq, *var, *ve, *lg, *half, *rstd, *xh, *y;
    OT_TRY(eo_mean(ctx, x, -1, 1, &mean));
    OT_TRY(eo_sub(ctx, x, mean, &xc));
    OT_TRY(eo_mul(ctx, xc, xc, &sq));
    OT_TRY(eo_mean(ctx, sq, -1, 1, &var));
    OT_TRY(eo_add(ctx, var, scalar(eps), &ve));
    OT_TRY(eo_log(ctx, ve, &lg));
    OT_TRY(eo_scale(ctx, lg, -0.5f, &half));
    OT_TRY(eo_exp(ctx, half, &rstd));
    OT_TRY(eo_mul(ctx, xc, rstd, &xh));
    y = xh;
    if (w)
        OT_TRY(eo_mul(ctx, y, w, &y));
    if (b)
        OT_TRY(eo_add(ctx, y, b, &y));
    *out = y;
    return EO_OK;
}

START_TEST(layernorm_matches_composition)
{
    static const struct { int rank; int64_t s[3]; int affine; } cases[] = {
        { 2, {3, 7}, 3 }, { 3, {2, 3, 5}, 3 }, { 2, {4, 33}, 3 }, { 2, {5, 6}, 0 },
        { 2, {2, 9}, 1 },
    };
    const float eps = 1e-5f;
    for (int c = 0; c < 5; c++) {
        eo_mark m = eo_mark_get(ot_ctx);
        int64_t C = cases[c].s[cases[c].rank - 1];
        eo_tensor *x0 = ot_rand(cases[c].rank, cases[c].s, -2, 2, 11u + (unsigned)c);
        eo_tensor *w0 = ot_rand(1, &C, 0.5f, 1.5f, 21u + (unsigned)c);
        eo_tensor *b0 = ot_rand(1, &C, -1, 1, 31u + (unsigned)c);
        int hw = cases[c].affine & 1, hb = (cases[c].affine & 2) != 0;
        eo_tensor *xf = leaf_copy(x0), *wf = hw ? leaf_copy(w0) : NULL, *bf = hb ? leaf_copy(b0) : NULL;
        eo_tensor *xc = leaf_copy(x0), *wc = hw ? leaf_copy(w0) : NULL, *bc = hb ? leaf_copy(b0) : NULL;
        char what[128];
        snprintf(what, sizeof what, "layernorm vs composition %s%s%s",
                 ot_shape_str(cases[c].rank, cases[c].s), hw ? " w" : "", hb ? " b" : "");
        eo_tensor *yf, *yc;
        OT_OK(eo_layernorm(ot_ctx, xf, wf, bf, eps, &yf), what);
        OT_OK(composed_layernorm(ot_ctx, xc, wc, bc, eps, &yc), what);
        expect_same(what, yf, yc, 1e-5, 1e-5);
        backward_weighted(what, yf);
        backward_weighted(what, yc);
        /* The composed gradient of x sums several terms that nearly
         * cancel (through the mean and the variance), each rounded in
         * float: compare at 1e-4. */
        char w2[160];
        snprintf(w2, sizeof w2, "%s: dL/dx", what);
        expect_same(w2, xf->grad, xc->grad, 1e-4, 1e-4);
        if (hw) {
            snprintf(w2, sizeof w2, "%s: dL/dw", what);
            expect_same(w2, wf->grad, wc->grad, 1e-4, 1e-4);
        }
        if (hb) {
            snprintf(w2, sizeof w2, "%s: dL/db", what);
            expect_same(w2, bf->grad, bc->grad, 1e-5, 1e-5);
        }
        eo_rewind(ot_ctx, m);
    }
}
END_TEST

/* ---- softmax and log_softmax ------------------------------------------------ */

/* exp(x - max) / sum, or x - max - log(sum) for the log form. */
static eo_status composed_softmax(eo_ctx *ctx, int log_, eo_tensor *x, eo_tensor **out)
{
    eo_tensor *mx, *d, *e, *s, *ls;
    OT_TRY(eo_max(ctx, x, -1, 1, &mx));
    OT_TRY(eo_sub(ctx, x, mx, &d));
    OT_TRY(eo_exp(ctx, d, &e));
    OT_TRY(eo_sum(ctx, e, -1, 1, &s));
    if (!log_)
        return eo_div(ctx, e, s, out);
    OT_TRY(eo_log(ctx, s, &ls));
    return eo_sub(ctx, d, ls, out);
}

START_TEST(softmax_matches_composition)
{
    static const struct { int rank; int64_t s[3]; float scale; } cases[] = {
        { 2, {4, 9}, 3 }, { 3, {2, 3, 17}, 3 }, { 2, {1, 1}, 1 }, { 2, {3, 40}, 30 },
    };
    for (int lg = 0; lg < 2; lg++)
        for (int c = 0; c < 4; c++) {
            eo_mark m = eo_mark_get(ot_ctx);
            float sc = cases[c].scale;
            eo_tensor *x0 = ot_rand(cases[c].rank, cases[c].s, -sc, sc, 41u + (unsigned)c);
            eo_tensor *xf = leaf_copy(x0), *xc = leaf_copy(x0), *yf, *yc;
            char what[128];
            snprintf(what, sizeof what, "%s vs composition %s (logits ±%g)",
                     lg ? "log_softmax" : "softmax", ot_shape_str(cases[c].rank, cases[c].s),
                     (double)sc);
            OT_OK(lg ? eo_log_softmax(ot_ctx, xf, &yf) : eo_softmax(ot_ctx, xf, &yf), what);
            OT_OK(composed_softmax(ot_ctx, lg, xc, &yc), what);
            /* logits of ±30 give probabilities near 1e-26: relative
             * agreement is what matters there, so atol stays tiny. */
            expect_same(what, yf, yc, 1e-5, lg ? 1e-5 : 1e-7);
            backward_weighted(what, yf);
            backward_weighted(what, yc);
            char w2[160];
            snprintf(w2, sizeof w2, "%s: dL/dx", what);
            expect_same(w2, xf->grad, xc->grad, 1e-4, 1e-5);
            eo_rewind(ot_ctx, m);
        }
}
END_TEST

/* ---- cross-entropy --------------------------------------------------------- */

/* -mean over non-ignored rows of log_softmax(x)[r, t[r]]; the gather is a
 * product with a one-hot matrix (zero rows for ignored targets). */
static eo_status composed_cross_entropy(eo_ctx *ctx, eo_tensor *x, const int32_t *t,
                                        int32_t ignore, eo_tensor **out)
{
    int64_t N = x->shape[0], C = x->shape[1], count = 0;
    eo_tensor *onehot, *ls, *picked, *total;
    OT_TRY(eo_tensor_zeros(ctx, EO_STEP, EO_CPU, EO_F32, 2, x->shape, &onehot));
    for (int64_t r = 0; r < N; r++)
        if (t[r] != ignore) {
            ((float *)onehot->data)[r * C + t[r]] = 1.0f;
            count++;
        }
    OT_TRY(eo_log_softmax(ctx, x, &ls));
    OT_TRY(eo_mul(ctx, ls, onehot, &picked));
    OT_TRY(eo_sum_all(ctx, picked, &total));
    return eo_scale(ctx, total, count ? -1.0f / (float)count : 0.0f, out);
}

START_TEST(cross_entropy_matches_composition)
{
    static const struct { int64_t N, C; int32_t ignore; int big; } cases[] = {
        { 5, 7, -100, 0 }, { 13, 17, -100, 0 }, { 4, 33, 2, 0 }, { 1, 1, -100, 0 },
        { 6, 5, -100, 1 },
    };
    int32_t t[16];
    for (int c = 0; c < 5; c++) {
        eo_mark m = eo_mark_get(ot_ctx);
        int64_t N = cases[c].N, C = cases[c].C, s[2] = { N, C };
        eo_tensor *x0 = ot_rand(2, s, -3, 3, 51u + (unsigned)c);
        if (cases[c].big) { /* ±1e4: both graphs must stay finite and agree */
            float *v = x0->data;
            for (int64_t i = 0; i < N * C; i++)
                v[i] = (i % 2) ? 1e4f - (float)i : -1e4f + (float)i;
        }
        for (int64_t r = 0; r < N; r++)
            t[r] = (int32_t)((r * 3 + 1) % C);
        if (N > 2)
            t[2] = cases[c].ignore;
        eo_tensor *xf = leaf_copy(x0), *xc = leaf_copy(x0), *yf, *yc;
        char what[128];
        snprintf(what, sizeof what, "cross_entropy vs -mean(gather(log_softmax)) [%lldx%lld]%s",
                 (long long)N, (long long)C, cases[c].big ? " ±1e4" : "");
        OT_OK(eo_cross_entropy(ot_ctx, xf, ot_i32(1, &N, t), cases[c].ignore, &yf), what);
        OT_OK(composed_cross_entropy(ot_ctx, xc, t, cases[c].ignore, &yc), what);
        /* The composed loss sums log-probabilities of size up to ~2e4 in
         * float, so its own rounding sets the tolerance for the ±1e4 case. */
        expect_same(what, yf, yc, cases[c].big ? 1e-4 : 1e-5, 1e-5);
        ck_assert_msg(isfinite(*(float *)yf->data), "%s: loss not finite", what);
        OT_OK(eo_backward(ot_ctx, yf), what);
        OT_OK(eo_backward(ot_ctx, yc), what);
        char w2[160];
        snprintf(w2, sizeof w2, "%s: dL/dlogits", what);
        /* At ±1e4 the fused backward forms p = exp(x - lse) with lse
         * rounded to float, where half an ulp is 5e-4: p carries that
         * relative error (the logits' own resolution at that size), and
         * p - onehot can be much smaller than p, so the bound is absolute:
         * 5e-4 * p / count <= 1e-4 here. The composed graph subtracts the
         * max first and keeps more digits. */
        expect_same(w2, xf->grad, xc->grad, 1e-4, cases[c].big ? 2e-4 : 1e-6);
        eo_rewind(ot_ctx, m);
    }
}
END_TEST

/* ---- conv2d: im2col + matmul + bias against an explicit composition ------ */

/* For a 1x1 kernel with stride 1 and no padding, im2col is the identity
 * and the convolution is exactly a matmul over the channel axis: the
 * conv's gradients must match that matmul's. */
START_TEST(conv1x1_matches_matmul)
{
    int64_t sx[4] = { 2, 3, 4, 5 }, sw[4] = { 6, 3, 1, 1 }, sb = 6;
    eo_tensor *x0 = ot_rand(4, sx, -1, 1, 61), *w0 = ot_rand(4, sw, -1, 1, 62);
    eo_tensor *b0 = ot_rand(1, &sb, -1, 1, 63);
    eo_tensor *xf = leaf_copy(x0), *wf = leaf_copy(w0), *bf = leaf_copy(b0);
    eo_tensor *xc = leaf_copy(x0), *wc = leaf_copy(w0), *bc = leaf_copy(b0);
    eo_tensor *yf, *yc, *x3, *w2, *b2, *t;
    const char *what = "conv2d 1x1 vs matmul";
    OT_OK(eo_conv2d(ot_ctx, xf, wf, bf, 0, 1, &yf), what);
    int64_t s3[3] = { 2, 3, 20 }, s2[2] = { 6, 3 }, sb2[2] = { 6, 1 }, so[4] = { 2, 6, 4, 5 };
    OT_OK(eo_reshape(ot_ctx, xc, 3, s3, &x3), what);
    OT_OK(eo_reshape(ot_ctx, wc, 2, s2, &w2), what);
    OT_OK(eo_reshape(ot_ctx, bc, 2, sb2, &b2), what);
    OT_OK(eo_matmul(ot_ctx, w2, x3, 0, 0, &t), what);
    OT_OK(eo_add(ot_ctx, t, b2, &t), what);
    OT_OK(eo_reshape(ot_ctx, t, 4, so, &yc), what);
    expect_same(what, yf, yc, 1e-6, 1e-6);
    backward_weighted(what, yf);
    backward_weighted(what, yc);
    expect_same("conv2d 1x1 vs matmul: dL/dx", xf->grad, xc->grad, 1e-5, 1e-6);
    expect_same("conv2d 1x1 vs matmul: dL/dw", wf->grad, wc->grad, 1e-5, 1e-6);
    expect_same("conv2d 1x1 vs matmul: dL/db", bf->grad, bc->grad, 1e-5, 1e-6);
}
END_TEST

Suite *eo_suite_ops_fused(void)
{
    Suite *s = suite_create("ops_fused");
    TCase *tc = tcase_create("fused_vs_composed");
    tcase_add_checked_fixture(tc, ot_setup, ot_teardown);
    tcase_add_test(tc, layernorm_matches_composition);
    tcase_add_test(tc, softmax_matches_composition);
    tcase_add_test(tc, cross_entropy_matches_composition);
    tcase_add_test(tc, conv1x1_matches_matmul);
    tcase_set_timeout(tc, 30);
    suite_add_tcase(s, tc);
    return s;
}
