/* tests/test_cpu.c — the CPU kernel variant a context runs (core/cpu.c):
 * what eo_ctx_init picks, forcing another, and the refusals. */
#include <check.h>
#include <string.h>
#include "core/internal.h"

static _Alignas(64) unsigned char pbuf[1 << 16], sbuf[1 << 16];

static void init(eo_ctx *ctx) { ck_assert_int_eq(eo_ctx_init(ctx, pbuf, sizeof pbuf, sbuf, sizeof sbuf), EO_OK); }

/* The widest variant the build holds and the CPU runs, and its table. */
START_TEST(init_picks_the_widest_the_cpu_runs)
{
    eo_ctx ctx;
    init(&ctx);
    const uint32_t f = eo_cpu_features(&ctx);
    const eo_cpu_isa v = eo_cpu_variant(&ctx);
    ck_assert_ptr_nonnull(ctx.backend[EO_CPU]);
    ck_assert_str_eq(eo_cpu_variant_name(&ctx), eo_cpu_isa_name(v));
#if defined(EO_BUILT_NATIVE)
    ck_assert_int_eq(v, EO_ISA_NATIVE);
#else
    const uint32_t avx2 = EO_CPUF_AVX | EO_CPUF_AVX2 | EO_CPUF_FMA | EO_CPUF_F16C;
    const uint32_t avx512 = avx2 | EO_CPUF_AVX512F | EO_CPUF_AVX512BW | EO_CPUF_AVX512VL | EO_CPUF_AVX512DQ;
#if defined(EO_BUILT_AVX512)
    if ((f & avx512) == avx512) {
        ck_assert_int_eq(v, EO_ISA_AVX512);
        return;
    }
#endif
#if defined(EO_BUILT_AVX2)
    if ((f & avx2) == avx2) {
        ck_assert_int_eq(v, EO_ISA_AVX2);
        return;
    }
#endif
    (void)avx512;
    ck_assert_int_eq(v, EO_ISA_BASE);
    ck_assert_ptr_eq(ctx.backend[EO_CPU], &eo_backend_cpu);
#endif
#if defined(__x86_64__)
    ck_assert(f & EO_CPUF_SSE2); /* x86-64's baseline */
#endif
    ck_assert_str_eq(eo_cpu_feature_name(EO_CPUF_AVX512F), "avx512f");
    ck_assert_str_eq(eo_cpu_feature_name(0), "?");
}
END_TEST

/* Every variant the CPU runs can be forced, and a tensor op then runs on it. */
START_TEST(force_each_variant)
{
    eo_ctx ctx;
    init(&ctx);
    const eo_cpu_isa best = eo_cpu_variant(&ctx);
    int forced = 0;
    for (int i = 0; i < EO_ISA_COUNT; i++) {
        eo_status s = eo_ctx_set_cpu_variant(&ctx, (eo_cpu_isa)i);
        if (s != EO_OK) {
            ck_assert_int_eq(s, EO_ERR_UNSUPPORTED);
            ck_assert_msg(strstr(eo_last_error(&ctx), "eo_ctx_set_cpu_variant") &&
                              strstr(eo_last_error(&ctx), eo_cpu_isa_name((eo_cpu_isa)i)),
                          "%s", eo_last_error(&ctx));
            if (!forced) /* a refusal leaves the context as it was */
                ck_assert_int_eq(eo_cpu_variant(&ctx), best);
            continue;
        }
        forced++;
        ck_assert_int_eq(eo_cpu_variant(&ctx), i);
        const int64_t sh[2] = {2, 3};
        eo_tensor *a = NULL, *b = NULL;
        ck_assert_int_eq(eo_tensor_new(&ctx, EO_STEP, EO_CPU, EO_F32, 2, sh, &a), EO_OK);
        ck_assert_int_eq(eo_fill(&ctx, a, 1.5f), EO_OK);
        ck_assert_int_eq(eo_add(&ctx, a, a, &b), EO_OK);
        ck_assert(((const float *)b->data)[5] == 3.0f);
    }
    ck_assert_int_ge(forced, 1);
    ck_assert_int_eq(eo_ctx_set_cpu_variant(&ctx, best), EO_OK);
}
END_TEST

START_TEST(bad_arguments)
{
    eo_ctx ctx;
    init(&ctx);
    ck_assert_int_eq(eo_ctx_set_cpu_variant(NULL, EO_ISA_BASE), EO_ERR_ARG);
    ck_assert_int_eq(eo_ctx_set_cpu_variant(&ctx, EO_ISA_COUNT), EO_ERR_ARG);
    ck_assert_ptr_nonnull(strstr(eo_last_error(&ctx), "not an eo_cpu_isa"));
    ck_assert_int_eq(eo_cpu_features(NULL), 0);
    ck_assert_str_eq(eo_cpu_isa_name(EO_ISA_COUNT), "?");
}
END_TEST

Suite *eo_suite_cpu(void)
{
    Suite *s = suite_create("cpu");
    TCase *tc = tcase_create("variants");
    tcase_add_test(tc, init_picks_the_widest_the_cpu_runs);
    tcase_add_test(tc, force_each_variant);
    tcase_add_test(tc, bad_arguments);
    suite_add_tcase(s, tc);
    return s;
}
