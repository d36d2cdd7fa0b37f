/* tests/test_amp.c — mixed precision end to end on the CPU: the autocast
 * policy's result dtypes (core/autocast.c), master weights and their
 * 16-bit working copies, a tiny MLP trained 20 steps in bf16 and in f16
 * (with loss scaling) tracking its f32 loss, a forced-overflow f16 step
 * that is skipped, and the f16 overflow spots: attention scores with a
 * large head dimension, layernorm of large rows, GELU's backward at large
 * x, and masks that stay -inf (never NaN); every model (mlp, cnn, vit,
 * gpt) through eo-train's loops in bf16 and f16. test_cuda_amp.c runs
 * the training checks on CUDA through the same helpers. */
#include <check.h>
#include <math.h>
#include <string.h>
#include "core/nn.h"
#include "core/transformer.h"
#include "tests/amp_test.h"
#include "tests/gradcheck.h"
#include "tests/tmpdir.h"
#include "tools/train/textlm.h"
#include "tools/train/trainer.h"

/* ---- the policy ------------------------------------------------------------------ */

static eo_tensor *rand_on(eo_ctx *ctx, eo_device dev, int rank, const int64_t *shape, float lo,
                          float hi, unsigned seed)
{
    eo_tensor *t = eo_test_rand(ctx, rank, shape, lo, hi, seed, 0), *d;
    ck_assert_ptr_nonnull(t);
    if (dev == EO_CPU)
        return t;
    ck_assert_int_eq(eo_to_device(ctx, t, dev, EO_STEP, &d), EO_OK);
    return d;
}

START_TEST(autocast_lists_give_their_dtypes)
{
    eo_ctx *ctx = eo_test_ctx(1, 8);
    int64_t s[2] = { 4, 6 }, sw[2] = { 5, 6 };
    eo_tensor *x = rand_on(ctx, EO_CPU, 2, s, -1, 1, 1), *w = rand_on(ctx, EO_CPU, 2, sw, -1, 1, 2);
    eo_tensor *y, *z;
    ck_assert_int_eq(eo_ctx_set_autocast(ctx, EO_I32), EO_ERR_ARG);
    ck_assert_int_eq(ctx->autocast, EO_F32);
    for (int d = 0; d < 2; d++) {
        eo_dtype dt = d ? EO_F16 : EO_BF16;
        ck_assert_int_eq(eo_ctx_set_autocast(ctx, dt), EO_OK);
        ck_assert_int_eq(eo_matmul(ctx, x, w, 0, 1, &y), EO_OK); /* lower-precision list */
        ck_assert_int_eq(y->dtype, dt);
        ck_assert_int_eq(eo_relu(ctx, y, &z), EO_OK); /* follows its input */
        ck_assert_int_eq(z->dtype, dt);
        ck_assert_int_eq(eo_add(ctx, z, x, &z), EO_ERR_SHAPE); /* [4,5] + [4,6] */
        eo_tensor *b;
        int64_t five = 5;
        ck_assert_int_eq(eo_tensor_zeros(ctx, EO_STEP, EO_CPU, EO_F32, 1, &five, &b), EO_OK);
        ck_assert_int_eq(eo_add(ctx, y, b, &z), EO_OK); /* the f32 operand joins y's dtype */
        ck_assert_int_eq(z->dtype, dt);
        ck_assert_int_eq(eo_add(ctx, x, x, &z), EO_OK); /* f32 with f32 stays f32 */
        ck_assert_int_eq(z->dtype, EO_F32);
        /* softmax, log_softmax, layernorm: f32 inside, the input's dtype out */
        ck_assert_int_eq(eo_softmax(ctx, y, &z), EO_OK);
        ck_assert_int_eq(z->dtype, dt);
        ck_assert_int_eq(eo_log_softmax(ctx, y, &z), EO_OK);
        ck_assert_int_eq(z->dtype, dt);
        ck_assert_int_eq(eo_softmax(ctx, x, &z), EO_OK);
        ck_assert_int_eq(z->dtype, EO_F32);
        ck_assert_int_eq(eo_layernorm(ctx, y, NULL, NULL, 1e-5f, &z), EO_OK);
        ck_assert_int_eq(z->dtype, dt);
        eo_tensor *g5;
        ck_assert_int_eq(eo_tensor_zeros(ctx, EO_STEP, EO_CPU, EO_F32, 1, &five, &g5), EO_OK);
        ck_assert_int_eq(eo_layernorm(ctx, y, g5, b, 1e-5f, &z), EO_OK); /* f32 w, b join y */
        ck_assert_int_eq(z->dtype, dt);
        ck_assert_int_eq(eo_layernorm(ctx, x, NULL, NULL, 1e-5f, &z), EO_OK);
        ck_assert_int_eq(z->dtype, EO_F32);
        /* an f32 table's rows come out as activations of the autocast dtype */
        eo_tensor *ids;
        int64_t three = 3;
        ck_assert_int_eq(eo_tensor_zeros(ctx, EO_STEP, EO_CPU, EO_I32, 1, &three, &ids), EO_OK);
        ck_assert_int_eq(eo_embedding(ctx, w, ids, &z), EO_OK);
        ck_assert_int_eq(z->dtype, dt);
        ck_assert_int_eq(eo_sum(ctx, y, 1, 0, &z), EO_OK);
        ck_assert_int_eq(z->dtype, EO_F32);
        ck_assert_int_eq(eo_exp(ctx, y, &z), EO_OK);
        ck_assert_int_eq(z->dtype, EO_F32);
        eo_tensor *t;
        int64_t four = 4;
        ck_assert_int_eq(eo_tensor_zeros(ctx, EO_STEP, EO_CPU, EO_I32, 1, &four, &t), EO_OK);
        ck_assert_int_eq(eo_cross_entropy(ctx, y, t, -100, &z), EO_OK);
        ck_assert_int_eq(z->dtype, EO_F32);
    }
    ck_assert_int_eq(eo_ctx_set_autocast(ctx, EO_F32), EO_OK); /* off */
    ck_assert_int_eq(eo_matmul(ctx, x, w, 0, 1, &y), EO_OK);
    ck_assert_int_eq(y->dtype, EO_F32);
    eo_test_ctx_free(ctx);
}
END_TEST

/* ---- a tiny MLP ------------------------------------------------------------------ */

void eo_test_tiny_mlp(eo_ctx *ctx, eo_device dev, eo_test_mlp *m)
{
    eo_module l;
    ck_assert_int_eq(eo_params_init(ctx, &m->params, 4), EO_OK);
    ck_assert_int_eq(eo_sequential_init(ctx, &m->net, 4), EO_OK);
    ck_assert_int_eq(eo_linear_init(ctx, &m->params, dev, "0", 16, 32, 1,
                                    EO_INIT_KAIMING_UNIFORM, &l), EO_OK);
    ck_assert_int_eq(eo_sequential_add(ctx, &m->net, l), EO_OK);
    ck_assert_int_eq(eo_sequential_add(ctx, &m->net, eo_gelu_module()), EO_OK);
    ck_assert_int_eq(eo_linear_init(ctx, &m->params, dev, "2", 32, 4, 1,
                                    EO_INIT_KAIMING_UNIFORM, &l), EO_OK);
    ck_assert_int_eq(eo_sequential_add(ctx, &m->net, l), EO_OK);
}

/* A fixed batch: 32 rows of 16 features, labels from the sign pattern of
 * the first two features (learnable, so the loss falls). */
static void batch(float *x, int32_t *y)
{
    unsigned s = 12345u;
    for (int r = 0; r < 32; r++) {
        for (int c = 0; c < 16; c++) {
            s = s * 1664525u + 1013904223u;
            x[r * 16 + c] = (float)(s >> 8) / 8388608.0f - 1.0f;
        }
        y[r] = (x[r * 16] > 0) * 2 + (x[r * 16 + 1] > 0);
    }
}

void eo_test_train_mlp(eo_ctx *ctx, eo_device dev, eo_dtype precision, int steps, float *losses,
                       eo_grad_scaler *out_scaler)
{
    eo_test_mlp m;
    eo_seed(ctx, 7);
    eo_test_tiny_mlp(ctx, dev, &m);
    eo_optimizer o;
    ck_assert_int_eq(eo_adamw_init(ctx, &o, &m.params, 1e-2f, 0.9f, 0.999f, 1e-8f, 0.0f), EO_OK);
    eo_grad_scaler sc;
    ck_assert_int_eq(eo_grad_scaler_init(ctx, &sc, precision == EO_F16), EO_OK);
    if (precision != EO_F32) {
        ck_assert_int_eq(eo_params_enable_low(ctx, &m.params, precision), EO_OK);
        ck_assert_int_eq(eo_ctx_set_autocast(ctx, precision), EO_OK);
    }
    float xb[32 * 16];
    int32_t yb[32];
    batch(xb, yb);
    for (int k = 0; k < steps; k++) {
        eo_mark mk = eo_mark_get(ctx);
        eo_tensor *x, *y, *logits, *L, *Ls;
        int64_t sx[2] = { 32, 16 }, sy[1] = { 32 };
        ck_assert_int_eq(eo_tensor_wrap(ctx, EO_F32, 2, sx, xb, &x), EO_OK);
        ck_assert_int_eq(eo_tensor_wrap(ctx, EO_I32, 1, sy, yb, &y), EO_OK);
        if (dev != EO_CPU) {
            ck_assert_int_eq(eo_to_device(ctx, x, dev, EO_STEP, &x), EO_OK);
            ck_assert_int_eq(eo_to_device(ctx, y, dev, EO_STEP, &y), EO_OK);
        }
        ck_assert_int_eq(eo_params_zero_grad(ctx, &m.params), EO_OK);
        ck_assert_msg(eo_sequential_forward(ctx, &m.net, x, &logits) == EO_OK, "%s",
                      eo_last_error(ctx));
        ck_assert_int_eq(logits->dtype, precision);
        ck_assert_int_eq(eo_cross_entropy(ctx, logits, y, -100, &L), EO_OK);
        ck_assert_int_eq(L->dtype, EO_F32);
        ck_assert_int_eq(eo_grad_scaler_scale_loss(ctx, &sc, L, &Ls), EO_OK);
        ck_assert_msg(eo_backward(ctx, Ls) == EO_OK, "%s", eo_last_error(ctx));
        int stepped = 0;
        ck_assert_msg(eo_grad_scaler_step(ctx, &sc, &o, &stepped) == EO_OK, "%s",
                      eo_last_error(ctx));
        ck_assert_int_eq(eo_grad_scaler_update(ctx, &sc), EO_OK);
        ck_assert_int_eq(eo_read(ctx, L, &losses[k], sizeof(float)), EO_OK);
        eo_rewind(ctx, mk);
        /* Master weights: f32 values, f32 gradients, and a working copy
         * that is exactly the master rounded to the 16-bit dtype. */
        for (int i = 0; i < m.params.count; i++) {
            eo_tensor *p = m.params.items[i];
            ck_assert_int_eq(p->dtype, EO_F32);
            ck_assert_int_eq(p->grad->dtype, EO_F32);
            if (precision == EO_F32) {
                ck_assert_ptr_null(p->low);
                continue;
            }
            ck_assert_ptr_nonnull(p->low);
            ck_assert_int_eq(p->low->dtype, precision);
            eo_mark m2 = eo_mark_get(ctx);
            eo_tensor *want;
            int was = eo_set_grad(ctx, 0);
            ck_assert_int_eq(eo_cast(ctx, p, precision, &want), EO_OK);
            eo_set_grad(ctx, was);
            uint16_t a[32 * 16], b[32 * 16];
            size_t bytes = (size_t)eo_numel(p) * 2;
            ck_assert_uint_le(bytes, sizeof a);
            ck_assert_int_eq(eo_read(ctx, want, a, bytes), EO_OK);
            ck_assert_int_eq(eo_read(ctx, p->low, b, bytes), EO_OK);
            ck_assert_msg(memcmp(a, b, bytes) == 0, "step %d: %s's copy is not cast(master)", k,
                          p->name);
            eo_rewind(ctx, m2);
        }
    }
    ck_assert_int_eq(eo_ctx_set_autocast(ctx, EO_F32), EO_OK);
    if (out_scaler)
        *out_scaler = sc;
}

/* 20 AdamW steps: bf16 and f16 (scaled) follow the f32 loss curve. The
 * tolerance is the 16-bit rounding of activations and weights (bf16 keeps
 * 8 significant bits: 0.4 % per rounding) compounding over the steps. */
/* A view of a parameter that has a 16-bit working copy is read through
 * its own shape and strides, not as the whole parameter: a transpose
 * counts, a slice keeps its length (the GPT's slice of its position
 * table for a sequence shorter than its context is one). */
START_TEST(views_of_parameters_under_autocast)
{
    eo_ctx *ctx = eo_test_ctx(1, 8);
    for (int d = 0; d < 2; d++) {
        const eo_dtype dt = d ? EO_F16 : EO_BF16;
        eo_params ps;
        eo_tensor *W, *x, *Wt, *Ws, *y, *yf, *a;
        const int64_t s22[2] = { 2, 2 }, s12[2] = { 1, 2 };
        const float w[4] = { 1, 2, 3, 4 }, xv[2] = { 1, 0 };
        ck_assert_int_eq(eo_params_init(ctx, &ps, 1), EO_OK);
        ck_assert_int_eq(eo_param_new(ctx, EO_CPU, "W", 2, s22, &W), EO_OK);
        ck_assert_int_eq(eo_write(ctx, W, w, sizeof w), EO_OK);
        ck_assert_int_eq(eo_params_add(ctx, &ps, W), EO_OK);
        ck_assert_int_eq(eo_params_enable_low(ctx, &ps, dt), EO_OK);
        ck_assert_int_eq(eo_ctx_set_autocast(ctx, dt), EO_OK);
        ck_assert_int_eq(eo_tensor_new(ctx, EO_STEP, EO_CPU, EO_F32, 2, s12, &x), EO_OK);
        ck_assert_int_eq(eo_write(ctx, x, xv, sizeof xv), EO_OK);
        ck_assert_int_eq(eo_transpose(ctx, W, 0, 1, &Wt), EO_OK);
        ck_assert_int_eq(eo_matmul(ctx, x, Wt, 0, 0, &y), EO_OK); /* x W^T = [1, 3] */
        ck_assert_int_eq(eo_cast(ctx, y, EO_F32, &yf), EO_OK);
        float out[2];
        ck_assert_int_eq(eo_read(ctx, yf, out, sizeof out), EO_OK);
        ck_assert_msg(out[0] == 1 && out[1] == 3, "x transpose(W) = [%g, %g], want [1, 3]",
                      (double)out[0], (double)out[1]);
        ck_assert_int_eq(eo_slice(ctx, W, 0, 1, 1, &Ws), EO_OK); /* [3, 4] */
        ck_assert_int_eq(eo_tensor_zeros(ctx, EO_STEP, EO_CPU, dt, 2, s12, &a), EO_OK);
        ck_assert_int_eq(eo_add(ctx, a, Ws, &y), EO_OK);
        ck_assert_int_eq(y->rank, 2);
        ck_assert_int_eq(y->shape[0], 1);
        ck_assert_int_eq(eo_cast(ctx, y, EO_F32, &yf), EO_OK);
        ck_assert_int_eq(eo_read(ctx, yf, out, sizeof out), EO_OK);
        ck_assert_msg(out[0] == 3 && out[1] == 4, "0 + W[1] = [%g, %g], want [3, 4]",
                      (double)out[0], (double)out[1]);
        /* the GPT at a sequence shorter than its context */
        eo_gpt m;
        eo_gpt_config cfg = { 11, 8, 8, 2, 1, 0 };
        eo_tensor *idx, *logits;
        const int64_t si[2] = { 2, 5 };
        ck_assert_int_eq(eo_ctx_set_autocast(ctx, EO_F32), EO_OK);
        ck_assert_int_eq(eo_gpt_build(ctx, EO_CPU, &cfg, &m), EO_OK);
        ck_assert_int_eq(eo_params_enable_low(ctx, &m.params, dt), EO_OK);
        ck_assert_int_eq(eo_ctx_set_autocast(ctx, dt), EO_OK);
        ck_assert_int_eq(eo_tensor_zeros(ctx, EO_STEP, EO_CPU, EO_I32, 2, si, &idx), EO_OK);
        ck_assert_msg(eo_gpt_forward(ctx, &m, idx, &logits) == EO_OK, "gpt_forward, T 5 of 8: %s",
                      eo_last_error(ctx));
        ck_assert_int_eq(logits->shape[1], 5);
        ck_assert_int_eq(eo_ctx_set_autocast(ctx, EO_F32), EO_OK);
    }
    eo_test_ctx_free(ctx);
}
END_TEST

START_TEST(mlp_20_steps_bf16_f16_track_f32)
{
    float l32[20], lb[20], lh[20];
    eo_grad_scaler sc;
    for (int d = 0; d < 3; d++) {
        eo_ctx *ctx = eo_test_ctx(2, 8);
        eo_dtype dt = d == 0 ? EO_F32 : d == 1 ? EO_BF16 : EO_F16;
        eo_test_train_mlp(ctx, EO_CPU, dt, 20, d == 0 ? l32 : d == 1 ? lb : lh, &sc);
        if (dt == EO_F16) {
            ck_assert_int_eq(sc.skipped, 0); /* 2^16 is no overflow for this model */
            ck_assert_float_eq(sc.scale, 65536.0f);
        }
        eo_test_ctx_free(ctx);
    }
    ck_assert_float_lt(l32[19], 0.7f * l32[0]); /* it learns */
    for (int k = 0; k < 20; k++) {
        ck_assert_msg(fabsf(lb[k] - l32[k]) <= 0.03f * l32[k] + 0.01f,
                      "bf16 step %d: %g vs f32 %g", k, (double)lb[k], (double)l32[k]);
        ck_assert_msg(fabsf(lh[k] - l32[k]) <= 0.01f * l32[k] + 0.005f,
                      "f16 step %d: %g vs f32 %g", k, (double)lh[k], (double)l32[k]);
    }
}
END_TEST

/* A loss scale far too large for f16 (2^24: the logits' gradient, up to
 * 1/32 per element, times 2^24 passes 65504): the step is skipped — the
 * weights, AdamW's state and its step count untouched — and the scale
 * halves; then the step goes through. */
START_TEST(f16_overflow_step_is_skipped_and_scale_halves)
{
    eo_ctx *ctx = eo_test_ctx(2, 8);
    eo_test_mlp m;
    eo_seed(ctx, 7);
    eo_test_tiny_mlp(ctx, EO_CPU, &m);
    eo_optimizer o;
    ck_assert_int_eq(eo_adamw_init(ctx, &o, &m.params, 1e-2f, 0.9f, 0.999f, 1e-8f, 0.0f), EO_OK);
    eo_grad_scaler sc;
    ck_assert_int_eq(eo_grad_scaler_init_ex(ctx, &sc, 1, 0x1p24f, 2.0f, 0.5f, 2000), EO_OK);
    ck_assert_int_eq(eo_params_enable_low(ctx, &m.params, EO_F16), EO_OK);
    ck_assert_int_eq(eo_ctx_set_autocast(ctx, EO_F16), EO_OK);
    float xb[32 * 16], before[32 * 16], after[32 * 16];
    int32_t yb[32];
    batch(xb, yb);
    eo_tensor *w0 = m.params.items[0];
    for (int k = 0; k < 2; k++) {
        memcpy(before, w0->data, (size_t)eo_numel(w0) * 4);
        eo_mark mk = eo_mark_get(ctx);
        eo_tensor *x, *y, *logits, *L, *Ls;
        int64_t sx[2] = { 32, 16 }, sy[1] = { 32 };
        ck_assert_int_eq(eo_tensor_wrap(ctx, EO_F32, 2, sx, xb, &x), EO_OK);
        ck_assert_int_eq(eo_tensor_wrap(ctx, EO_I32, 1, sy, yb, &y), EO_OK);
        ck_assert_int_eq(eo_params_zero_grad(ctx, &m.params), EO_OK);
        ck_assert_int_eq(eo_sequential_forward(ctx, &m.net, x, &logits), EO_OK);
        ck_assert_int_eq(eo_cross_entropy(ctx, logits, y, -100, &L), EO_OK);
        ck_assert_int_eq(eo_grad_scaler_scale_loss(ctx, &sc, L, &Ls), EO_OK);
        ck_assert_int_eq(eo_backward(ctx, Ls), EO_OK);
        int stepped = -1;
        ck_assert_int_eq(eo_grad_scaler_step(ctx, &sc, &o, &stepped), EO_OK);
        ck_assert_int_eq(eo_grad_scaler_update(ctx, &sc), EO_OK);
        eo_rewind(ctx, mk);
        memcpy(after, w0->data, (size_t)eo_numel(w0) * 4);
        if (k == 0) {
            ck_assert_int_eq(stepped, 0);
            ck_assert_int_eq(sc.skipped, 1);
            ck_assert_float_eq(sc.scale, 0x1p23f);
            ck_assert_int_eq(o.step, 0);
            ck_assert(memcmp(before, after, (size_t)eo_numel(w0) * 4) == 0);
            float m0 = ((float *)o.m[0]->data)[0];
            ck_assert_float_eq(m0, 0.0f);
            /* 2^23 still overflows: push the scale down to where f16 holds */
            sc.scale = 1024.0f;
        } else {
            ck_assert_int_eq(stepped, 1);
            ck_assert_int_eq(o.step, 1);
            ck_assert(memcmp(before, after, (size_t)eo_numel(w0) * 4) != 0);
        }
    }
    eo_test_ctx_free(ctx);
}
END_TEST

/* ---- f16 overflow spots --------------------------------------------------------- */

/* Attention scores: q = k = 20 in every one of D = 256 components gives
 * q.k = 102400, past f16's 65504, although the scaled score (6400) is
 * fine. Under f16 autocast, composed and fused attention must give the
 * f32 result (uniform attention: out = mean of v), not NaN. */
START_TEST(f16_attention_scores_do_not_overflow)
{
    eo_ctx *ctx = eo_test_ctx(1, 16);
    int64_t sh[4] = { 1, 1, 3, 256 };
    eo_tensor *q, *k, *v, *o;
    ck_assert_int_eq(eo_tensor_new(ctx, EO_STEP, EO_CPU, EO_F32, 4, sh, &q), EO_OK);
    ck_assert_int_eq(eo_fill(ctx, q, 20.0f), EO_OK);
    k = q;
    v = eo_test_rand(ctx, 4, sh, -1, 1, 3, 0);
    ck_assert_int_eq(eo_ctx_set_autocast(ctx, EO_F16), EO_OK);
    for (int fused = 0; fused < 2; fused++) {
        for (int causal = 0; causal < 2; causal++) {
            eo_status s = fused ? eo_attention_fused(ctx, q, k, v, NULL, causal, 1.0f / 16, &o)
                                : eo_attention(ctx, q, k, v, NULL, causal, 1.0f / 16, &o);
            ck_assert_msg(s == EO_OK, "%s", eo_last_error(ctx));
            eo_tensor *of;
            ck_assert_int_eq(eo_cast(ctx, o, EO_F32, &of), EO_OK);
            const float *ov = of->data, *vv = v->data;
            for (int i = 0; i < 3; i++)
                for (int d = 0; d < 256; d++) {
                    int n = causal ? i + 1 : 3;
                    double want = 0;
                    for (int j = 0; j < n; j++)
                        want += vv[j * 256 + d];
                    want /= n;
                    ck_assert_msg(fabs(ov[i * 256 + d] - want) < 4e-3,
                                  "fused %d causal %d [%d,%d]: %g, want %g", fused, causal, i,
                                  d, (double)ov[i * 256 + d], want);
                }
        }
    }
    eo_test_ctx_free(ctx);
}
END_TEST

/* Layernorm of f16 rows around 1000 (C = 256): sum x^2 alone is 2.6e8,
 * past f16's range; under autocast layernorm runs in f32 (mean and
 * variance around the mean) and matches the f32 result rounded to f16. */
START_TEST(f16_layernorm_statistics_in_f32)
{
    eo_ctx *ctx = eo_test_ctx(1, 8);
    int64_t sh[2] = { 4, 256 };
    eo_tensor *x = eo_test_rand(ctx, 2, sh, 990, 1010, 5, 0), *xh, *y, *y32;
    ck_assert_int_eq(eo_cast(ctx, x, EO_F16, &xh), EO_OK);
    ck_assert_int_eq(eo_cast(ctx, xh, EO_F32, &x), EO_OK); /* the same values in f32 */
    ck_assert_int_eq(eo_layernorm(ctx, x, NULL, NULL, 1e-5f, &y32), EO_OK);
    ck_assert_int_eq(eo_ctx_set_autocast(ctx, EO_F16), EO_OK);
    ck_assert_int_eq(eo_layernorm(ctx, xh, NULL, NULL, 1e-5f, &y), EO_OK);
    ck_assert_int_eq(y->dtype, EO_F16); /* the input's dtype, rounded once */
    ck_assert_int_eq(eo_cast(ctx, y, EO_F32, &y), EO_OK);
    for (int i = 0; i < 4 * 256; i++) { /* |y| < 4: a f16 ulp is at most 2^-9 */
        float a = ((float *)y->data)[i], b = ((float *)y32->data)[i];
        ck_assert_msg(isfinite(a) && fabsf(a - b) <= 1.0f / 512, "[%d] %g vs %g", i, (double)a,
                      (double)b);
    }
    eo_test_ctx_free(ctx);
}
END_TEST

/* GELU (tanh form) in f16 at x = 50, 100, -60, 200: x^3 (1.25e5 ... 8e6)
 * is past f16's range; the derivative is ~1 (or ~0) and must come out
 * finite and right, so the kernel may not form x^3 in 16 bits. */
START_TEST(f16_gelu_backward_at_large_x)
{
    eo_ctx *ctx = eo_test_ctx(1, 4);
    const float xs[6] = { 50.0f, 100.0f, -60.0f, 200.0f, 1.5f, -2.0f };
    int64_t six = 6;
    eo_tensor *x, *xh, *y, *L;
    ck_assert_int_eq(eo_tensor_new(ctx, EO_STEP, EO_CPU, EO_F32, 1, &six, &x), EO_OK);
    memcpy(x->data, xs, sizeof xs);
    x->requires_grad = 1;
    ck_assert_int_eq(eo_cast(ctx, x, EO_F16, &xh), EO_OK);
    ck_assert_int_eq(eo_gelu(ctx, xh, &y), EO_OK);
    ck_assert_int_eq(y->dtype, EO_F16);
    ck_assert_int_eq(eo_cast(ctx, y, EO_F32, &y), EO_OK);
    ck_assert_int_eq(eo_sum_all(ctx, y, &L), EO_OK);
    ck_assert_int_eq(eo_backward(ctx, L), EO_OK);
    for (int i = 0; i < 6; i++) {
        double v = xs[i], c = sqrt(2.0 / 3.14159265358979323846), u = c * (v + 0.044715 * v * v * v);
        double t = tanh(u), want = 0.5 * (1 + t) + 0.5 * v * (1 - t * t) * c *
                                   (1 + 3 * 0.044715 * v * v);
        float got = ((float *)x->grad->data)[i];
        ck_assert_msg(isfinite(got) && fabs(got - want) < 2e-3 + 2e-3 * fabs(want),
                      "x %g: dgelu %g, want %g", v, (double)got, want);
    }
    eo_test_ctx_free(ctx);
}
END_TEST

/* Masks in f16: the causal mask keeps -inf (no -1e9 that would itself
 * overflow), and a query whose keys are all hidden (a padding mask over a
 * whole sequence) gets zeros, not NaN from -inf - -inf, in composed and
 * fused attention alike. */
START_TEST(f16_masks_stay_finite_or_minus_inf)
{
    eo_ctx *ctx = eo_test_ctx(1, 8);
    eo_tensor *cm, *cmh, *cmf;
    ck_assert_int_eq(eo_causal_mask(ctx, EO_CPU, 4, &cm), EO_OK);
    ck_assert_int_eq(eo_cast(ctx, cm, EO_F16, &cmh), EO_OK);
    ck_assert_int_eq(eo_cast(ctx, cmh, EO_F32, &cmf), EO_OK);
    for (int i = 0; i < 16; i++) {
        float v = ((float *)cmf->data)[i];
        ck_assert(i % 4 <= i / 4 ? v == 0.0f : (isinf(v) && v < 0));
    }
    int64_t sh[4] = { 2, 1, 4, 8 };
    eo_tensor *q = eo_test_rand(ctx, 4, sh, -3, 3, 1, 0), *k = eo_test_rand(ctx, 4, sh, -3, 3, 2, 0);
    eo_tensor *v = eo_test_rand(ctx, 4, sh, -1, 1, 3, 0), *pm, *o, *of;
    const uint8_t valid[8] = { 1, 1, 1, 0, 0, 0, 0, 0 }; /* batch 1: no key at all */
    ck_assert_int_eq(eo_padding_mask(ctx, EO_CPU, 2, 4, valid, &pm), EO_OK);
    ck_assert_int_eq(eo_ctx_set_autocast(ctx, EO_F16), EO_OK);
    for (int fused = 0; fused < 2; fused++) {
        eo_status s = fused ? eo_attention_fused(ctx, q, k, v, pm, 1, 0.35f, &o)
                            : eo_attention(ctx, q, k, v, pm, 1, 0.35f, &o);
        ck_assert_msg(s == EO_OK, "%s", eo_last_error(ctx));
        ck_assert_int_eq(eo_cast(ctx, o, EO_F32, &of), EO_OK);
        for (int i = 0; i < 2 * 4 * 8; i++) {
            float x = ((float *)of->data)[i];
            ck_assert_msg(isfinite(x), "fused %d: element %d is %g", fused, i, (double)x);
            if (i >= 32)
                ck_assert_float_eq(x, 0.0f);
        }
    }
    eo_test_ctx_free(ctx);
}
END_TEST


/* ---- every model, through eo-train's own loops ------------------------------------ */

void eo_test_image_config(eo_train_config *c, eo_model_kind model, int precision)
{
    eo_train_defaults(c, model);
    c->data_dir = "/usr/share/datasets/fashion-mnist";
    c->epochs = 1;
    c->batch = 8;
    c->max_steps = 2;
    c->threads = 1;
    c->train_subset = 16;
    c->test_subset = 8;
    c->quiet = 1;
    c->plot = NULL;
    c->persist_mb = 16;
    c->step_mb = 64;
    c->precision = precision;
}

void eo_test_gpt_config(eo_lm_config *c, const char *text_path, int precision)
{
    eo_lm_defaults(c);
    c->text = text_path;
    c->steps = 3;
    c->context = 16;
    c->d_model = 16;
    c->heads = 2;
    c->layers = 1;
    c->batch = 3;
    c->threads = 1;
    c->eval_every = 0;
    c->val_windows = 2;
    c->quiet = 1;
    c->persist_mb = 8;
    c->step_mb = 16;
    c->precision = precision;
}

const char eo_test_gpt_text[] =
    "the quick brown fox jumps over the lazy dog. a stitch in time saves nine.\n"
    "all that glitters is not gold. where there is smoke there is fire.\n"
    "the early bird catches the worm. better late than never, they say.\n";

/* eo-train --precision bf16 / f16 for mlp, cnn, vit and gpt: two steps
 * each (three for the GPT), the loss within 16-bit rounding of f32's. */
START_TEST(every_model_trains_in_bf16_and_f16)
{
    static const eo_model_kind models[3] = { EO_MODEL_MLP, EO_MODEL_CNN, EO_MODEL_VIT };
    char err[512];
    for (int i = 0; i < 3; i++) {
        eo_train_result r[3];
        for (int p = 0; p < 3; p++) {
            eo_train_config c;
            eo_test_image_config(&c, models[i], p == 0 ? EO_F32 : p == 1 ? EO_BF16 : EO_F16);
            ck_assert_msg(eo_train_run(&c, &r[p], NULL, err, sizeof err) == EO_OK, "%s %d: %s",
                          eo_model_name(models[i]), p, err);
        }
        for (int p = 1; p < 3; p++)
            ck_assert_msg(fabs(r[p].last_loss - r[0].last_loss) < 0.03 * r[0].last_loss,
                          "%s: loss %s %.5f vs f32 %.5f", eo_model_name(models[i]),
                          p == 1 ? "bf16" : "f16", r[p].last_loss, r[0].last_loss);
        /* f16 at GradScaler's 2^16 may overflow in a first step (PyTorch
         * skips early steps too): at most one of the two here. */
        ck_assert_msg(r[2].skipped_steps <= 1, "%s: f16 skipped %lld steps",
                      eo_model_name(models[i]), (long long)r[2].skipped_steps);
    }
    ck_assert_ptr_nonnull(eo_tmpdir_make());
    const char *path = eo_tmpdir_file("text.txt", eo_test_gpt_text, strlen(eo_test_gpt_text));
    ck_assert_ptr_nonnull(path);
    eo_lm_result g[3];
    for (int p = 0; p < 3; p++) {
        eo_lm_config c;
        eo_test_gpt_config(&c, path, p == 0 ? EO_F32 : p == 1 ? EO_BF16 : EO_F16);
        ck_assert_msg(eo_lm_train_run(&c, &g[p], NULL, err, sizeof err) == EO_OK, "gpt %d: %s", p,
                      err);
    }
    eo_tmpdir_remove();
    for (int p = 1; p < 3; p++)
        ck_assert_msg(fabs(g[p].val_loss - g[0].val_loss) < 0.02 * g[0].val_loss,
                      "gpt: validation loss %s %.5f vs f32 %.5f", p == 1 ? "bf16" : "f16",
                      g[p].val_loss, g[0].val_loss);
}
END_TEST

Suite *eo_suite_amp(void)
{
    Suite *s = suite_create("amp");
    TCase *tc = tcase_create("amp");
    tcase_add_test(tc, autocast_lists_give_their_dtypes);
    tcase_add_test(tc, views_of_parameters_under_autocast);
    tcase_add_test(tc, mlp_20_steps_bf16_f16_track_f32);
    tcase_add_test(tc, f16_overflow_step_is_skipped_and_scale_halves);
    tcase_add_test(tc, f16_attention_scores_do_not_overflow);
    tcase_add_test(tc, f16_layernorm_statistics_in_f32);
    tcase_add_test(tc, f16_gelu_backward_at_large_x);
    tcase_add_test(tc, f16_masks_stay_finite_or_minus_inf);
    suite_add_tcase(s, tc);
    TCase *models = tcase_create("models"); /* loads Fashion-MNIST, trains 4 models */
    tcase_set_timeout(models, 180);
    tcase_add_test(models, every_model_trains_in_bf16_and_f16);
    suite_add_tcase(s, models);
    return s;
}
