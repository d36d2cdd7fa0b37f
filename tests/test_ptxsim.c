/* tests/test_ptxsim.c — the PTX interpreter and its driver double.
 *
 * Two halves. Kernels that are right must give exact results (vector
 * add, a shared-memory block reduction, a shuffle warp reduction,
 * atomics, a divergent if/else that reconverges, instruction semantics).
 * Kernels that are wrong on purpose (tests/ptx_broken/) must each be
 * caught with the right kind of fault at the right line, reported the way
 * the real driver reports it: the launch succeeds, the error surfaces at
 * the next synchronisation, and the context stays poisoned until it is
 * released. Each broken file marks the line the fault must name with an
 * "// EXPECT <kind>" comment, so the expectation lives next to the bug.
 *
 * Paths are relative to the repository root, where the tests run. */
#include <check.h>
#include <dirent.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "tools/ptxsim/driver.h"

static eo_cuda_driver D;
static eo_cu_context ctx;

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    ck_assert_msg(f != NULL, "cannot open %s (tests run from the repository root)", path);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = malloc((size_t)n + 1);
    ck_assert_ptr_nonnull(s);
    ck_assert_uint_eq(fread(s, 1, (size_t)n, f), (size_t)n);
    s[n] = 0;
    fclose(f);
    return s;
}

/* The line holding "// EXPECT <kind>" in a broken kernel. */
static int expected_line(const char *path, const char *kind)
{
    char *s = slurp(path), marker[64];
    snprintf(marker, sizeof marker, "// EXPECT %s", kind);
    char *at = strstr(s, marker);
    ck_assert_msg(at != NULL, "%s has no '%s' marker", path, marker);
    int line = 1;
    for (char *p = s; p < at; p++)
        line += *p == '\n';
    free(s);
    return line;
}

static void ck_cu(eo_cu_result r, const char *what)
{
    const char *name = NULL;
    D.cuGetErrorName(r, &name);
    ck_assert_msg(r == EO_CUDA_SUCCESS, "%s: %s (%d)", what, name ? name : "?", r);
}
#define CK(call) ck_cu((call), #call)

static void up(void)
{
    eo_ptxsim_driver_reset();
    eo_ptxsim_driver(&D);
    eo_cu_device dev;
    CK(D.cuInit(0));
    CK(D.cuDeviceGet(&dev, 0));
    CK(D.cuDevicePrimaryCtxRetain(&ctx, dev));
    CK(D.cuCtxSetCurrent(ctx));
}

static void down(void)
{
    eo_ptxsim_driver_reset();
}

static eo_cu_module load(const char *path)
{
    char *text = slurp(path);
    char log[512] = "";
    int opts[2] = {EO_CU_JIT_ERROR_LOG_BUFFER, EO_CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
    void *vals[2] = {log, (void *)(uintptr_t)sizeof log};
    eo_cu_module m = NULL;
    eo_cu_result r = D.cuModuleLoadDataEx(&m, text, 2, opts, vals);
    free(text);
    ck_assert_msg(r == EO_CUDA_SUCCESS, "%s did not load: %s", path, log);
    return m;
}

static eo_cu_function func(eo_cu_module m, const char *name)
{
    eo_cu_function f = NULL;
    CK(D.cuModuleGetFunction(&f, m, name));
    return f;
}

static eo_cu_deviceptr upload(const void *host, size_t bytes)
{
    eo_cu_deviceptr d = 0;
    CK(D.cuMemAlloc(&d, bytes));
    if (host)
        CK(D.cuMemcpyHtoD(d, host, bytes));
    else
        CK(D.cuMemsetD32(d, 0, bytes / 4));
    return d;
}

/* ---- kernels that are right -------------------------------------------------- */

START_TEST(vector_add_exact)
{
    up();
    enum { N = 1000 };
    static float a[N], b[N], c[N];
    for (int i = 0; i < N; i++) {
        a[i] = (float)i * 0.5f;
        b[i] = 1.0f / (float)(i + 1);
    }
    eo_cu_deviceptr da = upload(a, sizeof a), db = upload(b, sizeof b), dc = upload(NULL, sizeof c);
    eo_cu_function f = func(load("tests/ptx_good/vector_add.ptx"), "vector_add");
    unsigned n = N;
    void *params[] = {&da, &db, &dc, &n};
    CK(D.cuLaunchKernel(f, (N + 255) / 256, 1, 1, 256, 1, 1, 0, NULL, params, NULL));
    CK(D.cuCtxSynchronize());
    CK(D.cuMemcpyDtoH(c, dc, sizeof c));
    for (int i = 0; i < N; i++)
        ck_assert_msg(c[i] == a[i] + b[i], "c[%d] = %g", i, (double)c[i]);
    CK(D.cuMemFree(da));
    CK(D.cuMemFree(db));
    CK(D.cuMemFree(dc));
    ck_assert_uint_eq(eo_ptxsim_live_allocations(), 0);
    down();
}
END_TEST

/* The cross-entropy forward's two loss steps (ptx/cross_entropy.ptx,
 * eo_ce_fwd): with rowloss given, each row's owner stores its loss and the
 * last block sums them; with rowloss 0 (the launcher's choice past 2^20
 * rows, too many to test here) the last block gathers them from the stats.
 * Both sum thread t's rows t, t + 256, ... in order: the same bits. Both
 * leave the block counter at 0. */
START_TEST(cross_entropy_loss_steps)
{
    up();
    enum { R = 700, C = 5 };
    static float x[R * C];
    static int32_t t[R];
    for (int i = 0; i < R * C; i++)
        x[i] = (float)((i * 37) % 19) * 0.25f - 2.0f;
    for (int r = 0; r < R; r++)
        t[r] = r % 9 == 4 ? -100 : (r * 3) % C;
    eo_cu_deviceptr dx = upload(x, sizeof x), dt = upload(t, sizeof t);
    eo_cu_deviceptr dst = upload(NULL, 2 * R * 4), dl = upload(NULL, 4), drl = upload(NULL, R * 4);
    eo_cu_deviceptr ddone = upload(NULL, 4), none = 0;
    eo_cu_function f = func(load("ptx/cross_entropy.ptx"), "eo_ce_fwd");
    unsigned rows = R, cols = C, rpb = 8, red, zero = 0;
    int ignore = -100;
    for (red = 0; red < 2; red++) {
        float got[2];
        for (int k = 0; k < 2; k++) {
            void *params[] = {&rows, &cols, &rpb, &dx, &dt, &ignore, &red, &dst, &dl,
                              k ? &none : &drl, &ddone};
            CK(D.cuLaunchKernel(f, (R + 7) / 8, 1, 1, 256, 1, 1, 0, NULL, params, NULL));
            CK(D.cuCtxSynchronize());
            CK(D.cuMemcpyDtoH(&got[k], dl, 4));
            unsigned count = 1;
            CK(D.cuMemcpyDtoH(&count, ddone, 4));
            ck_assert_uint_eq(count, zero);
        }
        ck_assert_msg(memcmp(&got[0], &got[1], 4) == 0 && got[0] > 0,
                      "reduction %u: stored %.9g, gathered %.9g", red, (double)got[0],
                      (double)got[1]);
    }
    down();
}
END_TEST

START_TEST(block_reduce_exact)
{
    up();
    enum { B = 4, T = 256 };
    static float in[B * T];
    float out[B], want[B] = {0};
    for (int i = 0; i < B * T; i++) {
        in[i] = (float)(i % 7) - 2.0f; /* small integers: every sum is exact */
        want[i / T] += in[i];
    }
    eo_cu_deviceptr din = upload(in, sizeof in), dout = upload(NULL, sizeof out);
    eo_cu_function f = func(load("tests/ptx_good/block_reduce.ptx"), "block_reduce");
    void *params[] = {&din, &dout};
    CK(D.cuLaunchKernel(f, B, 1, 1, T, 1, 1, 0, NULL, params, NULL));
    CK(D.cuMemcpyDtoH(out, dout, sizeof out));
    for (int b = 0; b < B; b++)
        ck_assert_msg(out[b] == want[b], "block %d: %g, want %g", b, (double)out[b], (double)want[b]);
    int shared = 0;
    CK(D.cuFuncGetAttribute(&shared, EO_CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, f));
    ck_assert_int_eq(shared, 1024);
    down();
}
END_TEST

START_TEST(warp_reduce_exact)
{
    up();
    float in[64], out[2];
    for (int i = 0; i < 64; i++)
        in[i] = (float)i;
    eo_cu_deviceptr din = upload(in, sizeof in), dout = upload(NULL, sizeof out);
    eo_cu_function f = func(load("tests/ptx_good/warp_reduce.ptx"), "warp_reduce");
    void *params[] = {&din, &dout};
    CK(D.cuLaunchKernel(f, 1, 1, 1, 64, 1, 1, 0, NULL, params, NULL));
    CK(D.cuMemcpyDtoH(out, dout, sizeof out));
    ck_assert_float_eq(out[0], 496.0f);  /* 0 + ... + 31 */
    ck_assert_float_eq(out[1], 1520.0f); /* 32 + ... + 63 */
    down();
}
END_TEST

START_TEST(atomics_exact)
{
    up();
    float in[128], sum = 0;
    unsigned count = 0, maxes[2];
    for (int i = 0; i < 128; i++)
        in[i] = (float)i;
    eo_cu_deviceptr din = upload(in, sizeof in), dsum = upload(NULL, 4), dcount = upload(NULL, 4),
                    dmax = upload(NULL, 8);
    eo_cu_function f = func(load("tests/ptx_good/atomics.ptx"), "atomics");
    void *params[] = {&din, &dsum, &dcount, &dmax};
    CK(D.cuLaunchKernel(f, 2, 1, 1, 64, 1, 1, 0, NULL, params, NULL));
    CK(D.cuMemcpyDtoH(&sum, dsum, 4));
    CK(D.cuMemcpyDtoH(&count, dcount, 4));
    CK(D.cuMemcpyDtoH(maxes, dmax, 8));
    ck_assert_float_eq(sum, 8128.0f);
    ck_assert_uint_eq(count, 128);
    ck_assert_uint_eq(maxes[0], 63);
    ck_assert_uint_eq(maxes[1], 127);
    down();
}
END_TEST

START_TEST(divergent_if_else_reconverges)
{
    up();
    int out[64];
    eo_cu_deviceptr dout = upload(NULL, sizeof out);
    eo_cu_function f = func(load("tests/ptx_good/diverge.ptx"), "diverge");
    void *params[] = {&dout};
    CK(D.cuLaunchKernel(f, 1, 1, 1, 64, 1, 1, 0, NULL, params, NULL));
    CK(D.cuMemcpyDtoH(out, dout, sizeof out));
    for (int i = 0; i < 64; i++) {
        int mine = i % 2 ? -i : 2 * i, j = i ^ 1, theirs = j % 2 ? -j : 2 * j;
        ck_assert_int_eq(out[i], mine + theirs);
    }
    down();
}
END_TEST

START_TEST(instruction_semantics)
{
    up();
    int32_t want[34] = {
        1, -1, 2, -2, -3, 3, 2147483647, 0, 1, -4, 1, -1, -3, -7, -7, 8, 31, 255,
        -6, -1, 0x40e00000, 0x41000000, 0, 0x40200000, (int32_t)0xc0000000, 90, -7,
        (int32_t)0xc0400000, 0x3f800000, 0x3f800001, 9, 0, 5, 5,
    };
    int32_t got[34];
    /* 18, 19: a 64-bit -6 seen as two 32-bit words. The interpreter's
     * device memory is in the host's byte order (what the host copies in
     * is what a kernel loads), so on a big-endian host the high word
     * comes first. */
    const int64_t minus6 = -6;
    memcpy(&want[18], &minus6, sizeof minus6);
    eo_cu_module m = load("tests/ptx_good/alu.ptx");
    eo_cu_deviceptr d = upload(NULL, sizeof got);
    void *p1[] = {&d};
    CK(D.cuLaunchKernel(func(m, "alu"), 1, 1, 1, 1, 1, 1, 0, NULL, p1, NULL));
    CK(D.cuMemcpyDtoH(got, d, sizeof got));
    for (int i = 0; i < 34; i++)
        ck_assert_msg(got[i] == want[i], "check %d: got %d (0x%x), want %d", i, got[i],
                      (unsigned)got[i], want[i]);
    uint32_t lanes[32][4];
    eo_cu_deviceptr dl = upload(NULL, sizeof lanes);
    void *p2[] = {&dl};
    CK(D.cuLaunchKernel(func(m, "warp_ops"), 1, 1, 1, 32, 1, 1, 0, NULL, p2, NULL));
    CK(D.cuMemcpyDtoH(lanes, dl, sizeof lanes));
    for (unsigned l = 0; l < 32; l++) {
        ck_assert_uint_eq(lanes[l][0], (l ? l - 1 : 0) * 10); /* up 1: lane 0 keeps its own */
        ck_assert_uint_eq(lanes[l][1], (l < 31 ? l + 1 : 31) * 10);
        ck_assert_uint_eq(lanes[l][2], 50);
        ck_assert_uint_eq(lanes[l][3], 0xaaaaaaaau);
    }
    down();
}
END_TEST

/* cp.async: a copy lands at its thread's wait_group, src-size zero-fills,
 * and a bar.sync after the wait publishes it (tests/ptx_good/cp_async.ptx). */
START_TEST(cp_async_semantics)
{
    up();
    float in[160], out[96];
    for (int i = 0; i < 160; i++)
        in[i] = (float)i + 0.25f;
    eo_cu_deviceptr din = upload(in, sizeof in), dout = upload(NULL, sizeof out);
    eo_cu_function f = func(load("tests/ptx_good/cp_async.ptx"), "cp_async");
    void *params[] = {&din, &dout};
    CK(D.cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, NULL, params, NULL));
    CK(D.cuMemcpyDtoH(out, dout, sizeof out));
    for (int t = 0; t < 32; t++) {
        ck_assert_float_eq(out[t], in[4 * ((t + 1) % 32) + 1]);
        ck_assert_float_eq(out[32 + t], t < 16 ? in[128 + t] : 0.0f);
        ck_assert_float_eq(out[64 + t], in[4 * t + 3]);
    }
    down();
}
END_TEST

/* ---- 16-bit floats and tensor cores (tests/ptx_good/tensor_core.ptx) -------------------
 * The references here are written from the formats' definitions with bit
 * arithmetic, independently of tools/ptxsim/alu.c (which works on values),
 * and the fragment layouts from the PTX ISA document's figures ("Matrix
 * Fragments for mma.m16n8k16 with floating point type", "ldmatrix"). */
static uint32_t fbits(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}
static float bitsf(uint32_t u)
{
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* f32 -> f16, to nearest even (rz: toward zero); NaN -> 0x7fff. */
static uint16_t ref_f16(float f, int rz)
{
    uint32_t x = fbits(f), sign = (x >> 16) & 0x8000;
    x &= 0x7fffffff;
    if (x > 0x7f800000)
        return 0x7fff;
    if (x == 0x7f800000)
        return (uint16_t)(sign | 0x7c00);
    if (x >= (rz ? 0x47800000u : 0x477ff000u)) /* 65536 (rz) or 65520: past the last f16 */
        return (uint16_t)(sign | (rz ? 0x7bff : 0x7c00));
    if (x < 0x38800000) { /* below 2^-14: a multiple of 2^-24 */
        double q = (double)bitsf(x) * 16777216.0;
        return (uint16_t)(sign | (uint32_t)(rz ? trunc(q) : nearbyint(q)));
    }
    uint32_t r = x - (112u << 23); /* rebias the exponent: 127 - 15 = 112 */
    if (!rz)
        r += 0xfff + ((r >> 13) & 1);
    return (uint16_t)(sign | r >> 13);
}

static uint16_t ref_bf16(float f, int rz)
{
    uint32_t x = fbits(f);
    if ((x & 0x7fffffff) > 0x7f800000)
        return 0x7fff;
    if (!rz)
        x += 0x7fff + ((x >> 16) & 1);
    return (uint16_t)(x >> 16);
}

static double ref_f16_value(uint16_t h)
{
    int e = (h >> 10) & 31, m = h & 1023;
    double v = e ? ldexp(1024 + m, e - 25) : ldexp(m, -24);
    return (h & 0x8000) ? -v : v;
}

START_TEST(cvt_16bit_rounding)
{
    /* hand-picked: halfway cases, the largest finite values, the subnormal
     * boundaries, values that round up into the next exponent */
    static const struct {
        uint32_t in;
        uint16_t f16_rn, bf16_rn;
    } edge[] = {
        {0x3f800000, 0x3c00, 0x3f80}, /* 1 */
        {0x3f801000, 0x3c00, 0x3f80}, /* 1 + 2^-11: f16 tie, to even */
        {0x3f803000, 0x3c02, 0x3f80}, /* 1 + 3 * 2^-11: f16 tie, up to even */
        {0x3f808000, 0x3c04, 0x3f80}, /* 1 + 2^-8: bf16 tie, to even */
        {0x3f818000, 0x3c0c, 0x3f82}, /* 1 + 3 * 2^-8: bf16 tie, up to even */
        {0x3f7ff000, 0x3c00, 0x3f80}, /* 1 - 2^-12: rounds up into the next exponent */
        {0x477fe000, 0x7bff, 0x4780}, /* 65504, the largest f16 */
        {0x477fefff, 0x7bff, 0x4780}, /* just under the f16 overflow threshold */
        {0x477ff000, 0x7c00, 0x4780}, /* 65520: f16 overflow to inf */
        {0xc77ff000, 0xfc00, 0xc780}, /* -65520 */
        {0x7f7fffff, 0x7c00, 0x7f80}, /* largest f32: bf16 rounds to inf */
        {0x38800000, 0x0400, 0x3880}, /* 2^-14, the smallest normal f16 */
        {0x387fffff, 0x0400, 0x3880}, /* just below: rounds up to the smallest normal */
        {0x33800000, 0x0001, 0x3380}, /* 2^-24, the smallest f16 subnormal */
        {0x33000000, 0x0000, 0x3300}, /* 2^-25: tie between 0 and 2^-24, to even 0 */
        {0x33400000, 0x0001, 0x3340}, /* 1.5 * 2^-25 */
        {0x33c00000, 0x0002, 0x33c0}, /* 3 * 2^-25: tie, to even 2 */
        {0x00000001, 0x0000, 0x0000}, /* the smallest f32 subnormal */
        {0x00400000, 0x0000, 0x0040}, /* an f32 subnormal, exact in bf16 */
        {0x80000000, 0x8000, 0x8000}, /* -0 */
        {0x7f800000, 0x7c00, 0x7f80}, /* inf */
        {0xff800000, 0xfc00, 0xff80}, /* -inf */
        {0x7fc00001, 0x7fff, 0x7fff}, /* NaN: the canonical NaN */
        {0xffa00000, 0x7fff, 0x7fff}, /* a signalling NaN */
    };
    size_t ne = sizeof edge / sizeof edge[0];
    float in[32];
    for (size_t i = 0; i < 32; i++) {
        if (i < ne) {
            in[i] = bitsf(edge[i].in);
            ck_assert_msg(ref_f16(in[i], 0) == edge[i].f16_rn, "reference f16 %zu", i);
            ck_assert_msg(ref_bf16(in[i], 0) == edge[i].bf16_rn, "reference bf16 %zu", i);
        } else {
            in[i] = (float)((double)(i * 2654435761u % 100003) * 1.37e-3 - 60.0);
        }
    }
    up();
    uint32_t out[256];
    eo_cu_deviceptr din = upload(in, sizeof in), dout = upload(NULL, sizeof out);
    eo_cu_function f = func(load("tests/ptx_good/tensor_core.ptx"), "cvt16");
    void *params[] = {&din, &dout};
    CK(D.cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, NULL, params, NULL));
    CK(D.cuMemcpyDtoH(out, dout, sizeof out));
    for (int t = 0; t < 32; t++) {
        const uint32_t *o = out + 8 * t;
        float g = in[t ^ 1];
        ck_assert_msg(o[0] == ref_f16(in[t], 0), "%d: cvt.rn.f16 %04x, want %04x", t, o[0],
                      ref_f16(in[t], 0));
        ck_assert_msg(o[1] == ref_f16(in[t], 1), "%d: cvt.rz.f16 %04x", t, o[1]);
        ck_assert_msg(o[2] == ref_bf16(in[t], 0), "%d: cvt.rn.bf16 %04x", t, o[2]);
        ck_assert_msg(o[3] == ref_bf16(in[t], 1), "%d: cvt.rz.bf16 %04x", t, o[3]);
        double back = ref_f16_value((uint16_t)o[0]);
        if ((o[0] & 0x7c00) == 0x7c00)
            ck_assert(isnan(bitsf(o[4])) == ((o[0] & 0x3ff) != 0));
        else
            ck_assert_msg((double)bitsf(o[4]) == back, "%d: cvt.f32.f16", t);
        ck_assert_uint_eq(fbits(bitsf(o[5])), (uint32_t)ref_bf16(in[t], 0) << 16);
        ck_assert_uint_eq(o[6], (uint32_t)ref_f16(in[t], 0) << 16 | ref_f16(g, 0));
        ck_assert_uint_eq(o[7], (uint32_t)ref_bf16(in[t], 0) << 16 | ref_bf16(g, 0));
    }
    down();
}
END_TEST

START_TEST(ldmatrix_fragments)
{
    uint16_t in[256];
    uint32_t out[32 * 11];
    for (int i = 0; i < 256; i++)
        in[i] = (uint16_t)(i * 37 + 11);
    up();
    eo_cu_deviceptr din = upload(in, sizeof in), dout = upload(NULL, sizeof out);
    eo_cu_function f = func(load("tests/ptx_good/tensor_core.ptx"), "ldm");
    void *params[] = {&din, &dout};
    CK(D.cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, NULL, params, NULL));
    CK(D.cuMemcpyDtoH(out, dout, sizeof out));
    /* element (r, c) of matrix j: lane 8j + r named in-row 5(8j + r) mod 32 */
#define M(j, r, c) ((uint32_t)in[((5 * (8 * (j) + (r))) % 32) * 8 + (c)])
    for (int l = 0; l < 32; l++) {
        int g = l / 4, q = l % 4;
        const uint32_t *o = out + 11 * l;
        uint32_t want[11];
        want[0] = M(0, g, 2 * q) | M(0, g, 2 * q + 1) << 16; /* x1 */
        for (int j = 0; j < 2; j++)                          /* x2 */
            want[1 + j] = M(j, g, 2 * q) | M(j, g, 2 * q + 1) << 16;
        for (int j = 0; j < 4; j++) {                        /* x4, x4.trans */
            want[3 + j] = M(j, g, 2 * q) | M(j, g, 2 * q + 1) << 16;
            want[7 + j] = M(j, 2 * q, g) | M(j, 2 * q + 1, g) << 16;
        }
        for (int i = 0; i < 11; i++)
            ck_assert_msg(o[i] == want[i], "lane %d register %d: %08x, want %08x", l, i, o[i],
                          want[i]);
    }
#undef M
    down();
}
END_TEST

/* mma.m16n8k16: A 16x16 (row), B 16x8 (col), C 16x8, laid into each
 * lane's registers by the documented fragment layout; every d element of
 * every lane against a double reference. The products are exact in f32,
 * so the only difference is the f32 rounding of the 16 additions: the
 * bound is 16 roundings of the sum of magnitudes, which any order the
 * hardware uses meets too. */
static void mma_case(int f16)
{
    float A[16][16], B[16][8], C[16][8];
    uint16_t Ah[16][16], Bh[16][8];
    for (int i = 0; i < 16; i++)
        for (int k = 0; k < 16; k++) {
            float v = (float)(((i * 7 + k * 13) % 23) - 11) / 3.0f; /* inexact in 16 bits */
            Ah[i][k] = f16 ? ref_f16(v, 0) : ref_bf16(v, 0);
            A[i][k] = f16 ? (float)ref_f16_value(Ah[i][k]) : bitsf((uint32_t)Ah[i][k] << 16);
        }
    for (int k = 0; k < 16; k++)
        for (int j = 0; j < 8; j++) {
            float v = (float)(((k * 5 + j * 11) % 19) - 9) * 0.7f;
            Bh[k][j] = f16 ? ref_f16(v, 0) : ref_bf16(v, 0);
            B[k][j] = f16 ? (float)ref_f16_value(Bh[k][j]) : bitsf((uint32_t)Bh[k][j] << 16);
        }
    for (int i = 0; i < 16; i++)
        for (int j = 0; j < 8; j++)
            C[i][j] = (float)(i - j) * 0.3f;
    uint32_t frag[32 * 10];
    for (int l = 0; l < 32; l++) {
        int g = l / 4, q = l % 4;
        uint32_t *r = frag + 10 * l;
#define PAIR(x, y0, x1, y1) ((uint32_t)(x) | (uint32_t)(x1) << 16)
        r[0] = PAIR(Ah[g][2 * q], 0, Ah[g][2 * q + 1], 0);
        r[1] = PAIR(Ah[g + 8][2 * q], 0, Ah[g + 8][2 * q + 1], 0);
        r[2] = PAIR(Ah[g][2 * q + 8], 0, Ah[g][2 * q + 9], 0);
        r[3] = PAIR(Ah[g + 8][2 * q + 8], 0, Ah[g + 8][2 * q + 9], 0);
        r[4] = PAIR(Bh[2 * q][g], 0, Bh[2 * q + 1][g], 0);
        r[5] = PAIR(Bh[2 * q + 8][g], 0, Bh[2 * q + 9][g], 0);
#undef PAIR
        r[6] = fbits(C[g][2 * q]);
        r[7] = fbits(C[g][2 * q + 1]);
        r[8] = fbits(C[g + 8][2 * q]);
        r[9] = fbits(C[g + 8][2 * q + 1]);
    }
    up();
    float out[128];
    eo_cu_deviceptr dfrag = upload(frag, sizeof frag), dout = upload(NULL, sizeof out);
    eo_cu_function f = func(load("tests/ptx_good/tensor_core.ptx"), f16 ? "mma_f16" : "mma_bf16");
    void *params[] = {&dfrag, &dout};
    CK(D.cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, NULL, params, NULL));
    CK(D.cuMemcpyDtoH(out, dout, sizeof out));
    for (int l = 0; l < 32; l++)
        for (int e = 0; e < 4; e++) {
            int i = l / 4 + 8 * (e / 2), j = 2 * (l % 4) + e % 2;
            double ref = C[i][j], mag = fabs(ref);
            for (int k = 0; k < 16; k++) {
                ref += (double)A[i][k] * B[k][j];
                mag += fabs((double)A[i][k] * B[k][j]);
            }
            double got = out[4 * l + e];
            ck_assert_msg(fabs(got - ref) <= 16 * 0x1p-24 * mag, "%s lane %d d%d (D[%d][%d]): %.9g, "
                          "want %.9g", f16 ? "f16" : "bf16", l, e, i, j, got, ref);
        }
    down();
}

START_TEST(mma_m16n8k16_fragments)
{
    mma_case(0);
    mma_case(1);
}
END_TEST

/* ---- kernels that are wrong ------------------------------------------------------ */

typedef struct broken {
    const char *file, *kernel, *expect;
    unsigned grid, block;
    size_t buf_bytes[3]; /* device buffers for the leading pointer params */
    unsigned scalars[3];  /* u32 params after the buffers */
    int nbufs, nscalars;
    eo_px_fault_kind kind;
    eo_cu_result result;
} broken;

static const broken corpus[] = {
    {"oob_off_by_one", "copy_n", "global-oob", 1, 64, {200, 200}, {50}, 2, 1,
     EO_PX_FAULT_GLOBAL_OOB, EO_CUDA_ERROR_ILLEGAL_ADDRESS},
    {"oob_wrong_stride", "scale_rows", "global-oob", 8, 4, {128}, {8, 4, 0x40000000}, 1, 3,
     EO_PX_FAULT_GLOBAL_OOB, EO_CUDA_ERROR_ILLEGAL_ADDRESS},
    {"race_no_barrier", "shift_left", "shared-race", 1, 64, {256, 256}, {0}, 2, 0,
     EO_PX_FAULT_SHARED_RACE, EO_CUDA_ERROR_LAUNCH_FAILED},
    {"divergent_barrier", "half_barrier", "divergent-barrier", 1, 32, {128}, {0}, 1, 0,
     EO_PX_FAULT_DIVERGENT_BARRIER, EO_CUDA_ERROR_LAUNCH_FAILED},
    {"barrier_two_sites", "two_sites", "divergent-barrier", 1, 32, {128}, {0}, 1, 0,
     EO_PX_FAULT_DIVERGENT_BARRIER, EO_CUDA_ERROR_LAUNCH_FAILED},
    {"shfl_unconverged", "half_warp_sum", "shfl-diverged", 1, 32, {128, 128}, {0}, 2, 0,
     EO_PX_FAULT_SHFL_DIVERGED, EO_CUDA_ERROR_LAUNCH_FAILED},
    {"mma_half_warp", "half_warp_mma", "shfl-diverged", 1, 32, {1280, 512}, {0}, 2, 0,
     EO_PX_FAULT_SHFL_DIVERGED, EO_CUDA_ERROR_LAUNCH_FAILED},
    {"uninit_register", "row_sum", "uninit-register", 1, 4, {64, 16}, {4}, 2, 1,
     EO_PX_FAULT_UNINIT_REG, EO_CUDA_ERROR_LAUNCH_FAILED},
    {"misaligned_vector", "sum4", "misaligned", 1, 4, {64, 16}, {0}, 2, 0,
     EO_PX_FAULT_MISALIGNED, 716 /* CUDA_ERROR_MISALIGNED_ADDRESS */},
    {"shared_oob", "stage", "shared-oob", 1, 64, {256}, {0}, 1, 0,
     EO_PX_FAULT_SHARED_OOB, EO_CUDA_ERROR_ILLEGAL_ADDRESS},
    {"cp_async_no_wait", "no_wait", "shared-race", 1, 64, {256, 256}, {0}, 2, 0,
     EO_PX_FAULT_SHARED_RACE, EO_CUDA_ERROR_LAUNCH_FAILED},
};

START_TEST(broken_kernel_is_caught)
{
    const broken *b = &corpus[_i];
    char path[128];
    snprintf(path, sizeof path, "tests/ptx_broken/%s.ptx", b->file);
    int line = expected_line(path, b->expect);
    up();
    eo_cu_function f = func(load(path), b->kernel);
    eo_cu_deviceptr bufs[3];
    void *params[6];
    int np = 0;
    for (int i = 0; i < b->nbufs; i++) {
        bufs[i] = upload(NULL, b->buf_bytes[i]);
        params[np++] = &bufs[i];
    }
    for (int i = 0; i < b->nscalars; i++)
        params[np++] = (void *)&b->scalars[i];
    /* As on a GPU: the launch is accepted, the fault arrives later. */
    CK(D.cuLaunchKernel(f, b->grid, 1, 1, b->block, 1, 1, 0, NULL, params, NULL));
    eo_cu_result r = D.cuCtxSynchronize();
    const eo_px_fault *fl = eo_ptxsim_last_fault();
    ck_assert_msg(r == b->result, "%s: cuCtxSynchronize gave %d, want %d (%s)", b->file, r,
                  b->result, fl->msg);
    ck_assert_msg(fl->kind == b->kind, "%s: fault '%s', want '%s': %s", b->file,
                  eo_px_fault_name(fl->kind), eo_px_fault_name(b->kind), fl->msg);
    ck_assert_msg(fl->line == line, "%s: fault at line %d, want %d: %s", b->file, fl->line, line,
                  fl->msg);
    ck_assert_str_eq(fl->kernel, b->kernel);
    ck_assert_ptr_nonnull(strstr(fl->msg, b->kernel));
    /* The context stays poisoned... */
    eo_cu_deviceptr more;
    ck_assert_int_eq(D.cuMemAlloc(&more, 16), b->result);
    ck_assert_int_eq(D.cuCtxSynchronize(), b->result);
    /* ...until the primary context is released, which frees everything. */
    CK(D.cuDevicePrimaryCtxRelease(0));
    ck_assert_uint_eq(eo_ptxsim_live_allocations(), 0);
    CK(D.cuDevicePrimaryCtxRetain(&ctx, 0));
    CK(D.cuCtxSetCurrent(ctx));
    CK(D.cuMemAlloc(&more, 16));
    CK(D.cuCtxSynchronize());
    down();
}
END_TEST

START_TEST(fault_surfaces_at_memcpy)
{
    up();
    eo_cu_function f = func(load("tests/ptx_broken/oob_off_by_one.ptx"), "copy_n");
    eo_cu_deviceptr in = upload(NULL, 40), out = upload(NULL, 40);
    unsigned n = 10;
    void *params[] = {&in, &out, &n};
    CK(D.cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, NULL, params, NULL));
    float host[10];
    ck_assert_int_eq(D.cuMemcpyDtoH(host, out, sizeof host), EO_CUDA_ERROR_ILLEGAL_ADDRESS);
    const eo_px_fault *fl = eo_ptxsim_last_fault();
    ck_assert_uint_eq(fl->thread.x, 10); /* the first thread past the end */
    ck_assert_uint_eq(fl->block.x, 0);
    ck_assert_ptr_nonnull(strstr(fl->msg, "past the end"));
    down();
}
END_TEST

START_TEST(unsupported_instruction_rejected_at_load)
{
    const char *path = "tests/ptx_broken/unsupported_instruction.ptx";
    int line = expected_line(path, "unsupported");
    up();
    char *text = slurp(path);
    char log[256] = "", want[96];
    int opts[2] = {EO_CU_JIT_ERROR_LOG_BUFFER, EO_CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
    void *vals[2] = {log, (void *)(uintptr_t)sizeof log};
    eo_cu_module m = NULL;
    ck_assert_int_eq(D.cuModuleLoadDataEx(&m, text, 2, opts, vals), EO_CUDA_ERROR_INVALID_PTX);
    snprintf(want, sizeof want, "line %d: unsupported instruction 'brev.b32'", line);
    ck_assert_msg(strstr(log, want) != NULL, "log '%s' lacks '%s'", log, want);
    ck_assert_uint_eq((uintptr_t)vals[1], strlen(log) + 1);
    ck_assert_ptr_null(m);
    free(text);
    down();
}
END_TEST

START_TEST(param_size_mismatch_is_visible)
{
    const char *path = "tests/ptx_broken/param_size_mismatch.ptx";
    int line = expected_line(path, "param-size");
    ck_assert_int_gt(line, 0);
    up();
    eo_cu_function f = func(load(path), "fill_u64n");
    /* What a launcher written for (u64 out, u32 n, f32 value) means to pass. */
    const size_t intended[3] = {8, 4, 4};
    int mismatched = -1;
    for (size_t i = 0; i < 3; i++) {
        size_t off, size;
        CK(D.cuFuncGetParamInfo(f, i, &off, &size));
        if (size != intended[i] && mismatched < 0)
            mismatched = (int)i;
    }
    ck_assert_int_eq(mismatched, 1);
    size_t off, size;
    ck_assert_int_eq(D.cuFuncGetParamInfo(f, 3, &off, &size), EO_CUDA_ERROR_INVALID_VALUE);
    /* Through `extra` the buffer size is known, and 16 bytes is not the
     * kernel's 20. */
    unsigned char buf[16] = {0};
    size_t bufsize = sizeof buf;
    void *extra[] = {(void *)(uintptr_t)1, buf, (void *)(uintptr_t)2, &bufsize, NULL};
    ck_assert_int_eq(D.cuLaunchKernel(f, 1, 1, 1, 4, 1, 1, 0, NULL, NULL, extra),
                     EO_CUDA_ERROR_INVALID_VALUE);
    /* No parameters at all, or both ways at once. */
    ck_assert_int_eq(D.cuLaunchKernel(f, 1, 1, 1, 4, 1, 1, 0, NULL, NULL, NULL),
                     EO_CUDA_ERROR_INVALID_VALUE);
    /* The right buffer (20 bytes, n at offset 8 as the PTX says) works. */
    eo_cu_deviceptr out = upload(NULL, 16);
    unsigned char good[20] = {0};
    uint64_t n = 4;
    float v = 1.5f, host[4];
    memcpy(good, &out, 8);
    memcpy(good + 8, &n, 8);
    memcpy(good + 16, &v, 4);
    size_t goodsize = sizeof good;
    void *extra2[] = {(void *)(uintptr_t)1, good, (void *)(uintptr_t)2, &goodsize, NULL};
    CK(D.cuLaunchKernel(f, 1, 1, 1, 4, 1, 1, 0, NULL, NULL, extra2));
    CK(D.cuMemcpyDtoH(host, out, sizeof host));
    for (int i = 0; i < 4; i++)
        ck_assert_float_eq(host[i], 1.5f);
    down();
}
END_TEST

/* ---- the driver double's own rules ---------------------------------------------------- */

START_TEST(driver_reports_an_sm80_device)
{
    eo_ptxsim_driver_reset();
    eo_ptxsim_driver(&D);
    int v = 0;
    ck_assert_int_eq(D.cuDeviceGetCount(&v), EO_CUDA_ERROR_NOT_INITIALIZED);
    CK(D.cuInit(0));
    CK(D.cuDeviceGetCount(&v));
    ck_assert_int_eq(v, 1);
    static const int attr[][2] = {
        {EO_CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, 8},
        {EO_CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, 0},
        {EO_CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 108},
        {EO_CU_DEVICE_ATTRIBUTE_WARP_SIZE, 32},
        {EO_CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, 1024},
        {EO_CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK, 49152},
    };
    for (size_t i = 0; i < sizeof attr / sizeof attr[0]; i++) {
        CK(D.cuDeviceGetAttribute(&v, attr[i][0], 0));
        ck_assert_int_eq(v, attr[i][1]);
    }
    eo_cu_deviceptr p;
    ck_assert_int_eq(D.cuMemAlloc(&p, 4), EO_CUDA_ERROR_INVALID_CONTEXT); /* no context yet */
    const char *s;
    CK(D.cuGetErrorName(EO_CUDA_ERROR_ILLEGAL_ADDRESS, &s));
    ck_assert_str_eq(s, "CUDA_ERROR_ILLEGAL_ADDRESS");
    ck_assert_int_eq(D.cuGetErrorName(12345, &s), EO_CUDA_ERROR_INVALID_VALUE);
    down();
}
END_TEST

START_TEST(driver_checks_handles_memory_and_config)
{
    up();
    eo_cu_deviceptr p, q;
    CK(D.cuMemAlloc(&p, 64));
    CK(D.cuMemAlloc(&q, 64));
    /* Device addresses are not host pointers and do not overlap. */
    ck_assert_uint_ge(p, EO_PX_GLOBAL_BASE); /* 32 bits on a 32-bit host: ptxsim.h */
    ck_assert_uint_ge(q, p + 64);
    char host[80];
    ck_assert_int_eq(D.cuMemcpyHtoD(p, host, 80), EO_CUDA_ERROR_INVALID_VALUE);
    ck_assert_int_eq(D.cuMemcpyDtoH(host, p + 32, 40), EO_CUDA_ERROR_INVALID_VALUE);
    ck_assert_int_eq(D.cuMemFree(p + 4), EO_CUDA_ERROR_INVALID_VALUE);
    CK(D.cuMemsetD32(p, 0x3f800000u, 16));
    CK(D.cuMemcpyDtoD(q, p, 64));
    float f[16];
    CK(D.cuMemcpyDtoH(f, q, 64));
    ck_assert_float_eq(f[15], 1.0f);
    CK(D.cuMemFree(p));
    ck_assert_int_eq(D.cuMemFree(p), EO_CUDA_ERROR_INVALID_VALUE); /* double free */
    eo_cu_module m = load("tests/ptx_good/vector_add.ptx");
    eo_cu_function fn;
    ck_assert_int_eq(D.cuModuleGetFunction(&fn, m, "nope"), EO_CUDA_ERROR_NOT_FOUND);
    fn = func(m, "vector_add");
    void *params[] = {&q, &q, &q, &(unsigned){16}};
    ck_assert_int_eq(D.cuLaunchKernel(fn, 1, 1, 1, 2048, 1, 1, 0, NULL, params, NULL),
                     EO_CUDA_ERROR_INVALID_VALUE);
    ck_assert_int_eq(D.cuLaunchKernel(fn, 0, 1, 1, 32, 1, 1, 0, NULL, params, NULL),
                     EO_CUDA_ERROR_INVALID_VALUE);
    ck_assert_int_eq(D.cuLaunchKernel(fn, 1, 1, 1, 32, 1, 1, 49153, NULL, params, NULL),
                     EO_CUDA_ERROR_INVALID_VALUE);
    /* Block dimensions whose product wraps 64 bits to 64 threads
     * ((2^29 + 2^15 + 1)(2^29 - 2^15 + 1) = 2^58 + 1, times 64): each
     * dimension is checked against its own limit, not just the product. */
    ck_assert_int_eq(D.cuLaunchKernel(fn, 1, 1, 1, 536903681u, 536838145u, 64, 0, NULL, params,
                                      NULL),
                     EO_CUDA_ERROR_INVALID_VALUE);
    ck_assert_int_eq(D.cuLaunchKernel(fn, 1, 1, 1, 1, 2048, 1, 0, NULL, params, NULL),
                     EO_CUDA_ERROR_INVALID_VALUE);
    size_t off, size;
    CK(D.cuFuncGetParamInfo(fn, 3, &off, &size));
    ck_assert_uint_eq(off, 24);
    ck_assert_uint_eq(size, 4);
    /* Events: a fake clock that moves forward. */
    eo_cu_event a, b;
    CK(D.cuEventCreate(&a, 0));
    CK(D.cuEventCreate(&b, 0));
    CK(D.cuEventRecord(a, NULL));
    CK(D.cuLaunchKernel(fn, 1, 1, 1, 32, 1, 1, 0, NULL, params, NULL));
    CK(D.cuEventRecord(b, NULL));
    CK(D.cuEventSynchronize(b));
    float ms = -1;
    CK(D.cuEventElapsedTime(&ms, a, b));
    ck_assert_float_gt(ms, 0.0f);
    CK(D.cuEventDestroy(a));
    ck_assert_int_eq(D.cuEventDestroy(a), EO_CUDA_ERROR_INVALID_HANDLE);
    CK(D.cuEventDestroy(b));
    CK(D.cuModuleUnload(m));
    ck_assert_int_eq(D.cuModuleUnload(m), EO_CUDA_ERROR_INVALID_HANDLE);
    ck_assert_int_eq(D.cuLaunchKernel(fn, 1, 1, 1, 32, 1, 1, 0, NULL, params, NULL),
                     EO_CUDA_ERROR_INVALID_HANDLE);
    CK(D.cuMemFree(q));
    ck_assert_uint_eq(eo_ptxsim_live_allocations(), 0);
    down();
}
END_TEST

START_TEST(endless_loop_hits_the_step_limit)
{
    static const char ptx[] =
        ".version 7.0\n.target sm_80\n.address_size 64\n"
        ".visible .entry spin()\n{\n"
        "$L_top:\n"
        "    bra.uni $L_top;\n" /* line 7 */
        "}\n";
    up();
    eo_ptxsim_set_step_limit(10000);
    eo_cu_module m;
    CK(D.cuModuleLoadDataEx(&m, ptx, 0, NULL, NULL));
    CK(D.cuLaunchKernel(func(m, "spin"), 1, 1, 1, 32, 1, 1, 0, NULL, NULL, NULL));
    ck_assert_int_eq(D.cuCtxSynchronize(), 702 /* CUDA_ERROR_LAUNCH_TIMEOUT */);
    ck_assert_int_eq(eo_ptxsim_last_fault()->kind, EO_PX_FAULT_STEP_LIMIT);
    ck_assert_int_eq(eo_ptxsim_last_fault()->line, 7);
    eo_ptxsim_set_step_limit(0);
    down();
}
END_TEST

/* The interpreter without the driver: launch checks and the trace. */
START_TEST(interpreter_api_and_trace)
{
    char *text = slurp("tests/ptx_good/vector_add.ptx");
    eo_px_module *m = NULL;
    char err[128];
    ck_assert_int_eq(eo_px_module_load(text, strlen(text), &m, err, sizeof err), EO_OK);
    free(text);
    const eo_px_kernel *k = eo_px_module_kernel(m, "vector_add");
    ck_assert_ptr_nonnull(k);
    ck_assert_int_eq(eo_px_kernel_param_count(k), 4);
    ck_assert_uint_eq(eo_px_kernel_param_bytes(k), 28);
    eo_px_heap *h = eo_px_heap_new();
    uint64_t a, c;
    ck_assert_int_eq(eo_px_heap_alloc(h, 16, &a), EO_OK);
    ck_assert_int_eq(eo_px_heap_alloc(h, 16, &c), EO_OK);
    float *ha = eo_px_heap_span(h, a, 16);
    for (int i = 0; i < 4; i++)
        ha[i] = (float)i;
    unsigned char params[28];
    uint32_t n = 4;
    memcpy(params, &a, 8);
    memcpy(params + 8, &a, 8);
    memcpy(params + 16, &c, 8);
    memcpy(params + 24, &n, 4);
    eo_px_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.grid = (eo_px_dim){1, 1, 1};
    cfg.block = (eo_px_dim){4, 1, 1};
    cfg.params = params;
    cfg.params_size = 24; /* wrong: the kernel's parameters take 28 bytes */
    eo_px_fault f;
    ck_assert_int_eq(eo_px_run(k, h, &cfg, &f), EO_ERR_ARG);
    cfg.params_size = 28;
    cfg.block = (eo_px_dim){536903681u, 536838145u, 64}; /* the product wraps to 64 */
    ck_assert_int_eq(eo_px_run(k, h, &cfg, &f), EO_ERR_ARG);
    cfg.block = (eo_px_dim){4, 1, 1};
    cfg.params_size = 28;
    cfg.trace = tmpfile();
    ck_assert_ptr_nonnull(cfg.trace);
    cfg.trace_block = 0;
    cfg.trace_thread = 3;
    ck_assert_int_eq(eo_px_run(k, h, &cfg, &f), EO_OK);
    ck_assert_int_eq(f.kind, EO_PX_FAULT_NONE);
    ck_assert_float_eq(((float *)eo_px_heap_span(h, c, 16))[3], 6.0f);
    char log[8192];
    rewind(cfg.trace);
    size_t got = fread(log, 1, sizeof log - 1, cfg.trace);
    log[got] = 0;
    fclose(cfg.trace);
    ck_assert_ptr_nonnull(strstr(log, "active 0000000f"));
    ck_assert_ptr_nonnull(strstr(log, "add.rn.f32 %f3, %f1, %f2;"));
    ck_assert_ptr_nonnull(strstr(log, "thread 3: %f3 = 0x40c00000 (6)"));
    eo_px_heap_free(h);
    eo_px_module_free(m);
}
END_TEST

/* ---- the parser's refusals --------------------------------------------------------------- */

/* Case i of a table: the text must be refused with `want` in the message. */
static void expect_refused(size_t i, const char *ptx, const char *want)
{
    char err[256];
    eo_px_module *m = NULL;
    eo_status st = eo_px_module_load(ptx, strlen(ptx), &m, err, sizeof err);
    ck_assert_msg(st != EO_OK, "case %zu loaded", i);
    ck_assert_msg(strstr(err, want) != NULL, "case %zu: '%s' lacks '%s'", i, err, want);
    ck_assert_ptr_null(m);
}

START_TEST(parse_errors_name_the_line)
{
    static const struct {
        const char *body, *want;
    } cases[] = {
        {"    .reg .b32 %r<2>;\n    mov.u32 %r5, 1;\n", "line 7: unknown register '%r5'"},
        {"    bra $L_nowhere;\n", "line 6: unknown label or symbol '$L_nowhere'"},
        {"    .reg .b32 %r<2>;\n    tex.2d.v4.f32.s32 %r1, [t, {%r0, %r0}];\n",
         "line 7: unsupported instruction 'tex.2d.v4.f32.s32'"},
        {"    .reg .e4m3 %h<2>;\n", "line 6: unsupported type '.e4m3'"},
        {"    .local .b8 buf[16];\n", "line 6: unsupported directive '.local'"},
        {"    .reg .b32 %r<2>;\n    add.cc.u32 %r1, %r0, %r0;\n", "line 7: unsupported modifier '.cc'"},
        {"    .reg .b32 %r<2>;\n    bar.sync 1;\n", "line 7: unsupported: barriers other than"},
        {"    .reg .b32 %r<2>;\n    mov.u32 %r1, 1\n", "line 8: expected ',' or ';'"},
        {"    .extern .shared .b8 dyn[];\n", "line 6: .extern is only allowed at module scope"},
        {"    .reg .b32 %r<16385>;\n", "line 6: kernel 'k' declares more than 16384 registers"},
        {"    .reg .pred %p<2>;\n    shfl.bfly.b32 %p1, %p1, 1, 31, -1;\n",
         "line 7: 'shfl.bfly.b32 %p1, %p1, 1, 31, -1;': shfl without .sync"},
        {"    .reg .b32 %r<2>;\n    and.u32 %r1, %r1, %r0;\n", "line 7: 'and.u32 %r1, %r1, %r0;': "
         "and does not take type .u32"},
        {"    .reg .f32 %f<2>;\n    mov.f32 %f1, %tid.x;\n",
         "line 7: 'mov.f32 %f1, %tid.x;': special register %tid.x is .u32: it does not fit .f32"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char ptx[512];
        snprintf(ptx, sizeof ptx,
                 ".version 7.0\n.target sm_80\n.address_size 64\n.visible .entry k()\n{\n%s}\n",
                 cases[i].body);
        /* "{" is line 5, so the body starts on line 6. */
        expect_refused(i, ptx, cases[i].want);
    }
}
END_TEST

/* Kernels PTX itself forbids, each refused at load as ptxas refuses it
 * (the comment at the top of each file quotes ptxas 13.0's message), at
 * the line of its "// EXPECT <kind>" marker, with the instruction's text
 * and the reason in the message. */
static const struct {
    const char *file, *expect;
    eo_status status;
    const char *want; /* part of the message after "line N: " */
} refused[] = {
    {"too_new_for_version", "version", EO_ERR_FORMAT,
     "'tanh.approx.f32 %f2, %f1;': tanh requires PTX ISA .version 7.0 or later (the module "
     "declares 6.5)"},
    {"too_new_for_target", "target", EO_ERR_FORMAT,
     "tanh requires .target sm_75 or higher (the module declares sm_70)"},
    {"target_needs_newer_version", "target-version", EO_ERR_FORMAT,
     "PTX .version 6.4 does not support .target sm_80"},
    {"target_newer_than_device", "unsupported-target", EO_ERR_UNSUPPORTED,
     ".target sm_90 is newer than the sm_80 the interpreter models"},
    {"f32_op_on_b64", "operand-type", EO_ERR_FORMAT,
     "'add.f32 %f2, %rd1, 0f3F800000;': operand 2: register %rd1 is .b64"},
    {"vector_into_b16", "operand-type", EO_ERR_FORMAT, "register %h1 is .b16"},
    {"pred_as_data", "operand-type", EO_ERR_FORMAT, "operand 3: register %p1 is .pred"},
    {"wrong_instruction_type", "insn-type", EO_ERR_FORMAT,
     "this comparison does not apply to .b32"},
    {"missing_rounding", "rounding", EO_ERR_FORMAT,
     "cvt.f32.u32: integer to float needs .rn .rz .rm or .rp"},
    {"int_literal_for_float", "literal", EO_ERR_FORMAT, "an integer literal does not fit .f32"},
    {"shared_size_wraps", "shared-size", EO_ERR_FORMAT,
     "shared array 'big' is more than the limit of 49152 bytes"},
    {"param_align_wraps", "param-layout", EO_ERR_FORMAT,
     "'aligned_blob': offset 8 aligned to 4611686018427387904 goes past the limit"},
    {"address_in_32_bits", "address", EO_ERR_FORMAT, "address register %r1 is .b32"},
    {"guard_not_pred", "guard", EO_ERR_FORMAT, "the guard %r1 is .b32"},
    {"sreg_in_arithmetic", "sreg", EO_ERR_FORMAT,
     "special register %tid.x as an operand of add"},
};

START_TEST(what_ptxas_refuses_is_refused)
{
    char path[128], err[512], want[64];
    snprintf(path, sizeof path, "tests/ptx_broken/%s.ptx", refused[_i].file);
    int line = expected_line(path, refused[_i].expect);
    char *text = slurp(path);
    eo_px_module *m = NULL;
    eo_status st = eo_px_module_load(text, strlen(text), &m, err, sizeof err);
    free(text);
    ck_assert_msg(st == refused[_i].status, "%s: status %d, want %d (%s)", path, st,
                  refused[_i].status, err);
    ck_assert_ptr_null(m);
    snprintf(want, sizeof want, "line %d: ", line);
    ck_assert_msg(strncmp(err, want, strlen(want)) == 0, "%s: '%s' does not start '%s'", path, err,
                  want);
    ck_assert_msg(strstr(err, refused[_i].want) != NULL, "%s: '%s' lacks '%s'", path, err,
                  refused[_i].want);
}
END_TEST

/* The same rules let through what ptxas accepts, including its relaxed
 * forms: narrow loads into wide registers, bit types for floats, 16-bit
 * reads of %tid, float literals of either width for floats. */
START_TEST(what_ptxas_accepts_is_accepted)
{
    static const char ptx[] =
        ".version 7.0\n.target sm_80\n.address_size 64\n"
        ".shared .align 1048576 .b8 big[16];\n" /* a huge alignment at offset 0 */
        ".visible .entry relaxed(.param .u64 x)\n{\n"
        "    .reg .pred %p<2>;\n    .reg .b16 %h<2>;\n    .reg .b32 %r<4>;\n"
        "    .reg .f32 %f<3>;\n    .reg .b64 %rd<3>;\n    .reg .f64 %fd<2>;\n"
        "    ld.param.u64 %rd1, [x];\n"
        "    ld.global.u8 %r1, [%rd1];\n"       /* narrow load, wide register */
        "    ld.global.u32 %rd2, [%rd1];\n"
        "    ld.global.b32 %f1, [%rd1];\n"      /* a bit type for a float */
        "    ld.global.f32 %r2, [%rd1];\n"      /* a float into a bit register */
        "    add.f32 %f2, %f1, 0d3FF0000000000000;\n"
        "    add.f64 %fd1, %fd1, 0f3F800000;\n"
        "    mov.u16 %h1, %tid.x;\n"
        "    mov.b32 %f1, %tid.x;\n"
        "    cvt.rn.f32.u32 %f2, %rd2;\n"        /* a wide source for cvt */
        "    cvt.u16.u32 %r3, %r1;\n"            /* a wide destination for cvt */
        "    shl.b64 %rd2, %rd2, %r1;\n"
        "    setp.ne.b32 %p1, %f1, 0f00000000;\n"
        "    selp.b32 %f2, %r1, %f2, %p1;\n"
        "    shfl.sync.bfly.b32 %f1, %f2, 1, 31, -1;\n"
        "    st.global.u8 [%rd1], %r2;\n"
        "    st.global.b32 [%rd1], %fd1;\n"     /* a wide source for st.b32 */
        "    mov.u64 %rd2, big;\n"
        "    ret;\n}\n";
    eo_px_module *m = NULL;
    char err[512];
    ck_assert_msg(eo_px_module_load(ptx, strlen(ptx), &m, err, sizeof err) == EO_OK, "%s", err);
    ck_assert_int_eq(eo_px_module_ptx_version(m), 70);
    ck_assert_int_eq(eo_px_module_target(m), 80);
    eo_px_module_free(m);
}
END_TEST

/* The module must open with .version MAJOR.MINOR and .target, as ptxas
 * requires. */
START_TEST(module_header_is_checked)
{
    static const struct {
        const char *ptx, *want;
    } cases[] = {
        {".target sm_80\n.version 7.0\n", "line 1: missing .version directive at the start"},
        {".version 7.0\n.address_size 64\n", "line 2: missing .target directive after .version"},
        {".version 7\n.target sm_80\n", "line 1: bad .version '7'"},
        {".version 7.0\n.target sm_81\n", "line 2: unknown .target sm_81"},
        {".version 7.0\n.target gfx90a\n", "line 2: bad .target 'gfx90a'"},
        {".version 7.0\n.target sm_80, map_f64_to_f32\n", "line 2: unsupported: .target option"},
        {".version 7.0\n.target sm_80\n.version 7.0\n", "line 3: a second .version"},
        {".version 1.4\n.target sm_80\n", "line 1: unsupported: PTX ISA .version 1.4"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        expect_refused(i, cases[i].ptx, cases[i].want);
    /* compute_NN names the same architecture, and texmode options are accepted. */
    static const char ok[] = ".version 7.0\n.target compute_75, texmode_independent\n"
                             ".address_size 64\n.visible .entry k()\n{\n    ret;\n}\n";
    eo_px_module *m = NULL;
    char err[256];
    ck_assert_msg(eo_px_module_load(ok, strlen(ok), &m, err, sizeof err) == EO_OK, "%s", err);
    ck_assert_int_eq(eo_px_module_target(m), 75);
    eo_px_module_free(m);
}
END_TEST

/* Every shipped kernel in ptx/ must load in the interpreter: a kernel it
 * cannot parse is a kernel no CPU test can cover. */
START_TEST(every_shipped_kernel_loads)
{
    DIR *d = opendir("ptx");
    if (!d)
        return; /* no ptx/ folder yet */
    char failures[2048] = "";
    size_t used = 0;
    int count = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        size_t n = strlen(e->d_name);
        if (n < 5 || strcmp(e->d_name + n - 4, ".ptx") != 0)
            continue;
        char path[512], err[256];
        snprintf(path, sizeof path, "ptx/%s", e->d_name);
        char *text = slurp(path);
        eo_px_module *m = NULL;
        if (eo_px_module_load(text, strlen(text), &m, err, sizeof err) != EO_OK && used < 1800)
            used += (size_t)snprintf(failures + used, sizeof failures - used, "\n  %s: %s", path, err);
        eo_px_module_free(m);
        free(text);
        count++;
    }
    closedir(d);
    ck_assert_msg(used == 0, "%d kernel file(s) checked; these do not load:%s", count, failures);
}
END_TEST

Suite *eo_suite_ptxsim(void)
{
    Suite *s = suite_create("ptxsim");
    TCase *ok = tcase_create("correct kernels");
    tcase_add_test(ok, vector_add_exact);
    tcase_add_test(ok, cross_entropy_loss_steps);
    tcase_add_test(ok, block_reduce_exact);
    tcase_add_test(ok, warp_reduce_exact);
    tcase_add_test(ok, atomics_exact);
    tcase_add_test(ok, divergent_if_else_reconverges);
    tcase_add_test(ok, instruction_semantics);
    tcase_add_test(ok, cp_async_semantics);
    tcase_add_test(ok, cvt_16bit_rounding);
    tcase_add_test(ok, ldmatrix_fragments);
    tcase_add_test(ok, mma_m16n8k16_fragments);
    tcase_add_test(ok, every_shipped_kernel_loads);
    tcase_add_test(ok, interpreter_api_and_trace);
    suite_add_tcase(s, ok);
    TCase *bad = tcase_create("broken kernels");
    tcase_add_loop_test(bad, broken_kernel_is_caught, 0, (int)(sizeof corpus / sizeof corpus[0]));
    tcase_add_test(bad, fault_surfaces_at_memcpy);
    tcase_add_test(bad, unsupported_instruction_rejected_at_load);
    tcase_add_test(bad, param_size_mismatch_is_visible);
    tcase_add_test(bad, endless_loop_hits_the_step_limit);
    tcase_add_test(bad, parse_errors_name_the_line);
    tcase_add_loop_test(bad, what_ptxas_refuses_is_refused, 0,
                        (int)(sizeof refused / sizeof refused[0]));
    tcase_add_test(bad, what_ptxas_accepts_is_accepted);
    tcase_add_test(bad, module_header_is_checked);
    suite_add_tcase(s, bad);
    TCase *drv = tcase_create("driver double");
    tcase_add_test(drv, driver_reports_an_sm80_device);
    tcase_add_test(drv, driver_checks_handles_memory_and_config);
    suite_add_tcase(s, drv);
    return s;
}
