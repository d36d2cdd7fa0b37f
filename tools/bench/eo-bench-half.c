/* tools/bench/eo-bench-half.c — build/eo-bench-half: the CPU 16-bit
 * kernels beside their f32 counterparts, measured in the same run.
 *
 * Each row times the f32 kernel and the bf16 / f16 kernel on the same
 * shape, alternating them so both see the same machine state, and prints
 * the medians and the ratio 16-bit / f32 (above 1: the 16-bit kernel is
 * slower). Conversions are shown against a memcpy of the same bytes; the
 * row and elementwise kernels (add and a bias gradient, softmax, layernorm,
 * cross-entropy, embedding, each direction) in bf16 against f32 at the
 * same shape, rates in elements per second. The
 * kernels are called directly (ops/kernels.h), as in eo-bench.
 *
 *   eo-bench-half [--threads N] [--quick]
 *
 * A separate program, not rows of eo-bench: eo-bench's rows are mirrored
 * in PyTorch by its job file, and these have no PyTorch counterpart on
 * the CPU worth timing (torch's bf16 CPU matmul is not its fast path). */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "ops/kernels.h"
#include "tools/cli/cpu_kernels.h"
#include "ops/cpu/half.h"
#include "tools/cli/args.h"
#include "tools/threads/pool.h"

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static void *xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p) {
        fprintf(stderr, "eo-bench-half: out of memory (%zu bytes)\n", n);
        exit(1);
    }
    return p;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

enum { REPS = 11 };
typedef void (*bench_fn)(void *arg, int variant);

/* Median seconds of variants 0 (f32) and 1 (16-bit), interleaved. */
static void time_pair(bench_fn f, void *arg, int reps, double out[2])
{
    double t[2][REPS];
    f(arg, 0);
    f(arg, 1);
    for (int r = 0; r < reps; r++)
        for (int v = 0; v < 2; v++) {
            double t0 = now_s();
            f(arg, v);
            t[v][r] = now_s() - t0;
        }
    for (int v = 0; v < 2; v++) {
        qsort(t[v], (size_t)reps, sizeof(double), cmp_d);
        out[v] = t[v][reps / 2];
    }
}

static float *frand(size_t n, float scale, uint32_t seed)
{
    float *p = xmalloc(n * sizeof *p);
    for (size_t i = 0; i < n; i++) {
        seed = seed * 1664525u + 1013904223u;
        p[i] = ((float)(seed >> 8) / 16777216.0f - 0.5f) * 2.0f * scale;
    }
    return p;
}

static uint16_t *to16(int dt, const float *x, size_t n)
{
    uint16_t *h = xmalloc(n * 2);
    eo_f32_to_half_scalar(dt, (int64_t)n, x, h);
    return h;
}

static eo_exec ex;

/* ---- matmul ---- */
typedef struct { int dt; int64_t M, N, K; float *A, *B, *C; uint16_t *a, *b, *c; void *ws; } mm_arg;
static void mm_run(void *p, int v)
{
    mm_arg *m = p;
    if (v == 0)
        eo_k_matmul(0, 0, 1, m->M, m->N, m->K, m->A, m->K, 0, m->B, m->N, 0, 0.0f, m->C, m->N, 0,
                    m->ws, &ex);
    else
        eo_k_matmul16(0, 0, 1, m->M, m->N, m->K, m->dt, m->a, m->K, 0, m->b, m->N, 0, 0.0f, m->dt,
                      m->c, m->N, 0, m->ws, &ex);
}

/* ---- conversions (vs memcpy of the 16-bit bytes) ---- */
typedef struct { int dt, dir, simd; int64_t n; float *f; uint16_t *h, *h2; } cv_arg;
static void cv_run(void *p, int v)
{
    cv_arg *c = p;
    if (v == 0) {
        memcpy(c->h2, c->h, (size_t)c->n * 2);
        return;
    }
    if (c->dir == 0)
        (c->simd ? eo_f32_to_half : eo_f32_to_half_scalar)(c->dt, c->n, c->f, c->h);
    else
        (c->simd ? eo_half_to_f32 : eo_half_to_f32_scalar)(c->dt, c->n, c->h, c->f);
}

/* ---- gelu and adamw ---- */
typedef struct { int dt; int64_t n; float *x, *y, *w, *m, *v; uint16_t *x16, *y16, *w16; } ew_arg;
static void gelu_run(void *p, int v)
{
    ew_arg *e = p;
    if (v == 0)
        eo_k_unary(EO_UN_GELU_TANH, e->n, e->x, e->y, 0.0f, &ex);
    else
        eo_k_unary16(EO_UN_GELU_TANH, e->dt, e->n, e->x16, e->y16, 0.0f, &ex);
}
static void adamw_run(void *p, int v)
{
    ew_arg *e = p;
    if (v == 0)
        eo_k_adamw(e->n, e->w, e->x, e->m, e->v, 1e-3f, 0.9f, 0.999f, 1e-8f, 0.01f, 10, &ex);
    else /* bf16 gradient, loss scale 1/1024, a bf16 copy of the weights */
        eo_k_adamw16(e->n, e->w, e->dt, e->x16, 1.0f / 1024, e->m, e->v, 1e-3f, 0.9f, 0.999f,
                     1e-8f, 0.01f, 10, e->dt, e->w16, &ex);
}

/* ---- the row and elementwise kernels: f32 against the 16-bit slot ---- */
enum { RK_ADD, RK_BIAS_BWD, RK_SOFTMAX, RK_SOFTMAX_BWD, RK_LN, RK_LN_BWD, RK_CE, RK_CE_BWD,
       RK_EMB, RK_EMB_BWD, RK_COUNT };
static const char *const rk_names[RK_COUNT] = {
    "add", "add backward (bias)", "softmax", "softmax backward", "layernorm",
    "layernorm backward", "cross_entropy (mean)", "cross_entropy backward", "embedding",
    "embedding backward"};
typedef struct {
    int kind, dt;
    int64_t R, C, V; /* rows, columns; V: the embedding table's rows */
    float *x, *y, *g, *w, *b, *dw, *db, *st, *mean, *rstd, loss;
    uint16_t *x16, *y16, *g16, *w16, *b16, *dw16, *db16, loss16, one16;
    int32_t *t;
    void *ws, *ws16;
} rk_arg;
static void rk_run(void *p, int v)
{
    rk_arg *a = p;
    const int64_t R = a->R, C = a->C, shape[4] = {1, 1, R, C}, full[4] = {0, 0, C, 1};
    const int64_t bias[4] = {0, 0, 0, 1};
    const float one = 1.0f;
    switch (a->kind) {
    case RK_ADD:
        if (v == 0)
            eo_k_binary(EO_BIN_ADD, shape, a->y, full, a->x, full, a->g, full, &ex);
        else
            eo_k_binary16(EO_BIN_ADD, a->dt, shape, a->y16, full, a->x16, full, a->g16, full, &ex);
        break;
    case RK_BIAS_BWD: /* y = x + b[C]: dx full, db summed over the rows */
        if (v == 0)
            eo_k_binary_backward(EO_BIN_ADD, shape, a->g, full, a->x, full, a->b, bias, a->y,
                                 full, a->db, bias, &ex);
        else
            eo_k_binary_backward16(EO_BIN_ADD, a->dt, shape, a->g16, full, a->x16, full, a->b16,
                                   bias, a->y16, full, a->db16, bias, &ex);
        break;
    case RK_SOFTMAX:
        if (v == 0)
            eo_k_softmax(0, R, C, a->x, a->y, a->ws, &ex);
        else
            eo_k_softmax16(0, a->dt, R, C, a->x16, a->y16, a->ws16, &ex);
        break;
    case RK_SOFTMAX_BWD: /* dx += ..., into the buffer of g's values */
        if (v == 0)
            eo_k_softmax_backward(0, R, C, a->x, a->g, a->y, &ex);
        else
            eo_k_softmax_backward16(0, a->dt, R, C, a->x16, a->g16, a->y16, a->ws16, &ex);
        break;
    case RK_LN:
        if (v == 0)
            eo_k_layernorm(R, C, a->x, a->w, a->b, 1e-5f, a->y, a->mean, a->rstd, &ex);
        else
            eo_k_layernorm16(a->dt, R, C, a->x16, a->w16, a->b16, 1e-5f, a->y16, a->mean,
                             a->rstd, a->ws16, &ex);
        break;
    case RK_LN_BWD:
        if (v == 0)
            eo_k_layernorm_backward(R, C, a->x, a->w, a->mean, a->rstd, a->g, a->y, a->dw, a->db,
                                    a->ws, &ex);
        else
            eo_k_layernorm_backward16(a->dt, R, C, a->x16, a->w16, a->mean, a->rstd, a->g16,
                                      a->y16, a->dw16, a->db16, a->ws16, &ex);
        break;
    case RK_CE:
        if (v == 0)
            eo_k_cross_entropy(R, C, a->x, a->t, -100, EO_CE_MEAN, a->st, &a->loss, &ex);
        else
            eo_k_cross_entropy16(a->dt, R, C, a->x16, a->t, -100, EO_CE_MEAN, a->st, &a->loss16,
                                 a->ws16, &ex);
        break;
    case RK_CE_BWD:
        if (v == 0)
            eo_k_cross_entropy_backward(R, C, a->x, a->t, -100, EO_CE_MEAN, a->st, &one, a->y,
                                        &ex);
        else
            eo_k_cross_entropy_backward16(a->dt, R, C, a->x16, a->t, -100, EO_CE_MEAN, a->st,
                                          &a->one16, a->y16, a->ws16, &ex);
        break;
    case RK_EMB: /* R ids into a [V, C] table (x) */
        if (v == 0)
            eo_k_embedding(R, C, a->x, a->t, a->y, &ex);
        else
            eo_k_embedding16(a->dt, R, C, a->x16, a->t, a->y16, &ex);
        break;
    default:
        if (v == 0)
            eo_k_embedding_backward(R, C, a->t, a->g, a->x, &ex);
        else
            eo_k_embedding_backward16(a->dt, R, C, a->t, a->g16, a->x16, &ex);
        break;
    }
}

static void row(const char *what, const char *shape, const char *ref, double t[2], double work,
                const char *unit)
{
    printf("%-26s %-18s %-8s %9.3f ms %9.3f ms %8.2f %s %8.2f %s  %5.2fx\n", what, shape, ref,
           1e3 * t[0], 1e3 * t[1], work / t[0] * 1e-9, unit, work / t[1] * 1e-9, unit,
           t[1] / t[0]);
}

static void usage(FILE *f)
{
    fprintf(f, "Usage: eo-bench-half [OPTION]...\n"
               "Time the CPU bf16/f16 kernels beside their f32 counterparts (same run).\n\n"
               "  -j, --threads N  threads for the kernels (1..64, default 1)\n"
               "      --quick      fewer shapes and repeats\n"
               "  -h, --help       this text\n"
               "      --version    the program's and the library's version\n");
}

int main(int argc, char **argv)
{
    eo_args_program("eo-bench-half");
    int threads = 1, quick = 0;
    enum { O_QUICK = 256, O_VERSION };
    static const struct option opts[] = {
        {"threads", required_argument, NULL, 'j'}, {"quick", no_argument, NULL, O_QUICK},
        {"help", no_argument, NULL, 'h'},          {"version", no_argument, NULL, O_VERSION},
        {NULL, 0, NULL, 0},
    };
    int o;
    while ((o = getopt_long(argc, argv, "j:h", opts, NULL)) != -1) {
        switch (o) {
        case 'h': usage(stdout); return 0;
        case O_VERSION: eo_args_version(stdout); return 0;
        case O_QUICK: quick = 1; break;
        case 'j':
            if (!eo_arg_int_range("--threads", optarg, 1, 64, &threads))
                return 2;
            break;
        default: return eo_args_try_help();
        }
    }
    if (!eo_args_no_operands(argc, argv))
        return 2;
    eo_pool *pool = NULL;
    if (threads > 1) {
        pool = eo_pool_create(threads);
        if (pool)
            ex.par = eo_pool_par(pool);
    }
    const int reps = quick ? 3 : REPS;
    printf("eo-bench-half: %d thread(s), median of %d; ratio = 16-bit time / reference time\n",
           threads, reps);
    printf("%-26s %-18s %-8s %12s %12s %13s %13s  %s\n", "kernel", "shape", "ref", "ref time",
           "16-bit time", "ref rate", "16-bit rate", "ratio");
    static const int64_t mm_shapes[][3] = { {128, 256, 784}, {512, 512, 512}, {2048, 384, 128} };
    for (int s = 0; s < (quick ? 1 : 3); s++)
        for (int dt = EO_K_BF16; dt <= EO_K_F16; dt++) {
            mm_arg m = { dt, mm_shapes[s][0], mm_shapes[s][1], mm_shapes[s][2], 0, 0, 0, 0, 0, 0, 0 };
            size_t a = (size_t)(m.M * m.K), b = (size_t)(m.K * m.N), c = (size_t)(m.M * m.N);
            m.A = frand(a, 1, 1);
            m.B = frand(b, 1, 2);
            m.C = frand(c, 0, 3);
            m.a = to16(dt, m.A, a);
            m.b = to16(dt, m.B, b);
            m.c = xmalloc(c * 2);
            m.ws = xmalloc(eo_k_matmul16_ws(m.M, m.N, m.K, threads) +
                           eo_k_matmul_ws(m.M, m.N, m.K, threads));
            double t[2];
            time_pair(mm_run, &m, reps, t);
            char sh[32], what[32];
            snprintf(sh, sizeof sh, "%lldx%lld·%lldx%lld", (long long)m.M, (long long)m.K,
                     (long long)m.K, (long long)m.N);
            snprintf(what, sizeof what, "matmul16 %s", dt == EO_K_BF16 ? "bf16" : "f16");
            row(what, sh, "f32", t, 2.0 * (double)m.M * (double)m.N * (double)m.K, "GF/s");
            free(m.A), free(m.B), free(m.C), free(m.a), free(m.b), free(m.c), free(m.ws);
        }
    /* rows of 1024 (a transformer's activations) and of 50257 classes */
    for (int k = 0; k < RK_COUNT; k++) {
        const int wide = k == RK_SOFTMAX || k == RK_SOFTMAX_BWD || k == RK_CE || k == RK_CE_BWD;
        rk_arg a;
        memset(&a, 0, sizeof a);
        a.kind = k;
        a.dt = EO_K_BF16;
        a.R = wide ? (quick ? 64 : 512) : (quick ? 1024 : 4096);
        a.C = wide ? 50257 : 1024;
        a.V = 50257;
        const int emb = k == RK_EMB || k == RK_EMB_BWD;
        const size_t n = (size_t)(a.R * a.C), nx = emb ? (size_t)(a.V * a.C) : n;
        a.x = frand(nx, 3, 21);
        a.y = frand(n, 0.1f, 22);
        a.g = frand(n, 1, 23);
        a.w = frand((size_t)a.C, 1, 24);
        a.b = frand((size_t)a.C, 1, 25);
        a.dw = frand((size_t)a.C, 0, 26);
        a.db = frand((size_t)a.C, 0, 27);
        a.st = frand(2 * (size_t)a.R, 0, 28);
        a.mean = frand((size_t)a.R, 0, 29);
        a.rstd = frand((size_t)a.R, 0, 30);
        a.x16 = to16(a.dt, a.x, nx);
        a.y16 = to16(a.dt, a.y, n);
        a.g16 = to16(a.dt, a.g, n);
        a.w16 = to16(a.dt, a.w, (size_t)a.C);
        a.b16 = to16(a.dt, a.b, (size_t)a.C);
        a.dw16 = to16(a.dt, a.dw, (size_t)a.C);
        a.db16 = to16(a.dt, a.db, (size_t)a.C);
        a.one16 = eo_half_put(a.dt, 1.0f);
        a.t = xmalloc((size_t)a.R * sizeof *a.t);
        for (int64_t r = 0; r < a.R; r++)
            a.t[r] = (int32_t)((r * 7919) % (emb ? a.V : a.C));
        size_t w32 = eo_k_softmax_ws(0, a.R, a.C, threads);
        if (eo_k_layernorm_backward_ws(a.R, a.C, threads) > w32)
            w32 = eo_k_layernorm_backward_ws(a.R, a.C, threads);
        size_t w16 = eo_k_softmax_ws16(a.R, a.C, threads);
        if (eo_k_layernorm_ws16(a.R, a.C, threads) > w16)
            w16 = eo_k_layernorm_ws16(a.R, a.C, threads);
        if (eo_k_cross_entropy_ws16(a.R, a.C, threads) > w16)
            w16 = eo_k_cross_entropy_ws16(a.R, a.C, threads);
        a.ws = xmalloc(w32);
        a.ws16 = xmalloc(w16);
        /* the backwards read the forwards' saved values */
        if (k == RK_LN_BWD)
            eo_k_layernorm(a.R, a.C, a.x, a.w, a.b, 1e-5f, a.y, a.mean, a.rstd, &ex);
        if (k == RK_CE_BWD)
            eo_k_cross_entropy(a.R, a.C, a.x, a.t, -100, EO_CE_MEAN, a.st, &a.loss, &ex);
        if (k == RK_SOFTMAX_BWD) { /* x holds y = softmax(x) */
            eo_k_softmax(0, a.R, a.C, a.x, a.y, a.ws, &ex);
            memcpy(a.x, a.y, n * sizeof(float));
            eo_f32_to_half(a.dt, (int64_t)n, a.x, a.x16);
        }
        double t[2];
        time_pair(rk_run, &a, reps, t);
        char shp[32], what[40];
        if (emb) /* R ids into a V x C table */
            snprintf(shp, sizeof shp, "%lld of %lldx%lld", (long long)a.R, (long long)a.V,
                     (long long)a.C);
        else
            snprintf(shp, sizeof shp, "%lldx%lld", (long long)a.R, (long long)a.C);
        snprintf(what, sizeof what, "%s bf16", rk_names[k]);
        row(what, shp, "f32", t, (double)n, "Ge/s");
        free(a.x), free(a.y), free(a.g), free(a.w), free(a.b), free(a.dw), free(a.db);
        free(a.st), free(a.mean), free(a.rstd), free(a.x16), free(a.y16), free(a.g16);
        free(a.w16), free(a.b16), free(a.dw16), free(a.db16), free(a.t), free(a.ws), free(a.ws16);
    }
    const int64_t n = quick ? (1 << 20) : (4 << 20);
    char sh[32];
    snprintf(sh, sizeof sh, "%lld", (long long)n);
    for (int dt = EO_K_BF16; dt <= EO_K_F16; dt++)
        for (int dir = 0; dir < 2; dir++)
            for (int simd = 0; simd < 2; simd++) {
                cv_arg c = { dt, dir, simd, n, frand((size_t)n, 100, 5), xmalloc((size_t)n * 2),
                             xmalloc((size_t)n * 2) };
                eo_f32_to_half(dt, n, c.f, c.h);
                double t[2];
                time_pair(cv_run, &c, reps, t);
                char what[40];
                snprintf(what, sizeof what, "%s %s %s", dir ? "widen" : "round",
                         dt == EO_K_BF16 ? "bf16" : "f16", simd ? "(simd)" : "(scalar)");
                row(what, sh, "memcpy", t, (double)n * 6.0, "GB/s"); /* 4 + 2 bytes moved */
                free(c.f), free(c.h), free(c.h2);
            }
    for (int k = 0; k < 2; k++) {
        ew_arg e = { EO_K_BF16, n, frand((size_t)n, 3, 7), frand((size_t)n, 0, 8),
                     frand((size_t)n, 1, 9), frand((size_t)n, 0, 10), frand((size_t)n, 0, 11),
                     0, xmalloc((size_t)n * 2), xmalloc((size_t)n * 2) };
        e.x16 = to16(EO_K_BF16, e.x, (size_t)n);
        double t[2];
        time_pair(k ? adamw_run : gelu_run, &e, reps, t);
        row(k ? "adamw16 (bf16 g, w16)" : "gelu bf16", sh, "f32", t,
            (double)n * (k ? 7 * 4.0 : 8.0), "GB/s");
        free(e.x), free(e.y), free(e.w), free(e.m), free(e.v), free(e.x16), free(e.y16), free(e.w16);
    }
    if (pool)
        eo_pool_destroy(pool);
    return 0;
}
