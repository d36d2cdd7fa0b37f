/* tests/test_half.c — bf16 and f16: the conversions, eo_cast, 2-byte
 * copies and views, and every op on 16-bit tensors.
 *
 *  - conversions: PyTorch's f32 -> bf16 / f16 results for hand-picked
 *    edges (ties both ways, largest finite and just above, subnormal
 *    boundaries, rounding into the next binade, ±0, ±inf, NaN payloads:
 *    tests/fixtures/half.h, tools/reference/ref_half.py); every one of
 *    the 65536 16-bit patterns widened exactly (against ldexp) and
 *    narrowed back to itself; the SIMD row converters (F16C, AVX2 lanes)
 *    bit-identical to the scalar definition on all 16-bit patterns and on
 *    f32 values around every rounding boundary;
 *  - 2-byte layouts: a transposed bf16 view made contiguous (the bug of
 *    the 4-byte copy: wrong values and 4 bytes written past the end),
 *    copy_into, slice, concat, fill, reshape of a non-contiguous view;
 *  - ops: each op on bf16 and f16 inputs gives exactly the f32 op's result
 *    rounded once, and gradients of the inputs' dtype equal to the f32
 *    gradients rounded once (the fallback of core/op_cast.c); where the
 *    CPU has a native 16-bit kernel it is held to the same results (the
 *    same test with the native slots removed from a copy of the backend
 *    gives the fallback). */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/internal.h"
#include "ops/cpu/half.h"
#include "tests/fixtures/half.h"
#include "tests/gradcheck.h"
#include "core/nn.h"
#include "tests/optest.h"
#include "tools/cli/cpu_kernels.h"

static int is_nan16(int dt, uint16_t h)
{
    return dt == EO_BF16 ? (h & 0x7f80) == 0x7f80 && (h & 0x7f) : (h & 0x7c00) == 0x7c00 && (h & 0x3ff);
}

/* ---- conversions -------------------------------------------------------------- */

START_TEST(conversions_match_torch)
{
    for (int i = 0; i < FX_HALF_N; i++) {
        float f = eo_bits_f32(fx_half[i][0]);
        for (int k = 0; k < 2; k++) {
            int dt = k ? EO_F16 : EO_BF16;
            uint16_t want = (uint16_t)fx_half[i][1 + k], got = eo_half_put(dt, f);
            if (is_nan16(dt, want)) {
                ck_assert_msg(is_nan16(dt, got), "%s(0x%08x): 0x%04x, want a NaN",
                              eo_dtype_name(dt), fx_half[i][0], got);
                /* NaN keeps its sign and is quiet */
                ck_assert_int_eq(got >> 15, fx_half[i][0] >> 31);
                ck_assert(got & (dt == EO_BF16 ? 0x40 : 0x200));
            } else {
                ck_assert_msg(got == want, "%s(0x%08x = %a): 0x%04x, torch 0x%04x",
                              eo_dtype_name(dt), fx_half[i][0], (double)f, got, want);
            }
        }
    }
}
END_TEST

/* The value of a 16-bit pattern, from its fields with ldexp: an
 * independent reading of the formats. */
static double ref_value(int dt, uint16_t h)
{
    int s = h >> 15, eb = dt == EO_BF16 ? 8 : 5, mb = 15 - eb, bias = (1 << (eb - 1)) - 1;
    int e = (h >> mb) & ((1 << eb) - 1), m = h & ((1 << mb) - 1);
    double v;
    if (e == (1 << eb) - 1)
        v = m ? NAN : INFINITY;
    else if (e == 0)
        v = ldexp(m, 1 - bias - mb);
    else
        v = ldexp(m + (1 << mb), e - bias - mb);
    return s ? -v : v;
}

START_TEST(every_16bit_pattern_widens_exactly_and_round_trips)
{
    for (int k = 0; k < 2; k++) {
        int dt = k ? EO_F16 : EO_BF16;
        for (uint32_t i = 0; i < 65536; i++) {
            uint16_t h = (uint16_t)i;
            float f = eo_half_get(dt, h);
            double r = ref_value(dt, h);
            if (r != r) {
                uint16_t back = eo_half_put(dt, f);
                if (f == f || !is_nan16(dt, back) || (back >> 15) != (h >> 15))
                    ck_abort_msg("%s 0x%04x widened to %a, back to 0x%04x: want NaN",
                                 eo_dtype_name(dt), i, (double)f, back);
                continue;
            }
            if ((double)f != r || !signbit(f) != !signbit(r) || eo_half_put(dt, f) != h)
                ck_abort_msg("%s 0x%04x widened to %a (want %a), back to 0x%04x",
                             eo_dtype_name(dt), i, (double)f, r, eo_half_put(dt, f));
        }
    }
}
END_TEST

START_TEST(simd_rows_equal_the_scalar_definition)
{
    /* all 16-bit patterns, widened in one row of odd length (tails too) */
    enum { N = 65536 };
    uint16_t *h = malloc(N * 2), *a = malloc(N * 5 * 2), *b = malloc(N * 5 * 2);
    float *fa = malloc(N * 5 * 4), *fb = malloc(N * 5 * 4);
    ck_assert(h && a && b && fa && fb);
    for (int i = 0; i < N; i++)
        h[i] = (uint16_t)i;
    for (int k = 0; k < 2; k++) {
        int dt = k ? EO_F16 : EO_BF16;
        for (int off = 0; off < 3; off++) {
            eo_half_to_f32(dt, N - off, h + off, fa);
            eo_half_to_f32_scalar(dt, N - off, h + off, fb);
            ck_assert_msg(memcmp(fa, fb, (size_t)(N - off) * 4) == 0, "%s widening differs",
                          eo_dtype_name(dt));
        }
        /* f32 values at and around every rounding boundary of both formats:
         * each bf16 pattern's f32 (exact), just below / at / above the half
         * ulp, and the f16 boundaries (13 dropped bits), plus random bits */
        int64_t n = 0;
        uint32_t seed = 12345;
        for (uint32_t i = 0; i < N; i++) {
            uint32_t u = i << 16;
            const uint32_t adds[4] = { 0, 0x7fff, 0x8000, 0x8001 };
            for (int j = 0; j < 4; j++)
                fa[n++] = eo_bits_f32(u + adds[j]);
            seed = seed * 1664525u + 1013904223u;
            uint32_t v = (seed & 0xffffe000u) | (seed & 1 ? 0x1000u : 0x0fffu);
            fa[n++] = eo_bits_f32(v);
        }
        for (int64_t len = n; len > n - 40; len -= 13) {
            eo_f32_to_half(dt, len, fa, a);
            eo_f32_to_half_scalar(dt, len, fa, b);
            int64_t bad = -1; /* one assertion per row: check's are slow */
            for (int64_t i = 0; i < len && bad < 0; i++)
                if (a[i] != b[i])
                    bad = i;
            ck_assert_msg(bad < 0, "%s(0x%08x): simd 0x%04x, scalar 0x%04x", eo_dtype_name(dt),
                          bad < 0 ? 0 : eo_f32_bits(fa[bad]), bad < 0 ? 0 : a[bad],
                          bad < 0 ? 0 : b[bad]);
        }
    }
    free(h);
    free(a);
    free(b);
    free(fa);
    free(fb);
}
END_TEST

/* ---- 16-bit tensors ------------------------------------------------------------ */

/* A contiguous 16-bit tensor of f32 values rounded to dt (no grad). */
static eo_tensor *half_rand(int dt, int rank, const int64_t *shape, float lo, float hi,
                            unsigned seed)
{
    eo_tensor *x = ot_rand(rank, shape, lo, hi, seed), *y;
    OT_OK(eo_cast(ot_ctx, x, (eo_dtype)dt, &y), "cast");
    return y;
}

/* The 16-bit elements of t (contiguous copy first). */
static uint16_t *bits16(eo_tensor *t)
{
    eo_tensor *c;
    OT_OK(eo_contiguous(ot_ctx, t, &c), "contiguous");
    int64_t n = eo_numel(c);
    uint16_t *h = (uint16_t *)ot_doubles(n / 4 + 1);
    OT_OK(eo_read(ot_ctx, c, h, (size_t)n * 2), "read");
    return h;
}

START_TEST(cast_basics)
{
    int64_t s[2] = { 3, 5 };
    eo_tensor *x = ot_rand(2, s, -2, 2, 1), *y, *z;
    OT_OK(eo_cast(ot_ctx, x, EO_F32, &y), "cast to itself");
    ck_assert_ptr_eq(x, y);
    OT_OK(eo_cast(ot_ctx, x, EO_BF16, &y), "cast");
    ck_assert_int_eq(y->dtype, EO_BF16);
    OT_OK(eo_cast(ot_ctx, y, EO_F16, &z), "bf16 -> f16");
    ck_assert_int_eq(z->dtype, EO_F16);
    const uint16_t *hb = y->data, *hf = z->data;
    const float *v = x->data;
    for (int i = 0; i < 15; i++) {
        ck_assert_uint_eq(hb[i], eo_f32_to_bf16(v[i]));
        ck_assert_uint_eq(hf[i], eo_f32_to_f16(eo_bf16_to_f32(hb[i])));
    }
    eo_tensor *ids = ot_i32(1, s, (const int32_t[]){ 1, 2, 3 });
    ck_assert_int_eq(eo_cast(ot_ctx, ids, EO_F32, &y), EO_ERR_DTYPE);
    ck_assert_ptr_nonnull(strstr(eo_last_error(ot_ctx), "cast:"));
    ck_assert_int_eq(eo_cast(ot_ctx, x, EO_I32, &y), EO_ERR_DTYPE);
    ck_assert_int_eq(eo_cast(ot_ctx, x, EO_BF16, NULL), EO_ERR_ARG);
    /* fill rounds once to the dtype */
    OT_OK(eo_fill(ot_ctx, y, 1.0f / 3.0f), "fill bf16");
    for (int i = 0; i < 15; i++)
        ck_assert_uint_eq(((uint16_t *)y->data)[i], eo_f32_to_bf16(1.0f / 3.0f));
}
END_TEST

/* The bug this guards: a non-contiguous 2-byte view copied with the
 * 4-byte kernel read pairs of elements as one and wrote 4 bytes past the
 * end. Values and the bytes after the destination are both checked. */
START_TEST(transposed_16bit_view_copies)
{
    for (int k = 0; k < 2; k++) {
        int dt = k ? EO_F16 : EO_BF16;
        int64_t s[2] = { 3, 5 }, st[2] = { 5, 3 };
        eo_tensor *x = half_rand(dt, 2, s, -4, 4, 7 + (unsigned)k), *t, *c;
        const uint16_t *xh = x->data;
        OT_OK(eo_transpose(ot_ctx, x, 0, 1, &t), "transpose");
        OT_OK(eo_contiguous(ot_ctx, t, &c), "contiguous");
        ck_assert_int_eq(c->dtype, dt);
        const uint16_t *ch = c->data;
        for (int i = 0; i < 5; i++)
            for (int j = 0; j < 3; j++)
                ck_assert_uint_eq(ch[i * 3 + j], xh[j * 5 + i]);
        /* into caller memory with guards after it */
        uint16_t buf[15 + 8];
        for (int i = 0; i < 23; i++)
            buf[i] = 0xABCD;
        eo_tensor *d;
        OT_OK(eo_tensor_wrap(ot_ctx, (eo_dtype)dt, 2, st, buf, &d), "wrap");
        OT_OK(eo_copy_into(ot_ctx, d, t), "copy_into");
        for (int i = 0; i < 15; i++)
            ck_assert_uint_eq(buf[i], ch[i]);
        for (int i = 15; i < 23; i++)
            ck_assert_msg(buf[i] == 0xABCD, "a byte after the destination was written");
        /* reshape of the view copies, slice and concat of 2-byte rows */
        eo_tensor *r, *sl, *cat, *parts[2];
        int64_t flat = 15;
        OT_OK(eo_reshape(ot_ctx, t, 1, &flat, &r), "reshape");
        ck_assert_int_eq(memcmp(r->data, ch, 30), 0);
        OT_OK(eo_slice(ot_ctx, t, 0, 1, 3, &sl), "slice");
        parts[0] = sl;
        parts[1] = t;
        OT_OK(eo_concat(ot_ctx, parts, 2, 0, &cat), "concat");
        const uint16_t *h2 = bits16(cat);
        for (int i = 0; i < 3; i++)
            for (int j = 0; j < 3; j++)
                ck_assert_uint_eq(h2[i * 3 + j], xh[j * 5 + i + 1]);
        ck_assert_int_eq(memcmp(h2 + 9, ch, 30), 0);
        /* a cross-dtype copy is refused */
        eo_tensor *f;
        OT_OK(eo_cast(ot_ctx, c, EO_F32, &f), "cast");
        ck_assert_int_eq(eo_copy_into(ot_ctx, d, f), EO_ERR_SHAPE);
    }
}
END_TEST

/* ---- every op on 16-bit inputs ------------------------------------------------------ */

typedef eo_status (*op16_fn)(eo_ctx *ctx, eo_tensor *const *in, eo_tensor **out);

static const int32_t ce_t[5] = { 3, 0, -100, 6, 1 };
static const int32_t emb_ix[7] = { 4, 0, 4, 2, 1, 4, 0 };

static eo_status f_add(eo_ctx *c, eo_tensor *const *in, eo_tensor **o) { return eo_add(c, in[0], in[1], o); }
static eo_status f_mul(eo_ctx *c, eo_tensor *const *in, eo_tensor **o) { return eo_mul(c, in[0], in[1], o); }
static eo_status f_div(eo_ctx *c, eo_tensor *const *in, eo_tensor **o) { return eo_div(c, in[0], in[1], o); }
static eo_status f_max2(eo_ctx *c, eo_tensor *const *in, eo_tensor **o) { return eo_maximum(c, in[0], in[1], o); }
static eo_status f_relu(eo_ctx *c, eo_tensor *const *in, eo_tensor **o) { return eo_relu(c, in[0], o); }
static eo_status f_gelu(eo_ctx *c, eo_tensor *const *in, eo_tensor **o) { return eo_gelu(c, in[0], o); }
static eo_status f_tanh(eo_ctx *c, eo_tensor *const *in, eo_tensor **o) { return eo_tanh(c, in[0], o); }
static eo_status f_exp(eo_ctx *c, eo_tensor *const *in, eo_tensor **o) { return eo_exp(c, in[0], o); }
static eo_status f_scale(eo_ctx *c, eo_tensor *const *in, eo_tensor **o) { return eo_scale(c, in[0], -0.37f, o); }
static eo_status f_matmul(eo_ctx *c, eo_tensor *const *in, eo_tensor **o) { return eo_matmul(c, in[0], in[1], 0, 1, o); }
static eo_status f_matmul_ta(eo_ctx *c, eo_tensor *const *in, eo_tensor **o) { return eo_matmul(c, in[0], in[1], 1, 0, o); }
static eo_status f_sum(eo_ctx *c, eo_tensor *const *in, eo_tensor **o) { return eo_sum(c, in[0], 1, 0, o); }
static eo_status f_mean(eo_ctx *c, eo_tensor *const *in, eo_tensor **o) { return eo_mean(c, in[0], 0, 1, o); }
static eo_status f_max(eo_ctx *c, eo_tensor *const *in, eo_tensor **o) { return eo_max(c, in[0], 1, 0, o); }
static eo_status f_lse(eo_ctx *c, eo_tensor *const *in, eo_tensor **o) { return eo_logsumexp(c, in[0], 1, 1, o); }
static eo_status f_sum_all(eo_ctx *c, eo_tensor *const *in, eo_tensor **o) { return eo_sum_all(c, in[0], o); }
static eo_status f_softmax(eo_ctx *c, eo_tensor *const *in, eo_tensor **o) { return eo_softmax(c, in[0], o); }
static eo_status f_log_softmax(eo_ctx *c, eo_tensor *const *in, eo_tensor **o) { return eo_log_softmax(c, in[0], o); }
static eo_status f_layernorm(eo_ctx *c, eo_tensor *const *in, eo_tensor **o) { return eo_layernorm(c, in[0], in[1], in[2], 1e-5f, o); }
static eo_status f_dropout(eo_ctx *c, eo_tensor *const *in, eo_tensor **o) { return eo_dropout(c, in[0], 0.3f, 5, o); }
static eo_status f_conv(eo_ctx *c, eo_tensor *const *in, eo_tensor **o) { return eo_conv2d(c, in[0], in[1], in[2], 1, 1, o); }
static eo_status f_pool(eo_ctx *c, eo_tensor *const *in, eo_tensor **o) { return eo_maxpool2d(c, in[0], 2, o); }
static eo_status f_attn(eo_ctx *c, eo_tensor *const *in, eo_tensor **o) { return eo_attention_fused(c, in[0], in[1], in[2], NULL, 1, 0.4f, o); }
static eo_status f_attn_composed(eo_ctx *c, eo_tensor *const *in, eo_tensor **o) { return eo_attention(c, in[0], in[1], in[2], NULL, 1, 0.4f, o); }
static eo_status f_view(eo_ctx *c, eo_tensor *const *in, eo_tensor **o)
{
    eo_tensor *t, *u, *parts[2];
    if (eo_transpose(c, in[0], 0, 1, &t) || eo_slice(c, t, 0, 1, 4, &u))
        return EO_ERR_STATE;
    parts[0] = u;
    parts[1] = t;
    eo_status s = eo_concat(c, parts, 2, 0, &u);
    return s ? s : eo_mul(c, u, u, o);
}
static eo_status f_ce(eo_ctx *c, eo_tensor *const *in, eo_tensor **o)
{
    eo_tensor *t;
    int64_t n = 5;
    eo_status s = eo_tensor_wrap(c, EO_I32, 1, &n, (void *)ce_t, &t);
    return s ? s : eo_cross_entropy_ex(c, in[0], t, -100, EO_REDUCTION_NONE, o);
}
static eo_status f_ce_mean(eo_ctx *c, eo_tensor *const *in, eo_tensor **o)
{
    eo_tensor *t;
    int64_t n = 5;
    eo_status s = eo_tensor_wrap(c, EO_I32, 1, &n, (void *)ce_t, &t);
    return s ? s : eo_cross_entropy(c, in[0], t, -100, o);
}
static eo_status f_emb(eo_ctx *c, eo_tensor *const *in, eo_tensor **o)
{
    eo_tensor *t;
    int64_t n = 7;
    eo_status s = eo_tensor_wrap(c, EO_I32, 1, &n, (void *)emb_ix, &t);
    return s ? s : eo_embedding(c, in[0], t, o);
}

static eo_status f_softmax_t(eo_ctx *c, eo_tensor *const *in, eo_tensor **o)
{ /* a transposed view: made contiguous in 16 bits first */
    eo_tensor *t;
    eo_status s = eo_transpose(c, in[0], 0, 1, &t);
    return s ? s : eo_softmax(c, t, o);
}
static eo_status f_sub_t(eo_ctx *c, eo_tensor *const *in, eo_tensor **o)
{ /* [3,1,7] - [7,4]ᵀ: both operands broadcast, the second strided */
    eo_tensor *t;
    eo_status s = eo_transpose(c, in[1], 0, 1, &t);
    return s ? s : eo_sub(c, in[0], t, o);
}
static eo_status f_min2(eo_ctx *c, eo_tensor *const *in, eo_tensor **o) { return eo_minimum(c, in[0], in[1], o); }
static eo_status f_layernorm_t(eo_ctx *c, eo_tensor *const *in, eo_tensor **o)
{
    eo_tensor *t;
    eo_status s = eo_transpose(c, in[0], 0, 1, &t);
    return s ? s : eo_layernorm(c, t, NULL, NULL, 1e-5f, o);
}
static eo_status f_emb_many(eo_ctx *c, eo_tensor *const *in, eo_tensor **o)
{ /* row 1 forty times: its gradient is summed in f32 and rounded once */
    static int32_t ix[48];
    for (int i = 0; i < 48; i++)
        ix[i] = i < 40 ? 1 : i % 3;
    eo_tensor *t;
    int64_t n = 48;
    eo_status s = eo_tensor_wrap(c, EO_I32, 1, &n, ix, &t);
    return s ? s : eo_embedding(c, in[0], t, o);
}

typedef struct op16_case {
    const char *name;
    op16_fn f;
    int n_in;
    int rank[3];
    int64_t shape[3][4];
    float lo, hi;
    int ulps; /* an input used twice gets two contributions, each rounded
               * when added into its 16-bit gradient (as in PyTorch) */
    int saved16; /* 1: the native backward reads the 16-bit output it saved
                  * (softmax, log_softmax: as PyTorch's half kernels), where
                  * the fallback kept the f32 one: its input gradient is
                  * held to a tolerance relative to the largest one; 2: the
                  * native route is a composition rounding at every step
                  * (attention in 16 bits): the output too */
} op16_case;

static const op16_case op16_cases[] = {
    { "add (broadcast)", f_add, 2, {3, 1}, {{2, 5, 9}, {9}}, -2, 2, 0, 0 },
    { "mul (broadcast)", f_mul, 2, {2, 2}, {{5, 9}, {5, 1}}, -2, 2, 0, 0 },
    { "div", f_div, 2, {2, 2}, {{5, 9}, {5, 9}}, 0.5f, 2, 0, 0 },
    { "maximum", f_max2, 2, {2, 2}, {{5, 9}, {1, 9}}, -2, 2, 0, 0 },
    { "sub (broadcast both, strided)", f_sub_t, 2, {3, 2}, {{3, 1, 7}, {7, 4}}, -2, 2, 0, 0 },
    { "minimum", f_min2, 2, {1, 1}, {{1}, {1}}, -2, 2, 0, 0 },
    { "relu", f_relu, 1, {2}, {{5, 9}}, -2, 2, 0, 0 },
    { "gelu", f_gelu, 1, {3}, {{2, 3, 17}}, -3, 3, 0, 0 },
    { "tanh", f_tanh, 1, {2}, {{5, 9}}, -3, 3, 0, 0 },
    { "exp", f_exp, 1, {2}, {{5, 9}}, -3, 3, 0, 0 },
    { "scale", f_scale, 1, {1}, {{33}}, -3, 3, 0, 0 },
    { "matmul a·bᵀ", f_matmul, 2, {3, 2}, {{2, 5, 19}, {7, 19}}, -1, 1, 0, 0 },
    { "matmul aᵀ·b", f_matmul_ta, 2, {2, 2}, {{19, 5}, {19, 7}}, -1, 1, 0, 0 },
    { "sum", f_sum, 1, {3}, {{3, 33, 2}}, -1, 1, 0, 0 },
    { "mean", f_mean, 1, {2}, {{33, 3}}, -1, 1, 0, 0 },
    { "max", f_max, 1, {2}, {{5, 9}}, -1, 1, 0, 0 },
    { "logsumexp", f_lse, 1, {2}, {{5, 9}}, -3, 3, 0, 0 },
    { "sum_all", f_sum_all, 1, {2}, {{5, 9}}, -1, 1, 0, 0 },
    { "softmax", f_softmax, 1, {2}, {{5, 33}}, -4, 4, 0, 1 },
    { "softmax (strided)", f_softmax_t, 1, {2}, {{7, 5}}, -4, 4, 0, 1 },
    { "log_softmax", f_log_softmax, 1, {3}, {{2, 3, 17}}, -4, 4, 0, 1 },
    { "cross_entropy none", f_ce, 1, {2}, {{5, 7}}, -3, 3, 0, 0 },
    { "cross_entropy mean", f_ce_mean, 1, {2}, {{5, 7}}, -3, 3, 0, 0 },
    { "layernorm", f_layernorm, 3, {2, 1, 1}, {{5, 33}, {33}, {33}}, -2, 2, 0, 0 },
    { "layernorm (no affine, strided)", f_layernorm_t, 1, {2}, {{9, 3}}, -2, 2, 0, 0 },
    { "embedding", f_emb, 1, {2}, {{5, 9}}, -2, 2, 0, 0 },
    { "embedding (a row 40 times)", f_emb_many, 1, {2}, {{3, 5}}, -2, 2, 0, 0 },
    { "dropout", f_dropout, 1, {2}, {{5, 33}}, -2, 2, 0, 0 },
    { "conv2d", f_conv, 3, {4, 4, 1}, {{2, 2, 5, 4}, {3, 2, 3, 3}, {3}}, -1, 1, 0, 0 },
    { "maxpool2d", f_pool, 1, {4}, {{2, 2, 5, 6}}, -1, 1, 0, 0 },
    /* 25600-pixel planes: its 16-bit backward goes two planes at a time */
    { "maxpool2d (slabs)", f_pool, 1, {4}, {{1, 3, 160, 160}}, -1, 1, 0, 0 },
    { "attention_fused", f_attn, 3, {4, 4, 4}, {{1, 2, 5, 3}, {1, 2, 5, 3}, {1, 2, 5, 3}}, -1, 1, 0, 0 },
    { "attention", f_attn_composed, 3, {4, 4, 4}, {{1, 2, 5, 3}, {1, 2, 5, 3}, {1, 2, 5, 3}}, -1, 1, 0, 2 },
    { "views, concat", f_view, 1, {2}, {{5, 9}}, -2, 2, 1, 0 },
};
#define N_OP16 ((int)(sizeof op16_cases / sizeof op16_cases[0]))

/* A step tensor requiring grad that holds t's values (a fresh leaf). */
static eo_tensor *leaf(eo_tensor *t)
{
    eo_tensor *y;
    OT_OK(eo_tensor_new(ot_ctx, EO_STEP, EO_CPU, t->dtype, t->rank, t->shape, &y), "new");
    memcpy(y->data, t->data, (size_t)eo_numel(t) * eo_dtype_size(t->dtype));
    y->requires_grad = 1;
    return y;
}

/* L = sum(f32(y) * r): every output element weighted differently. */
static eo_tensor *weighted(eo_tensor *y, eo_tensor *r)
{
    eo_tensor *y32, *p, *L;
    OT_OK(eo_cast(ot_ctx, y, EO_F32, &y32), "cast");
    OT_OK(eo_mul(ot_ctx, y32, r, &p), "mul");
    OT_OK(eo_sum_all(ot_ctx, p, &L), "sum_all");
    return L;
}

/* Compare two 16-bit tensors: equal bits, or within `ulps` units in the
 * last place (NaN matches NaN). */
static void expect_bits(const char *what, int dt, eo_tensor *got, eo_tensor *want, int ulps)
{
    ck_assert_msg((int)got->dtype == dt && (int)want->dtype == dt, "%s: dtype %s, want %s", what,
                  eo_dtype_name(got->dtype), eo_dtype_name(dt));
    int64_t n = eo_numel(want);
    ck_assert_int_eq(eo_numel(got), n);
    const uint16_t *a = bits16(got), *b = bits16(want);
    for (int64_t i = 0; i < n; i++) {
        if (is_nan16(dt, a[i]) && is_nan16(dt, b[i]))
            continue;
        /* ordered integers: the distance in ulps across zero too */
        int ia = a[i] & 0x8000 ? -(a[i] & 0x7fff) : a[i], ib = b[i] & 0x8000 ? -(b[i] & 0x7fff) : b[i];
        ck_assert_msg(abs(ia - ib) <= ulps, "%s[%lld]: 0x%04x (%g), want 0x%04x (%g)", what,
                      (long long)i, a[i], (double)eo_half_get(dt, a[i]), b[i],
                      (double)eo_half_get(dt, b[i]));
    }
}

/* A 16-bit gradient against the f32 one: within 4 units of the 16-bit
 * rounding of its output (2^-8 of the largest value for bf16, 2^-11 for
 * f16), the error of a backward that reads the rounded output. */
static void expect_near(const char *what, int dt, eo_tensor *got, eo_tensor *want)
{
    int64_t n = eo_numel(want);
    const uint16_t *a = bits16(got);
    const float *b = want->data;
    float big = 0;
    for (int64_t i = 0; i < n; i++)
        big = fmaxf(big, fabsf(b[i]));
    const float tol = 4.0f * big * (dt == EO_BF16 ? 1.0f / 256 : 1.0f / 2048);
    for (int64_t i = 0; i < n; i++)
        ck_assert_msg(fabsf(eo_half_get(dt, a[i]) - b[i]) <= tol, "%s[%lld]: %g, want %g (±%g)",
                      what, (long long)i, (double)eo_half_get(dt, a[i]), (double)b[i],
                      (double)tol);
}

/* Run case c on dt inputs: outputs and gradients are those of the f32 op
 * on the same (widened) values, each rounded once to dt. */
static void check_op16(const op16_case *c, int dt, int ulps, int native)
{
    eo_tensor *x16[3], *x32[3], *y16, *y32, *r;
    char what[96];
    for (int i = 0; i < c->n_in; i++) {
        eo_tensor *h = half_rand(dt, c->rank[i], c->shape[i], c->lo, c->hi, 31u + (unsigned)i), *w;
        OT_OK(eo_cast(ot_ctx, h, EO_F32, &w), "widen");
        x16[i] = leaf(h);
        x32[i] = leaf(w);
    }
    /* the f32 reference, rounded to dt at the output */
    snprintf(what, sizeof what, "%s %s: f32 op", c->name, eo_dtype_name(dt));
    OT_OK(c->f(ot_ctx, x32, &y32), what);
    eo_tensor *y32f = y32;
    OT_OK(eo_cast(ot_ctx, y32, (eo_dtype)dt, &y32), what);
    snprintf(what, sizeof what, "%s %s", c->name, eo_dtype_name(dt));
    OT_OK(c->f(ot_ctx, x16, &y16), what);
    ck_assert_msg((int)y16->dtype == dt, "%s: output is %s", what, eo_dtype_name(y16->dtype));
    ck_assert_int_eq(y16->rank, y32->rank);
    if (c->saved16 == 2 && native)
        expect_near(what, dt, y16, y32f);
    else
        expect_bits(what, dt, y16, y32, ulps);
    r = ot_rand(y16->rank, y16->shape, 0.5f, 1.5f, 77);
    OT_OK(eo_backward(ot_ctx, weighted(y32, r)), "backward f32");
    OT_OK(eo_backward(ot_ctx, weighted(y16, r)), what);
    for (int i = 0; i < c->n_in; i++) {
        eo_tensor *g;
        ck_assert_msg((x16[i]->grad == NULL) == (x32[i]->grad == NULL), "%s: gradient %d", what, i);
        if (!x32[i]->grad)
            continue;
        OT_OK(eo_cast(ot_ctx, x32[i]->grad, (eo_dtype)dt, &g), "round");
        snprintf(what, sizeof what, "%s %s: d input %d", c->name, eo_dtype_name(dt), i);
        if (c->saved16 && native)
            expect_near(what, dt, x16[i]->grad, x32[i]->grad);
        else
            expect_bits(what, dt, x16[i]->grad, g, ulps);
    }
}

/* The CPU backend without any native 16-bit kernel: only the fallback. */
static eo_backend fallback_only;

static void use_fallback_only(void)
{
    fallback_only = eo_backend_cpu;
    eo_backend *b = &fallback_only;
    b->fill16 = NULL;
    b->matmul16 = NULL;
    b->matmul16_ws = NULL;
    b->binary16 = NULL;
    b->binary_backward16 = NULL;
    b->unary16 = NULL;
    b->unary_backward16 = NULL;
    b->softmax16 = NULL;
    b->softmax_backward16 = NULL;
    b->softmax_ws16 = NULL;
    b->layernorm16 = NULL;
    b->layernorm_backward16 = NULL;
    b->layernorm_ws16 = NULL;
    b->cross_entropy16 = NULL;
    b->cross_entropy_backward16 = NULL;
    b->cross_entropy_ws16 = NULL;
    b->embedding16 = NULL;
    b->embedding_backward16 = NULL;
    b->sgd16 = NULL;
    b->adamw16 = NULL;
    b->conv2d_backward16 = NULL;
    b->conv2d_ws16 = NULL;
    ot_ctx->backend[EO_CPU] = &fallback_only;
}

/* Loop index: op case * 2 + dtype. Native kernels (default backend)
 * within one 16-bit ulp of the rounded f32 result (their f32 operations
 * may be ordered differently: matmul's blocking); the fallback exact. */
START_TEST(each_op_on_16bit_inputs)
{
    check_op16(&op16_cases[_i / 2], _i % 2 ? EO_F16 : EO_BF16, 1 + op16_cases[_i / 2].ulps, 1);
}
END_TEST

START_TEST(each_op_on_16bit_inputs_fallback_only)
{
    use_fallback_only();
    check_op16(&op16_cases[_i / 2], _i % 2 ? EO_F16 : EO_BF16, op16_cases[_i / 2].ulps, 0);
}
END_TEST

START_TEST(mixed_dtypes_promote_or_refuse)
{
    int64_t s[2] = { 3, 5 };
    eo_tensor *a = ot_rand(2, s, -1, 1, 3), *b, *c, *y;
    OT_OK(eo_cast(ot_ctx, a, EO_BF16, &b), "cast");
    OT_OK(eo_cast(ot_ctx, a, EO_F16, &c), "cast");
    /* elementwise: PyTorch's promotion */
    OT_OK(eo_add(ot_ctx, b, c, &y), "bf16 + f16");
    ck_assert_int_eq(y->dtype, EO_F32);
    OT_OK(eo_mul(ot_ctx, a, b, &y), "f32 * bf16");
    ck_assert_int_eq(y->dtype, EO_F32);
    OT_OK(eo_sub(ot_ctx, c, c, &y), "f16 - f16");
    ck_assert_int_eq(y->dtype, EO_F16);
    /* other ops: one dtype */
    ck_assert_int_eq(eo_matmul(ot_ctx, b, c, 0, 1, &y), EO_ERR_DTYPE);
    ck_assert_ptr_nonnull(strstr(eo_last_error(ot_ctx), "matmul: inputs"));
    ck_assert_int_eq(eo_matmul(ot_ctx, a, b, 0, 1, &y), EO_ERR_DTYPE);
    eo_tensor *w = ot_rand(1, s + 1, -1, 1, 4);
    ck_assert_int_eq(eo_layernorm(ot_ctx, b, w, NULL, 1e-5f, &y), EO_ERR_DTYPE);
    ck_assert_ptr_nonnull(strstr(eo_last_error(ot_ctx), "layernorm:"));
    /* an i32 where a float is wanted is still a dtype error */
    eo_tensor *ids = ot_i32(1, s, (const int32_t[]){ 1, 2, 3 });
    ck_assert_int_eq(eo_relu(ot_ctx, ids, &y), EO_ERR_DTYPE);
}
END_TEST

/* Where the CPU has native 16-bit kernels the op records itself, not the
 * fallback's casts (whose last node is a CAST). */
START_TEST(native_16bit_kernels_are_used)
{
    int64_t s[2] = { 4, 6 };
    eo_tensor *x = leaf(half_rand(EO_BF16, 2, s, -1, 1, 5)), *y;
    OT_OK(eo_relu(ot_ctx, x, &y), "relu");
    ck_assert_int_eq(y->node->op, EO_OP_RELU);
    OT_OK(eo_matmul(ot_ctx, x, x, 0, 1, &y), "matmul");
    ck_assert_int_eq(y->node->op, EO_OP_MATMUL);
    ck_assert_int_eq(y->dtype, EO_BF16);
    OT_OK(eo_add(ot_ctx, x, x, &y), "add");
    ck_assert_int_eq(y->node->op, EO_OP_ADD);
    OT_OK(eo_softmax(ot_ctx, x, &y), "softmax");
    ck_assert_int_eq(y->node->op, EO_OP_SOFTMAX);
    ck_assert_int_eq(y->dtype, EO_BF16);
    OT_OK(eo_layernorm(ot_ctx, x, NULL, NULL, 1e-5f, &y), "layernorm");
    ck_assert_int_eq(y->node->op, EO_OP_LAYERNORM);
    eo_tensor *t = ot_i32(1, s, (const int32_t[]){ 1, 0, 5, 2 });
    OT_OK(eo_cross_entropy(ot_ctx, x, t, -100, &y), "cross_entropy");
    ck_assert_int_eq(y->node->op, EO_OP_CROSS_ENTROPY);
    ck_assert_int_eq(y->dtype, EO_BF16); /* the slot's contract, as torch */
    OT_OK(eo_embedding(ot_ctx, x, ot_i32(1, s, (const int32_t[]){ 1, 0, 3, 3 }), &y),
          "embedding");
    ck_assert_int_eq(y->node->op, EO_OP_EMBEDDING);
    OT_OK(eo_exp(ot_ctx, x, &y), "exp");
    OT_OK(eo_log(ot_ctx, y, &y), "log"); /* domain check on f32: the fallback */
    ck_assert_int_eq(y->node->op, EO_OP_CAST);
}
END_TEST

/* A loss in bf16 starts the backward (dL/dL = 1 in bf16). */
START_TEST(backward_from_a_16bit_loss)
{
    int64_t s[2] = { 4, 6 };
    for (int k = 0; k < 2; k++) {
        int dt = k ? EO_F16 : EO_BF16;
        eo_tensor *x = leaf(half_rand(dt, 2, s, -1, 1, 9)), *y, *L;
        OT_OK(eo_mul(ot_ctx, x, x, &y), "mul");
        OT_OK(eo_sum_all(ot_ctx, y, &L), "sum_all");
        ck_assert_int_eq(L->dtype, dt);
        OT_OK(eo_backward(ot_ctx, L), "backward");
        ck_assert_int_eq(x->grad->dtype, dt);
        const uint16_t *g = x->grad->data, *xv = x->data;
        for (int i = 0; i < 24; i++) /* d(x^2)/dx = 2x, exact in 16 bits */
            ck_assert_uint_eq(g[i], eo_half_put(dt, 2.0f * eo_half_get(dt, xv[i])));
    }
}
END_TEST

/* ---- optimizers on f32 master weights -------------------------------------------- */

/* sgd16 / adamw16 from an f32, bf16 or f16 gradient scaled by 1/4: the
 * weights and state are bit for bit the f32 kernel's for the gradient
 * 0.25 * widen(g), and w16 is the new weights rounded once. n spans
 * several blocks and a ragged tail. */
START_TEST(optimizers_with_master_weights)
{
    enum { N = 2500 };
    static float w0[N], g32[N], w[2][N], m[2][N], v[2][N], gs[N];
    static uint16_t g16[N], w16[N];
    uint32_t seed = 99;
    for (int i = 0; i < N; i++) {
        seed = seed * 1664525u + 1013904223u;
        w0[i] = (float)(seed >> 8) / 16777216.0f - 0.5f;
        seed = seed * 1664525u + 1013904223u;
        g32[i] = ((float)(seed >> 8) / 16777216.0f - 0.5f) * 8.0f;
    }
    for (int gdt = 0; gdt < 4; gdt++) {
        if (gdt == EO_I32)
            continue;
        for (int i = 0; i < N; i++) {
            g16[i] = gdt == EO_F32 ? 0 : eo_half_put(gdt, g32[i]);
            gs[i] = 0.25f * (gdt == EO_F32 ? g32[i] : eo_half_get(gdt, g16[i]));
        }
        const void *g = gdt == EO_F32 ? (const void *)g32 : (const void *)g16;
        for (int adam = 0; adam < 2; adam++) {
            int dt16 = adam ? EO_F16 : EO_BF16;
            for (int k = 0; k < 2; k++) {
                memcpy(w[k], w0, sizeof w0);
                memset(m[k], 0, sizeof m[k]);
                memset(v[k], 0, sizeof v[k]);
            }
            for (int step = 1; step <= 3; step++) {
                if (adam) {
                    eo_k_adamw(N, w[0], gs, m[0], v[0], 1e-2f, 0.9f, 0.999f, 1e-8f, 0.01f, step, NULL);
                    eo_k_adamw16(N, w[1], gdt, g, 0.25f, m[1], v[1], 1e-2f, 0.9f, 0.999f, 1e-8f,
                                 0.01f, step, dt16, w16, NULL);
                } else {
                    eo_k_sgd(N, w[0], gs, v[0], 0.1f, 0.9f, 0.0f, 1e-3f, 1, NULL);
                    eo_k_sgd16(N, w[1], gdt, g, 0.25f, v[1], 0.1f, 0.9f, 0.0f, 1e-3f, 1, dt16, w16,
                               NULL);
                }
            }
            ck_assert_msg(memcmp(w[0], w[1], sizeof w0) == 0, "%s from %s: weights differ",
                          adam ? "adamw16" : "sgd16", eo_dtype_name((eo_dtype)gdt));
            ck_assert(memcmp(v[0], v[1], sizeof w0) == 0 && memcmp(m[0], m[1], sizeof w0) == 0);
            int bad = -1;
            for (int i = 0; i < N && bad < 0; i++)
                if (w16[i] != eo_half_put(dt16, w[1][i]))
                    bad = i;
            ck_assert_msg(bad < 0, "w16[%d] is not the rounded weight", bad);
        }
    }
}
END_TEST

/* The f32 optimizers refuse 16-bit parameters (keep f32 master weights)
 * before changing anything. */
START_TEST(f32_optimizers_refuse_16bit_parameters)
{
    int64_t s[1] = { 8 };
    eo_params ps;
    eo_optimizer o;
    eo_tensor *w = leaf(half_rand(EO_BF16, 1, s, -1, 1, 3));
    OT_OK(eo_tensor_zeros(ot_ctx, EO_STEP, EO_CPU, EO_BF16, 1, s, &w->grad), "grad");
    OT_OK(eo_params_init(ot_ctx, &ps, 2), "params");
    OT_OK(eo_params_add(ot_ctx, &ps, w), "add");
    OT_OK(eo_sgd_init(ot_ctx, &o, &ps, 0.1f, 0.0f, 0.0f, 0), "sgd");
    ck_assert_int_eq(eo_optimizer_step(ot_ctx, &o), EO_ERR_DTYPE);
    ck_assert_ptr_nonnull(strstr(eo_last_error(ot_ctx), "master weights"));
    float norm;
    ck_assert_int_eq(eo_clip_grad_norm(ot_ctx, &ps, 1.0f, &norm), EO_ERR_DTYPE);
}
END_TEST

Suite *eo_suite_half(void)
{
    Suite *s = suite_create("half");
    TCase *tc = tcase_create("conversions");
    tcase_add_test(tc, conversions_match_torch);
    tcase_add_test(tc, every_16bit_pattern_widens_exactly_and_round_trips);
    tcase_add_test(tc, simd_rows_equal_the_scalar_definition);
    tcase_add_test(tc, optimizers_with_master_weights);
    suite_add_tcase(s, tc);
    tc = tcase_create("tensors");
    tcase_add_checked_fixture(tc, ot_setup, ot_teardown);
    tcase_add_test(tc, cast_basics);
    tcase_add_test(tc, transposed_16bit_view_copies);
    tcase_add_test(tc, mixed_dtypes_promote_or_refuse);
    tcase_add_test(tc, backward_from_a_16bit_loss);
    tcase_add_test(tc, native_16bit_kernels_are_used);
    tcase_add_test(tc, f32_optimizers_refuse_16bit_parameters);
    tcase_add_loop_test(tc, each_op_on_16bit_inputs, 0, 2 * N_OP16);
    tcase_add_loop_test(tc, each_op_on_16bit_inputs_fallback_only, 0, 2 * N_OP16);
    suite_add_tcase(s, tc);
    return s;
}
