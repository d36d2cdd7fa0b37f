/* tests/test_attention.c — the attention masks, the composed eo_attention
 * against a plain double-precision reference, and the fused op against
 * the composed one (forward and every gradient), with the cases that
 * break attention kernels: awkward sizes (T = 1, 7, 130; D = 5, 33),
 * fully masked rows, scores of ±1e4, head-split (non-contiguous) inputs,
 * a mask that is learned, and threads.
 *
 * Tolerance, fused vs composed: |a - b| <= 2e-5 + 1e-4 |b| per element,
 * forward and gradients, for inputs in [-1, 1] and scale 1/sqrt(D). Both
 * sum the same terms in float in different orders (tiles, an online
 * softmax), so they agree to a few float ulps of the largest term, not
 * bit for bit. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/everyo.h"
#include "tests/gradcheck.h"
#include "tools/threads/pool.h"

typedef eo_status (*attn_fn)(eo_ctx *, eo_tensor *, eo_tensor *, eo_tensor *, eo_tensor *,
                             int, float, eo_tensor **);

static eo_tensor *rand4(eo_ctx *ctx, int64_t a, int64_t b, int64_t c, int64_t d, float lo,
                        float hi, unsigned seed, int rg)
{
    int64_t s[4] = { a, b, c, d };
    eo_tensor *t = eo_test_rand(ctx, 4, s, lo, hi, seed, rg);
    ck_assert_ptr_nonnull(t);
    return t;
}

/* Element (b, h, i, j) of a mask of rank <= 4 broadcast to [B,H,Tq,Tk]. */
static float mask_at(const eo_tensor *m, int64_t b, int64_t h, int64_t i, int64_t j)
{
    int64_t idx[4] = { b, h, i, j }, off = 0;
    for (int a = 0; a < m->rank; a++) {
        int64_t x = idx[4 - m->rank + a];
        off += (m->shape[a] == 1 ? 0 : x) * m->stride[a];
    }
    return ((const float *)m->data)[off];
}

static float at4(const eo_tensor *t, int64_t b, int64_t h, int64_t i, int64_t d)
{
    return ((const float *)t->data)[b * t->stride[0] + h * t->stride[1] + i * t->stride[2] +
                                    d * t->stride[3]];
}

/* The definition, in double, with plain loops; a row with no visible key
 * is 0. out is [B,H,Tq,D] contiguous. */
static void reference(const eo_tensor *q, const eo_tensor *k, const eo_tensor *v,
                      const eo_tensor *mask, int causal, float scale, double *out)
{
    const int64_t B = q->shape[0], H = q->shape[1], Tq = q->shape[2], Tk = k->shape[2];
    const int64_t D = q->shape[3];
    double *s = malloc((size_t)Tk * sizeof *s);
    for (int64_t b = 0; b < B; b++)
        for (int64_t h = 0; h < H; h++)
            for (int64_t i = 0; i < Tq; i++) {
                double mx = -INFINITY, sum = 0;
                for (int64_t j = 0; j < Tk; j++) {
                    double dot = 0;
                    for (int64_t d = 0; d < D; d++)
                        dot += (double)at4(q, b, h, i, d) * at4(k, b, h, j, d);
                    s[j] = dot * scale + (mask ? mask_at(mask, b, h, i, j) : 0.0f);
                    if (causal && j > i + Tk - Tq) /* the diagonal ends bottom-right */
                        s[j] = -INFINITY;
                    mx = s[j] > mx ? s[j] : mx;
                }
                double *o = out + ((b * H + h) * Tq + i) * D;
                for (int64_t d = 0; d < D; d++)
                    o[d] = 0;
                if (mx == -INFINITY)
                    continue;
                for (int64_t j = 0; j < Tk; j++)
                    sum += s[j] = exp(s[j] - mx);
                for (int64_t j = 0; j < Tk; j++)
                    for (int64_t d = 0; d < D; d++)
                        o[d] += s[j] / sum * at4(v, b, h, j, d);
            }
    free(s);
}

/* Every element finite and within atol + rtol |want|. */
static void expect_close(const char *what, const float *got, const double *want, int64_t n,
                         double atol, double rtol)
{
    for (int64_t i = 0; i < n; i++)
        if (!isfinite(got[i]) || fabs(got[i] - want[i]) > atol + rtol * fabs(want[i]))
            ck_abort_msg("%s: element %lld is %.9g, expected %.9g", what, (long long)i,
                         (double)got[i], want[i]);
}

static void expect_close_f(const char *what, const eo_tensor *got, const eo_tensor *want,
                           double atol, double rtol)
{
    ck_assert_int_eq(eo_numel(got), eo_numel(want));
    ck_assert(eo_is_contiguous(got) && eo_is_contiguous(want));
    int64_t n = eo_numel(want);
    double *w = malloc((size_t)n * sizeof *w);
    for (int64_t i = 0; i < n; i++)
        w[i] = ((const float *)want->data)[i];
    expect_close(what, got->data, w, n, atol, rtol);
    free(w);
}

/* A padding mask where batch entry b keeps its first len[b] keys. */
static eo_tensor *pad_mask(eo_ctx *ctx, int64_t B, int64_t T, const int64_t *len)
{
    uint8_t *valid = malloc((size_t)(B * T) + 1);
    for (int64_t b = 0; b < B; b++)
        for (int64_t t = 0; t < T; t++)
            valid[b * T + t] = t < len[b];
    eo_tensor *m;
    ck_assert_int_eq(eo_padding_mask(ctx, EO_CPU, B, T, valid, &m), EO_OK);
    free(valid);
    return m;
}

START_TEST(masks_hold_zero_and_minus_infinity)
{
    eo_ctx *ctx = eo_test_ctx(1, 4);
    eo_tensor *m;
    ck_assert_int_eq(eo_causal_mask(ctx, EO_CPU, 5, &m), EO_OK);
    ck_assert_int_eq(m->rank, 2);
    ck_assert_int_eq(m->shape[0], 5);
    ck_assert_int_eq(m->shape[1], 5);
    for (int i = 0; i < 5; i++)
        for (int j = 0; j < 5; j++) {
            float x = ((float *)m->data)[i * 5 + j];
            if (j <= i)
                ck_assert(x == 0.0f);
            else
                ck_assert(isinf(x) && x < 0);
        }
    int64_t len[2] = { 3, 1 };
    m = pad_mask(ctx, 2, 4, len);
    int64_t want[4] = { 2, 1, 1, 4 };
    ck_assert_int_eq(m->rank, 4);
    for (int i = 0; i < 4; i++)
        ck_assert_int_eq(m->shape[i], want[i]);
    for (int b = 0; b < 2; b++)
        for (int t = 0; t < 4; t++) {
            float x = ((float *)m->data)[b * 4 + t];
            ck_assert(t < len[b] ? x == 0.0f : isinf(x) && x < 0);
        }
    ck_assert_int_eq(eo_causal_mask(ctx, EO_CPU, -1, &m), EO_ERR_ARG);
    ck_assert_int_eq(eo_padding_mask(ctx, EO_CPU, 1, 2, NULL, &m), EO_ERR_ARG);
    eo_test_ctx_free(ctx);
}
END_TEST

typedef struct { int64_t B, H, Tq, Tk, D; } shape5;

/* Awkward sizes: one token, prime lengths, D not a multiple of 8, Tq !=
 * Tk, and (for the fused tiles of 64) lengths that cross tile edges. */
static const shape5 shapes[] = {
    { 1, 1, 1, 1, 1 },  { 2, 3, 7, 7, 5 },   { 2, 1, 7, 7, 33 }, { 1, 2, 7, 5, 33 },
    { 2, 3, 1, 1, 5 },  { 1, 2, 3, 9, 8 },   { 1, 2, 130, 130, 33 },
    { 2, 1, 65, 129, 16 },
};

/* Each op on every shape, causal or not (when Tq == Tk; the fused op also
 * when Tq < Tk, the queries being the last positions), with and without a
 * padding mask, against the double reference. */
static void forward_vs_reference(attn_fn f)
{
    eo_ctx *ctx = eo_test_ctx(1, 64);
    for (size_t c = 0; c < sizeof shapes / sizeof shapes[0]; c++) {
        shape5 s = shapes[c];
        eo_tensor *q = rand4(ctx, s.B, s.H, s.Tq, s.D, -1, 1, 10 + (unsigned)c, 0);
        eo_tensor *k = rand4(ctx, s.B, s.H, s.Tk, s.D, -1, 1, 20 + (unsigned)c, 0);
        eo_tensor *v = rand4(ctx, s.B, s.H, s.Tk, s.D, -1, 1, 30 + (unsigned)c, 0);
        int64_t len[2] = { s.Tk > 2 ? s.Tk - 2 : 1, 1 };
        eo_tensor *pm = pad_mask(ctx, s.B, s.Tk, len);
        const float scale = 1.0f / sqrtf((float)s.D);
        double *want = malloc((size_t)eo_numel(q) * sizeof *want);
        int causal_ok = f == eo_attention_fused ? s.Tq <= s.Tk : s.Tq == s.Tk;
        for (int causal = 0; causal <= causal_ok; causal++)
            for (int masked = 0; masked <= 1; masked++) {
                eo_tensor *mask = masked ? pm : NULL, *out;
                ck_assert_int_eq(f(ctx, q, k, v, mask, causal, scale, &out), EO_OK);
                ck_assert_int_eq(out->rank, 4);
                ck_assert(eo_is_contiguous(out));
                reference(q, k, v, mask, causal, scale, want);
                char what[96];
                snprintf(what, sizeof what, "shape %zu causal %d mask %d", c, causal, masked);
                expect_close(what, out->data, want, eo_numel(q), 1e-5, 1e-4);
            }
        free(want);
    }
    eo_test_ctx_free(ctx);
}

START_TEST(composed_matches_double_reference) { forward_vs_reference(eo_attention); }
END_TEST
START_TEST(fused_matches_double_reference) { forward_vs_reference(eo_attention_fused); }
END_TEST

/* out = f(...), L = sum(out * R), backward; returns out. Leaf grads are
 * cleared first so that each call's gradients stand alone. */
static eo_tensor *run_loss(eo_ctx *ctx, attn_fn f, eo_tensor *q, eo_tensor *k, eo_tensor *v,
                           eo_tensor *mask, int causal, float scale, eo_tensor *R)
{
    eo_tensor *leaves[4] = { q, k, v, mask }, *out, *p, *L;
    for (int i = 0; i < 4; i++)
        if (leaves[i])
            leaves[i]->grad = NULL;
    ck_assert_int_eq(f(ctx, q, k, v, mask, causal, scale, &out), EO_OK);
    ck_assert_int_eq(eo_mul(ctx, out, R, &p), EO_OK);
    ck_assert_int_eq(eo_sum_all(ctx, p, &L), EO_OK);
    ck_assert_int_eq(eo_backward(ctx, L), EO_OK);
    return out;
}

/* Fused vs composed: output and the gradients of q, k, v (and of a
 * learned mask when it requires grad). */
static void compare_fused(eo_ctx *ctx, eo_tensor *q, eo_tensor *k, eo_tensor *v,
                          eo_tensor *mask, int causal, float scale, const char *what)
{
    eo_tensor *R = rand4(ctx, q->shape[0], q->shape[1], q->shape[2], q->shape[3], -1, 1, 99, 0);
    eo_tensor *leaves[4] = { q, k, v, mask }, *ref[4] = { 0 };
    eo_tensor *oc = run_loss(ctx, eo_attention, q, k, v, mask, causal, scale, R);
    for (int i = 0; i < 4; i++)
        if (leaves[i] && leaves[i]->requires_grad)
            ref[i] = leaves[i]->grad;
    eo_tensor *of = run_loss(ctx, eo_attention_fused, q, k, v, mask, causal, scale, R);
    char msg[128];
    snprintf(msg, sizeof msg, "%s: out", what);
    expect_close_f(msg, of, oc, 2e-5, 1e-4);
    static const char *names[4] = { "dq", "dk", "dv", "dmask" };
    for (int i = 0; i < 4; i++)
        if (ref[i]) {
            ck_assert_ptr_nonnull(leaves[i]->grad);
            snprintf(msg, sizeof msg, "%s: %s", what, names[i]);
            expect_close_f(msg, leaves[i]->grad, ref[i], 2e-5, 1e-4);
        }
}

START_TEST(fused_matches_composed_with_gradients)
{
    eo_ctx *ctx = eo_test_ctx(1, 256);
    for (size_t c = 0; c < sizeof shapes / sizeof shapes[0]; c++) {
        shape5 s = shapes[c];
        eo_tensor *q = rand4(ctx, s.B, s.H, s.Tq, s.D, -1, 1, 40 + (unsigned)c, 1);
        eo_tensor *k = rand4(ctx, s.B, s.H, s.Tk, s.D, -1, 1, 50 + (unsigned)c, 1);
        eo_tensor *v = rand4(ctx, s.B, s.H, s.Tk, s.D, -1, 1, 60 + (unsigned)c, 1);
        int64_t len[2] = { s.Tk > 2 ? s.Tk - 2 : 1, 1 };
        eo_tensor *pm = pad_mask(ctx, s.B, s.Tk, len);
        const float scale = 1.0f / sqrtf((float)s.D);
        char what[96];
        for (int causal = 0; causal <= (s.Tq == s.Tk); causal++)
            for (int masked = 0; masked <= 1; masked++) {
                snprintf(what, sizeof what, "shape %zu causal %d mask %d", c, causal, masked);
                compare_fused(ctx, q, k, v, masked ? pm : NULL, causal, scale, what);
            }
        /* A learned additive bias, shared by the batch ([H, Tq, Tk]) and
         * by batch and heads ([Tq, Tk]): its gradient sums over those. */
        eo_tensor *bias3 = eo_test_rand(ctx, 3, (int64_t[]){ s.H, s.Tq, s.Tk }, -1, 1, 70, 1);
        eo_tensor *bias2 = eo_test_rand(ctx, 2, (int64_t[]){ s.Tq, s.Tk }, -1, 1, 71, 1);
        snprintf(what, sizeof what, "shape %zu bias [H,Tq,Tk]", c);
        compare_fused(ctx, q, k, v, bias3, s.Tq == s.Tk, scale, what);
        snprintf(what, sizeof what, "shape %zu bias [Tq,Tk]", c);
        compare_fused(ctx, q, k, v, bias2, 0, scale, what);
        if (s.Tq < s.Tk) { /* causal with a key cache: against the composed op and its mask */
            eo_tensor *cm, *R = rand4(ctx, s.B, s.H, s.Tq, s.D, -1, 1, 98, 0);
            ck_assert_int_eq(eo_tensor_new(ctx, EO_STEP, EO_CPU, EO_F32, 2,
                                           (int64_t[]){ s.Tq, s.Tk }, &cm), EO_OK);
            for (int64_t i = 0; i < s.Tq; i++)
                for (int64_t j = 0; j < s.Tk; j++)
                    ((float *)cm->data)[i * s.Tk + j] = j > i + s.Tk - s.Tq ? -INFINITY : 0.0f;
            eo_tensor *oc = run_loss(ctx, eo_attention, q, k, v, cm, 0, scale, R);
            eo_tensor *gc[3] = { q->grad, k->grad, v->grad };
            eo_tensor *of = run_loss(ctx, eo_attention_fused, q, k, v, NULL, 1, scale, R);
            eo_tensor *gf[3] = { q->grad, k->grad, v->grad };
            snprintf(what, sizeof what, "shape %zu causal Tq < Tk", c);
            expect_close_f(what, of, oc, 2e-5, 1e-4);
            for (int g = 0; g < 3; g++)
                expect_close_f(what, gf[g], gc[g], 2e-5, 1e-4);
        }
    }
    eo_test_ctx_free(ctx);
}
END_TEST

typedef struct { attn_fn f; int causal; int masked; } gc_user;

static eo_status gc_attn(eo_ctx *ctx, eo_tensor *const *in, void *user, eo_tensor **out)
{
    const gc_user *u = user;
    return u->f(ctx, in[0], in[1], in[2], u->masked ? in[3] : NULL, u->causal,
                1.0f / sqrtf((float)in[0]->shape[3]), out);
}

START_TEST(gradcheck_both_forms)
{
    eo_ctx *ctx = eo_test_ctx(1, 16);
    attn_fn fs[2] = { eo_attention, eo_attention_fused };
    for (int fi = 0; fi < 2; fi++)
        for (int causal = 0; causal <= 1; causal++)
            for (int masked = 0; masked <= 1; masked++) {
                int64_t Tk = causal ? 5 : 4;
                eo_tensor *in[4] = {
                    rand4(ctx, 2, 2, 5, 3, -1, 1, 1, 1), rand4(ctx, 2, 2, Tk, 3, -1, 1, 2, 1),
                    rand4(ctx, 2, 2, Tk, 3, -1, 1, 3, 1),
                    /* a finite learned bias broadcast over heads */
                    rand4(ctx, 2, 1, 5, Tk, -1, 1, 4, 1),
                };
                gc_user u = { fs[fi], causal, masked };
                char msg[256];
                if (!eo_gradcheck(ctx, gc_attn, in, masked ? 4 : 3, &u, NULL, msg, sizeof msg))
                    ck_abort_msg("%s causal %d mask %d: %s", fi ? "fused" : "composed", causal,
                                 masked, msg);
            }
    eo_test_ctx_free(ctx);
}
END_TEST

/* Query rows whose keys are all masked: a padding mask that hides every
 * key of batch entry 1, and a causal mask plus a bias hiding key 0 (so
 * query 0 of the causal case sees nothing). Output 0, gradients finite,
 * and nothing flows back through the hidden rows. */
START_TEST(fully_masked_rows_give_zeros_not_nan)
{
    eo_ctx *ctx = eo_test_ctx(1, 16);
    attn_fn fs[2] = { eo_attention, eo_attention_fused };
    for (int fi = 0; fi < 2; fi++) {
        const int64_t B = 2, H = 2, T = 6, D = 5;
        eo_tensor *q = rand4(ctx, B, H, T, D, -1, 1, 5, 1), *k = rand4(ctx, B, H, T, D, -1, 1, 6, 1);
        eo_tensor *v = rand4(ctx, B, H, T, D, -1, 1, 7, 1);
        eo_tensor *R = rand4(ctx, B, H, T, D, -1, 1, 8, 0);
        int64_t len[2] = { 4, 0 };
        eo_tensor *pm = pad_mask(ctx, B, T, len);
        eo_tensor *out = run_loss(ctx, fs[fi], q, k, v, pm, 0, 0.5f, R);
        const float *o = out->data;
        for (int64_t i = 0; i < B * H * T * D; i++) {
            ck_assert(isfinite(o[i]));
            if (i >= H * T * D) /* batch entry 1 */
                ck_assert(o[i] == 0.0f);
        }
        eo_tensor *g[3] = { q->grad, k->grad, v->grad };
        for (int t = 0; t < 3; t++)
            for (int64_t i = 0; i < B * H * T * D; i++) {
                ck_assert(isfinite(((float *)g[t]->data)[i]));
                if (i >= H * T * D)
                    ck_assert(((float *)g[t]->data)[i] == 0.0f);
            }

        /* Causal, with key 0 hidden: query row 0 sees no key at all. */
        int64_t s2[2] = { 1, T };
        eo_tensor *hide0;
        ck_assert_int_eq(eo_tensor_zeros(ctx, EO_STEP, EO_CPU, EO_F32, 2, s2, &hide0), EO_OK);
        ((float *)hide0->data)[0] = -INFINITY;
        out = run_loss(ctx, fs[fi], q, k, v, hide0, 1, 0.5f, R);
        o = out->data;
        for (int64_t bh = 0; bh < B * H; bh++)
            for (int64_t i = 0; i < T * D; i++) {
                ck_assert(isfinite(o[bh * T * D + i]));
                if (i < D)
                    ck_assert(o[bh * T * D + i] == 0.0f);
                ck_assert(isfinite(((float *)q->grad->data)[bh * T * D + i]));
                if (i < D)
                    ck_assert(((float *)q->grad->data)[bh * T * D + i] == 0.0f);
                ck_assert(isfinite(((float *)k->grad->data)[bh * T * D + i]));
                ck_assert(isfinite(((float *)v->grad->data)[bh * T * D + i]));
            }
    }
    eo_test_ctx_free(ctx);
}
END_TEST

/* A NaN score makes its query row NaN, in both forms, as PyTorch's
 * softmax(q kᵀ + mask) v: a NaN in q (row 2 of head 0), a NaN mask entry
 * (row 4, every head), a NaN among -infs (row 5: the max cannot see it),
 * in the first and in a later key tile (T = 130: three tiles of 64). Every
 * other row stays finite, and the gradients of the NaN rows are NaN. */
START_TEST(nan_scores_give_nan_rows)
{
    eo_ctx *ctx = eo_test_ctx(1, 64);
    attn_fn fs[2] = { eo_attention, eo_attention_fused };
    const int64_t Ts[2] = { 7, 130 };
    for (int ti = 0; ti < 2; ti++)
        for (int fi = 0; fi < 2; fi++) {
            const int64_t B = 1, H = 2, T = Ts[ti], D = 5, late = T - 1;
            eo_tensor *q = rand4(ctx, B, H, T, D, -1, 1, 5, 1), *k = rand4(ctx, B, H, T, D, -1, 1, 6, 1);
            eo_tensor *v = rand4(ctx, B, H, T, D, -1, 1, 7, 1);
            eo_tensor *R = rand4(ctx, B, H, T, D, -1, 1, 8, 0), *mask;
            int64_t ms[2] = { T, T };
            ck_assert_int_eq(eo_tensor_zeros(ctx, EO_STEP, EO_CPU, EO_F32, 2, ms, &mask), EO_OK);
            float *mv = mask->data;
            ((float *)q->data)[2 * D + 1] = NAN;
            mv[4 * T + late] = NAN;
            for (int64_t j = 0; j < T; j++)
                mv[5 * T + j] = -INFINITY;
            mv[5 * T + late] = NAN;
            eo_tensor *out = run_loss(ctx, fs[fi], q, k, v, mask, 0, 0.5f, R);
            for (int64_t h = 0; h < H; h++)
                for (int64_t i = 0; i < T; i++) {
                    const int nan_row = i == 4 || i == 5 || (h == 0 && i == 2);
                    for (int64_t d = 0; d < D; d++) {
                        const float o = at4(out, 0, h, i, d), g = at4(q->grad, 0, h, i, d);
                        ck_assert_msg(nan_row ? isnan(o) && isnan(g) : isfinite(o),
                                      "%s T %lld: out[%lld, %lld, %lld] = %g, dq %g",
                                      fi ? "fused" : "composed", (long long)T, (long long)h,
                                      (long long)i, (long long)d, (double)o, (double)g);
                    }
                }
        }
    eo_test_ctx_free(ctx);
}
END_TEST

/* Scores near ±1e4 (q and k of ±100, D = 4, scale 0.25): exp of them
 * would overflow; both forms subtract the row max, so the output matches
 * the reference and every gradient stays finite. */
START_TEST(huge_scores_do_not_overflow)
{
    eo_ctx *ctx = eo_test_ctx(1, 16);
    attn_fn fs[2] = { eo_attention, eo_attention_fused };
    for (int fi = 0; fi < 2; fi++)
        for (int causal = 0; causal <= 1; causal++) {
            eo_tensor *q = rand4(ctx, 1, 2, 9, 4, -100, 100, 11, 1);
            eo_tensor *k = rand4(ctx, 1, 2, 9, 4, -100, 100, 12, 1);
            eo_tensor *v = rand4(ctx, 1, 2, 9, 4, -1, 1, 13, 1);
            eo_tensor *R = rand4(ctx, 1, 2, 9, 4, -1, 1, 14, 0);
            eo_tensor *out = run_loss(ctx, fs[fi], q, k, v, NULL, causal, 0.25f, R);
            double want[72];
            reference(q, k, v, NULL, causal, 0.25f, want);
            expect_close(fi ? "fused" : "composed", out->data, want, 72, 1e-4, 1e-4);
            eo_tensor *g[3] = { q->grad, k->grad, v->grad };
            for (int t = 0; t < 3; t++)
                for (int i = 0; i < 72; i++)
                    ck_assert(isfinite(((float *)g[t]->data)[i]));
        }
    eo_test_ctx_free(ctx);
}
END_TEST

/* A model splits heads with a transpose of [B, T, H, D]: q, k, v are then
 * strided views. Both forms must give the result (and the gradient of the
 * [B, T, H, D] tensor) that contiguous copies give. */
START_TEST(head_split_views_match_contiguous)
{
    eo_ctx *ctx = eo_test_ctx(1, 64);
    attn_fn fs[2] = { eo_attention, eo_attention_fused };
    const int64_t B = 2, T = 7, H = 3, D = 5;
    for (int fi = 0; fi < 2; fi++)
        for (int causal = 0; causal <= 1; causal++) {
            eo_tensor *x[3], *xv[3], *xc[3], *R = rand4(ctx, B, H, T, D, -1, 1, 9, 0);
            for (int i = 0; i < 3; i++) {
                x[i] = rand4(ctx, B, T, H, D, -1, 1, 80 + (unsigned)i, 1);
                x[i]->grad = NULL;
                ck_assert_int_eq(eo_transpose(ctx, x[i], 1, 2, &xv[i]), EO_OK);
                ck_assert(!eo_is_contiguous(xv[i]));
            }
            eo_tensor *ov = run_loss(ctx, fs[fi], xv[0], xv[1], xv[2], NULL, causal, 0.4f, R);
            eo_tensor *gv[3] = { x[0]->grad, x[1]->grad, x[2]->grad }; /* [B,T,H,D] */
            int was = eo_set_grad(ctx, 0);
            for (int i = 0; i < 3; i++) {
                ck_assert_int_eq(eo_contiguous(ctx, xv[i], &xc[i]), EO_OK);
                xc[i]->requires_grad = 1;
            }
            eo_set_grad(ctx, was);
            eo_tensor *oc = run_loss(ctx, fs[fi], xc[0], xc[1], xc[2], NULL, causal, 0.4f, R);
            expect_close_f("out", ov, oc, 1e-6, 1e-6);
            for (int i = 0; i < 3; i++) /* gv[i] is [B,T,H,D], xc[i]->grad [B,H,T,D] */
                for (int64_t b = 0; b < B; b++)
                    for (int64_t t = 0; t < T; t++)
                        for (int64_t h = 0; h < H; h++)
                            for (int64_t d = 0; d < D; d++) {
                                float a = ((float *)gv[i]->data)[((b * T + t) * H + h) * D + d];
                                float c = ((float *)xc[i]->grad->data)[((b * H + h) * T + t) * D + d];
                                ck_assert_float_eq_tol(a, c, 1e-6f);
                            }
        }
    eo_test_ctx_free(ctx);
}
END_TEST

/* The fused forward and backward with three threads give the very bits
 * of one thread (tasks never share an output element, and each is
 * computed in a fixed order). */
START_TEST(fused_is_the_same_with_threads)
{
    eo_ctx *ctx = eo_test_ctx(1, 64);
    eo_pool *pool = eo_pool_create(3);
    ck_assert_ptr_nonnull(pool);
    const int64_t B = 2, H = 3, T = 200, D = 24;
    eo_tensor *q = rand4(ctx, B, H, T, D, -1, 1, 1, 1), *k = rand4(ctx, B, H, T, D, -1, 1, 2, 1);
    eo_tensor *v = rand4(ctx, B, H, T, D, -1, 1, 3, 1), *R = rand4(ctx, B, H, T, D, -1, 1, 4, 1);
    eo_tensor *bias = eo_test_rand(ctx, 2, (int64_t[]){ T, T }, -1, 1, 5, 1);
    int64_t len[2] = { T - 3, T / 2 };
    eo_tensor *pm = pad_mask(ctx, B, T, len);
    R->requires_grad = 0;
    /* The learned bias [T, T] is shared by every head, so its backward
     * runs on one thread; the padding mask needs no gradient, so heads
     * run on all three. */
    for (int c = 0; c < 4; c++) {
        const int causal = c & 1;
        eo_tensor *mask = c & 2 ? pm : bias;
        eo_ctx_set_parallel(ctx, (eo_par){ 0 });
        eo_tensor *o1 = run_loss(ctx, eo_attention_fused, q, k, v, mask, causal, 0.2f, R);
        eo_tensor *g1[4] = { q->grad, k->grad, v->grad, mask->grad };
        eo_ctx_set_parallel(ctx, eo_pool_par(pool));
        eo_tensor *o3 = run_loss(ctx, eo_attention_fused, q, k, v, mask, causal, 0.2f, R);
        eo_tensor *g3[4] = { q->grad, k->grad, v->grad, mask->grad };
        size_t n = (size_t)eo_numel(o1) * sizeof(float);
        ck_assert(memcmp(o1->data, o3->data, n) == 0);
        for (int i = 0; i < (mask == bias ? 4 : 3); i++)
            ck_assert(memcmp(g1[i]->data, g3[i]->data, (size_t)eo_numel(g1[i]) * sizeof(float)) == 0);
    }
    eo_ctx_set_parallel(ctx, (eo_par){ 0 });
    eo_pool_destroy(pool);
    eo_test_ctx_free(ctx);
}
END_TEST

START_TEST(bad_shapes_are_reported)
{
    eo_ctx *ctx = eo_test_ctx(1, 4);
    attn_fn fs[2] = { eo_attention, eo_attention_fused };
    eo_tensor *q = rand4(ctx, 1, 2, 4, 3, -1, 1, 1, 0), *k = rand4(ctx, 1, 2, 5, 3, -1, 1, 2, 0);
    eo_tensor *kd = rand4(ctx, 1, 2, 5, 4, -1, 1, 3, 0), *out;
    eo_tensor *m = eo_test_rand(ctx, 2, (int64_t[]){ 4, 6 }, -1, 1, 4, 0);
    for (int fi = 0; fi < 2; fi++) {
        /* causal: the composed op needs Tq == Tk, the fused one Tq <= Tk */
        ck_assert_int_eq(fs[fi](ctx, fi ? k : q, fi ? q : k, fi ? q : k, NULL, 1, 1.0f, &out),
                         EO_ERR_SHAPE);
        ck_assert_ptr_nonnull(strstr(eo_last_error(ctx), "causal"));
        ck_assert_int_eq(fs[fi](ctx, q, kd, kd, NULL, 0, 1.0f, &out), EO_ERR_SHAPE); /* D differs */
        ck_assert_int_eq(fs[fi](ctx, q, k, k, m, 0, 1.0f, &out), EO_ERR_SHAPE); /* mask 4x6 vs 4x5 */
        ck_assert_int_eq(fs[fi](ctx, q, k, NULL, NULL, 0, 1.0f, &out), EO_ERR_ARG);
        ck_assert_int_eq(fs[fi](ctx, q, k, k, NULL, 0, INFINITY, &out), EO_ERR_ARG);
        ck_assert_int_eq(fs[fi](ctx, q, k, k, NULL, 0, 1.0f, &out), EO_OK); /* still usable */
    }
    eo_test_ctx_free(ctx);
}
END_TEST

/* The point of the fused op: step-arena bytes for forward + backward grow
 * with T·D instead of T². Measured from one mark, as the high-water mark
 * (eo_arena_high) above it. At T = 256 the composed graph keeps scores
 * and probabilities (2 x B·H·T² floats, plus their gradients). */
static size_t step_bytes(attn_fn f, int causal, int64_t T)
{
    eo_ctx *ctx = eo_test_ctx(1, 64);
    const int64_t B = 1, H = 4, D = 32;
    eo_tensor *q = rand4(ctx, B, H, T, D, -1, 1, 1, 1), *k = rand4(ctx, B, H, T, D, -1, 1, 2, 1);
    eo_tensor *v = rand4(ctx, B, H, T, D, -1, 1, 3, 1), *R = rand4(ctx, B, H, T, D, -1, 1, 4, 0);
    const size_t before = eo_arena_used(&ctx->step); /* == the high mark: nothing freed yet */
    run_loss(ctx, f, q, k, v, NULL, causal, 0.2f, R);
    const size_t bytes = eo_arena_high(&ctx->step) - before;
    eo_test_ctx_free(ctx);
    return bytes;
}

START_TEST(fused_step_memory_is_linear_in_length)
{
    for (int causal = 0; causal <= 1; causal++) {
        size_t c1 = step_bytes(eo_attention, causal, 128), c2 = step_bytes(eo_attention, causal, 256);
        size_t f1 = step_bytes(eo_attention_fused, causal, 128);
        size_t f2 = step_bytes(eo_attention_fused, causal, 256);
        /* Doubling T: the composed graph's T² matrices (scores,
         * probabilities and their gradients) nearly quadruple it, while
         * the fused op only doubles its T·D tensors. */
        ck_assert_uint_gt(c2, 3 * c1);
        ck_assert_uint_lt(f2, 2 * f1 + 4096);
        ck_assert_uint_lt(f2 * 6, c2);
    }
}
END_TEST

Suite *eo_suite_attention(void)
{
    Suite *s = suite_create("attention");
    TCase *tc = tcase_create("attention");
    tcase_add_test(tc, masks_hold_zero_and_minus_infinity);
    tcase_add_test(tc, composed_matches_double_reference);
    tcase_add_test(tc, fused_matches_double_reference);
    tcase_add_test(tc, fused_matches_composed_with_gradients);
    tcase_add_test(tc, gradcheck_both_forms);
    tcase_add_test(tc, fully_masked_rows_give_zeros_not_nan);
    tcase_add_test(tc, nan_scores_give_nan_rows);
    tcase_add_test(tc, huge_scores_do_not_overflow);
    tcase_add_test(tc, head_split_views_match_contiguous);
    tcase_add_test(tc, fused_is_the_same_with_threads);
    tcase_add_test(tc, bad_shapes_are_reported);
    tcase_add_test(tc, fused_step_memory_is_linear_in_length);
    tcase_set_timeout(tc, 30);
    suite_add_tcase(s, tc);
    return s;
}
