/* tests/test_cuda16.c — the 16-bit PTX kernels (ptx/elementwise16.ptx,
 * rows16.ptx, embedding16.ptx, optim16.ptx through their launchers in
 * ops/cuda/) on the PTX interpreter's driver double, element by element
 * against the CPU's f32 kernels.
 *
 * The reference: the 16-bit inputs widened to f32 (exact), the f32 CPU
 * kernel run on them, its outputs rounded to nearest even to 16 bits by
 * this file's own conversion. The device computes in f32 too, so the two
 * agree exactly except where an f32 result lies within a few f32 ulps of
 * a 16-bit rounding boundary (different but equally valid f32 operation
 * orders or exp/log approximations): one 16-bit ulp is allowed, and a
 * small absolute slack for results that cancel to near zero. NaN must
 * meet NaN and an infinity the same infinity. Shapes are odd (1037
 * values, 1003 columns) and, in a second run, offset by one element, so
 * both the 16-byte path and the one-value path are taken. Both bf16 and
 * f16. With EO_TEST_CUDA=real it runs on the machine's GPU. */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "core/everyo.h"
#include "ops/cuda/device.h"
#include "tests/cuda_fixture.h"
#include "ops/cuda/launch.h"
#include "ops/kernels.h"
#include "tools/ptxsim/driver.h"
#include "tests/gradcheck.h"

static eo_cuda_driver D;
static eo_cuda CU;
static eo_exec EX;
static int real_gpu;

static void setup(void) { eo_test_dev_open(&D, &CU, &EX, &real_gpu); }
static void teardown(void) { eo_test_dev_close(&D, &CU, real_gpu); }

/* ---- 16-bit values on the host ------------------------------------------ */

static float bits_f(uint32_t u)
{
    float f;
    memcpy(&f, &u, 4);
    return f;
}
static uint32_t f_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

static float h2f(uint16_t h, int dt)
{
    if (dt == EO_BF16)
        return bits_f((uint32_t)h << 16);
    int e = (h >> 10) & 31, m = h & 1023;
    float v = e == 31 ? (m ? NAN : INFINITY) : e ? ldexpf((float)(1024 + m), e - 25)
                                                 : ldexpf((float)m, -24);
    return (h & 0x8000) ? -v : v;
}

/* Round to nearest even (written independently of the kernels' cvt.rn). */
static uint16_t f2h(float f, int dt)
{
    uint32_t u = f_bits(f);
    if (dt == EO_BF16) {
        if (isnan(f))
            return (uint16_t)((u >> 16) | 0x40);
        return (uint16_t)((u + 0x7fff + ((u >> 16) & 1)) >> 16);
    }
    uint16_t sign = (uint16_t)((u >> 16) & 0x8000);
    float a = fabsf(f);
    if (isnan(f))
        return 0x7e00;
    if (a >= 65520.0f) /* rounds past the largest f16, 65504 */
        return sign | 0x7c00;
    if (a < ldexpf(1, -14)) { /* subnormal: units of 2^-24, rint rounds to even */
        return sign | (uint16_t)rintf(a * ldexpf(1, 24));
    }
    int e;
    float m = frexpf(a, &e); /* a = m 2^e, m in [0.5, 1) */
    float q = rintf(ldexpf(m, 11)); /* 11 significant bits */
    if (q >= 2048.0f) {
        q /= 2;
        e++;
    }
    return sign | (uint16_t)(((e + 14) << 10) | ((int)q - 1024));
}

static float ulp16(float a, int dt)
{
    a = fabsf(a);
    int e;
    frexpf(a > 0 ? a : 1e-30f, &e);
    int mant = dt == EO_BF16 ? 8 : 11;
    float u = ldexpf(1, e - mant);
    float tiny = dt == EO_BF16 ? ldexpf(1, -133) : ldexpf(1, -24);
    return u > tiny ? u : tiny;
}

/* Device value (16-bit) against the reference f32 result. */
static int close16(uint16_t got, float ref, int dt, float atol)
{
    float g = h2f(got, dt), r = h2f(f2h(ref, dt), dt);
    if (isnan(ref) || isnan(g))
        return isnan(ref) && isnan(g);
    if (isinf(r) || isinf(g))
        return g == r;
    float d = fabsf(g - r);
    return d <= ulp16(fmaxf(fabsf(g), fabsf(r)), dt) * 1.001f || d <= atol;
}

static uint64_t rng = 0x2545f4914f6cdd1dull;
static float frand(float lo, float hi)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return lo + (hi - lo) * (float)((rng >> 40) / 16777216.0);
}

/* ---- device buffers: 8 spare bytes in front, so an offset start is possible */

typedef struct dbuf {
    eo_cu_deviceptr base;
    void *p;
} dbuf;

static dbuf dup_(const void *host, size_t bytes, size_t off)
{
    dbuf b;
    ck_assert_int_eq(eo_cuda_alloc_block(&CU, bytes + 16, &b.base), EO_OK);
    b.p = (void *)(uintptr_t)(b.base + off);
    if (host)
        ck_assert_int_eq(eo_cuda_h2d(&CU, b.base + off, host, bytes), EO_OK);
    return b;
}
static void ddown(void *host, dbuf b, size_t bytes)
{
    char msg[1024] = "";
    eo_status s = eo_cuda_sync(&CU);
    if (s == EO_OK)
        s = eo_cuda_d2h(&CU, host, (eo_cu_deviceptr)(uintptr_t)b.p, bytes);
    eo_status e = eo_cuda_take_error(&CU, msg, sizeof msg);
    const eo_px_fault *f = real_gpu ? NULL : eo_ptxsim_last_fault();
    ck_assert_msg(s == EO_OK && e == EO_OK, "device error: %s (fault: %s)", msg, f ? f->msg : "");
}
static void dfree(dbuf b) { eo_cuda_free_block(&CU, b.base); }

/* n random 16-bit values in [lo, hi], and their f32 values. */
static void rand16(uint16_t *h, float *f, size_t n, int dt, float lo, float hi)
{
    for (size_t i = 0; i < n; i++) {
        h[i] = f2h(frand(lo, hi), dt);
        f[i] = h2f(h[i], dt);
    }
}

static void check16(const char *what, const uint16_t *got, const float *ref, size_t n, int dt,
                    float atol)
{
    for (size_t i = 0; i < n; i++)
        ck_assert_msg(close16(got[i], ref[i], dt, atol), "%s (%s) [%zu]: device %.9g (0x%04x), "
                      "reference %.9g", what, dt == EO_BF16 ? "bf16" : "f16", i,
                      (double)h2f(got[i], dt), got[i], (double)ref[i]);
}

enum { N = 1037 };

/* ---- conversions and the copy ---------------------------------------------- */

START_TEST(cast_and_copy)
{
    static float f[N], back[N];
    static uint16_t h[N], h2[N];
    for (int dt = EO_BF16; dt <= EO_F16; dt++)
        for (size_t off = 0; off <= 2; off += 2) {
            for (int i = 0; i < N; i++)
                f[i] = frand(-70000, 70000) * (i % 3 ? 1e-4f : 1);
            f[5] = NAN;
            f[6] = INFINITY;
            f[7] = -INFINITY;
            f[8] = 1e-7f; /* an f16 subnormal */
            f[9] = 1.00390625f; /* bf16 tie: 1 + 2^-8, rounds to even (1) */
            dbuf df = dup_(f, sizeof f, off * 2), dh = dup_(NULL, sizeof h, off);
            ck_assert(eo_cuda_cast_flat(dt, dh.p, EO_F32, df.p, N, &EX));
            ddown(h, dh, sizeof h);
            for (int i = 0; i < N; i++) {
                uint16_t want = f2h(f[i], dt);
                ck_assert_msg(h[i] == want || (isnan(f[i]) && isnan(h2f(h[i], dt))),
                              "to %d [%d] of %.9g: 0x%04x, want 0x%04x", dt, i, (double)f[i], h[i],
                              want);
            }
            dbuf dg = dup_(NULL, sizeof back, off * 2);
            ck_assert(eo_cuda_cast_flat(EO_F32, dg.p, dt, dh.p, N, &EX));
            ddown(back, dg, sizeof back);
            for (int i = 0; i < N; i++)
                ck_assert(f_bits(back[i]) == f_bits(h2f(h[i], dt)) || isnan(back[i]));
            dbuf dc = dup_(NULL, sizeof h2, off ? 0 : 2); /* copy across alignments too */
            ck_assert(eo_cuda_cast_flat(dt, dc.p, dt, dh.p, N, &EX));
            ddown(h2, dc, sizeof h2);
            ck_assert(memcmp(h, h2, sizeof h) == 0);
            dfree(df);
            dfree(dh);
            dfree(dg);
            dfree(dc);
        }
    ck_assert(!eo_cuda_cast_flat(EO_BF16, NULL, EO_F16, NULL, 1, &EX)); /* no kernel: caller's path */
}
END_TEST

/* ---- unary forward and backward --------------------------------------------- */

START_TEST(unary_ops)
{
    static uint16_t hx[N], hy[N], hdy[N], hdx[N], got[N];
    static float x[N], dy[N], dx[N], ref[N], yr[N];
    for (int dt = EO_BF16; dt <= EO_F16; dt++)
        for (int op = 0; op < EO_UN_COUNT; op++)
            for (size_t off = 0; off <= 2; off += 2) {
                float lo = op == EO_UN_LOG ? 0.01f : -6, hi = 6;
                rand16(hx, x, N, dt, lo, hi);
                hx[3] = f2h(NAN, dt), x[3] = NAN;
                hx[4] = f2h(0.2f, dt), x[4] = h2f(hx[4], dt); /* tanh/erf's small-x branch */
                eo_k_unary((eo_unop)op, N, x, ref, 0.75f, NULL);
                dbuf dxb = dup_(hx, sizeof hx, off), dyb = dup_(NULL, sizeof hy, off);
                eo_cuda_k_unary16((eo_unop)op, dt, N, dxb.p, dyb.p, 0.75f, &EX);
                ddown(got, dyb, sizeof got);
                /* 1e-6: gelu of x near -6 is x (1 + tanh u) with tanh u within
                 * an ulp of -1: one f32 ulp of tanh moves it by 1.8e-7 */
                check16("unary16", got, ref, N, dt, 1e-6f);
                /* backward from the device's own y (as the core would) */
                memcpy(hy, got, sizeof hy);
                for (int i = 0; i < N; i++)
                    yr[i] = h2f(hy[i], dt);
                rand16(hdy, dy, N, dt, -2, 2);
                rand16(hdx, dx, N, dt, -1, 1);
                memcpy(ref, dx, sizeof ref);
                eo_k_unary_backward((eo_unop)op, N, x, yr, dy, ref, 0.75f, NULL);
                /* ReLU passes the gradient at x = NaN (not x <= 0, as PyTorch):
                 * stated here, not taken from the CPU kernel, which changes to
                 * it separately (torch_edges16_unary checks it exactly) */
                if (op == EO_UN_RELU)
                    ref[3] = dx[3] + dy[3];
                dbuf ddy = dup_(hdy, sizeof hdy, off), ddx = dup_(hdx, sizeof hdx, off);
                eo_cuda_k_unary_backward16((eo_unop)op, dt, N, dxb.p, dyb.p, ddy.p, ddx.p, 0.75f,
                                           &EX);
                ddown(got, ddx, sizeof got);
                check16("unary16 backward", got, ref, N, dt, 1e-6f);
                dfree(dxb);
                dfree(dyb);
                dfree(ddy);
                dfree(ddx);
            }
}
END_TEST

/* ---- binary: contiguous and broadcast -------------------------------------- */

START_TEST(binary_ops)
{
    static uint16_t ha[N], hb[N], got[N];
    static float a[N], b[N], ref[N];
    for (int dt = EO_BF16; dt <= EO_F16; dt++)
        for (int op = 0; op < EO_BIN_COUNT; op++) {
            rand16(ha, a, N, dt, -3, 3);
            rand16(hb, b, N, dt, 0.5f, 3);
            ha[10] = f2h(NAN, dt), a[10] = NAN;   /* max/min keep a NaN */
            hb[11] = f2h(NAN, dt), b[11] = NAN;
            for (size_t off = 0; off <= 2; off += 2) {
                const int64_t sh[4] = {1, 1, 1, N}, st[4] = {N, N, N, 1};
                eo_k_binary((eo_binop)op, sh, ref, st, a, st, b, st, NULL);
                dbuf da = dup_(ha, sizeof ha, off), db = dup_(hb, sizeof hb, off);
                dbuf dout = dup_(NULL, sizeof got, off);
                eo_cuda_k_binary16((eo_binop)op, dt, sh, dout.p, st, da.p, st, db.p, st, &EX);
                ddown(got, dout, sizeof got);
                check16("binary16", got, ref, N, dt, 0);
                dfree(da);
                dfree(db);
                dfree(dout);
            }
            /* [3, 5, 7, 9] = a [3, 5, 7, 9] op b [1, 5, 1, 9] (broadcast) */
            const int64_t sh[4] = {3, 5, 7, 9}, sa[4] = {315, 63, 9, 1}, sb[4] = {0, 9, 0, 1};
            eo_k_binary((eo_binop)op, sh, ref, sa, a, sa, b, sb, NULL);
            dbuf da = dup_(ha, sizeof ha, 0), db = dup_(hb, sizeof hb, 0);
            dbuf dout = dup_(NULL, sizeof got, 0);
            eo_cuda_k_binary16((eo_binop)op, dt, sh, dout.p, sa, da.p, sa, db.p, sb, &EX);
            ddown(got, dout, 945 * 2);
            check16("binary16 broadcast", got, ref, 945, dt, 0);
            dfree(da);
            dfree(db);
            dfree(dout);
        }
}
END_TEST

/* ---- softmax / log_softmax -------------------------------------------------- */

enum { R = 5 };

/* Rows of special values: NaN, all -inf, a +inf, large logits. */
static void special_rows(uint16_t *h, float *f, int C, int dt)
{
    rand16(h, f, (size_t)R * C, dt, -8, 8);
    h[1 * C + 7] = f2h(NAN, dt);
    for (int c = 0; c < C; c++)
        h[2 * C + c] = f2h(-INFINITY, dt);
    h[3 * C + 2] = f2h(INFINITY, dt);
    for (int c = 0; c < C; c++)
        h[4 * C + c] = f2h(frand(200, 240), dt); /* e^x overflows f16 and f32: max-subtracted */
    for (int i = 0; i < R * C; i++)
        f[i] = h2f(h[i], dt);
}

START_TEST(softmax_rows)
{
    /* 8200 columns: 1025 groups of 8, so the loops that take 4 (or 2)
     * groups at a time run too, and one group is left for a single thread */
    enum { CM = 8201 };
    static uint16_t hx[R * CM], hy[R * CM], hdy[R * CM], hdx[R * CM], got[R * CM];
    static float x[R * CM], y[R * CM], dy[R * CM], ref[R * CM];
    /* 1003 columns: rows start anywhere mod 16 (a head before the first
     * 16-byte group); the second 1003 starts every buffer 2 bytes off, so
     * no 16-byte access is possible at all */
    static const int cols[] = {1003, 1003, 1024, CM};
    for (int dt = EO_BF16; dt <= EO_F16; dt++)
        for (int ci = 0; ci < 4; ci++)
            for (int log = 0; log <= 1; log++) {
                int C = cols[ci];
                size_t off = ci == 1 ? 2 : 0;
                size_t n = (size_t)R * C;
                special_rows(hx, x, C, dt);
                eo_k_softmax(log, R, C, x, ref, NULL, NULL);
                dbuf dx = dup_(hx, n * 2, off), dyb = dup_(NULL, n * 2, off);
                eo_cuda_k_softmax16(log, dt, R, C, dx.p, dyb.p, NULL, &EX);
                ddown(got, dyb, n * 2);
                check16("softmax16", got, ref, n, dt, 0);
                /* backward on the finite rows 0 and 4 */
                memcpy(hy, got, n * 2);
                for (size_t i = 0; i < n; i++)
                    y[i] = h2f(hy[i], dt);
                rand16(hdy, dy, n, dt, -1, 1);
                rand16(hdx, ref, n, dt, -1, 1);
                eo_k_softmax_backward(log, 1, C, y, dy, ref, NULL);
                eo_k_softmax_backward(log, 1, C, y + 4 * C, dy + 4 * C, ref + 4 * C, NULL);
                dbuf ddy = dup_(hdy, n * 2, off), ddx = dup_(hdx, n * 2, off);
                eo_cuda_k_softmax_backward16(log, dt, R, C, dyb.p, ddy.p, ddx.p, NULL, &EX);
                ddown(got, ddx, n * 2);
                check16("softmax16 backward row 0", got, ref, (size_t)C, dt, 1e-5f);
                check16("softmax16 backward row 4", got + 4 * C, ref + 4 * C, (size_t)C, dt, 1e-5f);
                dfree(dx);
                dfree(dyb);
                dfree(ddy);
                dfree(ddx);
            }
}
END_TEST

/* ---- layernorm forward ------------------------------------------------------ */

START_TEST(layernorm_rows)
{
    enum { CM = 8200 };
    static uint16_t hx[4 * CM], hw[CM], hb[CM], got[4 * CM];
    /* 777: with w and b one value a thread, without them heads and groups */
    static float x[4 * CM], w[CM], b[CM], ref[4 * CM], mean[4], rstd[4], gm[4], gr[4];
    static const int cols[] = {777, 1000, CM};
    for (int dt = EO_BF16; dt <= EO_F16; dt++)
        for (int ci = 0; ci < 3; ci++)
            for (int affine = 0; affine <= 1; affine++) {
                int C = cols[ci];
                size_t n = (size_t)4 * C;
                rand16(hx, x, n, dt, -3, 3);
                for (int c = 0; c < C; c++) /* row 2: 300 + small noise (the mean cancels) */
                    hx[2 * C + c] = f2h(300 + frand(-1, 1), dt), x[2 * C + c] = h2f(hx[2 * C + c], dt);
                hx[3 * C + 5] = f2h(NAN, dt), x[3 * C + 5] = NAN;
                rand16(hw, w, (size_t)C, dt, 0.5f, 1.5f);
                rand16(hb, b, (size_t)C, dt, -0.5f, 0.5f);
                eo_k_layernorm(4, C, x, affine ? w : NULL, affine ? b : NULL, 1e-5f, ref, mean,
                               rstd, NULL);
                dbuf dx = dup_(hx, n * 2, 0), dw = dup_(hw, (size_t)C * 2, 0),
                     db = dup_(hb, (size_t)C * 2, 0), dy = dup_(NULL, n * 2, 0),
                     dm = dup_(NULL, 16, 0), dr = dup_(NULL, 16, 0);
                eo_cuda_k_layernorm16(dt, 4, C, dx.p, affine ? dw.p : NULL, affine ? db.p : NULL,
                                      1e-5f, dy.p, dm.p, dr.p, NULL, &EX);
                ddown(got, dy, n * 2);
                ddown(gm, dm, 16);
                ddown(gr, dr, 16);
                check16("layernorm16", got, ref, n, dt, 2e-3f);
                for (int r = 0; r < 3; r++)
                    ck_assert_msg(fabsf(gm[r] - mean[r]) <= 1e-5f * (1 + fabsf(mean[r])) &&
                                      fabsf(gr[r] - rstd[r]) <= 1e-4f * rstd[r],
                                  "row %d: mean %g rstd %g, reference %g %g", r, (double)gm[r],
                                  (double)gr[r], (double)mean[r], (double)rstd[r]);
                ck_assert(isnan(gm[3]) && isnan(gr[3]));
                dfree(dx);
                dfree(dw);
                dfree(db);
                dfree(dy);
                dfree(dm);
                dfree(dr);
            }
}
END_TEST

/* ---- cross-entropy forward and backward ------------------------------------------ */

START_TEST(cross_entropy_rows)
{
    enum { RC = 6, CM = 8201 };
    static uint16_t hx[RC * CM], hdx[RC * CM], got[RC * CM], hl[RC], hdl[RC];
    static float x[RC * CM], ref[RC * CM], st[2 * RC], gst[2 * RC], loss[RC], dl[RC];
    static const int cols[] = {1003, 1003, 1024, CM}; /* the second 1003: 2 bytes off */
    int32_t tgt[RC] = {3, -100, 1000, 0, 17, 999};
    for (int dt = EO_BF16; dt <= EO_F16; dt++)
        for (int ci = 0; ci < 4; ci++)
            for (int red = 0; red < 3; red++) {
                int C = cols[ci];
                size_t off = ci == 1 ? 2 : 0;
                /* targets in the 4-group loop's later groups too */
                int32_t big[RC] = {3, -100, 6001, 0, 2049, 8199}, small[RC] = {3, -100, 1000, 0, 17, 999};
                memcpy(tgt, C == CM ? big : small, sizeof tgt);
                size_t n = (size_t)RC * C;
                rand16(hx, x, n, dt, -10, 10);
                if (red == 1) /* one NaN row: a NaN sum */
                    hx[4 * C + 9] = f2h(NAN, dt), x[4 * C + 9] = NAN;
                eo_k_cross_entropy(RC, C, x, tgt, -100, (eo_ce_reduction)red, st, loss, NULL);
                dbuf dx = dup_(hx, n * 2, off), dt_ = dup_(tgt, sizeof tgt, 0),
                     ds = dup_(NULL, sizeof gst, 0), dlo = dup_(NULL, sizeof hl, 0);
                eo_cuda_k_cross_entropy16(dt, RC, C, dx.p, dt_.p, -100, (eo_ce_reduction)red,
                                          ds.p, dlo.p, NULL, &EX);
                size_t nl = red == EO_CE_NONE ? RC : 1;
                ddown(hl, dlo, nl * 2);
                ddown(gst, ds, sizeof gst);
                check16("cross_entropy16 loss", hl, loss, nl, dt, 1e-5f);
                for (int r = 0; r < RC; r++)
                    if (tgt[r] != -100 && !(red == 1 && r == 4))
                        ck_assert_msg(fabsf(gst[2 * r] - st[2 * r]) == 0 &&
                                          fabsf(gst[2 * r + 1] - st[2 * r + 1]) <= 1e-4f,
                                      "stats of row %d: %g %g, reference %g %g", r,
                                      (double)gst[2 * r], (double)gst[2 * r + 1],
                                      (double)st[2 * r], (double)st[2 * r + 1]);
                if (red == 1)
                    continue;
                /* backward */
                rand16(hdl, dl, RC, dt, 0.5f, 2);
                rand16(hdx, ref, n, dt, -0.01f, 0.01f);
                eo_k_cross_entropy_backward(RC, C, x, tgt, -100, (eo_ce_reduction)red, st, dl,
                                            ref, NULL);
                dbuf ddl = dup_(hdl, sizeof hdl, 0), ddx = dup_(hdx, n * 2, off);
                eo_cuda_k_cross_entropy_backward16(dt, RC, C, dx.p, dt_.p, -100,
                                                   (eo_ce_reduction)red, ds.p, ddl.p, ddx.p, NULL,
                                                   &EX);
                ddown(got, ddx, n * 2);
                check16("cross_entropy16 backward", got, ref, n, dt, 1e-6f);
                dfree(ddl);
                dfree(ddx);
                dfree(dx);
                dfree(dt_);
                dfree(ds);
                dfree(dlo);
            }
}
END_TEST

/* Many short rows: the loss and scale kernels (one block) take 4 rows a
 * turn per thread, then one. */
START_TEST(cross_entropy_many_rows)
{
    enum { RM = 1100, CC = 3 };
    static uint16_t hx[RM * CC], hl[1];
    static float x[RM * CC], st[2 * RM], loss[1];
    static int32_t tgt[RM];
    for (int r = 0; r < RM; r++)
        tgt[r] = r % 7 == 0 ? -100 : r % CC;
    for (int red = 0; red < 2; red++) {
        rand16(hx, x, RM * CC, EO_BF16, -4, 4);
        eo_k_cross_entropy(RM, CC, x, tgt, -100, (eo_ce_reduction)red, st, loss, NULL);
        dbuf dx = dup_(hx, sizeof hx, 0), dt_ = dup_(tgt, sizeof tgt, 0),
             ds = dup_(NULL, sizeof st, 0), dlo = dup_(NULL, 4, 0);
        eo_cuda_k_cross_entropy16(EO_BF16, RM, CC, dx.p, dt_.p, -100, (eo_ce_reduction)red, ds.p,
                                  dlo.p, NULL, &EX);
        ddown(hl, dlo, 2);
        check16("cross_entropy16 loss, 1100 rows", hl, loss, 1, EO_BF16, 0);
        dfree(dx);
        dfree(dt_);
        dfree(ds);
        dfree(dlo);
    }
}
END_TEST

/* ---- embedding gather ------------------------------------------------------ */

START_TEST(embedding_rows)
{
    static uint16_t table[11 * 24], out[7 * 24];
    int32_t idx[7] = {3, 0, 10, 3, 7, 1, 9};
    for (int dim = 13; dim <= 24; dim += 11) {
        for (int i = 0; i < 11 * dim; i++)
            table[i] = (uint16_t)(i * 2654435761u >> 16);
        dbuf dt = dup_(table, (size_t)11 * dim * 2, 0), di = dup_(idx, sizeof idx, 0),
             dout = dup_(NULL, (size_t)7 * dim * 2, 0);
        eo_cuda_k_embedding16(EO_BF16, 7, dim, dt.p, di.p, dout.p, &EX);
        ddown(out, dout, (size_t)7 * dim * 2);
        for (int i = 0; i < 7; i++)
            ck_assert(memcmp(out + i * dim, table + idx[i] * dim, (size_t)dim * 2) == 0);
        dfree(dt);
        dfree(di);
        dfree(dout);
    }
}
END_TEST

/* ---- AdamW on master weights ---------------------------------------------------- */

START_TEST(adamw_master)
{
    enum { NA = 1030 };
    static float w[NA], g[NA], m[NA], v[NA], rw[NA], rg[NA], rm[NA], rv[NA], gw[NA], gm[NA],
        gv[NA];
    static uint16_t hg[NA], h16[NA];
    for (int dt = EO_BF16; dt <= EO_F16; dt++)
        for (int gdt = 0; gdt <= 1; gdt++) { /* f32 gradient, then a 16-bit one */
            for (int i = 0; i < NA; i++) {
                w[i] = frand(-1, 1);
                m[i] = frand(-0.1f, 0.1f);
                v[i] = frand(0, 0.01f);
                g[i] = frand(-512, 512);
                hg[i] = f2h(g[i], dt);
                rg[i] = (gdt ? h2f(hg[i], dt) : g[i]) * (1.0f / 256); /* unscaled first */
            }
            memcpy(rw, w, sizeof w);
            memcpy(rm, m, sizeof m);
            memcpy(rv, v, sizeof v);
            eo_k_adamw(NA, rw, rg, rm, rv, 1e-3f, 0.9f, 0.999f, 1e-8f, 0.01f, 7, NULL);
            dbuf dw = dup_(w, sizeof w, 0), dm = dup_(m, sizeof m, 0), dv = dup_(v, sizeof v, 0);
            dbuf dg = gdt ? dup_(hg, sizeof hg, 0) : dup_(g, sizeof g, 0);
            dbuf dh = dup_(NULL, sizeof h16, 0);
            eo_cuda_k_adamw16(NA, dw.p, gdt ? dt : EO_F32, dg.p, 1.0f / 256, dm.p, dv.p, 1e-3f,
                              0.9f, 0.999f, 1e-8f, 0.01f, 7, dt, dh.p, &EX);
            ddown(gw, dw, sizeof gw);
            ddown(gm, dm, sizeof gm);
            ddown(gv, dv, sizeof gv);
            ddown(h16, dh, sizeof h16);
            for (int i = 0; i < NA; i++) {
                ck_assert_msg(f_bits(gw[i]) == f_bits(rw[i]) && f_bits(gm[i]) == f_bits(rm[i]) &&
                                  f_bits(gv[i]) == f_bits(rv[i]),
                              "adamw16 [%d]: w %.9g m %.9g v %.9g, reference %.9g %.9g %.9g", i,
                              (double)gw[i], (double)gm[i], (double)gv[i], (double)rw[i],
                              (double)rm[i], (double)rv[i]);
                ck_assert_uint_eq(h16[i], f2h(rw[i], dt));
            }
            dfree(dw);
            dfree(dm);
            dfree(dv);
            dfree(dg);
            dfree(dh);
        }
}
END_TEST

/* ---- the backward kernels, fill and SGD (the slots filled last) -------------------
 * Where the device does the CPU's f32 arithmetic in the same order (fill,
 * SGD, a full binary gradient, the embedding's sums in index order) the
 * 16-bit results must be the reference's bits; where a sum's order differs
 * (broadcast gradients, layernorm's row and column sums) one 16-bit ulp
 * and a small absolute slack. */

/* got is exactly ref rounded (NaN meets NaN). */
static void exact16(const char *what, const uint16_t *got, const float *ref, size_t n, int dt)
{
    for (size_t i = 0; i < n; i++) {
        int ok = isnan(ref[i]) ? isnan(h2f(got[i], dt)) : got[i] == f2h(ref[i], dt);
        ck_assert_msg(ok, "%s (%s) [%zu]: device %.9g (0x%04x), reference %.9g (0x%04x)", what,
                      dt == EO_BF16 ? "bf16" : "f16", i, (double)h2f(got[i], dt), got[i],
                      (double)ref[i], f2h(ref[i], dt));
    }
}

START_TEST(fill16_values)
{
    static uint16_t got[N];
    static const float vals[] = {1.0f / 3, -65519.0f, 1e-30f};
    for (int dt = EO_BF16; dt <= EO_F16; dt++)
        for (size_t off = 0; off <= 2; off += 2)
            for (int v = 0; v < 3; v++) {
                dbuf d = dup_(NULL, sizeof got, off);
                eo_cuda_k_fill16(N, dt, d.p, vals[v], &EX);
                ddown(got, d, sizeof got);
                for (int i = 0; i < N; i++)
                    ck_assert_uint_eq(got[i], f2h(vals[v], dt));
                dfree(d);
            }
}
END_TEST

START_TEST(sgd16_master)
{
    enum { NS = 1030 };
    static float w[NS], g[NS], v[NS], rw[NS], rg[NS], rv[NS], gw[NS], gv[NS];
    static uint16_t hg[NS], h16[NS];
    for (int dt = EO_BF16; dt <= EO_F16; dt++)
        for (int mode = 0; mode < 4; mode++) { /* f32 / 16-bit g; momentum, nesterov, none */
            const int gdt = mode & 1, nest = mode == 1, mom = mode != 3;
            const size_t off = mode == 2 ? 4 : 0; /* misaligned w: the one-value path */
            for (int i = 0; i < NS; i++) {
                w[i] = frand(-1, 1);
                v[i] = frand(-0.1f, 0.1f);
                g[i] = frand(-512, 512);
                hg[i] = f2h(g[i], dt);
                rg[i] = (gdt ? h2f(hg[i], dt) : g[i]) * (1.0f / 256);
            }
            memcpy(rw, w, sizeof w);
            memcpy(rv, v, sizeof v);
            eo_k_sgd(NS, rw, rg, mom ? rv : NULL, 0.05f, mom ? 0.9f : 0, 0.1f, 0.01f, nest, NULL);
            dbuf dw = dup_(w, sizeof w, off), dv = dup_(v, sizeof v, 0);
            dbuf dg = gdt ? dup_(hg, sizeof hg, 0) : dup_(g, sizeof g, 0);
            dbuf dh = dup_(NULL, sizeof h16, 0);
            eo_cuda_k_sgd16(NS, dw.p, gdt ? dt : EO_F32, dg.p, 1.0f / 256, mom ? dv.p : NULL,
                            0.05f, mom ? 0.9f : 0, 0.1f, 0.01f, nest, dt, dh.p, &EX);
            ddown(gw, dw, sizeof gw);
            ddown(gv, dv, sizeof gv);
            ddown(h16, dh, sizeof h16);
            for (int i = 0; i < NS; i++) {
                ck_assert_msg(f_bits(gw[i]) == f_bits(rw[i]) && f_bits(gv[i]) == f_bits(rv[i]),
                              "sgd16 mode %d [%d]: w %.9g v %.9g, reference %.9g %.9g", mode, i,
                              (double)gw[i], (double)gv[i], (double)rw[i], (double)rv[i]);
                ck_assert_uint_eq(h16[i], f2h(rw[i], dt));
            }
            dfree(dw);
            dfree(dv);
            dfree(dg);
            dfree(dh);
        }
}
END_TEST

/* The CPU's f32 backward on the widened values, da and db starting from
 * the widened 16-bit gradients, against the device's 16-bit result. */
static void bwd16_case(int op, int dt, const int64_t sh[4], const int64_t sa[4],
                       const int64_t sb[4], size_t n, size_t na, size_t nb, size_t off, int exact)
{
    static uint16_t hd[N], ha[N], hb[N], hga[N], hgb[N], got[N];
    static float d[N], a[N], b[N], ga[N], gb[N];
    rand16(hd, d, n, dt, -2, 2);
    rand16(ha, a, na, dt, -3, 3);
    rand16(hb, b, nb, dt, 0.5f, 3);
    if (na > 12 && op >= EO_BIN_MAX) { /* a tie and a NaN */
        ha[3] = hb[3 % nb], a[3] = b[3 % nb];
        ha[12] = f2h(NAN, dt), a[12] = NAN;
    }
    rand16(hga, ga, na, dt, -1, 1);
    rand16(hgb, gb, nb, dt, -1, 1);
    const int64_t sd[4] = {sh[1] * sh[2] * sh[3], sh[2] * sh[3], sh[3], 1};
    eo_k_binary_backward((eo_binop)op, sh, d, sd, a, sa, b, sb, ga, sa, gb, sb, NULL);
    dbuf bd = dup_(hd, n * 2, off), ba = dup_(ha, na * 2, off), bb = dup_(hb, nb * 2, off);
    dbuf bga = dup_(hga, na * 2, off), bgb = dup_(hgb, nb * 2, off);
    eo_cuda_k_binary_backward16((eo_binop)op, dt, sh, bd.p, sd, ba.p, sa, bb.p, sb, bga.p, sa,
                                bgb.p, sb, &EX);
    ddown(got, bga, na * 2);
    if (exact)
        exact16("binary_backward16 da", got, ga, na, dt);
    else
        check16("binary_backward16 da", got, ga, na, dt, 1e-3f);
    ddown(got, bgb, nb * 2);
    if (exact)
        exact16("binary_backward16 db", got, gb, nb, dt);
    else
        check16("binary_backward16 db", got, gb, nb, dt, 1e-3f);
    dfree(bd);
    dfree(ba);
    dfree(bb);
    dfree(bga);
    dfree(bgb);
}

START_TEST(binary_backward16_full)
{
    const int64_t sh[4] = {1, 1, 1, N}, st[4] = {N, N, N, 1};
    for (int dt = EO_BF16; dt <= EO_F16; dt++)
        for (int op = 0; op < EO_BIN_COUNT; op++)
            for (size_t off = 0; off <= 2; off += 2)
                bwd16_case(op, dt, sh, st, st, N, N, N, off, 1);
    /* x * x: da and db are one buffer, which gets both terms, rounded once */
    static uint16_t hx[N], hg[N], got[N];
    static float x[N], g[N], d[N];
    static uint16_t hd[N];
    for (int dt = EO_BF16; dt <= EO_F16; dt++) {
        rand16(hx, x, N, dt, -2, 2);
        rand16(hd, d, N, dt, -2, 2);
        rand16(hg, g, N, dt, -1, 1);
        eo_k_binary_backward(EO_BIN_MUL, sh, d, st, x, st, x, st, g, st, g, st, NULL);
        dbuf bx = dup_(hx, sizeof hx, 0), bd = dup_(hd, sizeof hd, 0), bg = dup_(hg, sizeof hg, 0);
        eo_cuda_k_binary_backward16(EO_BIN_MUL, dt, sh, bd.p, st, bx.p, st, bx.p, st, bg.p, st,
                                    bg.p, st, &EX);
        ddown(got, bg, sizeof got);
        exact16("binary_backward16 x*x", got, g, N, dt);
        dfree(bx);
        dfree(bd);
        dfree(bg);
    }
}
END_TEST

START_TEST(binary_backward16_broadcast)
{
    /* b [1, 5, 1, 9] summed over axes 0 and 2 (21 terms: one chunk); a bias
     * [24] over 40 rows (chunks of 64 in... one); a bias over 200 rows (four
     * chunks, then the chunk sum); a per-row [200, 1] column; a scalar */
    struct {
        int64_t sh[4], sa[4], sb[4];
        size_t n, nb;
    } cases[] = {
        {{3, 5, 7, 9}, {315, 63, 9, 1}, {0, 9, 0, 1}, 945, 45},
        {{1, 1, 40, 24}, {960, 960, 24, 1}, {0, 0, 0, 1}, 960, 24},
        {{1, 1, 200, 5}, {1000, 1000, 5, 1}, {0, 0, 0, 1}, 1000, 5},
        {{1, 1, 200, 5}, {1000, 1000, 5, 1}, {0, 0, 1, 0}, 1000, 200},
        {{1, 1, 1, N}, {N, N, N, 1}, {0, 0, 0, 0}, N, 1},
        /* the one-pass row kernel (add, sub, mul; cols % 8 = 0): 7 rows (not
         * a multiple of the 8 warps' rows), two strips of which the second
         * has 8 columns, 16 chunks of 8 rows (the tail's 8-chunk loop), 125
         * rows (a short last chunk) */
        {{1, 1, 7, 136}, {952, 952, 136, 1}, {0, 0, 0, 1}, 952, 136},
        {{1, 1, 3, 264}, {792, 792, 264, 1}, {0, 0, 0, 1}, 792, 264},
        {{1, 1, 128, 8}, {1024, 1024, 8, 1}, {0, 0, 0, 1}, 1024, 8},
        {{1, 1, 125, 8}, {1000, 1000, 8, 1}, {0, 0, 0, 1}, 1000, 8},
    };
    static const int ops[] = {EO_BIN_ADD, EO_BIN_SUB, EO_BIN_MUL, EO_BIN_DIV, EO_BIN_MAX};
    const int ncase = (int)(sizeof cases / sizeof cases[0]);
    for (int dt = EO_BF16; dt <= EO_F16; dt++)
        for (int c = 0; c < ncase; c++)
            for (int o = 0; o < 5; o++) {
                if (c == 4 && o != EO_BIN_MUL)
                    continue;
                bwd16_case(ops[o], dt, cases[c].sh, cases[c].sa, cases[c].sb, cases[c].n,
                           cases[c].n, cases[c].nb, 0, 0);
            }
    /* the row on the left (a bias + x, a scale * x: a's gradient the sum)
     * and the same bits on a second run */
    const int64_t sh[4] = {1, 1, 7, 136}, sr[4] = {0, 0, 0, 1}, sf[4] = {952, 952, 136, 1};
    for (int dt = EO_BF16; dt <= EO_F16; dt++)
        for (int o = 0; o < 3; o++)
            bwd16_case(ops[o], dt, sh, sr, sf, 952, 136, 952, 0, 0);
    static uint16_t hd[952], hx[952], hw[136], first[136], again[136], zero[136];
    float scratch[952];
    rand16(hd, scratch, 952, EO_BF16, -2, 2);
    rand16(hx, scratch, 952, EO_BF16, -2, 2);
    rand16(hw, scratch, 136, EO_BF16, 0.5f, 2);
    for (int run = 0; run < 2; run++) {
        dbuf bd = dup_(hd, sizeof hd, 0), bx = dup_(hx, sizeof hx, 0), bw = dup_(hw, sizeof hw, 0);
        dbuf bg = dup_(zero, sizeof zero, 0);
        eo_cuda_k_binary_backward16(EO_BIN_MUL, EO_BF16, sh, bd.p, sf, bx.p, sf, bw.p, sr, NULL, sf,
                                    bg.p, sr, &EX);
        ddown(run ? again : first, bg, sizeof first);
        dfree(bd);
        dfree(bx);
        dfree(bw);
        dfree(bg);
    }
    ck_assert_int_eq(memcmp(first, again, sizeof first), 0);
}
END_TEST

/* The one-pass backward (rows of at most 2048 columns, dw and db wanted):
 * 1 x 7 and 37 x 129 (one value a thread), 3 x 1000 and 5 x 2048 (16-byte
 * groups; 2048 the widest row it takes), 1000 x 24 (334 blocks of 3 rows,
 * the last of 1); then the same bits on a second run. */
START_TEST(layernorm_backward16_fused)
{
    enum { NMAX = 24000 };
    /* got, again: dx, then dw, then db */
    static uint16_t hx[NMAX], hw[2048], hdy[NMAX], hdx[NMAX], hdw[2048], hdb[2048],
        got[NMAX + 4096], again[NMAX + 4096];
    static float x[NMAX], w[2048], dy[NMAX], dx[NMAX], dw[2048], db[2048], y[NMAX], mean[1000],
        rstd[1000];
    static const int shapes[][2] = {{1, 7}, {37, 129}, {3, 1000}, {5, 2048}, {1000, 24}};
    for (int dt = EO_BF16; dt <= EO_F16; dt++)
        for (int s = 0; s < 5; s++) {
            const int rows = shapes[s][0], C = shapes[s][1];
            const size_t n = (size_t)rows * C;
            rand16(hx, x, n, dt, -3, 3);
            rand16(hdy, dy, n, dt, -1, 1);
            rand16(hdx, dx, n, dt, -1, 1);
            rand16(hw, w, (size_t)C, dt, 0.5f, 1.5f);
            rand16(hdw, dw, (size_t)C, dt, -1, 1);
            rand16(hdb, db, (size_t)C, dt, -1, 1);
            eo_k_layernorm(rows, C, x, w, NULL, 1e-5f, y, mean, rstd, NULL);
            void *ws = malloc(eo_k_layernorm_backward_ws(rows, C, 1) + 64);
            eo_k_layernorm_backward(rows, C, x, w, mean, rstd, dy, dx, dw, db, ws, NULL);
            free(ws);
            for (int run = 0; run < 2; run++) {
                dbuf bx = dup_(hx, n * 2, 0), bw = dup_(hw, (size_t)C * 2, 0),
                     bdy = dup_(hdy, n * 2, 0), bdx = dup_(hdx, n * 2, 0),
                     bdw = dup_(hdw, (size_t)C * 2, 0), bdb = dup_(hdb, (size_t)C * 2, 0),
                     bm = dup_(mean, (size_t)rows * 4, 0), br = dup_(rstd, (size_t)rows * 4, 0);
                eo_cuda_k_layernorm_backward16(dt, rows, C, bx.p, bw.p, bm.p, br.p, bdy.p, bdx.p,
                                               bdw.p, bdb.p, NULL, &EX);
                uint16_t *g = run ? again : got;
                ddown(g, bdx, n * 2);
                ddown(g + n, bdw, (size_t)C * 2);
                ddown(g + n + C, bdb, (size_t)C * 2);
                if (!run) {
                    check16("layernorm_backward16 fused dx", g, dx, n, dt, 2e-3f);
                    check16("layernorm_backward16 fused dw", g + n, dw, (size_t)C, dt, 2e-3f);
                    check16("layernorm_backward16 fused db", g + n + C, db, (size_t)C, dt, 2e-3f);
                } else
                    ck_assert_int_eq(memcmp(got, again, (n + 2 * (size_t)C) * 2), 0);
                dfree(bx);
                dfree(bw);
                dfree(bdy);
                dfree(bdx);
                dfree(bdw);
                dfree(bdb);
                dfree(bm);
                dfree(br);
            }
        }
}
END_TEST

START_TEST(layernorm_backward16_rows)
{
    enum { CM = 1000, RM = 3 };
    /* 777 columns: one value a thread; 1000: heads and groups; 300 rows of 40:
     * three row chunks of dw, db, and the four-row loop's remainder */
    static uint16_t hx[12000], hw[CM], hdy[12000], hdx[12000], hdw[CM], hdb[CM], got[12000];
    static float x[12000], w[CM], dy[12000], dx[12000], dw[CM], db[CM], y[12000], mean[300],
        rstd[300];
    static const int shapes[][2] = {{RM, 777}, {RM, CM}, {300, 40}};
    for (int dt = EO_BF16; dt <= EO_F16; dt++)
        for (int s = 0; s < 3; s++)
            for (int affine = 0; affine <= 1; affine++) {
                const int rows = shapes[s][0], C = shapes[s][1];
                const size_t n = (size_t)rows * C;
                rand16(hx, x, n, dt, -3, 3);
                rand16(hdy, dy, n, dt, -1, 1);
                rand16(hdx, dx, n, dt, -1, 1);
                rand16(hw, w, (size_t)C, dt, 0.5f, 1.5f);
                rand16(hdw, dw, (size_t)C, dt, -1, 1);
                rand16(hdb, db, (size_t)C, dt, -1, 1);
                eo_k_layernorm(rows, C, x, affine ? w : NULL, NULL, 1e-5f, y, mean, rstd, NULL);
                void *ws = malloc(eo_k_layernorm_backward_ws(rows, C, 1) + 64);
                eo_k_layernorm_backward(rows, C, x, affine ? w : NULL, mean, rstd, dy, dx,
                                        affine ? dw : NULL, affine ? db : NULL, ws, NULL);
                free(ws);
                dbuf bx = dup_(hx, n * 2, 0), bw = dup_(hw, (size_t)C * 2, 0),
                     bdy = dup_(hdy, n * 2, 0), bdx = dup_(hdx, n * 2, 0),
                     bdw = dup_(hdw, (size_t)C * 2, 0), bdb = dup_(hdb, (size_t)C * 2, 0),
                     bm = dup_(mean, (size_t)rows * 4, 0), br = dup_(rstd, (size_t)rows * 4, 0);
                eo_cuda_k_layernorm_backward16(dt, rows, C, bx.p, affine ? bw.p : NULL, bm.p,
                                               br.p, bdy.p, bdx.p, affine ? bdw.p : NULL,
                                               affine ? bdb.p : NULL, NULL, &EX);
                ddown(got, bdx, n * 2);
                check16("layernorm_backward16 dx", got, dx, n, dt, 2e-3f);
                if (affine) {
                    ddown(got, bdw, (size_t)C * 2);
                    check16("layernorm_backward16 dw", got, dw, (size_t)C, dt, 2e-3f);
                    ddown(got, bdb, (size_t)C * 2);
                    check16("layernorm_backward16 db", got, db, (size_t)C, dt, 2e-3f);
                }
                dfree(bx);
                dfree(bw);
                dfree(bdy);
                dfree(bdx);
                dfree(bdw);
                dfree(bdb);
                dfree(bm);
                dfree(br);
            }
}
END_TEST

START_TEST(embedding_backward16_order)
{
    /* 29 ids over 11 rows, repeats near each other (inside one batch of 8)
     * and far apart; 13 and 24 columns */
    enum { NI = 29, V = 11, DM = 24 };
    static const int32_t idx[NI] = {3, 3, 0, 10, 3, 7, 1, 3, 9, 9, 9, 2, 5, 3, 0,
                                    4, 6, 8, 10, 1, 3, 3, 7, 7, 0, 2, 9, 5, 3};
    static uint16_t ht[V * DM], hd[NI * DM], got[V * DM], got2[V * DM];
    static float t[V * DM], d[NI * DM];
    for (int dt = EO_BF16; dt <= EO_F16; dt++)
        for (int dim = 13; dim <= DM; dim += 11) {
            rand16(ht, t, (size_t)V * dim, dt, -1, 1);
            rand16(hd, d, (size_t)NI * dim, dt, -1, 1);
            dbuf bt = dup_(ht, (size_t)V * dim * 2, 0), bi = dup_(idx, sizeof idx, 0),
                 bd = dup_(hd, (size_t)NI * dim * 2, 0);
            eo_cuda_k_embedding_backward16(dt, NI, dim, bi.p, bd.p, bt.p, &EX);
            /* and the fallback past 2^20 indices, launched directly, on a copy */
            dbuf bt2 = dup_(ht, (size_t)V * dim * 2, 0);
            {
                uint32_t nn = NI, d32 = (uint32_t)dim;
                uint64_t pi = eo_cuda_dp(bi.p), pd = eo_cuda_dp(bd.p), pt = eo_cuda_dp(bt2.p);
                LAUNCH(&CU, dt == EO_BF16 ? EO_CUK_EMBEDDING16_BWD_COLS_BF16
                                          : EO_CUK_EMBEDDING16_BWD_COLS_F16,
                       1, 1, 1, 256, 1, &nn, &d32, &pi, &pd, &pt);
            }
            ddown(got2, bt2, (size_t)V * dim * 2);
            dfree(bt2);
            ddown(got, bt, (size_t)V * dim * 2);
            /* the reference: index order, each sum rounded when stored */
            for (int i = 0; i < NI; i++)
                for (int c = 0; c < dim; c++) {
                    float *e = &t[idx[i] * dim + c];
                    *e = h2f(f2h(*e + d[i * dim + c], dt), dt);
                }
            exact16("embedding_backward16", got, t, (size_t)V * dim, dt);
            exact16("embedding_backward16 (columns)", got2, t, (size_t)V * dim, dt);
            dfree(bt);
            dfree(bi);
            dfree(bd);
        }
}
END_TEST

START_TEST(refused_dtypes)
{
    char msg[256];
    eo_cuda_k_unary16(EO_UN_RELU, EO_F32, 4, NULL, NULL, 0, &EX);
    ck_assert_int_eq(eo_cuda_take_error(&CU, msg, sizeof msg), EO_ERR_UNSUPPORTED);
    /* an f16 gradient with a bf16 copy: no kernel (nothing is launched) */
    eo_cuda_k_adamw16(4, NULL, EO_F16, NULL, 1, NULL, NULL, 0, 0, 0, 0, 0, 1, EO_BF16,
                      (void *)(uintptr_t)256, &EX);
    ck_assert_int_eq(eo_cuda_take_error(&CU, msg, sizeof msg), EO_ERR_UNSUPPORTED);
}
END_TEST

/* ---- the core's matmul on 16-bit tensors: CUDA (matmul_tc) vs CPU ------------ */

/* x (any dtype, CPU or CUDA) as f32 host values. */
static float *host_f32(eo_ctx *ctx, eo_tensor *x)
{
    eo_tensor *f;
    ck_assert_msg(eo_cast(ctx, x, EO_F32, &f) == EO_OK, "%s", eo_last_error(ctx));
    ck_assert_int_eq(eo_contiguous(ctx, f, &f), EO_OK);
    int64_t n = eo_numel(f);
    float *h = malloc((size_t)(n ? n : 1) * 4);
    ck_assert_msg(eo_read(ctx, f, h, (size_t)n * 4) == EO_OK, "%s", eo_last_error(ctx));
    return h;
}

/* 16-bit results of two f32 summation orders: within one ulp of the
 * dtype, relative to the size of the terms (|r| + 0.05). */
static void expect_close16(eo_ctx *ctx, const char *what, eo_tensor *cpu, eo_tensor *dev, int dt)
{
    ck_assert_int_eq(cpu->dtype, dt);
    ck_assert_int_eq(dev->dtype, dt);
    ck_assert_int_eq(dev->device, EO_CUDA);
    float *r = host_f32(ctx, cpu), *g = host_f32(ctx, dev);
    double ulp = dt == EO_BF16 ? 1.0 / 128 : 1.0 / 1024;
    for (int64_t i = 0; i < eo_numel(cpu); i++)
        ck_assert_msg(fabs((double)g[i] - r[i]) <= ulp * (fabs(r[i]) + 0.05), "%s [%lld]: cuda "
                      "%.7g vs cpu %.7g", what, (long long)i, (double)g[i], (double)r[i]);
    free(r);
    free(g);
}

static eo_tensor *rand16_tensor(eo_ctx *ctx, int rank, const int64_t *shape, int dt, unsigned seed)
{
    eo_tensor *x = eo_test_rand(ctx, rank, shape, -2, 2, seed, 0), *h;
    ck_assert_int_eq(eo_cast(ctx, x, (eo_dtype)dt, &h), EO_OK);
    h->requires_grad = 1;
    return h;
}

static eo_tensor *on_cuda(eo_ctx *ctx, eo_tensor *x)
{
    eo_tensor *y;
    ck_assert_msg(eo_to_device(ctx, x, EO_CUDA, EO_STEP, &y) == EO_OK, "%s", eo_last_error(ctx));
    y->requires_grad = x->requires_grad;
    return y;
}

/* The backward of both sides from L = sum(y * w): every output element
 * weighted differently (w in [lo, hi), its copy on the device). */
static void backward_weighted(eo_ctx *ctx, const char *what, eo_tensor *y, eo_tensor *dy,
                              float lo, float hi, unsigned seed)
{
    eo_tensor *w = eo_test_rand(ctx, y->rank, y->shape, lo, hi, seed, 0), *dw = on_cuda(ctx, w);
    eo_tensor *y32, *dy32, *p, *dp, *L, *dL;
    ck_assert_int_eq(eo_cast(ctx, y, EO_F32, &y32), EO_OK);
    ck_assert_int_eq(eo_cast(ctx, dy, EO_F32, &dy32), EO_OK);
    ck_assert_int_eq(eo_mul(ctx, y32, w, &p), EO_OK);
    ck_assert_int_eq(eo_sum_all(ctx, p, &L), EO_OK);
    ck_assert_int_eq(eo_mul(ctx, dy32, dw, &dp), EO_OK);
    ck_assert_int_eq(eo_sum_all(ctx, dp, &dL), EO_OK);
    ck_assert_msg(eo_backward(ctx, L) == EO_OK, "%s: cpu backward: %s", what, eo_last_error(ctx));
    ck_assert_msg(eo_backward(ctx, dL) == EO_OK, "%s: cuda backward: %s", what,
                  eo_last_error(ctx));
}

/* y = op(a) op(b) with a [B, M, K] (or its transpose's storage), b [B, K, N]
 * or a shared 2-D weight; L = sum(f32(y) * w); y, da, db compared. */
static void core_matmul(int dt, int ta, int tb, int64_t B, int64_t M, int64_t N, int64_t K,
                        int shared_b)
{
    eo_ctx *ctx = eo_test_cuda_ctx(8, 32);
    int64_t sa[3] = {B, ta ? K : M, ta ? M : K}, sb[3] = {B, tb ? N : K, tb ? K : N};
    eo_tensor *a = rand16_tensor(ctx, 3, sa, dt, 21), *b;
    b = shared_b ? rand16_tensor(ctx, 2, sb + 1, dt, 22) : rand16_tensor(ctx, 3, sb, dt, 22);
    eo_tensor *da = on_cuda(ctx, a), *db = on_cuda(ctx, b), *y, *dy;
    ck_assert_msg(eo_matmul(ctx, a, b, ta, tb, &y) == EO_OK, "cpu: %s", eo_last_error(ctx));
    ck_assert_msg(eo_matmul(ctx, da, db, ta, tb, &dy) == EO_OK, "cuda: %s", eo_last_error(ctx));
    char what[96];
    snprintf(what, sizeof what, "matmul %s%s %s B%lld %lldx%lldx%lld%s", ta ? "t" : "n",
             tb ? "t" : "n", dt == EO_BF16 ? "bf16" : "f16", (long long)B, (long long)M,
             (long long)N, (long long)K, shared_b ? " shared b" : "");
    expect_close16(ctx, what, y, dy, dt);
    if (!getenv("EO_TEST_CUDA")) { /* on the interpreter: it was the tensor-core kernel */
        eo_px_counters pc;
        ck_assert_msg(eo_ptxsim_counters_of(dt == EO_BF16 ? "eo_matmul_tc_bf16" : "eo_matmul_tc_f16",
                                            &pc) && pc.launches > 0 && pc.tensor_flops > 0,
                      "%s: no tensor-core launch", what);
    }
    backward_weighted(ctx, what, y, dy, 0.5f, 1.5f, 23);
    ck_assert(a->grad && da->grad && b->grad && db->grad);
    char g[128];
    snprintf(g, sizeof g, "%s da", what);
    expect_close16(ctx, g, a->grad, da->grad, dt);
    snprintf(g, sizeof g, "%s db", what);
    expect_close16(ctx, g, b->grad, db->grad, dt);
    eo_test_cuda_ctx_free(ctx);
}

START_TEST(core_matmul_on_tensor_cores)
{
    int dt = _i & 1 ? EO_F16 : EO_BF16, ta = (_i >> 1) & 1, tb = (_i >> 2) & 1;
    /* odd sizes, one just past a 128 x 128 tile (edges in M and N), K not
     * a multiple of 32; a batch of 2, and a weight shared by the batch */
    core_matmul(dt, ta, tb, 2, 37, 29, 45, 0);
    core_matmul(dt, ta, tb, 2, 130, 131, 67, 1);
}
END_TEST

/* The fused attention on 16-bit q, k, v: on CUDA the forward and the
 * backward take the tensor-core kernels (ptx/attention_tc.ptx, checked by
 * their counters on the interpreter), on the CPU the f32 kernels over the
 * widened values. out and the gradients (dtype dt) differ by the 16-bit
 * rounding of p, dS and dout in the kernels: within 1.5 % of the largest
 * value for bf16, 0.3 % for f16, plus two of dt's ulps of the element (the
 * final rounding of each). */
static void core_attention16(int dt, int64_t B, int64_t H, int64_t T, int64_t D, int causal)
{
    eo_ctx *ctx = eo_test_cuda_ctx(8, 32);
    int64_t sh[4] = {B, H, T, D};
    eo_tensor *q = rand16_tensor(ctx, 4, sh, dt, 31), *k = rand16_tensor(ctx, 4, sh, dt, 32);
    eo_tensor *v = rand16_tensor(ctx, 4, sh, dt, 33);
    eo_tensor *dq = on_cuda(ctx, q), *dk = on_cuda(ctx, k), *dv = on_cuda(ctx, v), *o, *dO;
    float scale = 1.0f / (float)(2 * D); /* inputs in [-2, 2]: keep the softmax soft */
    ck_assert_msg(eo_attention_fused(ctx, q, k, v, NULL, causal, scale, &o) == EO_OK, "cpu: %s",
                  eo_last_error(ctx));
    ck_assert_msg(eo_attention_fused(ctx, dq, dk, dv, NULL, causal, scale, &dO) == EO_OK,
                  "cuda: %s", eo_last_error(ctx));
    backward_weighted(ctx, "attention16", o, dO, -1.0f, 1.0f, 34);
    if (!getenv("EO_TEST_CUDA")) {
        const char *kn[2] = {"fwd", "bwd_dkv"};
        for (int i = 0; i < 2; i++) {
            char name[64];
            snprintf(name, sizeof name, "eo_attn16_%s%d_%s", kn[i], D <= 32 ? 32 : 64,
                     dt == EO_BF16 ? "bf16" : "f16");
            eo_px_counters pc;
            ck_assert_msg(eo_ptxsim_counters_of(name, &pc) && pc.launches > 0 &&
                              pc.tensor_flops > 0,
                          "no %s launch", name);
        }
    }
    /* out (dt), then the gradients */
    eo_tensor *cpu[4] = {o, q, k, v}, *dev[4] = {dO, dq, dk, dv};
    double ulp = dt == EO_BF16 ? 1.0 / 128 : 1.0 / 1024, frac = dt == EO_BF16 ? 0.015 : 0.003;
    for (int t = 0; t < 4; t++) {
        eo_tensor *ct = t ? cpu[t]->grad : cpu[0], *dt_ = t ? dev[t]->grad : dev[0];
        ck_assert(ct && dt_);
        ck_assert_int_eq(dt_->dtype, dt);
        float *r = host_f32(ctx, ct), *g = host_f32(ctx, dt_);
        int64_t n = eo_numel(ct);
        double big = 0;
        for (int64_t i = 0; i < n; i++)
            big = fmax(big, fabs(r[i]));
        for (int64_t i = 0; i < n; i++)
            ck_assert_msg(fabs((double)g[i] - r[i]) <= frac * big + 2 * ulp * fabs(r[i]),
                          "%s T %lld D %lld causal %d: %c (or its gradient)[%lld] cuda %.7g vs cpu %.7g (largest "
                          "%.4g)", dt == EO_BF16 ? "bf16" : "f16", (long long)T, (long long)D,
                          causal, "oqkv"[t], (long long)i, (double)g[i], (double)r[i], big);
        free(r);
        free(g);
    }
    eo_test_cuda_ctx_free(ctx);
}

START_TEST(core_attention16_backward)
{
    core_attention16(EO_BF16, 2, 2, 70, 64, 1); /* two 64-row tiles, the second of 6 */
    core_attention16(EO_F16, 1, 3, 33, 32, 0);
}
END_TEST

/* eo_linear_init's forward (core/nn.c): x wᵀ + b */
static eo_status linear(eo_ctx *ctx, eo_tensor *x, eo_tensor *w, eo_tensor *b, eo_tensor **y)
{
    eo_status s = eo_matmul(ctx, x, w, 0, 1, y);
    return s ? s : eo_add(ctx, *y, b, y);
}

/* linear on bf16: the forward and both gradients through the tensor cores */
START_TEST(core_linear_bf16)
{
    eo_ctx *ctx = eo_test_cuda_ctx(8, 32);
    int64_t sx[2] = {19, 40}, sw[2] = {23, 40}, sbias[1] = {23};
    eo_tensor *x = rand16_tensor(ctx, 2, sx, EO_BF16, 31), *w = rand16_tensor(ctx, 2, sw, EO_BF16, 32);
    eo_tensor *bias = rand16_tensor(ctx, 1, sbias, EO_BF16, 33);
    eo_tensor *dx = on_cuda(ctx, x), *dw = on_cuda(ctx, w), *dbias = on_cuda(ctx, bias), *y, *dy;
    ck_assert_msg(linear(ctx, x, w, bias, &y) == EO_OK, "%s", eo_last_error(ctx));
    ck_assert_msg(linear(ctx, dx, dw, dbias, &dy) == EO_OK, "%s", eo_last_error(ctx));
    expect_close16(ctx, "linear bf16", y, dy, EO_BF16);
    eo_tensor *y32, *dy32, *L, *dL;
    ck_assert_int_eq(eo_cast(ctx, y, EO_F32, &y32), EO_OK);
    ck_assert_int_eq(eo_cast(ctx, dy, EO_F32, &dy32), EO_OK);
    ck_assert_int_eq(eo_sum_all(ctx, y32, &L), EO_OK);
    ck_assert_int_eq(eo_sum_all(ctx, dy32, &dL), EO_OK);
    ck_assert_int_eq(eo_backward(ctx, L), EO_OK);
    ck_assert_msg(eo_backward(ctx, dL) == EO_OK, "%s", eo_last_error(ctx));
    expect_close16(ctx, "linear bf16 dx", x->grad, dx->grad, EO_BF16);
    expect_close16(ctx, "linear bf16 dw", w->grad, dw->grad, EO_BF16);
    eo_test_cuda_ctx_free(ctx);
}
END_TEST

/* ---- the core's row ops on 16-bit tensors: CUDA vs CPU -------------------------
 * Each op runs through the core on CPU tensors and on CUDA copies; where
 * CUDA has the 16-bit slot the op reads and writes 16 bits there
 * (counted on the interpreter), else it takes the fallback through f32
 * copies (a NULL slot: binary_backward16, layernorm_backward16 and
 * embedding_backward16 today), and either way the results agree with the
 * CPU's. L = sum(f32(y) * w). */
typedef eo_status (*row_op)(eo_ctx *ctx, eo_tensor *const *in, eo_tensor **out);
static eo_status r_softmax(eo_ctx *c, eo_tensor *const *in, eo_tensor **o) { return eo_softmax(c, in[0], o); }
static eo_status r_log_softmax(eo_ctx *c, eo_tensor *const *in, eo_tensor **o) { return eo_log_softmax(c, in[0], o); }
static eo_status r_layernorm(eo_ctx *c, eo_tensor *const *in, eo_tensor **o) { return eo_layernorm(c, in[0], in[1], in[2], 1e-5f, o); }
static eo_status r_add(eo_ctx *c, eo_tensor *const *in, eo_tensor **o) { return eo_add(c, in[0], in[1], o); }
/* One ignored row (-100): the mean is over the 5 kept rows. (The 16-bit
 * kernel once wrote its row losses over the device's checked copy of the
 * targets, so the ignored row counted: ops/cuda/launch.h's scratch map.) */
static const int32_t row_targets[6] = { 3, 0, 40, -100, 7, 1 };
static eo_status r_ce(eo_ctx *c, eo_tensor *const *in, eo_tensor **o)
{
    eo_tensor *t;
    int64_t n = 6;
    eo_status s = eo_tensor_wrap(c, EO_I32, 1, &n, (void *)row_targets, &t);
    if (s == EO_OK && in[0]->device == EO_CUDA)
        s = eo_to_device(c, t, EO_CUDA, EO_STEP, &t);
    return s ? s : eo_cross_entropy(c, in[0], t, -100, o);
}

static void core_row_op(const char *name, row_op f, int n_in, const int64_t (*shape)[2],
                        const int *rank, int dt, const char *kernel)
{
    eo_ctx *ctx = eo_test_cuda_ctx(8, 32);
    eo_tensor *a[3] = { NULL }, *d[3] = { NULL }, *y, *dy;
    for (int i = 0; i < n_in; i++) {
        a[i] = rand16_tensor(ctx, rank[i], shape[i], dt, 41u + (unsigned)i);
        d[i] = on_cuda(ctx, a[i]);
    }
    char what[96];
    snprintf(what, sizeof what, "%s %s", name, dt == EO_BF16 ? "bf16" : "f16");
    eo_ptxsim_counters_reset();
    ck_assert_msg(f(ctx, a, &y) == EO_OK, "cpu %s: %s", what, eo_last_error(ctx));
    ck_assert_msg(f(ctx, d, &dy) == EO_OK, "cuda %s: %s", what, eo_last_error(ctx));
    expect_close16(ctx, what, y, dy, dt);
    if (kernel && !getenv("EO_TEST_CUDA")) {
        eo_px_counters pc;
        ck_assert_msg(eo_ptxsim_counters_of(kernel, &pc) && pc.launches > 0, "%s: no %s launch",
                      what, kernel);
    }
    backward_weighted(ctx, what, y, dy, 0.5f, 1.5f, 43);
    for (int i = 0; i < n_in; i++) {
        char g[128];
        snprintf(g, sizeof g, "%s d input %d", what, i);
        ck_assert(a[i]->grad && d[i]->grad);
        expect_close16(ctx, g, a[i]->grad, d[i]->grad, dt);
    }
    eo_test_cuda_ctx_free(ctx);
}

START_TEST(core_row_ops_16bit)
{
    const int dt = _i ? EO_F16 : EO_BF16, bf = dt == EO_BF16;
    const int64_t rows[3][2] = { { 6, 45 }, { 45, 0 }, { 45, 0 } };
    const int r2[3] = { 2, 1, 1 };
    core_row_op("softmax", r_softmax, 1, rows, r2, dt, bf ? "eo_softmax16_bf16" : "eo_softmax16_f16");
    core_row_op("log_softmax", r_log_softmax, 1, rows, r2, dt, NULL);
    core_row_op("cross_entropy", r_ce, 1, rows, r2, dt, NULL);
    core_row_op("layernorm", r_layernorm, 3, rows, r2, dt, NULL); /* backward: the fallback */
    const int64_t bc[2][2] = { { 6, 45 }, { 45, 0 } };
    core_row_op("add (broadcast)", r_add, 2, bc, r2, dt, NULL);
}
END_TEST

/* ---- PyTorch's rules at the edges, explicit expected values ------------------
 * What PyTorch gives (and what the CPU kernels are being changed to),
 * written out, not taken from the CPU kernel; the 16-bit bits are compared
 * (a zero's sign counts, NaN must meet NaN). */
static void check_bits16(const char *what, const uint16_t *got, const float *want, size_t n, int dt)
{
    for (size_t i = 0; i < n; i++) {
        uint16_t w = f2h(want[i], dt);
        int ok = isnan(want[i]) ? isnan(h2f(got[i], dt)) : got[i] == w;
        ck_assert_msg(ok, "%s (%s) [%zu]: device %.9g (0x%04x), want %.9g (0x%04x)", what,
                      dt == EO_BF16 ? "bf16" : "f16", i, (double)h2f(got[i], dt), got[i],
                      (double)h2f(w, dt), w);
    }
}

/* GELU where the exp leaves the float range: x * 1 or x * 0, gradient
 * exactly 1 or 0 (bf16 reaches |x| ~ 1e20, where x^2 is inf in f32);
 * gelu(-inf) = NaN, gelu'(+-inf) = NaN. ReLU's gradient passes at NaN. */
START_TEST(torch_edges16_unary)
{
    enum { NB = 18 };
    static const float xb[NB] = {1e13f, 1e20f, 3e38f, 50, 20, 60000, -1e13f, -1e20f, -3e38f,
                                 -50, -20, -60000, INFINITY, -INFINITY, NAN, 1e30f, -1e30f, 25};
    static uint16_t hx[NB], hy[NB], hg[NB], hz[NB], got[NB];
    float y[NB], d[NB];
    for (int dt = EO_BF16; dt <= EO_F16; dt++) {
        int n = dt == EO_BF16 ? NB : 6; /* f16: the values below 65504 */
        static const int f16pick[6] = {3, 4, 5, 9, 10, 11};
        for (int i = 0; i < n; i++) {
            float v = dt == EO_BF16 ? xb[i] : xb[f16pick[i]];
            hx[i] = f2h(v, dt), hg[i] = f2h(0.75f, dt), hz[i] = 0;
        }
        if (dt == EO_F16) { /* and the specials */
            hx[n] = f2h(INFINITY, dt), hx[n + 1] = f2h(-INFINITY, dt), hx[n + 2] = f2h(NAN, dt);
            for (int i = n; i < n + 3; i++)
                hg[i] = f2h(0.75f, dt), hz[i] = 0;
            n += 3;
        }
        for (size_t off = 0; off <= 2; off += 2)
            for (int op = EO_UN_GELU_TANH; op <= EO_UN_GELU_ERF; op++) {
                for (int i = 0; i < n; i++) {
                    float v = h2f(hx[i], dt);
                    y[i] = isnan(v) || v == -INFINITY ? NAN : v > 0 ? v : v * 0.0f;
                    d[i] = isnan(v) || isinf(v) ? NAN : v > 0 ? 0.75f : 0.0f;
                }
                dbuf dxb = dup_(hx, (size_t)n * 2, off), dyb = dup_(NULL, (size_t)n * 2, off);
                eo_cuda_k_unary16((eo_unop)op, dt, n, dxb.p, dyb.p, 1, &EX);
                ddown(hy, dyb, (size_t)n * 2);
                check_bits16(op == EO_UN_GELU_TANH ? "gelu_tanh16" : "gelu_erf16", hy, y,
                             (size_t)n, dt);
                dbuf ddy = dup_(hg, (size_t)n * 2, off), ddx = dup_(hz, (size_t)n * 2, off);
                eo_cuda_k_unary_backward16((eo_unop)op, dt, n, dxb.p, dyb.p, ddy.p, ddx.p, 1, &EX);
                ddown(got, ddx, (size_t)n * 2);
                check_bits16(op == EO_UN_GELU_TANH ? "gelu_tanh16 backward" : "gelu_erf16 backward",
                             got, d, (size_t)n, dt);
                dfree(dxb), dfree(dyb), dfree(ddy), dfree(ddx);
            }
        /* relu backward: dx = 0.125 + 0.75 where x > 0 or x is NaN */
        static const float rx[9] = {NAN, 0.0f, -0.0f, -1, 1, INFINITY, -INFINITY, 2, -2};
        static const float rw[9] = {0.875f, 0.125f, 0.125f, 0.125f, 0.875f, 0.875f, 0.125f,
                                    0.875f, 0.125f};
        for (int i = 0; i < 9; i++)
            hx[i] = f2h(rx[i], dt), hz[i] = f2h(0.125f, dt), hg[i] = f2h(0.75f, dt);
        for (size_t off = 0; off <= 2; off += 2) {
            dbuf dxb = dup_(hx, 18, off), dyb = dup_(NULL, 18, off);
            dbuf ddy = dup_(hg, 18, off), ddx = dup_(hz, 18, off);
            eo_cuda_k_unary_backward16(EO_UN_RELU, dt, 9, dxb.p, dyb.p, ddy.p, ddx.p, 1, &EX);
            ddown(got, ddx, 18);
            check_bits16("relu16 backward", got, rw, 9, dt);
            dfree(dxb), dfree(dyb), dfree(ddy), dfree(ddx);
        }
    }
}
END_TEST

/* log_softmax backward: dy - exp(y) sum(dy) at every entry (a -inf entry
 * of a row with finite ones gets dy), 0 for a row of only -inf, a NaN
 * never zeroed; maximum/minimum: a tie returns a, NaN gives NaN. */
START_TEST(torch_edges16_rows_binary)
{
    enum { RR = 4, CC = 1003 };
    static uint16_t hy[RR * CC], hg[RR * CC], hz[RR * CC], got[RR * CC];
    static float want[RR * CC];
    for (int dt = EO_BF16; dt <= EO_F16; dt++) {
        for (int i = 0; i < RR * CC; i++)
            hy[i] = f2h(-INFINITY, dt), hg[i] = f2h(0.25f, dt), hz[i] = f2h(0.125f, dt),
            want[i] = 0.375f;                   /* 0.125 + dy */
        hy[CC - 1] = f2h(0, dt);                /* row 0: one finite entry, at the end */
        want[CC - 1] = 0.125f + (0.25f - 250.75f); /* dy - 1 * (1003 * 0.25), one rounding */
        for (int c = 0; c < CC; c++)
            want[CC + c] = 0.125f;              /* row 1: only -inf: + 0 */
        hy[2 * CC] = f2h(NAN, dt);              /* row 2: a NaN among -infs */
        want[2 * CC] = NAN;
        hy[3 * CC + 5] = f2h(0, dt);            /* row 3: one finite entry in the head */
        want[3 * CC + 5] = 0.125f + (0.25f - 250.75f);
        for (size_t off = 0; off <= 2; off += 2) { /* 16-byte groups, then none */
            size_t n = (size_t)RR * CC * 2;
            dbuf dyv = dup_(hy, n, off), dg = dup_(hg, n, off), dx = dup_(hz, n, off);
            eo_cuda_k_softmax_backward16(1, dt, RR, CC, dyv.p, dg.p, dx.p, NULL, &EX);
            ddown(got, dx, n);
            check_bits16("log_softmax16 backward", got, want, (size_t)RR * CC, dt);
            dfree(dyv), dfree(dg), dfree(dx);
        }
        enum { NM = 12 };
        const float a[NM] = {-0.0f, 0.0f, 1, NAN, 2, -0.0f, 0.0f, -3, 0.0f, -0.0f, 5, 1};
        const float b[NM] = {0.0f, -0.0f, 1, 3, NAN, -0.0f, 0.0f, -5, -0.0f, 0.0f, 5, 2};
        const float wmax[NM] = {-0.0f, 0.0f, 1, NAN, NAN, -0.0f, 0.0f, -3, 0.0f, -0.0f, 5, 2};
        const float wmin[NM] = {-0.0f, 0.0f, 1, NAN, NAN, -0.0f, 0.0f, -5, 0.0f, -0.0f, 5, 1};
        uint16_t ha[NM], hb[NM], ho[NM];
        for (int i = 0; i < NM; i++)
            ha[i] = f2h(a[i], dt), hb[i] = f2h(b[i], dt);
        for (size_t off = 0; off <= 2; off += 2)
            for (int op = EO_BIN_MAX; op <= EO_BIN_MIN; op++) {
                const float *w = op == EO_BIN_MAX ? wmax : wmin;
                dbuf da = dup_(ha, sizeof ha, off), db = dup_(hb, sizeof hb, off);
                dbuf dout = dup_(NULL, sizeof ho, off);
                const int64_t sh[4] = {1, 1, 1, NM}, st[4] = {NM, NM, NM, 1};
                eo_cuda_k_binary16((eo_binop)op, dt, sh, dout.p, st, da.p, st, db.p, st, &EX);
                ddown(ho, dout, sizeof ho);
                check_bits16(op == EO_BIN_MAX ? "maximum16" : "minimum16", ho, w, NM, dt);
                /* out [3, 4]; a, b read as the transpose of a [4, 3] array (the 4-D kernel) */
                const int64_t sh2[4] = {1, 1, 3, 4}, so2[4] = {12, 12, 4, 1}, sab[4] = {12, 12, 1, 3};
                float w2[NM];
                for (int r = 0; r < 3; r++)
                    for (int c = 0; c < 4; c++)
                        w2[r * 4 + c] = w[c * 3 + r];
                eo_cuda_k_binary16((eo_binop)op, dt, sh2, dout.p, so2, da.p, sab, db.p, sab, &EX);
                ddown(ho, dout, sizeof ho);
                check_bits16(op == EO_BIN_MAX ? "maximum16 strided" : "minimum16 strided", ho, w2,
                             NM, dt);
                dfree(da), dfree(db), dfree(dout);
            }
    }
}
END_TEST

Suite *eo_suite_cuda16(void)
{
    Suite *s = suite_create("cuda16");
    if (eo_test_skip_16bit_device("suite cuda16"))
        return s;
    TCase *t = tcase_create("kernels");
    tcase_add_checked_fixture(t, setup, teardown);
    tcase_set_timeout(t, 120);
    tcase_add_test(t, cast_and_copy);
    tcase_add_test(t, unary_ops);
    tcase_add_test(t, binary_ops);
    tcase_add_test(t, softmax_rows);
    tcase_add_test(t, layernorm_rows);
    tcase_add_test(t, cross_entropy_rows);
    tcase_add_test(t, cross_entropy_many_rows);
    tcase_add_test(t, embedding_rows);
    tcase_add_test(t, adamw_master);
    tcase_add_test(t, fill16_values);
    tcase_add_test(t, sgd16_master);
    tcase_add_test(t, binary_backward16_full);
    tcase_add_test(t, binary_backward16_broadcast);
    tcase_add_test(t, layernorm_backward16_rows);
    tcase_add_test(t, layernorm_backward16_fused);
    tcase_add_test(t, embedding_backward16_order);
    tcase_add_test(t, refused_dtypes);
    tcase_add_test(t, torch_edges16_unary);
    tcase_add_test(t, torch_edges16_rows_binary);
    suite_add_tcase(s, t);
    TCase *c = tcase_create("core");
    tcase_set_timeout(c, 120);
    tcase_add_loop_test(c, core_matmul_on_tensor_cores, 0, 8);
    tcase_add_test(c, core_linear_bf16);
    tcase_add_test(c, core_attention16_backward);
    tcase_add_loop_test(c, core_row_ops_16bit, 0, 2);
    suite_add_tcase(s, c);
    return s;
}
