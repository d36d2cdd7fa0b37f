/* tests/test_cuda_ops.c — the CUDA backend through the public API: the
 * same ops and the same training step on EO_CPU and on EO_CUDA tensors,
 * compared value by value (outputs and every gradient).
 *
 * Without a GPU (always, in CI) the device is the PTX interpreter behind
 * the driver-API double (tools/ptxsim/driver.h): the real host code —
 * eo_cuda_attach, the device arenas, every launcher — runs, and every PTX
 * instruction executes on the CPU under the interpreter's memory, race and
 * barrier checks. With EO_TEST_CUDA=real the same tests use the machine's
 * GPU through libcuda.so.1 (`make test-cuda`). */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/everyo.h"
#include "core/internal.h" /* EO_OP_COUNT and the op names, for the table */
#include "core/nn.h"
#include "ops/cuda/driver.h"
#include "tests/gradcheck.h"
#include "tools/ptxsim/driver.h"
#include "tools/bench/bench_gpu.h"
#include "core/transformer.h"
#include "tools/train/textlm.h"
#include "tools/train/trainer.h"
#include "tests/tmpdir.h"

static eo_cuda_driver D;

/* A context with CUDA attached (interpreter or real GPU). */
static eo_ctx *cuda_ctx(void) { return eo_test_cuda_ctx(4, 16); }
static void close_ctx(eo_ctx *ctx) { eo_test_cuda_ctx_free(ctx); }

/* A CPU tensor's copy on the device, requiring grad like the original. */
static eo_tensor *to_cuda(eo_ctx *ctx, eo_tensor *x)
{
    eo_tensor *y;
    ck_assert_int_eq(eo_to_device(ctx, x, EO_CUDA, EO_STEP, &y), EO_OK);
    y->requires_grad = x->requires_grad;
    return y;
}

static void expect_close(eo_ctx *ctx, const char *what, eo_tensor *cpu, eo_tensor *dev, double tol)
{
    int64_t n = eo_numel(cpu);
    ck_assert_int_eq(eo_numel(dev), n);
    float *h = malloc(sizeof(float) * (size_t)(n ? n : 1));
    eo_tensor *c = dev;
    ck_assert_int_eq(eo_contiguous(ctx, dev, &c), EO_OK);
    ck_assert_msg(eo_read(ctx, c, h, (size_t)n * 4) == EO_OK, "%s: %s", what, eo_last_error(ctx));
    eo_tensor *cc = cpu;
    ck_assert_int_eq(eo_contiguous(ctx, cpu, &cc), EO_OK);
    const float *r = cc->data;
    for (int64_t i = 0; i < n; i++)
        ck_assert_msg(fabs((double)h[i] - r[i]) <= tol * (1.0 + fabs(r[i])),
                      "%s[%lld]: cuda %.7g vs cpu %.7g", what, (long long)i, h[i], r[i]);
    free(h);
}

/* f builds an output from two F32 inputs; run it on both devices with a
 * weighted-sum loss, compare the output and both input gradients. */
typedef eo_status (*two_in)(eo_ctx *, eo_tensor *, eo_tensor *, eo_tensor **);

static void compare(const char *name, two_in f, int ra, const int64_t *sa, int rb,
                    const int64_t *sb)
{
    eo_ctx *ctx = cuda_ctx();
    eo_tensor *a = eo_test_rand(ctx, ra, sa, -1.5f, 1.5f, 11, 1);
    eo_tensor *b = eo_test_rand(ctx, rb, sb, 0.5f, 1.5f, 12, 1);
    eo_tensor *da = to_cuda(ctx, a), *db = to_cuda(ctx, b);
    eo_tensor *y, *dy, *r, *dr, *L, *dL, *p, *dp;
    ck_assert_msg(f(ctx, a, b, &y) == EO_OK, "%s cpu: %s", name, eo_last_error(ctx));
    ck_assert_msg(f(ctx, da, db, &dy) == EO_OK, "%s cuda: %s", name, eo_last_error(ctx));
    expect_close(ctx, name, y, dy, 2e-5);
    /* L = sum(y * r): every output element gets a different weight. */
    r = eo_test_rand(ctx, y->rank, y->shape, 0.5f, 1.5f, 13, 0);
    dr = to_cuda(ctx, r);
    ck_assert_int_eq(eo_mul(ctx, y, r, &p), EO_OK);
    ck_assert_int_eq(eo_sum_all(ctx, p, &L), EO_OK);
    ck_assert_int_eq(eo_mul(ctx, dy, dr, &dp), EO_OK);
    ck_assert_int_eq(eo_sum_all(ctx, dp, &dL), EO_OK);
    ck_assert_int_eq(eo_backward(ctx, L), EO_OK);
    ck_assert_msg(eo_backward(ctx, dL) == EO_OK, "%s cuda backward: %s", name, eo_last_error(ctx));
    char what[64];
    eo_tensor *cg[2] = { a->grad, b->grad }, *dg[2] = { da->grad, db->grad };
    for (int i = 0; i < 2; i++) {
        snprintf(what, sizeof what, "%s d%c", name, "ab"[i]);
        ck_assert_msg((cg[i] == NULL) == (dg[i] == NULL), "%s: gradient on one device only", what);
        if (cg[i])
            expect_close(ctx, what, cg[i], dg[i], 1e-4);
    }
    close_ctx(ctx);
}

static eo_status f_matmul(eo_ctx *c, eo_tensor *a, eo_tensor *b, eo_tensor **y) { return eo_matmul(c, a, b, 0, 1, y); }
static eo_status f_bcast(eo_ctx *c, eo_tensor *a, eo_tensor *b, eo_tensor **y)
{
    eo_tensor *t;
    eo_status s = eo_div(c, a, b, &t);
    return s ? s : eo_gelu(c, t, y);
}
static eo_status f_softmax(eo_ctx *c, eo_tensor *a, eo_tensor *b, eo_tensor **y)
{
    eo_tensor *t;
    eo_status s = eo_mul(c, a, b, &t);
    return s ? s : eo_log_softmax(c, t, y);
}
static eo_status f_layernorm(eo_ctx *c, eo_tensor *a, eo_tensor *b, eo_tensor **y) { return eo_layernorm(c, a, b, NULL, 1e-5f, y); }
static eo_status f_reduce(eo_ctx *c, eo_tensor *a, eo_tensor *b, eo_tensor **y)
{
    eo_tensor *t, *u;
    eo_status s = eo_add(c, a, b, &t);
    if (!s) s = eo_max(c, t, 1, 1, &u);
    if (!s) s = eo_sub(c, t, u, &t);
    return s ? s : eo_mean(c, t, 0, 0, y);
}
static eo_status f_transpose(eo_ctx *c, eo_tensor *a, eo_tensor *b, eo_tensor **y)
{
    eo_tensor *t;
    eo_status s = eo_transpose(c, a, 0, 1, &t); /* non-contiguous: the backend copies */
    return s ? s : eo_matmul(c, t, b, 0, 0, y);
}

START_TEST(ops_match_cpu)
{
    int64_t a[2] = { 5, 33 }, w[2] = { 17, 33 }, row[1] = { 33 }, col[2] = { 5, 1 }, t[2] = { 5, 7 };
    compare("matmul(a, wT)", f_matmul, 2, a, 2, w);
    compare("gelu(a / col)", f_bcast, 2, a, 2, col);
    compare("log_softmax(a * row)", f_softmax, 2, a, 1, row);
    compare("layernorm(a, w)", f_layernorm, 2, a, 1, row);
    compare("mean(a + col - max)", f_reduce, 2, a, 2, col);
    compare("transpose(a) · b", f_transpose, 2, a, 2, t);
}
END_TEST

/* ---- every op the CUDA backend claims, CPU vs CUDA ----------------------
 * One entry per line of core/ops.def; a test fails if an op is missing,
 * so a new op must say how it is checked on the device. Inputs: a in
 * [-1.5, 1.5), b in [0.5, 1.5) (positive, for log and div), both
 * requiring grad; integer inputs are made inside the function. */

/* An int32 tensor on a's device. */
static eo_tensor *ints(eo_ctx *c, const eo_tensor *like, int n, const int32_t *v)
{
    eo_tensor *t;
    int64_t s[1] = { n };
    ck_assert_int_eq(eo_tensor_wrap(c, EO_I32, 1, s, (void *)v, &t), EO_OK);
    if (like->device != EO_CPU)
        ck_assert_int_eq(eo_to_device(c, t, like->device, EO_STEP, &t), EO_OK);
    return t;
}

#define UNARY(fname, call) \
    static eo_status fname(eo_ctx *c, eo_tensor *a, eo_tensor *b, eo_tensor **y) { (void)b; return call; }
UNARY(o_scale, eo_scale(c, a, -0.7f, y))
UNARY(o_relu, eo_relu(c, a, y))
UNARY(o_gelu, eo_gelu(c, a, y))
UNARY(o_gelu_erf, eo_gelu_erf(c, a, y))
UNARY(o_tanh, eo_tanh(c, a, y))
UNARY(o_sigmoid, eo_sigmoid(c, a, y))
UNARY(o_exp, eo_exp(c, a, y))
UNARY(o_softmax, eo_softmax(c, a, y))
UNARY(o_log_softmax, eo_log_softmax(c, a, y))
UNARY(o_sum, eo_sum(c, a, 0, 0, y))
UNARY(o_mean, eo_mean(c, a, 1, 1, y))
UNARY(o_max, eo_max(c, a, 1, 0, y))
UNARY(o_logsumexp, eo_logsumexp(c, a, 1, 1, y))
UNARY(o_dropout, eo_dropout(c, a, 0.3f, 99, y))
UNARY(o_copy, eo_transpose(c, a, 0, 1, y) ? EO_ERR_STATE : eo_contiguous(c, *y, y))
UNARY(o_pool, eo_maxpool2d(c, a, 2, y))
UNARY(o_relu_pool, eo_relu_maxpool2d(c, a, 2, y))
static eo_status o_log(eo_ctx *c, eo_tensor *a, eo_tensor *b, eo_tensor **y) { (void)a; return eo_log(c, b, y); }
static eo_status o_add(eo_ctx *c, eo_tensor *a, eo_tensor *b, eo_tensor **y) { return eo_add(c, a, b, y); }
static eo_status o_sub(eo_ctx *c, eo_tensor *a, eo_tensor *b, eo_tensor **y) { return eo_sub(c, a, b, y); }
static eo_status o_mul(eo_ctx *c, eo_tensor *a, eo_tensor *b, eo_tensor **y) { return eo_mul(c, a, b, y); }
static eo_status o_div(eo_ctx *c, eo_tensor *a, eo_tensor *b, eo_tensor **y) { return eo_div(c, a, b, y); }
static eo_status o_maximum(eo_ctx *c, eo_tensor *a, eo_tensor *b, eo_tensor **y) { return eo_maximum(c, a, b, y); }
static eo_status o_minimum(eo_ctx *c, eo_tensor *a, eo_tensor *b, eo_tensor **y) { return eo_minimum(c, a, b, y); }
static eo_status o_layernorm(eo_ctx *c, eo_tensor *a, eo_tensor *b, eo_tensor **y) { return eo_layernorm(c, a, b, NULL, 1e-5f, y); }
static eo_status o_view(eo_ctx *c, eo_tensor *a, eo_tensor *b, eo_tensor **y)
{
    (void)b;
    eo_tensor *t;
    if (eo_transpose(c, a, 0, 1, &t) || eo_slice(c, t, 0, 3, 17, &t))
        return EO_ERR_STATE;
    return eo_mul(c, t, t, y); /* the view's gradient lands in a's strided slots */
}
static eo_status o_concat(eo_ctx *c, eo_tensor *a, eo_tensor *b, eo_tensor **y)
{
    eo_tensor *xs[3] = { a, b, a };
    return eo_concat(c, xs, 3, 0, y);
}
static eo_status o_cross_entropy(eo_ctx *c, eo_tensor *a, eo_tensor *b, eo_tensor **y)
{
    (void)b;
    static const int32_t t[5] = { 3, -100, 32, 0, 3 }; /* one ignored row */
    /* every reduction: the per-row losses + their sum + their mean */
    eo_tensor *tt = ints(c, a, 5, t), *none, *sum, *mean, *s;
    if (eo_cross_entropy_ex(c, a, tt, -100, EO_REDUCTION_NONE, &none) ||
        eo_cross_entropy_ex(c, a, tt, -100, EO_REDUCTION_SUM, &sum) ||
        eo_cross_entropy(c, a, tt, -100, &mean) || eo_add(c, none, sum, &s))
        return EO_ERR_STATE;
    return eo_add(c, s, mean, y);
}
static eo_status o_embedding(eo_ctx *c, eo_tensor *a, eo_tensor *b, eo_tensor **y)
{
    (void)b;
    static const int32_t ix[7] = { 4, 0, 4, 2, 1, 4, 0 }; /* repeats accumulate */
    return eo_embedding(c, a, ints(c, a, 7, ix), y);
}
static eo_status o_conv(eo_ctx *c, eo_tensor *a, eo_tensor *b, eo_tensor **y) { return eo_conv2d(c, a, b, NULL, 1, 2, y); }
/* a -> bf16, transposed and made contiguous (the 2-byte strided copy),
 * -> f16 -> f32: every direction of the cast kernel and its backward. */
static eo_status o_cast(eo_ctx *c, eo_tensor *a, eo_tensor *b, eo_tensor **y)
{
    (void)b;
    eo_tensor *t;
    if (eo_cast(c, a, EO_BF16, &t) || eo_transpose(c, t, 0, 1, &t) || eo_contiguous(c, t, &t) ||
        eo_cast(c, t, EO_F16, &t))
        return EO_ERR_STATE;
    return eo_cast(c, t, EO_F32, y);
}
static eo_status o_attention(eo_ctx *c, eo_tensor *a, eo_tensor *b, eo_tensor **y)
{
    return eo_attention_fused(c, a, a, b, NULL, 1, 0.35f, y);
}

typedef struct {
    two_in f;
    int ra;
    int64_t sa[4];
    int rb;
    int64_t sb[4];
} op_case;

static const op_case op_cases[EO_OP_COUNT] = {
    [EO_OP_VIEW] = { o_view, 2, { 5, 33 }, 1, { 1 } },
    [EO_OP_COPY] = { o_copy, 2, { 5, 33 }, 1, { 1 } },
    [EO_OP_CONCAT] = { o_concat, 2, { 3, 7 }, 2, { 2, 7 } },
    [EO_OP_ADD] = { o_add, 3, { 2, 5, 33 }, 1, { 33 } },
    [EO_OP_SUB] = { o_sub, 2, { 5, 33 }, 2, { 5, 1 } },
    [EO_OP_MUL] = { o_mul, 2, { 5, 1 }, 2, { 1, 33 } },
    [EO_OP_DIV] = { o_div, 2, { 5, 33 }, 0, { 0 } },
    [EO_OP_MAXIMUM] = { o_maximum, 2, { 5, 33 }, 2, { 5, 1 } },
    [EO_OP_MINIMUM] = { o_minimum, 3, { 2, 5, 33 }, 1, { 33 } },
    [EO_OP_SCALE] = { o_scale, 2, { 5, 33 }, 1, { 1 } },
    [EO_OP_RELU] = { o_relu, 2, { 5, 33 }, 1, { 1 } },
    [EO_OP_GELU] = { o_gelu, 2, { 5, 33 }, 1, { 1 } },
    [EO_OP_GELU_ERF] = { o_gelu_erf, 2, { 5, 33 }, 1, { 1 } },
    [EO_OP_TANH] = { o_tanh, 2, { 5, 33 }, 1, { 1 } },
    [EO_OP_SIGMOID] = { o_sigmoid, 2, { 5, 33 }, 1, { 1 } },
    [EO_OP_EXP] = { o_exp, 2, { 5, 33 }, 1, { 1 } },
    [EO_OP_LOG] = { o_log, 1, { 1 }, 2, { 5, 33 } },
    [EO_OP_MATMUL] = { f_matmul, 2, { 5, 33 }, 2, { 17, 33 } },
    [EO_OP_SUM] = { o_sum, 3, { 3, 5, 7 }, 1, { 1 } },
    [EO_OP_MEAN] = { o_mean, 3, { 3, 5, 7 }, 1, { 1 } },
    [EO_OP_MAX] = { o_max, 3, { 3, 5, 7 }, 1, { 1 } },
    [EO_OP_LOGSUMEXP] = { o_logsumexp, 3, { 3, 5, 7 }, 1, { 1 } },
    [EO_OP_SOFTMAX] = { o_softmax, 2, { 5, 33 }, 1, { 1 } },
    [EO_OP_LOG_SOFTMAX] = { o_log_softmax, 2, { 5, 33 }, 1, { 1 } },
    [EO_OP_CROSS_ENTROPY] = { o_cross_entropy, 2, { 5, 33 }, 1, { 1 } },
    [EO_OP_LAYERNORM] = { o_layernorm, 2, { 5, 33 }, 1, { 33 } },
    [EO_OP_EMBEDDING] = { o_embedding, 2, { 5, 33 }, 1, { 1 } },
    [EO_OP_DROPOUT] = { o_dropout, 2, { 5, 33 }, 1, { 1 } },
    [EO_OP_IM2COL] = { o_conv, 4, { 2, 3, 7, 6 }, 4, { 4, 3, 3, 3 } },
    [EO_OP_CONV2D] = { o_conv, 4, { 2, 3, 7, 6 }, 4, { 4, 3, 3, 3 } },
    [EO_OP_MAXPOOL2D] = { o_pool, 4, { 2, 3, 6, 9 }, 1, { 1 } },
    [EO_OP_RELU_MAXPOOL2D] = { o_relu_pool, 4, { 2, 3, 6, 9 }, 1, { 1 } },
    [EO_OP_ATTENTION] = { o_attention, 4, { 2, 2, 5, 9 }, 4, { 2, 2, 5, 9 } },
    [EO_OP_CAST] = { o_cast, 2, { 5, 33 }, 1, { 1 } },
};

START_TEST(every_op_is_checked_on_the_device)
{
    for (int op = 0; op < EO_OP_COUNT; op++)
        ck_assert_msg(op_cases[op].f, "op '%s' has no CPU-vs-CUDA case in tests/test_cuda_ops.c",
                      eo_op_names[op]);
}
END_TEST

START_TEST(each_op_matches_cpu)
{
    const op_case *k = &op_cases[_i];
    if (_i == EO_OP_CAST && eo_test_skip_16bit_device("cuda_ops: cast"))
        return;
    if (k->f)
        compare(eo_op_names[_i], k->f, k->ra, k->sa, k->rb, k->sb);
}
END_TEST

/* One network, two devices: the same initial weights, three AdamW steps
 * with cross-entropy; the losses and the final weights must agree. */
START_TEST(training_steps_match_cpu)
{
    eo_ctx *ctx = cuda_ctx();
    eo_params pc, pd;
    eo_module lc[2], ld[2];
    eo_seed(ctx, 5);
    ck_assert_int_eq(eo_params_init(ctx, &pc, 4), EO_OK);
    ck_assert_int_eq(eo_linear_init(ctx, &pc, EO_CPU, "0", 12, 16, 1, EO_INIT_KAIMING_UNIFORM, &lc[0]), EO_OK);
    ck_assert_int_eq(eo_linear_init(ctx, &pc, EO_CPU, "2", 16, 5, 1, EO_INIT_KAIMING_UNIFORM, &lc[1]), EO_OK);
    eo_seed(ctx, 5); /* same draws: identical initial weights on the device */
    ck_assert_int_eq(eo_params_init(ctx, &pd, 4), EO_OK);
    ck_assert_int_eq(eo_linear_init(ctx, &pd, EO_CUDA, "0", 12, 16, 1, EO_INIT_KAIMING_UNIFORM, &ld[0]), EO_OK);
    ck_assert_int_eq(eo_linear_init(ctx, &pd, EO_CUDA, "2", 16, 5, 1, EO_INIT_KAIMING_UNIFORM, &ld[1]), EO_OK);
    eo_optimizer oc, od;
    ck_assert_int_eq(eo_adamw_init(ctx, &oc, &pc, 1e-2f, 0.9f, 0.999f, 1e-8f, 0.01f), EO_OK);
    ck_assert_int_eq(eo_adamw_init(ctx, &od, &pd, 1e-2f, 0.9f, 0.999f, 1e-8f, 0.01f), EO_OK);
    int64_t sx[2] = { 7, 12 }, sy[1] = { 7 };
    int32_t labels[7] = { 0, 4, 2, 2, 1, 3, 0 };
    for (int step = 0; step < 3; step++) {
        eo_mark m = eo_mark_get(ctx);
        eo_tensor *x = eo_test_rand(ctx, 2, sx, 0, 1, 20 + step, 0), *y, *dx, *dy;
        ck_assert_int_eq(eo_tensor_wrap(ctx, EO_I32, 1, sy, labels, &y), EO_OK);
        dx = to_cuda(ctx, x);
        dy = to_cuda(ctx, y);
        float lossc, lossd;
        eo_tensor *h, *L;
        /* CPU */
        ck_assert_int_eq(eo_params_zero_grad(ctx, &pc), EO_OK);
        ck_assert_int_eq(eo_module_forward(ctx, &lc[0], x, &h), EO_OK);
        ck_assert_int_eq(eo_relu(ctx, h, &h), EO_OK);
        ck_assert_int_eq(eo_module_forward(ctx, &lc[1], h, &h), EO_OK);
        ck_assert_int_eq(eo_cross_entropy(ctx, h, y, -100, &L), EO_OK);
        ck_assert_int_eq(eo_backward(ctx, L), EO_OK);
        ck_assert_int_eq(eo_optimizer_step(ctx, &oc), EO_OK);
        lossc = *(float *)L->data;
        /* CUDA: the same calls, only the tensors live elsewhere */
        ck_assert_int_eq(eo_params_zero_grad(ctx, &pd), EO_OK);
        ck_assert_int_eq(eo_module_forward(ctx, &ld[0], dx, &h), EO_OK);
        ck_assert_int_eq(eo_relu(ctx, h, &h), EO_OK);
        ck_assert_int_eq(eo_module_forward(ctx, &ld[1], h, &h), EO_OK);
        ck_assert_int_eq(eo_cross_entropy(ctx, h, dy, -100, &L), EO_OK);
        ck_assert_int_eq(eo_backward(ctx, L), EO_OK);
        ck_assert_int_eq(eo_optimizer_step(ctx, &od), EO_OK);
        ck_assert_msg(eo_read(ctx, L, &lossd, 4) == EO_OK, "%s", eo_last_error(ctx));
        ck_assert_msg(fabsf(lossc - lossd) < 1e-5f, "step %d: loss cpu %f cuda %f", step, lossc, lossd);
        eo_rewind(ctx, m);
    }
    for (int i = 0; i < pc.count; i++)
        expect_close(ctx, pc.items[i]->name, pc.items[i], pd.items[i], 1e-4);
    close_ctx(ctx);
}
END_TEST

/* A transposed bf16 / f16 view copied on the device: the 2-byte strided
 * copy (once the 4-byte kernel's: wrong values, 4 bytes written past the
 * end), made contiguous and copied into a strided window whose
 * neighbours must keep their values. */
START_TEST(transposed_16bit_view_copies_on_the_device)
{
    eo_ctx *ctx = cuda_ctx();
    int64_t s[2] = { 3, 5 }, sd[2] = { 5, 4 };
    for (int k = 0; k < 2; k++) {
        eo_dtype dt = k ? EO_F16 : EO_BF16;
        eo_tensor *x, *dx, *t, *c, *dst, *win;
        ck_assert_int_eq(eo_cast(ctx, eo_test_rand(ctx, 2, s, -4, 4, 3, 0), dt, &x), EO_OK);
        dx = to_cuda(ctx, x);
        ck_assert_int_eq(eo_transpose(ctx, dx, 0, 1, &t), EO_OK);
        ck_assert_int_eq(eo_contiguous(ctx, t, &c), EO_OK);
        uint16_t got[20];
        const uint16_t *xh = x->data;
        ck_assert_msg(eo_read(ctx, c, got, 30) == EO_OK, "%s", eo_last_error(ctx));
        for (int i = 0; i < 5; i++)
            for (int j = 0; j < 3; j++)
                ck_assert_uint_eq(got[i * 3 + j], xh[j * 5 + i]);
        ck_assert_int_eq(eo_tensor_new(ctx, EO_STEP, EO_CUDA, dt, 2, sd, &dst), EO_OK);
        ck_assert_int_eq(eo_fill(ctx, dst, 7.0f), EO_OK);
        ck_assert_int_eq(eo_slice(ctx, dst, 1, 0, 3, &win), EO_OK);
        ck_assert_msg(eo_copy_into(ctx, win, t) == EO_OK, "%s", eo_last_error(ctx));
        ck_assert_msg(eo_read(ctx, dst, got, 40) == EO_OK, "%s", eo_last_error(ctx));
        const uint16_t seven = dt == EO_BF16 ? 0x40e0 : 0x4700;
        for (int i = 0; i < 5; i++) {
            for (int j = 0; j < 3; j++)
                ck_assert_uint_eq(got[i * 4 + j], xh[j * 5 + i]);
            ck_assert_uint_eq(got[i * 4 + 3], seven);
        }
    }
    close_ctx(ctx);
}
END_TEST

START_TEST(mixed_devices_and_missing_driver_are_clear_errors)
{
    eo_ctx *ctx = cuda_ctx();
    int64_t s[2] = { 2, 3 };
    eo_tensor *a = eo_test_rand(ctx, 2, s, 0, 1, 1, 0), *b = to_cuda(ctx, a), *y;
    ck_assert_int_eq(eo_add(ctx, a, b, &y), EO_ERR_DEVICE);
    ck_assert_ptr_nonnull(strstr(eo_last_error(ctx), "different devices"));
    close_ctx(ctx);
    /* No CUDA attached: asking for a CUDA tensor says so. */
    eo_ctx *plain = eo_test_ctx(1, 1);
    ck_assert_int_eq(eo_tensor_new(plain, EO_STEP, EO_CUDA, EO_F32, 2, s, &y), EO_ERR_DEVICE);
    eo_test_ctx_free(plain);
}
END_TEST

/* eo-train's own loop with --device cuda: same data, same seed, the loss
 * of the epoch matches the CPU run. */
START_TEST(training_tool_runs_on_the_device)
{
    eo_train_config c;
    eo_train_defaults(&c, EO_MODEL_MLP);
    c.data_dir = "/usr/share/datasets/fashion-mnist";
    c.epochs = 1;
    c.batch = 32;
    c.threads = 1;
    c.train_subset = 64;
    c.test_subset = 64;
    c.quiet = 1;
    c.plot = NULL;
    c.persist_mb = 8;
    c.step_mb = 16;
    eo_train_result rc, rd;
    char err[512];
    ck_assert_msg(eo_train_run(&c, &rc, NULL, err, sizeof err) == EO_OK, "cpu: %s", err);
    const char *mode = getenv("EO_TEST_CUDA");
    if (!mode || strcmp(mode, "real") != 0) {
        eo_ptxsim_driver_reset();
        eo_ptxsim_driver(&D);
        c.cuda_driver = &D;
    }
    c.cuda = 1;
    ck_assert_msg(eo_train_run(&c, &rd, NULL, err, sizeof err) == EO_OK, "cuda: %s", err);
    ck_assert_msg(fabs(rc.last_loss - rd.last_loss) < 1e-4, "epoch loss cpu %.6f cuda %.6f",
                  rc.last_loss, rd.last_loss);
    ck_assert_double_eq_tol(rc.test_accuracy, rd.test_accuracy, 1.0 / 64 + 1e-9);
}
END_TEST

/* Token ids and class targets out of range are found on the device: the
 * kernels index only with checked ids (no fault), and the first bad one
 * is reported when its result is read; the device keeps working. */
START_TEST(bad_ids_are_reported_by_the_device)
{
    eo_ctx *ctx = cuda_ctx();
    int64_t st[2] = { 5, 3 }, si[1] = { 4 }, sl[2] = { 3, 4 }, sy[1] = { 3 };
    eo_tensor *table = to_cuda(ctx, eo_test_rand(ctx, 2, st, -1, 1, 1, 0));
    int32_t bad[4] = { 0, 7, 2, -1 }, good[4] = { 0, 4, 2, 1 };
    eo_tensor *idx, *y, *logits, *tg, *loss;
    float out[12];
    ck_assert_int_eq(eo_tensor_wrap(ctx, EO_I32, 1, si, bad, &idx), EO_OK);
    ck_assert_int_eq(eo_embedding(ctx, table, to_cuda(ctx, idx), &y), EO_OK); /* asynchronous */
    ck_assert_int_eq(eo_read(ctx, y, out, sizeof out), EO_ERR_ARG);
    ck_assert_msg(strstr(eo_last_error(ctx), "embedding: index 7 at position 1 is outside [0, 5)"),
                  "%s", eo_last_error(ctx));
    ck_assert_int_eq(eo_tensor_wrap(ctx, EO_I32, 1, si, good, &idx), EO_OK);
    ck_assert_int_eq(eo_embedding(ctx, table, to_cuda(ctx, idx), &y), EO_OK);
    ck_assert_msg(eo_read(ctx, y, out, sizeof out) == EO_OK, "%s", eo_last_error(ctx));
    int32_t targets[3] = { 1, 4, -100 };
    logits = to_cuda(ctx, eo_test_rand(ctx, 2, sl, -1, 1, 2, 0));
    ck_assert_int_eq(eo_tensor_wrap(ctx, EO_I32, 1, sy, targets, &tg), EO_OK);
    ck_assert_int_eq(eo_cross_entropy(ctx, logits, to_cuda(ctx, tg), -100, &loss), EO_OK);
    ck_assert_int_eq(eo_read(ctx, loss, out, 4), EO_ERR_ARG);
    ck_assert_msg(strstr(eo_last_error(ctx), "cross_entropy: target 4 at position 1 is outside [0, 4)"),
                  "%s", eo_last_error(ctx));
    targets[1] = -100; /* the ignore index is a good target */
    ck_assert_int_eq(eo_tensor_wrap(ctx, EO_I32, 1, sy, targets, &tg), EO_OK);
    ck_assert_int_eq(eo_cross_entropy(ctx, logits, to_cuda(ctx, tg), -100, &loss), EO_OK);
    ck_assert_msg(eo_read(ctx, loss, out, 4) == EO_OK, "%s", eo_last_error(ctx));
    close_ctx(ctx);
}
END_TEST

/* Generation on the device with a key/value cache: the CPU model's full
 * forward (same seed, same weights) and the device's cached one, fed in
 * pieces, give the same logits. */
START_TEST(kv_cache_on_the_device)
{
    enum { B = 1, T = 7, V = 9 };
    eo_ctx *ctx = cuda_ctx();
    eo_gpt gc, gd;
    eo_gpt_config cfg = { V, 8, 16, 2, 2, 0 };
    eo_seed(ctx, 4);
    ck_assert_int_eq(eo_gpt_build(ctx, EO_CPU, &cfg, &gc), EO_OK);
    eo_seed(ctx, 4);
    ck_assert_int_eq(eo_gpt_build(ctx, EO_CUDA, &cfg, &gd), EO_OK);
    eo_gpt_set_fused(&gc, 1);
    eo_set_grad(ctx, 0);
    int32_t ids[T] = { 3, 1, 4, 1, 5, 8, 2 };
    float full[T * V], got[T * V];
    int64_t si[2] = { B, T };
    eo_tensor *x, *lg;
    ck_assert_int_eq(eo_tensor_wrap(ctx, EO_I32, 2, si, ids, &x), EO_OK);
    ck_assert_int_eq(eo_gpt_forward(ctx, &gc, x, &lg), EO_OK);
    ck_assert_int_eq(eo_read(ctx, lg, full, sizeof full), EO_OK);
    eo_gpt_cache c;
    ck_assert_int_eq(eo_gpt_cache_init(ctx, &gd, B, &c), EO_OK);
    const int pieces[3] = { 3, 1, 3 };
    for (int p = 0, t0 = 0; p < 3; t0 += pieces[p++]) {
        int64_t sp[2] = { B, pieces[p] };
        ck_assert_int_eq(eo_tensor_wrap(ctx, EO_I32, 2, sp, ids + t0, &x), EO_OK);
        x = to_cuda(ctx, x);
        ck_assert_msg(eo_gpt_forward_cached(ctx, &gd, &c, x, &lg) == EO_OK, "%s",
                      eo_last_error(ctx));
        ck_assert_msg(eo_read(ctx, lg, got, (size_t)(pieces[p] * V) * sizeof(float)) == EO_OK,
                      "%s", eo_last_error(ctx));
        for (int i = 0; i < pieces[p] * V; i++)
            ck_assert_msg(fabsf(got[i] - full[t0 * V + i]) <= 1e-4f, "piece %d [%d]: %g vs %g",
                          p, i, (double)got[i], (double)full[t0 * V + i]);
    }
    close_ctx(ctx);
}
END_TEST

/* eo-train --model gpt --device cuda: the same text, seed and steps give
 * the CPU run's losses (composed and fused attention). */
START_TEST(gpt_training_runs_on_the_device)
{
    static const char text[] =
        "the quick brown fox jumps over the lazy dog. a stitch in time saves nine.\n"
        "all that glitters is not gold. where there is smoke there is fire.\n"
        "the early bird catches the worm. better late than never, they say.\n";
    ck_assert_ptr_nonnull(eo_tmpdir_make());
    const char *path = eo_tmpdir_file("text.txt", text, sizeof text - 1);
    ck_assert_ptr_nonnull(path);
    for (int fused = 0; fused < 2; fused++) {
        eo_lm_config c;
        eo_lm_defaults(&c);
        c.text = path;
        c.steps = 2;
        c.context = 16;
        c.d_model = 16;
        c.heads = 2;
        c.layers = 1;
        c.batch = 3;
        c.threads = 1;
        c.eval_every = 0;
        c.val_windows = 2;
        c.fused = fused;
        c.quiet = 1;
        c.persist_mb = 8;
        c.step_mb = 16;
        eo_lm_result rc, rd;
        char err[512];
        ck_assert_msg(eo_lm_train_run(&c, &rc, NULL, err, sizeof err) == EO_OK, "cpu: %s", err);
        const char *mode = getenv("EO_TEST_CUDA");
        if (!mode || strcmp(mode, "real") != 0) {
            eo_ptxsim_driver_reset();
            eo_ptxsim_driver(&D);
            c.cuda_driver = &D;
        }
        c.cuda = 1;
        ck_assert_msg(eo_lm_train_run(&c, &rd, NULL, err, sizeof err) == EO_OK, "cuda: %s", err);
        ck_assert_msg(fabs(rc.train_loss - rd.train_loss) < 1e-4 &&
                          fabs(rc.val_loss - rd.val_loss) < 1e-4,
                      "fused %d: train loss cpu %.6f cuda %.6f, validation cpu %.6f cuda %.6f",
                      fused, rc.train_loss, rd.train_loss, rc.val_loss, rd.val_loss);
    }
    eo_tmpdir_remove();
}
END_TEST

/* The GPU mode of eo-bench, at tiny sizes, end to end on the interpreter
 * (its events have a fake clock, so only the path is checked, not speed). */
START_TEST(gpu_benchmark_runs)
{
    eo_ptxsim_driver_reset();
    eo_ptxsim_driver(&D);
    FILE *devnull = fopen("/dev/null", "w");
    ck_assert_int_eq(eo_bench_gpu(&D, 0, devnull, devnull), 0);
    fclose(devnull);
}
END_TEST

Suite *eo_suite_cuda_ops(void)
{
    Suite *s = suite_create("cuda_ops");
    TCase *tc = tcase_create("cuda_ops");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, ops_match_cpu);
    tcase_add_test(tc, every_op_is_checked_on_the_device);
    tcase_add_loop_test(tc, each_op_matches_cpu, 0, EO_OP_COUNT);
    tcase_add_test(tc, training_steps_match_cpu);
    tcase_add_test(tc, mixed_devices_and_missing_driver_are_clear_errors);
    tcase_add_test(tc, transposed_16bit_view_copies_on_the_device);
    tcase_add_test(tc, training_tool_runs_on_the_device);
    tcase_add_test(tc, gpt_training_runs_on_the_device);
    tcase_add_test(tc, kv_cache_on_the_device);
    tcase_add_test(tc, bad_ids_are_reported_by_the_device);
    tcase_add_test(tc, gpu_benchmark_runs);
    suite_add_tcase(s, tc);
    return s;
}
