/* tools/bench/bench_sim.c — `eo-bench --device sim`: how fast the PTX
 * kernels would be on real GPUs, ESTIMATED on a machine without one.
 *
 * Each case runs the CUDA backend's own launcher (the function training
 * calls) at a real training shape, through the PTX interpreter's driver
 * double with counting on; the performance model (perfmodel.h) turns each
 * launched kernel's counters into a time per GPU, and a case's time is the
 * sum over its kernels. At large shapes the interpreter runs only a
 * sample of blocks (adjacent pairs spread over the grid, eo_px_config's
 * sample_blocks) and the model scales per-block counts to the grid; the
 * table says how many blocks ran. Results of a sampled run are
 * incomplete, which does not matter: only the counters are read.
 *
 * Inputs are constant fills (0.5, or valid class indices), which is what
 * the counters need: no kernel here branches on data values except on
 * masks and targets, which are set to their common case. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "ops/cuda/device.h"
#include "ops/cuda/launch.h"
#include "ops/cuda/ptx.h"
#include "tools/bench/bench_sim.h"
#include "tools/bench/perfmodel.h"
#include "tools/ptxsim/driver.h"

#define MAX_BUFS 12

typedef struct sim {
    eo_cuda cu;
    eo_exec ex;
    eo_cu_deviceptr buf[MAX_BUFS];
    int nbuf;
    int failed;
} sim;

/* A device buffer of n floats holding `fill` everywhere. */
static float *dbuf(sim *s, size_t n, float fill)
{
    eo_cu_deviceptr p = 0;
    if (s->nbuf == MAX_BUFS || eo_cuda_alloc_block(&s->cu, n * 4, &p) != EO_OK) {
        s->failed = 1;
        return NULL;
    }
    uint32_t bits;
    memcpy(&bits, &fill, 4);
    eo_cuda_memset32(&s->cu, p, bits, n);
    s->buf[s->nbuf++] = p;
    return (float *)(uintptr_t)p;
}

static int32_t *ibuf(sim *s, size_t n, int32_t value)
{
    eo_cu_deviceptr p = 0;
    if (s->nbuf == MAX_BUFS || eo_cuda_alloc_block(&s->cu, n * 4, &p) != EO_OK) {
        s->failed = 1;
        return NULL;
    }
    eo_cuda_memset32(&s->cu, p, (uint32_t)value, n);
    s->buf[s->nbuf++] = p;
    return (int32_t *)(uintptr_t)p;
}

static void free_all(sim *s)
{
    for (int i = 0; i < s->nbuf; i++)
        eo_cuda_free_block(&s->cu, s->buf[i]);
    s->nbuf = 0;
}

/* ---- the cases ------------------------------------------------------------------ */

typedef struct bcase {
    const char *kernel, *shape;
    int64_t a, b, c, d;     /* sizes, meaning per case */
    int variant;            /* transposes, log, ... */
    double work;            /* bytes the contract forces, or flops (matmul, attention) */
    int flops;              /* work is flops */
    unsigned sample;        /* blocks to run (0: all) */
    void (*run)(sim *, const struct bcase *);
} bcase;

static void run_matmul(sim *s, const bcase *c)
{
    int64_t M = c->a, N = c->b, K = c->c;
    int ta = c->variant & 1, tb = (c->variant >> 1) & 1;
    float *A = dbuf(s, (size_t)(M * K), 0.5f), *B = dbuf(s, (size_t)(K * N), 0.5f);
    float *C = dbuf(s, (size_t)(M * N), 0.0f);
    if (s->failed)
        return;
    eo_cuda_k_matmul(ta, tb, 1, M, N, K, A, ta ? M : K, 0, B, tb ? K : N, 0, 0.0f, C, N, 0, NULL,
                     &s->ex);
    /* A sampled run of the split-K kernel leaves its tiles' counters of
     * finished splits part-way (the tiles' other blocks never ran): zero
     * them, as a whole run would have left them, for the cases after. */
    eo_cuda_memset32(&s->cu, s->cu.scratch + EO_CU_SCRATCH_COLDONE, 0, EO_CU_COLDONE_STRIPS);
}

/* The tensor-core matmul: variant 0 bf16, 1 f16 (nn, f32 C). 16-bit
 * buffers hold 0.5 (bf16 0x3f00, f16 0x3800), filled as pairs. */
static void run_matmul16(sim *s, const bcase *c)
{
    int64_t M = c->a, N = c->b, K = c->c;
    int f16 = c->variant == 1;
    uint32_t half_pair = f16 ? 0x38003800u : 0x3f003f00u;
    float fill;
    memcpy(&fill, &half_pair, 4);
    float *A = dbuf(s, (size_t)(M * K + 1) / 2, fill), *B = dbuf(s, (size_t)(K * N + 1) / 2, fill);
    float *C = dbuf(s, (size_t)(M * N), 0.0f);
    if (s->failed)
        return;
    int dt = f16 ? 3 : 2; /* EO_F16, EO_BF16 */
    eo_cuda_k_matmul16(0, 0, 1, M, N, K, dt, A, K, 0, B, N, 0, 0.0f, 0 /* EO_F32 */, C, N, 0, NULL,
                       &s->ex);
}

static void run_softmax(sim *s, const bcase *c)
{
    size_t n = (size_t)(c->a * c->b);
    float *x = dbuf(s, n, 0.5f), *y = dbuf(s, n, 0.0f);
    if (!s->failed)
        eo_cuda_k_softmax(c->variant, c->a, c->b, x, y, NULL, &s->ex);
}

static void run_softmax_bwd(sim *s, const bcase *c)
{
    size_t n = (size_t)(c->a * c->b);
    float *y = dbuf(s, n, 0.001f), *dy = dbuf(s, n, 0.5f), *dx = dbuf(s, n, 0.0f);
    if (!s->failed)
        eo_cuda_k_softmax_backward(c->variant, c->a, c->b, y, dy, dx, &s->ex);
}

static void run_layernorm(sim *s, const bcase *c)
{
    size_t n = (size_t)(c->a * c->b);
    float *x = dbuf(s, n, 0.5f), *w = dbuf(s, (size_t)c->b, 1.0f), *b = dbuf(s, (size_t)c->b, 0.0f);
    float *y = dbuf(s, n, 0.0f), *m = dbuf(s, (size_t)c->a, 0.0f), *r = dbuf(s, (size_t)c->a, 0.0f);
    if (!s->failed)
        eo_cuda_k_layernorm(c->a, c->b, x, w, b, 1e-5f, y, m, r, &s->ex);
}

static void run_layernorm_bwd(sim *s, const bcase *c)
{
    size_t n = (size_t)(c->a * c->b);
    float *x = dbuf(s, n, 0.5f), *w = dbuf(s, (size_t)c->b, 1.0f), *m = dbuf(s, (size_t)c->a, 0.5f);
    float *r = dbuf(s, (size_t)c->a, 1.0f), *dy = dbuf(s, n, 0.5f), *dx = dbuf(s, n, 0.0f);
    float *dw = dbuf(s, (size_t)c->b, 0.0f), *db = dbuf(s, (size_t)c->b, 0.0f);
    if (!s->failed)
        eo_cuda_k_layernorm_backward(c->a, c->b, x, w, m, r, dy, dx, dw, db, NULL, &s->ex);
}

static void run_xent(sim *s, const bcase *c)
{
    /* stats: each row's max and log-sum of exps */
    float *x = dbuf(s, (size_t)(c->a * c->b), 0.5f), *st = dbuf(s, 2 * (size_t)c->a, 0.0f);
    float *loss = dbuf(s, 1, 0.0f);
    int32_t *t = ibuf(s, (size_t)c->a, 1);
    if (!s->failed)
        eo_cuda_k_cross_entropy(c->a, c->b, x, t, -100, EO_CE_MEAN, st, loss, &s->ex);
}

static void run_xent_bwd(sim *s, const bcase *c)
{
    size_t n = (size_t)(c->a * c->b);
    float *x = dbuf(s, n, 0.5f), *st = dbuf(s, 2 * (size_t)c->a, 1.0f), *dl = dbuf(s, 1, 1.0f);
    float *dx = dbuf(s, n, 0.0f);
    int32_t *t = ibuf(s, (size_t)c->a, 1);
    if (!s->failed)
        eo_cuda_k_cross_entropy_backward(c->a, c->b, x, t, -100, EO_CE_MEAN, st, dl, dx, &s->ex);
}

static void run_gelu(sim *s, const bcase *c)
{
    size_t n = (size_t)(c->a * c->b);
    float *x = dbuf(s, n, 0.5f), *y = dbuf(s, n, 0.0f);
    if (!s->failed)
        eo_cuda_k_unary(EO_UN_GELU_TANH, (int64_t)n, x, y, 0.0f, &s->ex);
}

static void run_adamw(sim *s, const bcase *c)
{
    size_t n = (size_t)(c->a * c->b);
    float *w = dbuf(s, n, 0.5f), *g = dbuf(s, n, 0.01f), *m = dbuf(s, n, 0.0f);
    float *v = dbuf(s, n, 0.0f);
    if (!s->failed)
        eo_cuda_k_adamw((int64_t)n, w, g, m, v, 1e-3f, 0.9f, 0.999f, 1e-8f, 0.01f, 3, &s->ex);
}

/* The elementwise family at [a, b]: variant 0 a + b (both full), 1 a + bias
 * [b] (the row pattern). */
static void run_binary(sim *s, const bcase *c)
{
    size_t n = (size_t)(c->a * c->b);
    float *x = dbuf(s, n, 0.5f), *y = dbuf(s, c->variant ? (size_t)c->b : n, 0.25f);
    float *o = dbuf(s, n, 0.0f);
    const int64_t sh[4] = {1, 1, c->a, c->b}, st[4] = {(int64_t)n, (int64_t)n, c->b, 1};
    const int64_t sb[4] = {0, 0, c->variant ? 0 : c->b, 1};
    if (!s->failed)
        eo_cuda_k_binary(EO_BIN_ADD, sh, o, st, x, st, y, sb, &s->ex);
}

/* Backward: variant 0 add with both gradients full, 1 a bias add (da full,
 * db the column sum), 2 x * w with w a [b] row (both read; dw a column sum). */
static void run_binary_bwd(sim *s, const bcase *c)
{
    size_t n = (size_t)(c->a * c->b), nb = c->variant ? (size_t)c->b : n;
    float *g = dbuf(s, n, 0.5f), *x = dbuf(s, n, 0.5f), *w = dbuf(s, nb, 0.25f);
    float *da = dbuf(s, n, 0.0f), *db = dbuf(s, nb, 0.0f);
    const int64_t sh[4] = {1, 1, c->a, c->b}, st[4] = {(int64_t)n, (int64_t)n, c->b, 1};
    const int64_t sb[4] = {0, 0, c->variant ? 0 : c->b, 1};
    eo_binop op = c->variant == 2 ? EO_BIN_MUL : EO_BIN_ADD;
    if (!s->failed)
        eo_cuda_k_binary_backward(op, sh, g, st, x, st, w, sb, da, st, db, sb, &s->ex);
}

/* variant 0 copy, 1 accumulate, 2 fill */
static void run_copy(sim *s, const bcase *c)
{
    size_t n = (size_t)(c->a * c->b);
    float *x = dbuf(s, n, 0.5f), *y = dbuf(s, n, 0.0f);
    const int64_t sh[4] = {1, 1, c->a, c->b}, st[4] = {(int64_t)n, (int64_t)n, c->b, 1};
    if (s->failed)
        return;
    if (c->variant == 0)
        eo_cuda_k_copy32(sh, y, st, x, st, &s->ex);
    else if (c->variant == 1)
        eo_cuda_k_accumulate(sh, y, st, x, st, &s->ex);
    else
        eo_cuda_k_fill((int64_t)n, y, 1.0f, &s->ex);
}

static void run_relu_bwd(sim *s, const bcase *c)
{
    size_t n = (size_t)(c->a * c->b);
    float *x = dbuf(s, n, 0.5f), *y = dbuf(s, n, 0.5f), *dy = dbuf(s, n, 1.0f);
    float *dx = dbuf(s, n, 0.0f);
    if (!s->failed)
        eo_cuda_k_unary_backward(EO_UN_RELU, (int64_t)n, x, y, dy, dx, 0.0f, &s->ex);
}

static void run_sgd(sim *s, const bcase *c)
{
    size_t n = (size_t)(c->a * c->b);
    float *w = dbuf(s, n, 0.5f), *g = dbuf(s, n, 0.01f), *v = dbuf(s, n, 0.0f);
    if (!s->failed)
        eo_cuda_k_sgd((int64_t)n, w, g, v, 0.1f, 0.9f, 0.0f, 0.01f, 0, &s->ex);
}

/* variant 0 forward, 1 backward */
static void run_dropout(sim *s, const bcase *c)
{
    size_t n = (size_t)(c->a * c->b);
    float *x = dbuf(s, n, 0.5f), *y = dbuf(s, n, 0.0f);
    if (s->failed)
        return;
    if (c->variant)
        eo_cuda_k_dropout_backward((int64_t)n, x, y, 0.1f, 1234, &s->ex);
    else
        eo_cuda_k_dropout((int64_t)n, x, y, 0.1f, 1234, &s->ex);
}

/* a ids of width b from a table of 50257 rows, distinct ids (each row of
 * the table read once, as the byte count assumes); variant 1 the backward;
 * variant 2 the backward into a table of c rows, ids i*31 % c (each id
 * about a/c times: the char-GPT's token embedding), every block run */
static void run_embedding(sim *s, const bcase *c)
{
    size_t n = (size_t)(c->a * c->b);
    int64_t vocab = c->variant == 2 ? c->c : 50257;
    float *t = dbuf(s, (size_t)vocab * (size_t)c->b, 0.5f), *o = dbuf(s, n, 0.0f);
    int32_t *ids = ibuf(s, (size_t)c->a, 7);
    int32_t *host = s->failed ? NULL : malloc((size_t)c->a * sizeof *host);
    if (!host)
        s->failed = 1;
    if (s->failed)
        return;
    for (int64_t i = 0; i < c->a; i++)
        host[i] = (int32_t)(c->variant == 2 ? (i * 31) % vocab : (i * 12289) % 50257);
    eo_cuda_h2d(&s->cu, (eo_cu_deviceptr)(uintptr_t)ids, host, (size_t)c->a * sizeof *host);
    free(host);
    /* Distinct ids, sampled: the lists the backward follows (no next
     * occurrence anywhere) already in the work buffer, as in
     * run_embedding16_bwd, since a sampled run of the list pre-pass writes
     * only its sampled blocks' entries. */
    if (c->variant == 1)
        eo_cuda_memset32(&s->cu, s->cu.scratch + EO_CU_SCRATCH_WORK, 0x7fffffffu,
                         EO_CU_WORK_BYTES / 4);
    if (c->variant)
        eo_cuda_k_embedding_backward(c->a, c->b, ids, o, t, &s->ex);
    else
        eo_cuda_k_embedding(c->a, c->b, t, ids, o, &s->ex);
}

/* B, H, T, D in a, b, c, d; causal. */
static void run_attention(sim *s, const bcase *c)
{
    size_t n = (size_t)(c->a * c->b * c->c * c->d);
    float *q = dbuf(s, n, 0.1f), *k = dbuf(s, n, 0.1f), *v = dbuf(s, n, 0.5f);
    float *o = dbuf(s, n, 0.0f), *lse = dbuf(s, (size_t)(c->a * c->b * c->c), 0.0f);
    if (s->failed)
        return;
    float scale = 0.125f;
    if (!c->variant) {
        eo_cuda_k_attention(c->a, c->b, c->c, c->c, c->d, q, k, v, NULL, NULL, 1, scale, o, lse,
                            NULL, &s->ex);
        return;
    }
    float *dout = dbuf(s, n, 0.5f), *dq = dbuf(s, n, 0.0f), *dk = dbuf(s, n, 0.0f);
    float *dv = dbuf(s, n, 0.0f);
    if (!s->failed)
        eo_cuda_k_attention_backward(c->a, c->b, c->c, c->c, c->d, q, k, v, NULL, NULL, 1, scale,
                                     o, lse, dout, dq, dk, dv, NULL, NULL, NULL, &s->ex);
}

/* ---- the 16-bit (bf16) kernels: buffers of n bf16 values, filled in pairs */

static void *hbuf(sim *s, size_t n, float value)
{
    uint32_t u;
    memcpy(&u, &value, 4);
    uint32_t pair = (u >> 16) | (u & 0xffff0000u); /* value truncated to bf16, twice */
    float fill;
    memcpy(&fill, &pair, 4);
    return dbuf(s, (n + 1) / 2, fill);
}

enum { BF16 = 2 };

static void run_matmul16_out16(sim *s, const bcase *c)
{
    int64_t M = c->a, N = c->b, K = c->c;
    int ta = c->variant & 1, tb = (c->variant >> 1) & 1;
    void *A = hbuf(s, (size_t)(M * K), 0.5f), *B = hbuf(s, (size_t)(K * N), 0.5f);
    void *C = hbuf(s, (size_t)(M * N), 0.0f);
    if (!s->failed)
        eo_cuda_k_matmul16(ta, tb, 1, M, N, K, BF16, A, ta ? M : K, 0, B, tb ? K : N, 0, 0.0f,
                           BF16, C, N, 0, NULL, &s->ex);
}

/* The tensor-core attention forward (variant 0) and backward (1) (ptx/attention_tc.ptx), bf16 q, k, v,
 * dout; f32 out, dout, lse, dq, dk, dv. B, H, T, D in a, b, c, d; causal. */
static void run_attention16(sim *s, const bcase *c)
{
    size_t n = (size_t)(c->a * c->b * c->c * c->d);
    void *q = hbuf(s, n, 0.1f), *k = hbuf(s, n, 0.1f), *v = hbuf(s, n, 0.5f);
    void *d16 = hbuf(s, n, 0.5f);
    float *o = dbuf(s, n, 0.0f), *lse = dbuf(s, (size_t)(c->a * c->b * c->c), 0.0f);
    float *dout = dbuf(s, n, 0.5f), *dq = dbuf(s, n, 0.0f), *dk = dbuf(s, n, 0.0f);
    float *dv = dbuf(s, n, 0.0f);
    if (!s->failed && !c->variant)
        eo_cuda_k_attention16(c->a, c->b, c->c, c->c, c->d, BF16, q, k, v, 1, 0.125f, o, lse,
                              &s->ex);
    else if (!s->failed)
        eo_cuda_k_attention16_backward(c->a, c->b, c->c, c->c, c->d, BF16, q, k, v, 1, 0.125f, o,
                                       lse, d16, dout, dq, dk, dv, &s->ex);
}

static void run_softmax16(sim *s, const bcase *c)
{
    size_t n = (size_t)(c->a * c->b);
    void *x = hbuf(s, n, 0.5f), *y = hbuf(s, n, 0.0f);
    if (!s->failed)
        eo_cuda_k_softmax16(c->variant, BF16, c->a, c->b, x, y, NULL, &s->ex);
}

static void run_softmax16_bwd(sim *s, const bcase *c)
{
    size_t n = (size_t)(c->a * c->b);
    void *y = hbuf(s, n, 0.001f), *dy = hbuf(s, n, 0.5f), *dx = hbuf(s, n, 0.0f);
    if (!s->failed)
        eo_cuda_k_softmax_backward16(c->variant, BF16, c->a, c->b, y, dy, dx, NULL, &s->ex);
}

static void run_layernorm16(sim *s, const bcase *c)
{
    size_t n = (size_t)(c->a * c->b);
    void *x = hbuf(s, n, 0.5f), *w = hbuf(s, (size_t)c->b, 1.0f), *b = hbuf(s, (size_t)c->b, 0.0f);
    void *y = hbuf(s, n, 0.0f);
    float *m = dbuf(s, (size_t)c->a, 0.0f), *r = dbuf(s, (size_t)c->a, 0.0f);
    if (!s->failed)
        eo_cuda_k_layernorm16(BF16, c->a, c->b, x, w, b, 1e-5f, y, m, r, NULL, &s->ex);
}

static void run_xent16(sim *s, const bcase *c)
{
    void *x = hbuf(s, (size_t)(c->a * c->b), 0.5f), *loss = hbuf(s, 2, 0.0f);
    float *st = dbuf(s, 2 * (size_t)c->a, 0.0f);
    int32_t *t = ibuf(s, (size_t)c->a, 1);
    if (!s->failed)
        eo_cuda_k_cross_entropy16(BF16, c->a, c->b, x, t, -100, EO_CE_MEAN, st, loss, NULL,
                                  &s->ex);
}

static void run_xent16_bwd(sim *s, const bcase *c)
{
    size_t n = (size_t)(c->a * c->b);
    void *x = hbuf(s, n, 0.5f), *dl = hbuf(s, 2, 1.0f), *dx = hbuf(s, n, 0.0f);
    float *st = dbuf(s, 2 * (size_t)c->a, 1.0f);
    int32_t *t = ibuf(s, (size_t)c->a, 1);
    if (!s->failed)
        eo_cuda_k_cross_entropy_backward16(BF16, c->a, c->b, x, t, -100, EO_CE_MEAN, st, dl, dx,
                                           NULL, &s->ex);
}

static void run_gelu16(sim *s, const bcase *c)
{
    size_t n = (size_t)(c->a * c->b);
    void *x = hbuf(s, n, 0.5f), *y = hbuf(s, n, 0.0f);
    if (!s->failed)
        eo_cuda_k_unary16(EO_UN_GELU_TANH, BF16, (int64_t)n, x, y, 0.0f, &s->ex);
}

static void run_add16(sim *s, const bcase *c)
{
    size_t n = (size_t)(c->a * c->b);
    void *a = hbuf(s, n, 0.5f), *b = hbuf(s, n, 0.5f), *o = hbuf(s, n, 0.0f);
    const int64_t sh[4] = {1, 1, c->a, c->b}, st[4] = {0, 0, c->b, 1};
    if (!s->failed)
        eo_cuda_k_binary16(EO_BIN_ADD, BF16, sh, o, st, a, st, b, st, &s->ex);
}

static void run_cast16(sim *s, const bcase *c)
{
    size_t n = (size_t)(c->a * c->b);
    float *x = dbuf(s, n, 0.5f);
    void *y = hbuf(s, n, 0.0f);
    if (!s->failed)
        eo_cuda_cast_flat(BF16, y, 0 /* EO_F32 */, x, (int64_t)n, &s->ex);
}

/* a [rows, dim] gather of distinct rows (id 7 i mod rows) from a table of
 * as many rows, so every row read is a different one, as in a batch */
static void run_embedding16(sim *s, const bcase *c)
{
    static int32_t ids[4096];
    void *tab = hbuf(s, (size_t)(c->a * c->b), 0.5f);
    void *o = hbuf(s, (size_t)(c->a * c->b), 0.0f);
    int32_t *idx = ibuf(s, (size_t)c->a, 0);
    if (s->failed || c->a > 4096)
        return;
    for (int64_t i = 0; i < c->a; i++)
        ids[i] = (int32_t)((7 * i) % c->a);
    if (eo_cuda_h2d(&s->cu, (eo_cu_deviceptr)(uintptr_t)idx, ids, (size_t)c->a * 4) != EO_OK) {
        s->failed = 1;
        return;
    }
    eo_cuda_k_embedding16(BF16, c->a, c->b, tab, idx, o, &s->ex);
}

static void run_adamw16(sim *s, const bcase *c)
{
    size_t n = (size_t)(c->a * c->b);
    float *w = dbuf(s, n, 0.5f), *m = dbuf(s, n, 0.0f), *v = dbuf(s, n, 0.0f);
    void *g = hbuf(s, n, 0.01f), *w16 = hbuf(s, n, 0.0f);
    if (!s->failed)
        eo_cuda_k_adamw16((int64_t)n, w, BF16, g, 1.0f, m, v, 1e-3f, 0.9f, 0.999f, 1e-8f, 0.01f,
                          3, BF16, w16, &s->ex);
}

/* The 16-bit backward kernels, fill and SGD: variant 0 fill */
static void run_fill16(sim *s, const bcase *c)
{
    size_t n = (size_t)(c->a * c->b);
    void *x = hbuf(s, n, 0.0f);
    if (!s->failed)
        eo_cuda_k_fill16((int64_t)n, BF16, x, 0.5f, &s->ex);
}

/* as run_binary_bwd: variant 0 add with both gradients full, 1 a bias add
 * (da full, db summed over the rows), 2 mul with both full, 3 x * w with w
 * a [b] row (dx through the strided kernel, dw summed over the rows) */
static void run_binary16_bwd(sim *s, const bcase *c)
{
    const int row = c->variant == 1 || c->variant == 3;
    size_t n = (size_t)(c->a * c->b), nb = row ? (size_t)c->b : n;
    void *g = hbuf(s, n, 0.5f), *x = hbuf(s, n, 0.5f), *w = hbuf(s, nb, 0.25f);
    void *da = hbuf(s, n, 0.0f), *db = hbuf(s, nb, 0.0f);
    const int64_t sh[4] = {1, 1, c->a, c->b}, st[4] = {(int64_t)n, (int64_t)n, c->b, 1};
    const int64_t sb[4] = {0, 0, row ? 0 : c->b, 1};
    eo_binop op = c->variant >= 2 ? EO_BIN_MUL : EO_BIN_ADD;
    if (!s->failed)
        eo_cuda_k_binary_backward16(op, BF16, sh, g, st, x, st, w, sb, da, st, db, sb, &s->ex);
}

static void run_layernorm16_bwd(sim *s, const bcase *c)
{
    size_t n = (size_t)(c->a * c->b);
    void *x = hbuf(s, n, 0.5f), *w = hbuf(s, (size_t)c->b, 1.0f), *dy = hbuf(s, n, 0.5f);
    void *dx = hbuf(s, n, 0.0f), *dw = hbuf(s, (size_t)c->b, 0.0f), *db = hbuf(s, (size_t)c->b, 0.0f);
    float *m = dbuf(s, (size_t)c->a, 0.5f), *r = dbuf(s, (size_t)c->a, 1.0f);
    if (!s->failed)
        eo_cuda_k_layernorm_backward16(BF16, c->a, c->b, x, w, m, r, dy, dx, dw, db, NULL,
                                       &s->ex);
}

/* a ids of width b into a table of as many rows, distinct ids as run_embedding16 */
static void run_embedding16_bwd(sim *s, const bcase *c)
{
    static int32_t ids[4096];
    void *tab = hbuf(s, (size_t)(c->a * c->b), 0.5f);
    void *d = hbuf(s, (size_t)(c->a * c->b), 0.5f);
    int32_t *idx = ibuf(s, (size_t)c->a, 0);
    if (s->failed || c->a > 4096)
        return;
    for (int64_t i = 0; i < c->a; i++)
        ids[i] = (int32_t)((7 * i) % c->a);
    if (eo_cuda_h2d(&s->cu, (eo_cu_deviceptr)(uintptr_t)idx, ids, (size_t)c->a * 4) != EO_OK) {
        s->failed = 1;
        return;
    }
    /* The lists the backward follows, as distinct ids make them (no next
     * occurrence anywhere), already in the work buffer: a sampled run of
     * eo_embedding16_links writes only its sampled blocks' entries, and the
     * sampled blocks of the backward must see real lists. */
    eo_cuda_memset32(&s->cu, s->cu.scratch + EO_CU_SCRATCH_WORK, 0x7fffffffu,
                     EO_CU_WORK_BYTES / 4);
    eo_cuda_k_embedding_backward16(BF16, c->a, c->b, idx, d, tab, &s->ex);
}

static void run_sgd16(sim *s, const bcase *c)
{
    size_t n = (size_t)(c->a * c->b);
    float *w = dbuf(s, n, 0.5f), *v = dbuf(s, n, 0.0f);
    void *g = hbuf(s, n, 0.01f), *w16 = hbuf(s, n, 0.0f);
    if (!s->failed)
        eo_cuda_k_sgd16((int64_t)n, w, BF16, g, 1.0f, v, 0.1f, 0.9f, 0.0f, 0.01f, 0, BF16, w16,
                        &s->ex);
}

#define MM(shape, M, N, K, v, samp) \
    {v == 0 ? "matmul nn" : v == 1 ? "matmul tn" : v == 2 ? "matmul nt" : "matmul tt", shape, M, \
     N, K, 0, v, \
     2.0 * M * N * K, 1, samp, run_matmul}
#define ROWS(name, shape, r, c, v, passes, fn) \
    {name, shape, r, c, 0, 0, v, (passes) * 4.0 * (r) * (c), 0, 8, fn}
/* the same with 2-byte values: `bytes` per element the contract forces */
#define ROWS16(name, shape, r, c, v, bytes, fn) \
    {name, shape, r, c, 0, 0, v, (bytes) * (double)(r) * (c), 0, 8, fn}

/* Variant of matmul: bit 0 A transposed, bit 1 B transposed (nn, tn, nt). */
static const bcase cases[] = {
    MM("4096x4096x4096", 4096, 4096, 4096, 0, 2),
    MM("4096x4096x4096", 4096, 4096, 4096, 1, 2),
    MM("4096x4096x4096", 4096, 4096, 4096, 2, 2),
    /* the tensor-core matmul (bf16 and f16 inputs, f32 accumulation and C) */
    {"matmul16 bf16", "4096x4096x4096", 4096, 4096, 4096, 0, 0, 2.0 * 4096 * 4096 * 4096.0, 1, 2,
     run_matmul16},
    {"matmul16 f16", "4096x4096x4096", 4096, 4096, 4096, 0, 1, 2.0 * 4096 * 4096 * 4096.0, 1, 2,
     run_matmul16},
    /* bf16 in and out (the 16-bit model's activations), and the backward's transposes */
    {"matmul16 bf16->bf16", "4096x4096x4096", 4096, 4096, 4096, 0, 0, 2.0 * 4096 * 4096 * 4096.0,
     1, 2, run_matmul16_out16},
    {"matmul16 tn bf16", "4096x4096x4096", 4096, 4096, 4096, 0, 1, 2.0 * 4096 * 4096 * 4096.0,
     1, 2, run_matmul16_out16},
    {"matmul16 nt bf16", "4096x4096x4096", 4096, 4096, 4096, 0, 2, 2.0 * 4096 * 4096 * 4096.0,
     1, 2, run_matmul16_out16},
    /* the MLP on Fashion-MNIST, batch 128: 784 -> 256 -> 10, and the dW of layer 0 */
    MM("128x256x784", 128, 256, 784, 0, 4),
    MM("128x10x256", 128, 10, 256, 0, 4),
    MM("4096x10x784", 4096, 10, 784, 0, 4), /* the skinny last layer at a large batch */
    MM("784x256x128", 784, 256, 128, 1, 4),
    /* the skinny layers as training runs them (Linear: y = x W^T, nt; its
     * backward dx = dy W, nn, and dW = dy^T x, tn): the MLP's 256 -> 10 and
     * the CNN's 128 -> 10 at batch 128 (every block run: the split-K
     * kernel's last blocks sum the partials), and the MLP head at batch 4096 */
    MM("128x10x256", 128, 10, 256, 2, 0),
    MM("128x256x10", 128, 256, 10, 0, 0),
    MM("10x256x128", 10, 256, 128, 1, 0),
    MM("128x10x128", 128, 10, 128, 2, 0),
    MM("128x128x10", 128, 128, 10, 0, 0),
    MM("10x128x128", 10, 128, 128, 1, 0),
    MM("4096x10x784", 4096, 10, 784, 2, 4),
    MM("4096x784x10", 4096, 784, 10, 0, 4),
    MM("10x784x4096", 10, 784, 4096, 1, 4),
    /* the char-GPT (d_model 128, context 64, batch 32: 2048 rows): qkv, MLP up, MLP down */
    MM("2048x384x128", 2048, 384, 128, 0, 4),
    MM("2048x512x128", 2048, 512, 128, 0, 4),
    MM("2048x128x512", 2048, 128, 512, 0, 4),
    ROWS("softmax", "4096x1024", 4096, 1024, 0, 2, run_softmax),
    ROWS16("softmax bf16", "4096x1024", 4096, 1024, 0, 4, run_softmax16),
    ROWS("softmax", "512x50257", 512, 50257, 0, 2, run_softmax),
    ROWS16("softmax bf16", "512x50257", 512, 50257, 0, 4, run_softmax16),
    ROWS("softmax_bwd", "4096x1024", 4096, 1024, 0, 3, run_softmax_bwd),
    ROWS16("softmax_bwd bf16", "4096x1024", 4096, 1024, 0, 8, run_softmax16_bwd),
    ROWS("log_softmax", "512x50257", 512, 50257, 1, 2, run_softmax),
    ROWS16("log_softmax bf16", "512x50257", 512, 50257, 1, 4, run_softmax16),
    ROWS("layernorm", "4096x1024", 4096, 1024, 0, 2, run_layernorm),
    ROWS16("layernorm bf16", "4096x1024", 4096, 1024, 0, 4, run_layernorm16),
    ROWS("layernorm_bwd", "4096x1024", 4096, 1024, 0, 3, run_layernorm_bwd),
    /* x, dy read, dx read and written (dw, db: one row) */
    ROWS16("layernorm_bwd bf16", "4096x1024", 4096, 1024, 0, 8, run_layernorm16_bwd),
    ROWS("cross_entropy", "4096x1024", 4096, 1024, 0, 1, run_xent),
    ROWS16("cross_entropy bf16", "4096x1024", 4096, 1024, 0, 2, run_xent16),
    ROWS("cross_entropy", "512x50257", 512, 50257, 0, 1, run_xent),
    ROWS16("cross_entropy bf16", "512x50257", 512, 50257, 0, 2, run_xent16),
    ROWS("cross_entropy_bwd", "512x50257", 512, 50257, 0, 2, run_xent_bwd),
    /* dlogits += ...: x read, dx read and written */
    ROWS16("cross_entropy_bwd bf16", "512x50257", 512, 50257, 0, 6, run_xent16_bwd),
    ROWS("gelu", "4096x1024", 4096, 1024, 0, 2, run_gelu),
    /* the elementwise family and the optimizers; passes: the arrays of
     * rows x cols floats the contract reads or writes (an update in place
     * counts twice: read and written) */
    ROWS("add", "4096x1024", 4096, 1024, 0, 3, run_binary),
    ROWS("add bias", "4096x1024", 4096, 1024, 1, 2, run_binary),
    ROWS("add_bwd", "4096x1024", 4096, 1024, 0, 5, run_binary_bwd),
    ROWS("add bias_bwd", "4096x1024", 4096, 1024, 1, 3, run_binary_bwd),
    ROWS("mul bias_bwd", "4096x1024", 4096, 1024, 2, 4, run_binary_bwd),
    /* bf16: dout read, da and db read and written; mul reads a and b too;
     * a bias add's db is one row */
    ROWS16("add_bwd bf16", "4096x1024", 4096, 1024, 0, 10, run_binary16_bwd),
    ROWS16("mul_bwd bf16", "4096x1024", 4096, 1024, 2, 14, run_binary16_bwd),
    ROWS16("add bias_bwd bf16", "4096x1024", 4096, 1024, 1, 6, run_binary16_bwd),
    ROWS16("mul bias_bwd bf16", "4096x1024", 4096, 1024, 3, 8, run_binary16_bwd),
    ROWS("copy", "4096x1024", 4096, 1024, 0, 2, run_copy),
    ROWS("accumulate", "4096x1024", 4096, 1024, 1, 3, run_copy),
    ROWS("fill", "4096x1024", 4096, 1024, 2, 1, run_copy),
    ROWS16("fill bf16", "4096x1024", 4096, 1024, 0, 2, run_fill16),
    ROWS("relu_bwd", "4096x1024", 4096, 1024, 0, 4, run_relu_bwd),
    ROWS("dropout", "4096x1024", 4096, 1024, 0, 2, run_dropout),
    ROWS("dropout_bwd", "4096x1024", 4096, 1024, 1, 3, run_dropout),
    ROWS("embedding", "4096x1024", 4096, 1024, 0, 2, run_embedding),
    ROWS("embedding_bwd", "4096x1024", 4096, 1024, 1, 2, run_embedding),
    /* 2048 ids (32 x 64) of width 128 into a 70-row table: dout read, the
     * 70 rows read and written */
    {"embedding_bwd", "2048x128 V70", 2048, 128, 70, 0, 2, 4.0 * (2048 + 2 * 70) * 128, 0, 0,
     run_embedding},
    /* dout read, the table rows read and written */
    ROWS16("embedding_bwd bf16", "4096x1024", 4096, 1024, 0, 6, run_embedding16_bwd),
    ROWS("sgd", "4096x1024", 4096, 1024, 0, 5, run_sgd),
    /* f32 w, v read and written (16 bytes), bf16 g read and bf16 w written (4) */
    ROWS16("sgd bf16", "4096x1024", 4096, 1024, 0, 20, run_sgd16),
    ROWS16("gelu bf16", "4096x1024", 4096, 1024, 0, 4, run_gelu16),
    ROWS16("add bf16", "4096x1024", 4096, 1024, 0, 6, run_add16),
    ROWS16("cast f32->bf16", "4096x1024", 4096, 1024, 0, 6, run_cast16),
    ROWS16("embedding bf16", "4096x1024", 4096, 1024, 0, 4, run_embedding16),
    ROWS("adamw", "4096x1024", 4096, 1024, 0, 7, run_adamw),
    /* f32 w, m, v read and written (24 bytes), bf16 g read and bf16 w written (4) */
    ROWS16("adamw bf16", "4096x1024", 4096, 1024, 0, 28, run_adamw16),
    /* GPT-2-small attention heads (H 12, D 64) at T = 1024, batch 8, causal:
     * forward 4*B*T^2*H*D / 2 flops, backward 2.5x that. */
    {"attention", "8x12x1024x64", 8, 12, 1024, 64, 0, 2.0 * 8 * 12 * 1024.0 * 1024 * 64, 1, 6,
     run_attention},
    {"attention_bwd", "8x12x1024x64", 8, 12, 1024, 64, 1, 5.0 * 8 * 12 * 1024.0 * 1024 * 64, 1, 6,
     run_attention},
    /* the same on the tensor cores (bf16 in, f32 sums; 64-row blocks) */
    {"attention bf16", "8x12x1024x64", 8, 12, 1024, 64, 0, 2.0 * 8 * 12 * 1024.0 * 1024 * 64, 1, 6,
     run_attention16},
    {"attention_bwd bf16", "8x12x1024x64", 8, 12, 1024, 64, 1, 5.0 * 8 * 12 * 1024.0 * 1024 * 64,
     1, 6, run_attention16},
    /* the char-GPT's attention (B 32, H 4, T 64, D 32, causal) */
    {"attention", "32x4x64x32", 32, 4, 64, 32, 0, 2.0 * 32 * 4 * 64.0 * 64 * 32, 1, 8,
     run_attention},
    {"attention_bwd", "32x4x64x32", 32, 4, 64, 32, 1, 5.0 * 32 * 4 * 64.0 * 64 * 32, 1, 8,
     run_attention},
    {"attention bf16", "32x4x64x32", 32, 4, 64, 32, 0, 2.0 * 32 * 4 * 64.0 * 64 * 32, 1, 8,
     run_attention16},
    {"attention_bwd bf16", "32x4x64x32", 32, 4, 64, 32, 1, 5.0 * 32 * 4 * 64.0 * 64 * 32, 1, 8,
     run_attention16},
};

/* The module text holding `.entry kernel(` (for ptxas). */
static const eo_ptx_module *module_of(const char *kernel)
{
    char pat[96];
    snprintf(pat, sizeof pat, ".entry %s(", kernel);
    for (int i = 0; i < eo_ptx_count(); i++)
        if (strstr(eo_ptx_get(i)->text, pat))
            return eo_ptx_get(i);
    return NULL;
}

/* One case on one GPU: the sum over the kernels it launched. */
typedef struct {
    double ms, ideal_lim, longest;
    int limiter;
} estimate;

static estimate estimate_case(const eo_gpu_spec *g, int *regs_unknown)
{
    estimate e = {0, 0, -1, 0};
    const char *name;
    eo_px_counters c;
    for (int i = 0; eo_ptxsim_kernel_counters(i, &name, &c); i++) {
        const eo_ptx_module *m = module_of(name);
        eo_kernel_resources res;
        char why[200];
        int known = m && eo_ptxas_resources(m->text, m->len, name, g->arch, &res, why,
                                            sizeof why) == 0;
        if (!known)
            *regs_unknown = 1;
        eo_occupancy occ;
        eo_occupancy_compute(g, c.threads_per_block, known ? &res : NULL, c.shared_per_block, &occ);
        eo_prediction p;
        eo_predict(g, &c, &occ, &p);
        e.ms += p.ms;
        e.ideal_lim += p.pct_of_peak * p.ms / 100.0;
        if (p.ms > e.longest) {
            e.longest = p.ms;
            e.limiter = p.limiter;
        }
    }
    return e;
}

/* --profile: each kernel's own estimate on one GPU (a case's time is their sum). */
static void print_kernel_estimates(FILE *out, const eo_gpu_spec *g)
{
    const char *name;
    eo_px_counters c;
    for (int i = 0; eo_ptxsim_kernel_counters(i, &name, &c); i++) {
        const eo_ptx_module *m = module_of(name);
        eo_kernel_resources res;
        char why[200];
        int known = m && eo_ptxas_resources(m->text, m->len, name, g->arch, &res, why,
                                            sizeof why) == 0;
        eo_occupancy occ;
        eo_occupancy_compute(g, c.threads_per_block, known ? &res : NULL, c.shared_per_block, &occ);
        eo_prediction p;
        eo_predict(g, &c, &occ, &p);
        fprintf(out, "  %s on %s: %.4f ms, %s, %.0f %%; DRAM %.3f MB\n", name, g->name, p.ms,
                eo_limiter_name(p.limiter), p.pct_of_peak, p.dram_bytes * 1e-6);
    }
}

static void print_counters(FILE *out)
{
    const char *name;
    eo_px_counters c;
    for (int i = 0; eo_ptxsim_kernel_counters(i, &name, &c); i++)
        eo_px_counters_print(out, name, &c);
}

int eo_bench_sim(const char *gpu, const char *filter, int verbose, FILE *out, FILE *csv)
{
    const eo_gpu_spec *only = NULL;
    if (gpu && !(only = eo_gpu_find(gpu))) {
        fprintf(stderr, "eo-bench --device sim: no GPU '%s' in the model; known:", gpu);
        for (int i = 0; i < eo_gpu_count(); i++)
            fprintf(stderr, " %s", eo_gpu_at(i)->name);
        fputc('\n', stderr);
        return 2;
    }
    static eo_cuda_driver drv;
    static sim s;
    char err[512];
    eo_ptxsim_driver_reset();
    eo_ptxsim_driver(&drv);
    if (eo_cuda_open(&s.cu, &drv, 0, err, sizeof err) != EO_OK) {
        fprintf(stderr, "eo-bench --device sim: %s\n", err);
        return 1;
    }
    s.ex.cuda = &s.cu;
    fprintf(out, "eo-bench --device sim: ESTIMATES, not measurements. The PTX interpreter counts "
                 "each kernel's work\n(tools/ptxsim), the roofline model in tools/bench/perfmodel.c "
                 "turns the counts into a time;\nat large shapes only the blocks shown ran and "
                 "per-block counts are scaled to the grid.\nColumns per GPU: estimated ms, the "
                 "limiting resource, %% of that resource's peak.\n\n");
    fprintf(out, "%-22s %-15s %-11s", "kernel", "shape", "blocks run");
    for (int i = 0; i < eo_gpu_count(); i++)
        if (only ? only == eo_gpu_at(i) : eo_gpu_at(i)->in_table)
            fprintf(out, " | %-8s est. ms  limit   %%", eo_gpu_at(i)->name);
    fputc('\n', out);
    if (csv)
        fprintf(csv, "gpu,kernel,shape,est_ms,limiter,pct_of_limit_peak,rate,unit,blocks_run,"
                     "blocks\n");
    int unknown = 0;
    double t0 = (double)clock();
    for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
        const bcase *c = &cases[k];
        char label[64];
        snprintf(label, sizeof label, "%s %s", c->kernel, c->shape);
        if (filter && !strstr(label, filter))
            continue;
        eo_ptxsim_counters_reset();
        eo_ptxsim_set_sample(c->sample);
        c->run(&s, c);
        eo_cuda_sync(&s.cu);
        eo_ptxsim_set_sample(0);
        char msg[300];
        if (s.failed || eo_cuda_take_error(&s.cu, msg, sizeof msg) != EO_OK) {
            fprintf(out, "%-22s %-15s failed: %s\n", c->kernel, c->shape,
                    s.failed ? "cannot allocate its buffers" : msg);
            s.failed = 0;
            free_all(&s);
            continue;
        }
        uint64_t run = 0, blocks = 0;
        eo_px_counters pc;
        for (int i = 0; eo_ptxsim_kernel_counters(i, NULL, &pc); i++)
            run += pc.blocks_run, blocks += pc.blocks;
        char br[32];
        snprintf(br, sizeof br, "%llu/%llu", (unsigned long long)run, (unsigned long long)blocks);
        fprintf(out, "%-22s %-15s %-11s", c->kernel, c->shape, br);
        for (int i = 0; i < eo_gpu_count(); i++) {
            const eo_gpu_spec *g = eo_gpu_at(i);
            if (only ? only != g : !g->in_table)
                continue;
            estimate e = estimate_case(g, &unknown);
            double pct = e.ms > 0 ? 100.0 * e.ideal_lim / e.ms : 0;
            fprintf(out, " | %16.4f %-6s %3.0f", e.ms, eo_limiter_name(e.limiter), pct);
            double rate = c->flops ? c->work / (e.ms * 1e-3) * 1e-9 : c->work / (e.ms * 1e-3) * 1e-9;
            if (csv)
                fprintf(csv, "%s,%s,%s,%.5f,%s,%.1f,%.1f,%s,%llu,%llu\n", g->name, c->kernel,
                        c->shape, e.ms, eo_limiter_name(e.limiter), pct, rate,
                        c->flops ? "GFLOP/s" : "GB/s", (unsigned long long)run,
                        (unsigned long long)blocks);
        }
        fputc('\n', out);
        if (verbose)
            print_counters(out);
        if (verbose)
            print_kernel_estimates(out, only ? only : eo_gpu_at(0));
        fflush(out);
        free_all(&s);
    }
    fprintf(out, "\n%% of peak: of the limiting resource (DRAM bandwidth, FP32 or SFU pipe, "
                 "shared-memory wavefronts, issue slots,\nthe dense BF16/F16 tensor-core peak)\nat the estimated time; when latency "
                 "(dependent load rounds) or the launch floor limits, of the busiest\nof those. "
                 "Interpreter time %.0f s.%s\n", ((double)clock() - t0) / CLOCKS_PER_SEC,
            unknown ? " Registers unknown for some kernels (no ptxas): occupancy not limited by "
                      "them." : "");
    eo_cuda_close(&s.cu);
    eo_ptxsim_driver_reset();
    return 0;
}
