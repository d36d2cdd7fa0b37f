/* tests/test_sweep.c — hardening sweeps (suite sweep).
 *
 * Four parts:
 *  1. the checked size helpers of alloc/checked.h at their edges;
 *  2. one regression per class of bug that once reached memory or gave a
 *     wrong status: sizes that wrap (slice, reshape, conv2d, pooling,
 *     concat, broadcasting, matmul, attention, a tensor's bytes, the model
 *     builders), failed inits that left a usable-looking object, failed
 *     calls that left memory or tape nodes behind, clipping with a bad
 *     max_norm, messages that named an inner helper or a stale op; the
 *     state kept between calls misused (a refused context init, a hook's
 *     unterminated message, a stale mark, backward twice, an optimizer's
 *     list, a scaler step that failed, a non-finite clipping norm);
 *  3. every public op × {NULL ctx, NULL input, NULL output pointer, wrong
 *     dtype, rank 0, rank 5, a zero-size axis, non-contiguous views,
 *     NaN/inf data}: each returns its documented status, a failure names
 *     the op the caller called (and a NULL argument as NULL) and leaves the arenas and the tape where
 *     they were, and the same op with good inputs then gives the same
 *     result as before. The table is checked against core/ops.def, so a
 *     new op fails this suite until it has an entry;
 *  4. arena exhaustion at every allocation point of whole training steps
 *     (an MLP, a transformer block composed and fused): with k bytes left
 *     for every k from 0 up to enough, the step either works or returns
 *     EO_ERR_OOM from one call, that call leaves the arenas and the tape
 *     as they were, and a following step with room gives exactly the
 *     numbers of a fresh run. */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "alloc/checked.h"
#include "core/internal.h"
#include "core/nn.h"
#include "core/safetensors.h"
#include "core/transformer.h"
#include "tests/gradcheck.h"
#include "tests/optest.h"

/* ======================================================================
 * 1. checked arithmetic
 * ==================================================================== */

START_TEST(checked_helpers)
{
    int64_t r = 7;
    size_t z = 7;
    ck_assert(!eo_add_overflows(INT64_MAX - 1, 1, &r) && r == INT64_MAX);
    ck_assert(eo_add_overflows(INT64_MAX, 1, &r) && r == INT64_MAX);
    ck_assert(eo_add_overflows(INT64_MIN, -1, &r));
    ck_assert(!eo_add_overflows(INT64_MIN, INT64_MAX, &r) && r == -1);
    ck_assert(!eo_mul_overflows((int64_t)1 << 31, (int64_t)1 << 31, &r) && r == (int64_t)1 << 62);
    ck_assert(eo_mul_overflows((int64_t)1 << 32, (int64_t)1 << 31, &r));
    ck_assert(eo_mul_overflows(((int64_t)1 << 62) + 1, 4, &r)); /* wraps to 4 unchecked */
    ck_assert(eo_mul_overflows(-2, INT64_MAX, &r));
    ck_assert(eo_mul_overflows(INT64_MIN, -1, &r));
    ck_assert(!eo_mul_overflows(INT64_MIN, 1, &r) && r == INT64_MIN);
    ck_assert(!eo_mul_overflows(0, INT64_MIN, &r) && r == 0);
    ck_assert(!eo_mul_overflows(-3, -5, &r) && r == 15);
    ck_assert(eo_size_add_overflows(SIZE_MAX, 1, &z));
    ck_assert(!eo_size_add_overflows(SIZE_MAX - 1, 1, &z) && z == SIZE_MAX);
    ck_assert(eo_size_mul_overflows(SIZE_MAX / 2 + 1, 2, &z));
    ck_assert(!eo_size_mul_overflows(SIZE_MAX, 0, &z) && z == 0);
    /* bytes of n elements: negative, wrapping and > PTRDIFF_MAX refused */
    ck_assert(eo_bytes_overflow(-1, 4, &z));
    ck_assert(eo_bytes_overflow((int64_t)(PTRDIFF_MAX / 4) + 1, 4, &z));
    ck_assert(!eo_bytes_overflow((int64_t)(PTRDIFF_MAX / 4), 4, &z) && z <= (size_t)PTRDIFF_MAX);
    ck_assert(!eo_bytes_overflow(0, 4, &z) && z == 0);
    /* a growing buffer's next capacity: doubles, stops at need near the
     * limit instead of wrapping, refuses a need past PTRDIFF_MAX bytes */
    const size_t lim = (size_t)PTRDIFF_MAX;
    ck_assert(!eo_grow_overflows(0, 1, 64, 1, &z) && z == 64);
    ck_assert(!eo_grow_overflows(64, 65, 64, 1, &z) && z == 128);
    ck_assert(!eo_grow_overflows(100, 1000, 64, 8, &z) && z == 1600);
    ck_assert(!eo_grow_overflows(lim / 2 + 1, lim / 2 + 2, 0, 1, &z) && z == lim / 2 + 2);
    ck_assert(!eo_grow_overflows(lim - 1, lim, 0, 1, &z) && z == lim);
    ck_assert(eo_grow_overflows(lim, lim + 1, 0, 1, &z));
    ck_assert(eo_grow_overflows(8, lim / 4 + 1, 8, 4, &z));
    ck_assert(!eo_grow_overflows(0, 0, 0, 1, &z) && z == 0);
    ck_assert(!eo_grow_overflows(0, 5, 0, 1, &z) && z == 5); /* no first size: need */
}
END_TEST

/* ======================================================================
 * 2. regressions, one per class
 * ==================================================================== */

/* The state a failed call must leave: the arenas and the tape. */
typedef struct snapshot {
    size_t step, persist;
    const struct eo_node *tape;
} snapshot;

static snapshot snap(const eo_ctx *c)
{
    snapshot s = { eo_arena_used(&c->step), eo_arena_used(&c->persist), c->tape };
    return s;
}

static void expect_unchanged(const char *what, const eo_ctx *c, snapshot s)
{
    ck_assert_msg(eo_arena_used(&c->step) == s.step,
                  "%s: the step arena holds %zu bytes, %zu before the failed call", what,
                  eo_arena_used(&c->step), s.step);
    ck_assert_msg(eo_arena_used(&c->persist) == s.persist,
                  "%s: the persistent arena holds %zu bytes, %zu before the failed call", what,
                  eo_arena_used(&c->persist), s.persist);
    ck_assert_msg(c->tape == s.tape, "%s: a failed call left a node on the tape", what);
}

/* A failed call: its status, a message that starts with "op:" and
 * mentions `detail` (may be NULL), and nothing left behind. */
static void expect_refused(const char *what, eo_status got, eo_status want, const char *op,
                           const char *detail, snapshot before)
{
    const char *msg = eo_last_error(ot_ctx);
    ck_assert_msg(got == want, "%s: returned %s, expected %s (%s)", what, eo_status_name(got),
                  eo_status_name(want), msg);
    size_t n = strlen(op);
    ck_assert_msg(strncmp(msg, op, n) == 0 && msg[n] == ':',
                  "%s: message \"%s\" does not start with \"%s:\"", what, msg, op);
    ck_assert_msg(strstr(msg, "tensor_new:") == NULL || strcmp(op, "tensor_new") == 0,
                  "%s: message \"%s\" names an inner helper", what, msg);
    if (detail)
        ck_assert_msg(strstr(msg, detail) != NULL, "%s: message \"%s\" does not say \"%s\"",
                      what, msg, detail);
    expect_unchanged(what, ot_ctx, before);
}

#define REFUSED(call, want, op, detail)                                                    \
    do {                                                                                   \
        snapshot b_ = snap(ot_ctx);                                                        \
        eo_status s_ = (call);                                                             \
        expect_refused(#call, s_, (want), (op), (detail), b_);                             \
    } while (0)

/* A CPU tensor over a little memory that claims a (possibly huge) shape:
 * the op under test must refuse it before reading past the memory. */
static eo_tensor *claim(int rank, const int64_t *shape)
{
    static float little[64];
    eo_tensor *t;
    OT_OK(eo_tensor_wrap(ot_ctx, EO_F32, rank, shape, little, &t), "wrap");
    t->requires_grad = 1;
    return t;
}

START_TEST(slice_bounds_do_not_wrap)
{
    /* Bug: start + len wrapped, a [2, 3] tensor sliced with a length near
     * INT64_MAX came back OK and a later copy read past its buffer. */
    int64_t s[2] = { 2, 3 };
    eo_tensor *x = eo_test_rand(ot_ctx, 2, s, -1, 1, 1, 1), *y;
    REFUSED(eo_slice(ot_ctx, x, 1, 1, INT64_MAX, &y), EO_ERR_SHAPE, "slice", "[2x3 f32]");
    REFUSED(eo_slice(ot_ctx, x, 1, INT64_MAX, 1, &y), EO_ERR_SHAPE, "slice", NULL);
    REFUSED(eo_slice(ot_ctx, x, 0, INT64_MAX, INT64_MAX, &y), EO_ERR_SHAPE, "slice", NULL);
    REFUSED(eo_slice(ot_ctx, x, 0, 0, -1, &y), EO_ERR_SHAPE, "slice", NULL);
    OT_OK(eo_slice(ot_ctx, x, 1, 3, 0, &y), "empty slice at the end");
    OT_OK(eo_slice(ot_ctx, x, 1, 1, 2, &y), "slice");
    OT_OK(eo_contiguous(ot_ctx, y, &y), "copy of the slice");
}
END_TEST

START_TEST(reshape_product_does_not_wrap)
{
    /* Bug: (2^62 + 1) * 4 wraps to 4, so [4] reshaped to [2^62 + 1, 4]
     * was accepted. */
    int64_t n4 = 4, s[2] = { ((int64_t)1 << 62) + 1, 4 }, s3[3] = { (int64_t)1 << 32, (int64_t)1 << 32, 4 };
    eo_tensor *x = eo_test_rand(ot_ctx, 1, &n4, -1, 1, 1, 1), *y;
    REFUSED(eo_reshape(ot_ctx, x, 2, s, &y), EO_ERR_SHAPE, "reshape", "[4 f32]");
    REFUSED(eo_reshape(ot_ctx, x, 3, s3, &y), EO_ERR_SHAPE, "reshape", NULL);
    int64_t inf[3] = { (int64_t)1 << 62, -1, 8 };
    REFUSED(eo_reshape(ot_ctx, x, 3, inf, &y), EO_ERR_SHAPE, "reshape", NULL);
}
END_TEST

START_TEST(tensor_bytes_do_not_wrap)
{
    /* Bug (32-bit build): a [32768, 32768] f32 tensor has 2^32 bytes,
     * which wrapped to 0 in a 32-bit size_t and was "allocated". The same
     * check refuses, on a 64-bit build, a tensor whose bytes pass 2^63. */
    eo_tensor *y;
    int64_t big32[2] = { 32768, 32768 }, big64[2] = { (int64_t)1 << 31, (int64_t)1 << 31 };
    if (SIZE_MAX < ((uint64_t)1 << 40))
        REFUSED(eo_tensor_new(ot_ctx, EO_STEP, EO_CPU, EO_F32, 2, big32, &y), EO_ERR_SHAPE,
                "tensor_new", "[32768x32768]");
    REFUSED(eo_tensor_new(ot_ctx, EO_STEP, EO_CPU, EO_F32, 2, big64, &y), EO_ERR_SHAPE,
            "tensor_new", "[2147483648x2147483648] f32");
    REFUSED(eo_tensor_zeros(ot_ctx, EO_PERSIST, EO_CPU, EO_I32, 2, big64, &y), EO_ERR_SHAPE,
            "tensor_zeros", NULL);
    float v[1];
    REFUSED(eo_tensor_wrap(ot_ctx, EO_F32, 2, big64, v, &y), EO_ERR_SHAPE, "tensor_wrap", NULL);
    int64_t wrap4[3] = { (int64_t)1 << 32, (int64_t)1 << 32, 4 }; /* 2^66 elements */
    REFUSED(eo_tensor_new(ot_ctx, EO_STEP, EO_CPU, EO_F32, 3, wrap4, &y), EO_ERR_SHAPE,
            "tensor_new", NULL);
    /* A failed allocation leaves nothing in the arena (not even the
     * tensor's metadata, which is taken first). 1 GiB: more than the
     * arena, yet a size a 32-bit target can address. */
    int64_t oom[1] = { (int64_t)1 << 28 };
    REFUSED(eo_tensor_new(ot_ctx, EO_STEP, EO_CPU, EO_F32, 1, oom, &y), EO_ERR_OOM, "tensor_new",
            "need ");
    REFUSED(eo_param_new(ot_ctx, EO_CPU, "p", 1, oom, &y), EO_ERR_OOM, "param_new", "need ");
}
END_TEST

START_TEST(conv_and_pool_sizes_do_not_wrap)
{
    /* Bug: with pad near INT_MAX the output side is ~2^32, OH*OW wrapped
     * and im2col wrote past a buffer sized from the wrapped count. */
    int64_t sx[4] = { 1, 1, 3, 3 }, sw[4] = { 1, 1, 3, 3 }, sk[4] = { 1, 1, 5, 5 };
    eo_tensor *x = eo_test_rand(ot_ctx, 4, sx, -1, 1, 1, 1), *w = ot_rand(4, sw, -1, 1, 2), *y;
    eo_tensor *w5 = ot_rand(4, sk, -1, 1, 3);
    REFUSED(eo_conv2d(ot_ctx, x, w, NULL, INT32_MAX, 1, &y), EO_ERR_SHAPE, "conv2d", "too large");
    REFUSED(eo_conv2d(ot_ctx, x, w, NULL, 1 << 30, 1, &y), EO_ERR_SHAPE, "conv2d", NULL);
    REFUSED(eo_conv2d(ot_ctx, x, w, NULL, -1, 1, &y), EO_ERR_ARG, "conv2d", NULL);
    REFUSED(eo_conv2d(ot_ctx, x, w, NULL, 0, 0, &y), EO_ERR_ARG, "conv2d", "stride");
    REFUSED(eo_conv2d(ot_ctx, x, w, NULL, 0, -3, &y), EO_ERR_ARG, "conv2d", NULL);
    REFUSED(eo_conv2d(ot_ctx, x, w5, NULL, 0, 1, &y), EO_ERR_SHAPE, "conv2d", "larger than");
    int64_t s0[4] = { 1, 1, 0, 3 };
    eo_tensor *w0 = ot_rand(4, s0, -1, 1, 4);
    REFUSED(eo_conv2d(ot_ctx, x, w0, NULL, 0, 1, &y), EO_ERR_SHAPE, "conv2d", "empty");
    OT_OK(eo_conv2d(ot_ctx, x, w5, NULL, 1, 1, &y), "a 5x5 kernel over 3x3 padded by 1");
    /* Pooling: k 0 or negative, larger than the input, and planes whose
     * pixel count does not fit the i32 argmax. */
    REFUSED(eo_maxpool2d(ot_ctx, x, 0, &y), EO_ERR_ARG, "maxpool2d", NULL);
    REFUSED(eo_maxpool2d(ot_ctx, x, -2, &y), EO_ERR_ARG, "maxpool2d", NULL);
    REFUSED(eo_maxpool2d(ot_ctx, x, 4, &y), EO_ERR_SHAPE, "maxpool2d", "[1x1x3x3 f32]");
    /* (A 32-bit target cannot address such a plane at all: wrap refuses it.) */
    if (SIZE_MAX >= ((uint64_t)1 << 40)) {
        int64_t huge[4] = { 1, 1, 65536, 65536 };
        eo_tensor *xh = claim(4, huge);
        REFUSED(eo_maxpool2d(ot_ctx, xh, 2, &y), EO_ERR_SHAPE, "maxpool2d", "i32");
    }
}
END_TEST

START_TEST(output_sizes_do_not_wrap)
{
    /* Outputs whose element count is a product of two inputs' sizes:
     * broadcasting, matmul, attention's scores, concatenation. Each must
     * be refused by the op, by name, before any kernel runs. The inputs
     * are claims over a little memory, so each must be addressable: 2^31
     * floats on a 64-bit target, 2^26 on a 32-bit one (whose G x G
     * products are still far past what it can address). */
    const int64_t G = SIZE_MAX >= ((uint64_t)1 << 40) ? (int64_t)1 << 31 : (int64_t)1 << 26;
    int64_t col[2] = { G, 1 }, row[2] = { 1, G }, q4[4] = { 1, 1, G, 1 };
    eo_tensor *y, *c = claim(2, col), *r = claim(2, row);
    REFUSED(eo_add(ot_ctx, c, r, &y), EO_ERR_SHAPE, "add", "too large");
    REFUSED(eo_mul(ot_ctx, r, c, &y), EO_ERR_SHAPE, "mul", NULL);
    REFUSED(eo_matmul(ot_ctx, c, r, 0, 0, &y), EO_ERR_SHAPE, "matmul", "too large");
    eo_tensor *q = claim(4, q4);
    REFUSED(eo_attention(ot_ctx, q, q, q, NULL, 0, 1.0f, &y), EO_ERR_SHAPE, "attention", NULL);
    REFUSED(eo_attention(ot_ctx, q, q, q, NULL, 1, 1.0f, &y), EO_ERR_SHAPE, "attention", NULL);
    /* Parts whose lengths' sum wraps int64: only a 64-bit target can
     * even describe one such part. */
    if (SIZE_MAX >= ((uint64_t)1 << 40)) {
        int64_t part[1] = { (int64_t)1 << 60 };
        eo_tensor *p = claim(1, part), *parts[16];
        for (int i = 0; i < 16; i++)
            parts[i] = p;
        REFUSED(eo_concat(ot_ctx, parts, 8, 0, &y), EO_ERR_SHAPE, "concat", "overflows");
        REFUSED(eo_concat(ot_ctx, parts, 16, 0, &y), EO_ERR_SHAPE, "concat", "overflows");
    }
    REFUSED(eo_padding_mask(ot_ctx, EO_CPU, G, G, (const uint8_t *)"", &y), EO_ERR_SHAPE,
            "padding_mask", NULL);
    REFUSED(eo_causal_mask(ot_ctx, EO_CPU, G * 2, &y), EO_ERR_SHAPE, "causal_mask", NULL);
}
END_TEST

START_TEST(model_builders_refuse_products_that_wrap)
{
    eo_gpt gpt;
    eo_vit vit;
    eo_block blk;
    eo_params ps;
    OT_OK(eo_params_init(ot_ctx, &ps, 64), "params");
    const int64_t big = (int64_t)1 << 61;
    /* d_model 2^61: 3C and 4C of the block's projections wrap */
    eo_gpt_config g1 = { 10, 4, big, 1, 1, 0 }, g2 = { 10, 4, 8, 2, (int64_t)1 << 40, 0 };
    eo_gpt_config g3 = { 10, 4, 8, 3, 1, 0 }, g4 = { 10, 4, 8, 2, 0, 0 };
    REFUSED(eo_gpt_build(ot_ctx, EO_CPU, &g1, &gpt), EO_ERR_ARG, "gpt_build", NULL);
    REFUSED(eo_gpt_build(ot_ctx, EO_CPU, &g2, &gpt), EO_ERR_ARG, "gpt_build", "layers");
    REFUSED(eo_gpt_build(ot_ctx, EO_CPU, &g3, &gpt), EO_ERR_ARG, "gpt_build", "heads 3");
    REFUSED(eo_gpt_build(ot_ctx, EO_CPU, &g4, &gpt), EO_ERR_ARG, "gpt_build", NULL);
    /* vocab × d_model that does not fit: the embedding table is refused */
    eo_gpt_config g5 = { (int64_t)1 << 40, 4, (int64_t)1 << 30, 2, 1, 0 };
    REFUSED(eo_gpt_build(ot_ctx, EO_CPU, &g5, &gpt), EO_ERR_SHAPE, "gpt_build", NULL);
    eo_vit_config v1 = { (int64_t)1 << 32, 1 << 16, 8, 2, 1, 10 }, v2 = { 28, 5, 8, 2, 1, 10 };
    eo_vit_config v3 = { 28, 4, 8, 2, (int64_t)1 << 40, 10 };
    REFUSED(eo_vit_build(ot_ctx, EO_CPU, &v1, &vit), EO_ERR_ARG, "vit_build", "pixels");
    REFUSED(eo_vit_build(ot_ctx, EO_CPU, &v2, &vit), EO_ERR_ARG, "vit_build", "patch 5");
    REFUSED(eo_vit_build(ot_ctx, EO_CPU, &v3, &vit), EO_ERR_ARG, "vit_build", "layers");
    REFUSED(eo_block_init(ot_ctx, &ps, EO_CPU, "b", big, 1, 1, &blk), EO_ERR_ARG, "block_init",
            NULL);
    REFUSED(eo_block_init(ot_ctx, &ps, EO_CPU, "b", 8, 3, 1, &blk), EO_ERR_ARG, "block_init",
            NULL);
    ck_assert_int_eq(ps.count, 0);
    /* Layers: kernel 0, negative padding, zero stride, products that wrap. */
    eo_module m;
    REFUSED(eo_conv2d_init(ot_ctx, &ps, EO_CPU, "c", 1, 2, 0, 0, 1, &m), EO_ERR_ARG,
            "conv2d_init", "k >= 1");
    REFUSED(eo_conv2d_init(ot_ctx, &ps, EO_CPU, "c", 1, 2, 3, -1, 1, &m), EO_ERR_ARG,
            "conv2d_init", "pad");
    REFUSED(eo_conv2d_init(ot_ctx, &ps, EO_CPU, "c", 1, 2, 3, 0, 0, &m), EO_ERR_ARG,
            "conv2d_init", "stride");
    REFUSED(eo_conv2d_init(ot_ctx, &ps, EO_CPU, "c", big, big, 3, 0, 1, &m), EO_ERR_SHAPE,
            "conv2d_init", "overflows");
    REFUSED(eo_linear_init(ot_ctx, &ps, EO_CPU, "l", big, big, 1, EO_INIT_NORMAL_002, &m),
            EO_ERR_SHAPE, "linear_init", NULL);
    REFUSED(eo_linear_init(ot_ctx, &ps, EO_CPU, "l", 0, 3, 1, EO_INIT_NORMAL_002, &m),
            EO_ERR_ARG, "linear_init", NULL);
    REFUSED(eo_layernorm_init(ot_ctx, &ps, EO_CPU, "n", 4, -1e-5f, &m), EO_ERR_ARG,
            "layernorm_init", "eps");
    REFUSED(eo_layernorm_init(ot_ctx, &ps, EO_CPU, "n", 4, NAN, &m), EO_ERR_ARG,
            "layernorm_init", "eps");
    REFUSED(eo_layernorm_init(ot_ctx, &ps, EO_CPU, "n", 4, INFINITY, &m), EO_ERR_ARG,
            "layernorm_init", "eps");
    REFUSED(eo_params_init(ot_ctx, &ps, 0), EO_ERR_ARG, "params_init", NULL);
    REFUSED(eo_sequential_init(ot_ctx, NULL, 4), EO_ERR_ARG, "sequential_init", NULL);
}
END_TEST

START_TEST(failed_inits_give_back_and_refuse_use)
{
    /* A context whose persistent arena holds the list and not much more. */
    static unsigned char persist[4096], step[1 << 16];
    eo_ctx c;
    ck_assert_int_eq(eo_ctx_init(&c, persist, sizeof persist, step, sizeof step), EO_OK);
    eo_params ps;
    ck_assert_int_eq(eo_params_init(&c, &ps, 8), EO_OK);
    eo_module small;
    ck_assert_int_eq(eo_linear_init(&c, &ps, EO_CPU, "a", 2, 3, 1, EO_INIT_KAIMING_UNIFORM, &small),
                     EO_OK);
    snapshot before = snap(&c);
    int count = ps.count;
    eo_module lin, conv, ln;
    ck_assert_int_eq(eo_linear_init(&c, &ps, EO_CPU, "big", 16, 40, 1, EO_INIT_KAIMING_UNIFORM, &lin),
                     EO_ERR_OOM);
    ck_assert_msg(strncmp(eo_last_error(&c), "linear_init: ", 13) == 0, "%s", eo_last_error(&c));
    expect_unchanged("failed linear_init", &c, before);
    ck_assert_int_eq(ps.count, count);
    ck_assert_int_eq(eo_conv2d_init(&c, &ps, EO_CPU, "cv", 8, 8, 3, 1, 1, &conv), EO_ERR_OOM);
    expect_unchanged("failed conv2d_init", &c, before);
    ck_assert_int_eq(eo_layernorm_init(&c, &ps, EO_CPU, "ln", 1000, 1e-5f, &ln), EO_ERR_OOM);
    expect_unchanged("failed layernorm_init", &c, before);
    ck_assert_int_eq(ps.count, count);
    /* Using what failed says EO_ERR_STATE (it used to segfault). */
    int64_t s[2] = { 2, 16 };
    eo_tensor *x, *y;
    ck_assert_int_eq(eo_tensor_zeros(&c, EO_STEP, EO_CPU, EO_F32, 2, s, &x), EO_OK);
    ck_assert_int_eq(eo_module_forward(&c, &lin, x, &y), EO_ERR_STATE);
    ck_assert_msg(strncmp(eo_last_error(&c), "linear_forward: ", 16) == 0, "%s", eo_last_error(&c));
    ck_assert_int_eq(eo_module_forward(&c, &conv, x, &y), EO_ERR_STATE);
    ck_assert_int_eq(eo_module_forward(&c, &ln, x, &y), EO_ERR_STATE);
    /* Optimizers: state that does not fit. */
    eo_params many;
    ck_assert_int_eq(eo_params_init(&c, &many, 2), EO_OK);
    eo_module l2;
    ck_assert_int_eq(eo_linear_init(&c, &many, EO_CPU, "w", 8, 8, 1, EO_INIT_KAIMING_UNIFORM, &l2),
                     EO_OK);
    before = snap(&c);
    eo_optimizer opt;
    eo_status st = eo_adamw_init(&c, &opt, &many, 1e-3f, 0.9f, 0.999f, 1e-8f, 0);
    if (st == EO_OK) { /* the state fitted: fill the arena and try again */
        void *p;
        ck_assert_int_eq(eo_arena_alloc(&c.persist, eo_arena_remaining(&c.persist) - 64, 1, &p),
                         EO_OK);
        before = snap(&c);
        st = eo_adamw_init(&c, &opt, &many, 1e-3f, 0.9f, 0.999f, 1e-8f, 0);
    }
    ck_assert_int_eq(st, EO_ERR_OOM);
    expect_unchanged("failed adamw_init", &c, before);
    ck_assert_int_eq(eo_optimizer_step(&c, &opt), EO_ERR_STATE);
    ck_assert_int_eq(eo_sgd_init(&c, &opt, &many, 0.1f, 0.9f, 0, 0), EO_ERR_OOM);
    ck_assert_int_eq(eo_optimizer_step(&c, &opt), EO_ERR_STATE);
    ck_assert_msg(strncmp(eo_last_error(&c), "optimizer_step: ", 16) == 0, "%s", eo_last_error(&c));
    /* Models and containers. */
    eo_gpt gpt;
    eo_gpt_config gc = { 16, 8, 16, 2, 2, 0 };
    before = snap(&c);
    ck_assert_int_eq(eo_gpt_build(&c, EO_CPU, &gc, &gpt), EO_ERR_OOM);
    expect_unchanged("failed gpt_build", &c, before);
    int64_t si[2] = { 1, 4 };
    eo_tensor *idx;
    ck_assert_int_eq(eo_tensor_zeros(&c, EO_STEP, EO_CPU, EO_I32, 2, si, &idx), EO_OK);
    before = snap(&c);
    ck_assert_int_eq(eo_gpt_forward(&c, &gpt, idx, &y), EO_ERR_STATE);
    ck_assert_int_eq(eo_gpt_loss(&c, &gpt, idx, idx, NULL, &y), EO_ERR_STATE);
    eo_gpt_set_fused(&gpt, 1); /* harmless */
    eo_vit vit;
    eo_vit_config vc = { 8, 4, 16, 2, 2, 10 };
    ck_assert_int_eq(eo_vit_build(&c, EO_CPU, &vc, &vit), EO_ERR_OOM);
    expect_unchanged("failed vit_build", &c, before);
    ck_assert_int_eq(eo_vit_forward(&c, &vit, x, &y), EO_ERR_STATE);
    eo_block blk;
    ck_assert_int_eq(eo_block_init(&c, NULL, EO_CPU, "h", 32, 2, 1, &blk), EO_ERR_OOM);
    expect_unchanged("failed block_init", &c, before);
    ck_assert_int_eq(eo_block_forward(&c, &blk, x, &y), EO_ERR_STATE);
    ck_assert_int_eq(eo_mha_forward(&c, &blk.attn, x, &y), EO_ERR_STATE);
    eo_sequential seq;
    eo_params pl;
    ck_assert_int_eq(eo_sequential_init(&c, &seq, 1 << 20), EO_ERR_OOM);
    ck_assert_int_eq(eo_sequential_forward(&c, &seq, x, &y), EO_ERR_STATE);
    ck_assert_int_eq(eo_sequential_add(&c, &seq, eo_relu_module()), EO_ERR_STATE);
    ck_assert_int_eq(eo_params_init(&c, &pl, 1 << 20), EO_ERR_OOM);
    ck_assert_int_eq(eo_params_add(&c, &pl, small.w), EO_ERR_STATE);
    expect_unchanged("failed containers", &c, before);
}
END_TEST

/* Persistent-arena exhaustion at every allocation point of a model
 * build and an optimizer's init: each either works or gives back all it
 * took and leaves an object that refuses to run. */
START_TEST(builds_under_persistent_exhaustion)
{
    eo_ctx *c = eo_test_ctx(1, 1);
    eo_gpt_config gc = { 5, 4, 8, 2, 2, 0 };
    eo_vit_config vc = { 8, 4, 8, 2, 1, 3 };
    int64_t si[2] = { 1, 4 }, sv[2] = { 1, 64 };
    eo_tensor *idx, *img, *y;
    ck_assert_int_eq(eo_tensor_zeros(c, EO_STEP, EO_CPU, EO_I32, 2, si, &idx), EO_OK);
    ck_assert_int_eq(eo_tensor_zeros(c, EO_STEP, EO_CPU, EO_F32, 2, sv, &img), EO_OK);
    const eo_mark inputs = eo_mark_get(c);
    for (int which = 0; which < 3; which++) {
        int fails = 0, oks = 0;
        for (size_t k = 0; oks < 2; k += 64) {
            ck_assert_msg(k < (1u << 20), "build %d never succeeded", which);
            eo_arena_mark pm = eo_arena_mark_get(&c->persist);
            void *fill;
            ck_assert_int_eq(eo_arena_alloc(&c->persist, eo_arena_remaining(&c->persist) - k, 1,
                                            &fill), EO_OK);
            snapshot before = snap(c);
            eo_gpt g;
            eo_vit v;
            eo_optimizer o;
            eo_status st, use;
            if (which == 0) {
                st = eo_gpt_build(c, EO_CPU, &gc, &g);
                use = eo_gpt_forward(c, &g, idx, &y);
            } else if (which == 1) {
                st = eo_vit_build(c, EO_CPU, &vc, &v);
                use = eo_vit_forward(c, &v, img, &y);
            } else {
                eo_arena_rewind(&c->persist, pm); /* the model needs room: build it first */
                ck_assert_int_eq(eo_gpt_build(c, EO_CPU, &gc, &g), EO_OK);
                ck_assert_int_eq(eo_arena_alloc(&c->persist, eo_arena_remaining(&c->persist) - k,
                                                1, &fill), EO_OK);
                before = snap(c);
                st = eo_adamw_init(c, &o, &g.params, 1e-3f, 0.9f, 0.999f, 1e-8f, 0);
                use = eo_optimizer_step(c, &o);
            }
            if (st == EO_OK) {
                oks++;
                ck_assert_msg(use == EO_OK, "build %d: %s", which, eo_last_error(c));
            } else {
                fails++;
                ck_assert_int_eq(st, EO_ERR_OOM);
                expect_unchanged("failed build", c, before);
                ck_assert_int_eq(use, EO_ERR_STATE);
            }
            eo_rewind(c, inputs);
            eo_arena_rewind(&c->persist, pm);
        }
        ck_assert_msg(fails > 20, "build %d: only %d failure points", which, fails);
    }
    eo_test_ctx_free(c);
}
END_TEST

START_TEST(hyper_parameters_are_checked)
{
    eo_params ps;
    eo_module l;
    eo_optimizer o;
    OT_OK(eo_params_init(ot_ctx, &ps, 4), "params");
    OT_OK(eo_linear_init(ot_ctx, &ps, EO_CPU, "l", 3, 2, 1, EO_INIT_KAIMING_UNIFORM, &l), "linear");
    const float bad_lr[] = { -1e-3f, NAN, INFINITY };
    for (int i = 0; i < 3; i++) {
        REFUSED(eo_sgd_init(ot_ctx, &o, &ps, bad_lr[i], 0, 0, 0), EO_ERR_ARG, "sgd_init", "lr");
        REFUSED(eo_adamw_init(ot_ctx, &o, &ps, bad_lr[i], 0.9f, 0.999f, 1e-8f, 0), EO_ERR_ARG,
                "adamw_init", "lr");
        REFUSED(eo_sgd_init(ot_ctx, &o, &ps, 0.1f, 0, bad_lr[i], 0), EO_ERR_ARG, "sgd_init",
                "weight_decay");
        REFUSED(eo_sgd_init(ot_ctx, &o, &ps, 0.1f, bad_lr[i], 0, 0), EO_ERR_ARG, "sgd_init",
                "momentum");
        REFUSED(eo_adamw_init(ot_ctx, &o, &ps, 1e-3f, 0.9f, 0.999f, bad_lr[i], 0), EO_ERR_ARG,
                "adamw_init", "eps");
    }
    REFUSED(eo_adamw_init(ot_ctx, &o, &ps, 1e-3f, 0.9f, 0.999f, 0, 0), EO_ERR_ARG, "adamw_init",
            "eps");
    const float bad_beta[] = { -0.1f, 1.0f, 1.5f, NAN };
    for (int i = 0; i < 4; i++) {
        REFUSED(eo_adamw_init(ot_ctx, &o, &ps, 1e-3f, bad_beta[i], 0.999f, 1e-8f, 0), EO_ERR_ARG,
                "adamw_init", "beta1");
        REFUSED(eo_adamw_init(ot_ctx, &o, &ps, 1e-3f, 0.9f, bad_beta[i], 1e-8f, 0), EO_ERR_ARG,
                "adamw_init", "beta2");
    }
    REFUSED(eo_sgd_init(ot_ctx, &o, &ps, 0.1f, 0, 0, 1), EO_ERR_ARG, "sgd_init", "Nesterov");
    /* A learning rate made non-finite by a schedule is refused at the step. */
    OT_OK(eo_sgd_init(ot_ctx, &o, &ps, 0.1f, 0.9f, 0, 0), "sgd");
    o.lr = NAN;
    REFUSED(eo_optimizer_step(ot_ctx, &o), EO_ERR_ARG, "optimizer_step", "lr");
    /* Clipping with max_norm <= 0 or NaN used to flip or poison every
     * gradient; it must be refused and leave them as they were. */
    float *g = l.w->grad->data;
    for (int i = 0; i < 6; i++)
        g[i] = (float)(i + 1);
    const float bad_norm[] = { -1.0f, 0.0f, NAN };
    for (int i = 0; i < 3; i++) {
        REFUSED(eo_clip_grad_norm(ot_ctx, &ps, bad_norm[i], NULL), EO_ERR_ARG, "clip_grad_norm",
                "max_norm");
        for (int j = 0; j < 6; j++)
            ck_assert_float_eq(g[j], (float)(j + 1));
    }
    float norm;
    OT_OK(eo_clip_grad_norm(ot_ctx, &ps, INFINITY, &norm), "clip with an infinite bound");
    ck_assert_float_eq(g[5], 6.0f);
    /* Dropout and layer numbers. */
    int64_t s[2] = { 2, 3 };
    eo_tensor *x = ot_rand(2, s, -1, 1, 1), *y;
    eo_module d = eo_dropout_module(1.5f), dn = eo_dropout_module(NAN), mp = eo_maxpool2d_module(0);
    REFUSED(eo_module_forward(ot_ctx, &d, x, &y), EO_ERR_ARG, "dropout_forward", "p");
    eo_set_training(ot_ctx, 0); /* refused in evaluation mode too */
    REFUSED(eo_module_forward(ot_ctx, &dn, x, &y), EO_ERR_ARG, "dropout_forward", "p");
    eo_set_training(ot_ctx, 1);
    REFUSED(eo_dropout(ot_ctx, x, -0.1f, 1, &y), EO_ERR_ARG, "dropout", NULL);
    REFUSED(eo_dropout(ot_ctx, x, 1.0f, 1, &y), EO_ERR_ARG, "dropout", NULL);
    REFUSED(eo_layernorm(ot_ctx, x, NULL, NULL, -1.0f, &y), EO_ERR_ARG, "layernorm", "eps");
    REFUSED(eo_layernorm(ot_ctx, x, NULL, NULL, INFINITY, &y), EO_ERR_ARG, "layernorm", "eps");
    int64_t s4[4] = { 1, 1, 2, 2 };
    eo_tensor *x4 = ot_rand(4, s4, -1, 1, 2);
    REFUSED(eo_module_forward(ot_ctx, &mp, x4, &y), EO_ERR_ARG, "maxpool2d_forward", NULL);
    REFUSED(eo_init_param(ot_ctx, l.w, NAN, 0), EO_ERR_ARG, "init_param", "bound");
    /* A layer deep in a container says which one it was. */
    eo_sequential seq;
    int64_t s5[2] = { 2, 5 };
    eo_tensor *x5 = ot_rand(2, s5, -1, 1, 3);
    OT_OK(eo_sequential_init(ot_ctx, &seq, 2), "sequential");
    OT_OK(eo_sequential_add(ot_ctx, &seq, eo_relu_module()), "add");
    OT_OK(eo_sequential_add(ot_ctx, &seq, l), "add");
    REFUSED(eo_sequential_forward(ot_ctx, &seq, x5, &y), EO_ERR_SHAPE, "sequential_forward",
            "layer 1: linear_forward: input [2x5 f32], expected last axis 3");
}
END_TEST

START_TEST(messages_name_the_call_and_failed_composites_leave_nothing)
{
    /* A small step arena: composite ops run out part-way through. */
    static unsigned char persist[1 << 18], step[1 << 17];
    eo_ctx c;
    ck_assert_int_eq(eo_ctx_init(&c, persist, sizeof persist, step, sizeof step), EO_OK);
    eo_block b;
    ck_assert_int_eq(eo_block_init(&c, NULL, EO_CPU, "h", 16, 2, 1, &b), EO_OK);
    eo_gpt gpt;
    eo_vit vit;
    eo_gpt_config gc = { 5, 4, 8, 2, 1, 0 };
    eo_vit_config vc = { 8, 4, 8, 2, 1, 3 };
    ck_assert_int_eq(eo_gpt_build(&c, EO_CPU, &gc, &gpt), EO_OK);
    ck_assert_int_eq(eo_vit_build(&c, EO_CPU, &vc, &vit), EO_OK);
    int64_t si[2] = { 2, 4 }, sv[2] = { 2, 64 };
    eo_tensor *idx, *imgs;
    ck_assert_int_eq(eo_tensor_zeros(&c, EO_STEP, EO_CPU, EO_I32, 2, si, &idx), EO_OK);
    ck_assert_int_eq(eo_tensor_zeros(&c, EO_STEP, EO_CPU, EO_F32, 2, sv, &imgs), EO_OK);
    int64_t sx[3] = { 2, 8, 16 }, s4[4] = { 1, 2, 16, 8 }, sc[4] = { 2, 3, 12, 12 };
    int64_t sw[4] = { 4, 3, 3, 3 };
    eo_tensor *x, *y, *q, *img, *w;
    ck_assert_int_eq(eo_tensor_zeros(&c, EO_STEP, EO_CPU, EO_F32, 3, sx, &x), EO_OK);
    ck_assert_int_eq(eo_tensor_zeros(&c, EO_STEP, EO_CPU, EO_F32, 4, s4, &q), EO_OK);
    ck_assert_int_eq(eo_tensor_zeros(&c, EO_STEP, EO_CPU, EO_F32, 4, sc, &img), EO_OK);
    ck_assert_int_eq(eo_param_new(&c, EO_CPU, "w", 4, sw, &w), EO_OK);
    x->requires_grad = 1;
    struct { const char *op; int which; } cases[] = {
        { "block_forward", 0 }, { "mha_forward", 1 }, { "attention", 2 }, { "conv2d", 3 },
        { "gpt_loss", 4 }, { "vit_forward", 5 },
    };
    for (int i = 0; i < 6; i++) {
        /* Each call with less and less room until it fails part-way. */
        for (size_t left = 256; left < eo_arena_remaining(&c.step); left += 512) {
            eo_mark m = eo_mark_get(&c);
            void *fill;
            ck_assert_int_eq(eo_arena_alloc(&c.step, eo_arena_remaining(&c.step) - left, 1, &fill),
                             EO_OK);
            snapshot before = snap(&c);
            eo_status st = cases[i].which == 0   ? eo_block_forward(&c, &b, x, &y)
                           : cases[i].which == 1 ? eo_mha_forward(&c, &b.attn, x, &y)
                           : cases[i].which == 2 ? eo_attention(&c, q, q, q, NULL, 1, 0.5f, &y)
                           : cases[i].which == 3 ? eo_conv2d(&c, img, w, NULL, 1, 1, &y)
                           : cases[i].which == 4 ? eo_gpt_loss(&c, &gpt, idx, idx, NULL, &y)
                                                 : eo_vit_forward(&c, &vit, imgs, &y);
            if (st != EO_OK) {
                char what[64];
                snprintf(what, sizeof what, "%s with %zu bytes left", cases[i].op, left);
                ck_assert_int_eq(st, EO_ERR_OOM);
                const char *msg = eo_last_error(&c);
                size_t n = strlen(cases[i].op);
                ck_assert_msg(strncmp(msg, cases[i].op, n) == 0 && msg[n] == ':',
                              "%s: message \"%s\" does not start with the call", what, msg);
                expect_unchanged(what, &c, before);
            }
            eo_rewind(&c, m);
        }
    }
    /* Never a stale op: a later call that fails names itself. */
    ck_assert_int_eq(eo_block_forward(&c, &b, x, &y), EO_OK);
    ck_assert_int_eq(eo_tensor_wrap(&c, EO_F32, 1, sx, NULL, &y), EO_ERR_ARG);
    ck_assert_msg(strncmp(eo_last_error(&c), "tensor_wrap: ", 13) == 0, "%s", eo_last_error(&c));
    /* A backward that runs out names backward and the rule it was in, and
     * gives back its step memory. */
    eo_tensor *L;
    ck_assert_int_eq(eo_block_forward(&c, &b, x, &y), EO_OK);
    ck_assert_int_eq(eo_sum_all(&c, y, &L), EO_OK);
    void *fill;
    ck_assert_int_eq(eo_arena_alloc(&c.step, eo_arena_remaining(&c.step) - 2048, 1, &fill), EO_OK);
    snapshot before = snap(&c);
    ck_assert_int_eq(eo_backward(&c, L), EO_ERR_OOM);
    ck_assert_msg(strncmp(eo_last_error(&c), "backward: through ", 18) == 0, "%s",
                  eo_last_error(&c));
    expect_unchanged("failed backward", &c, before);
    ck_assert_ptr_null(x->grad); /* no gradient points into given-back memory */
}
END_TEST

START_TEST(cuda_attach_failure_gives_back)
{
    /* Without a GPU (the usual case here) the real driver cannot attach:
     * the message starts with the call and its table and state, taken
     * from the persistent arena, are given back. With a GPU it attaches. */
    snapshot before = snap(ot_ctx);
    eo_status st = eo_cuda_attach(ot_ctx, NULL, 0, 1 << 20, 1 << 20);
    if (st == EO_OK) {
        eo_cuda_detach(ot_ctx);
        return;
    }
    /* no driver or device; a CUDA=0 build has no CUDA backend at all */
    ck_assert(st == EO_ERR_NO_DEVICE || st == EO_ERR_CUDA || (!EO_HAVE_CUDA && st == EO_ERR_UNSUPPORTED));
    expect_refused("cuda_attach without a GPU", st, st, "cuda_attach", NULL, before);
}
END_TEST

/* A hook that fills the library's message buffer to the last byte and
 * writes no terminating NUL, then fails. */
static eo_status unterminated_hook(void *user, const eo_grad_buffer *bufs, int n, char *msg,
                                   size_t msglen)
{
    (void)user, (void)bufs, (void)n;
    memset(msg, 'A', msglen);
    return EO_ERR_DEVICE;
}

/* eo_last_error ends inside ctx->err, starts with "op:" and says detail. */
static void expect_said(const eo_ctx *c, const char *what, const char *op, const char *detail)
{
    const char *msg = eo_last_error(c);
    ck_assert_msg(memchr(c->err, 0, sizeof c->err) != NULL, "%s: the message is unterminated",
                  what);
    size_t n = strlen(op);
    ck_assert_msg(strncmp(msg, op, n) == 0 && msg[n] == ':',
                  "%s: message \"%s\" does not start with \"%s:\"", what, msg, op);
    ck_assert_msg(!detail || strstr(msg, detail), "%s: message \"%s\" does not say \"%s\"",
                  what, msg, detail);
}

/* The state the library keeps between calls, misused in every way issue
 * reports found: each misuse is refused with its status and a
 * terminated message naming the call, and leaves the context as it was
 * (or, where the call is a result and not an error, returns EO_OK). */
START_TEST(state_misuse_is_refused_and_said)
{
    /* an init refused on a context that held anything before */
    static unsigned char pb[4096], sb[4096];
    eo_ctx c;
    memset(&c, 'x', sizeof c);
    ck_assert_int_eq(eo_ctx_init(&c, NULL, 1, sb, sizeof sb), EO_ERR_ARG);
    expect_said(&c, "ctx_init NULL persistent", "ctx_init", "persistent");
    memset(&c, 'x', sizeof c);
    ck_assert_int_eq(eo_ctx_init(&c, pb, sizeof pb, NULL, 0), EO_ERR_ARG);
    expect_said(&c, "ctx_init NULL step", "ctx_init", "step");
    ck_assert_int_eq(eo_ctx_init(NULL, pb, sizeof pb, sb, sizeof sb), EO_ERR_ARG);
    ck_assert_str_eq(eo_last_error(NULL), "no context");

    eo_ctx *ctx = ot_ctx;
    eo_params ps;
    int64_t two = 2;
    eo_tensor *w, *y, *L;
    ck_assert_int_eq(eo_params_init(ctx, &ps, 1), EO_OK);
    ck_assert_int_eq(eo_param_new(ctx, EO_CPU, "w", 1, &two, &w), EO_OK);
    ck_assert_int_eq(eo_params_add(ctx, &ps, w), EO_OK);
    ck_assert_int_eq(eo_fill(ctx, w, 1.0f), EO_OK);

    /* a hook's message without its NUL: cut at the buffer's end */
    eo_grad_sync hook = { unterminated_hook, NULL };
    eo_ctx_set_grad_sync(ctx, hook);
    ck_assert_int_eq(eo_grad_allreduce(ctx, &ps), EO_ERR_DEVICE);
    expect_said(ctx, "allreduce hook", "grad_allreduce", NULL);
    const char *as = strchr(eo_last_error(ctx), 'A');
    ck_assert_ptr_nonnull(as);
    ck_assert_uint_eq(strspn(as, "A"), 255);
    ck_assert_int_eq(as[255], 0);
    eo_grad_sync none = { NULL, NULL };
    eo_ctx_set_grad_sync(ctx, none);

    /* a stale mark: refused, nothing moved */
    eo_mark outer = eo_mark_get(ctx);
    ck_assert_int_eq(eo_mul(ctx, w, w, &y), EO_OK);
    eo_mark inner = eo_mark_get(ctx);
    ck_assert_int_eq(eo_sum_all(ctx, y, &L), EO_OK);
    ck_assert_int_eq(eo_rewind(ctx, outer), EO_OK);
    snapshot before = snap(ctx);
    ck_assert_int_eq(eo_rewind(ctx, inner), EO_ERR_STATE);
    expect_said(ctx, "stale mark", "rewind", "stale");
    expect_unchanged("stale mark", ctx, before);

    /* backward twice: refused, the leaves' gradients as they were */
    ck_assert_int_eq(eo_mul(ctx, w, w, &y), EO_OK);
    ck_assert_int_eq(eo_sum_all(ctx, y, &L), EO_OK);
    ck_assert_int_eq(eo_backward(ctx, L), EO_OK);
    float g0 = ((float *)w->grad->data)[0];
    before = snap(ctx);
    ck_assert_int_eq(eo_backward(ctx, L), EO_ERR_STATE);
    expect_said(ctx, "backward twice", "backward", "second");
    expect_unchanged("backward twice", ctx, before);
    ck_assert_float_eq(((float *)w->grad->data)[0], g0);

    /* optimizers: a list not made by eo_params_init, refused by every init */
    eo_params junk = { NULL, 2, 2, 0 };
    eo_optimizer o;
    before = snap(ctx);
    ck_assert_int_eq(eo_sgd_init(ctx, &o, &junk, 0.1f, 0.0f, 0.0f, 0), EO_ERR_ARG);
    expect_said(ctx, "sgd_init junk list", "sgd_init", "parameter list");
    ck_assert_int_eq(eo_adamw_init(ctx, &o, &junk, 0.1f, 0.9f, 0.999f, 1e-8f, 0.0f),
                     EO_ERR_ARG);
    expect_said(ctx, "adamw_init junk list", "adamw_init", "parameter list");
    ck_assert_int_eq(eo_adamw_init_shard(ctx, &o, &junk, 0.1f, 0.9f, 0.999f, 1e-8f, 0.0f, 0, 1),
                     EO_ERR_ARG);
    expect_said(ctx, "adamw_init_shard junk list", "adamw_init_shard", "parameter list");
    expect_unchanged("optimizer inits", ctx, before);
    ck_assert_int_eq(eo_optimizer_step(ctx, &o), EO_ERR_STATE);

    /* a scaler whose optimizer step failed: the retry runs */
    eo_grad_scaler sc;
    ck_assert_int_eq(eo_sgd_init(ctx, &o, &ps, 0.1f, 0.0f, 0.0f, 0), EO_OK);
    ck_assert_int_eq(eo_grad_scaler_init(ctx, &sc, 1), EO_OK);
    o.lr = -1.0f;
    ck_assert_int_eq(eo_grad_scaler_step(ctx, &sc, &o, NULL), EO_ERR_ARG);
    expect_said(ctx, "scaler step, optimizer refused", "grad_scaler_step", "lr");
    o.lr = 0.1f;
    ck_assert_int_eq(eo_grad_scaler_step(ctx, &sc, &o, NULL), EO_OK);
    ck_assert_int_eq(eo_grad_scaler_update(ctx, &sc), EO_OK);

    /* a non-finite gradient norm is a result unless asked to be an error */
    float norm;
    ((float *)w->grad->data)[1] = INFINITY;
    ck_assert_int_eq(eo_clip_grad_norm_ex(ctx, &ps, 1.0f, 1, &norm), EO_ERR_NUMERIC);
    expect_said(ctx, "clip non-finite, error_if_nonfinite", "clip_grad_norm_ex", "inf");
    ck_assert_int_eq(eo_clip_grad_norm(ctx, &ps, 1.0f, &norm), EO_OK);
    ck_assert(isinf(norm));
    ck_assert_int_eq(eo_rewind(ctx, outer), EO_OK);
}
END_TEST

/* Issue 26, item 8: a call that walks a parameter list or is handed a
 * tensor touches its device memory; a CUDA tensor of an attach that has
 * ended (here made by hand: a CPU-only context, whose CUDA backend is
 * also missing) is EO_ERR_STATE from every such entry point, naming it,
 * and nothing changes -- before, the optimizer, zero_grad, clipping, the
 * scaler and refresh_low dereferenced the NULL backend and the
 * all-reduce gave the freed buffers to its hook with EO_OK. The same
 * calls run on the interpreter after a real detach in cuda_multi. */
static eo_status count_hook(void *user, const eo_grad_buffer *b, int n, char *msg, size_t len)
{
    (void)b; (void)n; (void)msg; (void)len;
    ++*(int *)user;
    return EO_OK;
}

START_TEST(stale_cuda_tensors_refused_everywhere)
{
    eo_params ps;
    eo_module lin;
    eo_optimizer sgd, adam;
    eo_grad_scaler sc;
    OT_OK(eo_params_init(ot_ctx, &ps, 4), "params");
    OT_OK(eo_linear_init(ot_ctx, &ps, EO_CPU, "l", 3, 2, 1, EO_INIT_KAIMING_UNIFORM, &lin), "lin");
    OT_OK(eo_sgd_init(ot_ctx, &sgd, &ps, 0.1f, 0.9f, 0, 0), "sgd");
    OT_OK(eo_adamw_init(ot_ctx, &adam, &ps, 0.1f, 0.9f, 0.999f, 1e-8f, 0), "adamw");
    OT_OK(eo_grad_scaler_init(ot_ctx, &sc, 1), "scaler");
    int calls = 0;
    eo_grad_sync hook = { count_hook, &calls };
    eo_ctx_set_grad_sync(ot_ctx, hook);
    /* Each of the three parts of a parameter the calls reach in turn:
     * the weight, its gradient, its 16-bit working copy. */
    eo_tensor *w = ps.items[0], *stale;
    OT_OK(eo_host_alloc(ot_ctx, EO_PERSIST, sizeof *stale, (void **)&stale), "header");
    for (int part = 0; part < 3; part++) {
        /* The optimizers keep their own copy of the list (the pointers),
         * so the weight is made stale in place and restored after. */
        eo_tensor keep_w = *w, *keep_g = w->grad, *keep_low = w->low;
        *stale = part == 1 ? *w->grad : *w;
        stale->device = EO_CUDA;
        stale->attach = ot_ctx->cuda_attach + 1;
        if (part == 0) {
            w->device = EO_CUDA;
            w->attach = ot_ctx->cuda_attach + 1;
        } else if (part == 1) {
            w->grad = stale;
        } else {
            w->low = stale;
        }
        REFUSED(eo_optimizer_step(ot_ctx, &sgd), EO_ERR_STATE, "optimizer_step", "eo_cuda_attach");
        REFUSED(eo_optimizer_step(ot_ctx, &adam), EO_ERR_STATE, "optimizer_step", "eo_cuda_attach");
        REFUSED(eo_params_zero_grad(ot_ctx, &ps), EO_ERR_STATE, "params_zero_grad", "eo_cuda_attach");
        float norm = -1;
        REFUSED(eo_clip_grad_norm(ot_ctx, &ps, 1.0f, &norm), EO_ERR_STATE, "clip_grad_norm",
                "eo_cuda_attach");
        REFUSED(eo_grad_scaler_unscale(ot_ctx, &sc, &ps), EO_ERR_STATE, "grad_scaler_unscale",
                "eo_cuda_attach");
        REFUSED(eo_params_refresh_low(ot_ctx, &ps), EO_ERR_STATE, "params_refresh_low",
                "eo_cuda_attach");
        REFUSED(eo_params_enable_low(ot_ctx, &ps, EO_BF16), EO_ERR_STATE, "params_enable_low",
                "eo_cuda_attach");
        REFUSED(eo_grad_allreduce(ot_ctx, &ps), EO_ERR_STATE, "grad_allreduce", "eo_cuda_attach");
        REFUSED(eo_weights_bind(ot_ctx, &ps, NULL, 0, EO_BIND_COPY), EO_ERR_STATE, "weights_bind",
                "eo_cuda_attach");
        ck_assert_int_eq(calls, 0);
        *w = keep_w;
        w->grad = keep_g;
        w->low = keep_low;
    }
    /* The tensor calls themselves. */
    *stale = *w;
    stale->device = EO_CUDA;
    stale->attach = ot_ctx->cuda_attach + 1;
    float buf[6] = { 0 };
    eo_tensor *y;
    REFUSED(eo_read(ot_ctx, stale, buf, sizeof buf), EO_ERR_STATE, "read", "eo_cuda_attach");
    REFUSED(eo_write(ot_ctx, stale, buf, sizeof buf), EO_ERR_STATE, "write", "eo_cuda_attach");
    REFUSED(eo_fill(ot_ctx, stale, 1.0f), EO_ERR_STATE, "fill", "eo_cuda_attach");
    REFUSED(eo_to_device(ot_ctx, stale, EO_CPU, EO_STEP, &y), EO_ERR_STATE, "to_device",
            "eo_cuda_attach");
    REFUSED(eo_init_param(ot_ctx, stale, 0.1f, 0), EO_ERR_STATE, "init_param", "eo_cuda_attach");
    REFUSED(eo_set_requires_grad(ot_ctx, stale, 1), EO_ERR_STATE, "set_requires_grad",
            "eo_cuda_attach");
    /* The list still works once it holds live tensors again. */
    OT_OK(eo_params_zero_grad(ot_ctx, &ps), "zero_grad after");
    OT_OK(eo_optimizer_step(ot_ctx, &adam), "step after");
    eo_grad_sync none = { NULL, NULL };
    eo_ctx_set_grad_sync(ot_ctx, none);
}
END_TEST

START_TEST(null_ctx_everywhere)
{
    /* Every public call outside the op table (part 3 covers the ops):
     * a NULL context returns EO_ERR_ARG, or does nothing, never crashes. */
    int64_t s[2] = { 2, 3 };
    eo_tensor *x = ot_rand(2, s, -1, 1, 1), *y;
    eo_params ps;
    eo_module m = eo_relu_module();
    eo_sequential seq;
    eo_optimizer o;
    eo_block b;
    eo_gpt g;
    eo_vit v;
    eo_gpt_config gc = { 4, 4, 4, 1, 1, 0 };
    eo_vit_config vc = { 4, 2, 4, 1, 1, 2 };
    float buf[6];
    uint8_t valid[4] = { 1, 1, 1, 1 };
    OT_OK(eo_params_init(ot_ctx, &ps, 4), "params");
    OT_OK(eo_sequential_init(ot_ctx, &seq, 2), "sequential");
    OT_OK(eo_sgd_init(ot_ctx, &o, &ps, 0.1f, 0, 0, 0), "sgd");
    OT_OK(eo_block_init(ot_ctx, NULL, EO_CPU, "b", 4, 1, 0, &b), "block");
    const eo_status all[] = {
        eo_ctx_init(NULL, buf, 4, buf, 4),
        eo_tensor_new(NULL, EO_STEP, EO_CPU, EO_F32, 2, s, &y),
        eo_tensor_zeros(NULL, EO_STEP, EO_CPU, EO_F32, 2, s, &y),
        eo_tensor_wrap(NULL, EO_F32, 2, s, buf, &y),
        eo_param_new(NULL, EO_CPU, "p", 2, s, &y),
        eo_to_device(NULL, x, EO_CPU, EO_STEP, &y),
        eo_to_host(NULL, x, EO_STEP, &y),
        eo_read(NULL, x, buf, sizeof buf),
        eo_write(NULL, x, buf, sizeof buf),
        eo_fill(NULL, x, 1.0f),
        eo_causal_mask(NULL, EO_CPU, 3, &y),
        eo_padding_mask(NULL, EO_CPU, 1, 4, valid, &y),
        eo_backward(NULL, x),
        eo_backward_ex(NULL, x, 1),
        eo_rewind(NULL, eo_mark_get(NULL)),
        eo_cuda_attach(NULL, NULL, 0, 1024, 1024),
        eo_params_init(NULL, &ps, 4),
        eo_params_add(NULL, &ps, x),
        eo_params_zero_grad(NULL, &ps),
        eo_param_named(NULL, &ps, EO_CPU, "a", "b", 2, s, &y),
        eo_init_param(NULL, x, 1.0f, 0),
        eo_linear_init(NULL, &ps, EO_CPU, "l", 2, 3, 1, EO_INIT_KAIMING_UNIFORM, &m),
        eo_conv2d_init(NULL, &ps, EO_CPU, "c", 1, 2, 3, 1, 1, &m),
        eo_layernorm_init(NULL, &ps, EO_CPU, "n", 3, 1e-5f, &m),
        eo_module_forward(NULL, &m, x, &y),
        eo_sequential_init(NULL, &seq, 2),
        eo_sequential_add(NULL, &seq, m),
        eo_sequential_forward(NULL, &seq, x, &y),
        eo_sgd_init(NULL, &o, &ps, 0.1f, 0, 0, 0),
        eo_adamw_init(NULL, &o, &ps, 0.1f, 0.9f, 0.999f, 1e-8f, 0),
        eo_optimizer_step(NULL, &o),
        eo_clip_grad_norm(NULL, &ps, 1.0f, NULL),
        eo_clip_grad_norm_ex(NULL, &ps, 1.0f, 1, NULL),
        eo_block_init(NULL, &ps, EO_CPU, "b", 4, 1, 0, &b),
        eo_mha_forward(NULL, &b.attn, x, &y),
        eo_block_forward(NULL, &b, x, &y),
        eo_gpt_build(NULL, EO_CPU, &gc, &g),
        eo_gpt_forward(NULL, &g, x, &y),
        eo_gpt_loss(NULL, &g, x, x, NULL, &y),
        eo_vit_build(NULL, EO_CPU, &vc, &v),
        eo_vit_forward(NULL, &v, x, &y),
    };
    for (int i = 0; i < (int)(sizeof all / sizeof all[0]); i++)
        ck_assert_msg(all[i] == EO_ERR_ARG, "call %d with a NULL ctx returned %s", i,
                      eo_status_name(all[i]));
    /* The calls that return no status do nothing. */
    eo_ctx_set_parallel(NULL, (eo_par){ 0 });
    eo_seed(NULL, 1);
    ck_assert_uint_eq(eo_rand_u32(NULL), 0);
    ck_assert_float_eq(eo_rand_uniform(NULL), 0.0f);
    ck_assert_float_eq(eo_rand_normal(NULL), 0.0f);
    ck_assert_int_eq(eo_set_grad(NULL, 1), 0);
    ck_assert_int_eq(eo_set_training(NULL, 1), 0);
    eo_cuda_detach(NULL);
    ck_assert_str_eq(eo_cuda_device_name(NULL), "");
    ck_assert_str_eq(eo_last_error(NULL), "no context");
    ck_assert_int_eq(eo_numel(NULL), 0);
    ck_assert_int_eq(eo_is_contiguous(NULL), 0);
    ck_assert_int_eq(eo_params_numel(NULL), 0);
    ck_assert_ptr_null(eo_params_find(NULL, "x"));
    ck_assert_float_eq(eo_lr_at(NULL, 3), 0.0f);
    eo_gpt_set_fused(NULL, 1);
    eo_vit_set_fused(NULL, 1);
}
END_TEST

/* ======================================================================
 * 3. the op sweep
 * ==================================================================== */

typedef eo_status (*sweep_fn)(eo_ctx *ctx, eo_tensor *const *in, eo_tensor **out);

#define MAX_IN 3
typedef struct sweep_op {
    const char *name;           /* the public call: a failure's message starts "name:" */
    eo_op_id covers;            /* the ops.def line it exercises */
    sweep_fn run;
    int n_in;
    int rank[MAX_IN];
    int64_t shape[MAX_IN][4];
    uint8_t i32[MAX_IN];        /* holds small valid indices */
    uint8_t optional[MAX_IN];   /* NULL means "none", not an error */
    float lo, hi;               /* f32 values (0, 0: [-1, 1)) */
    eo_status wrong_dtype;      /* an input of the other dtype (0: EO_ERR_DTYPE, ANY: EO_OK) */
    eo_status rank0;            /* input 0 a scalar */
    eo_status empty;            /* input 0 with axis 0 of size 0 */
    eo_status nan;              /* input 0 holding NaN and ±inf */
} sweep_op;

#define IN in[0]
static eo_status s_reshape(eo_ctx *c, eo_tensor *const *in, eo_tensor **o) { int64_t s = -1; return eo_reshape(c, IN, 1, &s, o); }
static eo_status s_permute(eo_ctx *c, eo_tensor *const *in, eo_tensor **o) { int p[2] = { 1, 0 }; return eo_permute(c, IN, p, o); }
static eo_status s_transpose(eo_ctx *c, eo_tensor *const *in, eo_tensor **o) { return eo_transpose(c, IN, 0, 1, o); }
static eo_status s_slice(eo_ctx *c, eo_tensor *const *in, eo_tensor **o) { return eo_slice(c, IN, 1, 1, 3, o); }
static eo_status s_contig(eo_ctx *c, eo_tensor *const *in, eo_tensor **o) { return eo_contiguous(c, IN, o); }
static eo_status s_concat(eo_ctx *c, eo_tensor *const *in, eo_tensor **o) { return eo_concat(c, in, 2, 1, o); }
static eo_status s_add(eo_ctx *c, eo_tensor *const *in, eo_tensor **o) { return eo_add(c, IN, in[1], o); }
static eo_status s_sub(eo_ctx *c, eo_tensor *const *in, eo_tensor **o) { return eo_sub(c, IN, in[1], o); }
static eo_status s_mul(eo_ctx *c, eo_tensor *const *in, eo_tensor **o) { return eo_mul(c, IN, in[1], o); }
static eo_status s_div(eo_ctx *c, eo_tensor *const *in, eo_tensor **o) { return eo_div(c, IN, in[1], o); }
static eo_status s_maximum(eo_ctx *c, eo_tensor *const *in, eo_tensor **o) { return eo_maximum(c, IN, in[1], o); }
static eo_status s_minimum(eo_ctx *c, eo_tensor *const *in, eo_tensor **o) { return eo_minimum(c, IN, in[1], o); }
static eo_status s_scale(eo_ctx *c, eo_tensor *const *in, eo_tensor **o) { return eo_scale(c, IN, -1.5f, o); }
static eo_status s_relu(eo_ctx *c, eo_tensor *const *in, eo_tensor **o) { return eo_relu(c, IN, o); }
static eo_status s_gelu(eo_ctx *c, eo_tensor *const *in, eo_tensor **o) { return eo_gelu(c, IN, o); }
static eo_status s_gelu_erf(eo_ctx *c, eo_tensor *const *in, eo_tensor **o) { return eo_gelu_erf(c, IN, o); }
static eo_status s_tanh(eo_ctx *c, eo_tensor *const *in, eo_tensor **o) { return eo_tanh(c, IN, o); }
static eo_status s_sigmoid(eo_ctx *c, eo_tensor *const *in, eo_tensor **o) { return eo_sigmoid(c, IN, o); }
static eo_status s_exp(eo_ctx *c, eo_tensor *const *in, eo_tensor **o) { return eo_exp(c, IN, o); }
static eo_status s_log(eo_ctx *c, eo_tensor *const *in, eo_tensor **o) { return eo_log(c, IN, o); }
static eo_status s_matmul(eo_ctx *c, eo_tensor *const *in, eo_tensor **o) { return eo_matmul(c, IN, in[1], 0, 1, o); }
static eo_status s_sum(eo_ctx *c, eo_tensor *const *in, eo_tensor **o) { return eo_sum(c, IN, 1, 0, o); }
static eo_status s_mean(eo_ctx *c, eo_tensor *const *in, eo_tensor **o) { return eo_mean(c, IN, -1, 1, o); }
static eo_status s_max(eo_ctx *c, eo_tensor *const *in, eo_tensor **o) { return eo_max(c, IN, 1, 0, o); }
static eo_status s_logsumexp(eo_ctx *c, eo_tensor *const *in, eo_tensor **o) { return eo_logsumexp(c, IN, 1, 0, o); }
static eo_status s_sum_all(eo_ctx *c, eo_tensor *const *in, eo_tensor **o) { return eo_sum_all(c, IN, o); }
static eo_status s_softmax(eo_ctx *c, eo_tensor *const *in, eo_tensor **o) { return eo_softmax(c, IN, o); }
static eo_status s_log_softmax(eo_ctx *c, eo_tensor *const *in, eo_tensor **o) { return eo_log_softmax(c, IN, o); }
static eo_status s_ce(eo_ctx *c, eo_tensor *const *in, eo_tensor **o) { return eo_cross_entropy(c, IN, in[1], -100, o); }
static eo_status s_ln(eo_ctx *c, eo_tensor *const *in, eo_tensor **o) { return eo_layernorm(c, IN, in[1], in[2], 1e-5f, o); }
static eo_status s_emb(eo_ctx *c, eo_tensor *const *in, eo_tensor **o) { return eo_embedding(c, IN, in[1], o); }
static eo_status s_drop(eo_ctx *c, eo_tensor *const *in, eo_tensor **o) { return eo_dropout(c, IN, 0.25f, 9, o); }
static eo_status s_conv(eo_ctx *c, eo_tensor *const *in, eo_tensor **o) { return eo_conv2d(c, IN, in[1], in[2], 1, 1, o); }
static eo_status s_pool(eo_ctx *c, eo_tensor *const *in, eo_tensor **o) { return eo_maxpool2d(c, IN, 2, o); }
static eo_status s_relu_pool(eo_ctx *c, eo_tensor *const *in, eo_tensor **o) { return eo_relu_maxpool2d(c, IN, 2, o); }
static eo_status s_attn(eo_ctx *c, eo_tensor *const *in, eo_tensor **o) { return eo_attention(c, IN, in[1], in[2], NULL, 1, 0.5f, o); }
static eo_status s_cast(eo_ctx *c, eo_tensor *const *in, eo_tensor **o)
{
    return eo_cast(c, IN, EO_F16, o);
}
static eo_status s_attn_fused(eo_ctx *c, eo_tensor *const *in, eo_tensor **o) { return eo_attention_fused(c, IN, in[1], in[2], NULL, 1, 0.5f, o); }

#define OK_ EO_OK
#define ANY EO_STATUS_COUNT /* wrong_dtype: every dtype is fine */
#define SH EO_ERR_SHAPE
#define AX EO_ERR_AXIS
/* name, covers, run, n_in, ranks, shapes, i32, optional, lo, hi,
 * wrong dtype, rank 0, empty, nan */
static const sweep_op sweep_ops[] = {
    { "reshape", EO_OP_VIEW, s_reshape, 1, {2}, {{5, 7}}, {0}, {0}, 0, 0, ANY, OK_, OK_, OK_ },
    { "permute", EO_OP_VIEW, s_permute, 1, {2}, {{5, 7}}, {0}, {0}, 0, 0, ANY, OK_, OK_, OK_ },
    { "transpose", EO_OP_VIEW, s_transpose, 1, {2}, {{5, 7}}, {0}, {0}, 0, 0, ANY, AX, OK_, OK_ },
    { "slice", EO_OP_VIEW, s_slice, 1, {2}, {{5, 7}}, {0}, {0}, 0, 0, ANY, AX, OK_, OK_ },
    { "contiguous", EO_OP_COPY, s_contig, 1, {2}, {{5, 7}}, {0}, {0}, 0, 0, ANY, OK_, OK_, OK_ },
    { "concat", EO_OP_CONCAT, s_concat, 2, {2, 2}, {{5, 7}, {5, 2}}, {0}, {0}, 0, 0, SH, AX, SH, OK_ },
    { "add", EO_OP_ADD, s_add, 2, {2, 1}, {{5, 7}, {7}}, {0}, {0}, 0, 0, 0, OK_, OK_, OK_ },
    { "sub", EO_OP_SUB, s_sub, 2, {2, 2}, {{5, 7}, {1, 7}}, {0}, {0}, 0, 0, 0, OK_, OK_, OK_ },
    { "mul", EO_OP_MUL, s_mul, 2, {3, 2}, {{2, 5, 7}, {5, 7}}, {0}, {0}, 0, 0, 0, OK_, OK_, OK_ },
    { "maximum", EO_OP_MAXIMUM, s_maximum, 2, {3, 2}, {{2, 5, 7}, {5, 7}}, {0}, {0}, 0, 0, 0, OK_, OK_, OK_ },
    { "minimum", EO_OP_MINIMUM, s_minimum, 2, {3, 2}, {{2, 5, 7}, {5, 7}}, {0}, {0}, 0, 0, 0, OK_, OK_, OK_ },
    { "div", EO_OP_DIV, s_div, 2, {2, 2}, {{5, 7}, {5, 7}}, {0}, {0}, 1, 2, 0, OK_, SH, OK_ },
    { "scale", EO_OP_SCALE, s_scale, 1, {2}, {{5, 7}}, {0}, {0}, 0, 0, 0, OK_, OK_, OK_ },
    { "relu", EO_OP_RELU, s_relu, 1, {2}, {{5, 7}}, {0}, {0}, 0, 0, 0, OK_, OK_, OK_ },
    { "gelu", EO_OP_GELU, s_gelu, 1, {2}, {{5, 7}}, {0}, {0}, 0, 0, 0, OK_, OK_, OK_ },
    { "gelu_erf", EO_OP_GELU_ERF, s_gelu_erf, 1, {2}, {{5, 7}}, {0}, {0}, 0, 0, 0, OK_, OK_, OK_ },
    { "tanh", EO_OP_TANH, s_tanh, 1, {2}, {{5, 7}}, {0}, {0}, 0, 0, 0, OK_, OK_, OK_ },
    { "sigmoid", EO_OP_SIGMOID, s_sigmoid, 1, {2}, {{5, 7}}, {0}, {0}, 0, 0, 0, OK_, OK_, OK_ },
    { "exp", EO_OP_EXP, s_exp, 1, {2}, {{5, 7}}, {0}, {0}, 0, 0, 0, OK_, OK_, OK_ },
    { "log", EO_OP_LOG, s_log, 1, {2}, {{5, 7}}, {0}, {0}, 0.5f, 2, 0, OK_, OK_, EO_ERR_NUMERIC },
    { "matmul", EO_OP_MATMUL, s_matmul, 2, {3, 2}, {{2, 5, 7}, {3, 7}}, {0}, {0}, 0, 0, 0, AX, OK_, OK_ },
    { "sum", EO_OP_SUM, s_sum, 1, {2}, {{5, 7}}, {0}, {0}, 0, 0, 0, AX, OK_, OK_ },
    { "mean", EO_OP_MEAN, s_mean, 1, {3}, {{3, 5, 7}}, {0}, {0}, 0, 0, 0, AX, OK_, OK_ },
    { "max", EO_OP_MAX, s_max, 1, {2}, {{5, 7}}, {0}, {0}, 0, 0, 0, AX, OK_, OK_ },
    { "logsumexp", EO_OP_LOGSUMEXP, s_logsumexp, 1, {2}, {{5, 7}}, {0}, {0}, 0, 0, 0, AX, OK_, OK_ },
    { "sum_all", EO_OP_SUM, s_sum_all, 1, {2}, {{5, 7}}, {0}, {0}, 0, 0, 0, OK_, OK_, OK_ },
    { "softmax", EO_OP_SOFTMAX, s_softmax, 1, {2}, {{5, 7}}, {0}, {0}, 0, 0, 0, AX, OK_, OK_ },
    { "log_softmax", EO_OP_LOG_SOFTMAX, s_log_softmax, 1, {2}, {{5, 7}}, {0}, {0}, 0, 0, 0, AX, OK_, OK_ },
    { "cross_entropy", EO_OP_CROSS_ENTROPY, s_ce, 2, {2, 1}, {{5, 7}, {5}}, {0, 1}, {0}, 0, 0, 0, SH, SH, OK_ },
    { "layernorm", EO_OP_LAYERNORM, s_ln, 3, {2, 1, 1}, {{5, 7}, {7}, {7}}, {0}, {0, 1, 1}, 0, 0, 0, AX, OK_, OK_ },
    { "embedding", EO_OP_EMBEDDING, s_emb, 2, {2, 2}, {{5, 7}, {2, 3}}, {0, 1}, {0}, 0, 0, 0, SH, EO_ERR_ARG, OK_ },
    { "dropout", EO_OP_DROPOUT, s_drop, 1, {2}, {{5, 7}}, {0}, {0}, 0, 0, 0, OK_, OK_, OK_ },
    { "conv2d", EO_OP_IM2COL, s_conv, 3, {4, 4, 1}, {{2, 2, 5, 4}, {3, 2, 3, 3}, {3}}, {0}, {0, 0, 1}, 0, 0, 0, SH, OK_, OK_ },
    { "conv2d", EO_OP_CONV2D, s_conv, 3, {4, 4, 1}, {{2, 2, 5, 4}, {3, 2, 3, 3}, {3}}, {0}, {0, 0, 1}, 0, 0, 0, SH, OK_, OK_ },
    { "maxpool2d", EO_OP_MAXPOOL2D, s_pool, 1, {4}, {{2, 2, 5, 4}}, {0}, {0}, 0, 0, 0, SH, OK_, OK_ },
    { "relu_maxpool2d", EO_OP_RELU_MAXPOOL2D, s_relu_pool, 1, {4}, {{2, 2, 5, 4}}, {0}, {0}, 0, 0, 0, SH, OK_, OK_ },
    { "attention", EO_OP_SOFTMAX, s_attn, 3, {4, 4, 4}, {{1, 2, 5, 3}, {1, 2, 5, 3}, {1, 2, 5, 3}}, {0}, {0}, 0, 0, 0, SH, SH, OK_ },
    { "cast", EO_OP_CAST, s_cast, 1, {2}, {{5, 7}}, {0}, {0}, 0, 0, 0, OK_, OK_, OK_ },
    { "attention_fused", EO_OP_ATTENTION, s_attn_fused, 3, {4, 4, 4}, {{1, 2, 5, 3}, {1, 2, 5, 3}, {1, 2, 5, 3}}, {0}, {0}, 0, 0, 0, SH, SH, OK_ },
};
#define N_SWEEP ((int)(sizeof sweep_ops / sizeof sweep_ops[0]))

START_TEST(every_op_is_in_the_sweep)
{
    char missing[512] = "";
    size_t len = 0;
    for (int id = 0; id < EO_OP_COUNT; id++) {
        int found = 0;
        for (int i = 0; i < N_SWEEP; i++)
            found |= sweep_ops[i].covers == (eo_op_id)id;
        if (!found && len + 32 < sizeof missing)
            len += (size_t)snprintf(missing + len, sizeof missing - len, " %s", eo_op_names[id]);
    }
    ck_assert_msg(missing[0] == '\0', "ops.def lists ops the sweep does not try:%s", missing);
}
END_TEST

/* A fresh set of good inputs for op `so` (f32 ones require grad, so a
 * node wrongly left behind would show on the tape). */
static void good_inputs(const sweep_op *so, eo_tensor **in)
{
    float lo = so->lo, hi = so->hi;
    if (lo == 0 && hi == 0)
        lo = -1, hi = 1;
    for (int i = 0; i < so->n_in; i++) {
        if (so->i32[i]) {
            int32_t v[64];
            for (int j = 0; j < 64; j++)
                v[j] = j % 3;
            in[i] = ot_i32(so->rank[i], so->shape[i], v);
        } else {
            in[i] = eo_test_rand(ot_ctx, so->rank[i], so->shape[i], lo, hi, 31u + (unsigned)i, 1);
        }
    }
}

/* The same values as t, seen through a non-contiguous view: the last
 * two axes are stored swapped. */
static eo_tensor *non_contiguous(eo_tensor *t)
{
    if (t->rank < 2)
        return t;
    eo_tensor *a, *b, *c;
    int r = t->rank;
    int was = eo_set_grad(ot_ctx, 0);
    OT_OK(eo_transpose(ot_ctx, t, r - 2, r - 1, &a), "nc view");
    OT_OK(eo_contiguous(ot_ctx, a, &b), "nc copy");
    OT_OK(eo_transpose(ot_ctx, b, r - 2, r - 1, &c), "nc view back");
    eo_set_grad(ot_ctx, was);
    c->requires_grad = t->requires_grad;
    ck_assert(!eo_is_contiguous(c) || t->shape[r - 1] == 1 || t->shape[r - 2] == 1);
    return c;
}

/* A hand-made copy of t with the given rank (5: a tensor no API call can
 * make; 0: a scalar view of t's first element). */
static eo_tensor *with_rank(const eo_tensor *t, int rank)
{
    eo_tensor *c;
    OT_OK(eo_host_alloc(ot_ctx, EO_STEP, sizeof *c, (void **)&c), "copy");
    *c = *t;
    c->rank = rank;
    c->node = NULL;
    c->grad = NULL;
    return c;
}

/* One case: run, compare the status with the documented one, and on a
 * failure check the message and that nothing was left behind. Returns
 * the status so the caller can compare outputs on success. */
static eo_status one_case(const sweep_op *so, const char *what, eo_ctx *c, eo_tensor *const *in,
                          eo_tensor **out, eo_status want)
{
    snapshot before = snap(ot_ctx);
    eo_status st = so->run(c, in, out);
    char call[128];
    snprintf(call, sizeof call, "%s (%s)", so->name, what);
    if (c == NULL) { /* nowhere to put a message */
        ck_assert_msg(st == EO_ERR_ARG, "%s: returned %s", call, eo_status_name(st));
        return st;
    }
    if (want == EO_OK) {
        ck_assert_msg(st == EO_OK, "%s: returned %s (%s)", call, eo_status_name(st),
                      eo_last_error(ot_ctx));
        return st;
    }
    expect_refused(call, st, want, so->name, NULL, before);
    return st;
}

/* A NULL argument is reported as one (issue 26: eo_read's NULL dst was
 * "holds 48 bytes, asked for 48"), not as a fault found further on. */
static void expect_says_null(const char *op, const char *what)
{
    const char *msg = eo_last_error(ot_ctx);
    ck_assert_msg(strstr(msg, "NULL") != NULL, "%s (%s): the message \"%s\" does not say NULL", op,
                  what, msg);
}

START_TEST(op_sweep)
{
    const sweep_op *so = &sweep_ops[_i];
    eo_tensor *in[MAX_IN], *bad[MAX_IN], *y = NULL;
    good_inputs(so, in);
    /* The reference: the op on good inputs. */
    OT_OK(so->run(ot_ctx, in, &y), so->name);
    const double *ref = ot_get(y);
    const int64_t n = eo_numel(y);
    eo_mark start = eo_mark_get(ot_ctx);
    snapshot s0 = snap(ot_ctx);

    /* NULL ctx and NULL output pointer. */
    one_case(so, "NULL ctx", NULL, in, &y, EO_ERR_ARG);
    one_case(so, "NULL output pointer", ot_ctx, in, NULL, EO_ERR_ARG);
    expect_says_null(so->name, "NULL output pointer");
    for (int k = 0; k < so->n_in; k++) {
        char what[64];
        memcpy(bad, in, sizeof bad);
        /* NULL input k */
        bad[k] = NULL;
        snprintf(what, sizeof what, "NULL input %d", k);
        if (one_case(so, what, ot_ctx, bad, &y, so->optional[k] ? EO_OK : EO_ERR_ARG) != EO_OK)
            expect_says_null(so->name, what);
        eo_rewind(ot_ctx, start);
        /* the other dtype (i32 <-> f32), same shape */
        memcpy(bad, in, sizeof bad);
        static const int32_t zeros[256];
        ck_assert(eo_numel(in[k]) <= 256);
        bad[k] = so->i32[k] ? ot_rand(in[k]->rank, in[k]->shape, 0, 1, 3)
                            : ot_i32(in[k]->rank, in[k]->shape, zeros);
        snprintf(what, sizeof what, "input %d of dtype %s", k, eo_dtype_name(bad[k]->dtype));
        one_case(so, what, ot_ctx, bad, &y,
                 so->wrong_dtype == ANY ? EO_OK
                 : so->wrong_dtype      ? so->wrong_dtype
                                        : EO_ERR_DTYPE);
        eo_rewind(ot_ctx, start);
        /* rank 5: made by hand, refused before its shape is read */
        memcpy(bad, in, sizeof bad);
        bad[k] = with_rank(in[k], 5);
        snprintf(what, sizeof what, "input %d of rank 5", k);
        one_case(so, what, ot_ctx, bad, &y, EO_ERR_AXIS);
        eo_rewind(ot_ctx, start);
        /* a CUDA tensor of an attach that has ended (eo_cuda_detach; this
         * context never attached): refused as stale before anything reads
         * its data or asks for its device's backend (issue 26, item 8) */
        memcpy(bad, in, sizeof bad);
        bad[k] = with_rank(in[k], in[k]->rank);
        bad[k]->device = EO_CUDA;
        bad[k]->attach = ot_ctx->cuda_attach + 1;
        snprintf(what, sizeof what, "input %d a stale CUDA tensor", k);
        one_case(so, what, ot_ctx, bad, &y, EO_ERR_STATE);
        eo_rewind(ot_ctx, start);
        /* non-contiguous: the same numbers */
        if (!so->i32[k] && in[k]->rank >= 2) {
            memcpy(bad, in, sizeof bad);
            bad[k] = non_contiguous(in[k]);
            snprintf(what, sizeof what, "input %d non-contiguous", k);
            one_case(so, what, ot_ctx, bad, &y, EO_OK);
            ck_assert_int_eq(eo_numel(y), n);
            ot_expect_close(what, y, ref, 1e-6, 1e-6);
            eo_rewind(ot_ctx, start);
        }
    }
    /* Input 0: a scalar, an empty first axis, NaN and infinities. */
    memcpy(bad, in, sizeof bad);
    bad[0] = with_rank(in[0], 0);
    one_case(so, "input 0 of rank 0", ot_ctx, bad, &y, so->rank0);
    eo_rewind(ot_ctx, start);
    memcpy(bad, in, sizeof bad);
    bad[0] = with_rank(in[0], in[0]->rank);
    bad[0]->shape[0] = 0;
    one_case(so, "input 0 with an empty axis", ot_ctx, bad, &y, so->empty);
    eo_rewind(ot_ctx, start);
    if (!so->i32[0]) {
        memcpy(bad, in, sizeof bad);
        bad[0] = ot_rand(in[0]->rank, in[0]->shape, 0.5f, 1, 5);
        float *v = bad[0]->data;
        v[0] = NAN;
        v[1] = INFINITY;
        v[2] = -INFINITY;
        bad[0]->requires_grad = 1;
        one_case(so, "input 0 with NaN and ±inf", ot_ctx, bad, &y, so->nan);
        eo_rewind(ot_ctx, start);
    }
    /* No room at all in the step arena: every op needs some (its output's
     * metadata at least) unless it returns its input (contiguous). */
    {
        void *fill;
        OT_OK(eo_arena_alloc(&ot_ctx->step, eo_arena_remaining(&ot_ctx->step), 1, &fill), "fill");
        snapshot full = snap(ot_ctx);
        eo_status st = so->run(ot_ctx, in, &y);
        if (st != EO_OK) {
            expect_refused("no room in the step arena", st, EO_ERR_OOM, so->name, "need ", full);
        }
        eo_rewind(ot_ctx, start);
    }
    /* Afterwards the context is as it was and the op still works. */
    expect_unchanged(so->name, ot_ctx, s0);
    OT_OK(so->run(ot_ctx, in, &y), so->name);
    ot_expect_close(so->name, y, ref, 0, 0);
    ck_assert_int_eq(ot_ctx->grad_enabled, 1);
}
END_TEST

/* ======================================================================
 * 4. arena exhaustion through whole training steps
 * ==================================================================== */

typedef struct trainee {
    int kind;               /* 0: MLP, 1: transformer block, 2: the same, fused attention */
    eo_params ps;
    eo_sequential net;
    eo_block blk;
    eo_optimizer opt;
    eo_tensor *x, *t, *r;   /* inputs, in the persistent arena */
    float *init;            /* every parameter's starting values, in order */
    int64_t total;          /* their count */
} trainee;

static eo_tensor *persistent(eo_ctx *c, eo_dtype dt, int rank, const int64_t *shape, unsigned seed)
{
    eo_tensor *t;
    OT_OK(eo_tensor_new(c, EO_PERSIST, EO_CPU, dt, rank, shape, &t), "input");
    for (int64_t i = 0; i < eo_numel(t); i++) {
        seed = seed * 1664525u + 1013904223u;
        if (dt == EO_I32)
            ((int32_t *)t->data)[i] = (int32_t)((seed >> 16) % 3);
        else
            ((float *)t->data)[i] = (float)(seed >> 8) / 16777216.0f * 2.0f - 1.0f;
    }
    return t;
}

static void trainee_build(eo_ctx *c, int kind, trainee *m)
{
    memset(m, 0, sizeof *m);
    m->kind = kind;
    eo_seed(c, 7);
    OT_OK(eo_params_init(c, &m->ps, 16), "params");
    if (kind == 0) {
        eo_module l;
        int64_t sx[2] = { 5, 6 }, st = 5;
        OT_OK(eo_sequential_init(c, &m->net, 4), "sequential");
        OT_OK(eo_linear_init(c, &m->ps, EO_CPU, "0", 6, 8, 1, EO_INIT_KAIMING_UNIFORM, &l), "l0");
        OT_OK(eo_sequential_add(c, &m->net, l), "add");
        OT_OK(eo_sequential_add(c, &m->net, eo_relu_module()), "add");
        OT_OK(eo_linear_init(c, &m->ps, EO_CPU, "2", 8, 3, 1, EO_INIT_KAIMING_UNIFORM, &l), "l2");
        OT_OK(eo_sequential_add(c, &m->net, l), "add");
        m->x = persistent(c, EO_F32, 2, sx, 1);
        m->t = persistent(c, EO_I32, 1, &st, 2);
    } else {
        int64_t sx[3] = { 2, 3, 8 };
        OT_OK(eo_block_init(c, &m->ps, EO_CPU, "h.0", 8, 2, 1, &m->blk), "block");
        m->blk.attn.fused = kind == 2;
        m->x = persistent(c, EO_F32, 3, sx, 3);
        m->r = persistent(c, EO_F32, 3, sx, 4);
    }
    OT_OK(eo_adamw_init(c, &m->opt, &m->ps, 1e-2f, 0.9f, 0.999f, 1e-8f, 0.01f), "adamw");
    m->total = eo_params_numel(&m->ps);
    m->init = malloc(sizeof(float) * (size_t)m->total);
    ck_assert_ptr_nonnull(m->init);
    for (int i = 0, at = 0; i < m->ps.count; at += (int)eo_numel(m->ps.items[i]), i++)
        memcpy(m->init + at, m->ps.items[i]->data, sizeof(float) * (size_t)eo_numel(m->ps.items[i]));
}

/* Back to the state right after the build: a fresh run. */
static void trainee_reset(trainee *m)
{
    for (int i = 0, at = 0; i < m->ps.count; at += (int)eo_numel(m->ps.items[i]), i++) {
        size_t bytes = sizeof(float) * (size_t)eo_numel(m->ps.items[i]);
        memcpy(m->ps.items[i]->data, m->init + at, bytes);
        memset(m->opt.m[i]->data, 0, bytes);
        memset(m->opt.v[i]->data, 0, bytes);
    }
    m->opt.step = 0;
}

/* One call of the step: a failure must be OOM, name this call first and
 * leave the arenas and the tape as the call found them. */
static eo_status step_call(eo_ctx *c, const char *op, eo_status st, snapshot before)
{
    if (st == EO_OK)
        return st;
    const char *msg = eo_last_error(c);
    size_t n = strlen(op);
    ck_assert_msg(st == EO_ERR_OOM, "%s: %s (%s)", op, eo_status_name(st), msg);
    ck_assert_msg(strncmp(msg, op, n) == 0 && msg[n] == ':' && strstr(msg, "need ") != NULL,
                  "%s: OOM message \"%s\" does not start with the call or say what it needed",
                  op, msg);
    expect_unchanged(op, c, before);
    return st;
}

#define STEP_CALL(c, op, expr)                                                             \
    do {                                                                                   \
        snapshot b_ = snap(c);                                                             \
        eo_status s_ = step_call((c), (op), (expr), b_);                                   \
        if (s_ != EO_OK)                                                                   \
            return s_;                                                                     \
    } while (0)

static eo_status train_step(eo_ctx *c, trainee *m, float *loss)
{
    eo_tensor *y, *L;
    STEP_CALL(c, "params_zero_grad", eo_params_zero_grad(c, &m->ps));
    if (m->kind == 0) {
        STEP_CALL(c, "sequential_forward", eo_sequential_forward(c, &m->net, m->x, &y));
        STEP_CALL(c, "cross_entropy", eo_cross_entropy(c, y, m->t, -100, &L));
    } else {
        STEP_CALL(c, "block_forward", eo_block_forward(c, &m->blk, m->x, &y));
        STEP_CALL(c, "mul", eo_mul(c, y, m->r, &y));
        STEP_CALL(c, "sum_all", eo_sum_all(c, y, &L));
    }
    STEP_CALL(c, "backward", eo_backward(c, L));
    STEP_CALL(c, "clip_grad_norm", eo_clip_grad_norm(c, &m->ps, 0.5f, NULL));
    STEP_CALL(c, "optimizer_step", eo_optimizer_step(c, &m->opt));
    *loss = *(float *)L->data;
    return EO_OK;
}

/* Every parameter's values now, in order. */
static void params_now(const trainee *m, float *dst)
{
    for (int i = 0, at = 0; i < m->ps.count; at += (int)eo_numel(m->ps.items[i]), i++)
        memcpy(dst + at, m->ps.items[i]->data, sizeof(float) * (size_t)eo_numel(m->ps.items[i]));
}

START_TEST(oom_sweep_training_steps)
{
    static const char *const names[3] = { "MLP step", "block step", "fused block step" };
    eo_ctx *c = eo_test_ctx(1, 2);
    trainee m;
    trainee_build(c, _i, &m);
    float *ref = malloc(sizeof(float) * (size_t)m.total), *got = malloc(sizeof(float) * (size_t)m.total);
    ck_assert(ref && got);
    /* The fresh run: its loss, its parameters after the update. */
    float ref_loss, loss;
    eo_mark m0 = eo_mark_get(c);
    ck_assert_int_eq(train_step(c, &m, &ref_loss), EO_OK);
    params_now(&m, ref);
    eo_rewind(c, m0);
    int ooms = 0, oks = 0;
    for (size_t k = 0; oks < 3; k += 16) {
        ck_assert_msg(k < (1u << 20), "%s: never succeeded", names[_i]);
        trainee_reset(&m);
        eo_mark mk = eo_mark_get(c);
        void *fill;
        ck_assert_int_eq(eo_arena_alloc(&c->step, eo_arena_remaining(&c->step) - k, 1, &fill),
                         EO_OK);
        eo_status st = train_step(c, &m, &loss);
        eo_rewind(c, mk);
        if (st == EO_OK) {
            oks++;
        } else {
            ooms++;
            ck_assert_int_eq(c->grad_enabled, 1);
            /* The next step with room gives the fresh run's numbers. */
            trainee_reset(&m);
            ck_assert_int_eq(train_step(c, &m, &loss), EO_OK);
            eo_rewind(c, mk);
        }
        params_now(&m, got);
        ck_assert_msg(loss == ref_loss, "%s with %zu bytes: loss %.9g, fresh run %.9g", names[_i],
                      k, (double)loss, (double)ref_loss);
        ck_assert_msg(memcmp(got, ref, sizeof(float) * (size_t)m.total) == 0,
                      "%s with %zu bytes: parameters differ from a fresh run", names[_i], k);
    }
    ck_assert_msg(ooms > 10, "%s: only %d allocation points failed", names[_i], ooms);
    free(ref);
    free(got);
    free(m.init);
    eo_test_ctx_free(c);
}
END_TEST

Suite *eo_suite_sweep(void)
{
    Suite *s = suite_create("sweep");
    TCase *tc = tcase_create("regressions");
    tcase_add_checked_fixture(tc, ot_setup, ot_teardown);
    tcase_add_test(tc, checked_helpers);
    tcase_add_test(tc, null_ctx_everywhere);
    tcase_add_test(tc, cuda_attach_failure_gives_back);
    tcase_add_test(tc, stale_cuda_tensors_refused_everywhere);
    tcase_add_test(tc, slice_bounds_do_not_wrap);
    tcase_add_test(tc, reshape_product_does_not_wrap);
    tcase_add_test(tc, tensor_bytes_do_not_wrap);
    tcase_add_test(tc, conv_and_pool_sizes_do_not_wrap);
    tcase_add_test(tc, output_sizes_do_not_wrap);
    tcase_add_test(tc, model_builders_refuse_products_that_wrap);
    tcase_add_test(tc, failed_inits_give_back_and_refuse_use);
    tcase_add_test(tc, builds_under_persistent_exhaustion);
    tcase_add_test(tc, hyper_parameters_are_checked);
    tcase_add_test(tc, messages_name_the_call_and_failed_composites_leave_nothing);
    tcase_add_test(tc, state_misuse_is_refused_and_said);
    suite_add_tcase(s, tc);
    tc = tcase_create("ops");
    tcase_add_checked_fixture(tc, ot_setup, ot_teardown);
    tcase_add_test(tc, every_op_is_in_the_sweep);
    tcase_add_loop_test(tc, op_sweep, 0, N_SWEEP);
    suite_add_tcase(s, tc);
    tc = tcase_create("oom_steps");
    tcase_add_loop_test(tc, oom_sweep_training_steps, 0, 3);
    tcase_set_timeout(tc, 60);
    suite_add_tcase(s, tc);
    return s;
}
