/* tests/test_transformer.c — the transformer stack of core/transformer.h:
 * shapes through a block and both models, argument checks, causality
 * (a later token never changes an earlier position's logits), the
 * gradient of a whole block by finite differences, and a tiny GPT that
 * memorises one batch, the quickest end-to-end sign that forward,
 * backward and AdamW work together. Agreement with PyTorch is the
 * `parity` suite. A fully masked attention row is covered by the
 * attention op's own tests. */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "core/transformer.h"
#include "tests/gradcheck.h"
#include "tests/tmpdir.h"
#include "tools/train/textlm.h"

START_TEST(shapes_through_block_gpt_and_vit)
{
    eo_ctx *ctx = eo_test_ctx(8, 64);
    eo_seed(ctx, 3);
    eo_params ps;
    eo_block b;
    ck_assert_int_eq(eo_params_init(ctx, &ps, 16), EO_OK);
    ck_assert_int_eq(eo_block_init(ctx, &ps, EO_CPU, "h.0", 16, 4, 1, &b), EO_OK);
    ck_assert_int_eq(ps.count, 12);
    ck_assert_str_eq(ps.items[2]->name, "h.0.attn.c_attn.weight");
    ck_assert_int_eq(ps.items[2]->shape[0], 48);
    int64_t sx[3] = { 2, 5, 16 };
    eo_tensor *x = eo_test_rand(ctx, 3, sx, -1, 1, 1, 0), *y;
    ck_assert_int_eq(eo_block_forward(ctx, &b, x, &y), EO_OK);
    ck_assert_int_eq(y->rank, 3);
    ck_assert(y->shape[0] == 2 && y->shape[1] == 5 && y->shape[2] == 16);

    eo_gpt g;
    eo_gpt_config gc = { 11, 8, 16, 2, 2, 0 };
    ck_assert_int_eq(eo_gpt_build(ctx, EO_CPU, &gc, &g), EO_OK);
    ck_assert_int_eq(g.params.count, 5 + 12 * 2);
    ck_assert_ptr_nonnull(eo_params_find(&g.params, "lm_head.weight"));
    ck_assert_ptr_null(eo_params_find(&g.params, "lm_head.bias")); /* untied, no bias */
    int32_t ids[2 * 6] = { 0, 1, 2, 3, 4, 5, 10, 9, 8, 7, 6, 5 };
    int64_t si[2] = { 2, 6 };
    eo_tensor *idx, *logits;
    ck_assert_int_eq(eo_tensor_wrap(ctx, EO_I32, 2, si, ids, &idx), EO_OK);
    ck_assert_int_eq(eo_gpt_forward(ctx, &g, idx, &logits), EO_OK);
    ck_assert(logits->rank == 3 && logits->shape[0] == 2 && logits->shape[1] == 6 &&
              logits->shape[2] == 11);
    int32_t long_ids[9] = { 0 };
    int64_t sl[2] = { 1, 9 };
    ck_assert_int_eq(eo_tensor_wrap(ctx, EO_I32, 2, sl, long_ids, &idx), EO_OK);
    ck_assert_int_eq(eo_gpt_forward(ctx, &g, idx, &logits), EO_ERR_SHAPE); /* T > context */
    eo_gpt_config bad = { 11, 8, 10, 4, 1, 0 };
    ck_assert_int_eq(eo_gpt_build(ctx, EO_CPU, &bad, &g), EO_ERR_ARG);     /* 10 % 4 != 0 */

    eo_vit v;
    eo_vit_config vc = { 28, 4, 16, 2, 1, 10 };
    ck_assert_int_eq(eo_vit_build(ctx, EO_CPU, &vc, &v), EO_OK);
    ck_assert_int_eq(eo_params_find(&v.params, "pos_embed")->shape[0], 49);
    int64_t sv[2] = { 3, 784 };
    eo_tensor *img = eo_test_rand(ctx, 2, sv, 0, 1, 2, 0);
    ck_assert_int_eq(eo_vit_forward(ctx, &v, img, &logits), EO_OK);
    ck_assert(logits->rank == 2 && logits->shape[0] == 3 && logits->shape[1] == 10);
    eo_test_ctx_free(ctx);
}
END_TEST

START_TEST(gpt_is_causal)
{
    eo_ctx *ctx = eo_test_ctx(8, 32);
    eo_seed(ctx, 5);
    eo_gpt g;
    eo_gpt_config gc = { 7, 6, 8, 2, 2, 0 };
    ck_assert_int_eq(eo_gpt_build(ctx, EO_CPU, &gc, &g), EO_OK);
    int32_t a[6] = { 1, 2, 3, 4, 5, 6 }, b[6] = { 1, 2, 3, 0, 0, 0 };
    float la[6 * 7], lb[6 * 7];
    int64_t si[2] = { 1, 6 };
    eo_tensor *x, *lg;
    ck_assert_int_eq(eo_tensor_wrap(ctx, EO_I32, 2, si, a, &x), EO_OK);
    ck_assert_int_eq(eo_gpt_forward(ctx, &g, x, &lg), EO_OK);
    ck_assert_int_eq(eo_read(ctx, lg, la, sizeof la), EO_OK);
    ck_assert_int_eq(eo_tensor_wrap(ctx, EO_I32, 2, si, b, &x), EO_OK);
    ck_assert_int_eq(eo_gpt_forward(ctx, &g, x, &lg), EO_OK);
    ck_assert_int_eq(eo_read(ctx, lg, lb, sizeof lb), EO_OK);
    ck_assert_mem_eq(la, lb, 3 * 7 * sizeof(float)); /* positions 0..2 saw the same prefix */
    int differs = 0;
    for (int i = 3 * 7; i < 6 * 7; i++)
        differs |= la[i] != lb[i];
    ck_assert(differs);
    eo_test_ctx_free(ctx);
}
END_TEST

/* Generation with a key/value cache: feeding the tokens in pieces gives
 * the logits of one forward over all of them (eo_gpt_forward with the
 * fused attention), and the cache refuses to grow past the context. */
START_TEST(kv_cache_matches_full_forward)
{
    enum { B = 2, T = 9, V = 7 };
    eo_ctx *ctx = eo_test_ctx(8, 32);
    eo_seed(ctx, 9);
    eo_gpt g;
    eo_gpt_config gc = { V, 10, 8, 2, 2, 0 };
    ck_assert_int_eq(eo_gpt_build(ctx, EO_CPU, &gc, &g), EO_OK);
    eo_gpt_set_fused(&g, 1);
    eo_set_grad(ctx, 0);
    int32_t ids[B * T] = { 1, 2, 3, 4, 5, 6, 0, 1, 2, 6, 5, 4, 3, 2, 1, 0, 6, 5 };
    float full[B * T * V], got[B * T * V];
    int64_t si[2] = { B, T };
    eo_tensor *x, *lg;
    ck_assert_int_eq(eo_tensor_wrap(ctx, EO_I32, 2, si, ids, &x), EO_OK);
    ck_assert_int_eq(eo_gpt_forward(ctx, &g, x, &lg), EO_OK);
    ck_assert_int_eq(eo_read(ctx, lg, full, sizeof full), EO_OK);
    eo_gpt_cache c;
    ck_assert_int_eq(eo_gpt_cache_init(ctx, &g, B, &c), EO_OK);
    const int pieces[4] = { 4, 1, 1, 3 };
    int32_t piece[B * T];
    for (int p = 0, t0 = 0; p < 4; t0 += pieces[p++]) {
        const int n = pieces[p];
        for (int b = 0; b < B; b++)
            memcpy(piece + b * n, ids + b * T + t0, (size_t)n * sizeof *piece);
        int64_t sp[2] = { B, n };
        ck_assert_int_eq(eo_tensor_wrap(ctx, EO_I32, 2, sp, piece, &x), EO_OK);
        ck_assert_msg(eo_gpt_forward_cached(ctx, &g, &c, x, &lg) == EO_OK, "%s",
                      eo_last_error(ctx));
        ck_assert_int_eq(c.len, t0 + n);
        ck_assert_int_eq(eo_read(ctx, lg, got, (size_t)(B * n * V) * sizeof(float)), EO_OK);
        for (int b = 0; b < B; b++)
            for (int i = 0; i < n * V; i++) {
                float w = full[(b * T + t0) * V + i], v = got[b * n * V + i];
                ck_assert_msg(fabsf(v - w) <= 1e-5f + 1e-5f * fabsf(w),
                              "piece %d row %d: cached %.8g, full %.8g", p, b, (double)v,
                              (double)w);
            }
    }
    int64_t s2[2] = { B, 2 };
    ck_assert_int_eq(eo_tensor_wrap(ctx, EO_I32, 2, s2, piece, &x), EO_OK);
    ck_assert_int_eq(eo_gpt_forward_cached(ctx, &g, &c, x, &lg), EO_ERR_SHAPE); /* 9 + 2 > 10 */
    eo_gpt_cache_reset(&c);
    ck_assert_int_eq(c.len, 0);
    eo_test_ctx_free(ctx);
}
END_TEST

/* Issue 26, item 14: under bf16 / f16 autocast the cached forward failed
 * with EO_ERR_SHAPE (16-bit k, v against an f32 cache). The cache now
 * takes the autocast dtype it is made under, and generation in pieces
 * matches the uncached forward under the same autocast within 16-bit
 * tolerance. A cache made in another dtype than the forward's still
 * works (converted on the way in and out). Loop: bf16, f16; with and
 * without 16-bit working copies of the weights. */
static void read_f32(eo_ctx *ctx, eo_tensor *t, float *out, size_t n)
{
    eo_tensor *f = t;
    if (t->dtype != EO_F32)
        ck_assert_int_eq(eo_cast(ctx, t, EO_F32, &f), EO_OK);
    ck_assert_int_eq(eo_read(ctx, f, out, n * sizeof(float)), EO_OK);
}

START_TEST(kv_cache_under_autocast)
{
    enum { B = 2, T = 8, V = 7 };
    const eo_dtype dt = _i % 2 ? EO_F16 : EO_BF16;
    eo_ctx *ctx = eo_test_ctx(8, 32);
    eo_seed(ctx, 5);
    eo_gpt g;
    eo_gpt_config gc = { V, 10, 16, 2, 2, 0 };
    ck_assert_int_eq(eo_gpt_build(ctx, EO_CPU, &gc, &g), EO_OK);
    if (_i >= 2)
        ck_assert_int_eq(eo_params_enable_low(ctx, &g.params, dt), EO_OK);
    eo_gpt_set_fused(&g, 1);
    eo_set_grad(ctx, 0);
    ck_assert_int_eq(eo_ctx_set_autocast(ctx, dt), EO_OK);
    int32_t ids[B * T] = { 1, 2, 3, 4, 5, 6, 0, 1, 2, 6, 5, 4, 3, 2, 1, 0 };
    float full[B * T * V], got[B * T * V];
    int64_t si[2] = { B, T };
    eo_tensor *x, *lg;
    ck_assert_int_eq(eo_tensor_wrap(ctx, EO_I32, 2, si, ids, &x), EO_OK);
    ck_assert_int_eq(eo_gpt_forward(ctx, &g, x, &lg), EO_OK);
    read_f32(ctx, lg, full, B * T * V);
    /* made under autocast (its dtype), then one made without it */
    for (int made_off = 0; made_off < 2; made_off++) {
        eo_gpt_cache c;
        if (made_off)
            ck_assert_int_eq(eo_ctx_set_autocast(ctx, EO_F32), EO_OK);
        ck_assert_int_eq(eo_gpt_cache_init(ctx, &g, B, &c), EO_OK);
        ck_assert_int_eq(c.k[0]->dtype, made_off ? EO_F32 : dt);
        ck_assert_int_eq(eo_ctx_set_autocast(ctx, dt), EO_OK);
        const int pieces[4] = { 3, 1, 1, 3 };
        int32_t piece[B * T];
        for (int p = 0, t0 = 0; p < 4; t0 += pieces[p++]) {
            const int n = pieces[p];
            for (int b = 0; b < B; b++)
                memcpy(piece + b * n, ids + b * T + t0, (size_t)n * sizeof *piece);
            int64_t sp[2] = { B, n };
            ck_assert_int_eq(eo_tensor_wrap(ctx, EO_I32, 2, sp, piece, &x), EO_OK);
            ck_assert_msg(eo_gpt_forward_cached(ctx, &g, &c, x, &lg) == EO_OK, "%s",
                          eo_last_error(ctx));
            ck_assert_int_eq(lg->dtype, dt);
            read_f32(ctx, lg, got, (size_t)(B * n * V));
            /* 16-bit tolerance: the logits here are below 0.25, where
             * a bf16 unit in the last place is 2^-10 (on the CPU the two
             * agree to the bit: the same keys, rounded once) */
            for (int b = 0; b < B; b++)
                for (int i = 0; i < n * V; i++) {
                    float w = full[(b * T + t0) * V + i], v = got[b * n * V + i];
                    ck_assert_msg(fabsf(v - w) <= 2e-3f + 8e-3f * fabsf(w),
                                  "%s case %d piece %d row %d: cached %.6g, full %.6g",
                                  eo_dtype_name(dt), _i, p, b, (double)v, (double)w);
                }
        }
    }
    /* A cache made under autocast, read by a forward without it (f32
     * activations): converted, and close to the f32 forward. */
    eo_gpt_cache c;
    ck_assert_int_eq(eo_gpt_cache_init(ctx, &g, B, &c), EO_OK);
    ck_assert_int_eq(eo_ctx_set_autocast(ctx, EO_F32), EO_OK);
    ck_assert_int_eq(eo_tensor_wrap(ctx, EO_I32, 2, si, ids, &x), EO_OK);
    ck_assert_int_eq(eo_gpt_forward(ctx, &g, x, &lg), EO_OK);
    read_f32(ctx, lg, full, B * T * V);
    ck_assert_msg(eo_gpt_forward_cached(ctx, &g, &c, x, &lg) == EO_OK, "%s", eo_last_error(ctx));
    ck_assert_int_eq(lg->dtype, EO_F32);
    read_f32(ctx, lg, got, B * T * V);
    for (int i = 0; i < B * T * V; i++)
        ck_assert_msg(fabsf(got[i] - full[i]) <= 2e-3f + 8e-3f * fabsf(full[i]),
                      "f32 forward over a %s cache [%d]: %.6g vs %.6g", eo_dtype_name(dt), i,
                      (double)got[i], (double)full[i]);
    eo_test_ctx_free(ctx);
}
END_TEST

/* The cache's public fields are checked before any arithmetic on them:
 * len = INT64_MAX made c->len + T overflow (UBSan), a negative len sliced
 * before the cache, and a cache of another model or batch, or none at
 * all, is refused by name. A refused call leaves len as it was, and the
 * cache still works after. */
START_TEST(kv_cache_fields_are_validated)
{
    eo_ctx *ctx = eo_test_ctx(8, 32);
    eo_gpt g, other;
    eo_gpt_config gc = { 11, 8, 8, 2, 1, 0 }, oc = { 11, 6, 8, 2, 1, 0 };
    ck_assert_int_eq(eo_gpt_build(ctx, EO_CPU, &gc, &g), EO_OK);
    ck_assert_int_eq(eo_gpt_build(ctx, EO_CPU, &oc, &other), EO_OK);
    eo_set_grad(ctx, 0);
    int32_t ids[2] = { 1, 2 };
    int64_t si[2] = { 1, 2 };
    eo_tensor *x, *lg;
    ck_assert_int_eq(eo_tensor_wrap(ctx, EO_I32, 2, si, ids, &x), EO_OK);
    eo_gpt_cache c;
    ck_assert_int_eq(eo_gpt_cache_init(ctx, &g, 1, &c), EO_OK);
    const int64_t lens[] = { INT64_MAX, INT64_MAX - 1, 9, -1, INT64_MIN };
    for (size_t i = 0; i < sizeof lens / sizeof lens[0]; i++) {
        c.len = lens[i];
        ck_assert_int_eq(eo_gpt_forward_cached(ctx, &g, &c, x, &lg), EO_ERR_STATE);
        ck_assert_msg(strstr(eo_last_error(ctx), "cache len") &&
                          strstr(eo_last_error(ctx), "outside 0..8"),
                      "len %lld: %s", (long long)lens[i], eo_last_error(ctx));
        ck_assert_int_eq(c.len, lens[i]);
    }
    /* len 7 leaves room for one token: two are a shape error, len unchanged. */
    c.len = 7;
    ck_assert_int_eq(eo_gpt_forward_cached(ctx, &g, &c, x, &lg), EO_ERR_SHAPE);
    ck_assert_int_eq(c.len, 7);
    c.len = 6;
    ck_assert_int_eq(eo_gpt_forward_cached(ctx, &g, &c, x, &lg), EO_OK);
    ck_assert_int_eq(c.len, 8);
    /* The batch field and the tensors must agree with each other and the model. */
    eo_gpt_cache_reset(&c);
    c.batch = 2;
    ck_assert_int_eq(eo_gpt_forward_cached(ctx, &g, &c, x, &lg), EO_ERR_STATE);
    ck_assert_ptr_nonnull(strstr(eo_last_error(ctx), "cache k of layer 0"));
    c.batch = 0;
    ck_assert_int_eq(eo_gpt_forward_cached(ctx, &g, &c, x, &lg), EO_ERR_STATE);
    ck_assert_ptr_nonnull(strstr(eo_last_error(ctx), "not initialised"));
    c.batch = 1;
    ck_assert_int_eq(eo_gpt_forward_cached(ctx, &other, &c, x, &lg), EO_ERR_STATE);
    ck_assert_ptr_nonnull(strstr(eo_last_error(ctx), "expected [1x2x6x4 f32]"));
    eo_gpt_cache z = {0};
    ck_assert_int_eq(eo_gpt_forward_cached(ctx, &g, &z, x, &lg), EO_ERR_STATE);
    ck_assert_int_eq(eo_gpt_forward_cached(ctx, &g, &c, x, &lg), EO_OK); /* still usable */
    ck_assert_int_eq(c.len, 2);
    /* A model that was never built: refused, not dereferenced. */
    eo_gpt none = {0};
    ck_assert_int_eq(eo_gpt_cache_init(ctx, &none, 1, &z), EO_ERR_STATE);
    ck_assert_ptr_null(z.k);
    ck_assert_int_eq(eo_gpt_forward_cached(ctx, &none, &c, x, &lg), EO_ERR_STATE);
    eo_test_ctx_free(ctx);
}
END_TEST

/* y = block(x): checked by finite differences with respect to x. The
 * weights are enlarged so attention is far from uniform. */
static eo_status block_fn(eo_ctx *ctx, eo_tensor *const *in, void *user, eo_tensor **out)
{
    return eo_block_forward(ctx, user, in[0], out);
}

START_TEST(block_gradient_matches_finite_differences)
{
    eo_ctx *ctx = eo_test_ctx(8, 32);
    eo_seed(ctx, 11);
    eo_params ps;
    eo_block b;
    ck_assert_int_eq(eo_params_init(ctx, &ps, 16), EO_OK);
    for (int causal = 0; causal < 2; causal++) {
        ps.count = 0;
        ck_assert_int_eq(eo_block_init(ctx, &ps, EO_CPU, "b", 8, 2, causal, &b), EO_OK);
        for (int i = 0; i < ps.count; i++)
            ck_assert_int_eq(eo_init_param(ctx, ps.items[i], 0.5f, 1), EO_OK);
        int64_t sx[3] = { 2, 4, 8 };
        eo_tensor *x = eo_test_rand(ctx, 3, sx, -1, 1, 7, 1);
        char msg[256];
        eo_gradcheck_opts o = { 1e-2, 2e-2, 2e-3 };
        ck_assert_msg(eo_gradcheck(ctx, block_fn, &x, 1, &b, &o, msg, sizeof msg), "causal %d: %s",
                      causal, msg);
    }
    eo_test_ctx_free(ctx);
}
END_TEST

/* The fused attention op inside a whole GPT: same logits and gradients
 * as the composed one, to float32 tolerance. */
START_TEST(fused_attention_gpt_matches_composed)
{
    eo_ctx *ctx = eo_test_ctx(8, 32);
    eo_seed(ctx, 21);
    eo_gpt g;
    eo_gpt_config gc = { 9, 12, 16, 4, 2, 0 };
    ck_assert_int_eq(eo_gpt_build(ctx, EO_CPU, &gc, &g), EO_OK);
    for (int i = 0; i < g.params.count; i++)
        ck_assert_int_eq(eo_init_param(ctx, g.params.items[i], 0.3f, 1), EO_OK);
    int32_t ids[2 * 12], tg[2 * 12];
    for (int i = 0; i < 24; i++) {
        ids[i] = (i * 7 + 3) % 9;
        tg[i] = (i * 5 + 1) % 9;
    }
    int64_t si[2] = { 2, 12 };
    float lg[2][2 * 12 * 9];
    float *grads[2];
    int64_t total = eo_params_numel(&g.params);
    for (int fused = 0; fused < 2; fused++) {
        eo_gpt_set_fused(&g, fused);
        eo_mark mk = eo_mark_get(ctx);
        eo_tensor *x, *y, *logits, *L;
        ck_assert_int_eq(eo_tensor_wrap(ctx, EO_I32, 2, si, ids, &x), EO_OK);
        ck_assert_int_eq(eo_tensor_wrap(ctx, EO_I32, 2, si, tg, &y), EO_OK);
        ck_assert_int_eq(eo_params_zero_grad(ctx, &g.params), EO_OK);
        ck_assert_int_eq(eo_gpt_loss(ctx, &g, x, y, &logits, &L), EO_OK);
        ck_assert_int_eq(eo_backward(ctx, L), EO_OK);
        ck_assert_int_eq(eo_read(ctx, logits, lg[fused], sizeof lg[fused]), EO_OK);
        grads[fused] = malloc((size_t)total * sizeof(float));
        float *p = grads[fused];
        for (int i = 0; i < g.params.count; i++) {
            int64_t n = eo_numel(g.params.items[i]);
            memcpy(p, g.params.items[i]->grad->data, (size_t)n * sizeof(float));
            p += n;
        }
        eo_rewind(ctx, mk);
    }
    for (int i = 0; i < 2 * 12 * 9; i++)
        ck_assert_msg(fabsf(lg[0][i] - lg[1][i]) <= 1e-4f * (1 + fabsf(lg[0][i])),
                      "logit %d: composed %.7g fused %.7g", i, lg[0][i], lg[1][i]);
    float gmax = 0;
    for (int64_t i = 0; i < total; i++)
        gmax = fmaxf(gmax, fabsf(grads[0][i]));
    for (int64_t i = 0; i < total; i++)
        ck_assert_msg(fabsf(grads[0][i] - grads[1][i]) <= 1e-4f * gmax,
                      "gradient %lld: composed %.7g fused %.7g", (long long)i, grads[0][i],
                      grads[1][i]);
    free(grads[0]);
    free(grads[1]);
    eo_test_ctx_free(ctx);
}
END_TEST

START_TEST(tiny_gpt_memorises_a_batch)
{
    eo_ctx *ctx = eo_test_ctx(8, 32);
    eo_seed(ctx, 1);
    eo_gpt g;
    eo_gpt_config gc = { 11, 8, 16, 2, 2, 0 };
    ck_assert_int_eq(eo_gpt_build(ctx, EO_CPU, &gc, &g), EO_OK);
    eo_optimizer opt;
    ck_assert_int_eq(eo_adamw_init(ctx, &opt, &g.params, 1e-2f, 0.9f, 0.999f, 1e-8f, 0.0f), EO_OK);
    enum { B = 4, T = 8 };
    int32_t ids[B * T], tg[B * T];
    uint32_t r = 12345;
    for (int i = 0; i < B * T; i++) {
        r = r * 1664525u + 1013904223u;
        ids[i] = (int32_t)((r >> 16) % 11);
        r = r * 1664525u + 1013904223u;
        tg[i] = (int32_t)((r >> 16) % 11);
    }
    int64_t si[2] = { B, T };
    float loss = 99, first = 0;
    int step;
    for (step = 0; step < 400 && loss > 0.1f; step++) {
        eo_mark mk = eo_mark_get(ctx);
        eo_tensor *x, *y, *L;
        ck_assert_int_eq(eo_tensor_wrap(ctx, EO_I32, 2, si, ids, &x), EO_OK);
        ck_assert_int_eq(eo_tensor_wrap(ctx, EO_I32, 2, si, tg, &y), EO_OK);
        ck_assert_int_eq(eo_params_zero_grad(ctx, &g.params), EO_OK);
        ck_assert_int_eq(eo_gpt_loss(ctx, &g, x, y, NULL, &L), EO_OK);
        ck_assert_int_eq(eo_backward(ctx, L), EO_OK);
        ck_assert_int_eq(eo_optimizer_step(ctx, &opt), EO_OK);
        ck_assert_int_eq(eo_read(ctx, L, &loss, sizeof loss), EO_OK);
        if (step == 0)
            first = loss;
        eo_rewind(ctx, mk);
    }
    ck_assert_msg(fabsf(first - logf(11.0f)) < 0.1f, "initial loss %.3f, expected ~ln 11", first);
    ck_assert_msg(loss <= 0.1f, "loss still %.4f after %d steps", loss, step);
    eo_test_ctx_free(ctx);
}
END_TEST

/* The corpus recipe on a small file: tabs to spaces, lower case, only
 * printable ASCII and newline; the vocabulary sorted; validation windows
 * evenly spaced and inside the text. */
START_TEST(text_cleaning_vocabulary_and_windows)
{
    ck_assert_ptr_nonnull(eo_tmpdir_make());
    const char raw[] = "Hi\tYOU\r\n\x01" "caf\xc3\xa9!\n";
    const char *path = eo_tmpdir_file("t.txt", raw, sizeof raw - 1);
    ck_assert_ptr_nonnull(path);
    char *text, err[256];
    size_t len;
    ck_assert_int_eq(eo_text_load_file(path, &text, &len, err, sizeof err), EO_OK);
    ck_assert_uint_eq(len, 12);
    ck_assert(memcmp(text, "hi you\ncaf!\n", 12) == 0);
    eo_vocab v, w;
    eo_vocab_build(&v, text, len);
    ck_assert_int_eq(v.size, 11);
    ck_assert_str_eq(v.chars, "\n !acfhiouy");
    ck_assert_int_eq(v.id['h'], (int)(strchr(v.chars, 'h') - v.chars));
    ck_assert_int_eq(v.id['Z'], -1);
    ck_assert_int_eq(eo_vocab_from_chars(&w, v.chars), 0);
    ck_assert_int_eq(w.size, v.size);
    ck_assert_int_eq(w.id['y'], v.id['y']);
    ck_assert_int_eq(eo_vocab_from_chars(&w, "abca"), -1);
    free(text);
    eo_tmpdir_remove();
    for (int k = 0; k < 512; k++)
        ck_assert_uint_le(eo_val_window_start(10000, 64, 512, k) + 65, 10000);
    ck_assert_uint_eq(eo_val_window_start(10000, 64, 512, 1), (10000 - 65) / 512);
}
END_TEST

Suite *eo_suite_transformer(void)
{
    Suite *s = suite_create("transformer");
    TCase *tc = tcase_create("transformer");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, shapes_through_block_gpt_and_vit);
    tcase_add_test(tc, gpt_is_causal);
    tcase_add_test(tc, kv_cache_matches_full_forward);
    tcase_add_loop_test(tc, kv_cache_under_autocast, 0, 4);
    tcase_add_test(tc, kv_cache_fields_are_validated);
    tcase_add_test(tc, block_gradient_matches_finite_differences);
    tcase_add_test(tc, fused_attention_gpt_matches_composed);
    tcase_add_test(tc, tiny_gpt_memorises_a_batch);
    tcase_add_test(tc, text_cleaning_vocabulary_and_windows);
    suite_add_tcase(s, tc);
    return s;
}
