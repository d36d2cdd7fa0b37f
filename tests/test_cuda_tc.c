/* tests/test_cuda_tc.c — the tensor-core matmul (ptx/matmul_tc.ptx through
 * eo_cuda_k_matmul16) on the PTX interpreter's driver double, against a
 * reference computed in double from the same 16-bit inputs.
 *
 * Why double: a bf16 or f16 value is exact in double, and so is each
 * product, so the reference is the exact sum up to double's own rounding;
 * the kernel's only error is its f32 accumulation (bounded by K f32
 * roundings of the sum of magnitudes) and, for a 16-bit C, the final
 * rounding to 16 bits (half an ulp: 2^-8 relative for bf16, 2^-11 for
 * f16). Shapes are just above one 128 x 128 tile, odd, in every transpose,
 * batched, with leading dimensions that are and are not multiples of 8
 * (the cp.async path and the element-by-element fallback), and K not a
 * multiple of 32. With EO_TEST_CUDA=real it runs on the machine's GPU. */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "core/everyo.h"
#include "ops/cuda/device.h"
#include "tests/cuda_fixture.h"
#include "tests/gradcheck.h"
#include "ops/kernels.h"
#include "ops/cpu/half.h"
#include "tools/ptxsim/driver.h"

static eo_cuda_driver D;
static eo_cuda CU;
static eo_exec EX;
static int real_gpu;

static void setup(void) { eo_test_dev_open(&D, &CU, &EX, &real_gpu); }
static void teardown(void) { eo_test_dev_close(&D, &CU, real_gpu); }

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint32_t next32(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (uint32_t)(rng >> 32);
}

/* A random 16-bit value in roughly [-4, 4], and its exact value. */
static uint16_t rand16(int f16)
{
    uint32_t r = next32();
    if (f16) /* sign, exponent 12..16 (2^-3 .. 2^1), 10 random fraction bits */
        return (uint16_t)((r & 0x8000) | ((12 + (r >> 16) % 5) << 10) | (r & 0x3ff));
    return (uint16_t)((r & 0x8000) | ((124 + (r >> 16) % 5) << 7) | (r & 0x7f));
}
static double value16(uint16_t h, int f16)
{
    if (!f16) {
        uint32_t u = (uint32_t)h << 16;
        float f;
        memcpy(&f, &u, 4);
        return f;
    }
    int e = (h >> 10) & 31, m = h & 1023;
    double v = e ? ldexp(1024 + m, e - 25) : ldexp(m, -24);
    return (h & 0x8000) ? -v : v;
}

static void *dev_up(const void *host, size_t bytes)
{
    eo_cu_deviceptr p = 0;
    ck_assert_int_eq(eo_cuda_alloc_block(&CU, bytes, &p), EO_OK);
    ck_assert_int_eq(eo_cuda_h2d(&CU, p, host, bytes), EO_OK);
    return (void *)(uintptr_t)p;
}
static void dev_down(void *host, const void *dev, size_t bytes)
{
    char msg[1024] = "";
    eo_status y = eo_cuda_sync(&CU);
    if (y != EO_OK) {
        eo_cuda_take_error(&CU, msg, sizeof msg);
        const eo_px_fault *f = real_gpu ? NULL : eo_ptxsim_last_fault();
        ck_abort_msg("sync: %s (fault: %s)", msg, f ? f->msg : "");
    }
    eo_status s = eo_cuda_d2h(&CU, host, (eo_cu_deviceptr)(uintptr_t)dev, bytes);
    eo_status e = eo_cuda_take_error(&CU, msg, sizeof msg);
    const eo_px_fault *f = real_gpu ? NULL : eo_ptxsim_last_fault();
    ck_assert_msg(s == EO_OK && e == EO_OK, "device error: %s (fault: %s)", msg,
                  f ? f->msg : "");
}
static void dev_free(void *d) { eo_cuda_free_block(&CU, (eo_cu_deviceptr)(uintptr_t)d); }

typedef struct tc_case {
    int ta, tb, f16, out16, batch, M, N, K, pad; /* pad: added to every leading dimension */
    float beta;
    int share_a; /* sa = 0: one A for the whole batch */
} tc_case;

static void run_case(const tc_case *c)
{
    int B = c->batch, M = c->M, N = c->N, K = c->K;
    /* pad < 0: every leading dimension rounded up to a multiple of 8 */
#define LD(x) (c->pad < 0 ? ((x) + 7) / 8 * 8 : (x) + c->pad)
    int64_t lda = LD(c->ta ? M : K), ldb = LD(c->tb ? K : N), ldc = LD(N);
#undef LD
    int64_t arows = c->ta ? K : M, brows = c->tb ? N : K;
    int64_t sa = c->share_a ? 0 : arows * lda, sb = brows * ldb, sc = (int64_t)M * ldc;
    size_t na = (size_t)((c->share_a ? 1 : B) * arows * lda), nb = (size_t)(B * brows * ldb);
    size_t nc = (size_t)(B * sc);
    uint16_t *A = malloc(na * 2), *Bm = malloc(nb * 2), *C16 = malloc(nc * 2);
    float *C32 = malloc(nc * 4);
    for (size_t i = 0; i < na; i++)
        A[i] = rand16(c->f16);
    for (size_t i = 0; i < nb; i++)
        Bm[i] = rand16(c->f16);
    for (size_t i = 0; i < nc; i++) {
        C16[i] = rand16(c->f16);
        C32[i] = (float)value16(C16[i], c->f16);
    }
    int dt = c->f16 ? EO_F16 : EO_BF16;
    void *dA = dev_up(A, na * 2), *dB = dev_up(Bm, nb * 2);
    void *dC = c->out16 ? dev_up(C16, nc * 2) : dev_up(C32, nc * 4);
    eo_cuda_k_matmul16(c->ta, c->tb, B, M, N, K, dt, dA, lda, sa, dB, ldb, sb, c->beta,
                       c->out16 ? dt : EO_F32, dC, ldc, sc, NULL, &EX);
    uint16_t *G16 = malloc(nc * 2);
    float *G32 = malloc(nc * 4);
    if (c->out16)
        dev_down(G16, dC, nc * 2);
    else
        dev_down(G32, dC, nc * 4);
    double rel16 = c->f16 ? 0x1p-11 : 0x1p-8; /* unit roundoff: 10 and 7 fraction bits */
    for (int b = 0; b < B; b++)
        for (int64_t m = 0; m < M; m++)
            for (int64_t j = 0; j < ldc; j++) {
                size_t ci = (size_t)(b * sc + m * ldc + j);
                double old = c->out16 ? value16(C16[ci], c->f16) : (double)C32[ci];
                double got = c->out16 ? value16(G16[ci], c->f16) : (double)G32[ci];
                if (j >= N) { /* the padding between rows stays untouched */
                    ck_assert_msg(got == old || (isnan(got) && isnan(old)),
                                  "padding C[%d][%lld][%lld] written", b, (long long)m,
                                  (long long)j);
                    continue;
                }
                double ref = c->beta != 0 ? old : 0, mag = fabs(ref);
                for (int64_t k = 0; k < K; k++) {
                    size_t ai = (size_t)(b * sa + (c->ta ? k * lda + m : m * lda + k));
                    size_t bi = (size_t)(b * sb + (c->tb ? j * ldb + k : k * ldb + j));
                    double p = value16(A[ai], c->f16) * value16(Bm[bi], c->f16);
                    ref += p;
                    mag += fabs(p);
                }
                double tol = (K + 2) * 0x1p-24 * mag + (c->out16 ? rel16 * fabs(ref) : 0);
                ck_assert_msg(fabs(got - ref) <= tol,
                              "ta %d tb %d %s%s B %d M %d N %d K %d pad %d: C[%d][%lld][%lld] = "
                              "%.9g, want %.9g", c->ta, c->tb, c->f16 ? "f16" : "bf16",
                              c->out16 ? " -> 16-bit" : "", B, M, N, K, c->pad, b,
                              (long long)m, (long long)j, got, ref);
            }
    dev_free(dA);
    dev_free(dB);
    dev_free(dC);
    free(A);
    free(Bm);
    free(C16);
    free(C32);
    free(G16);
    free(G32);
}

/* Every transpose (bf16, and f16 for the last), f32 C: one tile and a bit
 * (129 x 130, K 40: two slices, the second 8 wide), leading dimensions
 * padded to multiples of 8: the 16-byte cp.async path for both operands
 * in both shared layouts. */
START_TEST(matmul16_transposes)
{
    for (int t = 0; t < 4; t++) {
        tc_case c = {t & 1, t >> 1, t == 3, 0, 1, 129, 130, 40, -1, 0.0f, 0};
        run_case(&c);
    }
}
END_TEST

/* Odd sizes, K not a multiple of 8, leading dimensions not multiples of 8
 * (the element-by-element fallback), beta = 1, batched with a shared A. */
START_TEST(matmul16_odd_and_unaligned)
{
    static const tc_case cases[] = {
        {0, 0, 0, 0, 2, 37, 21, 29, 3, 1.0f, 1},   /* bf16, cp.async with partial chunks (K 29) */
        {1, 1, 1, 0, 2, 45, 19, 13, 1, 0.0f, 0},   /* f16, ta tb, odd everything */
        {0, 1, 1, 1, 1, 33, 140, 35, 0, 1.0f, 0},  /* f16 in, f16 out, beta 1 */
        {1, 0, 0, 1, 2, 130, 9, 70, 0, 0.0f, 0},   /* bf16 out, N = 9 (a classifier head) */
        {0, 0, 0, 0, 1, 5, 7, 0, 0, 1.0f, 0},      /* K = 0: C = beta C */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        run_case(&cases[i]);
}
END_TEST

START_TEST(matmul16_refuses_what_it_cannot_run)
{
    char msg[256];
    uint16_t h[8] = {0};
    void *d = dev_up(h, sizeof h);
    ck_assert_int_eq(EO_F32, 0);
    ck_assert_int_eq(EO_BF16, 2);
    ck_assert_int_eq(EO_F16, 3); /* the values ops/cuda/matmul_tc.c relies on */
    eo_cuda_k_matmul16(0, 0, 1, 2, 2, 2, EO_BF16, d, 2, 0, d, 2, 0, 0.0f, EO_F16, d, 2, 0, NULL,
                       &EX);
    ck_assert_int_eq(eo_cuda_take_error(&CU, msg, sizeof msg), EO_ERR_UNSUPPORTED);
    ck_assert_ptr_nonnull(strstr(msg, "matmul16"));
    dev_free(d);
}
END_TEST

/* ---- the 16-bit attention, forward and backward (ptx/attention_tc.ptx) --------
 * q, k, v, dout random 16-bit values; the reference is the CPU's f32
 * forward and backward on their widened values (exact), so the kernels'
 * own error is the rounding of p and dS to 16 bits before their products
 * (2^-9 or 2^-12 relative each) and the f32 sums: the test bounds each
 * gradient's largest error by a fraction of its largest magnitude, 1 %
 * for bf16 and 0.15 % for f16 (measured: at most 0.21 % and 0.03 %), and
 * checks that the +1 already there was kept (+=). */
static void attn16_case(int f16, int B, int H, int Tq, int Tk, int D, int causal)
{
    size_t nq = (size_t)B * H * Tq * D, nk = (size_t)B * H * Tk * D, nl = (size_t)B * H * Tq;
    uint16_t *h16 = malloc((2 * nq + 2 * nk) * 2);
    uint16_t *q16 = h16, *k16 = q16 + nq, *v16 = k16 + nk, *do16 = v16 + nk;
    float *f = malloc((3 * nq + 2 * nk + nl + 2 * nq + 2 * nk) * 4);
    float *q = f, *k = q + nq, *v = k + nk, *dout = v + nk, *out = dout + nq, *lse = out + nq;
    float *dq = lse + nl, *dk = dq + nq, *dv = dk + nk;
    /* values in [-4, 4] are too large for softmax to be interesting at
     * scale 1/sqrt(D): q and k get a quarter of them */
    for (size_t i = 0; i < nq; i++) {
        q16[i] = rand16(f16);
        q[i] = (float)value16(q16[i], f16) * 0.25f;
        q16[i] = f16 ? eo_f32_to_f16(q[i]) : eo_f32_to_bf16(q[i]);
        do16[i] = rand16(f16);
        dout[i] = (float)value16(do16[i], f16);
    }
    for (size_t i = 0; i < nk; i++) {
        k16[i] = rand16(f16);
        k[i] = (float)value16(k16[i], f16) * 0.25f;
        k16[i] = f16 ? eo_f32_to_f16(k[i]) : eo_f32_to_bf16(k[i]);
        v16[i] = rand16(f16);
        v[i] = (float)value16(v16[i], f16);
    }
    float scale = 1.0f / sqrtf((float)D);
    int64_t ms[4] = {0, 0, 0, 0};
    size_t wsb = eo_k_attention_ws(Tq, Tk, D, 1);
    void *ws = malloc(wsb ? wsb : 1);
    eo_k_attention(B, H, Tq, Tk, D, q, k, v, NULL, ms, causal, scale, out, lse, ws, NULL);
    for (size_t i = 0; i < 2 * nq + 2 * nk; i++)
        dq[i] = 0.0f;
    eo_k_attention_backward(B, H, Tq, Tk, D, q, k, v, NULL, ms, causal, scale, out, lse, dout,
                            dq, dk, dv, NULL, ms, ws, NULL);
    free(ws);
    float *ones = malloc((nq + 2 * nk) * 4);
    for (size_t i = 0; i < nq + 2 * nk; i++)
        ones[i] = 1.0f;
    void *dq16 = dev_up(q16, nq * 2), *dk16 = dev_up(k16, nk * 2), *dv16 = dev_up(v16, nk * 2);
    void *ddo16 = dev_up(do16, nq * 2), *ddo = dev_up(dout, nq * 4), *dout_ = dev_up(out, nq * 4);
    void *dlse = dev_up(lse, nl * 4);
    void *ddq = dev_up(ones, nq * 4), *ddk = dev_up(ones, nk * 4), *ddv = dev_up(ones, nk * 4);
    ck_assert_int_eq(eo_cuda_k_attention16_backward(B, H, Tq, Tk, D, f16 ? EO_F16 : EO_BF16, dq16,
                                                    dk16, dv16, causal, scale, dout_, dlse, ddo16,
                                                    ddo, ddq, ddk, ddv, &EX),
                     1);
    /* the forward: out within the same fraction of its largest value, lse
     * (f32 scores, f32 sums) within 1e-5 relative */
    void *dfo = dev_up(ones, nq * 4), *dfl = dev_up(ones, nl * 4);
    ck_assert_int_eq(eo_cuda_k_attention16(B, H, Tq, Tk, D, f16 ? EO_F16 : EO_BF16, dq16, dk16,
                                           dv16, causal, scale, dfo, dfl, &EX),
                     1);
    float *fo = malloc(nq * 4), *fl = malloc(nl * 4);
    dev_down(fo, dfo, nq * 4);
    dev_down(fl, dfl, nl * 4);
    double obig = 0;
    for (size_t i = 0; i < nq; i++)
        obig = fmax(obig, fabs(out[i]));
    for (size_t i = 0; i < nq; i++)
        ck_assert_msg(fabs((double)fo[i] - out[i]) <= (f16 ? 0.0015 : 0.01) * obig,
                      "%s Tq %d Tk %d D %d causal %d: out[%zu] = %.7g, want %.7g",
                      f16 ? "f16" : "bf16", Tq, Tk, D, causal, i, fo[i], out[i]);
    for (size_t i = 0; i < nl; i++)
        ck_assert_msg(fabs((double)fl[i] - lse[i]) <= 1e-5 * (1 + fabs(lse[i])),
                      "%s Tq %d Tk %d D %d causal %d: lse[%zu] = %.7g, want %.7g",
                      f16 ? "f16" : "bf16", Tq, Tk, D, causal, i, fl[i], lse[i]);
    dev_free(dfo);
    dev_free(dfl);
    free(fo);
    free(fl);
    float *g = malloc((nq + 2 * nk) * 4);
    dev_down(g, ddq, nq * 4);
    dev_down(g + nq, ddk, nk * 4);
    dev_down(g + nq + nk, ddv, nk * 4);
    const float *ref[3] = {dq, dk, dv};
    size_t n[3] = {nq, nk, nk}, off[3] = {0, nq, nq + nk};
    double frac = f16 ? 0.0015 : 0.01;
    for (int t = 0; t < 3; t++) {
        double big = 0, err = 0;
        size_t at = 0;
        for (size_t i = 0; i < n[t]; i++)
            big = fmax(big, fabs(ref[t][i]));
        for (size_t i = 0; i < n[t]; i++) {
            double d = fabs((double)g[off[t] + i] - 1.0 - ref[t][i]);
            if (!(d <= err)) {
                err = d;
                at = i;
            }
        }
        ck_assert_msg(err <= frac * big + 1e-6,
                      "%s B %d H %d Tq %d Tk %d D %d causal %d: d%c[%zu] = %.7g, want %.7g "
                      "(largest |ref| %.4g)",
                      f16 ? "f16" : "bf16", B, H, Tq, Tk, D, causal, "qkv"[t], at,
                      g[off[t] + at] - 1.0, ref[t][at], big);
    }
    void *all[] = {dq16, dk16, dv16, ddo16, ddo, dout_, dlse, ddq, ddk, ddv};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        dev_free(all[i]);
    free(h16);
    free(f);
    free(ones);
    free(g);
}

/* T = 1, 17 (under one tile), 64 (one whole tile), 130 (three, the last of
 * 2 rows); D 64 and 32 (and 40: D < Dp, zero-filled columns); causal and
 * not; B*H > 1; bf16 and f16. */
START_TEST(attention16_vs_cpu)
{
    static const int cases[][7] = {
        /* f16, B, H, Tq, Tk, D, causal */
        {0, 1, 2, 1, 1, 64, 1},  {0, 2, 1, 17, 17, 64, 0}, {0, 1, 2, 64, 64, 64, 1},
        {0, 1, 2, 130, 130, 64, 1}, {0, 2, 1, 130, 130, 32, 0}, {1, 1, 2, 17, 17, 32, 1},
        {1, 1, 2, 130, 130, 64, 0}, {0, 1, 2, 17, 130, 40, 1}, {1, 2, 1, 64, 64, 32, 1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const int *c = cases[i];
        attn16_case(c[0], c[1], c[2], c[3], c[4], c[5], c[6]);
    }
}
END_TEST

START_TEST(attention16_backward_declines)
{
    /* D not a multiple of 8, D > 64, an unaligned pointer: 0, nothing launched */
    ck_assert_int_eq(eo_cuda_k_attention16_backward(1, 1, 4, 4, 12, EO_BF16, NULL, NULL, NULL, 0,
                                                    1.0f, NULL, NULL, NULL, NULL, NULL, NULL,
                                                    NULL, &EX),
                     0);
    ck_assert_int_eq(eo_cuda_k_attention16_backward(1, 1, 4, 4, 128, EO_F16, NULL, NULL, NULL, 0,
                                                    1.0f, NULL, NULL, NULL, NULL, NULL, NULL,
                                                    NULL, &EX),
                     0);
    ck_assert_int_eq(eo_cuda_k_attention16_backward(1, 1, 4, 4, 64, EO_F16, (void *)2, NULL, NULL,
                                                    0, 1.0f, NULL, NULL, NULL, NULL, NULL, NULL,
                                                    NULL, &EX),
                     0);
}
END_TEST

Suite *eo_suite_cuda_tc(void)
{
    Suite *s = suite_create("cuda_tc");
    if (eo_test_skip_16bit_device("suite cuda_tc"))
        return s;
    TCase *t = tcase_create("vs_double");
    tcase_add_checked_fixture(t, setup, teardown);
    tcase_set_timeout(t, 120);
    tcase_add_test(t, matmul16_transposes);
    tcase_add_test(t, matmul16_odd_and_unaligned);
    tcase_add_test(t, matmul16_refuses_what_it_cannot_run);
    tcase_add_test(t, attention16_vs_cpu);
    tcase_add_test(t, attention16_backward_declines);
    suite_add_tcase(s, t);
    return s;
}
