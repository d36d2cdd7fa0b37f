/* core/cpu.c — which CPU kernel variant a context runs: the CPU's own
 * report, the tables the build holds, and the one place that chooses.
 *
 * The library is compiled for the architecture's baseline; the Makefile
 * builds the CPU kernels once more per wider instruction set (its "CPU
 * kernel variants"), each with its own table eo_backend_cpu_<name>, and
 * says which it built with -DEO_BUILT_<NAME>=1. The choice is made once per
 * context (eo_ctx_init, eo_ctx_set_cpu_variant) and kept in
 * ctx->backend[EO_CPU] (and ctx->cpu_isa), so no kernel call ever asks:
 * each variant's kernels call only their own variant.
 *
 * Why not __builtin_cpu_supports: it needs libgcc's initialiser and a
 * global it fills, and the core is freestanding with no mutable global
 * state. cpuid and xgetbv are two instructions, asked here directly.
 * Why xgetbv as well as cpuid: cpuid says what the silicon has, but ymm
 * and zmm registers are usable only if the operating system saves them on
 * a context switch (XCR0 bits 1-2 for AVX, 5-7 for AVX-512's mask and
 * upper registers; Intel SDM vol. 1, 13.3 and 15.2). On aarch64 ASIMD is
 * part of the baseline; asking for more (SVE) needs getauxval, which is
 * libc, so the baseline stays the answer there until a variant needs it. */
#include "core/internal.h"

#if defined(EO_BUILT_AVX2)
extern const eo_backend eo_backend_cpu_avx2;
#endif
#if defined(EO_BUILT_AVX512)
extern const eo_backend eo_backend_cpu_avx512;
#endif

#if defined(__x86_64__)
static void cpuid(uint32_t leaf, uint32_t sub, uint32_t r[4])
{
    __asm__ volatile("cpuid" : "=a"(r[0]), "=b"(r[1]), "=c"(r[2]), "=d"(r[3]) : "a"(leaf), "c"(sub));
}

/* XCR0, the state components the OS saves. Only valid when cpuid.1:ECX
 * bit 27 (OSXSAVE) says the OS enabled xgetbv. */
static uint64_t xcr0(void)
{
    uint32_t lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return ((uint64_t)hi << 32) | lo;
}

static uint32_t detect(void)
{
    uint32_t r[4], f = 0;
    cpuid(0, 0, r);
    const uint32_t max_leaf = r[0];
    if (max_leaf < 1)
        return f;
    cpuid(1, 0, r);
    const uint32_t ecx1 = r[2], edx1 = r[3];
    if (edx1 & (1u << 26))
        f |= EO_CPUF_SSE2;
    const int osxsave = (ecx1 >> 27) & 1;
    const uint64_t xcr = osxsave ? xcr0() : 0;
    const int ymm = (xcr & 0x6) == 0x6;     /* SSE and AVX state */
    const int zmm = (xcr & 0xe6) == 0xe6;   /* + opmask, ZMM_Hi256, Hi16_ZMM */
    if (!ymm || !(ecx1 & (1u << 28)))
        return f; /* no AVX: nothing wider is usable either */
    f |= EO_CPUF_AVX;
    if (ecx1 & (1u << 12))
        f |= EO_CPUF_FMA;
    if (ecx1 & (1u << 29))
        f |= EO_CPUF_F16C;
    if (max_leaf < 7)
        return f;
    cpuid(7, 0, r);
    const uint32_t ebx7 = r[1], max_sub7 = r[0];
    if (ebx7 & (1u << 5))
        f |= EO_CPUF_AVX2;
    if (zmm && (ebx7 & (1u << 16))) {
        f |= EO_CPUF_AVX512F;
        if (ebx7 & (1u << 17))
            f |= EO_CPUF_AVX512DQ;
        if (ebx7 & (1u << 30))
            f |= EO_CPUF_AVX512BW;
        if (ebx7 & (1u << 31))
            f |= EO_CPUF_AVX512VL;
        if (max_sub7 >= 1) {
            cpuid(7, 1, r);
            if (r[0] & (1u << 5))
                f |= EO_CPUF_AVX512BF16;
        }
    }
    return f;
}
#elif defined(__aarch64__)
static uint32_t detect(void) { return EO_CPUF_NEON; }
#else
static uint32_t detect(void) { return 0; }
#endif

/* What each variant needs of the CPU: exactly the features its flags
 * (the Makefile's ISA_FLAGS_<name>) let the compiler use. */
static const uint32_t isa_needs[EO_ISA_COUNT] = {
    [EO_ISA_AVX2] = EO_CPUF_AVX | EO_CPUF_AVX2 | EO_CPUF_FMA | EO_CPUF_F16C,
    [EO_ISA_AVX512] = EO_CPUF_AVX | EO_CPUF_AVX2 | EO_CPUF_FMA | EO_CPUF_F16C | EO_CPUF_AVX512F |
                      EO_CPUF_AVX512BW | EO_CPUF_AVX512VL | EO_CPUF_AVX512DQ,
};

/* The table of a variant, NULL when this build does not hold it. A NATIVE=1
 * build holds one table, compiled for its own machine: EO_ISA_NATIVE. */
static const eo_backend *isa_table(eo_cpu_isa isa)
{
    switch (isa) {
#if defined(EO_BUILT_NATIVE)
    case EO_ISA_NATIVE: return &eo_backend_cpu;
#else
    case EO_ISA_BASE: return &eo_backend_cpu;
#endif
#if defined(EO_BUILT_AVX2)
    case EO_ISA_AVX2: return &eo_backend_cpu_avx2;
#endif
#if defined(EO_BUILT_AVX512)
    case EO_ISA_AVX512: return &eo_backend_cpu_avx512;
#endif
    default: return NULL;
    }
}

/* The one place a variant is chosen and installed: `want` if the build
 * holds it and the CPU runs it (else a status, the context unchanged);
 * want == EO_ISA_COUNT: the widest that qualifies. */
static eo_status cpu_select(eo_ctx *ctx, eo_cpu_isa want)
{
    if (want == EO_ISA_COUNT) {
        for (int i = EO_ISA_COUNT - 1; i >= 0; i--)
            if (isa_table((eo_cpu_isa)i) && (ctx->cpu_features & isa_needs[i]) == isa_needs[i]) {
                want = (eo_cpu_isa)i;
                break;
            }
    }
    const eo_backend *t = want < EO_ISA_COUNT ? isa_table(want) : NULL;
    if (!t)
        return EO_ERR_UNSUPPORTED;
    if ((ctx->cpu_features & isa_needs[want]) != isa_needs[want])
        return EO_ERR_UNSUPPORTED;
    ctx->backend[EO_CPU] = t;
    ctx->cpu_isa = want;
    return EO_OK;
}

void eo_cpu_init(eo_ctx *ctx)
{
    ctx->cpu_features = detect();
    /* The baseline (or native) table always qualifies: never fails. */
    (void)cpu_select(ctx, EO_ISA_COUNT);
}

eo_status eo_ctx_set_cpu_variant(eo_ctx *ctx, eo_cpu_isa isa)
{
    if (!ctx)
        return EO_ERR_ARG;
    if ((unsigned)isa >= EO_ISA_COUNT)
        return eo_fail(ctx, EO_ERR_ARG, "eo_ctx_set_cpu_variant: variant %d is not an eo_cpu_isa "
                       "(0 to %d)", (int)isa, EO_ISA_COUNT - 1);
    if (!isa_table(isa))
        return eo_fail(ctx, EO_ERR_UNSUPPORTED,
                       "eo_ctx_set_cpu_variant: this build has no %s kernels (built: %s%s%s)",
                       eo_cpu_isa_name(isa), isa_table(EO_ISA_NATIVE) ? "native" : "base",
                       isa_table(EO_ISA_AVX2) ? ", avx2" : "", isa_table(EO_ISA_AVX512) ? ", avx512" : "");
    if (cpu_select(ctx, isa) != EO_OK) {
        const uint32_t missing = isa_needs[isa] & ~ctx->cpu_features;
        return eo_fail(ctx, EO_ERR_UNSUPPORTED,
                       "eo_ctx_set_cpu_variant: this CPU cannot run the %s kernels (it lacks %s)",
                       eo_cpu_isa_name(isa), eo_cpu_feature_name(missing & (~missing + 1u)));
    }
    return EO_OK;
}

uint32_t eo_cpu_features(const eo_ctx *ctx) { return ctx ? ctx->cpu_features : 0; }
eo_cpu_isa eo_cpu_variant(const eo_ctx *ctx) { return ctx ? ctx->cpu_isa : EO_ISA_BASE; }
const char *eo_cpu_variant_name(const eo_ctx *ctx) { return eo_cpu_isa_name(eo_cpu_variant(ctx)); }

const char *eo_cpu_isa_name(eo_cpu_isa isa)
{
    switch (isa) {
    case EO_ISA_BASE: return "base";
    case EO_ISA_AVX2: return "avx2";
    case EO_ISA_AVX512: return "avx512";
    case EO_ISA_NATIVE: return "native";
    default: return "?";
    }
}

const char *eo_cpu_feature_name(uint32_t bit)
{
    switch (bit) {
    case EO_CPUF_SSE2: return "sse2";
    case EO_CPUF_AVX: return "avx";
    case EO_CPUF_AVX2: return "avx2";
    case EO_CPUF_FMA: return "fma";
    case EO_CPUF_F16C: return "f16c";
    case EO_CPUF_AVX512F: return "avx512f";
    case EO_CPUF_AVX512BW: return "avx512bw";
    case EO_CPUF_AVX512VL: return "avx512vl";
    case EO_CPUF_AVX512DQ: return "avx512dq";
    case EO_CPUF_AVX512BF16: return "avx512bf16";
    case EO_CPUF_NEON: return "neon";
    default: return "?";
    }
}
