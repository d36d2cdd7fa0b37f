/* tools/bench/bench_gpu.c — the GPU mode of eo-bench (`eo-bench --device cuda`).
 *
 * Each hand-written PTX kernel is timed through its host launcher (the
 * same function the CUDA backend calls), bracketed by CUDA events so the
 * time is the GPU's own, not the host's. Everything goes on the device
 * state's own stream (the launchers' and the copies'), so the events are
 * recorded there too, and cuBLAS is told to use it. Rates are reported against the
 * device's measured copy bandwidth (a device-to-device cuMemcpy of a large
 * buffer: read + write) and, for matmul, against cuBLAS SGEMM when
 * libcublas can be found with dlopen at bench time — never linked, never
 * needed. Without a driver or a device it says "no GPU" and succeeds, so
 * the benchmark runs everywhere. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ops/cuda/device.h"
#include "ops/cuda/driver.h"
#include "tools/bench/bench_gpu.h"
#include "tools/bench/predicted.h"

typedef struct {
    const eo_cuda_driver *d;
    eo_cuda *cu;
    eo_cu_event start, stop;
} gpu;

static int ok(const gpu *g, eo_cu_result r, const char *what)
{
    if (r == 0)
        return 1;
    char msg[160];
    eo_cuda_result_text(g->d, r, msg, sizeof msg);
    fprintf(stderr, "eo-bench --device cuda: %s: %s\n", what, msg);
    return 0;
}

/* Milliseconds per call of fn(arg), median-free but warm: one warm-up
 * call, then `reps` calls between two events. */
static double time_ms(gpu *g, void (*fn)(void *), void *arg, int reps)
{
    fn(arg);
    ok(g, g->d->cuEventRecord(g->start, g->cu->stream), "cuEventRecord");
    for (int i = 0; i < reps; i++)
        fn(arg);
    ok(g, g->d->cuEventRecord(g->stop, g->cu->stream), "cuEventRecord");
    ok(g, g->d->cuEventSynchronize(g->stop), "cuEventSynchronize");
    float ms = 0;
    ok(g, g->d->cuEventElapsedTime(&ms, g->start, g->stop), "cuEventElapsedTime");
    char msg[200];
    if (eo_cuda_take_error(g->cu, msg, sizeof msg) != EO_OK) {
        fprintf(stderr, "eo-bench --device cuda: kernel failed: %s\n", msg);
        return -1;
    }
    return ms / reps;
}

/* ---- the cases --------------------------------------------------------------- */

typedef struct {
    int64_t M, N, K, rows, cols;
    eo_cu_deviceptr a, b, c, d, e, f; /* enough buffers for any case */
    eo_cu_deviceptr i32;              /* targets */
    eo_cu_deviceptr h1, h2, h3, hw;   /* bf16 copies: of a, b, c (the big ones) and d */
    void *cublas;                     /* handle, when cuBLAS was found */
    eo_exec ex;                       /* the launchers' device */
} bufs;

static bufs B;

static void run_matmul(void *arg)
{
    (void)arg;
    eo_cuda_k_matmul(0, 0, 1, B.M, B.N, B.K, (const float *)(uintptr_t)B.a, B.K, 0,
                     (const float *)(uintptr_t)B.b, B.N, 0, 0.0f, (float *)(uintptr_t)B.c, B.N,
                     0, NULL, &B.ex);
}
/* The tensor-core matmul, bf16 inputs (the first M*K and K*N halves of
 * the random f32 buffers, read as bf16: the values do not change the
 * time), f32 C. */
static void run_matmul16(void *arg)
{
    (void)arg;
    eo_cuda_k_matmul16(0, 0, 1, B.M, B.N, B.K, 2 /* EO_BF16 */, (const void *)(uintptr_t)B.a,
                       B.K, 0, (const void *)(uintptr_t)B.b, B.N, 0, 0.0f, 0 /* EO_F32 */,
                       (void *)(uintptr_t)B.c, B.N, 0, NULL, &B.ex);
}

/* bf16 in and out, against cublasGemmEx with a bf16 C. */
static void run_matmul16_out16(void *arg)
{
    (void)arg;
    eo_cuda_k_matmul16(0, 0, 1, B.M, B.N, B.K, 2 /* EO_BF16 */, (const void *)(uintptr_t)B.h1,
                       B.K, 0, (const void *)(uintptr_t)B.h2, B.N, 0, 0.0f, 2,
                       (void *)(uintptr_t)B.h3, B.N, 0, NULL, &B.ex);
}

/* ---- the 16-bit (bf16) kernels, on the bf16 copies h1..h3 and hw ---- */
#define H(p) ((void *)(uintptr_t)(p))
static void run_softmax16(void *arg)
{
    (void)arg;
    eo_cuda_k_softmax16(0, 2, B.rows, B.cols, H(B.h1), H(B.h2), NULL, &B.ex);
}
static void run_layernorm16(void *arg)
{
    (void)arg;
    eo_cuda_k_layernorm16(2, B.rows, B.cols, H(B.h1), H(B.hw), H(B.hw), 1e-5f, H(B.h2),
                          (float *)(uintptr_t)B.c, (float *)(uintptr_t)B.f, NULL, &B.ex);
}
static void run_gelu16(void *arg)
{
    (void)arg;
    eo_cuda_k_unary16(EO_UN_GELU_TANH, 2, B.rows * B.cols, H(B.h1), H(B.h2), 0.0f, &B.ex);
}
static void run_add16(void *arg)
{
    (void)arg;
    const int64_t sh[4] = {1, 1, B.rows, B.cols}, st[4] = {0, 0, B.cols, 1};
    eo_cuda_k_binary16(EO_BIN_ADD, 2, sh, H(B.h3), st, H(B.h1), st, H(B.h2), st, &B.ex);
}
static void run_xent16(void *arg)
{
    (void)arg;
    eo_cuda_k_cross_entropy16(2, B.rows, B.cols, H(B.h1), (const int32_t *)(uintptr_t)B.i32, -100,
                              EO_CE_MEAN, (float *)(uintptr_t)B.c, H(B.h3), NULL, &B.ex);
}
static void run_cast16(void *arg)
{
    (void)arg;
    eo_cuda_cast_flat(2, H(B.h3), 0, H(B.a), B.rows * B.cols, &B.ex);
}
static void run_adamw16(void *arg)
{
    (void)arg;
    eo_cuda_k_adamw16(B.rows * B.cols, (float *)(uintptr_t)B.a, 2, H(B.h1), 1.0f,
                      (float *)(uintptr_t)B.c, (float *)(uintptr_t)B.e, 1e-3f, 0.9f, 0.999f,
                      1e-8f, 0.01f, 3, 2, H(B.h3), &B.ex);
}
#undef H

static void run_copy(void *arg)
{
    gpu *g = arg;
    eo_cuda_d2d(g->cu, B.b, B.a, (size_t)B.rows * (size_t)B.cols * 4);
}
static void run_softmax(void *arg)
{
    (void)arg;
    eo_cuda_k_softmax(0, B.rows, B.cols, (const float *)(uintptr_t)B.a, (float *)(uintptr_t)B.b, NULL,
                      &B.ex);
}
static void run_layernorm(void *arg)
{
    (void)arg;
    eo_cuda_k_layernorm(B.rows, B.cols, (const float *)(uintptr_t)B.a, (const float *)(uintptr_t)B.d,
                        (const float *)(uintptr_t)B.e, 1e-5f, (float *)(uintptr_t)B.b,
                        (float *)(uintptr_t)B.c, (float *)(uintptr_t)B.f, &B.ex);
}
static void run_layernorm_bwd(void *arg)
{
    (void)arg;
    eo_cuda_k_layernorm_backward(B.rows, B.cols, (const float *)(uintptr_t)B.a,
                                 (const float *)(uintptr_t)B.d, (const float *)(uintptr_t)B.c,
                                 (const float *)(uintptr_t)B.f, (const float *)(uintptr_t)B.b,
                                 (float *)(uintptr_t)B.a, NULL, NULL, NULL, &B.ex);
}
static void run_gelu(void *arg)
{
    (void)arg;
    eo_cuda_k_unary(EO_UN_GELU_TANH, B.rows * B.cols, (const float *)(uintptr_t)B.a,
                    (float *)(uintptr_t)B.b, 0.0f, &B.ex);
}
static void run_xent(void *arg)
{
    (void)arg;
    eo_cuda_k_cross_entropy(B.rows, B.cols, (const float *)(uintptr_t)B.a,
                            (const int32_t *)(uintptr_t)B.i32, -100, EO_CE_MEAN, (float *)(uintptr_t)B.c,
                            (float *)(uintptr_t)B.f, &B.ex);
}
static void run_adamw(void *arg)
{
    (void)arg;
    eo_cuda_k_adamw(B.rows * B.cols, (float *)(uintptr_t)B.a, (const float *)(uintptr_t)B.b,
                    (float *)(uintptr_t)B.c, (float *)(uintptr_t)B.e, 1e-3f, 0.9f, 0.999f, 1e-8f,
                    0.01f, 3, &B.ex);
}

/* cuBLAS, found at bench time. Row-major C = A·B is column-major
 * Cᵀ = Bᵀ·Aᵀ, so the operands are passed swapped. */
typedef int (*cublas_create_fn)(void **);
typedef int (*cublas_destroy_fn)(void *);
typedef int (*cublas_set_stream_fn)(void *, void *);
typedef int (*cublas_sgemm_fn)(void *, int, int, int, int, int, const float *, const float *,
                               int, const float *, int, const float *, float *, int);
static cublas_sgemm_fn sgemm;
/* cublasGemmEx for bf16 inputs, f32 C and f32 compute: CUDA_R_16BF = 14,
 * CUDA_R_32F = 0, CUBLAS_COMPUTE_32F = 68, CUBLAS_GEMM_DEFAULT = -1
 * (library_types.h, cublas_api.h). */
typedef int (*cublas_gemmex_fn)(void *, int, int, int, int, int, const void *, const void *, int,
                                int, const void *, int, int, const void *, void *, int, int, int,
                                int);
static cublas_gemmex_fn gemmex;

static void run_cublas_bf16(void *arg)
{
    (void)arg;
    const float one = 1.0f, zero = 0.0f;
    gemmex(B.cublas, 0, 0, (int)B.N, (int)B.M, (int)B.K, &one, (const void *)(uintptr_t)B.b, 14,
           (int)B.N, (const void *)(uintptr_t)B.a, 14, (int)B.K, &zero, (void *)(uintptr_t)B.c, 0,
           (int)B.N, 68, -1);
}

static void run_cublas_bf16_out16(void *arg)
{
    (void)arg;
    const float one = 1.0f, zero = 0.0f;
    gemmex(B.cublas, 0, 0, (int)B.N, (int)B.M, (int)B.K, &one, (const void *)(uintptr_t)B.h2, 14,
           (int)B.N, (const void *)(uintptr_t)B.h1, 14, (int)B.K, &zero,
           (void *)(uintptr_t)B.h3, 14, (int)B.N, 68, -1);
}

static void run_cublas(void *arg)
{
    (void)arg;
    const float one = 1.0f, zero = 0.0f;
    sgemm(B.cublas, 0, 0, (int)B.N, (int)B.M, (int)B.K, &one, (const float *)(uintptr_t)B.b,
          (int)B.N, (const float *)(uintptr_t)B.a, (int)B.K, &zero, (float *)(uintptr_t)B.c,
          (int)B.N);
}

/* A cuBLAS handle whose work goes on `stream` (the device's), or NULL. */
static void *load_cublas(void *stream, char *why, size_t len)
{
    static const char *names[] = { "libcublas.so", "libcublas.so.13", "libcublas.so.12",
                                   "libcublas.so.11" };
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        void *h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
        if (!h)
            continue;
        cublas_create_fn create = (cublas_create_fn)(uintptr_t)dlsym(h, "cublasCreate_v2");
        sgemm = (cublas_sgemm_fn)(uintptr_t)dlsym(h, "cublasSgemm_v2");
        gemmex = (cublas_gemmex_fn)(uintptr_t)dlsym(h, "cublasGemmEx");
        cublas_set_stream_fn set_stream =
            (cublas_set_stream_fn)(uintptr_t)dlsym(h, "cublasSetStream_v2");
        void *handle = NULL;
        if (create && sgemm && set_stream && create(&handle) == 0) {
            if (set_stream(handle, stream) == 0)
                return handle;
            cublas_destroy_fn destroy = (cublas_destroy_fn)(uintptr_t)dlsym(h, "cublasDestroy_v2");
            if (destroy)
                destroy(handle);
            snprintf(why, len, "%s found but cublasSetStream failed", names[i]);
            return NULL;
        }
        snprintf(why, len, "%s found but cublasCreate failed", names[i]);
        return NULL;
    }
    snprintf(why, len, "libcublas not found");
    return NULL;
}

/* The model's estimate beside a measurement (tools/bench/predicted.h),
 * or "-" when the estimates were not loaded or have no such row. */
static void print_estimate(FILE *out, double ms, double est)
{
    if (est > 0)
        fprintf(out, " %10.3f %8.2fx\n", est, ms / est);
    else
        fprintf(out, " %10s %9s\n", "-", "-");
}

static eo_cu_deviceptr dev_rand(gpu *g, size_t n, float scale)
{
    eo_cu_deviceptr p = 0;
    if (eo_cuda_alloc_block(g->cu, n * 4, &p) != EO_OK)
        return 0;
    float *h = malloc(n * 4);
    unsigned s = 12345;
    for (size_t i = 0; i < n; i++) {
        s = s * 1664525u + 1013904223u;
        h[i] = scale * ((float)(s >> 8) / 8388608.0f - 1.0f);
    }
    eo_cuda_h2d(g->cu, p, h, n * 4);
    free(h);
    return p;
}

int eo_bench_gpu(const struct eo_cuda_driver *drv, int scale, FILE *out, FILE *csv)
{
    static eo_cuda_driver table;
    static eo_cuda cu;
    char err[512];
    if (!drv) {
        if (eo_cuda_driver_load(&table, err, sizeof err) != EO_OK) {
            fprintf(out, "eo-bench --device cuda: no GPU: %s\n", err);
            return 0;
        }
        drv = &table;
    }
    if (eo_cuda_open(&cu, drv, 0, err, sizeof err) != EO_OK) {
        fprintf(out, "eo-bench --device cuda: no GPU: %s\n", err);
        return 0;
    }
    gpu g = { drv, &cu, NULL, NULL };
    if (!ok(&g, drv->cuEventCreate(&g.start, 0), "cuEventCreate") ||
        !ok(&g, drv->cuEventCreate(&g.stop, 0), "cuEventCreate"))
        return 1;
    fprintf(out, "eo-bench --device cuda: %s, compute capability %d.%d, %d SMs, %.1f GiB\n", cu.name,
           cu.cc_major, cu.cc_minor, cu.sm_count, (double)cu.total_mem / (1u << 30));

    /* scale 0: tiny sizes (the PTX interpreter, in tests); 1: quick; 2: full. */
    int64_t rows = scale == 0 ? 8 : 4096, cols = scale == 0 ? 40 : 1024;
    int64_t mm = scale == 0 ? 16 : scale == 1 ? 1024 : 4096;
    int reps = scale == 0 ? 1 : 20;
    size_t big = (size_t)(rows * cols > mm * mm ? rows * cols : mm * mm);
    B.rows = rows;
    B.cols = cols;
    B.M = B.N = B.K = mm;
    B.a = dev_rand(&g, big, 1.0f);
    B.b = dev_rand(&g, big, 1.0f);
    B.c = dev_rand(&g, big, 1.0f);
    B.e = dev_rand(&g, big, 0.01f);
    B.d = dev_rand(&g, (size_t)cols, 1.0f);
    B.f = dev_rand(&g, (size_t)rows, 1.0f);
    int32_t *t = malloc((size_t)rows * 4);
    for (int64_t r = 0; r < rows; r++)
        t[r] = (int32_t)(r % cols);
    eo_cuda_alloc_block(&cu, (size_t)rows * 4, &B.i32);
    eo_cuda_h2d(&cu, B.i32, t, (size_t)rows * 4);
    free(t);
    B.ex.cuda = &cu;
    /* bf16 copies of the random buffers (converted on the device) */
    eo_cu_deviceptr *h16[4] = {&B.h1, &B.h2, &B.h3, &B.hw};
    const eo_cu_deviceptr from[4] = {B.a, B.b, B.c, B.d};
    for (int i = 0; i < 4; i++) {
        size_t n = i < 3 ? big : (size_t)cols;
        if (eo_cuda_alloc_block(&cu, n * 2 + 16, h16[i]) == EO_OK && from[i])
            eo_cuda_cast_flat(2, (void *)(uintptr_t)*h16[i], 0, (void *)(uintptr_t)from[i],
                              (int64_t)n, &B.ex);
    }
    if (!B.a || !B.b || !B.c || !B.e || !B.d || !B.f || !B.i32 || !B.h1 || !B.h2 || !B.h3 ||
        !B.hw) {
        fprintf(stderr, "eo-bench --device cuda: cannot allocate the buffers\n");
        return 1;
    }

    double bytes = (double)rows * (double)cols * 4.0;
    double copy_ms = time_ms(&g, run_copy, &g, reps);
    double copy_gbs = 2.0 * bytes / (copy_ms * 1e6);
    fprintf(out, "device copy bandwidth: %.1f GB/s (cuMemcpyDtoDAsync of %.0f MiB, read + write)\n\n",
           copy_gbs, bytes / 1048576.0);
    fprintf(out, "%-22s %-16s %10s %12s %10s %10s %10s %9s\n", "kernel", "shape", "ms", "rate",
            "% of peak", "vs cuBLAS", "est. ms", "meas/est");
    if (csv)
        fprintf(csv, "kernel,shape,ms,rate,unit,percent_of_copy,ratio_cublas,est_ms,"
                     "measured_over_est\n");

    struct { const char *name; void (*fn)(void *); double traffic; } mem[] = {
        { "softmax", run_softmax, 2 * bytes },
        { "layernorm", run_layernorm, 2 * bytes },
        { "layernorm_bwd", run_layernorm_bwd, 3 * bytes },
        { "gelu", run_gelu, 2 * bytes },
        { "cross_entropy", run_xent, bytes },
        { "adamw", run_adamw, 7 * bytes },
        /* bf16 storage: half the bytes per value (adamw: f32 w, m, v read and
         * written, bf16 g read and w written: 28 bytes a parameter) */
        { "softmax bf16", run_softmax16, bytes },
        { "layernorm bf16", run_layernorm16, bytes },
        { "gelu bf16", run_gelu16, bytes },
        { "add bf16", run_add16, 1.5 * bytes },
        { "cross_entropy bf16", run_xent16, 0.5 * bytes },
        { "cast f32->bf16", run_cast16, 1.5 * bytes },
        { "adamw bf16", run_adamw16, 7 * bytes },
    };
    char shape[32];
    double flops = 2.0 * (double)mm * (double)mm * (double)mm;
    double ms = time_ms(&g, run_matmul, NULL, reps);
    char why[96] = "";
    B.cublas = load_cublas(cu.stream, why, sizeof why);
    double cms = B.cublas ? time_ms(&g, run_cublas, NULL, reps) : 0;
    snprintf(shape, sizeof shape, "%lldx%lldx%lld", (long long)mm, (long long)mm, (long long)mm);
    fprintf(out, "%-22s %-16s %10.3f %8.1f GF/s %10s ", "matmul nn", shape, ms, flops / (ms * 1e6), "-");
    if (B.cublas)
        fprintf(out, "%9.2fx", cms / ms);
    else
        fprintf(out, "  skipped (%s)", why);
    double est = eo_predicted_ms(cu.name, "matmul nn", shape, NULL);
    print_estimate(out, ms, est);
    if (csv)
        fprintf(csv, "matmul nn,%s,%.4f,%.2f,GFLOP/s,,%.3f,%.4f,%.3f\n", shape, ms,
                flops / (ms * 1e6), B.cublas ? cms / ms : 0.0, est, est > 0 ? ms / est : 0.0);
    /* the tensor-core matmul (bf16 in, f32 out) against cublasGemmEx bf16 */
    ms = time_ms(&g, run_matmul16, NULL, reps);
    cms = B.cublas && gemmex ? time_ms(&g, run_cublas_bf16, NULL, reps) : 0;
    fprintf(out, "%-22s %-16s %10.3f %8.1f GF/s %10s ", "matmul16 bf16", shape, ms,
            flops / (ms * 1e6), "-");
    if (B.cublas && gemmex)
        fprintf(out, "%9.2fx", cms / ms);
    else
        fprintf(out, "  skipped (%s)", B.cublas ? "no cublasGemmEx" : why);
    est = eo_predicted_ms(cu.name, "matmul16 bf16", shape, NULL);
    print_estimate(out, ms, est);
    if (csv)
        fprintf(csv, "matmul16 bf16,%s,%.4f,%.2f,GFLOP/s,,%.3f,%.4f,%.3f\n", shape, ms,
                flops / (ms * 1e6), B.cublas && gemmex ? cms / ms : 0.0, est,
                est > 0 ? ms / est : 0.0);
    /* bf16 in and out against cublasGemmEx with a bf16 C */
    ms = time_ms(&g, run_matmul16_out16, NULL, reps);
    cms = B.cublas && gemmex ? time_ms(&g, run_cublas_bf16_out16, NULL, reps) : 0;
    fprintf(out, "%-22s %-16s %10.3f %8.1f GF/s %10s ", "matmul16 bf16->bf16", shape, ms,
            flops / (ms * 1e6), "-");
    if (B.cublas && gemmex)
        fprintf(out, "%9.2fx", cms / ms);
    else
        fprintf(out, "  skipped (%s)", B.cublas ? "no cublasGemmEx" : why);
    est = eo_predicted_ms(cu.name, "matmul16 bf16->bf16", shape, NULL);
    print_estimate(out, ms, est);
    if (csv)
        fprintf(csv, "matmul16 bf16->bf16,%s,%.4f,%.2f,GFLOP/s,,%.3f,%.4f,%.3f\n", shape, ms,
                flops / (ms * 1e6), B.cublas && gemmex ? cms / ms : 0.0, est,
                est > 0 ? ms / est : 0.0);
    snprintf(shape, sizeof shape, "%lldx%lld", (long long)rows, (long long)cols);
    for (size_t i = 0; i < sizeof mem / sizeof *mem; i++) {
        ms = time_ms(&g, mem[i].fn, NULL, reps);
        double gbs = mem[i].traffic / (ms * 1e6);
        fprintf(out, "%-22s %-16s %10.3f %8.1f GB/s %9.0f%% %10s", mem[i].name, shape, ms, gbs,
               100.0 * gbs / copy_gbs, "-");
        est = eo_predicted_ms(cu.name, mem[i].name, shape, NULL);
        print_estimate(out, ms, est);
        if (csv)
            fprintf(csv, "%s,%s,%.4f,%.2f,GB/s,%.1f,,%.4f,%.3f\n", mem[i].name, shape, ms, gbs,
                    100.0 * gbs / copy_gbs, est, est > 0 ? ms / est : 0.0);
    }
    if (B.cublas) {
        cublas_destroy_fn destroy;
        void *h = dlopen("libcublas.so", RTLD_NOW | RTLD_NOLOAD);
        destroy = h ? (cublas_destroy_fn)(uintptr_t)dlsym(h, "cublasDestroy_v2") : NULL;
        if (destroy)
            destroy(B.cublas);
    }
    eo_cu_deviceptr all[11] = { B.a, B.b, B.c, B.d, B.e, B.f, B.i32, B.h1, B.h2, B.h3, B.hw };
    for (int i = 0; i < 11; i++)
        eo_cuda_free_block(&cu, all[i]);
    drv->cuEventDestroy(g.start);
    drv->cuEventDestroy(g.stop);
    eo_cuda_close(&cu);
    return 0;
}
