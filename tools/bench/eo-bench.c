/* tools/bench/eo-bench.c — how fast are EveryO's CPU kernels, measured against
 * this machine's own limits and against other implementations, in one run.
 *
 * A kernel's time alone says little. So the benchmark first measures the
 * two ceilings that bound every kernel here: the FMA peak (a loop of
 * independent multiply-adds that nothing can beat) and the copy bandwidth
 * (a large memcpy, or a streaming-store copy loop where that is faster).
 * Compute-bound kernels (matmul) are reported as a
 * fraction of the first, memory-bound ones (softmax, layernorm, GELU,
 * cross-entropy, AdamW) of the second, counting the bytes the kernel's
 * contract forces it to read and write. Fused attention is compute-bound
 * and counted in flops (see case_work).
 *
 * Then every kernel is timed beside its references, in the same process
 * and the same minute, because a shared machine drifts:
 *   - a naive C loop (what you would write without thinking about caches);
 *   - OpenBLAS's SGEMM for matmul, loaded with dlopen at run time so that
 *     nothing in EveryO links a BLAS;
 *   - PyTorch, through tools/bench/bench_torch.py run as a subprocess, whose
 *     timings come back as CSV.
 * EveryO and the in-process references are timed in alternating blocks
 * (EveryO, BLAS, naive, EveryO, ...) after a warm-up, each block started
 * once the other threads of the process have parked (quiesce), and the
 * median of the repeats is kept, so a burst of noise hits all of them
 * alike and no pool is timed against another's spinning workers. A
 * reference that is
 * missing is reported as "skipped (reason)", never as an error.
 *
 * --device cuda times the PTX kernels on a GPU (bench_gpu.c); --device sim
 * ESTIMATES their time on named GPUs from the PTX interpreter's counters
 * (bench_sim.c), with --gpu NAME for one GPU and --profile for each
 * kernel's counters; --device cuda --predicted CSV prints the estimates
 * that a sim run wrote to CSV beside the measurements.
 *
 * Usage: eo-bench [--quick] [--threads 1,2] [--filter TEXT] [--csv FILE]
 *                 [--svg FILE] [--no-blas] [--no-torch] [--no-naive] [--ref-env]
 *                 [--python EXE] [--torch-script FILE] */
#include <ctype.h>
#include <dlfcn.h>
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "ops/kernels.h"
#include "tools/cli/cpu_kernels.h"
#include "tools/bench/ceilings.h"
#include "tools/bench/bench_gpu.h"
#include "tools/bench/bench_sim.h"
#include "tools/bench/predicted.h"
#include "tools/cli/args.h"
#include "tools/cli/files.h"
#include "tools/threads/pool.h"


#define MAX_THREADS 8
#define MAX_ROWS 256

/* IMPL_COPY, for the memory-bound rows only: a copy of as many bytes as
 * the kernel moves (half read, half written), the same copy loop as the
 * ceiling's, timed in the same blocks and summarised by the same median
 * as EveryO. The ceiling (copy_bw) is the best of many tries taken
 * apart from the kernels; on a shared machine whose bandwidth moves from
 * minute to minute, a median set against a best understates every row.
 * "%copy" (copy ms / EveryO ms) compares like with like.
 *
 * IMPL_CACHE, for the same rows at one thread: EveryO's own kernel run
 * over the case's first rows (CACHE_BYTES of the bytes it moves, and at
 * least CACHE_MIN_ROWS rows, so the pipelining across rows and any
 * per-call work are there as in the full call) again and again, as many
 * rows in all as the case has. Its data then stays in cache (L2 for
 * short rows, L3 for rows of 50257) and the time is the kernel's
 * arithmetic and cache traffic without the trip to memory (a slice's
 * output is too small to be streamed, so its stores are plain ones, and
 * layernorm writes each row right after its sums instead of one row
 * behind: the same arithmetic). A kernel can be no faster than the
 * larger of the two: the copy when it is bound by memory, its own
 * in-cache time when by arithmetic. "%cache" is cache
 * ms / EveryO ms, and the summary below the table names the bound of
 * each such row. */
enum { IMPL_EO, IMPL_BLAS, IMPL_TORCH, IMPL_NAIVE, IMPL_COPY, IMPL_CACHE, NIMPL };
static const char *const impl_name[NIMPL] = {"EveryO", "OpenBLAS", "PyTorch", "naive C",
                                             "copy", "in cache"};
#define CACHE_BYTES ((double)(256 << 10))
#define CACHE_MIN_ROWS 8

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void *xmalloc(size_t bytes)
{
    void *p = NULL;
    if (posix_memalign(&p, 64, bytes ? bytes : 64) != 0) {
        fprintf(stderr, "eo-bench: out of memory (%zu bytes)\n", bytes);
        exit(1);
    }
    return p;
}

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static float frand(void) /* in [-1, 1) */
{
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    return (float)(rng >> 40) * (2.0f / 16777216.0f) - 1.0f;
}
static float *rand_array(size_t n, float scale)
{
    float *p = xmalloc(n * sizeof(float));
    for (size_t i = 0; i < n; i++)
        p[i] = scale * frand();
    return p;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}
static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* ---- options ------------------------------------------------------------ */

typedef struct options {
    int threads[MAX_THREADS], nthreads;
    int quick;
    const char *csv, *svg, *filter, *python, *torch_script;
    int no_blas, no_torch, no_naive;
    int ref_env; /* --ref-env: keep OPENBLAS_CORETYPE / ATEN_CPU_CAPABILITY for the references */
} options;

static options opt = {{1, 2}, 2, 0, NULL, NULL, NULL, NULL, "tools/bench/bench_torch.py", 0, 0, 0, 0};

/* ---- the machine's ceilings ---------------------------------------------- */

static double fma_peak[MAX_THREADS + 1]; /* GFLOP/s, by thread count */
/* The memcpy size: well beyond any cache, so it measures memory. */
static int copy_mib(void) { return opt.quick ? 64 : 256; }
static double copy_bw[MAX_THREADS + 1];  /* GB/s (bytes read + written) */
static const char *peak_kind = "scalar";
/* ns per element of the row kernels' vector exp (eo_v8_exp_neg, the one
 * softmax keeps; eo_v16_exp_sat on the AVX-512 kernels): the bound of a row kernel whose arithmetic, not its
 * memory, is the limit (a 4096 x 1024 softmax is 4M exps). Measured on
 * a 4 KiB row in L1, each exp's argument loaded and its result summed,
 * four independent sums, as the kernels' exp walk does. 0: not measured
 * (no AVX2). One thread. */
static double exp_ns;
static volatile float sink;

/* The loops behind the ceilings, in the widest instruction set the CPU
 * has (tools/bench/ceilings.h); NULL: a plain C loop of mul + add. */
static const eo_ceil_isa *ceil_fma;
/* The streaming copy (any vector set will do: it measures memory). */
static const eo_ceil_isa *ceil_copy;
/* The exp of the kernel variant in use (EO_CPU applied): the row kernels' own. */
static const eo_ceil_isa *ceil_exp;

static void pick_ceilings(void)
{
    const uint32_t f = eo_tool_cpu_features();
    const uint32_t avx2 = EO_CPUF_AVX2 | EO_CPUF_FMA;
    const eo_ceil_isa *a2 = (f & avx2) == avx2 && eo_ceil_avx2.flops_per_iter ? &eo_ceil_avx2 : NULL;
    const eo_ceil_isa *a5 =
        (f & EO_CPUF_AVX512F) && eo_ceil_avx512.flops_per_iter ? &eo_ceil_avx512 : NULL;
    ceil_fma = a5 ? a5 : a2;
    ceil_copy = a2;
    switch (eo_tool_cpu_kernels_isa()) {
    case EO_ISA_AVX512: ceil_exp = a5; break;
    case EO_ISA_AVX2: ceil_exp = a2; break;
    case EO_ISA_NATIVE: ceil_exp = a5 ? a5 : a2; break;
    default: ceil_exp = NULL; /* the base kernels' exp is libm's, per element */
    }
    peak_kind = ceil_fma ? ceil_fma->name : "scalar mul + add (no vector FMA on this CPU or build)";
}

/* Twelve independent multiply-add chains, the portable way (see
 * tools/bench/ceil_avx2.c for why twelve). */
static void fma_loop_c(long iters)
{
    volatile float seed = 0.5f;
    float a[12];
    for (int j = 0; j < 12; j++)
        a[j] = seed + (float)j;
    for (long i = 0; i < iters; i++)
        for (int j = 0; j < 12; j++)
            a[j] = a[j] * 0.999f + 1e-4f;
    float s = 0;
    for (int j = 0; j < 12; j++)
        s += a[j];
    sink = s;
}

static int fma_flops_per_iter(void) { return ceil_fma ? ceil_fma->flops_per_iter : 12 * 2; }

static void peak_body(void *arg, int64_t begin, int64_t end, int worker)
{
    (void)worker;
    for (int64_t i = begin; i < end; i++) {
        if (ceil_fma)
            ceil_fma->fma_loop(*(long *)arg);
        else
            fma_loop_c(*(long *)arg);
    }
}

typedef struct copy_job {
    char *dst;
    const char *src;
    size_t bytes;
    int parts;
} copy_job;

static void copy_body(void *arg, int64_t begin, int64_t end, int worker)
{
    (void)worker;
    const copy_job *c = arg;
    for (int64_t i = begin; i < end; i++) {
        size_t lo = c->bytes * (size_t)i / (size_t)c->parts;
        size_t hi = c->bytes * (size_t)(i + 1) / (size_t)c->parts;
        memcpy(c->dst + lo, c->src + lo, hi - lo);
    }
}

/* The streaming-store copy (tools/bench/ceil_avx2.c says why), per part. */
static void stream_copy_body(void *arg, int64_t begin, int64_t end, int worker)
{
    (void)worker;
    const copy_job *c = arg;
    for (int64_t i = begin; i < end; i++) {
        size_t lo = c->bytes * (size_t)i / (size_t)c->parts;
        size_t hi = c->bytes * (size_t)(i + 1) / (size_t)c->parts;
        ceil_copy->stream_copy(c->dst + lo, c->src + lo, hi - lo);
    }
}

/* The exp ceiling: best of several short tries, like the FMA peak. */
static void measure_exp(void)
{
    if (!ceil_exp || !ceil_exp->exp_loop)
        return;
    static float x[1024];
    for (int j = 0; j < 1024; j++)
        x[j] = -20.0f * (float)j / 1024.0f; /* the range softmax terms live in */
    const int reps = 2000;
    for (int t = 0; t < (opt.quick ? 8 : 24); t++) {
        double t0 = now_s();
        sink = (float)ceil_exp->exp_loop(x, reps);
        double ns = (now_s() - t0) * 1e9 / (1024.0 * reps);
        if (exp_ns == 0 || ns < exp_ns)
            exp_ns = ns;
    }
}

/* Both ceilings for each thread count: the best of several tries (a
 * ceiling is a maximum; noise only ever lowers it). The FMA tries are
 * short (a few milliseconds, under a scheduler time slice) and many, so
 * on a shared machine some of them run undisturbed. Called before and
 * after the kernels, keeping the better figure, so a burst of load from
 * another process at the start does not leave a ceiling too low. */
static void measure_ceilings(eo_par *pars)
{
    pick_ceilings();
    measure_exp();
    long iters = 1000000;
    int fma_tries = opt.quick ? 8 : 24;
    size_t bytes = (size_t)copy_mib() << 20;
    char *src = xmalloc(bytes), *dst = xmalloc(bytes);
    memset(src, 1, bytes);
    memset(dst, 2, bytes);
    for (int ti = 0; ti < opt.nthreads; ti++) {
        int t = opt.threads[ti];
        eo_par *par = &pars[t];
        double best = 0;
        for (int r = 0; r < fma_tries; r++) {
            double t0 = now_s();
            eo_par_for(par, t, peak_body, &iters);
            double rate = (double)fma_flops_per_iter() * (double)iters * t / (now_s() - t0) / 1e9;
            if (rate > best)
                best = rate;
        }
        if (best > fma_peak[t])
            fma_peak[t] = best;
        copy_job cj = {dst, src, bytes, t};
        best = 0;
        for (int r = 0; r < 5; r++) {
            double t0 = now_s();
            eo_par_for(par, t, copy_body, &cj);
            double rate = 2.0 * (double)bytes / (now_s() - t0) / 1e9;
            if (rate > best)
                best = rate;
            if (ceil_copy) {
                t0 = now_s();
                eo_par_for(par, t, stream_copy_body, &cj);
                rate = 2.0 * (double)bytes / (now_s() - t0) / 1e9;
                if (rate > best)
                    best = rate;
            }
        }
        if (best > copy_bw[t])
            copy_bw[t] = best;
    }
    free(src);
    free(dst);
}

/* ---- OpenBLAS through dlopen ----------------------------------------------- */

/* cblas_sgemm's ABI: the enum arguments are ints (101 row-major, 111 no
 * transpose, 112 transpose). */
typedef void sgemm_fn(int order, int ta, int tb, int m, int n, int k, float alpha,
                      const float *a, int lda, const float *b, int ldb, float beta, float *c,
                      int ldc);
static sgemm_fn *blas_sgemm;
static void (*blas_set_threads)(int);
static char blas_why[64] = "not loaded";
static char blas_lib[64];

/* ---- the references' own kernel choice --------------------------------------
 * OpenBLAS reads OPENBLAS_CORETYPE when it loads and PyTorch reads
 * ATEN_CPU_CAPABILITY when it starts; either pins the reference to a
 * kernel set below its best (OPENBLAS_CORETYPE=Haswell on an AVX-512
 * machine halves its matmul), and a ratio against a pinned reference
 * flatters EveryO. So by default both are removed from this process's
 * environment before OpenBLAS is opened or PyTorch started: each reference
 * runs what it would choose itself. --ref-env keeps them; the output then
 * says the reference was pinned, by what, in its header and under the
 * table. */
static const char *const ref_vars[] = {"OPENBLAS_CORETYPE", "ATEN_CPU_CAPABILITY"};
static char ref_env_set[2][64]; /* the value found, "" if unset */

static void prepare_ref_env(void)
{
    for (int i = 0; i < 2; i++) {
        const char *v = getenv(ref_vars[i]);
        snprintf(ref_env_set[i], sizeof ref_env_set[i], "%s", v ? v : "");
        if (v && !opt.ref_env)
            unsetenv(ref_vars[i]);
    }
}

/* One line on what a reference's kernel choice was: "its own choice",
 * with the variable that was removed, or "PINNED by VAR=VALUE". */
static void ref_env_note(int i, char *buf, size_t len)
{
    if (!ref_env_set[i][0])
        snprintf(buf, len, "its own choice (%s unset)", ref_vars[i]);
    else if (opt.ref_env)
        snprintf(buf, len, "PINNED by %s=%s (--ref-env): possibly below its best, ratios flatter EveryO",
                 ref_vars[i], ref_env_set[i]);
    else
        snprintf(buf, len, "its own choice (%s=%s was set here and is removed for it; --ref-env keeps it)",
                 ref_vars[i], ref_env_set[i]);
}

static char blas_core[160]; /* openblas_get_corename / _config, when it has them */

static void load_blas(void)
{
    if (opt.no_blas) {
        snprintf(blas_why, sizeof blas_why, "--no-blas");
        return;
    }
    static const char *const names[] = {"libopenblas.so.0", "libopenblas.so", "libblas.so.3"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        void *h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
        if (!h)
            continue;
        void *f = dlsym(h, "cblas_sgemm");
        if (!f) {
            dlclose(h);
            continue;
        }
        /* Object to function pointer: POSIX guarantees this works for
         * dlsym; memcpy keeps ISO C's pedantic mode quiet about it. */
        memcpy(&blas_sgemm, &f, sizeof f);
        void *s = dlsym(h, "openblas_set_num_threads");
        if (s)
            memcpy(&blas_set_threads, &s, sizeof s);
        snprintf(blas_lib, sizeof blas_lib, "%s", names[i]);
        /* Which kernel set OpenBLAS picked for this CPU (or was pinned to). */
        void *cn = dlsym(h, "openblas_get_corename"), *cf = dlsym(h, "openblas_get_config");
        char *(*corename)(void) = NULL, *(*config)(void) = NULL;
        if (cn)
            memcpy(&corename, &cn, sizeof cn);
        if (cf)
            memcpy(&config, &cf, sizeof cf);
        if (corename)
            snprintf(blas_core, sizeof blas_core, "kernel %s; %s", corename(),
                     config ? config() : "no openblas_get_config");
        else
            snprintf(blas_core, sizeof blas_core, "kernel unknown (no openblas_get_corename: "
                     "not OpenBLAS, perhaps the reference BLAS)");
        return;
    }
    snprintf(blas_why, sizeof blas_why, "no libopenblas or libblas with cblas_sgemm");
}

/* ---- the kernels and their naive twins ---------------------------------------- */

typedef enum kind {
    K_MATMUL, K_SOFTMAX, K_LOG_SOFTMAX, K_SOFTMAX_BWD, K_LAYERNORM, K_LAYERNORM_BWD,
    K_GELU, K_GELU_BWD, K_XENT, K_XENT_BWD, K_ADAMW, K_ATTN, K_ATTN_BWD
} kind;

static const char *const kind_name[] = {"matmul",    "softmax",       "log_softmax",
                                        "softmax_bwd", "layernorm",   "layernorm_bwd",
                                        "gelu",      "gelu_bwd",      "xent",
                                        "xent_bwd",  "adamw",         "attention",
                                        "attention_bwd"};

typedef struct bcase {
    kind k;
    const char *note; /* what this shape is in a model, for the table */
    int ta, tb, share_a;
    int64_t batch, M, N, K; /* matmul; attention: B, H, T, D in that order */
    int64_t rows, cols;     /* the others */
} bcase;

/* Everything a case needs at run time. */
typedef struct state {
    const bcase *c;
    eo_exec ex; /* the kernels' execution handle: the thread hook */
    int threads;
    float *A, *B, *C, *ws_f;
    float *x, *y, *dy, *dx, *w, *b, *mean, *rstd, *dw, *db, *m, *v, *lse, *loss, *dloss;
    int32_t *target;
    float *aq, *ak, *av, *o, *alse, *dout, *dq, *dk, *dv; /* attention */
    void *ws;
    char *csrc, *cdst; /* IMPL_COPY's buffers, cbytes each */
    size_t cbytes;
    int64_t cache_rows; /* IMPL_CACHE: rows per call */
} state;

static int64_t lda_of(const bcase *c) { return c->ta ? c->M : c->K; }
static int64_t ldb_of(const bcase *c) { return c->tb ? c->K : c->N; }

static void naive_matmul(const state *s)
{
    const bcase *c = s->c;
    int64_t lda = lda_of(c), ldb = ldb_of(c), M = c->M, N = c->N, K = c->K;
    for (int64_t bt = 0; bt < c->batch; bt++) {
        const float *A = s->A + (c->share_a ? 0 : bt * M * K), *B = s->B + bt * K * N;
        float *C = s->C + bt * M * N;
        /* i-k-j: the inner loop walks a row of B and a row of C. */
        for (int64_t i = 0; i < M; i++) {
            float *ci = C + i * N;
            for (int64_t j = 0; j < N; j++)
                ci[j] = 0;
            for (int64_t k = 0; k < K; k++) {
                float a = c->ta ? A[k * lda + i] : A[i * lda + k];
                for (int64_t j = 0; j < N; j++)
                    ci[j] += a * (c->tb ? B[j * ldb + k] : B[k * ldb + j]);
            }
        }
    }
}

static void naive_softmax(int log, int64_t rows, int64_t cols, const float *x, float *y)
{
    for (int64_t r = 0; r < rows; r++) {
        const float *xr = x + r * cols;
        float *yr = y + r * cols;
        float mx = -INFINITY, sum = 0;
        for (int64_t j = 0; j < cols; j++)
            mx = xr[j] > mx ? xr[j] : mx;
        for (int64_t j = 0; j < cols; j++)
            sum += expf(xr[j] - mx);
        for (int64_t j = 0; j < cols; j++)
            yr[j] = log ? xr[j] - mx - logf(sum) : expf(xr[j] - mx) / sum;
    }
}

static void naive_softmax_bwd(int64_t rows, int64_t cols, const float *y, const float *dy,
                              float *dx)
{
    for (int64_t r = 0; r < rows; r++) {
        const float *yr = y + r * cols, *gr = dy + r * cols;
        float dot = 0;
        for (int64_t j = 0; j < cols; j++)
            dot += gr[j] * yr[j];
        for (int64_t j = 0; j < cols; j++)
            dx[r * cols + j] = yr[j] * (gr[j] - dot);
    }
}

/* Causal attention the plain way, one query row at a time: scores
 * against the visible keys, softmax, weighted sum of the values. ws_f
 * holds one row of T scores. */
static void naive_attention(const state *s)
{
    const bcase *c = s->c;
    const int64_t BH = c->batch * c->M, T = c->N, D = c->K;
    const float scale = 1.0f / sqrtf((float)D);
    for (int64_t h = 0; h < BH; h++) {
        const float *q = s->aq + h * T * D, *k = s->ak + h * T * D, *v = s->av + h * T * D;
        float *o = s->o + h * T * D, *p = s->ws_f;
        for (int64_t i = 0; i < T; i++) {
            float mx = -INFINITY, sum = 0;
            for (int64_t j = 0; j <= i; j++) {
                float dot = 0;
                for (int64_t d = 0; d < D; d++)
                    dot += q[i * D + d] * k[j * D + d];
                p[j] = dot * scale;
                mx = p[j] > mx ? p[j] : mx;
            }
            for (int64_t j = 0; j <= i; j++) {
                p[j] = expf(p[j] - mx);
                sum += p[j];
            }
            for (int64_t d = 0; d < D; d++)
                o[i * D + d] = 0;
            for (int64_t j = 0; j <= i; j++)
                for (int64_t d = 0; d < D; d++)
                    o[i * D + d] += p[j] / sum * v[j * D + d];
        }
    }
}

static void naive_layernorm(const state *s)
{
    int64_t rows = s->c->rows, cols = s->c->cols;
    for (int64_t r = 0; r < rows; r++) {
        const float *xr = s->x + r * cols;
        float mean = 0, var = 0;
        for (int64_t j = 0; j < cols; j++)
            mean += xr[j];
        mean /= (float)cols;
        for (int64_t j = 0; j < cols; j++)
            var += (xr[j] - mean) * (xr[j] - mean);
        float rstd = 1.0f / sqrtf(var / (float)cols + 1e-5f);
        for (int64_t j = 0; j < cols; j++)
            s->y[r * cols + j] = (xr[j] - mean) * rstd * s->w[j] + s->b[j];
        s->mean[r] = mean;
        s->rstd[r] = rstd;
    }
}

static void naive_layernorm_bwd(const state *s)
{
    int64_t rows = s->c->rows, cols = s->c->cols;
    for (int64_t r = 0; r < rows; r++) {
        const float *xr = s->x + r * cols, *gr = s->dy + r * cols;
        float mg = 0, mgx = 0;
        for (int64_t j = 0; j < cols; j++) {
            float xhat = (xr[j] - s->mean[r]) * s->rstd[r];
            mg += gr[j] * s->w[j];
            mgx += gr[j] * s->w[j] * xhat;
            s->dw[j] += gr[j] * xhat;
            s->db[j] += gr[j];
        }
        mg /= (float)cols;
        mgx /= (float)cols;
        for (int64_t j = 0; j < cols; j++) {
            float xhat = (xr[j] - s->mean[r]) * s->rstd[r];
            s->dx[r * cols + j] += s->rstd[r] * (gr[j] * s->w[j] - mg - xhat * mgx);
        }
    }
}

static const float GELU_K = 0.7978845608f; /* sqrt(2/pi) */

static void naive_gelu(int64_t n, const float *x, float *y)
{
    for (int64_t i = 0; i < n; i++)
        y[i] = 0.5f * x[i] * (1.0f + tanhf(GELU_K * (x[i] + 0.044715f * x[i] * x[i] * x[i])));
}

static void naive_gelu_bwd(int64_t n, const float *x, const float *dy, float *dx)
{
    for (int64_t i = 0; i < n; i++) {
        float u = GELU_K * (x[i] + 0.044715f * x[i] * x[i] * x[i]), t = tanhf(u);
        float du = GELU_K * (1.0f + 3 * 0.044715f * x[i] * x[i]);
        dx[i] = dy[i] * (0.5f * (1.0f + t) + 0.5f * x[i] * (1.0f - t * t) * du);
    }
}

static void naive_xent(const state *s)
{
    int64_t rows = s->c->rows, cols = s->c->cols;
    double total = 0;
    for (int64_t r = 0; r < rows; r++) {
        const float *xr = s->x + r * cols;
        float mx = -INFINITY, sum = 0;
        for (int64_t j = 0; j < cols; j++)
            mx = xr[j] > mx ? xr[j] : mx;
        for (int64_t j = 0; j < cols; j++)
            sum += expf(xr[j] - mx);
        s->lse[2 * r] = mx; /* the kernel's stats: max and log-sum, kept apart */
        s->lse[2 * r + 1] = logf(sum);
        total += (mx - xr[s->target[r]]) + s->lse[2 * r + 1];
    }
    s->loss[0] = (float)(total / (double)rows);
}

static void naive_xent_bwd(const state *s)
{
    int64_t rows = s->c->rows, cols = s->c->cols;
    float scale = s->dloss[0] / (float)rows;
    for (int64_t r = 0; r < rows; r++)
        for (int64_t j = 0; j < cols; j++)
            s->dx[r * cols + j] += scale * (expf((s->x[r * cols + j] - s->lse[2 * r]) - s->lse[2 * r + 1]) -
                                            (j == s->target[r] ? 1.0f : 0.0f));
}

enum { ADAM_STEP = 10 };
static void naive_adamw(int64_t n, float *w, const float *g, float *m, float *v)
{
    const float lr = 1e-3f, b1 = 0.9f, b2 = 0.999f, eps = 1e-8f, wd = 0.01f;
    float c1 = 1.0f - powf(b1, ADAM_STEP), c2 = 1.0f - powf(b2, ADAM_STEP);
    for (int64_t i = 0; i < n; i++) {
        w[i] -= lr * wd * w[i];
        m[i] = b1 * m[i] + (1 - b1) * g[i];
        v[i] = b2 * v[i] + (1 - b2) * g[i] * g[i];
        w[i] -= lr * (m[i] / c1) / (sqrtf(v[i] / c2) + eps);
    }
}

/* One call of implementation `impl` on the case. */
static void run_copy_ref(const state *s);
static void run_cache_ref(const state *s);

static void run_impl(int impl, const state *s)
{
    if (impl == IMPL_COPY) {
        run_copy_ref(s);
        return;
    }
    if (impl == IMPL_CACHE) {
        run_cache_ref(s);
        return;
    }
    const bcase *c = s->c;
    int64_t rows = c->rows, cols = c->cols, n = rows * cols;
    switch (c->k) {
    case K_MATMUL:
        if (impl == IMPL_EO) {
            eo_k_matmul(c->ta, c->tb, c->batch, c->M, c->N, c->K, s->A, lda_of(c),
                        c->share_a ? 0 : c->M * c->K, s->B, ldb_of(c), c->K * c->N, 0.0f, s->C,
                        c->N, c->M * c->N, s->ws, &s->ex);
        } else if (impl == IMPL_BLAS) {
            for (int64_t bt = 0; bt < c->batch; bt++)
                blas_sgemm(101, c->ta ? 112 : 111, c->tb ? 112 : 111, (int)c->M, (int)c->N,
                           (int)c->K, 1.0f, s->A + (c->share_a ? 0 : bt * c->M * c->K),
                           (int)lda_of(c), s->B + bt * c->K * c->N, (int)ldb_of(c), 0.0f,
                           s->C + bt * c->M * c->N, (int)c->N);
        } else {
            naive_matmul(s);
        }
        break;
    case K_SOFTMAX:
    case K_LOG_SOFTMAX:
        if (impl == IMPL_EO)
            eo_k_softmax(c->k == K_LOG_SOFTMAX, rows, cols, s->x, s->y, s->ws, &s->ex);
        else
            naive_softmax(c->k == K_LOG_SOFTMAX, rows, cols, s->x, s->y);
        break;
    case K_SOFTMAX_BWD:
        if (impl == IMPL_EO)
            /* the _set form: what the core calls for a gradient that does not
             * exist yet, and what PyTorch's backward does (a fresh dx) */
            eo_k_softmax_backward_set(0, rows, cols, s->y, s->dy, s->dx, &s->ex);
        else
            naive_softmax_bwd(rows, cols, s->y, s->dy, s->dx);
        break;
    case K_LAYERNORM:
        if (impl == IMPL_EO)
            eo_k_layernorm(rows, cols, s->x, s->w, s->b, 1e-5f, s->y, s->mean, s->rstd, &s->ex);
        else
            naive_layernorm(s);
        break;
    case K_LAYERNORM_BWD:
        if (impl == IMPL_EO)
            eo_k_layernorm_backward(rows, cols, s->x, s->w, s->mean, s->rstd, s->dy, s->dx,
                                    s->dw, s->db, s->ws, &s->ex);
        else
            naive_layernorm_bwd(s);
        break;
    case K_GELU:
        if (impl == IMPL_EO)
            eo_k_unary(EO_UN_GELU_TANH, n, s->x, s->y, 0.0f, &s->ex);
        else
            naive_gelu(n, s->x, s->y);
        break;
    case K_GELU_BWD:
        if (impl == IMPL_EO)
            eo_k_unary_backward_set(EO_UN_GELU_TANH, n, s->x, s->y, s->dy, s->dx, 0.0f, &s->ex);
        else
            naive_gelu_bwd(n, s->x, s->dy, s->dx);
        break;
    case K_XENT:
        if (impl == IMPL_EO)
            eo_k_cross_entropy(rows, cols, s->x, s->target, -100, EO_CE_MEAN, s->lse, s->loss,
                               &s->ex);
        else
            naive_xent(s);
        break;
    case K_XENT_BWD:
        if (impl == IMPL_EO)
            eo_k_cross_entropy_backward(rows, cols, s->x, s->target, -100, EO_CE_MEAN, s->lse, s->dloss,
                                        s->dx, &s->ex);
        else
            naive_xent_bwd(s);
        break;
    case K_ADAMW:
        if (impl == IMPL_EO)
            eo_k_adamw(n, s->w, s->dy, s->m, s->v, 1e-3f, 0.9f, 0.999f, 1e-8f, 0.01f, ADAM_STEP,
                       &s->ex);
        else
            naive_adamw(n, s->w, s->dy, s->m, s->v);
        break;
    case K_ATTN:
    case K_ATTN_BWD: {
        static const int64_t no_mask[4] = {0, 0, 0, 0};
        const int64_t B = c->batch, H = c->M, T = c->N, D = c->K;
        const float scale = 1.0f / sqrtf((float)D);
        if (impl == IMPL_NAIVE)
            naive_attention(s); /* the forward only */
        else if (c->k == K_ATTN)
            eo_k_attention(B, H, T, T, D, s->aq, s->ak, s->av, NULL, no_mask, 1, scale, s->o,
                           s->alse, s->ws, &s->ex);
        else
            eo_k_attention_backward(B, H, T, T, D, s->aq, s->ak, s->av, NULL, no_mask, 1, scale,
                                    s->o, s->alse, s->dout, s->dq, s->dk, s->dv, NULL, no_mask,
                                    s->ws, &s->ex);
        break;
    }
    }
}

/* The same-bytes copy: each of the row's threads copies its share, with
 * the ceiling's streaming loop where there is one. */
static void run_copy_ref(const state *s)
{
    copy_job cj = {s->cdst, s->csrc, s->cbytes, s->threads};
    eo_par_for(&s->ex.par, s->threads, ceil_copy ? stream_copy_body : copy_body, &cj);
}

/* The in-cache reference: the EveryO kernel on rows [0, cache_rows),
 * repeated until it has done as many rows as the case (the last call
 * takes what is left). Row kernels and elementwise ops alike read only
 * rows and cols, so a case with fewer rows is the same kernel on the
 * first rows of the same buffers. */
static void run_cache_ref(const state *s)
{
    bcase c = *s->c;
    state t = *s;
    t.c = &c;
    for (int64_t done = 0; done < s->c->rows; done += c.rows) {
        const int64_t left = s->c->rows - done;
        c.rows = left < s->cache_rows ? left : s->cache_rows;
        run_impl(IMPL_EO, &t);
    }
}

/* Work of one call: flops for matmul and attention, else the bytes the
 * kernel's contract makes it read and write (a "+=" output is read and
 * written).
 *
 * Attention, causal, B*H heads of T x T scores and head size D: the
 * forward is two products, S = Q Kt and O = P V, 2 T T D flops each over
 * the full square, but the causal mask leaves only the lower half to
 * compute: 4 B H T T D / 2 (softmax's exps not counted). The backward
 * recomputes S and takes dV = Pt dO, dP = dO Vt, dQ = dS K, dK = dSt Q:
 * five products where the forward has two, so 2.5 times the forward. */
static double case_work(const bcase *c, int *is_flops)
{
    double n = (double)c->rows * (double)c->cols, f = sizeof(float);
    double attn = 4.0 * (double)c->batch * (double)c->M * (double)c->N * (double)c->N *
                  (double)c->K / 2.0;
    *is_flops = c->k == K_MATMUL || c->k == K_ATTN || c->k == K_ATTN_BWD;
    switch (c->k) {
    case K_MATMUL: return 2.0 * (double)c->batch * (double)c->M * (double)c->N * (double)c->K;
    case K_SOFTMAX:
    case K_LOG_SOFTMAX:
    case K_LAYERNORM:
    case K_GELU: return 2 * n * f;            /* x in, y out */
    case K_SOFTMAX_BWD: return 3 * n * f;     /* y, dy in; dx out (the _set form) */
    case K_LAYERNORM_BWD: return 4 * n * f;   /* x, dy in; dx in and out */
    case K_GELU_BWD: return 3 * n * f;        /* x, dy in; dx out (the _set form) */
    case K_XENT: return n * f;                /* logits in */
    case K_XENT_BWD: return 3 * n * f;        /* logits in; dlogits in and out */
    case K_ADAMW: return 7 * n * f;           /* w, g, m, v in; w, m, v out */
    case K_ATTN: return attn;
    case K_ATTN_BWD: return 2.5 * attn;
    }
    return 0;
}

static void case_shape(const bcase *c, char *out, size_t cap)
{
    if (c->k == K_MATMUL) {
        char b[24] = "";
        if (c->batch > 1)
            snprintf(b, sizeof b, "[%lld] ", (long long)c->batch);
        snprintf(out, cap, "%s%lldx%lld·%lldx%lld", b, (long long)c->M, (long long)c->K,
                 (long long)c->K, (long long)c->N);
    } else if (c->k == K_ATTN || c->k == K_ATTN_BWD) {
        snprintf(out, cap, "B%lld H%lld T%lld D%lld", (long long)c->batch, (long long)c->M,
                 (long long)c->N, (long long)c->K);
    } else {
        snprintf(out, cap, "%lldx%lld", (long long)c->rows, (long long)c->cols);
    }
}

static void case_label(const bcase *c, char *out, size_t cap)
{
    if (c->k == K_MATMUL)
        snprintf(out, cap, "matmul %c%c", c->ta ? 't' : 'n', c->tb ? 't' : 'n');
    else
        snprintf(out, cap, "%s", kind_name[c->k]);
}

static state state_make(const bcase *c, const eo_par *par, int threads)
{
    state s;
    memset(&s, 0, sizeof s);
    s.c = c;
    if (par)
        s.ex.par = *par;
    s.threads = threads;
    if (c->k == K_MATMUL) {
        size_t a = (size_t)((c->share_a ? 1 : c->batch) * c->M * c->K);
        size_t b = (size_t)(c->batch * c->K * c->N), cc = (size_t)(c->batch * c->M * c->N);
        s.A = rand_array(a, 1.0f);
        s.B = rand_array(b, 1.0f);
        s.C = rand_array(cc, 1.0f);
        s.ws = xmalloc(eo_k_matmul_ws(c->M, c->N, c->K, threads));
        return s;
    }
    if (c->k == K_ATTN || c->k == K_ATTN_BWD) {
        const size_t T = (size_t)c->N, nx = (size_t)(c->batch * c->M) * T * (size_t)c->K;
        s.aq = rand_array(nx, 1.0f);
        s.ak = rand_array(nx, 1.0f);
        s.av = rand_array(nx, 1.0f);
        s.o = rand_array(nx, 0.0f);
        s.alse = rand_array((size_t)(c->batch * c->M) * T, 0.0f);
        s.dout = rand_array(nx, 1.0f);
        s.dq = rand_array(nx, 0.0f);
        s.dk = rand_array(nx, 0.0f);
        s.dv = rand_array(nx, 0.0f);
        s.ws_f = rand_array(T, 0.0f);
        s.ws = xmalloc(eo_k_attention_ws(c->N, c->N, c->K, threads));
        /* The saved forward results the backward reads. */
        if (c->k == K_ATTN_BWD)
            eo_k_attention(c->batch, c->M, c->N, c->N, c->K, s.aq, s.ak, s.av, NULL,
                           (const int64_t[4]){0, 0, 0, 0}, 1, 1.0f / sqrtf((float)c->K), s.o,
                           s.alse, s.ws, NULL);
        return s;
    }
    size_t n = (size_t)(c->rows * c->cols), r = (size_t)c->rows, cols = (size_t)c->cols;
    int is_flops;
    s.cbytes = (size_t)(case_work(c, &is_flops) / 2);
    {
        const double per_row = c->rows > 0 ? 2.0 * (double)s.cbytes / (double)c->rows : 1.0;
        const double fit = floor(CACHE_BYTES / per_row);
        s.cache_rows = fit < CACHE_MIN_ROWS ? CACHE_MIN_ROWS : (int64_t)fit;
        s.cache_rows = s.cache_rows < c->rows ? s.cache_rows : c->rows;
    }
    s.csrc = xmalloc(s.cbytes);
    s.cdst = xmalloc(s.cbytes);
    memset(s.csrc, 1, s.cbytes);
    memset(s.cdst, 2, s.cbytes);
    s.x = rand_array(n, 3.0f);
    s.dy = rand_array(n, 1.0f);
    s.dx = rand_array(n, 0.0f);
    s.y = rand_array(n, 0.0f);
    s.w = rand_array(c->k == K_ADAMW ? n : cols, 1.0f);
    s.b = rand_array(cols, 1.0f);
    s.dw = rand_array(cols, 0.0f);
    s.db = rand_array(cols, 0.0f);
    s.mean = rand_array(r, 0.0f);
    s.rstd = rand_array(r, 0.0f);
    s.lse = rand_array(2 * r, 0.0f); /* cross-entropy's stats: [rows, 2] */
    s.loss = rand_array(1, 0.0f);
    s.dloss = rand_array(1, 0.0f);
    s.dloss[0] = 1.0f;
    s.target = xmalloc(r * sizeof(int32_t));
    for (size_t i = 0; i < r; i++) {
        frand();
        s.target[i] = (int32_t)((rng >> 33) % (uint64_t)c->cols);
    }
    /* The saved forward results a backward reads. */
    if (c->k == K_SOFTMAX_BWD)
        eo_k_softmax(0, c->rows, c->cols, s.x, s.y, NULL, NULL);
    if (c->k == K_GELU_BWD)
        eo_k_unary(EO_UN_GELU_TANH, c->rows * c->cols, s.x, s.y, 0.0f, NULL);
    if (c->k == K_LAYERNORM_BWD)
        eo_k_layernorm(c->rows, c->cols, s.x, s.w, s.b, 1e-5f, s.y, s.mean, s.rstd, NULL);
    if (c->k == K_XENT_BWD)
        eo_k_cross_entropy(c->rows, c->cols, s.x, s.target, -100, EO_CE_MEAN, s.lse, s.loss, NULL);
    if (c->k == K_ADAMW) {
        s.m = rand_array(n, 0.01f);
        s.v = rand_array(n, 0.0f);
    }
    if (c->k == K_LAYERNORM_BWD)
        s.ws = xmalloc(eo_k_layernorm_backward_ws(c->rows, c->cols, threads));
    if (c->k == K_SOFTMAX || c->k == K_LOG_SOFTMAX)
        s.ws = xmalloc(eo_k_softmax_ws(c->k == K_LOG_SOFTMAX, c->rows, c->cols, threads) + 1);
    return s;
}

static void state_free(state *s)
{
    float *all[] = {s->A,  s->B,    s->C,    s->x,  s->y,  s->dy,  s->dx,   s->w,
                    s->b,  s->mean, s->rstd, s->dw, s->db, s->m,   s->v,    s->lse,
                    s->loss, s->dloss, s->aq, s->ak, s->av, s->o, s->alse, s->dout,
                    s->dq, s->dk,   s->dv,   s->ws_f};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        free(all[i]);
    free(s->target);
    free(s->ws);
    free(s->csrc);
    free(s->cdst);
}

/* ---- one result row ------------------------------------------------------------ */

typedef struct row {
    const bcase *c;
    char label[24], shape[48];
    int threads, is_flops;
    double work;
    double ms[NIMPL];       /* < 0: not measured */
    char why[NIMPL][48];    /* the reason when not measured */
} row;

static row rows[MAX_ROWS];
static int nrows;

/* ---- parking the other implementation's threads --------------------------------- */

/* CPU time of every thread of this process except the caller. */
static double others_cpu_s(void)
{
    struct timespec p, t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &p);
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (double)(p.tv_sec - t.tv_sec) + 1e-9 * (double)(p.tv_nsec - t.tv_nsec);
}

/* OpenBLAS's workers keep spinning after a call returns (about 2^28
 * cycles, a tenth of a second at 2.5 GHz, before they sleep), and
 * EveryO's pool spins for a short while too; a spinning worker holds
 * one of the two cores the next implementation wants. Rather than
 * guess each library's timeout, wait until the process's other threads
 * stop using CPU: sample their CPU time over 5 ms slices until a slice
 * grows it by under 0.25 ms (a parked worker uses none), at most 1 s.
 * Returns the seconds waited. Sleeping, not a knob of either library,
 * so each keeps the settings it runs with in real programs. */
static double quiesce_wait, quiesce_worst;
static double quiesce(void)
{
    double t0 = now_s(), c0 = others_cpu_s();
    for (;;) {
        struct timespec d = {0, 5000000};
        nanosleep(&d, NULL);
        double c1 = others_cpu_s(), waited = now_s() - t0;
        if (c1 - c0 < 0.25e-3 || waited > 1.0) {
            if (waited > quiesce_worst)
                quiesce_worst = waited;
            return waited;
        }
        c0 = c1;
    }
}

/* Time EveryO and the in-process references in turn. */
static void measure_row(row *R, const eo_par *par)
{
    state s = state_make(R->c, par, R->threads);
    int have[NIMPL] = {1, 0, 0, 0, 0, 0};
    if (R->is_flops) {
        snprintf(R->why[IMPL_COPY], sizeof R->why[0], "bound by arithmetic");
        snprintf(R->why[IMPL_CACHE], sizeof R->why[0], "bound by arithmetic");
    } else {
        have[IMPL_COPY] = 1;
        if (R->threads == 1)
            have[IMPL_CACHE] = 1;
        else
            snprintf(R->why[IMPL_CACHE], sizeof R->why[0], "1 thread only");
    }
    if (R->c->k == K_MATMUL) {
        if (blas_sgemm)
            have[IMPL_BLAS] = 1;
        else
            snprintf(R->why[IMPL_BLAS], sizeof R->why[0], "%.47s", blas_why);
    } else {
        snprintf(R->why[IMPL_BLAS], sizeof R->why[0], "no BLAS routine");
    }
    if (opt.no_naive)
        snprintf(R->why[IMPL_NAIVE], sizeof R->why[0], "--no-naive");
    else if (R->c->k == K_ATTN_BWD)
        snprintf(R->why[IMPL_NAIVE], sizeof R->why[0], "forward only");
    else if (R->threads != 1)
        snprintf(R->why[IMPL_NAIVE], sizeof R->why[0], "1 thread only");
    else if (R->is_flops && R->work > 2.2e9)
        snprintf(R->why[IMPL_NAIVE], sizeof R->why[0], "too slow at this size");
    else if (R->is_flops && R->work > 1e9 && (R->c->ta || R->c->tb))
        snprintf(R->why[IMPL_NAIVE], sizeof R->why[0], "slow; see the nn row");
    else
        have[IMPL_NAIVE] = 1;
    if (have[IMPL_BLAS] && blas_set_threads)
        blas_set_threads(R->threads);

    /* Warm-up (twice: the first call also faults in fresh pages), then
     * enough repeats for about `target` seconds of each, within limits. */
    double target = opt.quick ? 0.05 : 0.3, first[NIMPL] = {0};
    int reps[NIMPL] = {0}, maxreps = opt.quick ? 5 : 30, minreps = opt.quick ? 2 : 5, most = 0;
    for (int i = 0; i < NIMPL; i++) {
        if (!have[i])
            continue;
        run_impl(i, &s);
        double t0 = now_s();
        run_impl(i, &s);
        first[i] = now_s() - t0;
        int n = (int)(target / (first[i] > 1e-9 ? first[i] : 1e-9));
        reps[i] = n < minreps ? minreps : n > maxreps ? maxreps : n;
        if (i == IMPL_NAIVE && first[i] > 0.5) /* a slow reference: few repeats */
            reps[i] = first[i] > 2.0 ? 1 : 3;
        if (reps[i] > most)
            most = reps[i];
    }
    /* Timed in blocks, not call by call: each implementation's repeats
     * are split into BLOCKS blocks, and the blocks alternate (EveryO,
     * OpenBLAS, naive, EveryO, ...), so drift on the shared machine still
     * hits all of them alike. Before each block the other threads of the
     * process are left to park (quiesce), and the block's first call is
     * untimed, so neither pool is timed while the other's workers still
     * spin for the core it needs. */
    enum { BLOCKS = 3 };
    (void)most;
    double *times[NIMPL];
    int done[NIMPL] = {0};
    for (int i = 0; i < NIMPL; i++)
        times[i] = xmalloc((size_t)(reps[i] + 1) * sizeof(double));
    for (int blk = 0; blk < BLOCKS; blk++)
        for (int i = 0; i < NIMPL; i++) {
            if (!have[i])
                continue;
            int upto = reps[i] * (blk + 1) / BLOCKS;
            if (upto <= done[i]) /* the last block always reaches reps[i] >= 1 */
                continue;
            quiesce_wait += quiesce();
            if (i != IMPL_NAIVE) /* one thread, no pool to wake: no untimed call */
                run_impl(i, &s);
            for (; done[i] < upto; done[i]++) {
                double t0 = now_s();
                run_impl(i, &s);
                times[i][done[i]] = now_s() - t0;
            }
        }
    for (int i = 0; i < NIMPL; i++) {
        if (i != IMPL_TORCH)
            R->ms[i] = have[i] ? 1e3 * median(times[i], reps[i]) : -1;
        free(times[i]);
    }
    state_free(&s);
}

/* ---- PyTorch through the helper script --------------------------------------------- */

static int python_has_torch(const char *exe)
{
    char cmd[512];
    snprintf(cmd, sizeof cmd, "%s -c 'import torch' >/dev/null 2>&1", exe);
    return system(cmd) == 0;
}

/* One subprocess per thread count, with the BLAS and OpenMP thread
 * variables set as well as torch.set_num_threads: depending on how it
 * was built, PyTorch's matmul runs in a BLAS that reads only those. */
/* The PyTorch that ran, and its CPU capability and BLAS (bench_torch.py). */
static char torch_version[64], torch_cpu[160];

static void run_torch(void)
{
    const char *why = NULL;
    const char *exe = opt.python;
    /* The system interpreter first — where Debian's python3-torch (the
     * PyTorch the README quotes) installs — then whatever python3 is on
     * PATH. --python picks another. */
    static const char *const candidates[] = {"/usr/bin/python3", "python3"};
    if (opt.no_torch)
        why = "--no-torch";
    else if (access(opt.torch_script, R_OK) != 0)
        why = "helper script not found";
    else if (exe && !python_has_torch(exe))
        why = "torch not importable";
    else if (!exe) {
        for (size_t i = 0; i < sizeof candidates / sizeof candidates[0] && !exe; i++)
            if (python_has_torch(candidates[i]))
                exe = candidates[i];
        if (!exe)
            why = "no python3 with torch";
    }
    for (int ti = 0; ti < opt.nthreads && !why; ti++) {
        int t = opt.threads[ti];
        char path[] = "/tmp/eo-bench-jobs-XXXXXX";
        int fd = mkstemp(path);
        FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
        if (!f) {
            why = "cannot write the job file";
            break;
        }
        int any = 0;
        for (int i = 0; i < nrows; i++) {
            const row *R = &rows[i];
            const bcase *c = R->c;
            if (R->threads != t)
                continue;
            int reps = opt.quick ? 3 : c->k == K_MATMUL && R->work > 1e10 ? 5 : 15;
            if (c->k == K_MATMUL)
                fprintf(f, "%d,matmul,%d,%d,%d,%d,%lld,%lld,%lld,%lld\n", i, t, reps, c->ta, c->tb,
                        (long long)c->batch, (long long)c->M, (long long)c->N, (long long)c->K);
            else if (c->k == K_ATTN || c->k == K_ATTN_BWD)
                fprintf(f, "%d,%s,%d,%d,%lld,%lld,%lld,%lld\n", i, kind_name[c->k], t, reps,
                        (long long)c->batch, (long long)c->M, (long long)c->N, (long long)c->K);
            else
                fprintf(f, "%d,%s,%d,%d,%lld,%lld\n", i, kind_name[c->k], t, reps,
                        (long long)c->rows, (long long)c->cols);
            any = 1;
        }
        if (eo_file_close(f, path, NULL, 0) != EO_OK) {
            remove(path);
            why = "cannot write the job file";
            break;
        }
        if (any) {
            char cmd[1024];
            snprintf(cmd, sizeof cmd,
                     "OPENBLAS_NUM_THREADS=%d OMP_NUM_THREADS=%d MKL_NUM_THREADS=%d %s %s %s",
                     t, t, t, exe, opt.torch_script, path);
            fprintf(stderr, "eo-bench: PyTorch, %d thread(s)...\n", t);
            FILE *p = popen(cmd, "r");
            char line[256];
            while (p && fgets(line, sizeof line, p)) {
                line[strcspn(line, "\r\n")] = 0;
                if (strncmp(line, "#torch,", 7) == 0) {
                    snprintf(torch_version, sizeof torch_version, "%.63s", line + 7);
                    continue;
                }
                if (strncmp(line, "#torch-cpu,", 11) == 0) { /* its CPU capability and BLAS */
                    snprintf(torch_cpu, sizeof torch_cpu, "%.159s", line + 11);
                    continue;
                }
                /* "ID,MS" or "ID,skipped,WHY"; anything else is ignored. */
                char *comma = strchr(line, ','), *end;
                long id = isdigit((unsigned char)line[0]) ? strtol(line, &end, 10) : -1;
                if (!comma || id < 0 || id >= nrows || end != comma)
                    continue;
                row *R = &rows[id];
                if (strncmp(comma + 1, "skipped,", 8) == 0) {
                    snprintf(R->why[IMPL_TORCH], sizeof R->why[0], "%.47s", comma + 9);
                } else {
                    double ms = strtod(comma + 1, &end);
                    if (end != comma + 1 && !*end && ms >= 0)
                        R->ms[IMPL_TORCH] = ms;
                }
            }
            if (p)
                pclose(p);
        }
        remove(path);
    }
    for (int i = 0; i < nrows; i++)
        if (rows[i].ms[IMPL_TORCH] < 0 && !rows[i].why[IMPL_TORCH][0])
            snprintf(rows[i].why[IMPL_TORCH], sizeof rows[i].why[0], "%s",
                     why ? why : "no result from the helper");
    char tnote[200];
    ref_env_note(1, tnote, sizeof tnote);
    if (torch_version[0])
        printf("PyTorch: %s (%s)%s%s, %s\n", torch_version, exe, torch_cpu[0] ? ", " : "", torch_cpu, tnote);
    else
        printf("PyTorch: skipped (%s)\n", why ? why : "no version reported");
}

/* ---- output ------------------------------------------------------------------- */

static char machine[192] = "unknown machine"; /* CPU model and count, for the outputs */

static double rate_of(const row *R, int impl)
{
    return R->work / (R->ms[impl] * 1e-3) / 1e9;
}
static double peak_of(const row *R)
{
    return R->is_flops ? fma_peak[R->threads] : copy_bw[R->threads];
}

static void print_table(void)
{
    printf("\nmatmul shapes are M x K · K x N, [b] a batch of b; nn/nt/tn/tt say which of\n"
           "A, B is stored transposed. A reference column is their time / ours: above 1\n"
           "EveryO is faster. %%peak is of the FMA peak (matmul) or copy bandwidth (the\n"
           "faster of memcpy and a streaming-store copy loop, measured on %d MiB; a kernel\n"
           "whose arrays partly fit in cache can exceed it). %%copy (memory-bound rows):\n"
           "the time of a streaming copy of as many bytes as the kernel moves, timed in\n"
           "the same blocks and taken as the same median, over EveryO's time.\n",
           copy_mib());
    printf("Timing: each implementation's repeats run in 3 blocks, alternating between\n"
           "implementations; before each block the process's other threads are left to\n"
           "park (their CPU time stops growing; OpenBLAS's workers spin ~0.1 s after a\n"
           "call) and the block's first call is untimed; median of the timed calls.\n"
           "Parking waited %.1f s in all, at most %.0f ms once.\n",
           quiesce_wait, 1e3 * quiesce_worst);
    printf("\n%-15s %-24s %3s %10s %14s %6s %6s %6s   %-22s %-22s %-22s\n", "kernel", "shape",
           "thr", "EveryO ms", "rate", "%peak", "%copy", "%cache", "vs OpenBLAS", "vs PyTorch",
           "vs naive C");
    printf("%-15s %-24s %3s %10s %14s %6s %6s %6s   %-22s %-22s %-22s\n", "", "", "", "", "",
           "", "", "", "(their ms / ours)", "(their ms / ours)", "(their ms / ours)");
    /* A skipped reference prints "skipped [n]" and its reason once below
     * the table: the reasons are long and would push the columns apart. */
    const char *notes[16];
    int nnotes = 0;
    for (int i = 0; i < nrows; i++) {
        const row *R = &rows[i];
        char rate[32];
        snprintf(rate, sizeof rate, "%.1f %s", rate_of(R, IMPL_EO),
                 R->is_flops ? "GFLOP/s" : "GB/s");
        /* The shape column holds a UTF-8 middle dot: pad by hand. */
        int shown = (int)strlen(R->shape) - (strstr(R->shape, "·") ? 1 : 0);
        char pct_copy[16] = "-", pct_cache[16] = "-";
        if (R->ms[IMPL_COPY] >= 0)
            snprintf(pct_copy, sizeof pct_copy, "%.0f%%", 100 * R->ms[IMPL_COPY] / R->ms[IMPL_EO]);
        if (R->ms[IMPL_CACHE] >= 0)
            snprintf(pct_cache, sizeof pct_cache, "%.0f%%",
                     100 * R->ms[IMPL_CACHE] / R->ms[IMPL_EO]);
        printf("%-15s %s%*s %3d %10.3f %14s %5.0f%% %6s %6s  ", R->label, R->shape,
               shown < 24 ? 24 - shown : 0, "", R->threads, R->ms[IMPL_EO], rate,
               100 * rate_of(R, IMPL_EO) / peak_of(R), pct_copy, pct_cache);
        static const int refs[] = {IMPL_BLAS, IMPL_TORCH, IMPL_NAIVE};
        for (int j = 0; j < 3; j++) {
            char cell[64];
            int impl = refs[j];
            if (R->ms[impl] >= 0)
                snprintf(cell, sizeof cell, "%.2fx (%.3f)", R->ms[impl] / R->ms[IMPL_EO],
                         R->ms[impl]);
            else {
                int k = 0;
                while (k < nnotes && strcmp(notes[k], R->why[impl]) != 0)
                    k++;
                if (k == nnotes && nnotes < 16)
                    notes[nnotes++] = R->why[impl];
                snprintf(cell, sizeof cell, k < 16 ? "skipped [%d]" : "skipped", k + 1);
            }
            printf(" %-22s", cell);
        }
        printf(" %s\n", R->c->note ? R->c->note : "");
    }
    for (int k = 0; k < nnotes; k++)
        printf("[%d] skipped: %s\n", k + 1, notes[k]);
    char note[200];
    if (blas_sgemm) {
        ref_env_note(0, note, sizeof note);
        printf("OpenBLAS column: %s, %s.\n", blas_core[0] ? blas_core : "kernel unknown", note);
    }
    if (torch_version[0] && strncmp(torch_version, "skipped", 7) != 0) {
        ref_env_note(1, note, sizeof note);
        printf("PyTorch column: %s%s%s, %s.\n", torch_version, torch_cpu[0] ? ", " : "", torch_cpu, note);
    }
    /* Each one-thread memory row's bound: the larger of the same-bytes
     * copy and the kernel's own time in cache (IMPL_CACHE). */
    int said = 0;
    for (int i = 0; i < nrows; i++) {
        const row *R = &rows[i];
        if (R->ms[IMPL_COPY] < 0 || R->ms[IMPL_CACHE] < 0)
            continue;
        if (!said++)
            printf("\nbounds, one thread: the same-bytes copy or the kernel's own time on\n"
                   "data in cache, whichever is longer (medians from the same blocks):\n");
        const int mem = R->ms[IMPL_COPY] >= R->ms[IMPL_CACHE];
        const double bound = mem ? R->ms[IMPL_COPY] : R->ms[IMPL_CACHE];
        printf("  %-15s %-10s copy %7.3f ms, in cache %7.3f ms: bound by %-10s EveryO %7.3f "
               "ms = %3.0f%% of the bound\n",
               R->label, R->shape, R->ms[IMPL_COPY], R->ms[IMPL_CACHE],
               mem ? "memory," : "arithmetic,", R->ms[IMPL_EO], 100.0 * bound / R->ms[IMPL_EO]);
    }
    /* Rows bound by the exponential: at least one exp per element (two
     * where a row is too long to keep: the online max/sum walk). */
    said = 0;
    for (int i = 0; i < nrows && exp_ns > 0; i++) {
        const row *R = &rows[i];
        if (R->threads != 1 || strcmp(R->shape, "4096x1024") != 0 ||
            (strcmp(R->label, "softmax") != 0 && strcmp(R->label, "log_softmax") != 0 &&
             strcmp(R->label, "xent") != 0))
            continue;
        if (!said++)
            printf("\nexp bound (one exp per element at the measured %.3f ns, one thread):\n",
                   exp_ns);
        const double bound = 4096.0 * 1024.0 * exp_ns * 1e-6;
        printf("  %-15s %-10s bound %7.3f ms, EveryO %7.3f ms: %3.0f%% of the bound\n",
               R->label, R->shape, bound, R->ms[IMPL_EO], 100.0 * bound / R->ms[IMPL_EO]);
    }
}

static int write_csv(const char *path)
{
    FILE *f;
    char err[512];
    if (eo_file_create(path, &f, err, sizeof err) != EO_OK) {
        fprintf(stderr, "eo-bench: %s\n", err);
        return 1;
    }
    fprintf(f, "kernel,shape,threads,impl,status,ms,rate,unit,pct_of_peak,ratio_their_ms_over_eo\n");
    for (int t = 1; t <= MAX_THREADS; t++) {
        if (fma_peak[t] > 0)
            fprintf(f, "peak_fma,%s,%d,measured,ok,,%.2f,GFLOP/s,100,\n", peak_kind, t,
                    fma_peak[t]);
        if (copy_bw[t] > 0)
            fprintf(f, "peak_copy,memcpy,%d,measured,ok,,%.2f,GB/s,100,\n", t, copy_bw[t]);
        if (t == 1 && exp_ns > 0)
            fprintf(f, "peak_exp,exp,1,measured,ok,,%.4f,ns/element,100,\n", exp_ns);
    }
    for (int i = 0; i < nrows; i++) {
        const row *R = &rows[i];
        for (int impl = 0; impl < NIMPL; impl++) {
            fprintf(f, "%s,%s,%d,%s,", R->label, R->shape, R->threads, impl_name[impl]);
            if (R->ms[impl] < 0) {
                fprintf(f, "skipped (%s),,,,,\n", R->why[impl]);
                continue;
            }
            fprintf(f, "ok,%.4f,%.3f,%s,%.1f,%.3f\n", R->ms[impl], rate_of(R, impl),
                    R->is_flops ? "GFLOP/s" : "GB/s", 100 * rate_of(R, impl) / peak_of(R),
                    R->ms[impl] / R->ms[IMPL_EO]);
        }
    }
    if (eo_file_close(f, path, err, sizeof err) != EO_OK) {
        fprintf(stderr, "eo-bench: %s\n", err);
        return 1;
    }
    printf("wrote %s\n", path);
    return 0;
}

/* A horizontal bar chart, one group of bars per row, one bar per
 * implementation that ran, length = % of the measured ceiling. */
static int write_svg(const char *path)
{
    FILE *f;
    char err[512];
    if (eo_file_create(path, &f, err, sizeof err) != EO_OK) {
        fprintf(stderr, "eo-bench: %s\n", err);
        return 1;
    }
    static const char *const color[NIMPL] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#999999",
                                             "#9467bd", "#8c564b"};
    const int left = 330, width = 520, bar = 9, pad = 8, top = 72;
    double scale_max = 100;
    int height = top + 40;
    for (int i = 0; i < nrows; i++) {
        int bars = 0;
        for (int impl = 0; impl < NIMPL; impl++)
            if (rows[i].ms[impl] >= 0) {
                bars++;
                double p = 100 * rate_of(&rows[i], impl) / peak_of(&rows[i]);
                if (p > scale_max)
                    scale_max = p;
            }
        height += bars * bar + pad;
    }
    scale_max = ceil(scale_max / 20) * 20;
    fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
               "font-family=\"sans-serif\" font-size=\"10\">\n", left + width + 140, height);
    fprintf(f, "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n");
    fprintf(f, "<text x=\"10\" y=\"18\" font-size=\"13\">EveryO kernels: %% of this machine's "
               "measured peak (FMA for matmul, memcpy bandwidth for the rest), with the rate</text>\n");
    /* The machine and its measured ceilings, so the chart stands alone. */
    fprintf(f, "<text x=\"10\" y=\"32\" fill=\"#444\">");
    for (const char *c = machine; *c; c++) { /* the CPU name as text, XML-escaped */
        if (*c == '&')
            fputs("&amp;", f);
        else if (*c == '<')
            fputs("&lt;", f);
        else if (*c == '>')
            fputs("&gt;", f);
        else
            fputc(*c, f);
    }
    for (int ti = 0; ti < opt.nthreads; ti++) {
        int t = opt.threads[ti];
        fprintf(f, "; %d thr: FMA %.0f GFLOP/s, memcpy %.1f GB/s", t, fma_peak[t], copy_bw[t]);
    }
    fprintf(f, "</text>\n");
    for (int impl = 0; impl < NIMPL; impl++)
        fprintf(f, "<rect x=\"%d\" y=\"40\" width=\"10\" height=\"10\" fill=\"%s\"/>"
                   "<text x=\"%d\" y=\"49\">%s</text>\n",
                10 + impl * 110, color[impl], 24 + impl * 110, impl_name[impl]);
    for (int g = 0; g <= scale_max; g += 20) {
        double x = left + width * g / scale_max;
        fprintf(f, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"#ddd\"/>"
                   "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%d%%</text>\n",
                x, top - 6, x, height - 30, x, height - 18, g);
    }
    int y = top;
    for (int i = 0; i < nrows; i++) {
        const row *R = &rows[i];
        int y0 = y;
        for (int impl = 0; impl < NIMPL; impl++) {
            if (R->ms[impl] < 0)
                continue;
            double p = 100 * rate_of(R, impl) / peak_of(R);
            fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"%.1f\" height=\"%d\" fill=\"%s\"/>\n", left,
                    y, width * p / scale_max, bar - 1, color[impl]);
            fprintf(f, "<text x=\"%.1f\" y=\"%d\" font-size=\"8\">%.0f%% (%.1f %s)</text>\n",
                    left + width * p / scale_max + 3, y + bar - 2, p, rate_of(R, impl),
                    R->is_flops ? "GFLOP/s" : "GB/s");
            y += bar;
        }
        fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">%s %s, %d thr</text>\n", left - 6,
                (y0 + y) / 2 + 4, R->label, R->shape, R->threads);
        y += pad;
    }
    fprintf(f, "</svg>\n");
    if (eo_file_close(f, path, err, sizeof err) != EO_OK) {
        fprintf(stderr, "eo-bench: %s\n", err);
        return 1;
    }
    printf("wrote %s\n", path);
    return 0;
}

/* ---- what to run ------------------------------------------------------------------ */

#define MM(ta, tb, batch, M, K, N, note) {K_MATMUL, note, ta, tb, 0, batch, M, N, K, 0, 0}
#define MMS(ta, tb, batch, M, K, N, note) {K_MATMUL, note, ta, tb, 1, batch, M, N, K, 0, 0}
#define ROWS(k, r, c) {k, NULL, 0, 0, 0, 0, 0, 0, 0, r, c}
#define ATTN(k, B, H, T, D, note) {k, note, 0, 0, 0, B, H, T, D, 0, 0}

/* Shapes are written M x K · K x N. The small ones are the matmuls of the
 * models EveryO trains (BASELINES.md): the MLP 784-256-10 at batch 128,
 * the char-GPT (batch 32 x context 64 = 2048 rows, d 128, 4 heads of 32,
 * vocabulary 70), the ViT's projections and their gradients (128 images
 * x 49 patches = 6272 rows, d 64, qkv 192) and the CNN's convolutions as im2col over the whole batch
 * of 128 (28x28 and 14x14 images), plus the same convolution done image
 * by image with one shared weight (batch stride 0). */
static const bcase full_cases[] = {
    MM(0, 0, 1, 1024, 1024, 1024, "square"), MM(0, 1, 1, 1024, 1024, 1024, "square"),
    MM(1, 0, 1, 1024, 1024, 1024, "square"), MM(1, 1, 1, 1024, 1024, 1024, "square"),
    MM(0, 0, 1, 128, 784, 256, "MLP layer 1"), MM(0, 1, 1, 128, 784, 256, "MLP layer 1"),
    MM(1, 0, 1, 128, 784, 256, "MLP layer 1"), MM(1, 1, 1, 128, 784, 256, "MLP layer 1"),
    MM(0, 0, 1, 4096, 768, 3072, "GPT-2 MLP"), MM(0, 1, 1, 4096, 768, 3072, "GPT-2 MLP"),
    MM(1, 0, 1, 4096, 768, 3072, "GPT-2 MLP"), MM(1, 1, 1, 4096, 768, 3072, "GPT-2 MLP"),
    MM(0, 0, 1, 128, 256, 10, "MLP layer 2"),
    MM(1, 0, 1, 784, 128, 256, "MLP dW1"),
    MM(0, 1, 1, 128, 10, 256, "MLP dH"),
    MM(0, 0, 1, 2048, 128, 384, "GPT qkv"),
    MM(0, 0, 1, 2048, 512, 128, "GPT MLP down"),
    MM(1, 0, 1, 128, 2048, 512, "GPT dW"),
    MM(0, 0, 1, 2048, 128, 70, "GPT head"),
    MM(0, 1, 128, 64, 32, 64, "attention Q·Kt"),
    MM(0, 0, 128, 64, 64, 32, "attention P·V"),
    MM(0, 0, 1, 6272, 64, 192, "ViT qkv"),
    MM(1, 0, 1, 64, 6272, 192, "ViT dW"),
    MM(0, 1, 1, 6272, 192, 64, "ViT dX"),
    MMS(0, 0, 128, 64, 288, 196, "conv2, one image at a time"),
    MM(0, 0, 1, 32, 9, 100352, "CNN conv1 (im2col)"),
    MM(0, 0, 1, 64, 288, 25088, "CNN conv2 (im2col)"),
    MM(0, 1, 1, 64, 25088, 288, "CNN conv2 dW"),
    MM(1, 0, 1, 288, 64, 25088, "CNN conv2 dcols"),
    ROWS(K_SOFTMAX, 4096, 1024), ROWS(K_LOG_SOFTMAX, 4096, 1024), ROWS(K_SOFTMAX_BWD, 4096, 1024),
    ROWS(K_LAYERNORM, 4096, 1024), ROWS(K_LAYERNORM_BWD, 4096, 1024), ROWS(K_GELU, 4096, 1024),
    ROWS(K_GELU_BWD, 4096, 1024), ROWS(K_XENT, 4096, 1024), ROWS(K_XENT_BWD, 4096, 1024),
    ROWS(K_ADAMW, 4096, 1024),
    ROWS(K_SOFTMAX, 512, 50257), ROWS(K_LOG_SOFTMAX, 512, 50257),
    ROWS(K_SOFTMAX_BWD, 512, 50257), ROWS(K_LAYERNORM, 512, 50257),
    ROWS(K_LAYERNORM_BWD, 512, 50257), ROWS(K_GELU, 512, 50257), ROWS(K_GELU_BWD, 512, 50257),
    ROWS(K_XENT, 512, 50257), ROWS(K_XENT_BWD, 512, 50257), ROWS(K_ADAMW, 512, 50257),
    ATTN(K_ATTN, 32, 4, 64, 32, "GPT, causal"), ATTN(K_ATTN_BWD, 32, 4, 64, 32, "GPT, causal"),
    ATTN(K_ATTN, 1, 4, 1024, 32, "long context, causal"),
    ATTN(K_ATTN_BWD, 1, 4, 1024, 32, "long context, causal"),
};

static const bcase quick_cases[] = {
    MM(0, 0, 1, 1024, 1024, 1024, "square"), MM(0, 0, 1, 128, 784, 256, "MLP layer 1"),
    MM(1, 1, 1, 128, 784, 256, "MLP layer 1"), MM(0, 1, 128, 64, 32, 64, "attention Q·Kt"),
    ROWS(K_SOFTMAX, 4096, 1024), ROWS(K_LAYERNORM, 4096, 1024),
    ROWS(K_LAYERNORM_BWD, 4096, 1024), ROWS(K_GELU, 4096, 1024), ROWS(K_XENT, 4096, 1024),
    ROWS(K_ADAMW, 4096, 1024),
};

/* "1,2": thread counts, each a plain number from 1 to MAX_THREADS. */
static int parse_threads(const char *s)
{
    opt.nthreads = 0;
    while (*s && opt.nthreads < MAX_THREADS) {
        char *end;
        if (!isdigit((unsigned char)*s))
            return -1;
        errno = 0;
        long t = strtol(s, &end, 10);
        if (errno || t < 1 || t > MAX_THREADS)
            return -1;
        opt.threads[opt.nthreads++] = (int)t;
        if (*end && *end != ',')
            return -1;
        s = *end == ',' ? end + 1 : end;
        if (*end == ',' && !*s)
            return -1;
    }
    return opt.nthreads > 0 && !*s ? 0 : -1;
}

static void usage(FILE *f)
{
    fprintf(f,
            "usage: eo-bench [options]\n"
            "Time every kernel beside its references (naive C, OpenBLAS, PyTorch) as a\n"
            "fraction of this machine's measured FMA peak or copy bandwidth.\n"
            "\n"
            "      --device cpu|cuda|sim  cpu (default), the PTX kernels on CUDA device 0, or\n"
            "                           their estimated times on named GPUs from the PTX\n"
            "                           interpreter's counters (estimates, not measurements)\n"
            "      --gpu NAME           with sim: one GPU (H200, H100, A100, RTX4090)\n"
            "      --profile            with sim: each kernel's counters\n"
            "      --predicted CSV      with cuda: print a sim run's estimates beside the times\n"
            "      --quick              a smaller set of cases\n"
            "  -j, --threads LIST       thread counts to run, e.g. 1,2 (1,2)\n"
            "      --filter TEXT        only cases whose label, shape or note contains TEXT\n"
            "      --csv FILE           the results as CSV\n"
            "      --svg FILE           the results as a bar chart\n"
            "      --no-blas            skip the OpenBLAS reference\n"
            "      --no-torch           skip the PyTorch reference\n"
            "      --no-naive           skip the naive-loop reference\n"
            "      --ref-env            keep OPENBLAS_CORETYPE / ATEN_CPU_CAPABILITY for the\n"
            "                           references (default: removed, each runs its own choice)\n"
            "      --python EXE         the Python with torch (/usr/bin/python3)\n"
            "      --torch-script FILE  PyTorch's side (tools/bench/bench_torch.py)\n"
            "  -h, --help               this text\n"
            "      --version            the program's and the library's version\n");
}

int main(int argc, char **argv)
{
    eo_args_program("eo-bench");
    int device = 0, cuda = 0, sim = 0, profile = 0;
    const char *gpu = NULL;
    enum { O_DEVICE = 256, O_GPU, O_PROFILE, O_PREDICTED, O_QUICK, O_FILTER, O_CSV, O_SVG, O_NO_BLAS, O_NO_TORCH, O_NO_NAIVE,
           O_REF_ENV, O_PYTHON, O_TORCH_SCRIPT, O_VERSION };
    static const struct option opts[] = {
        {"device", required_argument, NULL, O_DEVICE}, {"quick", no_argument, NULL, O_QUICK},
        {"threads", required_argument, NULL, 'j'},     {"filter", required_argument, NULL, O_FILTER},
        {"csv", required_argument, NULL, O_CSV},       {"svg", required_argument, NULL, O_SVG},
        {"no-blas", no_argument, NULL, O_NO_BLAS},     {"no-torch", no_argument, NULL, O_NO_TORCH},
        {"no-naive", no_argument, NULL, O_NO_NAIVE},   {"python", required_argument, NULL, O_PYTHON},
        {"torch-script", required_argument, NULL, O_TORCH_SCRIPT}, {"ref-env", no_argument, NULL, O_REF_ENV},
        {"gpu", required_argument, NULL, O_GPU},       {"profile", no_argument, NULL, O_PROFILE},
        {"predicted", required_argument, NULL, O_PREDICTED},
        {"help", no_argument, NULL, 'h'},              {"version", no_argument, NULL, O_VERSION},
        {NULL, 0, NULL, 0},
    };
    static const char *const devices[] = {"cpu", "cuda", "sim"};
    int o;
    while ((o = getopt_long(argc, argv, "j:h", opts, NULL)) != -1) {
        const char *v = optarg;
        switch (o) {
        case 'h': usage(stdout); return 0;
        case O_VERSION: eo_args_version(stdout); return 0;
        case O_DEVICE:
            if (!eo_arg_choice("--device", v, devices, 3, &device))
                return 2;
            cuda = device == 1, sim = device == 2;
            break;
        case O_GPU: gpu = v; break;
        case O_PROFILE: profile = 1; break;
        case O_PREDICTED:
            if (eo_predicted_load(v) != 0) {
                fprintf(stderr, "eo-bench: --predicted: cannot read '%s'\n", v);
                return 2;
            }
            break;
        case O_QUICK: opt.quick = 1; break;
        case 'j':
            if (parse_threads(v) != 0) {
                fprintf(stderr, "eo-bench: --threads: '%s' is not a list like 1,2 of counts from "
                                "1 to %d\n", v, MAX_THREADS);
                return 2;
            }
            break;
        case O_FILTER: opt.filter = v; break;
        case O_CSV: opt.csv = v; break;
        case O_SVG: opt.svg = v; break;
        case O_NO_BLAS: opt.no_blas = 1; break;
        case O_NO_TORCH: opt.no_torch = 1; break;
        case O_NO_NAIVE: opt.no_naive = 1; break;
        case O_REF_ENV: opt.ref_env = 1; break;
        case O_PYTHON: opt.python = v; break;
        case O_TORCH_SCRIPT: opt.torch_script = v; break;
        default: return eo_args_try_help(); /* getopt_long named the problem */
        }
    }
    if (!eo_args_no_operands(argc, argv))
        return 2;
    /* A --csv or --svg that names a link, a device or a FIFO is refused
     * now, not after minutes of measuring. */
    const char *outs[2] = {opt.csv, opt.svg};
    for (int k = 0; k < 2; k++) {
        char err[512];
        if (outs[k] && eo_file_check_target(outs[k], err, sizeof err) != EO_OK) {
            fprintf(stderr, "eo-bench: %s\n", err);
            return 2;
        }
    }

    if (sim) { /* estimates from the interpreter: tools/bench/bench_sim.c */
#if EO_HAVE_CUDA
        FILE *csv = NULL;
        char err[512];
        if (opt.csv && eo_file_create(opt.csv, &csv, err, sizeof err) != EO_OK) {
            fprintf(stderr, "eo-bench: %s\n", err);
            return 1;
        }
        int rc = eo_bench_sim(gpu, opt.filter, profile, stdout, csv);
        if (eo_file_close(csv, opt.csv, err, sizeof err) != EO_OK) {
            fprintf(stderr, "eo-bench: %s\n", err);
            rc = rc ? rc : 1;
        }
        return rc;
#else
        (void)gpu, (void)profile;
        fprintf(stderr, "eo-bench: --device sim: this build has no CUDA backend (make CUDA=0), "
                        "whose launchers the estimates run\n");
        return 2;
#endif
    }
    if (cuda) { /* the GPU mode: tools/bench/bench_gpu.c */
#if EO_HAVE_CUDA
        FILE *csv = NULL;
        char err[512];
        if (opt.csv && eo_file_create(opt.csv, &csv, err, sizeof err) != EO_OK) {
            fprintf(stderr, "eo-bench: %s\n", err);
            return 1;
        }
        int rc = eo_bench_gpu(NULL, opt.quick ? 1 : 2, stdout, csv);
        if (eo_file_close(csv, opt.csv, err, sizeof err) != EO_OK) {
            fprintf(stderr, "eo-bench: %s\n", err);
            rc = rc ? rc : 1;
        }
        return rc;
#else
        fprintf(stderr, "eo-bench: --device cuda: this build has no CUDA backend (make CUDA=0)\n");
        return 2;
#endif
    }

    eo_pool *pools[MAX_THREADS + 1] = {NULL};
    eo_par pars[MAX_THREADS + 1];
    for (int t = 0; t <= MAX_THREADS; t++)
        pars[t] = eo_pool_par(NULL);
    for (int ti = 0; ti < opt.nthreads; ti++) {
        int t = opt.threads[ti];
        if (t > 1 && !pools[t]) {
            pools[t] = eo_pool_create(t);
            if (!pools[t]) {
                fprintf(stderr, "eo-bench: cannot start %d threads\n", t);
                return 1;
            }
            pars[t] = eo_pool_par(pools[t]);
        }
    }

    char cpu[128] = "unknown CPU";
    FILE *ci = fopen("/proc/cpuinfo", "r");
    char line[512];
    while (ci && fgets(line, sizeof line, ci))
        if (!strncmp(line, "model name", 10) && strchr(line, ':')) {
            snprintf(cpu, sizeof cpu, "%s", strchr(line, ':') + 2);
            cpu[strcspn(cpu, "\n")] = 0;
            break;
        }
    if (ci)
        fclose(ci);
    snprintf(machine, sizeof machine, "%s, %ld CPUs online", cpu, sysconf(_SC_NPROCESSORS_ONLN));
    printf("eo-bench%s: %s\n", opt.quick ? " --quick" : "", machine);

    printf("%s\n", eo_tool_cpu_kernels_line());
    prepare_ref_env();
    measure_ceilings(pars);
    load_blas();
    char note[200];
    ref_env_note(0, note, sizeof note);
    if (blas_sgemm)
        printf("BLAS: %s%s, %s, %s\n", blas_lib,
               blas_set_threads ? "" : " (no openblas_set_num_threads: its own thread count)",
               blas_core[0] ? blas_core : "kernel unknown (no openblas_get_corename)", note);
    else
        printf("BLAS: skipped (%s)\n", blas_why);

    const bcase *cases = opt.quick ? quick_cases : full_cases;
    size_t ncases = opt.quick ? sizeof quick_cases / sizeof quick_cases[0]
                              : sizeof full_cases / sizeof full_cases[0];
    for (size_t ci2 = 0; ci2 < ncases; ci2++) {
        const bcase *c = &cases[ci2];
        for (int ti = 0; ti < opt.nthreads && nrows < MAX_ROWS; ti++) {
            row *R = &rows[nrows];
            memset(R, 0, sizeof *R);
            R->c = c;
            R->threads = opt.threads[ti];
            case_label(c, R->label, sizeof R->label);
            case_shape(c, R->shape, sizeof R->shape);
            char hay[160];
            snprintf(hay, sizeof hay, "%s %s %s", R->label, R->shape, c->note ? c->note : "");
            if (opt.filter && !strstr(hay, opt.filter))
                continue;
            R->work = case_work(c, &R->is_flops);
            for (int i = 0; i < NIMPL; i++)
                R->ms[i] = -1;
            nrows++;
        }
    }

    /* PyTorch first, in its own process, so its memory is gone before
     * the in-process measurements start. */
    run_torch();
    for (int i = 0; i < nrows; i++) {
        fprintf(stderr, "eo-bench: %s %s, %d thread(s)\n", rows[i].label, rows[i].shape,
                rows[i].threads);
        measure_row(&rows[i], &pars[rows[i].threads]);
    }
    measure_ceilings(pars);
    for (int ti = 0; ti < opt.nthreads; ti++) {
        int t = opt.threads[ti];
        printf("ceilings, %d thread(s): FMA peak %.1f GFLOP/s (%s), memcpy %.1f GB/s "
               "(bytes read + written; best of memcpy and a streaming-store copy loop, "
               "before and after the kernels)\n",
               t, fma_peak[t], peak_kind, copy_bw[t]);
    }
    if (exp_ns > 0)
        printf("ceiling, 1 thread: vector exp %.3f ns per element (%s on a row in "
               "L1, results summed; best of the tries)\n",
               exp_ns, ceil_exp->exp_name);
    print_table();
    int rc = 0;
    if (opt.csv)
        rc |= write_csv(opt.csv);
    if (opt.svg)
        rc |= write_svg(opt.svg);
    for (int t = 0; t <= MAX_THREADS; t++)
        eo_pool_destroy(pools[t]);
    return rc;
}
