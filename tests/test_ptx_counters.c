/* tests/test_ptx_counters.c — the PTX interpreter's performance counters.
 *
 * Two halves.
 *
 * The counters themselves, on one-warp kernels whose right answer is known
 * by hand (tests/ptx_good/counters.ptx): 32 consecutive floats touch 4
 * sectors, a stride of two 8, a broadcast 1; 32 lanes on one bank take 32
 * shared-memory wavefronts, a broadcast 1; v2 and v4 shared accesses are
 * served per half- and quarter-warp (tools/ptxsim/count.c cites the rule).
 *
 * The production kernels (the files in ptx/), run through their CUDA launchers on
 * the driver double at small fixed shapes, against one table of expected
 * figures (`expected` below, one line per case). The figures are ratios
 * (sectors per request, sector efficiency, wavefronts per request,
 * instruction shares), so they survive unrelated edits but move when an
 * access pattern changes: a new bank conflict or an uncoalesced load fails
 * here. When a kernel is rebuilt on purpose, run this suite, copy the
 * "measured" line it prints for the case into the table, and say in the
 * commit why the numbers moved. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ops/cuda/device.h"
#include "tools/ptxsim/count.h"
#include "tools/ptxsim/driver.h"

/* ---- the counters on hand-written kernels -------------------------------------- */

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

/* Run kernel(a, stride) of counters.ptx with one warp; its counters. */
static eo_px_counters run_pattern(const char *kernel, unsigned stride)
{
    char *text = slurp("tests/ptx_good/counters.ptx"), err[256];
    eo_px_module *m = NULL;
    ck_assert_msg(eo_px_module_load(text, strlen(text), &m, err, sizeof err) == EO_OK, "%s", err);
    free(text);
    const eo_px_kernel *k = eo_px_module_kernel(m, kernel);
    ck_assert_ptr_nonnull(k);
    eo_px_heap *h = eo_px_heap_new();
    uint64_t a;
    ck_assert_int_eq(eo_px_heap_alloc(h, 32 * 64 * 4, &a), EO_OK);
    unsigned char params[16];
    memcpy(params, &a, 8);
    memcpy(params + 8, &stride, 4);
    eo_px_counters c;
    memset(&c, 0, sizeof c);
    eo_px_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.grid.x = cfg.grid.y = cfg.grid.z = 1;
    cfg.block.x = 32;
    cfg.block.y = cfg.block.z = 1;
    cfg.params = params;
    cfg.params_size = eo_px_kernel_param_bytes(k);
    cfg.counters = &c;
    eo_px_fault f;
    ck_assert_msg(eo_px_run(k, h, &cfg, &f) == EO_OK, "%s", f.msg);
    eo_px_heap_free(h);
    eo_px_module_free(m);
    return c;
}

START_TEST(global_sectors_per_request)
{
    /* 32 lanes x 4 consecutive bytes = 128 bytes = 4 sectors, all used. */
    eo_px_counters c = run_pattern("gld_stride", 1);
    ck_assert_uint_eq(c.gld.requests, 1);
    ck_assert_uint_eq(c.gld.sectors, 4);
    ck_assert_uint_eq(c.gld.bytes, 128);
    ck_assert_uint_eq(c.gst.sectors, 4);
    ck_assert_uint_eq(c.unique_sectors, 4); /* the store hits the sectors the load touched */
    ck_assert_uint_eq(c.rw_sectors, 4);     /* ... so all 4 are read and written: DRAM twice */
    ck_assert_uint_eq(c.idiv_insts, 0);
    /* A stride of 2 floats: 8 sectors, half of each unused. */
    c = run_pattern("gld_stride", 2);
    ck_assert_uint_eq(c.gld.sectors, 8);
    ck_assert(fabs(eo_px_sector_efficiency(&c.gld) - 0.5) < 1e-12);
    /* A stride of 8 floats (32 bytes): one sector per lane. */
    c = run_pattern("gld_stride", 8);
    ck_assert_uint_eq(c.gld.sectors, 32);
    /* Every lane the same address: one sector, 4 useful bytes of 32. */
    c = run_pattern("gld_stride", 0);
    ck_assert_uint_eq(c.gld.sectors, 1);
    ck_assert_uint_eq(c.gld.bytes, 4);
}
END_TEST

START_TEST(shared_bank_rule)
{
    /* 32-bit accesses: the busiest bank's distinct words. */
    static const struct { const char *k; unsigned stride, wavefronts, ideal; } cases[] = {
        {"sld32", 1, 1, 1},    /* word l: every bank once */
        {"sld32", 2, 2, 1},    /* words 2l: banks 0,2,..,30 twice each */
        {"sld32", 32, 32, 1},  /* word 32l: all 32 lanes in bank 0 */
        {"sld32", 33, 1, 1},   /* padded rows: word 33l is bank l */
        {"sld32", 0, 1, 1},    /* one word: broadcast */
        {"sst32", 32, 32, 1},  /* stores follow the same rule */
        {"sst32", 1, 1, 1},
        /* 64-bit: per half-warp of 16 lanes, 128 bytes per pass. */
        {"sld64", 1, 2, 2},    /* 16 lanes x 8 bytes fill the 32 banks: 1 pass per half */
        {"sld64", 2, 4, 2},    /* 16-byte stride: lanes l and l+8 share banks: 2 per half */
        {"sld64", 0, 2, 2},    /* broadcast within each half */
        /* 128-bit: per quarter-warp of 8 lanes. */
        {"sld128", 1, 4, 4},   /* conflict-free: 4 passes */
        {"sld128", 2, 8, 4},   /* 32-byte stride: lanes l and l+4 collide: 2 per quarter */
        {"sld128", 0, 4, 4},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        eo_px_counters c = run_pattern(cases[i].k, cases[i].stride);
        const eo_px_smem *m = cases[i].k[1] == 's' && cases[i].k[2] == 't' ? &c.sst : &c.sld;
        ck_assert_msg(m->requests == 1 && m->wavefronts == cases[i].wavefronts &&
                          m->ideal == cases[i].ideal,
                      "%s stride %u: %llu wavefronts (ideal %llu) in %llu requests, want %u (%u)",
                      cases[i].k, cases[i].stride, (unsigned long long)m->wavefronts,
                      (unsigned long long)m->ideal, (unsigned long long)m->requests,
                      cases[i].wavefronts, cases[i].ideal);
    }
}
END_TEST

START_TEST(wavefronts_partial_warp)
{
    /* Only the lanes that execute count: 8 lanes of 32 in bank 0, and a v4
     * access by one quarter-warp is one pass. */
    uint64_t addr[32];
    unsigned ideal;
    for (unsigned l = 0; l < 32; l++)
        addr[l] = 128u * l;
    ck_assert_uint_eq(px_shared_wavefronts(addr, 0xffu, 4, &ideal), 8);
    ck_assert_uint_eq(ideal, 1);
    for (unsigned l = 0; l < 32; l++)
        addr[l] = 16u * l;
    ck_assert_uint_eq(px_shared_wavefronts(addr, 0xff00u, 16, &ideal), 1);
    ck_assert_uint_eq(ideal, 1);
    /* Sub-word accesses to one word broadcast: bytes 0..31 of words 0..7. */
    for (unsigned l = 0; l < 32; l++)
        addr[l] = l;
    ck_assert_uint_eq(px_shared_wavefronts(addr, 0xffffffffu, 1, &ideal), 1);
}
END_TEST

START_TEST(instruction_classes_and_lanes)
{
    eo_px_counters c = run_pattern("gld_stride", 1);
    /* ld.param x2, mov, mul.lo, mul.wide, add.s64, ld.global, add.f32, st.global, ret */
    ck_assert_uint_eq(c.warp_insts, 10);
    ck_assert_uint_eq(c.warp_inst[EO_PX_C_LD_GLOBAL], 1);
    ck_assert_uint_eq(c.warp_inst[EO_PX_C_ST_GLOBAL], 1);
    ck_assert_uint_eq(c.warp_inst[EO_PX_C_FADD], 1);
    ck_assert_uint_eq(c.warp_inst[EO_PX_C_INT], 3);
    ck_assert_uint_eq(c.warp_inst[EO_PX_C_OTHER], 3);
    ck_assert_uint_eq(c.warp_inst[EO_PX_C_BRANCH], 1);
    ck_assert_uint_eq(c.thread_insts, 320); /* every lane, every instruction */
    ck_assert_uint_eq(c.mlp_loads, 1);
    ck_assert_uint_eq(c.load_groups, 1);
}
END_TEST

START_TEST(loads_in_flight)
{
    /* Two independent loads, then one that needs their sum for its
     * address: groups of 2 and 1 (sum k = 3, sum k^2 = 5). */
    eo_px_counters c = run_pattern("gld_pair", 1);
    ck_assert_uint_eq(c.gld.requests, 3);
    ck_assert_uint_eq(c.load_groups, 2);
    ck_assert_uint_eq(c.mlp_loads, 3);
    ck_assert_uint_eq(c.mlp_sq, 5);
}
END_TEST

/* ---- the production kernels ---------------------------------------------------------- */

static eo_cuda_driver D;
static eo_cuda CU;
static eo_exec EX;
static eo_cu_deviceptr bufs[16];
static int nbufs;

static void setup(void)
{
    char err[256];
    eo_ptxsim_driver_reset();
    eo_ptxsim_driver(&D);
    ck_assert_msg(eo_cuda_open(&CU, &D, 0, err, sizeof err) == EO_OK, "%s", err);
    EX.cuda = &CU;
    eo_ptxsim_counters_reset();
}

static void teardown(void)
{
    for (int i = 0; i < nbufs; i++)
        eo_cuda_free_block(&CU, bufs[i]);
    nbufs = 0;
    eo_cuda_close(&CU);
    eo_ptxsim_driver_reset();
}

/* n floats of `v` on the device. */
static float *fb(size_t n, float v)
{
    eo_cu_deviceptr p;
    ck_assert_int_lt(nbufs, 16);
    ck_assert_int_eq(eo_cuda_alloc_block(&CU, n * 4, &p), EO_OK);
    uint32_t bits;
    memcpy(&bits, &v, 4);
    eo_cuda_memset32(&CU, p, bits, n);
    bufs[nbufs++] = p;
    return (float *)(uintptr_t)p;
}

static void run(const char *name)
{
    if (!strncmp(name, "matmul16", 8)) { /* "matmul16 nn" etc.: bf16, 128x128x64, one block */
        int ta = name[9] == 't', tb = name[10] == 't';
        float *a = fb(128 * 64 / 2, 0.5f), *b = fb(128 * 64 / 2, 0.5f), *c = fb(128 * 128, 0);
        eo_cuda_k_matmul16(ta, tb, 1, 128, 128, 64, 2 /* EO_BF16 */, a, ta ? 128 : 64, 0, b,
                           tb ? 64 : 128, 0, 0.0f, 0 /* EO_F32 */, c, 128, 0, NULL, &EX);
    } else if (!strncmp(name, "matmul sk", 9)) {
        /* "matmul sk nt" etc.: the MLP head, 128x10x256 (split-K: 2 tiles x
         * 8 splits of one 32-k stage); "matmul sk dW": its weight gradient
         * 10x256x128, tn (thin M: computed as its transpose, C by columns) */
        int dw = name[10] == 'd', ta = dw || name[10] == 't', tb = !dw && name[11] == 't';
        int64_t M = dw ? 10 : 128, N = dw ? 256 : 10, K = dw ? 128 : 256;
        float *a = fb((size_t)(M * K), 0.5f), *b = fb((size_t)(K * N), 0.5f);
        float *c = fb((size_t)(M * N), 0);
        eo_cuda_k_matmul(ta, tb, 1, M, N, K, a, ta ? M : K, 0, b, tb ? K : N, 0, 0.0f, c, N, 0,
                         NULL, &EX);
    } else if (!strncmp(name, "matmul", 6)) { /* "matmul nn" etc., 128x128x32: one 128x128 block */
        int ta = name[7] == 't', tb = name[8] == 't';
        int64_t lda = ta ? 128 : 32, ldb = tb ? 32 : 128;
        float *a = fb(128 * 32, 0.5f), *b = fb(32 * 128, 0.5f), *c = fb(128 * 128, 0);
        eo_cuda_k_matmul(ta, tb, 1, 128, 128, 32, a, lda, 0, b, ldb, 0, 0.0f, c, 128, 0, NULL,
                         &EX);
    } else if (!strcmp(name, "softmax")) {
        float *x = fb(8 * 1024, 0.5f), *y = fb(8 * 1024, 0);
        eo_cuda_k_softmax(0, 8, 1024, x, y, NULL, &EX);
    } else if (!strcmp(name, "layernorm")) {
        float *x = fb(8 * 1024, 0.5f), *w = fb(1024, 1), *b = fb(1024, 0), *y = fb(8 * 1024, 0);
        float *m = fb(8, 0), *r = fb(8, 0);
        eo_cuda_k_layernorm(8, 1024, x, w, b, 1e-5f, y, m, r, &EX);
    } else if (!strcmp(name, "cross_entropy")) {
        float *x = fb(8 * 1024, 0.5f), *st = fb(2 * 8, 0), *loss = fb(1, 0);
        int32_t *t = (int32_t *)fb(8, 0); /* all-zero bits: class 0 */
        eo_cuda_k_cross_entropy(8, 1024, x, t, -100, EO_CE_MEAN, st, loss, &EX);
    } else if (!strcmp(name, "gelu")) {
        float *x = fb(8192, 0.5f), *y = fb(8192, 0);
        eo_cuda_k_unary(EO_UN_GELU_TANH, 8192, x, y, 0, &EX);
    } else if (!strcmp(name, "adamw")) {
        float *w = fb(8192, 0.5f), *g = fb(8192, 0.01f), *m = fb(8192, 0), *v = fb(8192, 0);
        eo_cuda_k_adamw(8192, w, g, m, v, 1e-3f, 0.9f, 0.999f, 1e-8f, 0.01f, 1, &EX);
    } else if (!strcmp(name, "attention")) { /* B 1, H 2, T 64, D 32, causal */
        size_t n = 2 * 64 * 32;
        float *q = fb(n, 0.1f), *k = fb(n, 0.1f), *v = fb(n, 0.5f), *o = fb(n, 0);
        float *lse = fb(2 * 64, 0);
        eo_cuda_k_attention(1, 2, 64, 64, 32, q, k, v, NULL, NULL, 1, 0.17f, o, lse, NULL, &EX);
    } else if (!strcmp(name, "attention64") || !strcmp(name, "attention96")) {
        /* B 1, H 1, T 128 (two query and two key tiles), D 64 or 96, causal */
        int64_t D = name[9] == '6' ? 64 : 96;
        size_t n = (size_t)(128 * D);
        float *q = fb(n, 0.1f), *k = fb(n, 0.1f), *v = fb(n, 0.5f), *o = fb(n, 0);
        float *lse = fb(128, 0);
        eo_cuda_k_attention(1, 1, 128, 128, D, q, k, v, NULL, NULL, 1, 0.125f, o, lse, NULL, &EX);
    } else if (!strcmp(name, "attention bwd") || !strcmp(name, "attention64 bwd")) {
        /* B 1, H 1, T 128 (two 64-row tiles, four 32-row blocks), D 32 or
         * 64, causal: the register-blocked backward */
        int64_t D = name[9] == '6' ? 64 : 32;
        size_t n = (size_t)(128 * D);
        float *q = fb(n, 0.1f), *k = fb(n, 0.1f), *v = fb(n, 0.5f), *o = fb(n, 0.5f);
        float *lse = fb(128, 2.0f), *dout = fb(n, 0.5f), *dq = fb(n, 0), *dk = fb(n, 0);
        float *dv = fb(n, 0);
        eo_cuda_k_attention_backward(1, 1, 128, 128, D, q, k, v, NULL, NULL, 1, 0.125f, o, lse,
                                     dout, dq, dk, dv, NULL, NULL, NULL, &EX);
    } else if (!strcmp(name, "attention16")) { /* the forward, as the backward's case */
        const uint32_t bits = 0x3E003E00u;
        float h;
        memcpy(&h, &bits, 4);
        size_t n = 128 * 64;
        float *q = fb(n / 2, h), *k = fb(n / 2, h), *v = fb(n / 2, h), *o = fb(n, 0);
        float *lse = fb(128, 0);
        ck_assert_int_eq(eo_cuda_k_attention16(1, 1, 128, 128, 64, 2 /* EO_BF16 */, q, k, v, 1,
                                               0.125f, o, lse, &EX),
                         1);
    } else if (!strcmp(name, "attention16 bwd")) {
        /* the tensor-core backward, bf16: B 1, H 1, T 128 (two 64-row tiles
         * each side), D 64, causal; 16-bit buffers are f32 buffers of n/2
         * words whose halves are both bf16 0.125 (bits 0x3E00) */
        const uint32_t bits = 0x3E003E00u;
        float h;
        memcpy(&h, &bits, 4);
        size_t n = 128 * 64;
        float *q = fb(n / 2, h), *k = fb(n / 2, h), *v = fb(n / 2, h), *d16 = fb(n / 2, h);
        float *o = fb(n, 0.5f), *lse = fb(128, 2.0f), *dout = fb(n, 0.5f), *dq = fb(n, 0);
        float *dk = fb(n, 0), *dv = fb(n, 0);
        ck_assert_int_eq(eo_cuda_k_attention16_backward(1, 1, 128, 128, 64, 2 /* EO_BF16 */, q, k,
                                                        v, 1, 0.125f, o, lse, d16, dout, dq, dk,
                                                        dv, &EX),
                         1);
    } else if (!strcmp(name, "cast16")) { /* bf16 <- f32, 8192 values */
        float *x = fb(8192, 0.5f), *y = fb(4096, 0);
        eo_cuda_cast_flat(2 /* EO_BF16 */, y, 0 /* EO_F32 */, x, 8192, &EX);
    } else if (!strcmp(name, "gelu16")) { /* 16-bit cases: f32 buffers of n/2 words hold n halves */
        float *x = fb(4096, 0.5f), *y = fb(4096, 0);
        eo_cuda_k_unary16(EO_UN_GELU_TANH, 2, 8192, x, y, 0, &EX);
    } else if (!strcmp(name, "add16")) {
        float *a = fb(4096, 0.5f), *b = fb(4096, 0.5f), *o = fb(4096, 0);
        const int64_t sh[4] = {1, 1, 1, 8192}, st[4] = {8192, 8192, 8192, 1};
        eo_cuda_k_binary16(EO_BIN_ADD, 2, sh, o, st, a, st, b, st, &EX);
    } else if (!strcmp(name, "softmax16")) {
        float *x = fb(4 * 1024, 0.5f), *y = fb(4 * 1024, 0);
        eo_cuda_k_softmax16(0, 2, 8, 1024, x, y, NULL, &EX);
    } else if (!strcmp(name, "layernorm16")) {
        float *x = fb(4 * 1024, 0.5f), *w = fb(512, 0.5f), *b = fb(512, 0), *y = fb(4 * 1024, 0);
        float *m = fb(8, 0), *r = fb(8, 0);
        eo_cuda_k_layernorm16(2, 8, 1024, x, w, b, 1e-5f, y, m, r, NULL, &EX);
    } else if (!strcmp(name, "cross_entropy16")) {
        float *x = fb(4 * 1024, 0.5f), *st = fb(2 * 8, 0), *loss = fb(1, 0);
        int32_t *t = (int32_t *)fb(8, 0);
        eo_cuda_k_cross_entropy16(2, 8, 1024, x, t, -100, EO_CE_MEAN, st, loss, NULL, &EX);
    } else if (!strcmp(name, "cross_entropy16 bwd")) {
        float *x = fb(4 * 1024, 0.5f), *st = fb(2 * 8, 0), *dl = fb(1, 0), *dx = fb(4 * 1024, 0);
        int32_t *t = (int32_t *)fb(8, 0);
        eo_cuda_k_cross_entropy_backward16(2, 8, 1024, x, t, -100, EO_CE_MEAN, st, dl, dx, NULL,
                                           &EX);
    } else if (!strcmp(name, "embedding16")) { /* 64 rows of 1024 bf16 */
        float *tab = fb(16 * 512, 0.5f), *o = fb(64 * 512, 0);
        int32_t *ids = (int32_t *)fb(64, 0);
        eo_cuda_k_embedding16(2, 64, 1024, tab, ids, o, &EX);
    } else if (!strcmp(name, "adamw16")) { /* bf16 gradient and weight copy */
        float *w = fb(8192, 0.5f), *g = fb(4096, 0.01f), *m = fb(8192, 0), *v = fb(8192, 0);
        float *w16 = fb(4096, 0);
        eo_cuda_k_adamw16(8192, w, 2, g, 1.0f, m, v, 1e-3f, 0.9f, 0.999f, 1e-8f, 0.01f, 1, 2, w16,
                          &EX);
    } else {
        ck_abort_msg("no case '%s'", name);
    }
    char msg[256];
    ck_assert_msg(eo_cuda_sync(&CU) == EO_OK && eo_cuda_take_error(&CU, msg, sizeof msg) == EO_OK,
                  "%s failed", name);
}

/* Expected counters, one line per case (-1: not checked). Columns:
 *   ld sect/req  global load sectors per request: 4.00 is 32 lanes reading
 *                32 consecutive floats; more means a spread-out access;
 *   ld eff %     global load sector efficiency: bytes used / bytes moved;
 *   st eff %     the same for global stores;
 *   sld wf/req   shared-load wavefronts per request: 1.00 is conflict-free
 *                for 32-bit accesses (2.00 for v2, 4.00 for v4);
 *   sst wf/req   the same for shared stores;
 *   ffma %       FFMA share of all warp instructions;
 *   active %     active lanes: thread instructions / (32 x warp instructions). */
static const struct expected {
    const char *cas, *kernel;
    double ld_spr, ld_eff, st_eff, sld_wf, sst_wf, ffma, active;
} expected[] = {
    /* The 128x128 SGEMM on one block (K = 32): 128-bit global loads (v4,
     * or cp.async of 16 bytes for a k-contiguous operand: 16 sectors per
     * request, all used), v4 shared loads at 4 wavefronts (a quarter-warp
     * each: no conflict); shared stores conflict-free: 1 wavefront for the
     * 4-byte stores of a transposed operand, 4 for cp.async's 16-byte ones
     * (nn mixes both: 1.6 on average; tn is cp.async only). The FFMA share
     * counts the prologue and the C stores, which weigh much at K = 32. */
    {"matmul nn", "eo_matmul", 16.00, 100.0, 100.0, 4.00, 1.60, 68.9, 97.1},
    {"matmul tn", "eo_matmul", 16.00, 100.0, 100.0, 4.00, 4.00, 69.4, 97.1},
    {"matmul nt", "eo_matmul", 16.00, 100.0, 100.0, 4.00, 1.00, 68.3, 97.2},
    /* the split-K kernel for skinny shapes (N = 10 at 128x10x256, and the
     * thin-M weight gradient 10x256x128): 4-byte cp.async copies, a warp's
     * 32 in 4 rows x 8 k (k contiguous: 4 sectors, all used) or 32
     * consecutive m (4 sectors); B's rows of 10 floats (40 bytes) straddle
     * sectors, and the last block's partial sums are 16-byte loads (16
     * sectors); shared: the copies hit 32 distinct banks (1 wavefront), the
     * v4 inner-loop loads and the k-group sums 4 (no conflict; 3.91 and
     * 1.85 are those mixed with the 1-wavefront scalar accesses). B stored
     * k x n (nn, tn): rows of 10 floats, 93 % of the sectors used; n x k
     * (nt, tt): 100 %. C's rows of 10 floats are scalar stores (82 % of
     * their sectors; the partials' v4 stores 100 %). Integer
     * work of the staging and the tiny K per block (one stage of 32) keep
     * the FFMA share low at this shape. */
    {"matmul sk nn", "eo_matmul_sk", 5.18, 93.0, 82.1, 3.91, 1.85, 25.9, 96.5},
    {"matmul sk tn", "eo_matmul_sk", 5.18, 93.0, 82.1, 3.91, 1.85, 25.9, 96.5},
    {"matmul sk nt", "eo_matmul_sk", 5.05, 100.0, 82.1, 3.91, 1.85, 25.9, 96.5},
    {"matmul sk tt", "eo_matmul_sk", 5.05, 100.0, 82.1, 3.91, 1.85, 25.9, 96.5},
    {"matmul sk dW", "eo_matmul_sk", 5.18, 93.0, 99.9, 3.91, 1.85, 25.5, 96.4},
    /* the tensor-core matmul, every transpose: ldmatrix.x4 (4 wavefronts a
     * request, one per 8x8 matrix) and the cp.async stores (16 bytes a
     * lane) without a conflict, every global sector used in full */
    {"matmul16 nn", "eo_matmul_tc_bf16", 16.00, 100.0, 100.0, 4.00, 4.00, -1, -1},
    {"matmul16 tn", "eo_matmul_tc_bf16", 16.00, 100.0, 100.0, 4.00, 4.00, -1, -1},
    {"matmul16 nt", "eo_matmul_tc_bf16", 16.00, 100.0, 100.0, 4.00, 4.00, -1, -1},
    {"matmul16 tt", "eo_matmul_tc_bf16", 16.00, 100.0, 100.0, 4.00, 4.00, -1, -1},
    /* the row in registers (16 per thread); the 8 warp results read back
     * as two 128-bit shared loads (4 wavefronts each is the v4 ideal) */
    /* exp(x - M) as ex2.approx of one multiply: no FFMA left */
    {"softmax", "eo_softmax", 4.00, 100.0, 100.0, 4.00, 1.00, 0.0, 95.3},
    /* the per-row shift K = x[r, 0] (every lane the same float) and the
     * mean/rstd stores are single sectors */
    {"layernorm", "eo_layernorm", 3.77, 98.2, 98.7, 1.00, 1.00, -1, -1},
    /* 8 rows of 1024: a warp per row, 8 loads of 32 consecutive floats in
     * flight (4 sectors each) and no shared memory; lane 0 alone reads the
     * row's target and target logit (single sectors), and the last block
     * its 8 rows' losses and targets (the 1.3 % of sectors not used); the
     * last-block flag is 1 wavefront */
    {"cross_entropy", "eo_ce_fwd", 3.80, 98.7, -1, 1.00, 1.00, -1, -1},
    /* 128-bit chunks: 16 sectors a request, every byte used */
    {"gelu", "eo_unary", 16.00, 100.0, 100.0, -1, -1, -1, -1},
    {"adamw", "eo_adamw", 16.00, 100.0, 100.0, -1, -1, -1, -1}, /* 128-bit chunks */
    /* the register-blocked forward (D <= 32, D <= 64): cp.async of 16
     * bytes (16 sectors a request, all used), every shared access a v4
     * without a conflict (4 wavefronts: the 8 lanes of a quarter-warp read
     * 8 rotated chunks, a broadcast, or 128 contiguous bytes; p^T stores
     * rotated by row); FFMA share at T 64 / 128, where the diagonal tiles'
     * masking and the prologue weigh more than at T 1024 (85 %); the
     * lse of a warp's 32 rows leave in one store (100 % of its sectors) */
    {"attention", "eo_attn_fwd32", 16.00, 100.0, 100.0, 4.00, 4.00, 69.7, 98.8},
    {"attention64", "eo_attn_fwd64", 16.00, 100.0, 100.0, 4.00, 4.00, 81.1, 99.5},
    /* the register-blocked backward (no mask, D <= 64): cp.async of 16
     * bytes, every shared access a v4 without a conflict (the forward's
     * rotations for the products over d; p and ds in rows whose chunks are
     * XOR-swizzled by the row's low bits, for the products over the other
     * side; dq's parking in lane order). Global loads: the staging (16
     * sectors a request) and per-row lse and delta reads (one sector: every
     * quarter-warp the same 32 bytes) and, in dq, delta = dout . out read
     * a float per lane (4 rows a request). FFMA share at T 128, where the
     * diagonal tiles and the prologue weigh more than at T 1024 (87 %).
     * No atomics (asserted below). */
    {"attention bwd", "eo_attn_bwd_dq32", 10.16, 98.1, 100.0, 4.00, 4.00, 75.7, 99.3},
    {"attention bwd", "eo_attn_bwd_dkv32", 12.67, 100.0, 100.0, 4.00, 4.00, 75.7, 99.4},
    {"attention64 bwd", "eo_attn_bwd_dq64", 10.33, 99.1, 100.0, 4.00, 4.00, 82.0, 99.6},
    {"attention64 bwd", "eo_attn_bwd_dkv64", 14.125, 100.0, 100.0, 4.00, 4.00, 82.4, 99.6},
    /* the tensor-core forward and backward (bf16, D 64): cp.async of 16 bytes and the
     * ldmatrix.x4 reads (4 wavefronts a request, one per 8x8 matrix: no
     * bank conflict, the plain and the .trans form) under the XOR swizzle;
     * the shared averages sit below 4 only because lse and delta are read
     * back as 4-byte (dq) and v2 broadcasts (dkv), and the 4-byte cp.async
     * of dkv's lse/delta and dq's delta stores count as such: wavefronts
     * equal the conflict-free ideal for every shared access (asserted
     * below, with the mma count). Global loads: 16-byte cp.async and, in
     * dq, the delta rows (4 rows of 128 bytes a warp) and lse (4 bytes a
     * lane). No FFMA to speak of: the products are mma. No atomics. */
    {"attention16", "eo_attn16_fwd64_bf16", 16.00, 100.0, 100.0, 4.00, 4.00, 0.0, 97.4},
    {"attention16 bwd", "eo_attn16_bwd_dq64_bf16", 13.45, 100.0, 98.5, 3.86, 3.45, 5.6, 97.8},
    {"attention16 bwd", "eo_attn16_bwd_dkv64_bf16", 10.88, 100.0, 100.0, 3.62, 3.79, 2.9, 96.9},
    /* 64 < D <= 128: the older kernel, a query row per 4 lanes (its
     * 16-byte loads of 4 rows a warp: 3.78 wavefronts, no conflict) */
    {"attention96", "eo_attn_fwd", 16.00, 100.0, 100.0, 3.78, 2.93, 42.8, 97.9},
    /* 16-bit kernels (ptx/<family>16.ptx): 16-byte loads and stores of 8
     * halves (16 sectors a request, every byte used); f32 sides (cast's
     * source, AdamW's master weights and state) are 16-byte loads too */
    {"cast16", "eo_f32_to_bf16", 16.00, 100.0, 100.0, -1, -1, -1, -1},
    {"gelu16", "eo_unary16_bf16", 16.00, 100.0, 100.0, -1, -1, -1, -1},
    {"add16", "eo_binary16_bf16", 16.00, 100.0, 100.0, -1, -1, -1, -1},
    /* the row kernels: v4 shared reads of the 8 warp results */
    {"softmax16", "eo_softmax16_bf16", 16.00, 100.0, 100.0, 4.00, 1.00, -1, -1},
    /* the per-row mean and rstd stores are single sectors */
    {"layernorm16", "eo_layernorm16_bf16", 16.00, 100.0, 97.3, 4.00, 1.00, -1, -1},
    /* per row, thread 0 alone reads x[target] and writes M, L and the loss:
     * single sectors beside the 16-byte row reads (1024 columns here) */
    {"cross_entropy16", "eo_ce16_fwd_bf16", 11.00, 97.3, 18.75, 4.00, 1.00, -1, -1},
    /* 128 groups of a 1024-column row for 256 threads: 4 warps read x and
     * dx, all 8 the row's target and stats (broadcasts) */
    {"cross_entropy16 bwd", "eo_ce16_bwd_bf16", 4.75, 86.8, 100.0, -1, -1, -1, -1},
    /* the same: 4 warps copy a 1024-value row, 8 read its id */
    {"embedding16", "eo_embedding16", 6.00, 90.3, 100.0, -1, -1, -1, -1},
    /* f32 w, m, v in 16 bytes (16 sectors), the bf16 gradient in 8 (8) */
    {"adamw16", "eo_adamw16_bf16", 14.00, 100.0, 100.0, -1, -1, -1, -1},
};

static double ratio(uint64_t a, uint64_t b) { return b ? (double)a / (double)b : 0.0; }

START_TEST(production_kernel_counters)
{
    const struct expected *e = &expected[_i];
    run(e->cas);
    eo_px_counters c;
    ck_assert_msg(eo_ptxsim_counters_of(e->kernel, &c), "%s did not launch %s", e->cas, e->kernel);
    double got[7] = {
        ratio(c.gld.sectors, c.gld.requests), 100.0 * eo_px_sector_efficiency(&c.gld),
        100.0 * eo_px_sector_efficiency(&c.gst), ratio(c.sld.wavefronts, c.sld.requests),
        ratio(c.sst.wavefronts, c.sst.requests),
        100.0 * ratio(c.warp_inst[EO_PX_C_FFMA], c.warp_insts),
        100.0 * ratio(c.thread_insts, 32 * c.warp_insts),
    };
    const double want[7] = {e->ld_spr, e->ld_eff, e->st_eff, e->sld_wf, e->sst_wf, e->ffma,
                            e->active};
    static const char *const what[7] = {"ld sect/req", "ld eff %", "st eff %", "sld wf/req",
                                        "sst wf/req", "ffma %", "active %"};
    char measured[200];
    snprintf(measured, sizeof measured, "{\"%s\", \"%s\", %.2f, %.1f, %.1f, %.2f, %.2f, %.1f, %.1f}",
             e->cas, e->kernel, got[0], got[1], got[2], got[3], got[4], got[5], got[6]);
    if (!strncmp(e->cas, "matmul16", 8)) { /* 2 M N K tensor FLOPs, 4096 an mma */
        ck_assert_uint_eq(c.tensor_flops, 2ull * 128 * 128 * 64);
        ck_assert_uint_eq(c.warp_inst[EO_PX_C_MMA] * 4096, c.tensor_flops);
    }
    /* causal T 128 in 64-row tiles: 3 tile pairs, 4 warps each; the forward
     * does 2 products of 32 mma a pair per warp, dq 3, dkv 4 */
    if (!strncmp(e->cas, "attention16", 11)) { /* the forward: 2 products */
        int dkv = strstr(e->kernel, "dkv") != NULL, fwd = strstr(e->kernel, "fwd") != NULL;
        ck_assert_uint_eq(c.warp_inst[EO_PX_C_MMA], 3u * 4 * 32 * (fwd ? 2 : dkv ? 4 : 3));
        ck_assert_uint_eq(c.tensor_flops, c.warp_inst[EO_PX_C_MMA] * 4096);
        ck_assert_uint_eq(c.sld.wavefronts, c.sld.ideal); /* ldmatrix too: no bank conflict */
        ck_assert_uint_eq(c.sst.wavefronts, c.sst.ideal);
    }
    /* 16-bit traffic is counted in bytes moved: 2 per value */
    if (!strcmp(e->cas, "gelu16") || !strcmp(e->cas, "add16")) {
        ck_assert_uint_eq(c.gld.bytes, (e->cas[0] == 'a' ? 2u : 1u) * 8192 * 2);
        ck_assert_uint_eq(c.gst.bytes, 8192 * 2);
    }
    /* the fused cross-entropy forward: one atomic per block (the count of
     * blocks done), none per element */
    if (!strcmp(e->cas, "cross_entropy"))
        ck_assert_uint_eq(c.gatom.requests, c.blocks);
    if (!strcmp(e->cas, "cast16")) {
        ck_assert_uint_eq(c.gld.bytes, 8192 * 4);
        ck_assert_uint_eq(c.gst.bytes, 8192 * 2);
    }
    /* split-K: one integer atomic per block (its tile's count of splits
     * done), no float atomics */
    if (!strncmp(e->cas, "matmul sk", 9))
        ck_assert_uint_eq(c.gatom.requests, c.blocks);
    if (strstr(e->cas, "bwd"))
        ck_assert_msg(c.gatom.requests == 0, "%s (%s): %llu atomic requests", e->cas, e->kernel,
                      (unsigned long long)c.gatom.requests);
    if (getenv("EO_COUNTERS_PRINT"))
        printf("measured: %s\n", measured);
    for (int i = 0; i < 7; i++) {
        if (want[i] < 0)
            continue;
        double tol = i == 0 || i == 3 || i == 4 ? 0.005 : 0.05;
        ck_assert_msg(fabs(got[i] - want[i]) <= tol,
                      "%s (%s): %s is %.3f, the table says %.3f; measured: %s", e->cas, e->kernel,
                      what[i], got[i], want[i], measured);
    }
}
END_TEST

/* ---- the memory-bound kernels' fast paths ---------------------------------------
 * The contiguous fast paths of the elementwise, optimizer and row kernels
 * at small shapes, one line per (case, kernel). Columns:
 *   ld sect/req, ld eff %, st eff %   as in `expected` (16.00 sectors a
 *                request is 32 lanes each reading 16 bytes: 128-bit chunks);
 *   div/warp max integer div/rem warp instructions per warp that ran: the
 *                fast paths split an index once per thread, in the prologue
 *                (a few per warp, however many elements each thread takes),
 *                never per element (eo_binary_4d: 6 per element);
 *   atomics      global atomic requests: 0 (broadcast gradients are
 *                reductions in a fixed order), except the one a block
 *                makes to count itself done where the last block of a
 *                strip finishes the column sum (eo_binary_bwd_colpart,
 *                eo_layernorm_bwd_wb_part, eo_binary16_bwd_row_*) or the
 *                partial dw, db in two levels (the one-pass layernorm
 *                backwards: also one a group of 16 blocks); those then
 *                launch nothing else (no
 *                second pass over the data, no sum kernel). */
static void run_mem(const char *name)
{
    if (!strcmp(name, "binary add")) { /* [32, 256] + [32, 256] */
        float *a = fb(8192, 0.5f), *b = fb(8192, 0.25f), *o = fb(8192, 0);
        const int64_t sh[4] = {1, 1, 32, 256}, st[4] = {8192, 8192, 256, 1};
        eo_cuda_k_binary(EO_BIN_ADD, sh, o, st, a, st, b, st, &EX);
    } else if (!strcmp(name, "bias add")) { /* [32, 256] + [256] */
        float *a = fb(8192, 0.5f), *b = fb(256, 0.25f), *o = fb(8192, 0);
        const int64_t sh[4] = {1, 1, 32, 256}, st[4] = {8192, 8192, 256, 1}, sb[4] = {0, 0, 0, 1};
        eo_cuda_k_binary(EO_BIN_ADD, sh, o, st, a, st, b, sb, &EX);
    } else if (!strcmp(name, "bias add bwd")) { /* d[32,256] and d[256] (a column sum) */
        float *g = fb(8192, 0.5f), *da = fb(8192, 0), *db = fb(256, 0);
        const int64_t sh[4] = {1, 1, 32, 256}, st[4] = {8192, 8192, 256, 1}, sb[4] = {0, 0, 0, 1};
        eo_cuda_k_binary_backward(EO_BIN_ADD, sh, g, st, NULL, st, NULL, sb, da, st, db, sb, &EX);
    } else if (!strcmp(name, "mul bwd")) { /* [32, 256] * [32, 256], both gradients */
        float *g = fb(8192, 0.5f), *a = fb(8192, 0.5f), *b = fb(8192, 2), *da = fb(8192, 0);
        float *db = fb(8192, 0);
        const int64_t sh[4] = {1, 1, 32, 256}, st[4] = {8192, 8192, 256, 1};
        eo_cuda_k_binary_backward(EO_BIN_MUL, sh, g, st, a, st, b, st, da, st, db, st, &EX);
    } else if (!strcmp(name, "row scale bwd")) { /* x [64,256] * s [64,1]: ds a row sum */
        float *g = fb(16384, 0.5f), *a = fb(16384, 0.5f), *b = fb(64, 2), *da = fb(16384, 0);
        float *db = fb(64, 0);
        const int64_t sh[4] = {1, 1, 64, 256}, st[4] = {16384, 16384, 256, 1}, sb[4] = {0, 0, 1, 0};
        eo_cuda_k_binary_backward(EO_BIN_MUL, sh, g, st, a, st, b, sb, da, st, db, sb, &EX);
    } else if (!strcmp(name, "copy")) {
        float *a = fb(8192, 0.5f), *b = fb(8192, 0);
        const int64_t sh[4] = {1, 1, 1, 8192}, st[4] = {8192, 8192, 8192, 1};
        eo_cuda_k_copy32(sh, b, st, a, st, &EX);
    } else if (!strcmp(name, "accumulate")) {
        float *a = fb(8192, 0.5f), *b = fb(8192, 0);
        const int64_t sh[4] = {1, 1, 1, 8192}, st[4] = {8192, 8192, 8192, 1};
        eo_cuda_k_accumulate(sh, b, st, a, st, &EX);
    } else if (!strcmp(name, "sgd")) {
        float *w = fb(8192, 0.5f), *g = fb(8192, 0.01f), *v = fb(8192, 0);
        eo_cuda_k_sgd(8192, w, g, v, 0.1f, 0.9f, 0, 0.01f, 1, &EX);
    } else if (!strcmp(name, "adamw")) {
        float *w = fb(8192, 0.5f), *g = fb(8192, 0.01f), *m = fb(8192, 0), *v = fb(8192, 0);
        eo_cuda_k_adamw(8192, w, g, m, v, 1e-3f, 0.9f, 0.999f, 1e-8f, 0.01f, 1, &EX);
    } else if (!strcmp(name, "layernorm bwd")) { /* [256, 256]: one pass, 256 blocks of a row */
        float *x = fb(65536, 0.5f), *w = fb(256, 1), *m = fb(256, 0.5f), *r = fb(256, 1);
        float *dy = fb(65536, 0.5f), *dx = fb(65536, 0), *dw = fb(256, 0), *db = fb(256, 0);
        eo_cuda_k_layernorm_backward(256, 256, x, w, m, r, dy, dx, dw, db, NULL, &EX);
    } else if (!strcmp(name, "dropout")) {
        float *x = fb(8192, 0.5f), *y = fb(8192, 0), *dx = fb(8192, 0);
        eo_cuda_k_dropout(8192, x, y, 0.1f, 99, &EX);
        eo_cuda_k_dropout_backward(8192, y, dx, 0.1f, 99, &EX);
    } else if (!strcmp(name, "embedding")) { /* 64 ids of width 128 */
        float *t = fb(1000 * 128, 0.5f), *o = fb(64 * 128, 0);
        int32_t *ids = (int32_t *)fb(64, 0); /* all-zero bits: id 0 */
        eo_cuda_k_embedding(64, 128, t, ids, o, &EX);
    } else if (!strcmp(name, "embedding bwd")) { /* 64 ids of width 128, all id 0 */
        float *t = fb(100 * 128, 0.5f), *d = fb(64 * 128, 0.5f);
        int32_t *ids = (int32_t *)fb(64, 0);
        eo_cuda_k_embedding_backward(64, 128, ids, d, t, &EX);
    } else if (!strcmp(name, "fill16")) { /* 16-bit cases: f32 buffers of n/2 words hold n halves */
        float *x = fb(4096, 0);
        eo_cuda_k_fill16(8192, 2, x, 0.5f, &EX);
    } else if (!strcmp(name, "add16 bwd") || !strcmp(name, "mul16 bwd")) { /* [32, 256] bf16 */
        float *g = fb(4096, 0.5f), *a = fb(4096, 0.5f), *b = fb(4096, 2), *da = fb(4096, 0);
        float *db = fb(4096, 0);
        const int64_t sh[4] = {1, 1, 32, 256}, st[4] = {8192, 8192, 256, 1};
        eo_cuda_k_binary_backward16(name[0] == 'a' ? EO_BIN_ADD : EO_BIN_MUL, 2, sh, g, st, a, st,
                                    b, st, da, st, db, st, &EX);
    } else if (!strcmp(name, "scale16 bwd")) { /* x [32, 256] * w [256], bf16: dx and dw */
        float *g = fb(4096, 0.5f), *a = fb(4096, 0.5f), *b = fb(128, 2), *da = fb(4096, 0);
        float *db = fb(128, 0);
        const int64_t sh[4] = {1, 1, 32, 256}, st[4] = {8192, 8192, 256, 1}, sb[4] = {0, 0, 0, 1};
        eo_cuda_k_binary_backward16(EO_BIN_MUL, 2, sh, g, st, a, st, b, sb, da, st, db, sb, &EX);
    } else if (!strcmp(name, "bias add16 bwd")) { /* d[256, 256] bf16 and d[256]: chunks of 8 rows */
        float *g = fb(32768, 0.5f), *da = fb(32768, 0), *db = fb(128, 0);
        const int64_t sh[4] = {1, 1, 256, 256}, st[4] = {65536, 65536, 256, 1}, sb[4] = {0, 0, 0, 1};
        eo_cuda_k_binary_backward16(EO_BIN_ADD, 2, sh, g, st, NULL, st, NULL, sb, da, st, db, sb,
                                    &EX);
    } else if (!strcmp(name, "layernorm16 bwd")) { /* [256, 256] bf16: one pass */
        float *x = fb(32768, 0.5f), *w = fb(128, 1), *m = fb(256, 0.5f), *r = fb(256, 1);
        float *dy = fb(32768, 0.5f), *dx = fb(32768, 0), *dw = fb(128, 0), *db = fb(128, 0);
        eo_cuda_k_layernorm_backward16(2, 256, 256, x, w, m, r, dy, dx, dw, db, NULL, &EX);
    } else if (!strcmp(name, "embedding16 bwd")) { /* 64 ids of width 256, bf16 */
        float *t = fb(100 * 128, 0.5f), *d = fb(64 * 128, 0.5f);
        int32_t *ids = (int32_t *)fb(64, 0);
        eo_cuda_k_embedding_backward16(2, 64, 256, ids, d, t, &EX);
    } else if (!strcmp(name, "sgd16")) { /* bf16 gradient and weight copy, momentum */
        float *w = fb(8192, 0.5f), *g = fb(4096, 0.01f), *v = fb(8192, 0), *w16 = fb(4096, 0);
        eo_cuda_k_sgd16(8192, w, 2, g, 1.0f, v, 0.1f, 0.9f, 0, 0.01f, 1, 2, w16, &EX);
    } else if (!strcmp(name, "relu bwd")) {
        float *x = fb(8192, 0.5f), *y = fb(8192, 0.5f), *dy = fb(8192, 1), *dx = fb(8192, 0);
        eo_cuda_k_unary_backward(EO_UN_RELU, 8192, x, y, dy, dx, 0, &EX);
    } else {
        ck_abort_msg("no case '%s'", name);
    }
    char msg[256];
    ck_assert_msg(eo_cuda_sync(&CU) == EO_OK && eo_cuda_take_error(&CU, msg, sizeof msg) == EO_OK,
                  "%s failed", name);
}

static const struct expected_mem {
    const char *cas, *kernel;
    double ld_spr, ld_eff, st_eff, div_max;
} expected_mem[] = {
    {"binary add", "eo_binary_fast", 16.00, 100.0, 100.0, 4.0},
    {"bias add", "eo_binary_fast", 16.00, 100.0, 100.0, 4.0},
    {"mul bwd", "eo_binary_bwd_fast", 16.00, 100.0, 100.0, 4.0},
    /* the column sum (it also does dx += dout): 32 lanes, 32 consecutive
     * columns of one row; the strip's last block adds the parts into db in
     * the same launch (no eo_colsum), and resets its counter (a 4-byte
     * store: the 0.6 % of store sectors not used) */
    {"bias add bwd", "eo_binary_bwd_colpart", 4.00, 100.0, 99.4, 0.0},
    {"row scale bwd", "eo_binary_bwd_fast", -1, -1, 100.0, 4.0},
    {"row scale bwd", "eo_binary_bwd_rows", -1, -1, -1, 0.0},
    {"copy", "eo_copy32_flat", 16.00, 100.0, 100.0, 0.0},
    {"accumulate", "eo_accumulate_flat", 16.00, 100.0, 100.0, 0.0},
    {"relu bwd", "eo_unary_bwd", 16.00, 100.0, 100.0, 0.0},
    {"sgd", "eo_sgd", 16.00, 100.0, 100.0, 0.0},
    {"dropout", "eo_dropout", 16.00, 100.0, 100.0, 0.0},
    /* the id (one per chunk, broadcast) and 16-byte table chunks */
    {"embedding", "eo_embedding", -1, -1, 100.0, 4.0},
    {"dropout", "eo_dropout_bwd", 16.00, 100.0, 100.0, 0.0},
    /* the f32 backward on the 16-bit one's lists: 64 ids, all 0, one list
     * walked by the first position's threads in 16-byte groups (16 sectors
     * a request), the link and id loads broadcasts; no atomics (was one
     * atom.global.add.f32 per element), no division */
    {"embedding bwd", "eo_embedding_bwd", 2.50, 68.6, 100.0, 0.0},
    /* one pass for dx, dw and db: x, dy, dx in 16-byte groups (mean and
     * rstd one float each: a sector for 4 bytes), the partials in 16 bytes;
     * the 16 groups' last blocks and then the last group add them (one
     * float a thread, coalesced) and reset their counters: 4-byte stores */
    {"layernorm bwd", "eo_layernorm_bwd_fused", 5.17, 93.4, 99.9, 0.0},
    {"adamw", "eo_adamw", 16.00, 100.0, 100.0, 0.0},
    /* 16-bit (bf16) kernels, ptx/<family>16.ptx: 16-byte groups of 8 halves
     * (16 sectors a request, every byte used) */
    {"fill16", "eo_fill16_bf16", -1, -1, 100.0, 0.0},
    {"add16 bwd", "eo_binary16_bwd_bf16", 16.00, 100.0, 100.0, 0.0},
    {"mul16 bwd", "eo_binary16_bwd_bf16", 16.00, 100.0, 100.0, 0.0},
    /* x * w with w a row: dx on the 16-byte kernel, w's groups at a column
     * that advances without division (2 rem a thread, in the prologue) */
    /* x * w, w a row: dx and dw in one pass (eo_binary16_bwd_row): dout, x
     * and dx in 16-byte groups (16 sectors a request), w's group once; the
     * strip's last block reads the chunk sums a float a thread (4) */
    {"scale16 bwd", "eo_binary16_bwd_row_bf16", 13.05, 100.0, 99.9, 0.0},
    /* a bias gradient: a warp's 32 columns of one dout row (64 bytes, 2
     * sectors, all used) per summed position, the position a counter (no
     * division past the prologue's 12 a warp), no atomics; then the 4
     * chunks' f32 sums added in order */
    /* a bias add: dout and dx in 16-byte groups, dx += dout, the column sums
     * in the same pass; one launch (no eo_binary16_bwd_4d, no _sum) */
    {"bias add16 bwd", "eo_binary16_bwd_row_bf16", 11.90, 100.0, 100.0, 0.0},
    /* 16-byte groups of x, dy, dx; w's groups, each row's mean and rstd
     * (broadcasts: one sector for 4 bytes) pull the average down */
    /* one pass: x, dy, dx in 16-byte groups, mean and rstd broadcasts (a
     * sector for 4 bytes) a row, the partials in 512 contiguous bytes a
     * store instruction, the two levels of sums as for f32 */
    {"layernorm16 bwd", "eo_layernorm16_bwd_fused_bf16", 4.00, 90.5, 99.9, 0.0},
    /* 64 ids, all 0 here: one list of 64 positions, walked by the first
     * position's threads in 16-byte groups; the link and id loads are
     * broadcasts. The lists themselves: the ids a thread each (4 sectors),
     * no atomics, no division */
    {"embedding16 bwd", "eo_embedding16_bwd_bf16", 2.50, 68.6, 100.0, 0.0},
    {"embedding16 bwd", "eo_embedding16_links", 4.00, 100.0, 100.0, 0.0},
    {"embedding16 bwd", "eo_embedding16_link_join", 4.00, 100.0, 100.0, 0.0},
    /* f32 w and v in 16 bytes (16 sectors), the bf16 gradient in 8 (8) */
    {"sgd16", "eo_sgd16_bf16", 13.33, 100.0, 100.0, 0.0},
};

START_TEST(memory_bound_fast_paths)
{
    const struct expected_mem *e = &expected_mem[_i];
    run_mem(e->cas);
    eo_px_counters c;
    ck_assert_msg(eo_ptxsim_counters_of(e->kernel, &c), "%s did not launch %s", e->cas, e->kernel);
    double got[4] = {ratio(c.gld.sectors, c.gld.requests), 100.0 * eo_px_sector_efficiency(&c.gld),
                     100.0 * eo_px_sector_efficiency(&c.gst),
                     ratio(c.idiv_insts, c.blocks_run * ((c.threads_per_block + 31) / 32))};
    char measured[200];
    snprintf(measured, sizeof measured, "{\"%s\", \"%s\", %.2f, %.1f, %.1f, %.2f}", e->cas,
             e->kernel, got[0], got[1], got[2], got[3]);
    const double want[3] = {e->ld_spr, e->ld_eff, e->st_eff};
    for (int i = 0; i < 3; i++)
        ck_assert_msg(want[i] < 0 || fabs(got[i] - want[i]) <= (i == 0 ? 0.005 : 0.05),
                      "%s (%s): column %d is %.3f, the table says %.3f; measured: %s", e->cas,
                      e->kernel, i, got[i], want[i], measured);
    ck_assert_msg(got[3] <= e->div_max, "%s (%s): %.2f integer div/rem a warp, above %.2f; measured: %s",
                  e->cas, e->kernel, got[3], e->div_max, measured);
    const int counted = !strcmp(e->kernel, "eo_binary_bwd_colpart") ||
                        !strcmp(e->kernel, "eo_layernorm_bwd_wb_part") ||
                        !strcmp(e->kernel, "eo_layernorm_bwd_fused") ||
                        !strcmp(e->kernel, "eo_layernorm16_bwd_fused_bf16") ||
                        !strcmp(e->kernel, "eo_binary16_bwd_row_bf16");
    uint64_t atoms = counted ? c.blocks_run : 0;
    if (strstr(e->kernel, "_bwd_fused")) /* and one a group of 16 blocks (the two-level sum) */
        atoms += (c.blocks_run + 15) / 16;
    ck_assert_msg(c.gatom.requests == atoms, "%s (%s): %llu atomic requests; measured: %s",
                  e->cas, e->kernel, (unsigned long long)c.gatom.requests, measured);
    if (atoms) /* one launch: no second pass over the data, no sum kernel */
        ck_assert(!eo_ptxsim_counters_of("eo_colsum", NULL) &&
                  !eo_ptxsim_counters_of("eo_layernorm_bwd_wb_sum", NULL) &&
                  !eo_ptxsim_counters_of("eo_layernorm_bwd_dx", NULL) &&
                  !eo_ptxsim_counters_of("eo_layernorm16_bwd_dx_bf16", NULL) &&
                  !eo_ptxsim_counters_of("eo_layernorm16_bwd_wb_sum_bf16", NULL) &&
                  !eo_ptxsim_counters_of("eo_binary16_bwd_bf16", NULL) &&
                  !eo_ptxsim_counters_of("eo_binary16_bwd_sum_bf16", NULL));
    /* and nothing on the 4-D kernels */
    ck_assert(!eo_ptxsim_counters_of("eo_binary_bwd_4d", NULL));
    ck_assert(!eo_ptxsim_counters_of("eo_binary_4d", NULL));
}
END_TEST

/* The driver double keeps the last launch and a per-kernel total. */
START_TEST(driver_keeps_totals)
{
    run("gelu");
    run("gelu");
    eo_px_counters c;
    ck_assert(eo_ptxsim_counters_of("eo_unary", &c));
    const eo_px_counters *last = eo_ptxsim_last_counters();
    ck_assert_uint_eq(c.launches, 2);
    ck_assert_uint_eq(last->launches, 1);
    ck_assert_uint_eq(c.warp_insts, 2 * last->warp_insts);
    const char *name;
    ck_assert(eo_ptxsim_kernel_counters(0, &name, NULL));
    ck_assert_str_eq(name, "eo_unary");
    ck_assert(!eo_ptxsim_kernel_counters(1, NULL, NULL));
    /* Sampling runs fewer blocks and says so. */
    eo_ptxsim_counters_reset();
    eo_ptxsim_set_sample(4);
    run("gelu");
    eo_ptxsim_set_sample(0);
    ck_assert(eo_ptxsim_counters_of("eo_unary", &c));
    ck_assert_uint_eq(c.blocks_run, 4);
    ck_assert_uint_eq(c.blocks, 8); /* 8192 elements in chunks of 4, 256 threads a block */
}
END_TEST

Suite *eo_suite_ptx_counters(void)
{
    Suite *s = suite_create("ptx_counters");
    TCase *t = tcase_create("hand-written");
    tcase_add_test(t, global_sectors_per_request);
    tcase_add_test(t, shared_bank_rule);
    tcase_add_test(t, wavefronts_partial_warp);
    tcase_add_test(t, instruction_classes_and_lanes);
    tcase_add_test(t, loads_in_flight);
    suite_add_tcase(s, t);
    TCase *p = tcase_create("production");
    tcase_add_checked_fixture(p, setup, teardown);
    tcase_set_timeout(p, 60);
    tcase_add_loop_test(p, production_kernel_counters, 0,
                        (int)(sizeof expected / sizeof *expected));
    tcase_add_loop_test(p, memory_bound_fast_paths, 0,
                        (int)(sizeof expected_mem / sizeof *expected_mem));
    tcase_add_test(p, driver_keeps_totals);
    suite_add_tcase(s, p);
    return s;
}
