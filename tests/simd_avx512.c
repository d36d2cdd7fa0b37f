/* tests/simd_avx512.c — the 16-lane vector exp helpers of ops/cpu/simd.h
 * against the 8-lane ones, bit for bit. Built with the AVX-512 kernel
 * variant's flags; test_kernels.c adds the case only where the CPU
 * reports AVX-512 (tests/simd_cases.h). Moved here from test_kernels.c. */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "tests/simd_cases.h"

#define CHECK(cond)                                                            \
    do {                                                                       \
        if (!(cond))                                                           \
            ck_abort_msg("line %d: %s", __LINE__, #cond);                      \
    } while (0)
#define CHECK_MSG(cond, ...)                                                   \
    do {                                                                       \
        if (!(cond))                                                           \
            ck_abort_msg(__VA_ARGS__);                                         \
    } while (0)

#if defined(__AVX512F__)
#include "ops/cpu/simd.h"

START_TEST(v16_exp_matches_v8)
{
    /* Same method, constants and order: the same bits in every lane, for
     * the saturating form and for the flushing one (x <= 0 only). */
    float x[16], a[16], b[16];
    for (int neg = 0; neg < 2; neg++)
        for (float x0 = -100.0f; x0 < (neg ? 0.0f : 90.0f); x0 += 16.0f * 0.0371f) {
            for (int k = 0; k < 16; k++)
                x[k] = fminf(x0 + 0.0371f * (float)k, neg ? 0.0f : 88.0f);
            x[3] = -INFINITY, x[9] = NAN;
            const __m512 v = _mm512_loadu_ps(x);
            const __m256 lo = _mm256_loadu_ps(x), hi = _mm256_loadu_ps(x + 8);
            _mm512_storeu_ps(a, neg ? eo_v16_exp_neg(v) : eo_v16_exp_sat(v));
            _mm256_storeu_ps(b, neg ? eo_v8_exp_neg(lo) : eo_v8_exp_sat(lo));
            _mm256_storeu_ps(b + 8, neg ? eo_v8_exp_neg(hi) : eo_v8_exp_sat(hi));
            for (int k = 0; k < 16; k++)
                CHECK_MSG(memcmp(a + k, b + k, sizeof(float)) == 0, "x = %.9g: %.9g vs %.9g", x[k],
                          a[k], b[k]);
            if (!neg)
                continue;
            _mm512_storeu_ps(a, eo_v16_exp_sum(v)); /* the summed-terms form, x <= 0 */
            _mm256_storeu_ps(b, eo_v8_exp_sum(lo));
            _mm256_storeu_ps(b + 8, eo_v8_exp_sum(hi));
            for (int k = 0; k < 16; k++)
                CHECK_MSG(memcmp(a + k, b + k, sizeof(float)) == 0, "sum form, x = %.9g", x[k]);
        }
}
END_TEST

void eo_simd_avx512_cases(TCase *tc) { tcase_add_test(tc, v16_exp_matches_v8); }
#else
void eo_simd_avx512_cases(TCase *tc) { (void)tc; }
#endif
