/* tests/test_ops.c — the op harness, driven by core/ops.def.
 *
 * Every op id has two entries in `harness`: a forward test against a
 * plain double-precision reference computed here with loops, and a
 * gradient check through the one shared finite-difference checker
 * (tests/gradcheck.h). A test walks all EO_OP_COUNT ids and fails naming
 * any op that lacks either, so adding a line to ops.def without tests
 * breaks the suite. The forward and gradient tests are loop tests over
 * the op ids, so a failure names the op in its message.
 *
 * Shapes are chosen to be awkward: 1x1, odd sizes, sizes that are not a
 * multiple of any SIMD width or tile (13x17, 5x33), ranks 3 and 4, rank 0
 * where the op allows it, and non-contiguous views made by transpose,
 * permute and slice.
 *
 * Tolerances: the kernels compute in float, so forward results are
 * compared with rtol 1e-5 and atol 1e-6 unless a case says otherwise;
 * sums over a row (matmul, conv, reductions) get an atol scaled to the
 * row length. Copies, gathers and pooling must be exact.
 *
 * Fused-vs-composed checks and bad-input statuses are in
 * test_ops_fused.c and test_ops_errors.c. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "core/internal.h"
#include "ops/kernels.h"
#include "tests/gradcheck.h"
#include "tests/optest.h"

#define RTOL 1e-5
#define PI 3.14159265358979323846
#define ATOL 1e-6

typedef struct shape_t { int rank; int64_t s[EO_MAX_RANK]; } shape_t;

static int64_t numel_of(shape_t sh)
{
    int64_t n = 1;
    for (int i = 0; i < sh.rank; i++)
        n *= sh.s[i];
    return n;
}

/* Contiguous or a non-contiguous view, with the same logical shape. */
static eo_tensor *make_input(shape_t sh, int nc, float lo, float hi, unsigned seed)
{
    return nc ? ot_rand_nc(sh.rank, sh.s, lo, hi, seed) : ot_rand(sh.rank, sh.s, lo, hi, seed);
}

/* Push values out of (-margin, margin), away from kinks such as relu's. */
static void away_from_zero(eo_tensor *t, float margin)
{
    float *p = t->data;
    for (int64_t i = 0; i < eo_numel(t); i++)
        if (fabsf(p[i]) < margin)
            p[i] = p[i] < 0 ? p[i] - margin : p[i] + margin;
}

static eo_tensor *grad_input(int rank, const int64_t *shape, float lo, float hi, unsigned seed)
{
    eo_tensor *t = eo_test_rand(ot_ctx, rank, shape, lo, hi, seed, 1);
    ck_assert_ptr_nonnull(t);
    return t;
}

/* ======================================================================
 * Elementwise unary ops (scale and the activations)
 * ==================================================================== */

#define SCALE_S (-1.75f)

static eo_status apply_unary(int id, eo_ctx *ctx, eo_tensor *x, eo_tensor **out)
{
    switch (id) {
    case EO_OP_SCALE: return eo_scale(ctx, x, SCALE_S, out);
    case EO_OP_RELU: return eo_relu(ctx, x, out);
    case EO_OP_GELU: return eo_gelu(ctx, x, out);
    case EO_OP_GELU_ERF: return eo_gelu_erf(ctx, x, out);
    case EO_OP_TANH: return eo_tanh(ctx, x, out);
    case EO_OP_SIGMOID: return eo_sigmoid(ctx, x, out);
    case EO_OP_EXP: return eo_exp(ctx, x, out);
    case EO_OP_LOG: return eo_log(ctx, x, out);
    default: return EO_ERR_ARG;
    }
}

static double ref_unary(int id, double x)
{
    switch (id) {
    case EO_OP_SCALE: return (double)SCALE_S * x;
    case EO_OP_RELU: return x < 0 ? 0 : x;
    case EO_OP_GELU:
        return 0.5 * x * (1.0 + tanh(sqrt(2.0 / PI) * (x + 0.044715 * x * x * x)));
    case EO_OP_GELU_ERF: return 0.5 * x * (1.0 + erf(x / sqrt(2.0)));
    case EO_OP_TANH: return tanh(x);
    case EO_OP_SIGMOID: return 1.0 / (1.0 + exp(-x));
    case EO_OP_EXP: return exp(x);
    case EO_OP_LOG: return log(x);
    default: return NAN;
    }
}

/* Input range per op: log needs x > 0; exp is kept where float has room
 * for its result; the rest see both tails of their curves. */
static void unary_range(int id, float *lo, float *hi)
{
    *lo = -5.0f;
    *hi = 5.0f;
    if (id == EO_OP_LOG) { *lo = 0.05f; *hi = 8.0f; }
    if (id == EO_OP_EXP) { *lo = -10.0f; *hi = 10.0f; }
}

static void fwd_unary(int id)
{
    /* 4099: more than one 4096-element work block, with a ragged tail. */
    static const shape_t shapes[] = {
        { 0, {0} }, { 2, {1, 1} }, { 2, {3, 7} }, { 2, {5, 33} }, { 2, {13, 17} },
        { 3, {2, 3, 5} }, { 4, {2, 3, 1, 5} }, { 1, {4099} },
    };
    static const shape_t nc_shapes[] = { { 2, {13, 17} }, { 3, {3, 4, 5} }, { 4, {2, 3, 2, 3} } };
    float lo, hi;
    unary_range(id, &lo, &hi);
    /* Float libm (erff, tanhf, expf) and the vectorised exp are within a
     * few ulp; 1e-5 relative leaves room for the argument's own rounding
     * (e.g. gelu's inner polynomial) on top. */
    const int n_plain = (int)(sizeof shapes / sizeof shapes[0]);
    const int n_all = n_plain + (int)(sizeof nc_shapes / sizeof nc_shapes[0]);
    for (int c = 0; c < n_all; c++) {
        int nc = c >= n_plain;
        shape_t sh = nc ? nc_shapes[c - n_plain] : shapes[c];
        eo_mark m = eo_mark_get(ot_ctx);
        eo_tensor *x = make_input(sh, nc, lo, hi, 11u + (unsigned)c), *y;
        char what[128];
        snprintf(what, sizeof what, "%s forward %s%s", eo_op_names[id],
                 ot_shape_str(sh.rank, sh.s), nc ? " (non-contiguous)" : "");
        OT_OK(apply_unary(id, ot_ctx, x, &y), what);
        ot_expect_shape(what, y, sh.rank, sh.s);
        const double *xv = ot_get(x);
        double *ref = ot_doubles(numel_of(sh));
        for (int64_t i = 0; i < numel_of(sh); i++)
            ref[i] = ref_unary(id, xv[i]);
        ot_expect_close(what, y, ref, RTOL, ATOL);
        eo_rewind(ot_ctx, m);
    }
}

typedef struct unary_user { int id; int transpose; } unary_user;

static eo_status gf_unary(eo_ctx *ctx, eo_tensor *const *in, void *user, eo_tensor **out)
{
    const unary_user *u = user;
    eo_tensor *x = in[0];
    if (u->transpose)
        OT_TRY(eo_transpose(ctx, x, 0, 1, &x));
    return apply_unary(u->id, ctx, x, out);
}

static void grad_unary(int id)
{
    static const shape_t shapes[] = { { 2, {1, 1} }, { 2, {3, 5} }, { 3, {2, 3, 4} } };
    for (int c = 0; c < 4; c++) {
        int transpose = c == 3;
        shape_t sh = transpose ? (shape_t){ 2, {4, 5} } : shapes[c];
        float lo = -2.5f, hi = 2.5f;
        if (id == EO_OP_LOG) { lo = 0.5f; hi = 3.0f; }
        eo_tensor *x = grad_input(sh.rank, sh.s, lo, hi, 21u + (unsigned)c);
        away_from_zero(x, 0.1f); /* relu's kink is at 0 */
        unary_user u = { id, transpose };
        char what[96];
        snprintf(what, sizeof what, "%s %s%s", eo_op_names[id], ot_shape_str(sh.rank, sh.s),
                 transpose ? " transposed" : "");
        ot_gradcheck(what, gf_unary, &x, 1, &u, NULL);
    }
}

/* ======================================================================
 * Elementwise binary ops with broadcasting
 * ==================================================================== */

static eo_status apply_binary(int id, eo_ctx *ctx, eo_tensor *a, eo_tensor *b, eo_tensor **out)
{
    switch (id) {
    case EO_OP_ADD: return eo_add(ctx, a, b, out);
    case EO_OP_SUB: return eo_sub(ctx, a, b, out);
    case EO_OP_MUL: return eo_mul(ctx, a, b, out);
    case EO_OP_DIV: return eo_div(ctx, a, b, out);
    case EO_OP_MAXIMUM: return eo_maximum(ctx, a, b, out);
    case EO_OP_MINIMUM: return eo_minimum(ctx, a, b, out);
    default: return EO_ERR_ARG;
    }
}

static double ref_binary(int id, double a, double b)
{
    switch (id) {
    case EO_OP_ADD: return a + b;
    case EO_OP_SUB: return a - b;
    case EO_OP_MUL: return a * b;
    case EO_OP_DIV: return a / b;
    case EO_OP_MAXIMUM: return a != a || b != b ? NAN : a > b ? a : b;
    case EO_OP_MINIMUM: return a != a || b != b ? NAN : a < b ? a : b;
    default: return NAN;
    }
}

/* NumPy broadcasting, computed independently of the library: pad both
 * shapes to 4 on the left; each pair equal or one of them 1. */
static void broadcast_shape(shape_t a, shape_t b, shape_t *out, int64_t pa[4], int64_t pb[4])
{
    for (int i = 0; i < 4; i++) {
        pa[i] = i < 4 - a.rank ? 1 : a.s[i - (4 - a.rank)];
        pb[i] = i < 4 - b.rank ? 1 : b.s[i - (4 - b.rank)];
    }
    out->rank = a.rank > b.rank ? a.rank : b.rank;
    for (int i = 4 - out->rank; i < 4; i++)
        out->s[i - (4 - out->rank)] = pa[i] == 1 ? pb[i] : pa[i];
}

/* Offset of a 4-D output index in a row-major operand of padded shape p
 * (size-1 axes repeat). */
static int64_t bcast_off(const int64_t p[4], const int64_t idx[4])
{
    int64_t off = 0;
    for (int i = 0; i < 4; i++)
        off = off * p[i] + (p[i] == 1 ? 0 : idx[i]);
    return off;
}

static void fwd_binary(int id)
{
    static const struct { shape_t a, b; int nca, ncb; } cases[] = {
        { { 2, {13, 17} }, { 2, {13, 17} }, 0, 0 },
        { { 2, {1, 1} }, { 2, {1, 1} }, 0, 0 },
        { { 2, {3, 1} }, { 2, {1, 4} }, 0, 0 },
        { { 3, {2, 3, 4} }, { 1, {4} }, 0, 0 },
        { { 1, {4} }, { 3, {2, 3, 4} }, 0, 0 },
        { { 0, {0} }, { 2, {5, 33} }, 0, 0 },
        { { 2, {5, 33} }, { 0, {0} }, 0, 0 },
        { { 0, {0} }, { 0, {0} }, 0, 0 },
        { { 4, {2, 1, 3, 5} }, { 3, {4, 1, 5} }, 0, 0 },
        { { 3, {3, 1, 7} }, { 2, {5, 1} }, 0, 0 },
        { { 2, {13, 17} }, { 2, {13, 17} }, 1, 0 },
        { { 2, {7, 5} }, { 1, {5} }, 1, 0 },
        { { 3, {3, 4, 5} }, { 3, {3, 4, 5} }, 1, 1 },
        { { 2, {6, 1} }, { 2, {6, 9} }, 0, 1 },
    };
    for (int c = 0; c < (int)(sizeof cases / sizeof cases[0]); c++) {
        eo_mark m = eo_mark_get(ot_ctx);
        shape_t so;
        int64_t pa[4], pb[4];
        broadcast_shape(cases[c].a, cases[c].b, &so, pa, pb);
        /* b stays in [0.5, 2] so div is well conditioned. */
        eo_tensor *a = make_input(cases[c].a, cases[c].nca, -2, 2, 31u + (unsigned)c);
        eo_tensor *b = make_input(cases[c].b, cases[c].ncb, 0.5f, 2, 41u + (unsigned)c), *y;
        char what[160];
        snprintf(what, sizeof what, "%s forward %s%s op %s%s", eo_op_names[id],
                 ot_shape_str(cases[c].a.rank, cases[c].a.s), cases[c].nca ? " (nc)" : "",
                 ot_shape_str(cases[c].b.rank, cases[c].b.s), cases[c].ncb ? " (nc)" : "");
        OT_OK(apply_binary(id, ot_ctx, a, b, &y), what);
        ot_expect_shape(what, y, so.rank, so.s);
        const double *av = ot_get(a), *bv = ot_get(b);
        double *ref = ot_doubles(numel_of(so));
        int64_t k = 0, idx[4];
        int64_t full[4];
        for (int i = 0; i < 4; i++)
            full[i] = pa[i] == 1 ? pb[i] : pa[i];
        for (idx[0] = 0; idx[0] < full[0]; idx[0]++)
            for (idx[1] = 0; idx[1] < full[1]; idx[1]++)
                for (idx[2] = 0; idx[2] < full[2]; idx[2]++)
                    for (idx[3] = 0; idx[3] < full[3]; idx[3]++)
                        ref[k++] = ref_binary(id, av[bcast_off(pa, idx)], bv[bcast_off(pb, idx)]);
        ot_expect_close(what, y, ref, RTOL, ATOL);
        eo_rewind(ot_ctx, m);
    }
}

typedef struct binary_user { int id; int mode; } binary_user;
enum { BIN_PLAIN, BIN_TRANSPOSE_A, BIN_TWICE };

static eo_status gf_binary(eo_ctx *ctx, eo_tensor *const *in, void *user, eo_tensor **out)
{
    const binary_user *u = user;
    if (u->mode == BIN_TWICE) { /* f(x) = x op x + x: one tensor feeding three uses */
        eo_tensor *t;
        OT_TRY(apply_binary(u->id, ctx, in[0], in[0], &t));
        return eo_add(ctx, t, in[0], out);
    }
    eo_tensor *a = in[0];
    if (u->mode == BIN_TRANSPOSE_A)
        OT_TRY(eo_transpose(ctx, a, 0, 1, &a));
    return apply_binary(u->id, ctx, a, in[1], out);
}

/* torch.maximum / torch.minimum on the cases a finite difference cannot
 * see (PyTorch 1.13's values): NaN on either side gives NaN and sends the
 * whole gradient to both inputs; a tie splits it in half; a broadcast
 * input sums its halves. */
static void maximum_nan_and_ties(int id)
{
    const int mx = id == EO_OP_MAXIMUM;
    int64_t n = 5, one = 1;
    float av[5] = { 1, 2, NAN, 3, 2 }, bv[5] = { 1, NAN, 1, 4, 2 };
    eo_tensor *a = grad_input(1, &n, 0, 1, 1), *b = grad_input(1, &n, 0, 1, 2), *y, *L;
    memcpy(a->data, av, sizeof av);
    memcpy(b->data, bv, sizeof bv);
    OT_OK(apply_binary(id, ot_ctx, a, b, &y), "maximum/minimum with NaN and ties");
    const float *yv = y->data;
    ck_assert(yv[0] == 1 && isnan(yv[1]) && isnan(yv[2]) && yv[3] == (mx ? 4 : 3) && yv[4] == 2);
    OT_OK(eo_sum_all(ot_ctx, y, &L), "sum_all");
    OT_OK(eo_backward(ot_ctx, L), "backward");
    const float ga[5] = { 0.5f, 1, 1, mx ? 0.0f : 1.0f, 0.5f };
    const float gb[5] = { 0.5f, 1, 1, mx ? 1.0f : 0.0f, 0.5f };
    for (int i = 0; i < 5; i++)
        ck_assert_msg(((float *)a->grad->data)[i] == ga[i] && ((float *)b->grad->data)[i] == gb[i],
                      "%s: grad[%d] = %g, %g; want %g, %g", eo_op_names[id], i,
                      (double)((float *)a->grad->data)[i], (double)((float *)b->grad->data)[i],
                      (double)ga[i], (double)gb[i]);
    /* a scalar b tied with three of a's four entries: b gets 3 halves */
    int64_t four = 4;
    float a4[4] = { 2, 2, mx ? 1.0f : 3.0f, 2 };
    eo_tensor *x = grad_input(1, &four, 0, 1, 3), *s = grad_input(1, &one, 0, 1, 4);
    memcpy(x->data, a4, sizeof a4);
    ((float *)s->data)[0] = 2;
    OT_OK(apply_binary(id, ot_ctx, x, s, &y), "tie with a broadcast scalar");
    OT_OK(eo_sum_all(ot_ctx, y, &L), "sum_all");
    OT_OK(eo_backward(ot_ctx, L), "backward");
    ck_assert_float_eq(((float *)s->grad->data)[0], 2.5f);
    ck_assert_float_eq(((float *)x->grad->data)[2], 0.0f);
}

static void grad_binary(int id)
{
    static const struct { shape_t a, b; int mode; } cases[] = {
        { { 2, {3, 1} }, { 2, {1, 4} }, BIN_PLAIN },       /* both broadcast */
        { { 3, {2, 3, 4} }, { 1, {4} }, BIN_PLAIN },       /* b broadcast over two axes */
        { { 0, {0} }, { 2, {2, 3} }, BIN_PLAIN },          /* scalar with matrix */
        { { 2, {2, 3} }, { 0, {0} }, BIN_PLAIN },
        { { 2, {1, 1} }, { 2, {1, 1} }, BIN_PLAIN },
        { { 2, {4, 3} }, { 2, {3, 4} }, BIN_TRANSPOSE_A }, /* non-contiguous a */
        { { 2, {2, 3} }, { 0, {0} }, BIN_TWICE },          /* x op x + x */
    };
    for (int c = 0; c < (int)(sizeof cases / sizeof cases[0]); c++) {
        eo_tensor *in[2];
        in[0] = grad_input(cases[c].a.rank, cases[c].a.s, -2, 2, 51u + (unsigned)c);
        in[1] = grad_input(cases[c].b.rank, cases[c].b.s, 0.5f, 2, 61u + (unsigned)c);
        if (cases[c].mode == BIN_TWICE) /* x is also the divisor */
            for (int64_t i = 0; i < eo_numel(in[0]); i++)
                ((float *)in[0]->data)[i] = 0.5f + fabsf(((float *)in[0]->data)[i]);
        if (id == EO_OP_MAXIMUM || id == EO_OP_MINIMUM) /* a on k/10 + 1/20, b on k/10: */
            for (int t = 0; t < 2; t++)                 /* never within 0.05 of each other */
                for (int64_t i = 0; i < eo_numel(in[t]); i++) {
                    float *p = (float *)in[t]->data + i;
                    *p = roundf(*p * 10.0f) / 10.0f + (t == 0 ? 0.05f : 0.0f);
                }
        binary_user u = { id, cases[c].mode };
        char what[128];
        snprintf(what, sizeof what, "%s %s op %s%s", eo_op_names[id],
                 ot_shape_str(cases[c].a.rank, cases[c].a.s),
                 ot_shape_str(cases[c].b.rank, cases[c].b.s),
                 cases[c].mode == BIN_TWICE ? " (x op x + x)"
                 : cases[c].mode == BIN_TRANSPOSE_A ? " (a transposed)" : "");
        ot_gradcheck(what, gf_binary, in, cases[c].mode == BIN_TWICE ? 1 : 2, &u, NULL);
    }
    if (id == EO_OP_MAXIMUM || id == EO_OP_MINIMUM)
        maximum_nan_and_ties(id);
}

/* ======================================================================
 * Matmul
 * ==================================================================== */

/* C = op(A) · op(B) in double. A, B in logical row-major order of their
 * stored shapes; a rank-2 operand is shared by every batch entry. */
static void ref_matmul(const double *A, shape_t sa, int ta, const double *B, shape_t sb, int tb,
                       double *C, int64_t *Mo, int64_t *No)
{
    int64_t ar = sa.s[sa.rank - 2], ac = sa.s[sa.rank - 1];
    int64_t br = sb.s[sb.rank - 2], bc = sb.s[sb.rank - 1];
    int64_t M = ta ? ac : ar, K = ta ? ar : ac, N = tb ? br : bc;
    shape_t big = sa.rank >= sb.rank ? sa : sb;
    int64_t batch = 1;
    for (int i = 0; i < big.rank - 2; i++)
        batch *= big.s[i];
    for (int64_t bt = 0; bt < batch; bt++) {
        const double *Ab = A + (sa.rank > 2 ? bt * ar * ac : 0);
        const double *Bb = B + (sb.rank > 2 ? bt * br * bc : 0);
        for (int64_t i = 0; i < M; i++)
            for (int64_t j = 0; j < N; j++) {
                double acc = 0;
                for (int64_t k = 0; k < K; k++)
                    acc += (ta ? Ab[k * ac + i] : Ab[i * ac + k]) *
                           (tb ? Bb[j * bc + k] : Bb[k * bc + j]);
                C[(bt * M + i) * N + j] = acc;
            }
    }
    *Mo = M;
    *No = N;
}

/* How a matmul operand is made: contiguous, the generic non-contiguous
 * view (reversed axes plus a sliced margin: ld > rows), a transposed view
 * of a contiguous buffer, (rank 4) batch axes swapped so they no longer
 * nest and the op must copy, or a slice of a taller or wider buffer (row
 * stride larger than the row; batch stride larger than rows * ld). */
enum { MM_PLAIN, MM_NC, MM_T, MM_BATCH_SWAP, MM_SLICE_ROWS, MM_SLICE_COLS };

static eo_tensor *mm_operand(shape_t sh, int how, unsigned seed)
{
    if (how == MM_PLAIN || how == MM_NC)
        return make_input(sh, how == MM_NC, -1, 1, seed);
    if (how == MM_SLICE_ROWS || how == MM_SLICE_COLS) {
        int ax = sh.rank - (how == MM_SLICE_ROWS ? 2 : 1);
        shape_t sb = sh;
        sb.s[ax] += 3;
        eo_tensor *base = ot_rand(sb.rank, sb.s, -1, 1, seed), *v;
        ck_assert_int_eq(eo_slice(ot_ctx, base, ax, 1, sh.s[ax], &v), EO_OK);
        return v;
    }
    shape_t st = sh;
    int perm[EO_MAX_RANK] = { 0, 1, 2, 3 };
    if (how == MM_T) {
        st.s[sh.rank - 2] = sh.s[sh.rank - 1];
        st.s[sh.rank - 1] = sh.s[sh.rank - 2];
        perm[sh.rank - 2] = sh.rank - 1;
        perm[sh.rank - 1] = sh.rank - 2;
    } else {
        st.s[0] = sh.s[1];
        st.s[1] = sh.s[0];
        perm[0] = 1;
        perm[1] = 0;
    }
    eo_tensor *base = ot_rand(st.rank, st.s, -1, 1, seed), *v;
    ck_assert_int_eq(eo_permute(ot_ctx, base, perm, &v), EO_OK);
    return v;
}

static void fwd_matmul(int id)
{
    typedef struct { shape_t a; int ta, hwa; shape_t b; int tb, hwb; } mm_case;
    mm_case cases[64];
    int n = 0;
    /* All four transpose combinations on 1x1x1, odd and untiled sizes. */
    static const int64_t mnk[][3] = { {1, 1, 1}, {3, 5, 7}, {13, 17, 19}, {33, 9, 16}, {1, 7, 5} };
    for (int s = 0; s < 5; s++)
        for (int t = 0; t < 4; t++) {
            int64_t M = mnk[s][0], N = mnk[s][1], K = mnk[s][2];
            int ta = t & 1, tb = t >> 1;
            mm_case c = { { 2, { ta ? K : M, ta ? M : K } }, ta, MM_PLAIN,
                          { 2, { tb ? N : K, tb ? K : N } }, tb, MM_PLAIN };
            cases[n++] = c;
        }
    const mm_case extra[] = {
        /* batched rank 3 with a shared 2-D weight, plain and transposed */
        { { 3, {2, 5, 7} }, 0, MM_PLAIN, { 2, {7, 3} }, 0, MM_PLAIN },
        { { 3, {3, 5, 7} }, 0, MM_PLAIN, { 2, {4, 7} }, 1, MM_PLAIN },
        { { 3, {2, 7, 5} }, 1, MM_PLAIN, { 2, {7, 3} }, 0, MM_PLAIN },
        { { 2, {5, 7} }, 0, MM_PLAIN, { 3, {2, 7, 3} }, 0, MM_PLAIN },   /* shared A */
        /* batched both, rank 3 and 4 */
        { { 3, {2, 5, 7} }, 0, MM_PLAIN, { 3, {2, 7, 3} }, 0, MM_PLAIN },
        { { 4, {2, 3, 4, 5} }, 0, MM_PLAIN, { 4, {2, 3, 5, 6} }, 0, MM_PLAIN },
        { { 4, {2, 3, 5, 4} }, 1, MM_PLAIN, { 4, {2, 3, 6, 5} }, 1, MM_PLAIN },
        /* transposed views as inputs (no copy: the kernel flag flips) */
        { { 2, {5, 7} }, 0, MM_T, { 2, {7, 3} }, 0, MM_PLAIN },
        { { 2, {5, 7} }, 1, MM_T, { 2, {5, 3} }, 0, MM_PLAIN },
        { { 2, {13, 17} }, 0, MM_PLAIN, { 2, {17, 9} }, 0, MM_T },
        { { 3, {2, 5, 7} }, 0, MM_T, { 2, {7, 3} }, 0, MM_PLAIN },
        /* strided views with a row stride larger than the row */
        { { 2, {13, 17} }, 0, MM_NC, { 2, {17, 9} }, 0, MM_NC },
        { { 2, {6, 4} }, 1, MM_NC, { 2, {5, 6} }, 1, MM_NC },
        /* rank-3 view with no unit stride in the last two axes: copied */
        { { 3, {2, 5, 7} }, 0, MM_NC, { 3, {2, 7, 3} }, 0, MM_PLAIN },
        /* slices: batch stride > rows * ld (no stacking), ld > row length;
         * single rows and columns of strided views */
        { { 3, {2, 4, 7} }, 0, MM_SLICE_ROWS, { 2, {7, 3} }, 0, MM_PLAIN },
        { { 3, {2, 5, 7} }, 0, MM_SLICE_COLS, { 2, {7, 3} }, 0, MM_SLICE_COLS },
        { { 3, {2, 7, 5} }, 1, MM_SLICE_COLS, { 3, {2, 7, 3} }, 0, MM_SLICE_ROWS },
        { { 2, {5, 1} }, 0, MM_NC, { 2, {1, 6} }, 0, MM_NC },
        { { 2, {1, 7} }, 0, MM_NC, { 2, {7, 1} }, 0, MM_T },
        { { 2, {1, 7} }, 1, MM_T, { 2, {4, 1} }, 1, MM_NC },
        /* batch axes that do not nest: copied */
        { { 4, {3, 2, 4, 5} }, 0, MM_BATCH_SWAP, { 4, {3, 2, 5, 2} }, 0, MM_PLAIN },
        { { 4, {3, 2, 4, 5} }, 0, MM_PLAIN, { 4, {3, 2, 5, 2} }, 0, MM_BATCH_SWAP },
    };
    for (int i = 0; i < (int)(sizeof extra / sizeof extra[0]); i++)
        cases[n++] = extra[i];

    for (int c = 0; c < n; c++) {
        eo_mark m = eo_mark_get(ot_ctx);
        mm_case mc = cases[c];
        eo_tensor *a = mm_operand(mc.a, mc.hwa, 71u + (unsigned)c);
        eo_tensor *b = mm_operand(mc.b, mc.hwb, 81u + (unsigned)c), *y;
        char what[160];
        snprintf(what, sizeof what, "%s forward %s%s(%d) · %s%s(%d)", eo_op_names[id],
                 ot_shape_str(mc.a.rank, mc.a.s), mc.ta ? "ᵀ" : "", mc.hwa,
                 ot_shape_str(mc.b.rank, mc.b.s), mc.tb ? "ᵀ" : "", mc.hwb);
        OT_OK(eo_matmul(ot_ctx, a, b, mc.ta, mc.tb, &y), what);
        shape_t big = mc.a.rank >= mc.b.rank ? mc.a : mc.b;
        int64_t batch = 1, M, N;
        for (int i = 0; i < big.rank - 2; i++)
            batch *= big.s[i];
        int64_t K = mc.ta ? mc.a.s[mc.a.rank - 2] : mc.a.s[mc.a.rank - 1];
        double *ref = ot_doubles(batch * 64 * 64);
        ref_matmul(ot_get(a), mc.a, mc.ta, ot_get(b), mc.b, mc.tb, ref, &M, &N);
        shape_t so = big;
        so.s[so.rank - 2] = M;
        so.s[so.rank - 1] = N;
        ot_expect_shape(what, y, so.rank, so.s);
        /* |terms| <= 1: the float sum of K products is within ~K ulp. */
        ot_expect_close(what, y, ref, RTOL, 1e-6 * (double)K);
        eo_rewind(ot_ctx, m);
    }
}

typedef struct mm_user { int ta, tb, view; } mm_user;
enum { MMV_NONE, MMV_TRANSPOSE_A, MMV_PERMUTE_B, MMV_SLICE_A, MMV_SAME };

static eo_status gf_matmul(eo_ctx *ctx, eo_tensor *const *in, void *user, eo_tensor **out)
{
    const mm_user *u = user;
    eo_tensor *a = in[0], *b = in[1];
    if (u->view == MMV_TRANSPOSE_A)
        OT_TRY(eo_transpose(ctx, a, -1, -2, &a));
    if (u->view == MMV_PERMUTE_B) { /* [K, B, N] -> [B, K, N]: batch axis strided */
        int perm[3] = { 1, 0, 2 };
        OT_TRY(eo_permute(ctx, b, perm, &b));
    }
    if (u->view == MMV_SLICE_A) /* rows 1.. of each batch entry: not stackable */
        OT_TRY(eo_slice(ctx, a, -2, 1, a->shape[a->rank - 2] - 1, &a));
    if (u->view == MMV_SAME) /* x · xᵀ: one tensor, both operands */
        b = a;
    return eo_matmul(ctx, a, b, u->ta, u->tb, out);
}

static void grad_matmul(int id)
{
    static const struct { shape_t a, b; mm_user u; } cases[] = {
        { { 2, {3, 4} }, { 2, {4, 2} }, { 0, 0, MMV_NONE } },
        { { 2, {4, 3} }, { 2, {4, 2} }, { 1, 0, MMV_NONE } },
        { { 2, {3, 4} }, { 2, {2, 4} }, { 0, 1, MMV_NONE } },
        { { 2, {4, 3} }, { 2, {2, 4} }, { 1, 1, MMV_NONE } },
        { { 2, {1, 1} }, { 2, {1, 1} }, { 0, 0, MMV_NONE } },
        { { 3, {2, 3, 4} }, { 2, {4, 2} }, { 0, 0, MMV_NONE } },  /* shared weight */
        { { 3, {2, 3, 4} }, { 2, {2, 4} }, { 0, 1, MMV_NONE } },
        { { 3, {2, 4, 3} }, { 2, {4, 2} }, { 1, 0, MMV_NONE } },  /* no stacking: per batch */
        { { 3, {2, 3, 4} }, { 3, {2, 4, 2} }, { 0, 0, MMV_NONE } }, /* batched both */
        { { 2, {3, 4} }, { 3, {2, 4, 2} }, { 0, 0, MMV_NONE } },  /* shared A */
        { { 2, {4, 3} }, { 2, {4, 2} }, { 0, 0, MMV_TRANSPOSE_A } }, /* transposed view */
        { { 3, {2, 4, 3} }, { 2, {4, 2} }, { 0, 0, MMV_TRANSPOSE_A } },
        { { 3, {2, 3, 4} }, { 3, {4, 2, 2} }, { 0, 0, MMV_PERMUTE_B } },
        { { 3, {2, 4, 4} }, { 2, {4, 2} }, { 0, 0, MMV_SLICE_A } },
        { { 3, {2, 4, 3} }, { 2, {2, 3} }, { 0, 1, MMV_SLICE_A } },
        { { 2, {3, 4} }, { 2, {1, 1} }, { 0, 1, MMV_SAME } },
        { { 3, {2, 3, 4} }, { 2, {1, 1} }, { 1, 0, MMV_SAME } },
    };
    for (int c = 0; c < (int)(sizeof cases / sizeof cases[0]); c++) {
        eo_tensor *in[2];
        in[0] = grad_input(cases[c].a.rank, cases[c].a.s, -1, 1, 91u + (unsigned)c);
        in[1] = grad_input(cases[c].b.rank, cases[c].b.s, -1, 1, 101u + (unsigned)c);
        mm_user u = cases[c].u;
        char what[128];
        snprintf(what, sizeof what, "%s %s%s · %s%s view %d", eo_op_names[id],
                 ot_shape_str(cases[c].a.rank, cases[c].a.s), u.ta ? "ᵀ" : "",
                 ot_shape_str(cases[c].b.rank, cases[c].b.s), u.tb ? "ᵀ" : "", u.view);
        ot_gradcheck(what, gf_matmul, in, u.view == MMV_SAME ? 1 : 2, &u, NULL);
    }
}

/* ======================================================================
 * Reductions
 * ==================================================================== */

static eo_status apply_reduce(int id, eo_ctx *ctx, eo_tensor *x, int axis, int keep,
                              eo_tensor **out)
{
    switch (id) {
    case EO_OP_SUM: return eo_sum(ctx, x, axis, keep, out);
    case EO_OP_MEAN: return eo_mean(ctx, x, axis, keep, out);
    case EO_OP_MAX: return eo_max(ctx, x, axis, keep, out);
    case EO_OP_LOGSUMEXP: return eo_logsumexp(ctx, x, axis, keep, out);
    default: return EO_ERR_ARG;
    }
}

static void ref_reduce(int id, const double *x, shape_t sh, int a, double *y, shape_t *so,
                       int keep)
{
    int64_t outer = 1, n = sh.s[a], inner = 1;
    for (int i = 0; i < a; i++) outer *= sh.s[i];
    for (int i = a + 1; i < sh.rank; i++) inner *= sh.s[i];
    for (int64_t o = 0; o < outer; o++)
        for (int64_t in = 0; in < inner; in++) {
            double acc = id == EO_OP_MAX ? -INFINITY : 0;
            for (int64_t k = 0; k < n; k++) {
                double v = x[(o * n + k) * inner + in];
                acc = id == EO_OP_MAX ? (v > acc ? v : acc)
                    : id == EO_OP_LOGSUMEXP ? acc + exp(v) : acc + v;
            }
            y[o * inner + in] = id == EO_OP_MEAN ? acc / (double)n
                              : id == EO_OP_LOGSUMEXP ? log(acc) : acc;
        }
    so->rank = 0;
    for (int i = 0; i < sh.rank; i++) {
        if (i != a)
            so->s[so->rank++] = sh.s[i];
        else if (keep)
            so->s[so->rank++] = 1;
    }
}

/* torch.logsumexp's values on the rows a plain log(sum(exp)) gets wrong:
 * offsets of 1e4 and 1e8 (exp overflows), all -inf (-inf, gradient 0 —
 * PyTorch gives NaN there), +inf (+inf; gradient NaN at the inf as
 * PyTorch), a NaN (NaN), and an empty axis (-inf). Columns too (axis 0). */
static void logsumexp_edges(void)
{
    int64_t s[2] = { 6, 3 };
    float v[18] = { 1e4f, 1e4f, 1e4f - 1,  1e8f, 1e8f, 1e8f,   -INFINITY, -INFINITY, -INFINITY,
                    INFINITY, 1, -INFINITY,  1, NAN, -INFINITY,  -1, 0, 1 };
    const double want[6] = { 1e4 + log(2 + exp(-1.0)), 1e8, -INFINITY, INFINITY, NAN,
                             log(exp(-1.0) + 1 + exp(1.0)) };
    eo_tensor *x = grad_input(2, s, 0, 1, 7), *y, *L;
    memcpy(x->data, v, sizeof v);
    OT_OK(eo_logsumexp(ot_ctx, x, 1, 0, &y), "logsumexp edges");
    const float *yv = y->data;
    for (int r = 0; r < 6; r++)
        ck_assert_msg(isnan(want[r]) ? isnan(yv[r])
                      : isinf(want[r]) ? yv[r] == want[r]
                      : fabs(yv[r] - want[r]) <= 1e-6 * fabs(want[r]) + 1e-6,
                      "logsumexp row %d: %.9g, want %.9g", r, (double)yv[r], want[r]);
    OT_OK(eo_sum_all(ot_ctx, y, &L), "sum_all");
    OT_OK(eo_backward(ot_ctx, L), "logsumexp edges backward");
    const float *g = x->grad->data;
    for (int j = 0; j < 3; j++)
        ck_assert(g[6 + j] == 0.0f);                   /* all -inf: no gradient */
    ck_assert(isnan(g[9]) && g[10] == 0.0f && g[11] == 0.0f); /* +inf row, as torch */
    /* 1e8: the softmax of three equal values, 1/3 each (the max and the
     * log-sum are saved apart; PyTorch's exp(x - out) gives 1, out having
     * rounded log 3 away) */
    ck_assert(fabsf(g[3] - 1.0f / 3) < 1e-6f);
    /* over columns: axis 0 of the same data */
    OT_OK(eo_logsumexp(ot_ctx, x, 0, 1, &y), "logsumexp axis 0");
    ck_assert_int_eq(y->rank, 2);
    ck_assert(isnan(((float *)y->data)[1]) && ((float *)y->data)[0] == INFINITY);
    int64_t e[2] = { 2, 0 };
    eo_tensor *z = ot_rand(2, e, 0, 1, 9);
    OT_OK(eo_logsumexp(ot_ctx, z, 1, 0, &y), "logsumexp of an empty axis");
    ck_assert(((float *)y->data)[0] == -INFINITY && ((float *)y->data)[1] == -INFINITY);
}

static void fwd_reduce(int id)
{
    static const struct { shape_t x; int nc; } shapes[] = {
        { { 3, {3, 5, 7} }, 0 }, { { 3, {3, 5, 7} }, 1 }, { { 4, {2, 3, 4, 5} }, 0 },
        { { 4, {2, 3, 4, 5} }, 1 }, { { 1, {33} }, 0 }, { { 2, {1, 1} }, 0 },
        { { 2, {13, 17} }, 1 },
    };
    for (int c = 0; c < (int)(sizeof shapes / sizeof shapes[0]); c++) {
        shape_t sh = shapes[c].x;
        /* every axis, each written both ways (non-negative and negative) */
        for (int ax = -sh.rank; ax < sh.rank; ax++)
            for (int keep = 0; keep < 2; keep++) {
                eo_mark m = eo_mark_get(ot_ctx);
                eo_tensor *x = make_input(sh, shapes[c].nc, -3, 3, 111u + (unsigned)c), *y;
                char what[128];
                snprintf(what, sizeof what, "%s forward %s%s axis %d keepdim %d",
                         eo_op_names[id], ot_shape_str(sh.rank, sh.s),
                         shapes[c].nc ? " (nc)" : "", ax, keep);
                OT_OK(apply_reduce(id, ot_ctx, x, ax, keep, &y), what);
                shape_t so;
                int a = ax < 0 ? ax + sh.rank : ax;
                double *ref = ot_doubles(numel_of(sh));
                ref_reduce(id, ot_get(x), sh, a, ref, &so, keep);
                ot_expect_shape(what, y, so.rank, so.s);
                ot_expect_close(what, y, ref, RTOL, 1e-6 * (double)sh.s[a]);
                eo_rewind(ot_ctx, m);
            }
    }
    if (id == EO_OP_SUM) { /* sum_all is sum over a flattened (copied if strided) view */
        int64_t s[2] = { 13, 17 };
        eo_tensor *x = ot_rand_nc(2, s, -1, 1, 5), *y;
        OT_OK(eo_sum_all(ot_ctx, x, &y), "sum_all non-contiguous");
        ck_assert_int_eq(y->rank, 0);
        const double *xv = ot_get(x);
        double acc = 0;
        for (int i = 0; i < 13 * 17; i++)
            acc += xv[i];
        ot_expect_close("sum_all non-contiguous", y, &acc, RTOL, 1e-4);
    }
    if (id == EO_OP_MAX) { /* NaN propagates; -inf is an ordinary value */
        int64_t s[2] = { 2, 3 };
        float v[6] = { 1, NAN, 3, -INFINITY, -INFINITY, -5 };
        eo_tensor *x = ot_f32(2, s, v), *y;
        OT_OK(eo_max(ot_ctx, x, 1, 0, &y), "max with NaN");
        const float *yv = y->data;
        ck_assert_msg(isnan(yv[0]), "max: a row holding NaN gave %g, not NaN", (double)yv[0]);
        ck_assert_msg(yv[1] == -5.0f, "max: row {-inf, -inf, -5} gave %g", (double)yv[1]);
    }
    if (id == EO_OP_LOGSUMEXP)
        logsumexp_edges();
}

typedef struct reduce_user { int id, axis, keep, transpose; } reduce_user;

static eo_status gf_reduce(eo_ctx *ctx, eo_tensor *const *in, void *user, eo_tensor **out)
{
    const reduce_user *u = user;
    eo_tensor *x = in[0];
    if (u->transpose)
        OT_TRY(eo_transpose(ctx, x, 0, -1, &x));
    return apply_reduce(u->id, ctx, x, u->axis, u->keep, out);
}

static void grad_reduce(int id)
{
    int64_t s[3] = { 2, 3, 4 };
    for (int c = 0; c < 8; c++) {
        /* Distinct values 0.1 apart: a finite-difference step of 1e-2
         * never changes which element is the max. */
        eo_tensor *x = ot_distinct(3, s, -1.2f, 0.1f, 121u + (unsigned)c);
        x->requires_grad = 1;
        reduce_user u = { id, c % 4 == 3 ? -1 : c % 4, c / 4, c % 2 };
        char what[96];
        snprintf(what, sizeof what, "%s [2x3x4] axis %d keepdim %d%s", eo_op_names[id], u.axis,
                 u.keep, u.transpose ? " (transposed view)" : "");
        ot_gradcheck(what, gf_reduce, &x, 1, &u, NULL);
    }
    if (id == EO_OP_MAX) { /* ties: the gradient goes to the first maximum only */
        int64_t sh[2] = { 2, 4 };
        eo_tensor *x = grad_input(2, sh, 0, 1, 3), *y, *L;
        float v[8] = { 1, 3, 3, 2, 7, 7, 7, 7 };
        memcpy(x->data, v, sizeof v);
        OT_OK(eo_max(ot_ctx, x, 1, 0, &y), "max ties");
        OT_OK(eo_sum_all(ot_ctx, y, &L), "max ties");
        OT_OK(eo_backward(ot_ctx, L), "max ties backward");
        const float *g = x->grad->data;
        const float want[8] = { 0, 1, 0, 0, 1, 0, 0, 0 };
        for (int i = 0; i < 8; i++)
            ck_assert_msg(g[i] == want[i], "max ties: grad[%d] = %g, want %g", i, (double)g[i],
                          (double)want[i]);
    }
}

/* ======================================================================
 * Softmax and log_softmax
 * ==================================================================== */

static void ref_softmax(int log_, const double *x, int64_t rows, int64_t cols, double *y)
{
    for (int64_t r = 0; r < rows; r++) {
        const double *xr = x + r * cols;
        double *yr = y + r * cols;
        double m = -INFINITY, s = 0;
        for (int64_t c = 0; c < cols; c++)
            m = xr[c] > m ? xr[c] : m;
        if (m == -INFINITY) { /* fully masked row: no probability mass */
            for (int64_t c = 0; c < cols; c++)
                yr[c] = log_ ? -INFINITY : 0.0;
            continue;
        }
        for (int64_t c = 0; c < cols; c++)
            s += exp(xr[c] - m);
        for (int64_t c = 0; c < cols; c++)
            yr[c] = log_ ? xr[c] - m - log(s) : exp(xr[c] - m) / s;
    }
}

static void fwd_softmax(int id)
{
    int log_ = id == EO_OP_LOG_SOFTMAX;
    static const struct { shape_t x; int nc; } shapes[] = {
        { { 2, {1, 1} }, 0 }, { { 1, {7} }, 0 }, { { 2, {3, 7} }, 0 }, { { 2, {5, 33} }, 0 },
        { { 2, {13, 17} }, 0 }, { { 3, {2, 3, 5} }, 0 }, { { 4, {2, 1, 3, 70} }, 0 },
        { { 2, {13, 17} }, 1 }, { { 3, {3, 4, 5} }, 1 },
    };
    const int n_rand = (int)(sizeof shapes / sizeof shapes[0]);
    for (int c = 0; c < n_rand + 2; c++) {
        eo_mark m = eo_mark_get(ot_ctx);
        eo_tensor *x;
        shape_t sh;
        if (c < n_rand) {
            sh = shapes[c].x;
            x = make_input(sh, shapes[c].nc, -4, 4, 131u + (unsigned)c);
        } else if (c == n_rand) {
            /* Row 0 fully masked, row 1 logits of ±1e4, row 2 partly
             * masked, row 3 large equal logits. */
            sh = (shape_t){ 2, {4, 6} };
            const float I = INFINITY;
            float v[24] = { -I, -I, -I, -I, -I, -I,
                            1e4f, -1e4f, 0, 1e4f - 1, 5, -3,
                            -I, 2, -I, 0.5f, -1, -I,
                            1e4f, 1e4f, 1e4f, 1e4f, 1e4f, 1e4f };
            x = ot_f32(2, sh.s, v);
        } else {
            /* One long row of ±1e4 (longer than the kernel's 32-wide
             * blocks) followed by a masked one. */
            sh = (shape_t){ 2, {2, 45} };
            float v[90];
            for (int i = 0; i < 45; i++)
                v[i] = (i % 3 == 0) ? 1e4f - (float)i : (i % 3 == 1 ? -1e4f : (float)i);
            for (int i = 45; i < 90; i++)
                v[i] = -INFINITY;
            x = ot_f32(2, sh.s, v);
        }
        char what[128];
        snprintf(what, sizeof what, "%s forward %s%s", eo_op_names[id],
                 ot_shape_str(sh.rank, sh.s),
                 c < n_rand ? (shapes[c].nc ? " (nc)" : "") : " (masked and ±1e4 rows)");
        eo_tensor *y;
        OT_OK(log_ ? eo_log_softmax(ot_ctx, x, &y) : eo_softmax(ot_ctx, x, &y), what);
        ot_expect_shape(what, y, sh.rank, sh.s);
        int64_t cols = sh.s[sh.rank - 1], rows = numel_of(sh) / cols;
        double *ref = ot_doubles(numel_of(sh));
        ref_softmax(log_, ot_get(x), rows, cols, ref);
        ot_expect_close(what, y, ref, RTOL, ATOL);
        eo_rewind(ot_ctx, m);
    }
}

static eo_status gf_softmax(eo_ctx *ctx, eo_tensor *const *in, void *user, eo_tensor **out)
{
    const int *u = user; /* u[0]: id, u[1]: transpose the input first */
    eo_tensor *x = in[0];
    if (u[1])
        OT_TRY(eo_transpose(ctx, x, 0, -1, &x));
    return u[0] == EO_OP_LOG_SOFTMAX ? eo_log_softmax(ctx, x, out) : eo_softmax(ctx, x, out);
}

static void grad_softmax(int id)
{
    static const shape_t shapes[] = { { 2, {1, 1} }, { 2, {3, 5} }, { 3, {2, 3, 4} },
                                      { 2, {5, 3} } };
    for (int c = 0; c < 4; c++) {
        eo_tensor *x = grad_input(shapes[c].rank, shapes[c].s, -2, 2, 141u + (unsigned)c);
        int u[2] = { id, c == 3 };
        char what[96];
        snprintf(what, sizeof what, "%s %s%s", eo_op_names[id],
                 ot_shape_str(shapes[c].rank, shapes[c].s), u[1] ? " (transposed view)" : "");
        ot_gradcheck(what, gf_softmax, &x, 1, u, NULL);
    }
    /* A fully masked row has zero gradient, never NaN; the -inf entries
     * of a partly masked row get zero from softmax (y = 0 there) and dy
     * from log_softmax (dy - exp(-inf) sum dy), as in PyTorch. */
    int64_t sh[2] = { 3, 4 };
    eo_tensor *x = grad_input(2, sh, -1, 1, 7), *y, *r, *p, *L;
    float *xv = x->data;
    for (int i = 0; i < 4; i++)
        xv[i] = -INFINITY;
    xv[5] = xv[7] = -INFINITY;
    OT_OK(id == EO_OP_LOG_SOFTMAX ? eo_log_softmax(ot_ctx, x, &y) : eo_softmax(ot_ctx, x, &y),
       "masked rows");
    /* Positive weights: the log_softmax loss is -inf, never NaN (no 0 * inf). */
    r = ot_rand(2, sh, 0.5f, 1.5f, 9);
    OT_OK(eo_mul(ot_ctx, y, r, &p), "masked rows");
    OT_OK(eo_sum_all(ot_ctx, p, &L), "masked rows");
    OT_OK(eo_backward(ot_ctx, L), "masked rows backward");
    const float *g = x->grad->data;
    for (int i = 0; i < 12; i++) {
        ck_assert_msg(isfinite(g[i]), "%s masked rows: grad[%d] = %g", eo_op_names[id], i,
                      (double)g[i]);
        const float want = id == EO_OP_LOG_SOFTMAX && i >= 4 ? ((const float *)r->data)[i] : 0.0f;
        if (i < 4 || i == 5 || i == 7)
            ck_assert_msg(g[i] == want, "%s masked rows: grad[%d] = %g, want %g",
                          eo_op_names[id], i, (double)g[i], (double)want);
    }
}

/* ======================================================================
 * Cross-entropy
 * ==================================================================== */

/* The mean (returned), with each row's loss in rows[] (0 when ignored)
 * and the sum in *sum, when those are not NULL. */
static double ref_cross_entropy(const double *x, int64_t N, int64_t C, const int32_t *t,
                                int32_t ignore, double *rows, double *sum)
{
    double total = 0;
    int64_t count = 0;
    for (int64_t r = 0; r < N; r++) {
        if (rows)
            rows[r] = 0.0;
        if (t[r] == ignore)
            continue;
        const double *xr = x + r * C;
        double m = -INFINITY, s = 0;
        for (int64_t c = 0; c < C; c++)
            m = xr[c] > m ? xr[c] : m;
        for (int64_t c = 0; c < C; c++)
            s += exp(xr[c] - m);
        const double l = m + log(s) - xr[t[r]];
        if (rows)
            rows[r] = l;
        total += l;
        count++;
    }
    if (sum)
        *sum = total;
    return count ? total / (double)count : 0.0;
}

static void fwd_cross_entropy(int id)
{
    static const struct { int64_t N, C; int32_t ignore; int nc; int big; } cases[] = {
        { 1, 1, -100, 0, 0 }, { 3, 7, -100, 0, 0 }, { 5, 33, -100, 0, 0 },
        { 13, 17, -100, 0, 0 }, { 13, 17, 3, 0, 0 }, { 6, 9, -100, 1, 0 },
        { 4, 5, -100, 0, 1 }, { 3, 40, -1, 0, 1 },
    };
    int32_t t[64];
    for (int c = 0; c < (int)(sizeof cases / sizeof cases[0]); c++) {
        eo_mark m = eo_mark_get(ot_ctx);
        int64_t N = cases[c].N, C = cases[c].C, sx[2] = { N, C };
        eo_tensor *x = cases[c].nc ? ot_rand_nc(2, sx, -4, 4, 151u + (unsigned)c)
                                   : ot_rand(2, sx, -4, 4, 151u + (unsigned)c);
        if (cases[c].big) { /* logits of ±1e4: log-sum-exp must stay finite */
            float *v = x->data;
            for (int64_t i = 0; i < N * C; i++)
                v[i] = (i % 3 == 0) ? 1e4f - (float)(i % 7) : (i % 3 == 1 ? -1e4f : v[i]);
        }
        for (int64_t r = 0; r < N; r++)
            t[r] = (int32_t)((r * 5 + 2) % C);
        if (N > 2)
            t[1] = cases[c].ignore; /* one ignored row */
        eo_tensor *tt = ot_i32(1, &N, t), *y;
        char what[128];
        snprintf(what, sizeof what, "%s forward [%lldx%lld]%s ignore %d%s", eo_op_names[id],
                 (long long)N, (long long)C, cases[c].nc ? " (nc)" : "", (int)cases[c].ignore,
                 cases[c].big ? " ±1e4" : "");
        OT_OK(eo_cross_entropy(ot_ctx, x, tt, cases[c].ignore, &y), what);
        ck_assert_int_eq(y->rank, 0);
        double rows[64], sum;
        double ref = ref_cross_entropy(ot_get(x), N, C, t, cases[c].ignore, rows, &sum);
        ot_expect_close(what, y, &ref, RTOL, 1e-5);
        OT_OK(eo_cross_entropy_ex(ot_ctx, x, tt, cases[c].ignore, EO_REDUCTION_SUM, &y), what);
        ck_assert_int_eq(y->rank, 0);
        ot_expect_close(what, y, &sum, RTOL, 1e-5);
        OT_OK(eo_cross_entropy_ex(ot_ctx, x, tt, cases[c].ignore, EO_REDUCTION_NONE, &y), what);
        ot_expect_shape(what, y, 1, &N);
        ot_expect_close(what, y, rows, RTOL, 1e-5); /* ignored rows give 0, as torch */
        eo_rewind(ot_ctx, m);
    }
    /* Every row ignored: the loss is exactly 0 (not 0/0). */
    int64_t sx[2] = { 3, 4 }, n = 3;
    int32_t all[3] = { -100, -100, -100 };
    eo_tensor *x = ot_rand(2, sx, -1, 1, 5), *tt = ot_i32(1, &n, all), *y;
    OT_OK(eo_cross_entropy(ot_ctx, x, tt, -100, &y), "cross_entropy all ignored");
    ck_assert_msg(*(float *)y->data == 0.0f, "cross_entropy all ignored: loss %g, want 0",
                  (double)*(float *)y->data);
    OT_OK(eo_cross_entropy_ex(ot_ctx, x, tt, -100, EO_REDUCTION_SUM, &y), "all ignored, sum");
    ck_assert(*(float *)y->data == 0.0f);
    ck_assert_int_eq(eo_cross_entropy_ex(ot_ctx, x, tt, -100, (eo_reduction)7, &y), EO_ERR_ARG);
}

typedef struct ce_user { eo_tensor *target; int32_t ignore; int transpose; eo_reduction red; } ce_user;

static eo_status gf_cross_entropy(eo_ctx *ctx, eo_tensor *const *in, void *user,
                                  eo_tensor **out)
{
    const ce_user *u = user;
    eo_tensor *x = in[0];
    if (u->transpose)
        OT_TRY(eo_transpose(ctx, x, 0, 1, &x));
    return eo_cross_entropy_ex(ctx, x, u->target, u->ignore, u->red, out);
}

static void grad_cross_entropy(int id)
{
    static const struct { int32_t t[4]; int32_t ignore; int transpose; } cases[] = {
        { { 1, -100, 4, 0 }, -100, 0 },
        { { 2, 0, 2, 3 }, 2, 0 },       /* a valid class used as the ignore index */
        { { 3, 3, 0, 1 }, -100, 1 },    /* logits through a transposed view */
    };
    static const char *const red_name[3] = { "mean", "sum", "none" };
    for (int c = 0; c < 3; c++)
        for (int red = 0; red < 3; red++) {
            int64_t s[2] = { 4, 5 }, n = 4;
            if (cases[c].transpose) { s[0] = 5; s[1] = 4; }
            eo_tensor *x = grad_input(2, s, -2, 2, 161u + (unsigned)c);
            const eo_reduction r = red == 0 ? EO_REDUCTION_MEAN : red == 1 ? EO_REDUCTION_SUM
                                                                            : EO_REDUCTION_NONE;
            ce_user u = { ot_i32(1, &n, cases[c].t), cases[c].ignore, cases[c].transpose, r };
            char what[96];
            snprintf(what, sizeof what, "%s [4x5] ignore %d%s reduction %s", eo_op_names[id],
                     (int)u.ignore, u.transpose ? " (transposed view)" : "", red_name[red]);
            ot_gradcheck(what, gf_cross_entropy, &x, 1, &u, NULL);
        }
    /* All rows ignored: zero gradient, not NaN. */
    int64_t s[2] = { 2, 3 }, n = 2;
    int32_t t[2] = { -100, -100 };
    eo_tensor *x = grad_input(2, s, -1, 1, 3), *L;
    OT_OK(eo_cross_entropy(ot_ctx, x, ot_i32(1, &n, t), -100, &L), "cross_entropy all ignored");
    OT_OK(eo_backward(ot_ctx, L), "cross_entropy all ignored backward");
    for (int i = 0; i < 6; i++) {
        float g = x->grad ? ((float *)x->grad->data)[i] : 0.0f;
        ck_assert_msg(g == 0.0f, "cross_entropy all ignored: grad[%d] = %g", i, (double)g);
    }
}

/* ======================================================================
 * Layernorm
 * ==================================================================== */

static void ref_layernorm(const double *x, int64_t rows, int64_t C, const double *w,
                          const double *b, double eps, double *y)
{
    for (int64_t r = 0; r < rows; r++) {
        const double *xr = x + r * C;
        double mean = 0, var = 0;
        for (int64_t c = 0; c < C; c++)
            mean += xr[c];
        mean /= (double)C;
        for (int64_t c = 0; c < C; c++)
            var += (xr[c] - mean) * (xr[c] - mean);
        var /= (double)C;
        double rstd = 1.0 / sqrt(var + eps);
        for (int64_t c = 0; c < C; c++)
            y[r * C + c] = (xr[c] - mean) * rstd * (w ? w[c] : 1.0) + (b ? b[c] : 0.0);
    }
}

static void fwd_layernorm(int id)
{
    static const struct { shape_t x; int nc, affine, special; } cases[] = {
        { { 2, {1, 1} }, 0, 3, 0 }, { { 1, {7} }, 0, 3, 0 }, { { 2, {3, 7} }, 0, 3, 0 },
        { { 2, {5, 33} }, 0, 3, 0 }, { { 2, {13, 17} }, 0, 3, 0 }, { { 3, {2, 3, 5} }, 0, 3, 0 },
        { { 2, {13, 17} }, 1, 3, 0 }, { { 3, {3, 4, 5} }, 1, 3, 0 },
        { { 2, {5, 33} }, 0, 0, 0 }, { { 2, {5, 33} }, 0, 1, 0 }, { { 2, {5, 33} }, 0, 2, 0 },
        { { 2, {3, 19} }, 0, 3, 1 }, /* constant rows */
        { { 2, {3, 37} }, 0, 3, 2 }, /* 1e4 + noise */
    };
    const float eps = 1e-5f;
    for (int c = 0; c < (int)(sizeof cases / sizeof cases[0]); c++) {
        eo_mark m = eo_mark_get(ot_ctx);
        shape_t sh = cases[c].x;
        int64_t C = sh.s[sh.rank - 1], rows = numel_of(sh) / C;
        eo_tensor *x = make_input(sh, cases[c].nc, -2, 2, 171u + (unsigned)c);
        eo_tensor *w = (cases[c].affine & 1) ? ot_rand(1, &C, 0.5f, 1.5f, 181u + (unsigned)c) : NULL;
        eo_tensor *b = (cases[c].affine & 2) ? ot_rand(1, &C, -1, 1, 191u + (unsigned)c) : NULL;
        float *xv = x->data;
        if (cases[c].special == 1) /* rows of one repeated value, 1e4 among them */
            for (int64_t r = 0; r < rows; r++)
                for (int64_t j = 0; j < C; j++)
                    xv[r * C + j] = r == 0 ? 3.25f : (r == 1 ? 1e4f : -0.1f);
        if (cases[c].special == 2) /* noise of ±1 on 1e4: a one-pass variance loses it */
            for (int64_t i = 0; i < rows * C; i++)
                xv[i] = 1e4f + xv[i] * 0.5f;
        char what[128];
        snprintf(what, sizeof what, "%s forward %s%s%s%s%s", eo_op_names[id],
                 ot_shape_str(sh.rank, sh.s), cases[c].nc ? " (nc)" : "", w ? " w" : "",
                 b ? " b" : "",
                 cases[c].special == 1 ? " constant rows" : cases[c].special == 2 ? " 1e4+noise" : "");
        eo_tensor *y;
        OT_OK(eo_layernorm(ot_ctx, x, w, b, eps, &y), what);
        ot_expect_shape(what, y, sh.rank, sh.s);
        double *ref = ot_doubles(numel_of(sh));
        ref_layernorm(ot_get(x), rows, C, w ? ot_get(w) : NULL, b ? ot_get(b) : NULL, eps, ref);
        ot_expect_close(what, y, ref, RTOL, 1e-5);
        if (cases[c].special == 1) { /* x - mean is exactly 0, so y is exactly b */
            const float *yv = y->data, *bv = b->data;
            for (int64_t i = 0; i < rows * C; i++)
                ck_assert_msg(yv[i] == bv[i % C], "%s: y[%lld] = %.9g, bias %.9g", what,
                              (long long)i, (double)yv[i], (double)bv[i % C]);
        }
        eo_rewind(ot_ctx, m);
    }
}

typedef struct ln_user { int n_in, has_w, has_b, transpose; } ln_user;

static eo_status gf_layernorm(eo_ctx *ctx, eo_tensor *const *in, void *user, eo_tensor **out)
{
    const ln_user *u = user;
    eo_tensor *x = in[0];
    if (u->transpose)
        OT_TRY(eo_transpose(ctx, x, 0, -1, &x));
    eo_tensor *w = u->has_w ? in[1] : NULL, *b = u->has_b ? in[1 + u->has_w] : NULL;
    return eo_layernorm(ctx, x, w, b, 1e-5f, out);
}

static void grad_layernorm(int id)
{
    static const struct { shape_t x; ln_user u; } cases[] = {
        { { 2, {3, 5} }, { 3, 1, 1, 0 } },
        { { 3, {2, 2, 4} }, { 1, 0, 0, 0 } },
        { { 2, {3, 6} }, { 2, 1, 0, 0 } },
        { { 2, {2, 7} }, { 2, 0, 1, 0 } },
        { { 2, {1, 1} }, { 3, 1, 1, 0 } },   /* one column: xhat = 0, only b matters */
        { { 2, {5, 3} }, { 3, 1, 1, 1 } },   /* x through a transposed view: [3, 5] */
    };
    for (int c = 0; c < (int)(sizeof cases / sizeof cases[0]); c++) {
        shape_t sh = cases[c].x;
        int64_t C = cases[c].u.transpose ? sh.s[0] : sh.s[sh.rank - 1];
        eo_tensor *in[3];
        int k = 0;
        in[k++] = grad_input(sh.rank, sh.s, -1, 1, 201u + (unsigned)c);
        if (cases[c].u.has_w)
            in[k++] = grad_input(1, &C, 0.5f, 1.5f, 211u + (unsigned)c);
        if (cases[c].u.has_b)
            in[k++] = grad_input(1, &C, -0.5f, 0.5f, 221u + (unsigned)c);
        char what[96];
        snprintf(what, sizeof what, "%s %s%s%s%s", eo_op_names[id], ot_shape_str(sh.rank, sh.s),
                 cases[c].u.has_w ? " w" : "", cases[c].u.has_b ? " b" : "",
                 cases[c].u.transpose ? " (transposed view)" : "");
        /* A row of few columns can have a small spread (std ~0.15, so
         * rstd ~7): with h = 1e-2 the central difference's third-derivative
         * term is then ~(7h)^2 of the row's largest gradient. A smaller
         * step keeps that below 1e-3; the loss's float rounding over 2h is
         * still ~1e-5. */
        static const eo_gradcheck_opts ln_opts = { 2e-3, 2e-3, 2e-4 };
        ot_gradcheck(what, gf_layernorm, in, k, (void *)&cases[c].u, &ln_opts);
    }
}

/* ======================================================================
 * Embedding
 * ==================================================================== */

static void fwd_embedding(int id)
{
    /* nc: 1 = the table is a non-contiguous view, 2 = the indices are */
    static const struct { int64_t V, D; shape_t idx; int nc; } cases[] = {
        { 7, 5, { 2, {3, 4} }, 0 }, { 7, 5, { 0, {0} }, 0 }, { 1, 1, { 1, {1} }, 0 },
        { 11, 13, { 3, {2, 2, 3} }, 0 }, { 9, 6, { 1, {10} }, 1 }, { 4, 33, { 1, {9} }, 0 },
        { 7, 5, { 2, {3, 4} }, 2 },
    };
    for (int c = 0; c < (int)(sizeof cases / sizeof cases[0]); c++) {
        eo_mark m = eo_mark_get(ot_ctx);
        int64_t V = cases[c].V, D = cases[c].D, st[2] = { V, D }, n = numel_of(cases[c].idx);
        eo_tensor *table = cases[c].nc == 1 ? ot_rand_nc(2, st, -1, 1, 231u + (unsigned)c)
                                       : ot_rand(2, st, -1, 1, 231u + (unsigned)c);
        int32_t ix[16];
        for (int64_t i = 0; i < n; i++) /* repeats, and both ends of [0, V) */
            ix[i] = (int32_t)(i == 0 ? V - 1 : (i * 3) % V);
        eo_tensor *idx = ot_i32(cases[c].idx.rank, cases[c].idx.s, ix), *y;
        if (cases[c].nc == 2) { /* read the same values through a transposed view */
            int64_t ts[2] = { cases[c].idx.s[1], cases[c].idx.s[0] };
            int32_t tv[16];
            for (int64_t i = 0; i < ts[0]; i++)
                for (int64_t j = 0; j < ts[1]; j++)
                    tv[i * ts[1] + j] = ix[j * ts[0] + i];
            OT_OK(eo_transpose(ot_ctx, ot_i32(2, ts, tv), 0, 1, &idx), "transpose i32");
        }
        char what[128];
        snprintf(what, sizeof what, "%s forward table [%lldx%lld]%s idx %s", eo_op_names[id],
                 (long long)V, (long long)D, cases[c].nc == 1 ? " (nc)" : "",
                 ot_shape_str(cases[c].idx.rank, cases[c].idx.s));
        if (cases[c].nc == 2)
            strcat(what, " (nc)");
        OT_OK(eo_embedding(ot_ctx, table, idx, &y), what);
        shape_t so = cases[c].idx;
        so.s[so.rank++] = D;
        ot_expect_shape(what, y, so.rank, so.s);
        const double *tv = ot_get(table);
        double *ref = ot_doubles(n * D);
        for (int64_t i = 0; i < n; i++)
            for (int64_t d = 0; d < D; d++)
                ref[i * D + d] = tv[ix[i] * D + d];
        ot_expect_close(what, y, ref, 0, 0); /* a gather is exact */
        eo_rewind(ot_ctx, m);
    }
}

typedef struct emb_user { eo_tensor *idx; int transpose; } emb_user;

static eo_status gf_embedding(eo_ctx *ctx, eo_tensor *const *in, void *user, eo_tensor **out)
{
    const emb_user *u = user;
    eo_tensor *t = in[0];
    if (u->transpose)
        OT_TRY(eo_transpose(ctx, t, 0, 1, &t));
    return eo_embedding(ctx, t, u->idx, out);
}

static void grad_embedding(int id)
{
    for (int c = 0; c < 2; c++) {
        int64_t s[2] = { 5, 3 }, si[2] = { 2, 4 };
        if (c) { s[0] = 3; s[1] = 5; } /* table [5, 3] as a transposed view */
        int32_t ix[8] = { 1, 4, 1, 0, 1, 2, 4, 1 }; /* 1 four times, 3 never */
        eo_tensor *t = grad_input(2, s, -1, 1, 241u + (unsigned)c);
        emb_user u = { ot_i32(2, si, ix), c };
        char what[96];
        snprintf(what, sizeof what, "%s table [5x3]%s, repeated indices", eo_op_names[id],
                 c ? " (transposed view)" : "");
        ot_gradcheck(what, gf_embedding, &t, 1, &u, NULL);
    }
}

/* ======================================================================
 * Dropout
 * ==================================================================== */

static void fwd_dropout(int id)
{
    static const struct { shape_t x; int nc; float p; uint64_t seed; } cases[] = {
        { { 2, {101, 99} }, 0, 0.3f, 1234 },  /* 9999 elements: crosses a 4096 block */
        { { 2, {101, 99} }, 0, 0.3f, 99 },    /* another seed: another mask */
        { { 3, {7, 13, 17} }, 1, 0.5f, 7 },
        { { 2, {1, 1} }, 0, 0.9f, 3 },
        { { 1, {5000} }, 0, 0.0f, 5 },        /* p = 0: the identity */
        { { 1, {8191} }, 0, 0.9f, 11 },
    };
    const float *first = NULL;
    for (int c = 0; c < (int)(sizeof cases / sizeof cases[0]); c++) {
        shape_t sh = cases[c].x;
        float p = cases[c].p;
        eo_tensor *x = make_input(sh, cases[c].nc, -2, 2, 251u), *y;
        char what[128];
        snprintf(what, sizeof what, "%s forward %s%s p %.2f seed %llu", eo_op_names[id],
                 ot_shape_str(sh.rank, sh.s), cases[c].nc ? " (nc)" : "", (double)p,
                 (unsigned long long)cases[c].seed);
        OT_OK(eo_dropout(ot_ctx, x, p, cases[c].seed, &y), what);
        ot_expect_shape(what, y, sh.rank, sh.s);
        const double *xv = ot_get(x);
        const float *yv = y->data;
        int64_t n = numel_of(sh), kept = 0;
        /* The mask indexes the logical (row-major) order of x. */
        for (int64_t i = 0; i < n; i++) {
            int keep = eo_dropout_keep(cases[c].seed, i, p);
            float want = keep ? (float)xv[i] / (1.0f - p) : 0.0f;
            kept += keep;
            ck_assert_msg(yv[i] == want, "%s: y[%lld] = %.9g, want %.9g (kept %d)", what,
                          (long long)i, (double)yv[i], (double)want, keep);
        }
        if (n >= 1000) { /* binomial: sd of the fraction <= 0.5/sqrt(n) < 0.007 */
            double frac = (double)kept / (double)n;
            ck_assert_msg(fabs(frac - (1.0 - p)) < 0.03, "%s: kept fraction %.4f, expected %.2f",
                          what, frac, 1.0 - p);
        }
        if (c == 0)
            first = yv;
        if (c == 1) { /* two seeds must not give the same mask */
            int64_t differ = 0;
            for (int64_t i = 0; i < n; i++)
                differ += (first[i] == 0.0f) != (yv[i] == 0.0f);
            ck_assert_msg(differ > n / 10, "%s: masks of seeds 1234 and 99 differ in %lld places",
                          what, (long long)differ);
        }
    }
}

static eo_status gf_dropout(eo_ctx *ctx, eo_tensor *const *in, void *user, eo_tensor **out)
{
    eo_tensor *x = in[0];
    if (*(const int *)user)
        OT_TRY(eo_transpose(ctx, x, 0, 1, &x));
    return eo_dropout(ctx, x, 0.4f, 77, out);
}

static void grad_dropout(int id)
{
    for (int c = 0; c < 2; c++) {
        int64_t s[2] = { 4, 5 };
        eo_tensor *x = grad_input(2, s, -2, 2, 261u + (unsigned)c);
        char what[64];
        snprintf(what, sizeof what, "%s [4x5] p 0.4%s", eo_op_names[id],
                 c ? " (transposed view)" : "");
        ot_gradcheck(what, gf_dropout, &x, 1, &c, NULL);
    }
}

/* ======================================================================
 * Convolution (the im2col op) and max pooling
 * ==================================================================== */

static void ref_conv2d(const double *x, shape_t sx, const double *w, shape_t sw, const double *b,
                       int pad, int stride, double *y, shape_t *so)
{
    int64_t N = sx.s[0], C = sx.s[1], H = sx.s[2], W = sx.s[3];
    int64_t Co = sw.s[0], kh = sw.s[2], kw = sw.s[3];
    int64_t OH = (H + 2 * pad - kh) / stride + 1, OW = (W + 2 * pad - kw) / stride + 1;
    for (int64_t n = 0; n < N; n++)
        for (int64_t o = 0; o < Co; o++)
            for (int64_t oh = 0; oh < OH; oh++)
                for (int64_t ow = 0; ow < OW; ow++) {
                    double acc = b ? b[o] : 0.0;
                    for (int64_t c = 0; c < C; c++)
                        for (int64_t i = 0; i < kh; i++)
                            for (int64_t j = 0; j < kw; j++) {
                                int64_t h = oh * stride - pad + i, ww = ow * stride - pad + j;
                                if (h < 0 || h >= H || ww < 0 || ww >= W)
                                    continue;
                                acc += x[((n * C + c) * H + h) * W + ww] *
                                       w[((o * C + c) * kh + i) * kw + j];
                            }
                    y[((n * Co + o) * OH + oh) * OW + ow] = acc;
                }
    *so = (shape_t){ 4, { N, Co, OH, OW } };
}

static void fwd_im2col(int id)
{
    /* nc: 1 = x is a non-contiguous view, 2 = w is */
    static const struct { shape_t x, w; int pad, stride, bias, nc; } cases[] = {
        { { 4, {1, 1, 1, 1} }, { 4, {1, 1, 1, 1} }, 0, 1, 0, 0 },
        { { 4, {2, 3, 7, 5} }, { 4, {4, 3, 3, 3} }, 1, 1, 1, 0 },
        { { 4, {2, 3, 7, 5} }, { 4, {4, 3, 3, 3} }, 0, 2, 0, 0 },
        { { 4, {1, 2, 9, 6} }, { 4, {3, 2, 2, 3} }, 1, 2, 1, 0 },  /* non-square kernel */
        { { 4, {2, 3, 5, 5} }, { 4, {2, 3, 5, 5} }, 0, 1, 1, 0 },  /* 1x1 output */
        { { 4, {1, 2, 4, 4} }, { 4, {3, 2, 1, 1} }, 0, 1, 1, 0 },  /* 1x1 kernel */
        { { 4, {1, 1, 2, 2} }, { 4, {2, 1, 3, 3} }, 1, 1, 0, 0 },  /* kernel > input, padded */
        { { 4, {2, 3, 6, 7} }, { 4, {5, 3, 3, 2} }, 1, 2, 1, 1 },  /* non-contiguous x */
        { { 4, {1, 4, 11, 13} }, { 4, {17, 4, 3, 3} }, 1, 1, 1, 0 },
        { { 4, {2, 3, 6, 7} }, { 4, {4, 3, 2, 3} }, 0, 1, 1, 2 },  /* non-contiguous w */
    };
    for (int c = 0; c < (int)(sizeof cases / sizeof cases[0]); c++) {
        eo_mark m = eo_mark_get(ot_ctx);
        eo_tensor *x = make_input(cases[c].x, cases[c].nc == 1, -1, 1, 271u + (unsigned)c);
        eo_tensor *w = make_input(cases[c].w, cases[c].nc == 2, -1, 1, 281u + (unsigned)c);
        eo_tensor *b = cases[c].bias ? ot_rand(1, cases[c].w.s, -1, 1, 291u + (unsigned)c) : NULL;
        eo_tensor *y;
        char what[160];
        snprintf(what, sizeof what, "%s (conv2d) forward x %s%s w %s pad %d stride %d%s",
                 eo_op_names[id], ot_shape_str(4, cases[c].x.s), cases[c].nc == 1 ? " (nc)" : "",
                 ot_shape_str(4, cases[c].w.s), cases[c].pad, cases[c].stride,
                 b ? " bias" : "");
        if (cases[c].nc == 2)
            strcat(what, " (nc w)");
        OT_OK(eo_conv2d(ot_ctx, x, w, b, cases[c].pad, cases[c].stride, &y), what);
        shape_t so;
        double *ref = ot_doubles(cases[c].x.s[0] * cases[c].w.s[0] * (cases[c].x.s[2] + 2) *
                                 (cases[c].x.s[3] + 2));
        ref_conv2d(ot_get(x), cases[c].x, ot_get(w), cases[c].w, b ? ot_get(b) : NULL,
                   cases[c].pad, cases[c].stride, ref, &so);
        ot_expect_shape(what, y, so.rank, so.s);
        int64_t taps = cases[c].w.s[1] * cases[c].w.s[2] * cases[c].w.s[3];
        ot_expect_close(what, y, ref, RTOL, 1e-6 * (double)taps);
        eo_rewind(ot_ctx, m);
    }
}

typedef struct conv_user { int pad, stride, bias, nc; } conv_user;

static eo_status gf_conv(eo_ctx *ctx, eo_tensor *const *in, void *user, eo_tensor **out)
{
    const conv_user *u = user;
    eo_tensor *x = in[0];
    if (u->nc) { /* x stored [N, C, W, H], used as [N, C, H, W] */
        OT_TRY(eo_transpose(ctx, x, 2, 3, &x));
    }
    return eo_conv2d(ctx, x, in[1], u->bias ? in[2] : NULL, u->pad, u->stride, out);
}

static void grad_im2col(int id)
{
    static const struct { shape_t x, w; conv_user u; } cases[] = {
        { { 4, {1, 2, 5, 4} }, { 4, {3, 2, 3, 2} }, { 1, 2, 1, 0 } },
        { { 4, {2, 1, 4, 4} }, { 4, {2, 1, 3, 3} }, { 0, 1, 0, 0 } },
        { { 4, {1, 1, 3, 5} }, { 4, {2, 1, 2, 2} }, { 1, 1, 1, 1 } },
    };
    for (int c = 0; c < 3; c++) {
        eo_tensor *in[3];
        int64_t co = cases[c].w.s[0];
        in[0] = grad_input(4, cases[c].x.s, -1, 1, 301u + (unsigned)c);
        in[1] = grad_input(4, cases[c].w.s, -1, 1, 311u + (unsigned)c);
        in[2] = grad_input(1, &co, -1, 1, 321u + (unsigned)c);
        char what[128];
        snprintf(what, sizeof what, "%s (conv2d) x %s w %s pad %d stride %d%s", eo_op_names[id],
                 ot_shape_str(4, cases[c].x.s), ot_shape_str(4, cases[c].w.s), cases[c].u.pad,
                 cases[c].u.stride, cases[c].u.nc ? " (x transposed view)" : "");
        ot_gradcheck(what, gf_conv, in, cases[c].u.bias ? 3 : 2, (void *)&cases[c].u, NULL);
    }
}

/* relu: eo_relu_maxpool2d, whose reference is max(0, window max). */
static void pool_forward(int id, int relu)
{
    static const struct { shape_t x; int k, nc; } cases[] = {
        { { 4, {2, 3, 7, 9} }, 2, 0 }, { { 4, {2, 3, 7, 9} }, 3, 0 }, { { 4, {1, 2, 5, 5} }, 1, 0 },
        { { 4, {1, 1, 1, 1} }, 1, 0 }, { { 4, {2, 2, 6, 5} }, 2, 1 }, { { 4, {1, 3, 4, 4} }, 4, 0 },
    };
    for (int c = 0; c < (int)(sizeof cases / sizeof cases[0]); c++) {
        eo_mark m = eo_mark_get(ot_ctx);
        shape_t sh = cases[c].x;
        int k = cases[c].k;
        eo_tensor *x = make_input(sh, cases[c].nc, -3, 3, 331u + (unsigned)c), *y;
        char what[128];
        snprintf(what, sizeof what, "%s forward %s%s k %d", eo_op_names[id],
                 ot_shape_str(4, sh.s), cases[c].nc ? " (nc)" : "", k);
        OT_OK(relu ? eo_relu_maxpool2d(ot_ctx, x, k, &y) : eo_maxpool2d(ot_ctx, x, k, &y), what);
        int64_t P = sh.s[0] * sh.s[1], H = sh.s[2], W = sh.s[3], OH = H / k, OW = W / k;
        int64_t so[4] = { sh.s[0], sh.s[1], OH, OW };
        ot_expect_shape(what, y, 4, so);
        const double *xv = ot_get(x);
        double *ref = ot_doubles(P * OH * OW);
        for (int64_t p = 0; p < P; p++)
            for (int64_t i = 0; i < OH; i++)
                for (int64_t j = 0; j < OW; j++) {
                    double best = -INFINITY;
                    for (int a = 0; a < k; a++)
                        for (int b = 0; b < k; b++) {
                            double v = xv[(p * H + i * k + a) * W + j * k + b];
                            best = v > best ? v : best;
                        }
                    ref[(p * OH + i) * OW + j] = relu && best < 0 ? 0 : best;
                }
        ot_expect_close(what, y, ref, 0, 0);
        eo_rewind(ot_ctx, m);
    }
}

static void fwd_maxpool2d(int id) { pool_forward(id, 0); }
static void fwd_relu_maxpool2d(int id) { pool_forward(id, 1); }

static eo_status gf_maxpool(eo_ctx *ctx, eo_tensor *const *in, void *user, eo_tensor **out)
{
    const int *u = user; /* u[0]: k, u[1]: transpose H and W first, u[2]: ReLU first */
    eo_tensor *x = in[0];
    if (u[1])
        OT_TRY(eo_transpose(ctx, x, 2, 3, &x));
    return u[2] ? eo_relu_maxpool2d(ctx, x, u[0], out) : eo_maxpool2d(ctx, x, u[0], out);
}

static void pool_gradcheck(int id, int relu)
{
    static const struct { shape_t x; int u[2]; } cases[] = {
        { { 4, {1, 2, 6, 5} }, { 2, 0 } },
        { { 4, {2, 1, 7, 6} }, { 3, 0 } },
        { { 4, {1, 2, 5, 4} }, { 2, 1 } },
    };
    for (int c = 0; c < 3; c++) {
        /* Distinct values 0.05 apart: no ties within a finite-difference
         * step; and none within a step of the ReLU's kink at 0. */
        eo_tensor *x = ot_distinct(4, cases[c].x.s, -1.975f, 0.05f, 341u + (unsigned)c);
        x->requires_grad = 1;
        const int u[3] = { cases[c].u[0], cases[c].u[1], relu };
        char what[96];
        snprintf(what, sizeof what, "%s %s k %d%s", eo_op_names[id],
                 ot_shape_str(4, cases[c].x.s), cases[c].u[0],
                 cases[c].u[1] ? " (transposed view)" : "");
        ot_gradcheck(what, gf_maxpool, &x, 1, (void *)u, NULL);
    }
}

static void grad_maxpool2d(int id) { pool_gradcheck(id, 0); }
static void grad_relu_maxpool2d(int id) { pool_gradcheck(id, 1); }

/* ======================================================================
 * Views, copy, concat
 * ==================================================================== */

/* Reference for permute: out[i] = x[perm-mapped index], row-major. */
static void ref_permute(const double *x, shape_t sh, const int *perm, double *y)
{
    int64_t xs[EO_MAX_RANK], idx[EO_MAX_RANK] = {0}, n = numel_of(sh), os[EO_MAX_RANK];
    xs[sh.rank - 1] = 1;
    for (int i = sh.rank - 2; i >= 0; i--)
        xs[i] = xs[i + 1] * sh.s[i + 1];
    for (int i = 0; i < sh.rank; i++)
        os[i] = sh.s[perm[i]];
    for (int64_t k = 0; k < n; k++) {
        int64_t off = 0;
        for (int i = 0; i < sh.rank; i++)
            off += idx[i] * xs[perm[i]];
        y[k] = x[off];
        for (int i = sh.rank - 1; i >= 0; i--) {
            if (++idx[i] < os[i])
                break;
            idx[i] = 0;
        }
    }
}

static void fwd_view(int id)
{
    char what[128];
    snprintf(what, sizeof what, "%s forward", eo_op_names[id]);
    int64_t s3[3] = { 3, 4, 5 };
    eo_tensor *x = ot_rand(3, s3, -1, 1, 351), *y;
    const double *xv = ot_get(x);

    /* reshape of a contiguous tensor: a view (same data), same order */
    int64_t r1[2] = { 12, 5 }, r2[2] = { 6, -1 }, r2o[2] = { 6, 10 }, r3[1] = { 60 };
    OT_OK(eo_reshape(ot_ctx, x, 2, r1, &y), "reshape [3x4x5] -> [12x5]");
    ot_expect_shape("reshape [12x5]", y, 2, r1);
    ck_assert_msg(y->data == x->data, "reshape of a contiguous tensor copied");
    ot_expect_close("reshape [12x5]", y, xv, 0, 0);
    OT_OK(eo_reshape(ot_ctx, x, 2, r2, &y), "reshape [6x-1]");
    ot_expect_shape("reshape [6x-1]", y, 2, r2o);
    ot_expect_close("reshape [6x-1]", y, xv, 0, 0);
    OT_OK(eo_reshape(ot_ctx, x, 1, r3, &y), "reshape [60]");
    ot_expect_close("reshape [60]", y, xv, 0, 0);
    int64_t one[2] = { 1, 1 };
    eo_tensor *x1 = ot_rand(2, one, -1, 1, 3);
    OT_OK(eo_reshape(ot_ctx, x1, 0, NULL, &y), "reshape [1x1] -> scalar");
    ck_assert_int_eq(y->rank, 0);
    ot_expect_close("reshape [1x1] -> scalar", y, ot_get(x1), 0, 0);

    /* reshape of a non-contiguous tensor copies, in logical order */
    int64_t s2[2] = { 4, 6 }, f24[1] = { 24 }, f38[2] = { 3, 8 };
    eo_tensor *nc = ot_rand_nc(2, s2, -1, 1, 353);
    const double *ncv = ot_get(nc);
    OT_OK(eo_reshape(ot_ctx, nc, 1, f24, &y), "reshape non-contiguous [4x6] -> [24]");
    ck_assert_msg(eo_is_contiguous(y), "reshape of a non-contiguous tensor is not contiguous");
    ck_assert_msg(y->data != nc->data, "reshape of a non-contiguous tensor did not copy");
    ot_expect_close("reshape non-contiguous -> [24]", y, ncv, 0, 0);
    OT_OK(eo_reshape(ot_ctx, nc, 2, f38, &y), "reshape non-contiguous [4x6] -> [3x8]");
    ot_expect_close("reshape non-contiguous -> [3x8]", y, ncv, 0, 0);

    /* permute (rank 3 and 4) and transpose (negative axes): views */
    static const int perms3[][3] = { {2, 0, 1}, {1, 2, 0}, {0, 2, 1}, {0, 1, 2} };
    for (int p = 0; p < 4; p++) {
        OT_OK(eo_permute(ot_ctx, x, perms3[p], &y), "permute rank 3");
        ck_assert_msg(y->data == x->data, "permute copied");
        double *ref = ot_doubles(60);
        ref_permute(xv, (shape_t){ 3, {3, 4, 5} }, perms3[p], ref);
        snprintf(what, sizeof what, "%s forward permute {%d,%d,%d}", eo_op_names[id],
                 perms3[p][0], perms3[p][1], perms3[p][2]);
        ot_expect_close(what, y, ref, 0, 0);
    }
    int64_t s4[4] = { 2, 3, 4, 5 };
    eo_tensor *x4 = ot_rand(4, s4, -1, 1, 357);
    const int perm4[4] = { 3, 1, 0, 2 };
    OT_OK(eo_permute(ot_ctx, x4, perm4, &y), "permute rank 4");
    double *ref4 = ot_doubles(120);
    ref_permute(ot_get(x4), (shape_t){ 4, {2, 3, 4, 5} }, perm4, ref4);
    int64_t so4[4] = { 5, 3, 2, 4 };
    ot_expect_shape("permute rank 4", y, 4, so4);
    ot_expect_close("permute rank 4", y, ref4, 0, 0);
    OT_OK(eo_transpose(ot_ctx, x, -1, -3, &y), "transpose(-1, -3)");
    const int p3[3] = { 2, 1, 0 };
    double *reft = ot_doubles(60);
    ref_permute(xv, (shape_t){ 3, {3, 4, 5} }, p3, reft);
    ot_expect_close("transpose(-1, -3)", y, reft, 0, 0);

    /* slice along every axis, an empty slice, and a slice of a transpose */
    static const struct { int axis; int64_t start, len; } sl[] = {
        { 0, 2, 1 }, { 1, 1, 2 }, { -1, 3, 2 }, { 2, 0, 5 }, { 1, 4, 0 },
    };
    for (int c = 0; c < 5; c++) {
        OT_OK(eo_slice(ot_ctx, x, sl[c].axis, sl[c].start, sl[c].len, &y), "slice");
        int a = sl[c].axis < 0 ? sl[c].axis + 3 : sl[c].axis;
        int64_t so[3] = { 3, 4, 5 };
        so[a] = sl[c].len;
        snprintf(what, sizeof what, "%s forward slice axis %d [%lld, +%lld)", eo_op_names[id],
                 sl[c].axis, (long long)sl[c].start, (long long)sl[c].len);
        ot_expect_shape(what, y, 3, so);
        double *ref = ot_doubles(60);
        int64_t k = 0;
        for (int64_t i = 0; i < so[0]; i++)
            for (int64_t j = 0; j < so[1]; j++)
                for (int64_t l = 0; l < so[2]; l++) {
                    int64_t ii[3] = { i, j, l };
                    ii[a] += sl[c].start;
                    ref[k++] = xv[(ii[0] * 4 + ii[1]) * 5 + ii[2]];
                }
        ot_expect_close(what, y, ref, 0, 0);
    }
    eo_tensor *t, *ts;
    OT_OK(eo_transpose(ot_ctx, x, 0, 2, &t), "transpose");   /* [5, 4, 3] */
    OT_OK(eo_slice(ot_ctx, t, 0, 1, 3, &ts), "slice");       /* [3, 4, 3] */
    OT_OK(eo_slice(ot_ctx, ts, 2, 1, 2, &y), "slice");       /* [3, 4, 2] */
    double *refs = ot_doubles(24);
    int64_t k = 0;
    for (int64_t i = 0; i < 3; i++)
        for (int64_t j = 0; j < 4; j++)
            for (int64_t l = 0; l < 2; l++)
                refs[k++] = xv[((l + 1) * 4 + j) * 5 + (i + 1)];
    ot_expect_close("slice(slice(transpose))", y, refs, 0, 0);
}

typedef enum { VG_SLICE_T, VG_PERMUTE_RESHAPE, VG_PERMUTE4, VG_TWICE } view_grad_kind;

static eo_status gf_view(eo_ctx *ctx, eo_tensor *const *in, void *user, eo_tensor **out)
{
    eo_tensor *x = in[0], *t;
    switch (*(const view_grad_kind *)user) {
    case VG_SLICE_T: /* [4, 5] -> [5, 4] -> rows 1..3 -> cols 1..2: output strided */
        OT_TRY(eo_transpose(ctx, x, 0, 1, &t));
        OT_TRY(eo_slice(ctx, t, 0, 1, 3, &t));
        return eo_slice(ctx, t, 1, 1, 2, out);
    case VG_PERMUTE_RESHAPE: { /* a reshape of a permuted view must copy */
        int perm[3] = { 2, 0, 1 };
        int64_t s[2] = { 4, 6 };
        OT_TRY(eo_permute(ctx, x, perm, &t));
        return eo_reshape(ctx, t, 2, s, out);
    }
    case VG_PERMUTE4: {
        int perm[4] = { 3, 1, 0, 2 };
        return eo_permute(ctx, x, perm, out);
    }
    case VG_TWICE: /* x * xᵀ: the same tensor through two paths */
        OT_TRY(eo_transpose(ctx, x, 0, 1, &t));
        return eo_mul(ctx, x, t, out);
    }
    return EO_ERR_ARG;
}

static void grad_view(int id)
{
    static const struct { shape_t x; view_grad_kind k; const char *name; } cases[] = {
        { { 2, {4, 5} }, VG_SLICE_T, "slice(slice(transpose))" },
        { { 3, {2, 3, 4} }, VG_PERMUTE_RESHAPE, "reshape(permute)" },
        { { 4, {2, 1, 3, 2} }, VG_PERMUTE4, "permute rank 4" },
        { { 2, {4, 4} }, VG_TWICE, "x * transpose(x)" },
    };
    for (int c = 0; c < 4; c++) {
        eo_tensor *x = grad_input(cases[c].x.rank, cases[c].x.s, -1, 1, 361u + (unsigned)c);
        char what[96];
        snprintf(what, sizeof what, "%s %s", eo_op_names[id], cases[c].name);
        ot_gradcheck(what, gf_view, &x, 1, (void *)&cases[c].k, NULL);
    }
}

static void fwd_copy(int id)
{
    char what[96];
    /* Already contiguous: the tensor itself. */
    int64_t s[2] = { 3, 7 };
    eo_tensor *x = ot_rand(2, s, -1, 1, 371), *y;
    OT_OK(eo_contiguous(ot_ctx, x, &y), "contiguous of contiguous");
    ck_assert_ptr_eq(x, y);
    static const shape_t shapes[] = { { 2, {13, 17} }, { 3, {3, 4, 5} }, { 4, {2, 3, 4, 5} },
                                      { 2, {1, 1} }, { 2, {1, 9} } };
    for (int c = 0; c < 5; c++) {
        eo_tensor *v = ot_rand_nc(shapes[c].rank, shapes[c].s, -1, 1, 373u + (unsigned)c);
        snprintf(what, sizeof what, "%s forward %s", eo_op_names[id],
                 ot_shape_str(shapes[c].rank, shapes[c].s));
        OT_OK(eo_contiguous(ot_ctx, v, &y), what);
        ck_assert_msg(eo_is_contiguous(y), "%s: result not contiguous", what);
        ot_expect_shape(what, y, shapes[c].rank, shapes[c].s);
        ot_expect_close(what, y, ot_get(v), 0, 0);
    }
    /* I32 data is copied bit for bit too. */
    int64_t si[2] = { 3, 4 };
    int32_t iv[12] = { 0, -1, 2, 2147483647, 4, 5, -6, 7, 8, 9, 10, INT32_MIN };
    eo_tensor *xi = ot_i32(2, si, iv), *ti;
    OT_OK(eo_transpose(ot_ctx, xi, 0, 1, &ti), "transpose i32");
    OT_OK(eo_contiguous(ot_ctx, ti, &y), "contiguous i32");
    ck_assert_int_eq(y->dtype, EO_I32);
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 3; j++)
            ck_assert_int_eq(((int32_t *)y->data)[i * 3 + j], iv[j * 4 + i]);
}

static eo_status gf_copy(eo_ctx *ctx, eo_tensor *const *in, void *user, eo_tensor **out)
{
    (void)user;
    int perm[3] = { 1, 2, 0 };
    eo_tensor *t;
    OT_TRY(eo_permute(ctx, in[0], perm, &t));
    OT_TRY(eo_slice(ctx, t, 1, 1, 2, &t));
    return eo_contiguous(ctx, t, out);
}

static void grad_copy(int id)
{
    int64_t s[3] = { 2, 3, 4 };
    eo_tensor *x = grad_input(3, s, -1, 1, 381);
    char what[64];
    snprintf(what, sizeof what, "%s contiguous(slice(permute))", eo_op_names[id]);
    ot_gradcheck(what, gf_copy, &x, 1, NULL, NULL);
}

static void fwd_concat(int id)
{
    char what[128];
    static const struct { shape_t parts[3]; int n, axis, nc; } cases[] = {
        { { { 3, {2, 3, 4} }, { 3, {2, 1, 4} }, { 3, {2, 5, 4} } }, 3, 1, 0 },
        { { { 3, {1, 3, 4} }, { 3, {2, 3, 4} }, { 3, {3, 3, 4} } }, 3, 0, 0 },
        { { { 3, {2, 3, 1} }, { 3, {2, 3, 7} }, { 3, {2, 3, 2} } }, 3, -1, 0 },
        { { { 2, {13, 5} }, { 2, {13, 12} }, { 0, {0} } }, 2, 1, 1 },
        { { { 2, {3, 5} }, { 0, {0} }, { 0, {0} } }, 1, 0, 1 },
        { { { 1, {1} }, { 1, {1} }, { 1, {3} } }, 3, 0, 0 },
        { { { 4, {2, 2, 3, 3} }, { 4, {2, 1, 3, 3} }, { 0, {0} } }, 2, 1, 1 },
    };
    for (int c = 0; c < (int)(sizeof cases / sizeof cases[0]); c++) {
        eo_mark m = eo_mark_get(ot_ctx);
        eo_tensor *xs[3];
        const double *xv[3];
        int n = cases[c].n, rank = cases[c].parts[0].rank;
        int a = cases[c].axis < 0 ? cases[c].axis + rank : cases[c].axis;
        shape_t so = cases[c].parts[0];
        so.s[a] = 0;
        for (int k = 0; k < n; k++) {
            /* parts 0 and 2 are non-contiguous views when nc */
            int nc = cases[c].nc && (k % 2 == 0) && rank >= 2;
            xs[k] = make_input(cases[c].parts[k], nc, -1, 1, 391u + (unsigned)(c * 3 + k));
            xv[k] = ot_get(xs[k]);
            so.s[a] += cases[c].parts[k].s[a];
        }
        eo_tensor *y;
        snprintf(what, sizeof what, "%s forward %d parts along axis %d of %s%s",
                 eo_op_names[id], n, cases[c].axis, ot_shape_str(so.rank, so.s),
                 cases[c].nc ? " (nc)" : "");
        OT_OK(eo_concat(ot_ctx, xs, n, cases[c].axis, &y), what);
        ot_expect_shape(what, y, so.rank, so.s);
        /* reference: walk the output, find which part each element is in */
        int64_t outer = 1, inner = 1;
        for (int i = 0; i < a; i++) outer *= so.s[i];
        for (int i = a + 1; i < rank; i++) inner *= so.s[i];
        double *ref = ot_doubles(numel_of(so));
        int64_t kk = 0;
        for (int64_t o = 0; o < outer; o++)
            for (int k = 0; k < n; k++) {
                int64_t len = cases[c].parts[k].s[a] * inner;
                for (int64_t e = 0; e < len; e++)
                    ref[kk++] = xv[k][o * len + e];
            }
        ot_expect_close(what, y, ref, 0, 0);
        eo_rewind(ot_ctx, m);
    }
    /* I32 tensors concatenate too (a copy of 4-byte elements). */
    int64_t s1[1] = { 2 }, s2[1] = { 3 };
    int32_t a1[2] = { 7, -8 }, a2[3] = { 9, 2147483647, -1 };
    eo_tensor *is[2] = { ot_i32(1, s1, a1), ot_i32(1, s2, a2) }, *y;
    OT_OK(eo_concat(ot_ctx, is, 2, 0, &y), "concat i32");
    const int32_t want[5] = { 7, -8, 9, 2147483647, -1 };
    for (int i = 0; i < 5; i++)
        ck_assert_int_eq(((int32_t *)y->data)[i], want[i]);
}

static eo_status gf_concat(eo_ctx *ctx, eo_tensor *const *in, void *user, eo_tensor **out)
{
    int mode = *(const int *)user;
    if (mode == 0) { /* [2,3] | transpose([1,2]) = [2,1] | [2,2] along axis 1 */
        eo_tensor *parts[3] = { in[0], NULL, in[2] };
        OT_TRY(eo_transpose(ctx, in[1], 0, 1, &parts[1]));
        return eo_concat(ctx, parts, 3, 1, out);
    }
    if (mode == 1) { /* the same tensor twice, along axis 0 of rank 3 */
        eo_tensor *parts[3] = { in[0], in[1], in[0] };
        return eo_concat(ctx, parts, 3, 0, out);
    }
    return EO_ERR_ARG;
}

static void grad_concat(int id)
{
    char what[96];
    int64_t sa[2] = { 2, 3 }, sb[2] = { 1, 2 }, sc[2] = { 2, 2 };
    eo_tensor *in[3] = { grad_input(2, sa, -1, 1, 401), grad_input(2, sb, -1, 1, 402),
                         grad_input(2, sc, -1, 1, 403) };
    int mode = 0;
    snprintf(what, sizeof what, "%s axis 1 with a transposed part", eo_op_names[id]);
    ot_gradcheck(what, gf_concat, in, 3, &mode, NULL);
    int64_t s3[3] = { 1, 2, 3 }, s4[3] = { 2, 2, 3 };
    eo_tensor *in2[2] = { grad_input(3, s3, -1, 1, 404), grad_input(3, s4, -1, 1, 405) };
    mode = 1;
    snprintf(what, sizeof what, "%s axis 0, one tensor used twice", eo_op_names[id]);
    ot_gradcheck(what, gf_concat, in2, 2, &mode, NULL);
}

/* ======================================================================
 * Attention (the fused op; eo_attention, the composed form, is checked
 * against the same reference here and against the fused op, gradients
 * included, in test_ops_fused.c)
 * ==================================================================== */

/* Mask kinds: none; padding [B,1,1,Tk] with batch entry 1 fully masked
 * (its rows must come out 0); a finite bias [Tq,Tk]; a full [B,H,Tq,Tk]
 * mask with some -inf entries. */
enum { AM_NONE, AM_PAD, AM_BIAS, AM_FULL };

typedef struct attn_case {
    int64_t B, H, Tq, Tk, D;
    int causal, mask, nc;
} attn_case;

static eo_tensor *attn_mask(const attn_case *ac, shape_t *ms, unsigned seed)
{
    if (ac->mask == AM_NONE)
        return NULL;
    if (ac->mask == AM_PAD) {
        uint8_t valid[64];
        for (int64_t b = 0; b < ac->B; b++)
            for (int64_t t = 0; t < ac->Tk; t++) /* batch 1: nothing valid */
                valid[b * ac->Tk + t] = b != 1 && (t % 4 != 3);
        eo_tensor *m;
        ck_assert_int_eq(eo_padding_mask(ot_ctx, EO_CPU, ac->B, ac->Tk, valid, &m), EO_OK);
        *ms = (shape_t){ 4, { ac->B, 1, 1, ac->Tk } };
        return m;
    }
    if (ac->mask == AM_BIAS) {
        *ms = (shape_t){ 2, { ac->Tq, ac->Tk } };
        return ot_rand(2, ms->s, -1, 1, seed);
    }
    *ms = (shape_t){ 4, { ac->B, ac->H, ac->Tq, ac->Tk } };
    eo_tensor *m = ot_rand(4, ms->s, -1, 1, seed);
    float *mv = m->data;
    for (int64_t i = 0; i < numel_of(*ms); i++)
        if (i % 5 == 2)
            mv[i] = -INFINITY;
    return m;
}

/* q, k or v [B, H, T, D]; with nc, a head-split view: [B, T, H, D]
 * storage seen through transpose(1, 2). */
static eo_tensor *attn_input(const attn_case *ac, int64_t T, int nc, unsigned seed)
{
    int64_t s[4] = { ac->B, ac->H, T, ac->D };
    if (!nc)
        return ot_rand(4, s, -1, 1, seed);
    int64_t st[4] = { ac->B, T, ac->H, ac->D };
    eo_tensor *v;
    ck_assert_int_eq(eo_transpose(ot_ctx, ot_rand(4, st, -1, 1, seed), 1, 2, &v), EO_OK);
    return v;
}

static void ref_attention(const attn_case *ac, const double *q, const double *k,
                          const double *v, const double *mask, shape_t ms, float scale,
                          double *out)
{
    int64_t pm[4] = { 1, 1, 1, 1 }, Tq = ac->Tq, Tk = ac->Tk, D = ac->D;
    for (int i = 0; i < ms.rank; i++)
        pm[4 - ms.rank + i] = ms.s[i];
    double *sc = ot_doubles(Tk);
    for (int64_t b = 0; b < ac->B; b++)
        for (int64_t h = 0; h < ac->H; h++) {
            int64_t bh = b * ac->H + h;
            for (int64_t i = 0; i < Tq; i++) {
                double mx = -INFINITY, sum = 0;
                for (int64_t j = 0; j < Tk; j++) {
                    double d = 0;
                    for (int64_t e = 0; e < D; e++)
                        d += q[(bh * Tq + i) * D + e] * k[(bh * Tk + j) * D + e];
                    int64_t idx[4] = { b, h, i, j };
                    d = d * (double)scale + (mask ? mask[bcast_off(pm, idx)] : 0.0);
                    if (ac->causal && j > i)
                        d = -INFINITY;
                    sc[j] = d;
                    mx = d > mx ? d : mx;
                }
                double *o = out + (bh * Tq + i) * D;
                for (int64_t e = 0; e < D; e++)
                    o[e] = 0;
                if (mx == -INFINITY) /* every key masked: no probability mass */
                    continue;
                for (int64_t j = 0; j < Tk; j++)
                    sum += exp(sc[j] - mx);
                for (int64_t j = 0; j < Tk; j++) {
                    double p = exp(sc[j] - mx) / sum;
                    for (int64_t e = 0; e < D; e++)
                        o[e] += p * v[(bh * Tk + j) * D + e];
                }
            }
        }
}

static void fwd_attention(int id)
{
    static const attn_case cases[] = {
        { 1, 1, 1, 1, 1, 0, AM_NONE, 0 },
        { 2, 3, 5, 5, 7, 1, AM_NONE, 0 },
        { 2, 2, 7, 13, 16, 0, AM_PAD, 0 },
        { 1, 1, 70, 70, 8, 1, AM_NONE, 0 },   /* more than one 64-key tile and query block */
        { 1, 1, 67, 70, 9, 0, AM_BIAS, 0 },
        { 2, 2, 6, 6, 5, 1, AM_PAD, 1 },      /* head-split views, causal and padding */
        { 1, 3, 4, 9, 3, 0, AM_FULL, 1 },
    };
    for (int c = 0; c < (int)(sizeof cases / sizeof cases[0]); c++)
        for (int composed = 0; composed < 2; composed++) {
            eo_mark m = eo_mark_get(ot_ctx);
            const attn_case *ac = &cases[c];
            eo_tensor *q = attn_input(ac, ac->Tq, ac->nc, 411u + (unsigned)c);
            eo_tensor *k = attn_input(ac, ac->Tk, ac->nc, 421u + (unsigned)c);
            eo_tensor *v = attn_input(ac, ac->Tk, ac->nc, 431u + (unsigned)c), *y;
            shape_t ms = { 0, {0} };
            eo_tensor *mask = attn_mask(ac, &ms, 441u + (unsigned)c);
            float scale = 1.0f / sqrtf((float)ac->D);
            char what[160];
            snprintf(what, sizeof what,
                     "%s forward%s B%lld H%lld Tq%lld Tk%lld D%lld%s mask %d%s", eo_op_names[id],
                     composed ? " (composed eo_attention)" : "", (long long)ac->B,
                     (long long)ac->H, (long long)ac->Tq, (long long)ac->Tk, (long long)ac->D,
                     ac->causal ? " causal" : "", ac->mask, ac->nc ? " (nc)" : "");
            OT_OK((composed ? eo_attention : eo_attention_fused)(ot_ctx, q, k, v, mask,
                                                                 ac->causal, scale, &y),
                  what);
            int64_t so[4] = { ac->B, ac->H, ac->Tq, ac->D };
            ot_expect_shape(what, y, 4, so);
            double *ref = ot_doubles(ac->B * ac->H * ac->Tq * ac->D);
            ref_attention(ac, ot_get(q), ot_get(k), ot_get(v), mask ? ot_get(mask) : NULL, ms,
                          scale, ref);
            ot_expect_close(what, y, ref, 1e-5, 1e-5);
            eo_rewind(ot_ctx, m);
        }
}

typedef struct attn_user { int causal, nc, mask_grad; eo_tensor *mask; } attn_user;

static eo_status gf_attention(eo_ctx *ctx, eo_tensor *const *in, void *user, eo_tensor **out)
{
    const attn_user *u = user;
    eo_tensor *q = in[0], *k = in[1], *v = in[2];
    if (u->nc) { /* stored [B, T, H, D]: split heads by a view */
        OT_TRY(eo_transpose(ctx, q, 1, 2, &q));
        OT_TRY(eo_transpose(ctx, k, 1, 2, &k));
        OT_TRY(eo_transpose(ctx, v, 1, 2, &v));
    }
    float scale = 1.0f / sqrtf((float)q->shape[3]);
    return eo_attention_fused(ctx, q, k, v, u->mask_grad ? in[3] : u->mask, u->causal, scale,
                              out);
}

static void grad_attention(int id)
{
    static const attn_case cases[] = {
        { 1, 2, 3, 4, 3, 0, AM_NONE, 0 },
        { 1, 1, 4, 4, 3, 1, AM_NONE, 0 },
        { 2, 2, 2, 3, 2, 0, AM_BIAS, 0 },     /* bias [Tq, Tk] requires grad: summed over B, H */
        { 2, 1, 3, 3, 2, 1, AM_PAD, 0 },      /* batch 1 fully masked: zero gradient there */
        { 1, 2, 3, 3, 3, 1, AM_NONE, 1 },     /* head-split views */
    };
    for (int c = 0; c < (int)(sizeof cases / sizeof cases[0]); c++) {
        const attn_case *ac = &cases[c];
        int64_t sq[4] = { ac->B, ac->H, ac->Tq, ac->D }, sk[4] = { ac->B, ac->H, ac->Tk, ac->D };
        if (ac->nc) {
            sq[1] = ac->Tq; sq[2] = ac->H;
            sk[1] = ac->Tk; sk[2] = ac->H;
        }
        eo_tensor *in[4] = { grad_input(4, sq, -1, 1, 451u + (unsigned)c),
                             grad_input(4, sk, -1, 1, 461u + (unsigned)c),
                             grad_input(4, sk, -1, 1, 471u + (unsigned)c), NULL };
        shape_t ms;
        attn_user u = { ac->causal, ac->nc, ac->mask == AM_BIAS, attn_mask(ac, &ms, 481u + (unsigned)c) };
        if (u.mask_grad) {
            in[3] = u.mask;
            in[3]->requires_grad = 1;
        }
        char what[128];
        snprintf(what, sizeof what, "%s B%lld H%lld Tq%lld Tk%lld D%lld%s mask %d%s",
                 eo_op_names[id], (long long)ac->B, (long long)ac->H, (long long)ac->Tq,
                 (long long)ac->Tk, (long long)ac->D, ac->causal ? " causal" : "", ac->mask,
                 ac->nc ? " (head-split views)" : "");
        ot_gradcheck(what, gf_attention, in, u.mask_grad ? 4 : 3, &u, NULL);
    }
}

/* ======================================================================
 * cast (f32 <-> bf16 <-> f16; conversions themselves: tests/test_half.c)
 * ==================================================================== */

/* x rounded to a format with `bits` significant bits, to nearest even,
 * in double: frexp splits off the exponent, nearbyint rounds in the
 * default (ties-to-even) mode. For normal results only. */
static double round_sig(double x, int bits)
{
    int e;
    double m = frexp(x, &e);
    return ldexp(nearbyint(ldexp(m, bits)), e - bits);
}

static void fwd_cast(int id)
{
    static const shape_t shapes[] = { { 2, {13, 17} }, { 3, {3, 4, 5} }, { 1, {1} }, { 0, {0} } };
    char what[96];
    for (int c = 0; c < 4; c++)
        for (int nc = 0; nc < 2; nc++) {
            if (nc && shapes[c].rank < 2)
                continue;
            eo_tensor *x = make_input(shapes[c], nc, -3, 3, 391u + (unsigned)c), *b, *h, *y;
            snprintf(what, sizeof what, "%s forward %s%s", eo_op_names[id],
                     ot_shape_str(shapes[c].rank, shapes[c].s), nc ? " (view)" : "");
            OT_OK(eo_cast(ot_ctx, x, EO_BF16, &b), what);
            OT_OK(eo_cast(ot_ctx, b, EO_F16, &h), what);
            OT_OK(eo_cast(ot_ctx, h, EO_F32, &y), what);
            ck_assert(b->dtype == EO_BF16 && h->dtype == EO_F16 && y->dtype == EO_F32);
            ot_expect_shape(what, y, shapes[c].rank, shapes[c].s);
            /* x -> bf16 (8 bits) -> f16 (11 bits: exact) -> f32 (exact) */
            double *ref = ot_get(x);
            int64_t n = numel_of(shapes[c]);
            for (int64_t i = 0; i < n; i++)
                ref[i] = ref[i] == 0 ? 0 : round_sig(ref[i], 8);
            ot_expect_close(what, y, ref, 0, 0);
        }
}

/* cast(cast(x, dt), f32) on values that are exact in both 16-bit formats
 * at x and x ± h (multiples of 2^-7 in [0.5, 0.875], h = 2^-4): the
 * function is then exactly the identity, so the central difference is
 * exact, and the analytic gradient is the weight rounded to dt (within
 * 2^-9 relative of it). */
static eo_status gf_cast(eo_ctx *ctx, eo_tensor *const *in, void *user, eo_tensor **out)
{
    eo_tensor *t;
    eo_status s = eo_cast(ctx, in[0], *(const eo_dtype *)user, &t);
    return s ? s : eo_cast(ctx, t, EO_F32, out);
}

static void grad_cast(int id)
{
    int64_t s[2] = { 5, 7 };
    char what[64];
    eo_gradcheck_opts opts = { 0.0625, 5e-3, 1e-6 };
    for (int k = 0; k < 2; k++) {
        eo_dtype dt = k ? EO_F16 : EO_BF16;
        eo_tensor *x = grad_input(2, s, 0.5f, 0.875f, 401u + (unsigned)k);
        float *v = x->data;
        for (int i = 0; i < 35; i++)
            v[i] = floorf(v[i] * 128.0f) / 128.0f;
        snprintf(what, sizeof what, "%s to %s and back", eo_op_names[id], eo_dtype_name(dt));
        ot_gradcheck(what, gf_cast, &x, 1, &dt, &opts);
    }
}

/* ======================================================================
 * The table, driven by ops.def
 * ==================================================================== */

typedef void (*op_case_fn)(int id);
typedef struct { op_case_fn fwd, grad; } op_tests;

static const op_tests harness[EO_OP_COUNT] = {
    [EO_OP_VIEW] = { fwd_view, grad_view },
    [EO_OP_COPY] = { fwd_copy, grad_copy },
    [EO_OP_CONCAT] = { fwd_concat, grad_concat },
    [EO_OP_ADD] = { fwd_binary, grad_binary },
    [EO_OP_SUB] = { fwd_binary, grad_binary },
    [EO_OP_MUL] = { fwd_binary, grad_binary },
    [EO_OP_DIV] = { fwd_binary, grad_binary },
    [EO_OP_MAXIMUM] = { fwd_binary, grad_binary },
    [EO_OP_MINIMUM] = { fwd_binary, grad_binary },
    [EO_OP_SCALE] = { fwd_unary, grad_unary },
    [EO_OP_RELU] = { fwd_unary, grad_unary },
    [EO_OP_GELU] = { fwd_unary, grad_unary },
    [EO_OP_GELU_ERF] = { fwd_unary, grad_unary },
    [EO_OP_TANH] = { fwd_unary, grad_unary },
    [EO_OP_SIGMOID] = { fwd_unary, grad_unary },
    [EO_OP_EXP] = { fwd_unary, grad_unary },
    [EO_OP_LOG] = { fwd_unary, grad_unary },
    [EO_OP_MATMUL] = { fwd_matmul, grad_matmul },
    [EO_OP_SUM] = { fwd_reduce, grad_reduce },
    [EO_OP_MEAN] = { fwd_reduce, grad_reduce },
    [EO_OP_MAX] = { fwd_reduce, grad_reduce },
    [EO_OP_LOGSUMEXP] = { fwd_reduce, grad_reduce },
    [EO_OP_SOFTMAX] = { fwd_softmax, grad_softmax },
    [EO_OP_LOG_SOFTMAX] = { fwd_softmax, grad_softmax },
    [EO_OP_CROSS_ENTROPY] = { fwd_cross_entropy, grad_cross_entropy },
    [EO_OP_LAYERNORM] = { fwd_layernorm, grad_layernorm },
    [EO_OP_EMBEDDING] = { fwd_embedding, grad_embedding },
    [EO_OP_DROPOUT] = { fwd_dropout, grad_dropout },
    [EO_OP_IM2COL] = { fwd_im2col, grad_im2col },
    [EO_OP_CONV2D] = { fwd_im2col, grad_im2col },
    [EO_OP_MAXPOOL2D] = { fwd_maxpool2d, grad_maxpool2d },
    [EO_OP_RELU_MAXPOOL2D] = { fwd_relu_maxpool2d, grad_relu_maxpool2d },
    [EO_OP_ATTENTION] = { fwd_attention, grad_attention },
    [EO_OP_CAST] = { fwd_cast, grad_cast },
};

START_TEST(every_op_has_a_forward_test_and_a_gradcheck)
{
    char missing[512] = "";
    size_t len = 0;
    for (int id = 0; id < EO_OP_COUNT; id++) {
        if (harness[id].fwd && harness[id].grad)
            continue;
        len += (size_t)snprintf(missing + len, len < sizeof missing ? sizeof missing - len : 0,
                                " %s(%s%s)", eo_op_names[id], harness[id].fwd ? "" : "forward ",
                                harness[id].grad ? "" : "gradcheck");
        if (len >= sizeof missing)
            len = sizeof missing - 1;
    }
    ck_assert_msg(missing[0] == '\0', "ops.def lists ops the harness does not test:%s", missing);
}
END_TEST

/* Empty tensors (a size-0 axis) go through every op that allows them:
 * matmul with K = 0 must write zeros (its kernel is told C may hold
 * garbage), reductions over nothing give 0 (sum) or an error (max), a
 * loss over no rows is 0, and backward through all of it works. */
START_TEST(empty_tensors)
{
    int64_t s03[2] = { 0, 3 }, s30[2] = { 3, 0 }, s40[2] = { 4, 0 }, s34[2] = { 3, 4 }, n0 = 0;
    eo_tensor *a = grad_input(2, s03, -1, 1, 1), *b = grad_input(2, s30, -1, 1, 2);
    eo_tensor *c = grad_input(2, s40, -1, 1, 3), *d = grad_input(2, s34, -1, 1, 4), *y, *L;
    eo_tensor *t0 = ot_i32(1, &n0, NULL);
    OT_OK(eo_matmul(ot_ctx, b, c, 0, 1, &y), "matmul [3x0] · [4x0]ᵀ");
    double zeros[12] = { 0 };
    ot_expect_close("matmul with K = 0", y, zeros, 0, 0);
    OT_OK(eo_sum_all(ot_ctx, y, &L), "sum_all");
    OT_OK(eo_backward(ot_ctx, L), "backward through K = 0");
    OT_OK(eo_matmul(ot_ctx, a, d, 0, 0, &y), "matmul [0x3] · [3x4]");
    OT_OK(eo_sum_all(ot_ctx, y, &L), "sum_all of [0x4]");
    ck_assert_float_eq(*(float *)L->data, 0.0f);
    OT_OK(eo_backward(ot_ctx, L), "backward through M = 0");
    for (int i = 0; i < 12; i++)
        ck_assert_float_eq(((float *)d->grad->data)[i], 0.0f);
    OT_OK(eo_softmax(ot_ctx, a, &y), "softmax [0x3]");
    OT_OK(eo_log_softmax(ot_ctx, b, &y), "log_softmax [3x0]");
    OT_OK(eo_layernorm(ot_ctx, b, NULL, NULL, 1e-5f, &y), "layernorm [3x0]");
    OT_OK(eo_sum(ot_ctx, b, 1, 0, &y), "sum [3x0] axis 1");
    ot_expect_close("sum over an empty axis", y, zeros, 0, 0);
    ck_assert_int_eq(eo_max(ot_ctx, a, 0, 0, &y), EO_ERR_SHAPE);
    OT_OK(eo_max(ot_ctx, a, 1, 0, &y), "max [0x3] axis 1");
    OT_OK(eo_cross_entropy(ot_ctx, a, t0, -100, &y), "cross_entropy of no rows");
    ck_assert_float_eq(*(float *)y->data, 0.0f);
    OT_OK(eo_embedding(ot_ctx, d, t0, &y), "embedding of no indices");
    OT_OK(eo_dropout(ot_ctx, a, 0.5f, 1, &y), "dropout [0x3]");
    eo_tensor *parts[3] = { a, a, a };
    OT_OK(eo_concat(ot_ctx, parts, 3, 0, &y), "concat of empties");
    int64_t sq[4] = { 1, 1, 2, 4 }, sk[4] = { 1, 1, 0, 4 };
    eo_tensor *q = grad_input(4, sq, -1, 1, 5), *k = grad_input(4, sk, -1, 1, 6);
    OT_OK(eo_attention_fused(ot_ctx, q, k, k, NULL, 0, 1, &y), "attention with no keys");
    ot_expect_close("attention with no keys", y, zeros, 0, 0);
}
END_TEST

START_TEST(op_forward)
{
    if (harness[_i].fwd)
        harness[_i].fwd(_i);
}
END_TEST

START_TEST(op_gradcheck)
{
    if (harness[_i].grad)
        harness[_i].grad(_i);
}
END_TEST

Suite *eo_suite_ops(void)
{
    Suite *s = suite_create("ops");
    TCase *tc = tcase_create("harness");
    tcase_add_test(tc, every_op_has_a_forward_test_and_a_gradcheck);
    suite_add_tcase(s, tc);
    tc = tcase_create("forward");
    tcase_add_checked_fixture(tc, ot_setup, ot_teardown);
    tcase_add_loop_test(tc, op_forward, 0, EO_OP_COUNT);
    tcase_add_test(tc, empty_tensors);
    tcase_set_timeout(tc, 30);
    suite_add_tcase(s, tc);
    tc = tcase_create("gradcheck");
    tcase_add_checked_fixture(tc, ot_setup, ot_teardown);
    tcase_add_loop_test(tc, op_gradcheck, 0, EO_OP_COUNT);
    tcase_set_timeout(tc, 30);
    suite_add_tcase(s, tc);
    return s;
}
