/* tests/test_cuda_kernels.c — every CUDA launcher against the CPU kernel
 * with the same signature, run on the PTX interpreter's driver double.
 *
 * Why this way: the CPU kernels in ops/ are the reference; the CUDA
 * backend must give the same numbers through the same eo_k_*_fn types.
 * The interpreter executes the hand-written PTX warp by warp and checks
 * every access, so an off-by-one, a race on shared memory or a divergent
 * barrier fails here, on a machine without a GPU. Sizes are small and
 * awkward (not multiples of the block or tile) so that every kernel's
 * edge handling runs; the interpreter is slow, so they stay small.
 *
 * With EO_TEST_CUDA=real in the environment the suite runs on the
 * machine's GPU through libcuda.so.1 instead (same comparisons).
 *
 * Tolerances: the PTX computes exp/log/tanh/erf with its own argument
 * reductions (~2 ulp) and sums in a different order from the CPU, so
 * results are compared with a small relative+absolute tolerance; the
 * dropout mask and plain copies must match exactly. */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "ops/cuda/device.h"
#include "ops/cuda/launch.h"
#include "tests/cuda_fixture.h"
#include "ops/kernels.h"
#include "tools/ptxsim/driver.h"

static eo_cuda_driver D;
static eo_cuda CU;
static eo_exec EX; /* the launchers' device: {.cuda = &CU} once open */
/* EO_TEST_CUDA=real runs the same comparisons on the machine's GPU through
 * libcuda.so.1 instead of the interpreter. */
static int real_gpu;

static void setup(void) { eo_test_dev_open(&D, &CU, &EX, &real_gpu); }
static void teardown(void) { eo_test_dev_close(&D, &CU, real_gpu); }

/* ---- device buffers: every allocation is freed at the end of the test ---- */
#define MAX_BUFS 32
static eo_cu_deviceptr bufs[MAX_BUFS];
static int nbufs;

static void *dev_alloc(size_t bytes)
{
    eo_cu_deviceptr p = 0;
    ck_assert_int_eq(eo_cuda_alloc_block(&CU, bytes, &p), EO_OK);
    ck_assert_int_lt(nbufs, MAX_BUFS);
    bufs[nbufs++] = p;
    return (void *)(uintptr_t)p;
}

static void *up(const void *host, size_t bytes)
{
    void *d = dev_alloc(bytes);
    ck_assert_int_eq(eo_cuda_h2d(&CU, (eo_cu_deviceptr)(uintptr_t)d, host, bytes), EO_OK);
    return d;
}

static void down(void *host, const void *dev, size_t bytes)
{
    char msg[1024];
    eo_status y = eo_cuda_sync(&CU);
    eo_status s = eo_cuda_d2h(&CU, host, (eo_cu_deviceptr)(uintptr_t)dev, bytes);
    eo_status e = eo_cuda_take_error(&CU, msg, sizeof msg);
    const eo_px_fault *f = real_gpu ? NULL : eo_ptxsim_last_fault();
    ck_assert_msg(y == EO_OK && s == EO_OK && e == EO_OK, "device error: %s (fault: %s)", msg,
                  f ? f->msg : "");
}

static void free_all(void)
{
    for (int i = 0; i < nbufs; i++)
        eo_cuda_free_block(&CU, bufs[i]);
    nbufs = 0;
}

/* ---- data --------------------------------------------------------------- */
static uint64_t rng = 88172645463325252ull;
static float frand(float lo, float hi)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return lo + (hi - lo) * (float)((rng >> 40) * (1.0 / 16777216.0));
}
static float *rand_buf(size_t n, float lo, float hi)
{
    float *p = malloc(n * sizeof *p);
    for (size_t i = 0; i < n; i++)
        p[i] = frand(lo, hi);
    return p;
}
static float *copy_buf(const float *x, size_t n)
{
    float *p = malloc(n * sizeof *p);
    memcpy(p, x, n * sizeof *p);
    return p;
}

static void near(const char *what, const float *got, const float *want, size_t n, float rtol,
                 float atol)
{
    for (size_t i = 0; i < n; i++) {
        float g = got[i], w = want[i];
        if (isnan(w) && isnan(g))
            continue;
        if (isinf(w) && g == w)
            continue;
        ck_assert_msg(fabsf(g - w) <= atol + rtol * fabsf(w), "%s[%zu]: cuda %.9g, cpu %.9g",
                      what, i, (double)g, (double)w);
    }
}

/* Run `n` floats at dev back and compare with the CPU's result. */
static void check_dev(const char *what, const void *dev, const float *want, size_t n, float rtol,
                      float atol)
{
    float *got = malloc(n * sizeof *got);
    down(got, dev, n * sizeof *got);
    near(what, got, want, n, rtol, atol);
    free(got);
}

/* ---- elementwise ----------------------------------------------------------- */
START_TEST(fill_copy_accumulate)
{
    enum { N = 1000 };
    float *d = dev_alloc(N * sizeof(float)), want[N];
    eo_cuda_k_fill(N, d, 2.5f, &EX);
    for (int i = 0; i < N; i++)
        want[i] = 2.5f;
    check_dev("fill", d, want, N, 0, 0);

    /* strided copy: dst [2,3,4,5] contiguous, src a permuted view */
    int64_t shape[4] = {2, 3, 4, 5}, sd[4] = {60, 20, 5, 1}, ss[4] = {1, 2, 6, 24};
    float *src = rand_buf(120, -1, 1), cpu[120];
    float *dsrc = up(src, sizeof cpu), *ddst = dev_alloc(sizeof cpu);
    eo_k_copy32(shape, cpu, sd, src, ss, NULL);
    eo_cuda_k_copy32(shape, ddst, sd, dsrc, ss, &EX);
    check_dev("copy32 strided", ddst, cpu, 120, 0, 0);
    eo_cuda_k_copy32(shape, ddst, sd, dsrc, sd, &EX); /* contiguous path */
    check_dev("copy32 flat", ddst, src, 120, 0, 0);

    /* accumulate into a broadcast destination [1,3,1,5] (stride 0 on axes 0, 2) */
    int64_t sb[4] = {0, 5, 0, 1};
    float acc[15], *a0 = rand_buf(15, -1, 1);
    memcpy(acc, a0, sizeof acc);
    float *dacc = up(a0, sizeof acc);
    eo_k_accumulate(shape, acc, sb, src, sd, NULL);
    eo_cuda_k_accumulate(shape, dacc, sb, dsrc, sd, &EX);
    check_dev("accumulate broadcast", dacc, acc, 15, 1e-6f, 1e-6f);
    eo_k_accumulate(shape, cpu, sd, src, sd, NULL); /* contiguous path: cpu holds the strided copy */
    eo_cuda_k_accumulate(shape, ddst, sd, dsrc, sd, &EX);
    float twice[120];
    for (int i = 0; i < 120; i++)
        twice[i] = src[i] + src[i];
    check_dev("accumulate flat", ddst, twice, 120, 0, 0);
    free(src);
    free(a0);
    free_all();
}
END_TEST

/* The flat kernels' contiguous fast path: 128-bit chunks, a scalar tail
 * (n not a multiple of 4), and the scalar path for misaligned pointers
 * (an offset of 1-3 floats), the neighbours left untouched. */
START_TEST(flat_fast_paths)
{
    enum { N = 1031 };
    static const struct { int n, od, os; } runs[] = {{1024, 0, 0}, {1027, 0, 0}, {1025, 1, 1},
                                                     {1026, 0, 2}, {5, 3, 0}};
    float *src = rand_buf(N + 4, -1, 1), *base = rand_buf(N + 4, -1, 1);
    float *dsrc = up(src, (N + 4) * 4), *dd = dev_alloc((N + 4) * 4);
    for (size_t r = 0; r < sizeof runs / sizeof *runs; r++) {
        int n = runs[r].n, od = runs[r].od, os = runs[r].os;
        int64_t shape[4] = {1, 1, 1, n}, st[4] = {n, n, n, 1};
        float want[N + 4];
        memcpy(want, base, sizeof want);
        ck_assert_int_eq(eo_cuda_h2d(&CU, (eo_cu_deviceptr)(uintptr_t)dd, base, sizeof want), EO_OK);
        eo_cuda_k_fill(n, dd + od, -7.5f, &EX);
        for (int i = 0; i < n; i++)
            want[od + i] = -7.5f;
        check_dev("fill fast path", dd, want, N + 4, 0, 0);
        eo_cuda_k_accumulate(shape, dd + od, st, dsrc + os, st, &EX);
        for (int i = 0; i < n; i++)
            want[od + i] = -7.5f + src[os + i];
        check_dev("accumulate fast path", dd, want, N + 4, 0, 0);
        eo_cuda_k_copy32(shape, dd + od, st, dsrc + os, st, &EX);
        for (int i = 0; i < n; i++)
            want[od + i] = src[os + i];
        check_dev("copy fast path", dd, want, N + 4, 0, 0);
    }
    free(src);
    free(base);
    free_all();
}
END_TEST

START_TEST(binary_forward_backward)
{
    /* a [3,1,4,5] broadcast against b [1,2,4,1] -> out [3,2,4,5] */
    int64_t shape[4] = {3, 2, 4, 5}, so[4] = {40, 20, 5, 1};
    int64_t sa[4] = {20, 0, 5, 1}, sb[4] = {0, 4, 1, 0};
    float *a = rand_buf(60, 0.5f, 2), *b = rand_buf(8, 0.5f, 2), *g = rand_buf(120, -1, 1);
    a[1] = b[0]; /* a tie (maximum, minimum: half the gradient each) */
    a[7] = NAN;  /* NaN wins in maximum and minimum, and gives both sides the gradient */
    float *da_ = up(a, 60 * 4), *db_ = up(b, 8 * 4), *dg = up(g, 120 * 4);
    float *dout = dev_alloc(120 * 4);
    for (int op = 0; op < EO_BIN_COUNT; op++) {
        float out[120], ga[60] = {0}, gb[8] = {0};
        eo_k_binary((eo_binop)op, shape, out, so, a, sa, b, sb, NULL);
        eo_cuda_k_binary((eo_binop)op, shape, dout, so, da_, sa, db_, sb, &EX);
        check_dev("binary", dout, out, 120, 1e-6f, 0);
        float *dga = up(ga, sizeof ga), *dgb = up(gb, sizeof gb);
        eo_k_binary_backward((eo_binop)op, shape, g, so, a, sa, b, sb, ga, sa, gb, sb, NULL);
        eo_cuda_k_binary_backward((eo_binop)op, shape, dg, so, da_, sa, db_, sb, dga, sa, dgb, sb, &EX);
        check_dev("binary_backward da", dga, ga, 60, 1e-5f, 1e-6f);
        check_dev("binary_backward db", dgb, gb, 8, 1e-5f, 1e-5f);
    }
    free(a);
    free(b);
    free(g);
    free_all();
}
END_TEST

/* The binary ops' fast path (ptx/elementwise.ptx: full, row, column and
 * scalar operands over the flat index) and its deterministic broadcast
 * gradients, against the CPU for every op: a bias over one and over two
 * trailing axes, a row vector as the first operand, a column vector, a
 * column times a row, a scalar (its gradient stays on the 4-D kernel),
 * cols not a multiple of 4 (scalar path), a misaligned operand, and enough
 * rows for the column sum's four-row rounds and its remainder. */
START_TEST(binary_fast_paths)
{
    static const struct {
        int64_t shape[4], sa[4], sb[4];
        int skew; /* a starts 1 float past a 16-byte boundary */
    } cases[] = {
        {{2, 3, 4, 8}, {96, 32, 8, 1}, {96, 32, 8, 1}, 0},
        {{2, 3, 4, 8}, {96, 32, 8, 1}, {0, 0, 0, 1}, 0},
        {{2, 3, 4, 8}, {96, 32, 8, 1}, {0, 0, 8, 1}, 0},
        {{2, 3, 4, 8}, {0, 0, 8, 1}, {96, 32, 8, 1}, 0},
        {{2, 3, 4, 8}, {96, 32, 8, 1}, {3, 1, 0, 0}, 0},
        {{2, 3, 4, 8}, {3, 1, 0, 0}, {0, 0, 8, 1}, 0},
        {{2, 3, 4, 8}, {96, 32, 8, 1}, {0, 0, 0, 0}, 0},
        {{1, 1, 7, 5}, {0, 0, 5, 1}, {0, 0, 0, 1}, 0},
        {{1, 1, 7, 5}, {0, 0, 1, 0}, {0, 0, 5, 1}, 0},
        {{1, 2, 6, 4}, {0, 24, 4, 1}, {0, 0, 0, 1}, 1},
        {{1, 1, 300, 12}, {0, 0, 12, 1}, {0, 0, 0, 1}, 0},
        {{1, 1, 300, 12}, {0, 0, 12, 1}, {0, 0, 1, 0}, 0},
    };
    enum { MAXN = 3600 };
    float *a = rand_buf(MAXN + 1, 0.5f, 2), *b = rand_buf(MAXN, 0.5f, 2), *g = rand_buf(MAXN, -1, 1);
    float *ga0 = rand_buf(MAXN, -1, 1), *gb0 = rand_buf(MAXN, -1, 1);
    a[2] = b[2]; /* a tie for maximum and minimum (where the patterns line them up) */
    a[5] = NAN;
    float *d_a = up(a, (MAXN + 1) * 4), *d_b = up(b, MAXN * 4), *d_g = up(g, MAXN * 4);
    float *d_out = dev_alloc(MAXN * 4), *d_ga = dev_alloc(MAXN * 4), *d_gb = dev_alloc(MAXN * 4);
    static float out[MAXN], ga[MAXN], gb[MAXN];
    for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
        const int64_t *sh = cases[k].shape, *sa = cases[k].sa, *sb = cases[k].sb;
        int64_t so[4] = {sh[1] * sh[2] * sh[3], sh[2] * sh[3], sh[3], 1}, total = sh[0] * so[0];
        size_t na = 1, nb = 1; /* elements each operand spans */
        for (int i = 0; i < 4; i++)
            na += (size_t)((sh[i] - 1) * sa[i]), nb += (size_t)((sh[i] - 1) * sb[i]);
        const float *ha = a + cases[k].skew;
        const float *da_ = d_a + cases[k].skew;
        for (int op = 0; op < EO_BIN_COUNT; op++) {
            char what[96];
            snprintf(what, sizeof what, "binary fast case %zu op %d", k, op);
            eo_k_binary((eo_binop)op, sh, out, so, ha, sa, b, sb, NULL);
            eo_cuda_k_binary((eo_binop)op, sh, d_out, so, da_, sa, d_b, sb, &EX);
            check_dev(what, d_out, out, (size_t)total, 1e-6f, 0);
            memcpy(ga, ga0, na * 4);
            memcpy(gb, gb0, nb * 4);
            ck_assert_int_eq(eo_cuda_h2d(&CU, (eo_cu_deviceptr)(uintptr_t)d_ga, ga, na * 4), EO_OK);
            ck_assert_int_eq(eo_cuda_h2d(&CU, (eo_cu_deviceptr)(uintptr_t)d_gb, gb, nb * 4), EO_OK);
            eo_k_binary_backward((eo_binop)op, sh, g, so, ha, sa, b, sb, ga, sa, gb, sb, NULL);
            eo_cuda_k_binary_backward((eo_binop)op, sh, d_g, so, da_, sa, d_b, sb, d_ga, sa, d_gb,
                                      sb, &EX);
            snprintf(what, sizeof what, "binary fast case %zu op %d: da", k, op);
            check_dev(what, d_ga, ga, na, 1e-5f, 1e-5f);
            snprintf(what, sizeof what, "binary fast case %zu op %d: db", k, op);
            check_dev(what, d_gb, gb, nb, 1e-5f, 1e-5f);
        }
    }
    /* x op x: one operand, one gradient buffer (da == db) */
    int64_t sh[4] = {1, 1, 9, 12}, st[4] = {108, 108, 12, 1};
    for (int op = 0; op < EO_BIN_COUNT; op++) {
        memcpy(ga, ga0, 108 * 4);
        ck_assert_int_eq(eo_cuda_h2d(&CU, (eo_cu_deviceptr)(uintptr_t)d_ga, ga, 108 * 4), EO_OK);
        eo_k_binary_backward((eo_binop)op, sh, g, st, b, st, b, st, ga, st, ga, st, NULL);
        eo_cuda_k_binary_backward((eo_binop)op, sh, d_g, st, d_b, st, d_b, st, d_ga, st, d_ga, st,
                                  &EX);
        check_dev("binary x op x", d_ga, ga, 108, 1e-5f, 1e-6f);
    }
    free(a);
    free(b);
    free(g);
    free(ga0);
    free(gb0);
    free_all();
}
END_TEST

START_TEST(unary_forward_backward)
{
    /* 700: whole chunks of 4 (the 128-bit path); 703 adds a scalar tail of
     * 3; at an offset of one float every pointer is misaligned and the
     * whole array takes the scalar path. */
    enum { N = 704 };
    static const struct { int n, off; } runs[] = {{700, 0}, {703, 0}, {701, 1}};
    float *x = rand_buf(N, -4, 4), *xp = rand_buf(N, 0.01f, 5), *dy = rand_buf(N, -1, 1);
    x[0] = 0.0f, x[1] = 1e-4f, x[2] = -1e-4f, x[3] = 0.2f, x[4] = -20.0f, x[5] = 20.0f;
    x[6] = NAN, x[7] = -0.0f, x[8] = 0.29f, x[9] = 0.31f; /* NaN; both sides of 0.3 */
    x[701] = NAN, x[702] = -3.0f;                        /* in the tail */
    float *dx = up(x, N * 4), *dxp = up(xp, N * 4), *ddy = up(dy, N * 4);
    float *dyo = dev_alloc(N * 4), *dgo = dev_alloc(N * 4);
    for (size_t r = 0; r < sizeof runs / sizeof *runs; r++) {
        int n = runs[r].n, o = runs[r].off;
        for (int op = 0; op < EO_UN_COUNT; op++) {
            const float *in = (op == EO_UN_LOG ? xp : x) + o;
            float *din = (op == EO_UN_LOG ? dxp : dx) + o;
            float y[N], g[N];
            eo_k_unary((eo_unop)op, n, in, y, 0.75f, NULL);
            eo_cuda_k_unary((eo_unop)op, n, din, dyo + o, 0.75f, &EX);
            check_dev("unary", dyo + o, y, (size_t)n, 4e-6f, 1e-6f);
            for (int i = 0; i < n; i++)
                g[i] = 0.125f + (float)i;
            ck_assert_int_eq(eo_cuda_h2d(&CU, (eo_cu_deviceptr)(uintptr_t)(dgo + o), g,
                                         (size_t)n * 4), EO_OK);
            eo_k_unary_backward((eo_unop)op, n, in, y, dy + o, g, 0.75f, NULL);
            /* ReLU passes the gradient at x = NaN (not x <= 0, as PyTorch):
             * stated here, not taken from the CPU kernel, which changes to
             * it separately (torch_semantics below checks it exactly) */
            for (int i = 0; op == EO_UN_RELU && i < n; i++)
                if (isnan(in[i]))
                    g[i] = (0.125f + (float)i) + dy[o + i];
            eo_cuda_k_unary_backward((eo_unop)op, n, din, dyo + o, ddy + o, dgo + o, 0.75f, &EX);
            check_dev("unary_backward", dgo + o, g, (size_t)n, 2e-5f, 1e-6f);
        }
    }
    free(x);
    free(xp);
    free(dy);
    free_all();
}
END_TEST

/* ---- matmul ----------------------------------------------------------------
 * One case: op(A) op(B) (+ C) on the device against the CPU kernel. pad adds
 * to every leading dimension (lda > K and friends, and odd ones that rule
 * out 16-byte accesses); skew shifts every base pointer by one float (not
 * 16-byte aligned); shared_a gives the batch one A (a weight, sa = 0). */
static void matmul_case(int ta, int tb, int64_t batch, int64_t M, int64_t N, int64_t K,
                        int64_t pad, int skew, int shared_a, float beta)
{
    int64_t lda = (ta ? M : K) + pad, ldb = (tb ? K : N) + pad, ldc = N + pad;
    int64_t ra = ta ? K : M, rb = tb ? N : K; /* stored rows */
    int64_t sa = shared_a ? 0 : ra * lda, sb = rb * ldb, sc = M * ldc;
    size_t na = (size_t)((shared_a ? 1 : batch) * ra * lda + skew);
    size_t nb = (size_t)(batch * rb * ldb + skew), nc = (size_t)(batch * M * ldc + skew);
    float *A = rand_buf(na, -1, 1), *Bm = rand_buf(nb, -1, 1), *C = rand_buf(nc, -1, 1);
    float *dA = up(A, na * 4), *dB = up(Bm, nb * 4), *dC = up(C, nc * 4);
    size_t wsb = eo_k_matmul_ws(M, N, K, 1);
    void *ws = malloc(wsb ? wsb : 1);
    eo_k_matmul(ta, tb, batch, M, N, K, A + skew, lda, sa, Bm + skew, ldb, sb, beta, C + skew,
                ldc, sc, ws, NULL);
    eo_cuda_k_matmul(ta, tb, batch, M, N, K, dA + skew, lda, sa, dB + skew, ldb, sb, beta,
                     dC + skew, ldc, sc, NULL, &EX);
    char what[128];
    snprintf(what, sizeof what, "matmul ta=%d tb=%d batch=%lld %lldx%lldx%lld pad=%lld skew=%d "
             "beta=%g", ta, tb, (long long)batch, (long long)M, (long long)N, (long long)K,
             (long long)pad, skew, (double)beta);
    /* everything, padding columns included: they must be untouched */
    check_dev(what, dC, C, nc, 1e-5f, 2e-6f * (float)(K + 1));
    free(ws), free(A), free(Bm), free(C);
    free_all();
}

/* The 64x64 kernel (M or N below 128, both above 32) and the split-K one
 * (N = 10, a single row): every transpose, beta 0 and 1, odd
 * sizes, N = 10, a single row, a batch sharing A, padded and unaligned
 * leading dimensions, a base pointer off 16-byte alignment. */
START_TEST(matmul_small_tiles)
{
    for (int t = 0; t < 8; t++) {
        int ta = t & 1, tb = (t >> 1) & 1;
        float beta = (float)(t >> 2);
        matmul_case(ta, tb, 2, 37, 45, 29, 0, 0, t >> 2, beta);
        matmul_case(ta, tb, 1, 70, 10, 33, 0, 0, 0, beta); /* N = 10 */
        matmul_case(ta, tb, 1, 1, 7, 9, 3, 1, 0, beta);    /* one row, odd ld, skewed */
        matmul_case(ta, tb, 3, 33, 65, 8, 4, 0, 1, beta);  /* lda > K, ld % 4 = 0 */
    }
    matmul_case(0, 1, 1, 7, 130, 257, 1, 1, 0, 0.0f);      /* long K, unaligned */
}
END_TEST

/* The split-K kernel (M or N at most 32): N = 1, 10, 17 (one tile, a
 * tile and one column) against M = 1, 128, 4096, K = 1 (one stage) and 784
 * (25 stages, split), odd everywhere; the thin-M mirrors (operands
 * swapped, C written by columns); batches with a shared A, beta 1, padded
 * and unaligned leading dimensions; every transpose. */
START_TEST(matmul_skinny)
{
    for (int t = 0; t < 4; t++) {
        int ta = t & 1, tb = t >> 1;
        float beta = (float)(t & 1);
        matmul_case(ta, tb, 1, 1, 1, 1, 0, 0, 0, beta);
        matmul_case(ta, tb, 1, 1, 10, 784, 0, 0, 0, beta);
        matmul_case(ta, tb, 1, 128, 17, 257, 1, 1, 0, beta);    /* unaligned, odd K */
        matmul_case(ta, tb, 1, 1, 129, 65, 0, 0, 0, beta);      /* thin M: one row */
        matmul_case(ta, tb, 3, 37, 10, 65, 4, 0, 1, beta);      /* a batch sharing A */
        matmul_case(ta, tb, 2, 10, 45, 29, 1, 0, 0, 1.0f);
        matmul_case(ta, tb, 2, 32, 32, 40, 0, 0, 0, beta);      /* the dispatch edge */
        /* the big ones on two transposes each (interpreter time) */
        if (t == 0 || t == 3)
            matmul_case(ta, tb, 1, 128, 10, 784, 0, 0, 0, 1.0f - beta);
        else
            matmul_case(ta, tb, 1, 10, 128, 784, 0, 0, 0, beta); /* thin M, split */
        if (t == 0 || t == 3)
            matmul_case(ta, tb, 1, 4096, 17, 1, 0, 0, 0, beta);
        else
            matmul_case(ta, tb, 1, 4096, 1, 33, 3, 0, 0, beta);
    }
    matmul_case(0, 1, 1, 10, 4096, 1, 0, 1, 0, 1.0f);
}
END_TEST

/* The 128x128 kernel (M and N at least 128): just above one tile. */
START_TEST(matmul_big_tiles)
{
    for (int t = 0; t < 4; t++) {
        int ta = t & 1, tb = t >> 1;
        matmul_case(ta, tb, 2, 130, 129, 17, 0, 0, 1, (float)(t & 1)); /* shared A */
        matmul_case(ta, tb, 1, 128, 131, 33, 4, 0, 0, 1.0f);         /* lda > K, aligned */
        matmul_case(ta, tb, 1, 129, 128, 13, 1, 1, 0, 0.0f);         /* unaligned */
    }
}
END_TEST

/* ---- reductions ---------------------------------------------------------------- */
START_TEST(reduce_forward_backward)
{
    /* {5,300,1} and {2,64,1} take eo_reduce_rows (inner = 1, n >= 64); the
     * last two sum in chunks (eo_reduce_rows_part / eo_reduce_part) */
    const int64_t cases[7][3] = {{3, 7, 5},   {4, 33, 1},    {1, 5, 300}, {5, 300, 1},
                                 {2, 64, 1}, {2, 20000, 1}, {3, 700, 5}};
    for (int c = 0; c < 7; c++) {
        int64_t o = cases[c][0], n = cases[c][1], in = cases[c][2];
        size_t nx = (size_t)(o * n * in), ny = (size_t)(o * in);
        float *x = rand_buf(nx, -3, 3), *dy = rand_buf(ny, -1, 1);
        x[1] = NAN;
        if (c == 3) {
            x[2 * 300 + 200] = x[2 * 300 + 10] = 100.0f; /* a tie: the first index wins */
            x[3 * 300 + 250] = x[3 * 300 + 40] = NAN;    /* the first NaN wins */
            for (int j = 0; j < 300; j++)
                x[4 * 300 + j] = -INFINITY;              /* all -inf: index 0 */
        }
        float *dxv = up(x, nx * 4), *ddy = up(dy, ny * 4);
        for (int op = 0; op < EO_RED_COUNT; op++) {
            float *y = malloc(ny * 4), *g = calloc(nx, 4);
            int32_t *am = malloc(ny * 4), *amg = malloc(ny * 4);
            float *dyo = dev_alloc(ny * 4), *dg = up(g, nx * 4);
            int32_t *dam = dev_alloc(ny * 4);
            eo_k_reduce((eo_redop)op, o, n, in, x, y, am, NULL);
            eo_cuda_k_reduce((eo_redop)op, o, n, in, dxv, dyo, dam, &EX);
            check_dev("reduce", dyo, y, ny, 1e-5f, 1e-5f);
            if (op == EO_RED_MAX) {
                down(amg, dam, ny * 4);
                ck_assert_int_eq(memcmp(am, amg, ny * 4), 0);
            }
            eo_k_reduce_backward((eo_redop)op, o, n, in, dy, am, g, NULL);
            eo_cuda_k_reduce_backward((eo_redop)op, o, n, in, ddy, dam, dg, &EX);
            check_dev("reduce_backward", dg, g, nx, 1e-6f, 1e-7f);
            free(y), free(g), free(am), free(amg);
        }
        free(x), free(dy);
        free_all();
    }
    const int64_t sizes[3] = {0, 5000, 100003};
    for (int c = 0; c < 3; c++) {
        int64_t n = sizes[c];
        float *x = rand_buf((size_t)n + 1, -2, 2), want, got;
        float *dxv = up(x, (size_t)n * 4 + 4), *dout = dev_alloc(4);
        eo_k_sumsq(n, x, &want, NULL);
        eo_cuda_k_sumsq(n, dxv, dout, &EX);
        down(&got, dout, 4);
        ck_assert_float_eq_tol(got, want, 1e-6f * want + 1e-30f);
        free(x);
        free_all();
    }
}
END_TEST

/* log-sum-exp over each axis layout, with the edge columns: all -inf,
 * +inf, a NaN, a common offset of 1e8; forward, saved stats, backward. */
START_TEST(logsumexp_forward_backward)
{
    const int64_t cases[4][3] = {{3, 7, 5}, {4, 33, 1}, {1, 5, 300}, {6, 300, 1}};
    for (int c = 0; c < 4; c++) {
        int64_t o = cases[c][0], n = cases[c][1], in = cases[c][2];
        size_t nx = (size_t)(o * n * in), ny = (size_t)(o * in);
        float *x = rand_buf(nx, -3, 3), *dy = rand_buf(ny, -1, 1);
        for (int64_t j = 0; j < n; j++) { /* columns (0, 0), (0, 1), (0, 2), (last) */
            x[j * in] = -INFINITY;
            if (in > 2)
                x[j * in + 2] += 1e8f;
            x[(o - 1) * n * in + j * in + in - 1] += 1e4f;
        }
        if (in > 1) {
            x[3 * in + 1] = INFINITY;
            x[1 * in + 2] = NAN;
        }
        float *y = malloc(ny * 4), *st = malloc(ny * 8), *g = calloc(nx, 4);
        float *dxv = up(x, nx * 4), *ddy = up(dy, ny * 4), *dyo = dev_alloc(ny * 4);
        float *dst = dev_alloc(ny * 8), *dg = up(g, nx * 4);
        eo_k_logsumexp(o, n, in, x, y, st, NULL);
        eo_cuda_k_logsumexp(o, n, in, dxv, dyo, dst, &EX);
        check_dev("logsumexp", dyo, y, ny, 1e-6f, 1e-6f);
        check_dev("logsumexp stats", dst, st, 2 * ny, 1e-6f, 1e-6f);
        ck_assert(y[0] == -INFINITY);
        eo_k_logsumexp_backward(o, n, in, x, st, dy, g, NULL);
        eo_cuda_k_logsumexp_backward(o, n, in, dxv, dst, ddy, dg, &EX);
        check_dev("logsumexp_backward", dg, g, nx, 1e-5f, 1e-6f);
        free(x), free(dy), free(y), free(st), free(g);
        free_all();
    }
}
END_TEST

/* ---- softmax, cross-entropy, layernorm -------------------------------------------- */
/* Rows around the chunk of 4096 columns (16 per thread): one
 * quarter of a chunk, a whole chunk in registers, one column into a second
 * chunk (re-read for the output), and three chunks with a NaN, an +inf
 * and a fully masked row in the later ones. */
START_TEST(softmax_long_rows)
{
    static const int cols[] = {1023, 1025, 4096, 4097, 9000};
    enum { R = 3 };
    for (size_t k = 0; k < sizeof cols / sizeof cols[0]; k++) {
        int C = cols[k];
        float *x = rand_buf(R * C, -20, 20);
        if (C == 9000) {
            x[0 * C + 8999] = 50.0f;        /* the max in the last chunk: rescales */
            x[1 * C + 5000] = NAN;          /* a NaN past the first chunk */
            for (int c = 0; c < C; c++)
                x[2 * C + c] = -INFINITY;   /* fully masked */
        }
        if (C == 4097)
            x[2 * C + 4096] = INFINITY;     /* +inf alone in the second chunk */
        float *dx = up(x, sizeof(float) * R * C), *dy = dev_alloc(sizeof(float) * R * C);
        float *y = malloc(sizeof(float) * R * C);
        for (int log = 0; log < 2; log++) {
            eo_k_softmax(log, R, C, x, y, NULL, NULL);
            eo_cuda_k_softmax(log, R, C, dx, dy, NULL, &EX);
            check_dev("softmax long", dy, y, R * C, 1e-5f, 1e-6f);
            /* backward from the CPU's y (NaN rows included), dx accumulated */
            float *g = rand_buf(R * C, -1, 1), *acc = rand_buf(R * C, -1, 1);
            float *dg = up(g, sizeof(float) * R * C), *dyv = up(y, sizeof(float) * R * C);
            float *dacc = up(acc, sizeof(float) * R * C);
            eo_k_softmax_backward(log, R, C, y, g, acc, NULL);
            eo_cuda_k_softmax_backward(log, R, C, dyv, dg, dacc, &EX);
            check_dev("softmax_backward long", dacc, acc, R * C, 1e-4f, 1e-5f);
            free(g), free(acc);
        }
        free(x), free(y);
        free_all();
    }
}
END_TEST
START_TEST(softmax_forward_backward)
{
    enum { R = 8, C = 300 };
    float *x = rand_buf(R * C, -10, 10), *dy = rand_buf(R * C, -1, 1);
    for (int c = 0; c < C; c++)
        x[2 * C + c] = x[6 * C + c] = -INFINITY; /* fully masked rows */
    x[3 * C + 7] = -INFINITY;     /* one masked entry */
    x[4 * C + 1] = 1e4f;          /* a huge logit */
    x[5 * C + 299] = NAN;         /* a NaN: the whole row is NaN (CPU and CUDA) */
    x[6 * C + 123] = NAN;         /* a NaN among -infs, which the max drops */
    x[7 * C + 3] = INFINITY;      /* +inf: NaN throughout, as PyTorch */
    float *dx = up(x, sizeof(float) * R * C), *ddy = up(dy, sizeof(float) * R * C);
    float *dyo = dev_alloc(sizeof(float) * R * C);
    for (int log = 0; log < 2; log++) {
        float y[R * C], g[R * C];
        eo_k_softmax(log, R, C, x, y, NULL, NULL);
        eo_cuda_k_softmax(log, R, C, dx, dyo, NULL, &EX);
        check_dev("softmax", dyo, y, R * C, 1e-5f, 1e-6f);
        for (int i = 0; i < R * C; i++)
            g[i] = 0.5f;
        float *dg = up(g, sizeof g);
        eo_k_softmax_backward(log, R, C, y, dy, g, NULL);
        /* log_softmax: a -inf entry of a row with finite entries gets dy
         * (dy - exp(-inf) S, as PyTorch); stated here, not taken from the
         * CPU kernel, which changes to it separately */
        for (int r = 0; log && r < R; r++) {
            int mass = 0;
            for (int c = 0; c < C; c++)
                mass |= y[r * C + c] != -INFINITY;
            for (int c = 0; mass && c < C; c++)
                if (y[r * C + c] == -INFINITY)
                    g[r * C + c] = 0.5f + dy[r * C + c];
        }
        eo_cuda_k_softmax_backward(log, R, C, dyo, ddy, dg, &EX);
        check_dev("softmax_backward", dg, g, R * C, 1e-4f, 1e-5f);
    }
    free(x), free(dy);
    free_all();
}
END_TEST

/* Many rows: the loss kernel's one block takes four rows per thread and
 * step (1100 rows: full steps, a partial one, ignored rows among them). */
START_TEST(cross_entropy_many_rows)
{
    enum { R = 1100, C = 3 };
    float *x = rand_buf(R * C, -3, 3);
    int32_t *t = malloc(sizeof(int32_t) * R);
    for (int r = 0; r < R; r++)
        t[r] = r % 7 == 3 ? -100 : r % C;
    float *dx = up(x, sizeof(float) * R * C), *dst = dev_alloc(sizeof(float) * 2 * R);
    float *dloss = dev_alloc(sizeof(float) * R), *st = malloc(sizeof(float) * 2 * R);
    float *loss = malloc(sizeof(float) * R);
    int32_t *dt = up(t, sizeof(int32_t) * R);
    for (int red = EO_CE_MEAN; red <= EO_CE_NONE; red++) {
        eo_k_cross_entropy(R, C, x, t, -100, (eo_ce_reduction)red, st, loss, NULL);
        eo_cuda_k_cross_entropy(R, C, dx, dt, -100, (eo_ce_reduction)red, dst, dloss, &EX);
        check_dev("cross_entropy many rows", dloss, loss, red == EO_CE_NONE ? R : 1, 1e-5f, 1e-5f);
    }
    /* One launch: the last of the 138 blocks (a warp per row) sums the
     * losses in row order, so a second run gives the same bits; with no
     * rows the one block still writes the mean 0. */
    float l1, l2, zero = 0.0f;
    eo_cuda_k_cross_entropy(R, C, dx, dt, -100, EO_CE_MEAN, dst, dloss, &EX);
    down(&l1, dloss, sizeof l1);
    eo_cuda_k_cross_entropy(R, C, dx, dt, -100, EO_CE_MEAN, dst, dloss, &EX);
    down(&l2, dloss, sizeof l2);
    ck_assert_msg(memcmp(&l1, &l2, sizeof l1) == 0, "two runs: %.9g, %.9g", (double)l1, (double)l2);
    eo_cuda_k_cross_entropy(0, C, dx, dt, -100, EO_CE_MEAN, dst, dloss, &EX);
    check_dev("cross_entropy no rows", dloss, &zero, 1, 0, 0);
    free(x), free(t), free(st), free(loss);
    free_all();
}
END_TEST

START_TEST(cross_entropy_forward_backward)
{
    /* Rows: random, ignored (2, 6), a common offset of 1e8 (3; the max and
     * log-sum kept apart), a NaN (4), a NaN among -infs (5), all -inf (7).
     * Widths: one partial chunk of the row kernels; 1024, the widest row
     * the cross-entropy forward gives a warp (four full 256-column chunks);
     * rows past one chunk of 4096 columns (a second and a third chunk). */
    static const int widths[] = {70, 1024, 4097, 9000};
    enum { R = 9 };
    const int C = widths[_i];
    float *x = rand_buf(R * C, -5, 5);
    int32_t t[R];
    for (int r = 0; r < R; r++)
        t[r] = (r * 13) % C;
    t[2] = t[6] = -100; /* ignored rows */
    for (int c = 0; c < C; c++) {
        x[3 * C + c] += 1e8f;
        x[5 * C + c] = x[7 * C + c] = -INFINITY;
    }
    x[4 * C + 11] = NAN;
    x[1 * C + C - 1] = 9.0f; /* the max in the row's last chunk */
    x[5 * C + 69] = NAN;
    float *dx = up(x, sizeof(float) * R * C), *dst = dev_alloc(sizeof(float) * 2 * R);
    float *dloss = dev_alloc(sizeof(float) * R);
    int32_t *dt = up(t, sizeof t);
    for (int red = EO_CE_MEAN; red <= EO_CE_NONE; red++) {
        const int nl = red == EO_CE_NONE ? R : 1;
        float st[2 * R], loss[R], dl[R], *g = malloc(sizeof(float) * R * C);
        for (int r = 0; r < R; r++)
            dl[r] = 0.7f - 0.1f * (float)r;
        for (int i = 0; i < R * C; i++)
            g[i] = 0.25f;
        float *ddl = up(dl, sizeof dl), *dg = up(g, sizeof(float) * R * C);
        eo_k_cross_entropy(R, C, x, t, -100, (eo_ce_reduction)red, st, loss, NULL);
        eo_cuda_k_cross_entropy(R, C, dx, dt, -100, (eo_ce_reduction)red, dst, dloss, &EX);
        check_dev("cross_entropy loss", dloss, loss, (size_t)nl, 1e-5f, 1e-5f);
        if (red == EO_CE_NONE)
            ck_assert_msg(isnan(loss[4]) && isnan(loss[5]) && isnan(loss[7]) && loss[2] == 0.0f,
                          "none: NaN rows %g %g %g, ignored %g", (double)loss[4],
                          (double)loss[5], (double)loss[7], (double)loss[2]);
        else
            ck_assert(isnan(loss[0]));
        float gst[2 * R];
        down(gst, dst, sizeof gst);
        for (int r = 0; r < R; r++)
            if (t[r] != -100) {
                ck_assert_msg(gst[2 * r] == st[2 * r] || (isnan(gst[2 * r]) && isnan(st[2 * r])),
                              "max of row %d: cuda %g, cpu %g", r, (double)gst[2 * r],
                              (double)st[2 * r]);
                near("cross_entropy log-sum", &gst[2 * r + 1], &st[2 * r + 1], 1, 1e-5f, 1e-6f);
            }
        eo_k_cross_entropy_backward(R, C, x, t, -100, (eo_ce_reduction)red, st, dl, g, NULL);
        eo_cuda_k_cross_entropy_backward(R, C, dx, dt, -100, (eo_ce_reduction)red, dst, ddl, dg,
                                         &EX);
        check_dev("cross_entropy_backward", dg, g, R * C, 1e-5f, 1e-6f);
        free(g);
    }

    /* Without the NaN rows the loss is finite, and the offset row matches
     * its unshifted twin's. */
    int32_t keep[R];
    for (int r = 0; r < R; r++)
        keep[r] = r == 4 || r == 5 || r == 7 ? -100 : t[r];
    int32_t *dkeep = up(keep, sizeof keep);
    float loss[R];
    eo_cuda_k_cross_entropy(R, C, dx, dkeep, -100, EO_CE_NONE, dst, dloss, &EX);
    down(loss, dloss, sizeof loss);
    double m = -INFINITY, z = 0;
    for (int c = 0; c < C; c++)
        m = x[3 * C + c] > m ? x[3 * C + c] : m;
    for (int c = 0; c < C; c++)
        z += exp((double)x[3 * C + c] - m);
    const double want = (m - x[3 * C + t[3]]) + log(z);
    ck_assert_msg(fabs(loss[3] - want) <= 1e-5 * fabs(want) + 1e-6,
                  "offset 1e8: cuda loss %.9g, want %.9g", (double)loss[3], want);

    int32_t all_ignored[R];
    for (int r = 0; r < R; r++)
        all_ignored[r] = -1;
    int32_t *dti = up(all_ignored, sizeof all_ignored);
    float zero = 0.0f;
    eo_cuda_k_cross_entropy(R, C, dx, dti, -1, EO_CE_MEAN, dst, dloss, &EX);
    check_dev("cross_entropy all ignored", dloss, &zero, 1, 0, 0);
    eo_cuda_k_cross_entropy(R, C, dx, dti, -1, EO_CE_SUM, dst, dloss, &EX);
    check_dev("cross_entropy all ignored, sum", dloss, &zero, 1, 0, 0);
    free(x);
    free_all();
}
END_TEST

static void layernorm_case(int64_t R, int64_t C);
START_TEST(layernorm_forward_backward)
{
    layernorm_case(6, 300); /* long rows: one thread per column for dw, db */
    layernorm_case(300, 40); /* many rows: dw, db summed in row chunks */
    layernorm_case(3, 4096); /* the longest row the forward keeps in registers */
    layernorm_case(3, 4097); /* one column more: the three-pass forward */
    /* the one-pass backward (rows of <= 2048 columns): one value a thread
     * (1 x 7, 37 x 129), 16-byte groups (3 x 1000, 2 x 2048), 1000 rows
     * in 334 blocks of 3 (the last of 1); 2049 columns take the two-kernel
     * path */
    layernorm_case(1, 7);
    layernorm_case(37, 129);
    layernorm_case(3, 1000);
    layernorm_case(2, 2048);
    layernorm_case(1000, 12);
    layernorm_case(3, 2049);
    /* 7680 nearly constant rows of 12 (rstd ~ 300, 20 rows a block): the
     * slots past the row must not carry x-hat from row to row (it grew by
     * rstd each row, to inf, and 0 * inf made the sums NaN) */
    enum { LR = 7680, LC = 12 };
    float *x = rand_buf(LR * LC, 0.999f, 1.001f), *w = rand_buf(LC, 0.5f, 1.5f);
    float *dy = rand_buf(LR * LC, -1, 1), *mean = malloc(LR * 4), *rstd = malloc(LR * 4);
    float *y = malloc(LR * LC * 4), *gx = calloc(LR * LC, 4), *gw = calloc(LC, 4), *gb = calloc(LC, 4);
    eo_k_layernorm(LR, LC, x, w, NULL, 1e-5f, y, mean, rstd, NULL);
    float *dx_ = up(x, LR * LC * 4), *dw_ = up(w, LC * 4), *dm = up(mean, LR * 4), *dr = up(rstd, LR * 4);
    float *ddy = up(dy, LR * LC * 4), *dgx = up(gx, LR * LC * 4), *dgw = up(gw, LC * 4), *dgb = up(gb, LC * 4);
    void *ws = malloc(eo_k_layernorm_backward_ws(LR, LC, 1) + 64);
    eo_k_layernorm_backward(LR, LC, x, w, mean, rstd, dy, gx, gw, gb, ws, NULL);
    eo_cuda_k_layernorm_backward(LR, LC, dx_, dw_, dm, dr, ddy, dgx, dgw, dgb, NULL, &EX);
    check_dev("layernorm flat rows dx", dgx, gx, LR * LC, 2e-3f, 2e-3f);
    check_dev("layernorm flat rows dw", dgw, gw, LC, 1e-3f, 1e-3f);
    check_dev("layernorm flat rows db", dgb, gb, LC, 1e-4f, 1e-4f);
    free(ws), free(x), free(w), free(dy), free(mean), free(rstd), free(y), free(gx), free(gw), free(gb);
    free_all();
}
END_TEST

static void layernorm_case(int64_t R, int64_t C)
{
    float *x = rand_buf(R * C, -2, 2), *w = rand_buf(C, 0.5f, 1.5f), *b = rand_buf(C, -1, 1);
    float *dy = rand_buf(R * C, -1, 1);
    for (int64_t c = 0; R >= 3 && c < C; c++) {
        x[C + c] = 0.3f;                  /* a constant row: y = b exactly */
        x[2 * C + c] = 1e4f + x[2 * C + c] * 1e-2f; /* large offset, small noise */
    }
    float *dx = up(x, sizeof(float) * R * C), *dw_ = up(w, C * 4), *db_ = up(b, C * 4);
    float *ddy = up(dy, sizeof(float) * R * C);
    for (int affine = 0; affine < 2; affine++) {
        const float *W = affine ? w : NULL, *Bb = affine ? b : NULL;
        const float *dW = affine ? dw_ : NULL, *dB = affine ? db_ : NULL;
        size_t n = (size_t)(R * C);
        float *y = malloc(n * 4), *mean = malloc((size_t)R * 4), *rstd = malloc((size_t)R * 4);
        float *dyo = dev_alloc(n * 4), *dm = dev_alloc((size_t)R * 4), *dr = dev_alloc((size_t)R * 4);
        eo_k_layernorm(R, C, x, W, Bb, 1e-5f, y, mean, rstd, NULL);
        eo_cuda_k_layernorm(R, C, dx, dW, dB, 1e-5f, dyo, dm, dr, &EX);
        check_dev("layernorm y", dyo, y, n, 1e-5f, 1e-5f);
        check_dev("layernorm mean", dm, mean, R, 1e-6f, 1e-6f);
        check_dev("layernorm rstd", dr, rstd, R, 1e-5f, 0);
        if (affine && R >= 3) { /* row 1 is the constant row */
            float *got = malloc((size_t)C * 4);
            down(got, (char *)dyo + sizeof(float) * C, (size_t)C * 4);
            ck_assert_int_eq(memcmp(got, b, (size_t)C * 4), 0);
            free(got);
        }
        float *gx = malloc(n * 4), *gw = malloc((size_t)C * 4), *gb = malloc((size_t)C * 4);
        for (size_t i = 0; i < n; i++)
            gx[i] = 0.1f;
        for (int64_t i = 0; i < C; i++)
            gw[i] = gb[i] = 0.2f;
        float *dgx = up(gx, n * 4), *dgw = up(gw, (size_t)C * 4), *dgb = up(gb, (size_t)C * 4);
        size_t wsb = eo_k_layernorm_backward_ws(R, C, 1);
        void *ws = malloc(wsb ? wsb : 1);
        eo_k_layernorm_backward(R, C, x, W, mean, rstd, dy, gx, gw, gb, ws, NULL);
        eo_cuda_k_layernorm_backward(R, C, dx, dW, dm, dr, ddy, dgx, dgw, dgb, NULL, &EX);
        free(ws);
        check_dev("layernorm dx", dgx, gx, n, 2e-4f, 2e-5f);
        /* sums of R terms in another order (blocks of rows, then the blocks) */
        const float tol = R > 300 ? 1e-4f : 1e-5f;
        check_dev("layernorm dw", dgw, gw, C, 1e-4f, 1e-5f);
        check_dev("layernorm db", dgb, gb, C, tol, tol);
        free(y), free(mean), free(rstd), free(gx), free(gw), free(gb);
    }
    free(x), free(w), free(b), free(dy);
    free_all();
}

/* ---- the embedding backward: the CPU's bits, whatever the repeats ----------------
 * One case: n ids (idx) into a [V, dim] table that already holds values
 * (the backward accumulates), on the list walk (eo_cuda_k_embedding_backward)
 * and on its per-column fallback (launched directly, on a copy); both must
 * equal the CPU kernel's index-order sums bit for bit. */
static void embedding_bwd_case(const char *what, int64_t n, int64_t V, int64_t dim,
                               const int32_t *idx)
{
    size_t nt = (size_t)(V * dim), nd = (size_t)(n * dim);
    float *tab = rand_buf(nt, -1, 1), *dout = rand_buf(nd, -1, 1);
    float *dt = up(tab, nt * 4), *dt2 = up(tab, nt * 4), *dd = up(dout, nd * 4);
    int32_t *di = up(idx, (size_t)n * 4);
    eo_k_embedding_backward(n, dim, idx, dout, tab, NULL);
    eo_cuda_k_embedding_backward(n, dim, di, dd, dt, &EX);
    uint32_t nn = (uint32_t)n, d32 = (uint32_t)dim;
    uint64_t pi = eo_cuda_dp(di), pd = eo_cuda_dp(dd), pt = eo_cuda_dp(dt2);
    LAUNCH(&CU, EO_CUK_EMBEDDING_BWD_COLS, 1, 1, 1, 256, 1, &nn, &d32, &pi, &pd, &pt);
    float *got = malloc(nt * 4);
    char msg[160];
    for (int pass = 0; pass < 2; pass++) {
        down(got, pass ? dt2 : dt, nt * 4);
        for (size_t i = 0; i < nt; i++)
            if (memcmp(&got[i], &tab[i], 4)) {
                snprintf(msg, sizeof msg, "%s%s: [%zu] cuda %.9g, cpu %.9g", what,
                         pass ? " (columns)" : "", i, (double)got[i], (double)tab[i]);
                ck_abort_msg("%s", msg);
            }
    }
    free(got), free(tab), free(dout);
    free_all();
}

START_TEST(embedding_backward_order)
{
    static int32_t idx[2048];
    /* 300 ids over 5 rows (each about 60 times), 0 and V-1 among them,
     * runs of one id and far repeats; odd width (single floats) and a
     * width of whole groups of 4 (the 16-byte path) */
    for (int i = 0; i < 300; i++)
        idx[i] = i < 40 ? 4 : i % 7 == 0 ? 0 : (int32_t)((i * 13) % 5);
    embedding_bwd_case("embedding_backward repeated, dim 37", 300, 5, 37, idx);
    embedding_bwd_case("embedding_backward repeated, dim 36", 300, 5, 36, idx);
    /* a table of one row: every id is 0 */
    for (int i = 0; i < 50; i++)
        idx[i] = 0;
    embedding_bwd_case("embedding_backward one row", 50, 1, 8, idx);
    embedding_bwd_case("embedding_backward one id", 1, 1, 3, idx);
    /* the char-GPT's shape: 32 x 64 ids into a 70 x 128 table */
    for (int i = 0; i < 2048; i++)
        idx[i] = (int32_t)((i * 31 + i / 64) % 70);
    idx[5] = 69;
    embedding_bwd_case("embedding_backward 2048 ids, 70 x 128", 2048, 70, 128, idx);
    /* GPT-2's vocabulary, few rows touched (first, last, repeated) */
    static const int32_t few[12] = {50256, 0, 17, 50256, 17, 17, 30000, 0, 1, 50255, 17, 50256};
    embedding_bwd_case("embedding_backward 50257 x 768", 12, 50257, 768, few);
}
END_TEST

/* ---- embedding, dropout, optimizers, convolution ------------------------------------ */
/* Dropout's expected values, written out (the contract of ops/kernels.h,
 * PyTorch's x * mask / (1 - p)): y (or dx += dy) = (x / (1 - p)) * m, m =
 * 1 where kept and 0 where dropped, with the mask of eo_dropout_keep,
 * which the CPU and the PTX share: a dropped NaN or inf gives NaN. */
static void dropout_want(int64_t n, const float *x, float *y, float p, uint64_t seed, int acc)
{
    for (int64_t i = 0; i < n; i++) {
        float v = x[i] / (1.0f - p) * (eo_dropout_keep(seed, i, p) ? 1.0f : 0.0f);
        y[i] = acc ? y[i] + v : v;
    }
}

START_TEST(embedding_dropout)
{
    enum { V = 11, DIM = 37, NI = 9 };
    float *table = rand_buf(V * DIM, -1, 1), *dout = rand_buf(NI * DIM, -1, 1);
    int32_t idx[NI] = {3, 0, 10, 3, 3, 7, 1, 0, 9};
    float out[NI * DIM], dtab[V * DIM] = {0};
    float *dt = up(table, sizeof dtab), *ddo = up(dout, sizeof out), *dout_ = dev_alloc(sizeof out);
    float *ddt = up(dtab, sizeof dtab);
    int32_t *di = up(idx, sizeof idx);
    eo_k_embedding(NI, DIM, table, idx, out, NULL);
    eo_cuda_k_embedding(NI, DIM, dt, di, dout_, &EX);
    check_dev("embedding", dout_, out, NI * DIM, 0, 0);
    /* width 36: rows of whole chunks of 4 (the 128-bit path) */
    eo_k_embedding(NI, DIM - 1, table, idx, out, NULL);
    eo_cuda_k_embedding(NI, DIM - 1, dt, di, dout_, &EX);
    check_dev("embedding, chunks of 4", dout_, out, NI * (DIM - 1), 0, 0);
    eo_k_embedding_backward(NI, DIM, idx, dout, dtab, NULL);
    eo_cuda_k_embedding_backward(NI, DIM, di, ddo, ddt, &EX);
    check_dev("embedding_backward", ddt, dtab, V * DIM, 0, 0); /* index order: the CPU's bits */

    enum { N = 2000 };
    float *x = rand_buf(N, -1, 1), y[N], g[N];
    for (int i = 0; i < N; i++)
        g[i] = 1.0f;
    float *dx = up(x, sizeof y), *dy = dev_alloc(sizeof y), *dg = up(g, sizeof g);
    dropout_want(N, x, y, 0.3f, 12345, 0);
    eo_cuda_k_dropout(N, dx, dy, 0.3f, 12345, &EX);
    check_dev("dropout", dy, y, N, 0, 0);
    dropout_want(N, x, g, 0.3f, 12345, 1);
    eo_cuda_k_dropout_backward(N, dx, dg, 0.3f, 12345, &EX);
    check_dev("dropout_backward", dg, g, N, 0, 0);
    /* a tail of 3 after 1996 in chunks; then misaligned by a float (the
     * scalar path); the mask follows the element index either way */
    static const struct { int n, off; } runs[] = {{1999, 0}, {1998, 1}};
    for (size_t r = 0; r < sizeof runs / sizeof *runs; r++) {
        int n = runs[r].n, o = runs[r].off;
        for (int i = 0; i < N; i++)
            g[i] = 0.5f + (float)i;
        ck_assert_int_eq(eo_cuda_h2d(&CU, (eo_cu_deviceptr)(uintptr_t)dg, g, sizeof g), EO_OK);
        dropout_want(n, x + o, y, 0.25f, 777, 0);
        eo_cuda_k_dropout(n, dx + o, dy + o, 0.25f, 777, &EX);
        check_dev("dropout tail", dy + o, y, (size_t)n, 0, 0);
        dropout_want(n, x + o, g + o, 0.25f, 777, 1);
        eo_cuda_k_dropout_backward(n, dx + o, dg + o, 0.25f, 777, &EX);
        float got[N];
        down(got, dg, sizeof got);
        ck_assert_int_eq(memcmp(got, g, sizeof got), 0);
    }
    free(table), free(dout), free(x);
    free_all();
}
END_TEST

START_TEST(optimizers)
{
    enum { N = 777 };
    float *w0 = rand_buf(N, -1, 1), *g = rand_buf(N, -1, 1), *v0 = rand_buf(N, -0.1f, 0.1f);
    float *m0 = rand_buf(N, -0.1f, 0.1f), *s0 = rand_buf(N, 0, 0.01f);
    float *dg = up(g, N * 4);
    for (int nest = 0; nest < 2; nest++) {
        float *w = copy_buf(w0, N), *v = copy_buf(v0, N);
        float *dw = up(w0, N * 4), *dv = up(v0, N * 4);
        eo_k_sgd(N, w, g, v, 0.1f, 0.9f, 0.25f, 0.01f, nest, NULL);
        eo_cuda_k_sgd(N, dw, dg, dv, 0.1f, 0.9f, 0.25f, 0.01f, nest, &EX);
        check_dev("sgd w", dw, w, N, 1e-6f, 1e-7f);
        check_dev("sgd v", dv, v, N, 1e-6f, 1e-7f);
        free(w), free(v);
    }
    float *w = copy_buf(w0, N), *m = copy_buf(m0, N), *s = copy_buf(s0, N);
    float *dw = up(w0, N * 4), *dm = up(m0, N * 4), *ds = up(s0, N * 4);
    eo_k_adamw(N, w, g, m, s, 1e-3f, 0.9f, 0.999f, 1e-8f, 0.01f, 7, NULL);
    eo_cuda_k_adamw(N, dw, dg, dm, ds, 1e-3f, 0.9f, 0.999f, 1e-8f, 0.01f, 7, &EX);
    check_dev("adamw w", dw, w, N, 1e-6f, 1e-7f);
    check_dev("adamw m", dm, m, N, 1e-6f, 1e-8f);
    check_dev("adamw v", ds, s, N, 1e-6f, 1e-9f);
    /* one float past a 16-byte boundary: the scalar path; SGD without
     * momentum (no buffer) */
    float *w1 = copy_buf(w0, N), *m1 = copy_buf(m0, N), *s1 = copy_buf(s0, N);
    float *dw1 = up(w0, N * 4), *dm1 = up(m0, N * 4), *ds1 = up(s0, N * 4);
    eo_k_adamw(N - 1, w1 + 1, g + 1, m1 + 1, s1 + 1, 1e-3f, 0.9f, 0.999f, 1e-8f, 0.01f, 2, NULL);
    eo_cuda_k_adamw(N - 1, dw1 + 1, dg + 1, dm1 + 1, ds1 + 1, 1e-3f, 0.9f, 0.999f, 1e-8f, 0.01f, 2,
                    &EX);
    check_dev("adamw w misaligned", dw1, w1, N, 1e-6f, 1e-7f);
    check_dev("adamw v misaligned", ds1, s1, N, 1e-6f, 1e-9f);
    memcpy(w1, w0, N * 4);
    ck_assert_int_eq(eo_cuda_h2d(&CU, (eo_cu_deviceptr)(uintptr_t)dw1, w0, N * 4), EO_OK);
    eo_k_sgd(N - 2, w1 + 2, g, NULL, 0.1f, 0.0f, 0.0f, 0.01f, 0, NULL);
    eo_cuda_k_sgd(N - 2, dw1 + 2, dg, NULL, 0.1f, 0.0f, 0.0f, 0.01f, 0, &EX);
    check_dev("sgd without momentum, misaligned", dw1, w1, N, 1e-6f, 1e-7f);
    eo_k_sgd(N - 1, w1, g, NULL, 0.1f, 0.0f, 0.0f, 0.01f, 0, NULL);
    eo_cuda_k_sgd(N - 1, dw1, dg, NULL, 0.1f, 0.0f, 0.0f, 0.01f, 0, &EX);
    check_dev("sgd without momentum", dw1, w1, N, 1e-6f, 1e-7f);
    free(w1), free(m1), free(s1);
    free(w), free(m), free(s), free(w0), free(g), free(v0), free(m0), free(s0);
    free_all();
}
END_TEST

START_TEST(convolution_helpers)
{
    enum { NB = 2, C = 3, H = 7, W = 6, KH = 3, KW = 2, PAD = 1, S = 2 };
    const int OH = (H + 2 * PAD - KH) / S + 1, OW = (W + 2 * PAD - KW) / S + 1;
    size_t ncol = (size_t)C * KH * KW * NB * OH * OW, nx = (size_t)NB * C * H * W;
    float *x = rand_buf(nx, -1, 1), *cols = malloc(ncol * 4), *dx = calloc(nx, 4);
    float *dcols = rand_buf(ncol, -1, 1);
    float *d_x = up(x, nx * 4), *d_cols = dev_alloc(ncol * 4), *d_dcols = up(dcols, ncol * 4);
    float *d_dx = up(dx, nx * 4);
    eo_k_im2col(NB, C, H, W, KH, KW, PAD, S, x, cols, NULL);
    eo_cuda_k_im2col(NB, C, H, W, KH, KW, PAD, S, d_x, d_cols, &EX);
    check_dev("im2col", d_cols, cols, ncol, 0, 0);
    eo_k_col2im(NB, C, H, W, KH, KW, PAD, S, dcols, dx, NULL);
    eo_cuda_k_col2im(NB, C, H, W, KH, KW, PAD, S, d_dcols, d_dx, &EX);
    check_dev("col2im", d_dx, dx, nx, 1e-6f, 1e-6f);

    enum { P = 4, PH = 9, PW = 8, K = 2 };
    const int QH = PH / K, QW = PW / K;
    float *px = rand_buf(P * PH * PW, -1, 1), *py = malloc(sizeof(float) * P * QH * QW);
    int32_t *arg = malloc(sizeof(int32_t) * P * QH * QW), *garg = malloc(sizeof(int32_t) * P * QH * QW);
    float *pdy = rand_buf((size_t)P * QH * QW, -1, 1), *pdx = calloc(P * PH * PW, 4);
    float *d_px = up(px, sizeof(float) * P * PH * PW), *d_py = dev_alloc(sizeof(float) * P * QH * QW);
    int32_t *d_arg = dev_alloc(sizeof(int32_t) * P * QH * QW);
    float *d_pdy = up(pdy, sizeof(float) * P * QH * QW), *d_pdx = up(pdx, sizeof(float) * P * PH * PW);
    eo_k_maxpool2d(P, PH, PW, K, px, py, arg, NULL);
    eo_cuda_k_maxpool2d(P, PH, PW, K, d_px, d_py, d_arg, &EX);
    check_dev("maxpool", d_py, py, (size_t)P * QH * QW, 0, 0);
    down(garg, d_arg, sizeof(int32_t) * P * QH * QW);
    ck_assert_int_eq(memcmp(garg, arg, sizeof(int32_t) * P * QH * QW), 0);
    eo_k_maxpool2d_backward(P, PH, PW, K, pdy, arg, pdx, NULL);
    eo_cuda_k_maxpool2d_backward(P, PH, PW, K, d_pdy, d_arg, d_pdx, &EX);
    check_dev("maxpool_backward", d_pdx, pdx, (size_t)P * PH * PW, 0, 0);
    free(x), free(cols), free(dx), free(dcols), free(px), free(py), free(arg), free(garg);
    free(pdy), free(pdx);
    free_all();
}
END_TEST

/* ---- attention ------------------------------------------------------------------------ */
/* poison: a NaN in q (row 2 of head 0) and, with a mask, a NaN among the
 * -infs of mask row 3 in the last key tile: those rows are NaN on both
 * sides (the CPU kernel's own NaN rules are tested in the attention suite).
 * partial: the device backward is asked for dv and dmask only (dq = dk = NULL). */
static void attention_case(int64_t B, int64_t H, int64_t Tq, int64_t Tk, int64_t D, int causal,
                           int masked, int poison, int partial)
{
    size_t nq = (size_t)(B * H * Tq * D), nk = (size_t)(B * H * Tk * D);
    size_t nl = (size_t)(B * H * Tq), nm = (size_t)(B * Tq * Tk);
    float *q = rand_buf(nq, -1, 1), *k = rand_buf(nk, -1, 1), *v = rand_buf(nk, -1, 1);
    float *dout = rand_buf(nq, -1, 1), *mask = NULL;
    /* mask [B, 1, Tq, Tk], broadcast over heads; some keys hidden, and row
     * 1 of image 0 hidden entirely */
    int64_t ms[4] = {Tq * Tk, 0, Tk, 1};
    if (masked) {
        mask = rand_buf(nm, -0.5f, 0.5f);
        for (size_t e = 0; e < nm; e += 7)
            mask[e] = -INFINITY;
        for (int64_t j = 0; j < Tk; j++)
            mask[1 * Tk + j] = -INFINITY;
        if (poison) {
            for (int64_t j = 0; j < Tk; j++)
                mask[3 * Tk + j] = -INFINITY;
            mask[3 * Tk + Tk - 1] = NAN;
        }
    }
    if (poison)
        q[2 * D + 1] = NAN;
    float scale = 1.0f / sqrtf((float)D);
    float *out = malloc(nq * 4), *lse = malloc(nl * 4);
    float *dq = calloc(nq, 4), *dk = calloc(nk, 4), *dv = calloc(nk, 4);
    float *dmask = masked ? calloc(nm, 4) : NULL;
    size_t wsb = eo_k_attention_ws(Tq, Tk, D, 1);
    void *ws = malloc(wsb ? wsb : 1);
    eo_k_attention(B, H, Tq, Tk, D, q, k, v, mask, ms, causal, scale, out, lse, ws, NULL);
    eo_k_attention_backward(B, H, Tq, Tk, D, q, k, v, mask, ms, causal, scale, out, lse, dout, dq,
                            dk, dv, dmask, ms, ws, NULL);
    free(ws);

    float *d_q = up(q, nq * 4), *d_k = up(k, nk * 4), *d_v = up(v, nk * 4);
    float *d_mask = masked ? up(mask, nm * 4) : NULL, *d_dout = up(dout, nq * 4);
    float *d_out = dev_alloc(nq * 4), *d_lse = dev_alloc(nl * 4);
    eo_cuda_k_attention(B, H, Tq, Tk, D, d_q, d_k, d_v, d_mask, ms, causal, scale, d_out, d_lse,
                        NULL, &EX);
    check_dev("attention out", d_out, out, nq, 1e-5f, 1e-6f);
    check_dev("attention lse", d_lse, lse, nl, 1e-5f, 1e-6f);
    float *zq = calloc(nq, 4), *zk = calloc(nk, 4), *zm = calloc(nm, 4);
    float *d_dq = up(zq, nq * 4), *d_dk = up(zk, nk * 4), *d_dv = up(zk, nk * 4);
    float *d_dmask = masked ? up(zm, nm * 4) : NULL;
    eo_cuda_k_attention_backward(B, H, Tq, Tk, D, d_q, d_k, d_v, d_mask, ms, causal, scale, d_out,
                                 d_lse, d_dout, partial ? NULL : d_dq, partial ? NULL : d_dk,
                                 d_dv, d_dmask, ms, NULL, &EX);
    check_dev("attention dq", d_dq, partial ? zq : dq, nq, 1e-4f, 1e-5f);
    check_dev("attention dk", d_dk, partial ? zk : dk, nk, 1e-4f, 1e-5f);
    check_dev("attention dv", d_dv, dv, nk, 1e-4f, 1e-5f);
    if (masked)
        check_dev("attention dmask", d_dmask, dmask, nm, 1e-4f, 1e-5f);
    free(q), free(k), free(v), free(dout), free(mask), free(out), free(lse);
    free(dq), free(dk), free(dv), free(dmask), free(zq), free(zk), free(zm);
    free_all();
}

/* Tiles are 32 rows forward and 16 backward; sizes just above them, and
 * head dimensions for every column-group count (D rounded up to 32: 32,
 * 64, 96, 128), with 16-byte (D % 4 = 0) and 4-byte accesses. */
START_TEST(attention_forward_backward)
{
    attention_case(2, 3, 37, 37, 24, 1, 0, 0, 0);  /* causal */
    attention_case(2, 2, 5, 300, 16, 0, 1, 0, 0);  /* many key tiles, a mask, a fully masked row */
    attention_case(1, 2, 9, 9, 70, 1, 1, 0, 0);    /* causal and a mask, D % 4 != 0 */
    attention_case(1, 2, 33, 33, 64, 1, 1, 0, 0);  /* causal, masked, one past a forward tile */
    attention_case(1, 1, 17, 50, 128, 0, 1, 0, 0); /* D = 128, one past a backward tile */
    attention_case(2, 1, 40, 40, 3, 1, 0, 0, 0);   /* D = 3 */
    attention_case(1, 2, 20, 19, 8, 0, 1, 0, 1);   /* dv and dmask only */
    attention_case(1, 2, 5, 37, 16, 1, 1, 0, 0);   /* causal, Tq < Tk: new queries against a cache */
    attention_case(1, 1, 20, 50, 64, 1, 0, 0, 0);  /* ... across tiles on both sides */
    attention_case(1, 1, 130, 130, 64, 1, 0, 0, 0); /* causal D 64: three query tiles, warps
                                                      * skipping tiles above their diagonal */
    attention_case(1, 2, 5, 300, 16, 0, 1, 1, 0); /* NaN scores: NaN rows */
}
END_TEST

/* The register-blocked backward (eo_attn_bwd_dq32/64, eo_attn_bwd_dkv32:
 * no mask, D <= 64; one warp per 32 rows, tiles of 64 on the other side):
 * T of 1 and just past 16, 32 and 64 rows, D of 1, 7, 32, 33 (dq64 with
 * eo_attn_bwd_dkv) and 64, causal with Tq = Tk and Tq < Tk, a NaN query,
 * dv alone. The cases of attention_forward_backward without a mask run
 * these kernels too. */
START_TEST(attention_backward_blocked)
{
    attention_case(1, 1, 1, 1, 1, 0, 0, 0, 0);      /* T 1, D 1 */
    attention_case(1, 2, 17, 17, 7, 1, 0, 0, 0);    /* D 7: 4-byte copies */
    attention_case(2, 1, 65, 65, 32, 1, 0, 0, 0);   /* one past a 64-row tile, causal */
    attention_case(1, 1, 65, 65, 33, 0, 0, 0, 0);   /* D 33: dq64 */
    attention_case(1, 1, 17, 130, 32, 0, 0, 0, 0);  /* three key tiles, one query block */
    attention_case(1, 1, 130, 130, 32, 1, 0, 0, 0); /* causal, several tiles both ways */
    attention_case(1, 1, 5, 37, 32, 1, 0, 0, 0);    /* causal, Tq < Tk */
    attention_case(1, 2, 20, 20, 64, 0, 0, 1, 0);   /* a NaN in q: its row NaN */
    attention_case(1, 2, 20, 19, 32, 0, 0, 0, 1);   /* dv only */
}
END_TEST

/* ---- degenerate sizes ---------------------------------------------------------------- */
START_TEST(edge_cases)
{
    /* matmul with K = 0: C = 0 (beta 0) or C unchanged (beta 1) */
    float c0[6] = {1, 2, 3, 4, 5, 6}, zeros[6] = {0}, one = 1.0f;
    float *dC = up(c0, sizeof c0), *dA = up(&one, 4);
    eo_cuda_k_matmul(0, 0, 1, 2, 3, 0, dA, 1, 0, dA, 3, 0, 1.0f, dC, 3, 0, NULL, &EX);
    check_dev("matmul K=0 beta=1", dC, c0, 6, 0, 0);
    eo_cuda_k_matmul(0, 0, 1, 2, 3, 0, dA, 1, 0, dA, 3, 0, 0.0f, dC, 3, 0, NULL, &EX);
    check_dev("matmul K=0 beta=0", dC, zeros, 6, 0, 0);

    /* attention with D above 128 is refused, not run */
    float *d_att = dev_alloc(4 * 129 * sizeof(float));
    int64_t ms0[4] = {0, 0, 0, 0};
    eo_cuda_k_attention(1, 1, 2, 2, 129, d_att, d_att, d_att, NULL, ms0, 0, 1.0f, d_att, d_att,
                        NULL, &EX);
    char amsg[256];
    ck_assert_int_eq(eo_cuda_take_error(&CU, amsg, sizeof amsg), EO_ERR_UNSUPPORTED);
    ck_assert_msg(strstr(amsg, "D <= 128") != NULL, "%s", amsg);

    /* binary backward wanting only db, with a, b read (mul) */
    int64_t shape[4] = {1, 1, 3, 4}, s34[4] = {12, 12, 4, 1}, sb[4] = {0, 0, 0, 1};
    float *a = rand_buf(12, -1, 1), *b = rand_buf(4, -1, 1), *g = rand_buf(12, -1, 1);
    float gb[4] = {0};
    float *d_a = up(a, 48), *d_b = up(b, 16), *d_g = up(g, 48), *d_gb = up(gb, 16);
    eo_k_binary_backward(EO_BIN_MUL, shape, g, s34, a, s34, b, sb, NULL, s34, gb, sb, NULL);
    eo_cuda_k_binary_backward(EO_BIN_MUL, shape, d_g, s34, d_a, s34, d_b, sb, NULL, s34, d_gb, sb, &EX);
    check_dev("binary_backward db only", d_gb, gb, 4, 1e-6f, 1e-7f);

    /* softmax over one column, layernorm over one column, reduce over n = 1 */
    float x[5] = {3, -1, 0, 1e4f, -INFINITY}, y[5], ln_y[5], mean[5], rstd[5], r[5];
    float *d_x = up(x, sizeof x), *d_y = dev_alloc(sizeof y), *d_m = dev_alloc(20);
    float *d_r = dev_alloc(20);
    for (int log = 0; log < 2; log++) {
        eo_k_softmax(log, 5, 1, x, y, NULL, NULL);
        eo_cuda_k_softmax(log, 5, 1, d_x, d_y, NULL, &EX);
        check_dev("softmax cols=1", d_y, y, 5, 0, 0);
    }
    eo_k_layernorm(4, 1, x, NULL, NULL, 1e-5f, ln_y, mean, rstd, NULL);
    eo_cuda_k_layernorm(4, 1, d_x, NULL, NULL, 1e-5f, d_y, d_m, d_r, &EX);
    check_dev("layernorm cols=1", d_y, ln_y, 4, 0, 0);
    eo_k_reduce(EO_RED_MEAN, 5, 1, 1, x, r, NULL, NULL);
    eo_cuda_k_reduce(EO_RED_MEAN, 5, 1, 1, d_x, d_y, NULL, &EX);
    check_dev("reduce n=1", d_y, r, 5, 0, 0);

    /* dropout with p = 0 keeps everything */
    eo_cuda_k_dropout(4, d_x, d_y, 0.0f, 7, &EX);
    check_dev("dropout p=0", d_y, x, 4, 0, 0);
    /* zero-sized launches are skipped, not errors */
    eo_cuda_k_fill(0, d_y, 1.0f, &EX);
    eo_cuda_k_unary(EO_UN_EXP, 0, d_x, d_y, 1.0f, &EX);
    eo_cuda_k_softmax(0, 0, 5, d_x, d_y, NULL, &EX);
    char msg[256];
    ck_assert_int_eq(eo_cuda_take_error(&CU, msg, sizeof msg), EO_OK);
    free(a), free(b), free(g);
    free_all();
}
END_TEST

/* ---- failures are recorded, not lost ---------------------------------------------------- */
START_TEST(launch_failure_is_sticky)
{
    char msg[512];
    float *d = dev_alloc(16 * sizeof(float));
    /* 2^31 elements: beyond what the PTX indexes; recorded, not launched. */
    eo_cuda_k_fill((int64_t)1 << 31, d, 1.0f, &EX);
    eo_status s = eo_cuda_take_error(&CU, msg, sizeof msg);
    ck_assert_int_eq(s, EO_ERR_UNSUPPORTED);
    ck_assert_msg(strstr(msg, "fill") != NULL, "%s", msg);
    if (real_gpu) /* a GPU need not fault one element past an allocation */
        return;
    /* A kernel that faults (write past the end) surfaces at the next sync. */
    eo_cuda_k_fill(17, d, 1.0f, &EX);
    s = eo_cuda_sync(&CU);
    ck_assert_int_eq(s, EO_ERR_CUDA);
    ck_assert_int_eq(eo_cuda_take_error(&CU, msg, sizeof msg), EO_ERR_CUDA);
    ck_assert_msg(strstr(msg, "CUDA_ERROR_ILLEGAL_ADDRESS") != NULL, "%s", msg);
    nbufs = 0; /* the context is poisoned; closing it frees everything */
}
END_TEST

/* ---- PyTorch's rules at the edges, explicit expected values -----------------------
 * Each value here is what PyTorch gives (and what the CPU kernels are being
 * changed to), written out rather than taken from the CPU kernel. Bits are
 * compared: a zero's sign counts, NaN must meet NaN. */
static int same_bits(float g, float w)
{
    uint32_t a, b;
    memcpy(&a, &g, 4);
    memcpy(&b, &w, 4);
    return (isnan(g) && isnan(w)) || a == b;
}

static void check_bits(const char *what, const void *dev, const float *want, size_t n)
{
    float *got = malloc(n * sizeof *got);
    down(got, dev, n * sizeof *got);
    for (size_t i = 0; i < n; i++)
        ck_assert_msg(same_bits(got[i], want[i]), "%s[%zu]: cuda %.9g, want %.9g", what, i,
                      (double)got[i], (double)want[i]);
    free(got);
}

static void put(void *dev, const void *host, size_t bytes)
{
    ck_assert_int_eq(eo_cuda_h2d(&CU, (eo_cu_deviceptr)(uintptr_t)dev, host, bytes), EO_OK);
}

/* GELU (both forms) where the exp leaves the float range: gelu(x) = x * 1
 * or x * 0 exactly, gelu'(x) = 1 or 0 exactly (the correction term is 0,
 * even where x^2 or x^3 is inf); gelu(+inf) = +inf, gelu(-inf) = NaN,
 * gelu'(+-inf) = NaN, NaN gives NaN. ReLU's gradient passes where NOT
 * (x <= 0): at NaN too. */
START_TEST(torch_gelu_relu_edges)
{
    enum { N = 16 };
    static const float xs[N] = {1e13f, 1e20f, 3e38f, 50.0f, 20.0f, -1e13f, -1e20f, -1e38f,
                                -3e38f, -50.0f, -20.0f, INFINITY, -INFINITY, NAN, 1e30f, -1e30f};
    float y[N], d[N], g[N], z[N];
    for (int i = 0; i < N; i++)
        g[i] = 0.75f, z[i] = 0.0f;
    for (int off = 0; off <= 1; off++) { /* aligned (chunks of 4), then one float off */
        float *dx = dev_alloc((N + 1) * 4), *dyo = dev_alloc((N + 1) * 4);
        float *dgo = dev_alloc((N + 1) * 4), *ddy = dev_alloc((N + 1) * 4);
        put(dx + off, xs, sizeof xs);
        put(ddy + off, g, sizeof g);
        for (int op = EO_UN_GELU_TANH; op <= EO_UN_GELU_ERF; op++) {
            const char *name = op == EO_UN_GELU_TANH ? "gelu_tanh" : "gelu_erf";
            for (int i = 0; i < N; i++) {
                float v = xs[i];
                y[i] = isnan(v) || v == -INFINITY ? NAN : v > 0 ? v : v * 0.0f;
                d[i] = isnan(v) || isinf(v) ? NAN : v > 0 ? 0.75f : 0.0f;
            }
            eo_cuda_k_unary((eo_unop)op, N, dx + off, dyo + off, 1, &EX);
            check_bits(name, dyo + off, y, N);
            put(dgo + off, z, sizeof z);
            eo_cuda_k_unary_backward((eo_unop)op, N, dx + off, dyo + off, ddy + off, dgo + off, 1,
                                     &EX);
            check_bits(op == EO_UN_GELU_TANH ? "gelu_tanh backward" : "gelu_erf backward",
                       dgo + off, d, N);
        }
        /* relu backward: dx = 0.125 + 0.75 where x > 0 or x is NaN */
        static const float rx[8] = {NAN, 0.0f, -0.0f, -1.0f, 1.0f, INFINITY, -INFINITY, -NAN};
        static const float rw[8] = {0.875f, 0.125f, 0.125f, 0.125f, 0.875f, 0.875f, 0.125f,
                                    0.875f};
        float acc[8];
        for (int i = 0; i < 8; i++)
            acc[i] = 0.125f;
        put(dx + off, rx, sizeof rx);
        put(dgo + off, acc, sizeof acc);
        eo_cuda_k_unary_backward(EO_UN_RELU, 8, dx + off, dyo + off, ddy + off, dgo + off, 1, &EX);
        check_bits("relu backward", dgo + off, rw, 8);
        free_all();
    }
}
END_TEST

/* log_softmax backward: dx += dy - exp(y) sum(dy) at every entry, so a -inf
 * entry in a row with finite ones gets dy; a row of only -inf gets 0; a NaN
 * entry is never zeroed. y is given directly (exp(0) = 1 exactly). */
START_TEST(torch_log_softmax_backward_edges)
{
    const float NI = -INFINITY;
    /* short rows (one chunk: y in registers) */
    enum { R = 4, C = 4 };
    const float y[R * C] = {0, NI, NI, NI,    /* one finite entry */
                            NI, NI, NI, NI,   /* fully masked */
                            NAN, NI, NI, NI,  /* a NaN among -infs: NaN there, dy elsewhere */
                            NI, 0, NI, NI};
    const float dy[C] = {0.5f, 0.25f, -1.0f, 2.0f}; /* sum 1.75 */
    float g[R * C], want[R * C], acc[R * C];
    for (int r = 0; r < R; r++)
        for (int c = 0; c < C; c++)
            g[r * C + c] = dy[c];
    for (int i = 0; i < R * C; i++)
        acc[i] = 0.125f, want[i] = 0.125f + g[i]; /* dx starts at 0.125 */
    want[0] = 0.125f + (0.5f - 1.75f);
    for (int c = 0; c < C; c++)
        want[1 * C + c] = 0.125f; /* + 0 */
    want[2 * C + 0] = NAN;
    want[3 * C + 1] = 0.125f + (0.25f - 1.75f);
    float *dyv = up(y, sizeof y), *dg = up(g, sizeof g), *dacc = up(acc, sizeof acc);
    eo_cuda_k_softmax_backward(1, R, C, dyv, dg, dacc, &EX);
    check_bits("log_softmax backward", dacc, want, R * C);
    /* long rows (past 4096 columns: the sum pass, then a second read) */
    enum { LC = 4100 };
    float *ly = malloc(sizeof(float) * 2 * LC), *lg = malloc(sizeof(float) * 2 * LC);
    float *lw = malloc(sizeof(float) * 2 * LC), *lz = calloc(2 * LC, sizeof(float));
    for (int i = 0; i < 2 * LC; i++)
        ly[i] = NI, lg[i] = 0.25f, lw[i] = 0.25f; /* dx from 0: dy at the -inf entries */
    ly[LC - 1] = 0;                               /* row 0's one finite entry, in the 2nd chunk */
    lw[LC - 1] = 0.25f - 1025.0f;                 /* dy - 1 * (4100 * 0.25), exact */
    for (int c = 0; c < LC; c++)
        lw[LC + c] = 0.0f;                        /* row 1: only -inf */
    float *dly = up(ly, sizeof(float) * 2 * LC), *dlg = up(lg, sizeof(float) * 2 * LC);
    float *dlx = up(lz, sizeof(float) * 2 * LC);
    eo_cuda_k_softmax_backward(1, 2, LC, dly, dlg, dlx, &EX);
    check_bits("log_softmax backward, long rows", dlx, lw, 2 * LC);
    free(ly), free(lg), free(lw), free(lz);
    free_all();
}
END_TEST

/* Max pooling: take v if v > best or v is NaN, in row-major order, so the
 * last NaN of a window wins (value and gradient); one NaN, and ties, as
 * before. */
START_TEST(torch_maxpool_nan)
{
    enum { P = 4, H = 3, W = 3 };
    const float x[P * H * W] = {
        NAN, 1, 5, 2, NAN, 0, 7, NAN, 3, /* NaNs at 0, 4, 7: the last, 7, wins */
        1, NAN, 3, 9, 2, 2, 0, 0, 0,     /* one NaN, at 1 */
        4, 1, 4, 2, 4, 0, 0, 0, 0,       /* ties: the first 4, at 0 */
        -1, NAN, NAN, -2, 0, 0, 0, 0, 0, /* NaNs at 1 and 2 */
    };
    const float wy[P] = {NAN, NAN, 4, NAN};
    const int32_t warg[P] = {7, 1, 0, 2};
    float *dx = up(x, sizeof x), *dy = dev_alloc(sizeof wy);
    int32_t *darg = dev_alloc(sizeof warg), arg[P];
    eo_cuda_k_maxpool2d(P, H, W, 3, dx, dy, darg, &EX);
    check_bits("maxpool", dy, wy, P);
    down(arg, darg, sizeof arg);
    for (int p = 0; p < P; p++)
        ck_assert_msg(arg[p] == warg[p], "maxpool arg[%d]: %d, want %d", p, (int)arg[p],
                      (int)warg[p]);
    const float g[P] = {1, 2, 3, 4};
    float want[P * H * W] = {0};
    for (int p = 0; p < P; p++)
        want[p * H * W + warg[p]] = g[p];
    float zero[P * H * W] = {0};
    float *dg = up(g, sizeof g), *dgx = up(zero, sizeof zero);
    eo_cuda_k_maxpool2d_backward(P, H, W, 3, dg, darg, dgx, &EX);
    check_bits("maxpool backward", dgx, want, P * H * W);
    free_all();
}
END_TEST

/* Dropout multiplies: a dropped element is x * 0 (NaN stays NaN, +-inf
 * becomes NaN, -1 gives -0), a kept one x * scale, scale = 1/(1 - p)
 * rounded once; the backward adds dy * 0 or dy * scale. */
START_TEST(torch_dropout_nan)
{
    enum { N = 203 };
    static const float sp[6] = {NAN, INFINITY, -INFINITY, -1.0f, -0.0f, 3.0f};
    float x[N], want[N], bw[N], acc[N];
    for (int i = 0; i < N; i++)
        x[i] = sp[i % 6], acc[i] = 0.125f;
    for (int pi = 0; pi < 2; pi++) {
        const float p = pi ? 0.3f : 0.5f;
        int dropped_nan = 0, dropped_inf = 0, kept_nan = 0;
        for (int i = 0; i < N; i++) {
            int keep = eo_dropout_keep(99, i, p);
            want[i] = x[i] / (1.0f - p) * (keep ? 1.0f : 0.0f);
            bw[i] = 0.125f + want[i];
            dropped_nan += !keep && isnan(x[i]);
            dropped_inf += !keep && isinf(x[i]);
            kept_nan += keep && isnan(x[i]);
        }
        ck_assert(dropped_nan && dropped_inf && kept_nan); /* the cases are met */
        for (int off = 0; off <= 1; off++) { /* chunks of 4, then the scalar path */
            float *dx = dev_alloc((N + 1) * 4), *dy = dev_alloc((N + 1) * 4);
            float *dg = dev_alloc((N + 1) * 4);
            put(dx + off, x, sizeof x);
            put(dg + off, acc, sizeof acc);
            eo_cuda_k_dropout(N, dx + off, dy + off, p, 99, &EX);
            check_bits("dropout", dy + off, want, N);
            eo_cuda_k_dropout_backward(N, dx + off, dg + off, p, 99, &EX);
            check_bits("dropout backward", dg + off, bw, N);
            free_all();
        }
    }
}
END_TEST

/* maximum/minimum: a tie returns the first operand (maximum(-0, +0) = -0,
 * maximum(+0, -0) = +0, the same for minimum), NaN on either side gives
 * NaN; contiguous (eo_binary_fast) and through a transposed view (the 4-D
 * kernel). */
START_TEST(torch_maximum_minimum_ties)
{
    enum { N = 8 };
    const float a[N] = {-0.0f, 0.0f, 1, NAN, 2, -0.0f, 0.0f, -3};
    const float b[N] = {0.0f, -0.0f, 1, 3, NAN, -0.0f, 0.0f, -5};
    const float wmax[N] = {-0.0f, 0.0f, 1, NAN, NAN, -0.0f, 0.0f, -3};
    const float wmin[N] = {-0.0f, 0.0f, 1, NAN, NAN, -0.0f, 0.0f, -5};
    float *da = up(a, sizeof a), *db = up(b, sizeof b), *dout = dev_alloc(sizeof a);
    const int64_t sh[4] = {1, 1, 1, N}, st[4] = {N, N, N, 1};
    eo_cuda_k_binary(EO_BIN_MAX, sh, dout, st, da, st, db, st, &EX);
    check_bits("maximum", dout, wmax, N);
    eo_cuda_k_binary(EO_BIN_MIN, sh, dout, st, da, st, db, st, &EX);
    check_bits("minimum", dout, wmin, N);
    /* out [2, 4] contiguous; a, b read as the transpose of a [4, 2] array:
     * out[r, c] = op(a[c * 2 + r], b[c * 2 + r]) */
    const int64_t sh2[4] = {1, 1, 2, 4}, so2[4] = {8, 8, 4, 1}, sab[4] = {8, 8, 1, 2};
    float w2max[N], w2min[N];
    for (int r = 0; r < 2; r++)
        for (int c = 0; c < 4; c++)
            w2max[r * 4 + c] = wmax[c * 2 + r], w2min[r * 4 + c] = wmin[c * 2 + r];
    eo_cuda_k_binary(EO_BIN_MAX, sh2, dout, so2, da, sab, db, sab, &EX);
    check_bits("maximum, strided", dout, w2max, N);
    eo_cuda_k_binary(EO_BIN_MIN, sh2, dout, so2, da, sab, db, sab, &EX);
    check_bits("minimum, strided", dout, w2min, N);
    free_all();
}
END_TEST

Suite *eo_suite_cuda_kernels(void)
{
    Suite *s = suite_create("cuda_kernels");
    TCase *t = tcase_create("vs_cpu");
    tcase_add_checked_fixture(t, setup, teardown);
    tcase_set_timeout(t, 120);
    tcase_add_test(t, fill_copy_accumulate);
    tcase_add_test(t, flat_fast_paths);
    tcase_add_test(t, binary_forward_backward);
    tcase_add_test(t, binary_fast_paths);
    tcase_add_test(t, unary_forward_backward);
    tcase_add_test(t, matmul_small_tiles);
    tcase_add_test(t, matmul_big_tiles);
    tcase_add_test(t, reduce_forward_backward);
    tcase_add_test(t, logsumexp_forward_backward);
    tcase_add_test(t, softmax_forward_backward);
    tcase_add_test(t, softmax_long_rows);
    tcase_add_loop_test(t, cross_entropy_forward_backward, 0, 4);
    tcase_add_test(t, cross_entropy_many_rows);
    tcase_add_test(t, layernorm_forward_backward);
    tcase_add_test(t, embedding_dropout);
    tcase_add_test(t, embedding_backward_order);
    tcase_add_test(t, optimizers);
    tcase_add_test(t, convolution_helpers);
    tcase_add_test(t, attention_forward_backward);
    tcase_add_test(t, edge_cases);
    tcase_add_test(t, launch_failure_is_sticky);
    suite_add_tcase(s, t);
    t = tcase_create("torch_semantics");
    tcase_add_checked_fixture(t, setup, teardown);
    tcase_set_timeout(t, 120);
    tcase_add_test(t, torch_gelu_relu_edges);
    tcase_add_test(t, torch_log_softmax_backward_edges);
    tcase_add_test(t, torch_maxpool_nan);
    tcase_add_test(t, torch_dropout_nan);
    tcase_add_test(t, torch_maximum_minimum_ties);
    suite_add_tcase(s, t);
    t = tcase_create("matmul_skinny");
    tcase_add_checked_fixture(t, setup, teardown);
    tcase_set_timeout(t, 120);
    tcase_add_test(t, matmul_skinny);
    suite_add_tcase(s, t);
    t = tcase_create("attention_blocked");
    tcase_add_checked_fixture(t, setup, teardown);
    tcase_set_timeout(t, 120);
    tcase_add_test(t, attention_backward_blocked);
    suite_add_tcase(s, t);
    return s;
}
