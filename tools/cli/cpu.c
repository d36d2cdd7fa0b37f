/* tools/cli/cpu.c — EO_CPU and the kernel variant's one-line description
 * (tools/cli/cpu.h). */
#include "tools/cli/cpu.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/backend.h"
#include "ops/cpu/half.h"
#include "ops/cpu/matmul.h"
#include "tools/cli/errbuf.h"

int eo_tool_cpu_parse(const char *s)
{
    for (int i = 0; i < EO_ISA_COUNT; i++)
        if (s && strcmp(s, eo_cpu_isa_name((eo_cpu_isa)i)) == 0)
            return i;
    return -1;
}

eo_status eo_tool_cpu_apply(eo_ctx *ctx, char *err, size_t errlen)
{
    const char *v = getenv("EO_CPU");
    if (!v || !*v)
        return EO_OK;
    int isa = eo_tool_cpu_parse(v);
    if (isa < 0)
        return eo_errf(err, errlen, EO_ERR_ARG, "EO_CPU=%s: not a kernel variant (base, avx2, avx512, native)", v);
    eo_status s = eo_ctx_set_cpu_variant(ctx, (eo_cpu_isa)isa);
    if (s != EO_OK)
        return eo_errf(err, errlen, s, "EO_CPU=%s: %s", v, eo_last_error(ctx));
    return EO_OK;
}

void eo_tool_cpu_describe(const eo_ctx *ctx, char *buf, size_t len)
{
    char feats[160] = "";
    size_t n = 0;
    const uint32_t f = eo_cpu_features(ctx);
    for (uint32_t bit = 1; bit && n < sizeof feats; bit <<= 1)
        if (f & bit)
            n += (size_t)snprintf(feats + n, sizeof feats - n, "%s%s", n ? " " : "", eo_cpu_feature_name(bit));
    const char *forced = getenv("EO_CPU");
    snprintf(buf, len, "CPU kernels: %s%s (CPU: %s)", eo_cpu_variant_name(ctx),
             forced && *forced ? ", forced by EO_CPU" : "", n ? feats : "baseline only");
}

/* A context made only to ask which table it picks: the kernels need no
 * context of their own, so its arenas can be tiny. */
static struct {
    pthread_once_t once;
    const eo_backend *table;
    eo_cpu_isa isa;
    uint32_t features;
    char line[256];
} kernels = { PTHREAD_ONCE_INIT, NULL, EO_ISA_BASE, 0, "" };

static void kernels_init(void)
{
    static _Alignas(64) unsigned char a[4096], b[4096];
    eo_ctx ctx;
    char err[400];
    eo_ctx_init(&ctx, a, sizeof a, b, sizeof b);
    if (eo_tool_cpu_apply(&ctx, err, sizeof err) != EO_OK) {
        fprintf(stderr, "%s\n", err);
        exit(2);
    }
    kernels.table = ctx.backend[EO_CPU];
    kernels.isa = eo_cpu_variant(&ctx);
    kernels.features = eo_cpu_features(&ctx);
    eo_tool_cpu_describe(&ctx, kernels.line, sizeof kernels.line);
}

uint32_t eo_tool_cpu_features(void)
{
    pthread_once(&kernels.once, kernels_init);
    return kernels.features;
}

const char *eo_tool_cpu_kernels_line(void)
{
    pthread_once(&kernels.once, kernels_init);
    return kernels.line;
}

const eo_backend *eo_tool_cpu_kernels(void)
{
    pthread_once(&kernels.once, kernels_init);
    return kernels.table;
}

eo_cpu_isa eo_tool_cpu_kernels_isa(void)
{
    pthread_once(&kernels.once, kernels_init);
    return kernels.isa;
}

/* The matmul's explicit paths and the row conversions by variant (tools/cli/cpu_kernels.h). The
 * variants' symbols carry their suffix (tools/build/isa-link.sh). */
#define MM_VARIANT(sfx)                                                                            \
    void eo_mm_run_##sfx(eo_mm_path, int, int, int64_t, int64_t, int64_t, int64_t, const float *,  \
                         int64_t, int64_t, const float *, int64_t, int64_t, float, float *,        \
                         int64_t, int64_t, void *, const eo_par *);                                \
    void eo_mm_run16_##sfx(eo_mm_path, int, int, int64_t, int64_t, int64_t, int64_t, int,          \
                           const void *, int64_t, int64_t, const void *, int64_t, int64_t, float,  \
                           int, void *, int64_t, int64_t, void *, const eo_par *);                 \
    int eo_mm_simd_compiled_##sfx(void);                                                           \
    void eo_half_to_f32_##sfx(int, int64_t, const uint16_t *, float *);                            \
    void eo_f32_to_half_##sfx(int, int64_t, const float *, uint16_t *);
#if defined(EO_BUILT_AVX2)
MM_VARIANT(avx2)
#endif
#if defined(EO_BUILT_AVX512)
MM_VARIANT(avx512)
#endif

#define MM_CALL(fn, ...)                                                                           \
    switch (eo_tool_cpu_kernels_isa()) {                                                           \
    MM_CASE_AVX2(fn, __VA_ARGS__)                                                                  \
    MM_CASE_AVX512(fn, __VA_ARGS__)                                                                \
    default: fn(__VA_ARGS__); break;                                                               \
    }
#if defined(EO_BUILT_AVX2)
#define MM_CASE_AVX2(fn, ...) case EO_ISA_AVX2: fn##_avx2(__VA_ARGS__); break;
#else
#define MM_CASE_AVX2(fn, ...)
#endif
#if defined(EO_BUILT_AVX512)
#define MM_CASE_AVX512(fn, ...) case EO_ISA_AVX512: fn##_avx512(__VA_ARGS__); break;
#else
#define MM_CASE_AVX512(fn, ...)
#endif

void eo_tool_mm_run(eo_mm_path path, int ta, int tb, int64_t batch, int64_t M, int64_t N,
                    int64_t K, const float *A, int64_t lda, int64_t sa, const float *B,
                    int64_t ldb, int64_t sb, float beta, float *C, int64_t ldc, int64_t sc,
                    void *ws, const eo_par *par)
{
    MM_CALL(eo_mm_run, path, ta, tb, batch, M, N, K, A, lda, sa, B, ldb, sb, beta, C, ldc, sc, ws, par)
}

void eo_tool_mm_run16(eo_mm_path path, int ta, int tb, int64_t batch, int64_t M, int64_t N,
                      int64_t K, int in, const void *A, int64_t lda, int64_t sa, const void *B,
                      int64_t ldb, int64_t sb, float beta, int out, void *C, int64_t ldc,
                      int64_t sc, void *ws, const eo_par *par)
{
    MM_CALL(eo_mm_run16, path, ta, tb, batch, M, N, K, in, A, lda, sa, B, ldb, sb, beta, out, C,
            ldc, sc, ws, par)
}

void eo_tool_half_to_f32(int dt, int64_t n, const uint16_t *src, float *dst)
{
    MM_CALL(eo_half_to_f32, dt, n, src, dst)
}

void eo_tool_f32_to_half(int dt, int64_t n, const float *src, uint16_t *dst)
{
    MM_CALL(eo_f32_to_half, dt, n, src, dst)
}

int eo_tool_mm_simd_compiled(void)
{
    switch (eo_tool_cpu_kernels_isa()) {
#if defined(EO_BUILT_AVX2)
    case EO_ISA_AVX2: return eo_mm_simd_compiled_avx2();
#endif
#if defined(EO_BUILT_AVX512)
    case EO_ISA_AVX512: return eo_mm_simd_compiled_avx512();
#endif
    default: return eo_mm_simd_compiled();
    }
}
