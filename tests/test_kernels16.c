/* tests/test_kernels16.c — the CPU's 16-bit row and elementwise kernels
 * (ops/cpu/binary16.c, softmax16.c, layernorm16.c, cross_entropy16.c,
 * embedding16.c) against the f32 kernels on the widened inputs.
 *
 * Each 16-bit kernel widens, runs the f32 kernel's arithmetic and rounds
 * once, so its results must equal, bit for bit, the f32 kernel run on the
 * widened inputs with its outputs rounded to nearest even ("widen → f32
 * → narrow"); "+=" outputs start from random values, widened for the f32
 * side. A NaN matches any NaN (payloads are not part of the contract).
 * The embedding backward's contract rounds each contribution (a 16-bit
 * index_add); it is held to a scalar reading of that, and to the f32
 * kernel where no row repeats. Layernorm's dw, db are held to the f32
 * kernel on one thread: the 16-bit kernel sums them in that order for any
 * thread count.
 *
 * Inputs: bf16 and f16; shapes 1x1, 1x7, 3x1000 and odd broadcasts; NaN,
 * ±inf and values near the f16 maximum planted in some rows; each kernel
 * also on one thread, on a fake two-way split (chunks run last first) and
 * on a real pool of two threads (layernorm's backward also of three), all
 * bit-identical. The path through
 * F16C / AVX2 conversions is the avx2 and avx512 kernel variants'; make
 * test runs the same suite on the base variant too (EO_CPU=base). */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "ops/kernels.h"
#include "tools/cli/cpu_kernels.h"
#include "ops/cpu/half.h"
#include "ops/cpu/matmul.h"
#include "tools/threads/pool.h"

#define CHECK_MSG(cond, ...)                                                   \
    do {                                                                       \
        if (!(cond))                                                           \
            ck_abort_msg(__VA_ARGS__);                                         \
    } while (0)

static const int DTS[2] = {EO_K_BF16, EO_K_F16};
static const char *dtname(int dt) { return dt == EO_K_BF16 ? "bf16" : "f16"; }

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static float frand(void) /* [-1, 1) */
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (float)((rng >> 40) * (2.0 / 16777216.0) - 1.0);
}

/* Buffers live for one test: a small bump allocator over malloc'd blocks. */
enum { MAXBUF = 64 };
static void *bufs[MAXBUF];
static int nbufs;
static void *buf(size_t bytes)
{
    ck_assert_int_lt(nbufs, MAXBUF);
    void *p = calloc(1, bytes ? bytes : 1);
    ck_assert_ptr_nonnull(p);
    return bufs[nbufs++] = p;
}
static void free_bufs(void)
{
    while (nbufs)
        free(bufs[--nbufs]);
}
static uint16_t *h16(int64_t n) { return buf((size_t)n * 2); }
static float *f32(int64_t n) { return buf((size_t)n * 4); }

/* n random 16-bit values scale * [-1, 1); with specials, a few planted
 * NaN, ±inf and values near the f16 maximum. */
static uint16_t *rand16(int dt, int64_t n, float scale)
{
    uint16_t *h = h16(n);
    for (int64_t i = 0; i < n; i++)
        h[i] = eo_half_put(dt, frand() * scale);
    return h;
}
static uint16_t *copy16(const uint16_t *src, int64_t n)
{
    uint16_t *h = h16(n);
    memcpy(h, src, (size_t)n * 2);
    return h;
}
static float *widen(int dt, const uint16_t *h, int64_t n)
{
    float *f = f32(n);
    eo_half_to_f32_scalar(dt, n, h, f);
    return f;
}
static void put(int dt, uint16_t *h, int64_t i, float v) { h[i] = eo_half_put(dt, v); }

static int is_nan16(int dt, uint16_t h)
{
    return dt == EO_K_BF16 ? (h & 0x7f80) == 0x7f80 && (h & 0x7f)
                           : (h & 0x7c00) == 0x7c00 && (h & 0x3ff);
}

/* got (16-bit) == want (f32, rounded here), NaN matching NaN. */
static void expect16(const char *what, int dt, const uint16_t *got, const float *want, int64_t n)
{
    for (int64_t i = 0; i < n; i++) {
        const uint16_t w = eo_half_put(dt, want[i]);
        if (got[i] == w || (is_nan16(dt, got[i]) && is_nan16(dt, w)))
            continue;
        ck_abort_msg("%s %s[%lld]: 0x%04x (%g), want 0x%04x (%g)", what, dtname(dt),
                     (long long)i, got[i], (double)eo_half_get(dt, got[i]), w,
                     (double)eo_half_get(dt, w));
    }
}
static void expect_same16(const char *what, int dt, const uint16_t *a, const uint16_t *b,
                          int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        CHECK_MSG(a[i] == b[i] || (is_nan16(dt, a[i]) && is_nan16(dt, b[i])),
                  "%s %s[%lld]: 0x%04x vs 0x%04x", what, dtname(dt), (long long)i, a[i], b[i]);
}
static void expect_same32(const char *what, const float *a, const float *b, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        CHECK_MSG(memcmp(a + i, b + i, 4) == 0 || (a[i] != a[i] && b[i] != b[i]),
                  "%s[%lld]: %a vs %a", what, (long long)i, (double)a[i], (double)b[i]);
}

/* The thread hooks: the fake two-way split of test_kernels.c (chunks run
 * serially, last first) and a real pool of two threads. */
static void fake_run(void *user, eo_par_body body, void *arg, int64_t n)
{
    (void)user;
    const int64_t mid = n / 2;
    if (mid < n)
        body(arg, mid, n, 1);
    if (0 < mid)
        body(arg, 0, mid, 0);
}
static const eo_exec fake2 = {{fake_run, NULL, 2}, NULL};
static eo_pool *pool2, *pool3;
static eo_exec real2, real3;
static void pool_setup(void)
{
    pool2 = eo_pool_create(2);
    pool3 = eo_pool_create(3);
    real2.par = eo_pool_par(pool2);
    real3.par = eo_pool_par(pool3);
    real2.cuda = real3.cuda = NULL;
}
static void pool_teardown(void)
{
    eo_pool_destroy(pool2);
    eo_pool_destroy(pool3);
    free_bufs();
}
/* exec k: 0 one thread, 1 the fake split, 2 the pool of two, 3 of three
 * (layernorm's dw, db items are as wide as the thread count allows) */
static const eo_exec *exec_of(int k)
{
    return k == 0 ? NULL : k == 1 ? &fake2 : k == 2 ? &real2 : &real3;
}

/* ---- binary ------------------------------------------------------------------- */

typedef struct bcase {
    int64_t out[4], a[4], b[4]; /* a, b: 1 on broadcast axes */
} bcase;

static const bcase bcases[] = {
    {{1, 1, 1, 1}, {1, 1, 1, 1}, {1, 1, 1, 1}},
    {{1, 1, 1, 7}, {1, 1, 1, 7}, {1, 1, 1, 7}},
    {{1, 1, 3, 1000}, {1, 1, 3, 1000}, {1, 1, 1, 1000}}, /* a bias row */
    {{1, 1, 3, 7}, {1, 1, 3, 1}, {1, 1, 1, 7}},          /* an outer product's shape */
    {{2, 3, 5, 7}, {2, 3, 5, 7}, {1, 3, 1, 7}},          /* summed over two axes */
    {{2, 3, 5, 7}, {2, 1, 5, 1}, {1, 1, 1, 1}},          /* a scalar b */
    {{1, 1, 40, 1000}, {1, 1, 40, 1000}, {1, 1, 40, 1}}, /* threads; summed along rows */
    {{1, 1, 40, 1000}, {1, 1, 40, 1000}, {1, 1, 1, 1000}},
};

/* Contiguous strides of shape sh inside out's index space (0 where sh
 * is 1 and out is not). */
static void strides_of(const int64_t out[4], const int64_t sh[4], int64_t st[4])
{
    int64_t s = 1;
    for (int k = 3; k >= 0; k--) {
        st[k] = sh[k] == 1 && out[k] != 1 ? 0 : s;
        s *= sh[k];
    }
}
static int64_t count(const int64_t sh[4]) { return sh[0] * sh[1] * sh[2] * sh[3]; }

/* NaN, ±inf and near-max values at a few places. */
static void plant(int dt, uint16_t *h, int64_t n)
{
    if (n < 8)
        return;
    put(dt, h, 1, NAN);
    put(dt, h, 3, INFINITY);
    put(dt, h, 5, -INFINITY);
    put(dt, h, 6, 65504.0f);
    put(dt, h, 7, -60000.0f);
}

static void check_binary(const bcase *c, int dt, eo_binop op, int specials)
{
    int64_t so[4], sa[4], sb[4];
    strides_of(c->out, c->out, so);
    strides_of(c->out, c->a, sa);
    strides_of(c->out, c->b, sb);
    const int64_t no = count(c->out), na = count(c->a), nb = count(c->b);
    uint16_t *a = rand16(dt, na, 2.0f), *b = rand16(dt, nb, 2.0f), *dout = rand16(dt, no, 1.0f);
    if (op == EO_BIN_DIV)
        for (int64_t i = 0; i < nb; i++) /* keep most quotients finite */
            put(dt, b, i, 0.5f + fabsf(eo_half_get(dt, b[i])));
    if (op >= EO_BIN_MAX && na > 2 && nb > 2) /* ties */
        a[2] = b[2];
    if (specials) {
        plant(dt, a, na);
        plant(dt, dout, no);
    }
    float *af = widen(dt, a, na), *bf = widen(dt, b, nb), *df = widen(dt, dout, no);
    /* forward */
    float *of = f32(no);
    eo_k_binary(op, c->out, of, so, af, sa, bf, sb, NULL);
    uint16_t *o16[3];
    for (int k = 0; k < 3; k++) {
        o16[k] = h16(no);
        eo_k_binary16(op, dt, c->out, o16[k], so, a, sa, b, sb, exec_of(k));
    }
    expect16("binary16", dt, o16[0], of, no);
    expect_same16("binary16 threads", dt, o16[0], o16[1], no);
    expect_same16("binary16 pool", dt, o16[0], o16[2], no);
    /* backward, += onto random gradients */
    uint16_t *da0 = rand16(dt, na, 1.0f), *db0 = rand16(dt, nb, 1.0f);
    float *daf = widen(dt, da0, na), *dbf = widen(dt, db0, nb);
    eo_k_binary_backward(op, c->out, df, so, af, sa, bf, sb, daf, sa, dbf, sb, NULL);
    uint16_t *da[3], *db[3];
    for (int k = 0; k < 3; k++) {
        da[k] = copy16(da0, na);
        db[k] = copy16(db0, nb);
        eo_k_binary_backward16(op, dt, c->out, dout, so, a, sa, b, sb, da[k], sa, db[k], sb,
                               exec_of(k));
    }
    expect16("binary_backward16 da", dt, da[0], daf, na);
    expect16("binary_backward16 db", dt, db[0], dbf, nb);
    for (int k = 1; k < 3; k++) {
        expect_same16("binary_backward16 da threads", dt, da[0], da[k], na);
        expect_same16("binary_backward16 db threads", dt, db[0], db[k], nb);
    }
    /* one side only */
    uint16_t *dbo = copy16(db0, nb);
    eo_k_binary_backward16(op, dt, c->out, dout, so, a, sa, b, sb, NULL, sa, dbo, sb, NULL);
    expect_same16("binary_backward16 db alone", dt, dbo, db[0], nb);
    free_bufs();
}

/* Loop index: case * 2 + dtype; every op, with and without specials. */
START_TEST(binary16_equals_f32_rounded)
{
    const bcase *c = &bcases[_i / 2];
    const int dt = DTS[_i % 2];
    for (int op = 0; op < EO_BIN_COUNT; op++)
        for (int sp = 0; sp < 2; sp++)
            check_binary(c, dt, (eo_binop)op, sp);
}
END_TEST

/* A broadcast gradient stays f32 until its last term, in the f32 kernel's
 * order. With u the 16-bit spacing at 1 and g = 1:
 *  - summed over rows (db [1, C] from [R, C]), terms u/2 then u/4: f32
 *    gives 1 + 3u/4, which rounds to 1 + u; rounding after each term
 *    would give 1 (1 + u/2 ties to even, then u/4 is lost);
 *  - summed along the run (db [R, 1]), terms u/2, 2^-24, 2^-24: the run
 *    is summed first (u/2 + 2^-23), then added: 1 + u/2 + 2^-23 rounds
 *    to 1 + u; adding each term to g in f32 loses the 2^-24s and ties. */
START_TEST(binary16_broadcast_sums_stay_f32)
{
    for (int i = 0; i < 2; i++) {
        const int dt = DTS[i];
        const float u = dt == EO_K_BF16 ? 0x1p-7f : 0x1p-10f;
        const uint16_t one = eo_half_put(dt, 1.0f), up = eo_half_put(dt, 1.0f + u);
        /* rows: shape [2, 1], db stride 0 along the rows */
        const int64_t sh1[4] = {1, 1, 2, 1}, full1[4] = {0, 0, 1, 1}, bias1[4] = {0, 0, 0, 1};
        uint16_t d1[2] = {eo_half_put(dt, u / 2), eo_half_put(dt, u / 4)}, db1 = one, x1[2] = {0};
        eo_k_binary_backward16(EO_BIN_ADD, dt, sh1, d1, full1, x1, full1, &db1, bias1, NULL,
                               full1, &db1, bias1, NULL);
        ck_assert_uint_eq(db1, up);
        /* along the run: shape [1, 3], db stride 0 there */
        const int64_t sh2[4] = {1, 1, 1, 3}, full2[4] = {0, 0, 3, 1}, run2[4] = {0, 0, 1, 0};
        uint16_t d2[3] = {eo_half_put(dt, u / 2), eo_half_put(dt, 0x1p-24f),
                          eo_half_put(dt, 0x1p-24f)};
        uint16_t db2 = one, x2[3] = {0};
        eo_k_binary_backward16(EO_BIN_ADD, dt, sh2, d2, full2, x2, full2, &db2, run2, NULL, full2,
                               &db2, run2, NULL);
        ck_assert_uint_eq(db2, up);
    }
}
END_TEST

/* ---- softmax, log_softmax ------------------------------------------------------------ */

typedef struct rcase {
    int64_t rows, cols;
} rcase;
static const rcase rcases[] = {{1, 1}, {1, 7}, {3, 1000}, {9, 33}, {40, 1000}, {2, 70000}};
#define N_RCASES ((int)(sizeof rcases / sizeof rcases[0]))

/* Rows with NaN, +inf, all -inf, a large common offset, near f16 max. */
static void plant_rows(int dt, uint16_t *h, int64_t rows, int64_t cols)
{
    if (rows < 9)
        return;
    put(dt, h, 1 * cols + cols / 2, NAN);
    put(dt, h, 2 * cols, INFINITY);
    for (int64_t j = 0; j < cols; j++) {
        put(dt, h, 3 * cols + j, -INFINITY);
        put(dt, h, 4 * cols + j, 3e4f + 40.0f * frand()); /* offset: bf16 steps 128 */
        put(dt, h, 5 * cols + j, 65504.0f * frand());
        put(dt, h, 6 * cols + j, 7.0f); /* constant */
    }
    put(dt, h, 7 * cols + 1, -INFINITY);
}

START_TEST(softmax16_equals_f32_rounded)
{
    const rcase *c = &rcases[_i / 2];
    const int dt = DTS[_i % 2];
    const int64_t R = c->rows, C = c->cols, n = R * C;
    for (int log = 0; log < 2; log++) {
        uint16_t *x = rand16(dt, n, 6.0f);
        plant_rows(dt, x, R, C);
        float *xf = widen(dt, x, n), *yf = f32(n);
        float *ws32 = f32((int64_t)eo_k_softmax_ws(log, R, C, 1) / 4 + 1);
        eo_k_softmax(log, R, C, xf, yf, ws32, NULL);
        void *ws = buf(eo_k_softmax_ws16(R, C, 2));
        uint16_t *y[3];
        for (int k = 0; k < 3; k++) {
            y[k] = h16(n);
            eo_k_softmax16(log, dt, R, C, x, y[k], ws, exec_of(k));
        }
        expect16(log ? "log_softmax16" : "softmax16", dt, y[0], yf, n);
        expect_same16("softmax16 threads", dt, y[0], y[1], n);
        expect_same16("softmax16 pool", dt, y[0], y[2], n);
        /* backward from the stored 16-bit y */
        uint16_t *dy = rand16(dt, n, 1.0f), *dx0 = rand16(dt, n, 0.5f);
        float *ywf = widen(dt, y[0], n), *dyf = widen(dt, dy, n), *dxf = widen(dt, dx0, n);
        eo_k_softmax_backward(log, R, C, ywf, dyf, dxf, NULL);
        uint16_t *dx[3];
        for (int k = 0; k < 3; k++) {
            dx[k] = copy16(dx0, n);
            eo_k_softmax_backward16(log, dt, R, C, y[0], dy, dx[k], ws, exec_of(k));
        }
        expect16(log ? "log_softmax_backward16" : "softmax_backward16", dt, dx[0], dxf, n);
        expect_same16("softmax_backward16 threads", dt, dx[0], dx[1], n);
        expect_same16("softmax_backward16 pool", dt, dx[0], dx[2], n);
        free_bufs();
    }
}
END_TEST

/* ---- layernorm ------------------------------------------------------------------------ */

START_TEST(layernorm16_equals_f32_rounded)
{
    const rcase *c = &rcases[_i / 2];
    const int dt = DTS[_i % 2];
    const int64_t R = c->rows, C = c->cols, n = R * C;
    if (n > 100000)
        return; /* the long rows are softmax's and cross-entropy's case */
    for (int affine = 0; affine < 2; affine++) {
        uint16_t *x = rand16(dt, n, 3.0f);
        plant_rows(dt, x, R, C);
        uint16_t *w = affine ? rand16(dt, C, 2.0f) : NULL, *b = affine ? rand16(dt, C, 1.0f) : NULL;
        float *xf = widen(dt, x, n), *wf = affine ? widen(dt, w, C) : NULL;
        float *bf = affine ? widen(dt, b, C) : NULL, *yf = f32(n), *mf = f32(R), *rf = f32(R);
        eo_k_layernorm(R, C, xf, wf, bf, 1e-5f, yf, mf, rf, NULL);
        void *ws = buf(eo_k_layernorm_ws16(R, C, 3));
        uint16_t *y[3];
        float *mean[3], *rstd[3];
        for (int k = 0; k < 3; k++) {
            y[k] = h16(n);
            mean[k] = f32(R);
            rstd[k] = f32(R);
            eo_k_layernorm16(dt, R, C, x, w, b, 1e-5f, y[k], mean[k], rstd[k], ws, exec_of(k));
        }
        expect16("layernorm16", dt, y[0], yf, n);
        expect_same32("layernorm16 mean", mean[0], mf, R);
        expect_same32("layernorm16 rstd", rstd[0], rf, R);
        for (int k = 1; k < 3; k++) {
            expect_same16("layernorm16 threads", dt, y[0], y[k], n);
            expect_same32("layernorm16 mean threads", mean[0], mean[k], R);
        }
        /* backward: dx, dw, db onto random values */
        uint16_t *dy = rand16(dt, n, 1.0f), *dx0 = rand16(dt, n, 0.5f);
        uint16_t *dw0 = rand16(dt, C, 0.5f), *db0 = rand16(dt, C, 0.5f);
        float *dyf = widen(dt, dy, n), *dxf = widen(dt, dx0, n);
        float *dwf = widen(dt, dw0, C), *dbf = widen(dt, db0, C);
        float *ws32 = f32((int64_t)eo_k_layernorm_backward_ws(R, C, 1) / 4 + 1);
        eo_k_layernorm_backward(R, C, xf, wf, mf, rf, dyf, dxf, dwf, dbf, ws32, NULL);
        uint16_t *dx[4], *dw[4], *db[4];
        for (int k = 0; k < 4; k++) {
            dx[k] = copy16(dx0, n);
            dw[k] = copy16(dw0, C);
            db[k] = copy16(db0, C);
            eo_k_layernorm_backward16(dt, R, C, x, w, mf, rf, dy, dx[k], dw[k], db[k], ws,
                                      exec_of(k));
        }
        expect16("layernorm_backward16 dx", dt, dx[0], dxf, n);
        expect16("layernorm_backward16 dw", dt, dw[0], dwf, C);
        expect16("layernorm_backward16 db", dt, db[0], dbf, C);
        for (int k = 1; k < 4; k++) {
            expect_same16("layernorm_backward16 dx threads", dt, dx[0], dx[k], n);
            expect_same16("layernorm_backward16 dw threads", dt, dw[0], dw[k], C);
            expect_same16("layernorm_backward16 db threads", dt, db[0], db[k], C);
        }
        /* dx alone, dw alone: the same values */
        uint16_t *dxo = copy16(dx0, n), *dwo = copy16(dw0, C);
        eo_k_layernorm_backward16(dt, R, C, x, w, mf, rf, dy, dxo, NULL, NULL, ws, NULL);
        eo_k_layernorm_backward16(dt, R, C, x, w, mf, rf, dy, NULL, dwo, NULL, ws, NULL);
        expect_same16("layernorm_backward16 dx alone", dt, dxo, dx[0], n);
        expect_same16("layernorm_backward16 dw alone", dt, dwo, dw[0], C);
        free_bufs();
    }
}
END_TEST

/* ---- cross-entropy ---------------------------------------------------------------------- */

static const rcase cecases[] = {{1, 1}, {1, 7}, {3, 1000}, {9, 33}, {40, 1000}, {2, 50257}};

START_TEST(cross_entropy16_equals_f32_rounded)
{
    const rcase *c = &cecases[_i / 2];
    const int dt = DTS[_i % 2];
    const int64_t R = c->rows, C = c->cols, n = R * C;
    for (int red = 0; red < 3; red++) {
        uint16_t *x = rand16(dt, n, 5.0f);
        plant_rows(dt, x, R, C);
        int32_t *t = buf((size_t)R * 4);
        for (int64_t r = 0; r < R; r++)
            t[r] = (int32_t)((r * 7919 + 3) % C);
        if (R > 2)
            t[R - 2] = -100; /* ignored */
        float *xf = widen(dt, x, n), *stf = f32(2 * R), *lf = f32(R);
        eo_k_cross_entropy(R, C, xf, t, -100, (eo_ce_reduction)red, stf, lf, NULL);
        void *ws = buf(eo_k_cross_entropy_ws16(R, C, 2));
        uint16_t *loss[3];
        float *st[3];
        for (int k = 0; k < 3; k++) {
            loss[k] = h16(R);
            st[k] = f32(2 * R);
            eo_k_cross_entropy16(dt, R, C, x, t, -100, (eo_ce_reduction)red, st[k], loss[k], ws,
                                 exec_of(k));
        }
        const int64_t nl = red == EO_CE_NONE ? R : 1;
        expect16("cross_entropy16 loss", dt, loss[0], lf, nl);
        for (int64_t r = 0; r < R; r++) { /* a NaN row's max may be any of its values */
            if (t[r] == -100 || stf[2 * r + 1] != stf[2 * r + 1])
                continue;
            expect_same32("cross_entropy16 stats", st[0] + 2 * r, stf + 2 * r, 2);
        }
        for (int k = 1; k < 3; k++)
            expect_same16("cross_entropy16 loss threads", dt, loss[0], loss[k], nl);
        /* backward onto random dlogits */
        uint16_t *dl = rand16(dt, R, 1.0f), *dx0 = rand16(dt, n, 0.25f);
        float *dlf = widen(dt, dl, R), *dxf = widen(dt, dx0, n);
        eo_k_cross_entropy_backward(R, C, xf, t, -100, (eo_ce_reduction)red, stf, dlf, dxf, NULL);
        uint16_t *dx[3];
        for (int k = 0; k < 3; k++) {
            dx[k] = copy16(dx0, n);
            eo_k_cross_entropy_backward16(dt, R, C, x, t, -100, (eo_ce_reduction)red, stf, dl,
                                          dx[k], ws, exec_of(k));
        }
        expect16("cross_entropy_backward16", dt, dx[0], dxf, n);
        expect_same16("cross_entropy_backward16 threads", dt, dx[0], dx[1], n);
        expect_same16("cross_entropy_backward16 pool", dt, dx[0], dx[2], n);
        free_bufs();
    }
}
END_TEST

/* Every row ignored: loss 0 (mean, sum), nothing added by the backward. */
START_TEST(cross_entropy16_all_ignored)
{
    for (int i = 0; i < 2; i++) {
        const int dt = DTS[i];
        uint16_t *x = rand16(dt, 14, 1.0f), loss[2] = {0x1234, 0x1234};
        uint16_t *dx = rand16(dt, 14, 1.0f), *dx0 = copy16(dx, 14), one = eo_half_put(dt, 1.0f);
        const int32_t t[2] = {-1, -1};
        float st[4];
        void *ws = buf(eo_k_cross_entropy_ws16(2, 7, 1));
        eo_k_cross_entropy16(dt, 2, 7, x, t, -1, EO_CE_MEAN, st, loss, ws, NULL);
        ck_assert_uint_eq(loss[0], 0);
        eo_k_cross_entropy_backward16(dt, 2, 7, x, t, -1, EO_CE_MEAN, st, &one, dx, ws, NULL);
        ck_assert(memcmp(dx, dx0, 28) == 0);
        free_bufs();
    }
}
END_TEST

/* ---- embedding -------------------------------------------------------------------------- */

START_TEST(embedding16_lookup_and_index_add)
{
    static const int64_t dims[] = {1, 7, 1000};
    const int dt = DTS[_i % 2];
    const int64_t D = dims[_i / 2], V = 11, N = 40;
    uint16_t *table = rand16(dt, V * D, 2.0f);
    plant(dt, table, V * D);
    int32_t *idx = buf((size_t)N * 4), *uniq = buf(7 * 4);
    for (int64_t i = 0; i < N; i++)
        idx[i] = (int32_t)((i * 5 + 2) % V); /* every row named several times */
    for (int i = 0; i < 7; i++)
        uniq[i] = (int32_t)((i * 3 + 1) % V);
    uint16_t *out[3];
    for (int k = 0; k < 3; k++) {
        out[k] = h16(N * D);
        eo_k_embedding16(dt, N, D, table, idx, out[k], exec_of(k));
    }
    for (int64_t i = 0; i < N; i++)
        ck_assert(memcmp(out[0] + i * D, table + idx[i] * D, (size_t)D * 2) == 0);
    expect_same16("embedding16 threads", dt, out[0], out[1], N * D);
    expect_same16("embedding16 pool", dt, out[0], out[2], N * D);
    /* backward: each contribution rounded when added, in index order */
    uint16_t *dout = rand16(dt, N * D, 1.0f), *dt0 = rand16(dt, V * D, 1.0f);
    uint16_t *ref = copy16(dt0, V * D);
    for (int64_t i = 0; i < N; i++)
        for (int64_t c = 0; c < D; c++) {
            uint16_t *e = ref + idx[i] * D + c;
            *e = eo_half_put(dt, eo_half_get(dt, *e) + eo_half_get(dt, dout[i * D + c]));
        }
    uint16_t *g[3];
    for (int k = 0; k < 3; k++) {
        g[k] = copy16(dt0, V * D);
        eo_k_embedding_backward16(dt, N, D, idx, dout, g[k], exec_of(k));
    }
    expect_same16("embedding_backward16", dt, g[0], ref, V * D);
    expect_same16("embedding_backward16 threads", dt, g[0], g[1], V * D);
    expect_same16("embedding_backward16 pool", dt, g[0], g[2], V * D);
    /* rows named once: the f32 kernel rounded once */
    float *tf = widen(dt, dt0, V * D), *df = widen(dt, dout, 7 * D);
    eo_k_embedding_backward(7, D, uniq, df, tf, NULL);
    uint16_t *gu = copy16(dt0, V * D);
    eo_k_embedding_backward16(dt, 7, D, uniq, dout, gu, NULL);
    expect16("embedding_backward16 unique", dt, gu, tf, V * D);
    free_bufs();
}
END_TEST

/* matmul16 widens op(A) and op(B) while packing them into the f32
 * kernel's blocks (ops/cpu/matmul.c), and sums a 16-bit C in an f32 tile
 * of at most 72 x 128: it must equal, bit for bit, the f32 kernel of
 * the same path run on the widened operands, C rounded once. Odd shapes
 * that cross a block edge in every dimension (M = 80 > 72 rows of a
 * block, N = 140 = 128 + 12 columns, K = 262: two K slices), all four
 * transposes, padded leading dimensions, a batch of two at offset
 * strides, C in f32 and in the 16-bit dtype, beta 0 and 1, one thread
 * and a pool of two;
 * _i >> 3 picks the portable path (eo_mm_run16) or the public entry
 * (eo_k_matmul16 against eo_k_matmul: the best compiled path). */
START_TEST(matmul16_packing_equals_f32)
{
    const int dt = DTS[_i & 1], ta = (_i >> 1) & 1, tb = (_i >> 2) & 1, best = _i >> 3;
    const int64_t M = 80, N = 140, K = 262, batch = 2;
    const int64_t lda = (ta ? M : K) + 3, ldb = (tb ? K : N) + 5, ldc = N + 2;
    const int64_t sa = (ta ? K : M) * lda + 7, sb = (tb ? N : K) * ldb + 1, sc = M * ldc + 3;
    uint16_t *a16 = rand16(dt, batch * sa, 2), *b16 = rand16(dt, batch * sb, 2);
    float *a = f32(batch * sa), *b = f32(batch * sb);
    eo_half_to_f32_scalar(dt, batch * sa, a16, a);
    eo_half_to_f32_scalar(dt, batch * sb, b16, b);
    uint16_t *c16 = h16(batch * sc);
    float *c = f32(batch * sc), *cf = f32(batch * sc);
    void *ws = buf(eo_k_matmul16_ws(M, N, K, 3)), *ws32 = buf(eo_k_matmul_ws(M, N, K, 3));
    for (int out16 = 0; out16 < 2; out16++)
        for (int beta = 0; beta < 2; beta++) {
            const eo_exec *ex = exec_of(out16 == beta ? 0 : 2);
            const eo_par *par = eo_exec_par(ex);
            for (int64_t i = 0; i < batch * sc; i++) {
                c16[i] = eo_half_put(dt, frand());
                c[i] = out16 ? eo_half_get(dt, c16[i]) : frand();
                cf[i] = c[i];
            }
            const int out = out16 ? dt : EO_K_F32;
            void *cout = out16 ? (void *)c16 : (void *)cf;
            if (best) {
                eo_k_matmul(ta, tb, batch, M, N, K, a, lda, sa, b, ldb, sb, (float)beta, c, ldc,
                            sc, ws32, ex);
                eo_k_matmul16(ta, tb, batch, M, N, K, dt, a16, lda, sa, b16, ldb, sb,
                              (float)beta, out, cout, ldc, sc, ws, ex);
            } else {
                eo_mm_run(EO_MM_PORTABLE, ta, tb, batch, M, N, K, a, lda, sa, b, ldb, sb,
                          (float)beta, c, ldc, sc, ws32, par);
                eo_mm_run16(EO_MM_PORTABLE, ta, tb, batch, M, N, K, dt, a16, lda, sa, b16, ldb,
                            sb, (float)beta, out, cout, ldc, sc, ws, par);
            }
            int bad = 0;
            for (int64_t i = 0; i < batch * sc && bad < 3; i++) {
                int ok = out16 ? c16[i] == eo_half_put(dt, c[i])
                               : eo_f32_bits(cf[i]) == eo_f32_bits(c[i]);
                if (!ok)
                    bad++;
                CHECK_MSG(ok, "%s %s ta %d tb %d out16 %d beta %d [%lld]: %g, want %g",
                          best ? "best" : "portable", dtname(dt), ta, tb, out16, beta,
                          (long long)i, out16 ? (double)eo_half_get(dt, c16[i]) : (double)cf[i],
                          (double)c[i]);
            }
        }
    free_bufs();
}
END_TEST

/* The workspace is packing buffers plus a C tile per thread, blocked
 * smaller than the f32 kernel's: bounded however large the operands (the
 * old kernel held all of B in f32), and never more than the f32 one. */
START_TEST(matmul16_workspace_bounded)
{
    ck_assert_uint_le(eo_k_matmul16_ws(1 << 20, 1 << 16, 1 << 14, 1), (size_t)1 << 20);
    ck_assert_uint_le(eo_k_matmul16_ws(1 << 20, 1 << 16, 1 << 14, 1),
                      eo_k_matmul_ws(1 << 20, 1 << 16, 1 << 14, 1));
    ck_assert_uint_le(eo_k_matmul16_ws(128, 256, 784, 2), eo_k_matmul_ws(128, 256, 784, 2));
    ck_assert_uint_le(eo_k_matmul16_ws(256, 784, 128, 2), eo_k_matmul_ws(256, 784, 128, 2));
    ck_assert_uint_eq(eo_k_matmul16_ws(0, 5, 5, 1), 0);
}
END_TEST

/* conv2d's 16-bit backward widens x and dy and rounds dx image by image
 * inside the kernel (ops/cpu/conv.c): it must equal, bit for bit, the
 * f32 backward on the widened tensors with dx = round(dx + f32 dx) and
 * the same f32 dw, db (the old route, which widened the whole batch).
 * _i: geometry (a "same" 3x3, a strided one without padding, a 1x1) x
 * dtype; both on one thread and on the pool of two. */
START_TEST(conv2d_backward16_equals_f32)
{
    static const eo_conv_geom geoms[3] = {
        {3, 2, 7, 6, 5, 3, 3, 1, 1}, {3, 2, 7, 6, 4, 3, 3, 0, 2}, {2, 3, 5, 4, 4, 1, 1, 0, 1}};
    const eo_conv_geom *g = &geoms[_i >> 1];
    const int dt = DTS[_i & 1];
    const int64_t OH = (g->H + 2 * g->pad - g->kh) / g->stride + 1;
    const int64_t OW = (g->W + 2 * g->pad - g->kw) / g->stride + 1;
    const int64_t nx = g->N * g->C * g->H * g->W, ny = g->N * g->Co * OH * OW;
    const int64_t nw = g->Co * g->C * g->kh * g->kw;
    uint16_t *x16 = rand16(dt, nx, 2), *dy16 = rand16(dt, ny, 2), *dx0 = rand16(dt, nx, 1);
    float *x = f32(nx), *dy = f32(ny), *w = f32(nw);
    eo_half_to_f32_scalar(dt, nx, x16, x);
    eo_half_to_f32_scalar(dt, ny, dy16, dy);
    for (int64_t i = 0; i < nw; i++)
        w[i] = eo_half_get(dt, eo_half_put(dt, frand()));
    for (int k = 0; k < 3; k += 2) {
        const eo_exec *ex = exec_of(k);
        float *dx = f32(nx), *dw = f32(nw), *db = f32(g->Co);
        float *dw16 = f32(nw), *db16 = f32(g->Co);
        for (int64_t i = 0; i < nw; i++)
            dw[i] = dw16[i] = frand();
        void *ws = buf(eo_k_conv2d_ws(g, 3)), *ws16 = buf(eo_k_conv2d_ws16(g, 3));
        eo_k_conv2d_backward(g, x, w, dy, dx, dw, db, ws, ex);
        uint16_t *dx16 = copy16(dx0, nx);
        eo_k_conv2d_backward16(g, dt, x16, w, dy16, dx16, dw16, db16, ws16, ex);
        for (int64_t i = 0; i < nx; i++)
            CHECK_MSG(dx16[i] == eo_half_put(dt, eo_half_get(dt, dx0[i]) + dx[i]),
                      "%s geom %d threads %d: dx[%lld] 0x%04x", dtname(dt), _i >> 1, k,
                      (long long)i, dx16[i]);
        for (int64_t i = 0; i < nw; i++)
            CHECK_MSG(eo_f32_bits(dw16[i]) == eo_f32_bits(dw[i]), "%s geom %d: dw[%lld]",
                      dtname(dt), _i >> 1, (long long)i);
        for (int64_t i = 0; i < g->Co; i++)
            CHECK_MSG(eo_f32_bits(db16[i]) == eo_f32_bits(db[i]), "%s geom %d: db[%lld]",
                      dtname(dt), _i >> 1, (long long)i);
        /* dx alone (the weights frozen) */
        uint16_t *dxa = copy16(dx0, nx);
        eo_k_conv2d_backward16(g, dt, x16, w, dy16, dxa, NULL, NULL, ws16, ex);
        for (int64_t i = 0; i < nx; i++)
            CHECK_MSG(dxa[i] == dx16[i], "%s: dx alone [%lld]", dtname(dt), (long long)i);
    }
    free_bufs();
}
END_TEST

Suite *eo_suite_kernels16(void)
{
    Suite *s = suite_create("kernels16");
    TCase *tc = tcase_create("cpu16");
    tcase_add_checked_fixture(tc, pool_setup, pool_teardown);
    tcase_add_loop_test(tc, binary16_equals_f32_rounded, 0,
                        2 * (int)(sizeof bcases / sizeof bcases[0]));
    tcase_add_test(tc, binary16_broadcast_sums_stay_f32);
    tcase_add_loop_test(tc, softmax16_equals_f32_rounded, 0, 2 * N_RCASES);
    tcase_add_loop_test(tc, layernorm16_equals_f32_rounded, 0, 2 * N_RCASES);
    tcase_add_loop_test(tc, cross_entropy16_equals_f32_rounded, 0,
                        2 * (int)(sizeof cecases / sizeof cecases[0]));
    tcase_add_test(tc, cross_entropy16_all_ignored);
    tcase_add_loop_test(tc, embedding16_lookup_and_index_add, 0, 6);
    tcase_add_loop_test(tc, matmul16_packing_equals_f32, 0, 16);
    tcase_add_test(tc, matmul16_workspace_bounded);
    tcase_add_loop_test(tc, conv2d_backward16_equals_f32, 0, 6);
    suite_add_tcase(s, tc);
    return s;
}
