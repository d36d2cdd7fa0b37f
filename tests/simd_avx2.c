/* tests/simd_avx2.c — the 8-lane vector exp helpers of ops/cpu/simd.h,
 * tested directly (ulp bounds, NaN, the summed form).
 *
 * The suite is built for the architecture's baseline, like the library;
 * this file alone gets the AVX2 kernel variant's flags (Makefile), and
 * test_kernels.c adds its cases only when the CPU reports AVX2 and FMA
 * (tests/simd_cases.h). Moved here from test_kernels.c, unchanged. */
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

#if defined(__AVX2__) && defined(__FMA__)
#include "ops/cpu/simd.h"

static uint64_t rng_state = 0x12345678abcdefull;

static float frand(void) /* uniform in [-1, 1) */
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return (float)((rng_state >> 40) * (2.0 / 16777216.0) - 1.0);
}

static float *alloc_f(int64_t n)
{
    float *p = calloc((size_t)(n > 0 ? n : 1), sizeof(float));
    ck_assert_ptr_nonnull(p);
    return p;
}

/* Every vector exp form keeps NaN: each clamp puts its constant first, so
 * max_ps / min_ps return the NaN operand. */
START_TEST(v8_exp_forms_keep_nan)
{
    float y[8];
    const __m256 nan = _mm256_set1_ps(NAN);
    const __m256 r[6] = {eo_v8_exp(nan),        eo_v8_exp_neg(nan),   eo_v8_exp_sat(nan),
                         eo_v8_exp_scaled(nan), eo_v8_expm1_neg(nan), eo_v8_exp_sum(nan)};
    for (int f = 0; f < 6; f++) {
        _mm256_storeu_ps(y, r[f]);
        for (int k = 0; k < 8; k++)
            CHECK_MSG(isnan(y[k]), "exp form %d lane %d: %g", f, k, (double)y[k]);
    }
}
END_TEST

/* Distance in units in the last place between two non-negative floats:
 * their bit patterns are ordered like their values. */
static int64_t ulp_dist(float a, float b)
{
    int32_t ia, ib;
    memcpy(&ia, &a, 4);
    memcpy(&ib, &b, 4);
    return ia > ib ? (int64_t)ia - ib : (int64_t)ib - ia;
}

static int64_t v8_exp_worst(const float *x, int64_t n, float *worst_x)
{
    int64_t worst = 0;
    for (int64_t i = 0; i + 8 <= n; i += 8) {
        float y[8];
        _mm256_storeu_ps(y, eo_v8_exp(_mm256_loadu_ps(x + i)));
        for (int k = 0; k < 8; k++) {
            const float want = (float)exp((double)x[i + k]);
            const int64_t d = ulp_dist(y[k], want);
            if (d > worst)
                worst = d, *worst_x = x[i + k];
        }
    }
    return worst;
}

START_TEST(v8_exp_within_2ulp)
{
    /* Every 2^-10 step of [-104, 89]: the whole range where exp is neither
     * 0 nor inf in float, denormal results included. */
    const int64_t n = (int64_t)((89.0 + 104.0) * 1024) / 8 * 8;
    float *x = alloc_f(n), wx = 0;
    for (int64_t i = 0; i < n; i++)
        x[i] = -104.0f + (float)i / 1024.0f;
    int64_t worst = v8_exp_worst(x, n, &wx);
    CHECK_MSG(worst <= 2, "eo_v8_exp: %lld ulp at x = %.9g", (long long)worst, wx);
    for (int64_t i = 0; i < n; i++) /* random points, between the grid */
        x[i] = frand() * 100.0f;
    worst = v8_exp_worst(x, n, &wx);
    CHECK_MSG(worst <= 2, "eo_v8_exp: %lld ulp at x = %.9g", (long long)worst, wx);
    free(x);

    const float sp[8] = {-INFINITY, -1e30f, -200.0f, -88.0f, 88.0f, 88.72283f, 89.0f, INFINITY};
    float y[8];
    _mm256_storeu_ps(y, eo_v8_exp(_mm256_loadu_ps(sp)));
    CHECK(y[0] == 0.0f && y[1] == 0.0f && y[2] == 0.0f);
    ck_assert_int_le(ulp_dist(y[3], expf(-88.0f)), 2);
    ck_assert_int_le(ulp_dist(y[4], expf(88.0f)), 2);
    ck_assert_int_le(ulp_dist(y[5], (float)exp((double)sp[5])), 2);
    CHECK(isinf(y[6]) && isinf(y[7]));
    const float nan8[8] = {NAN, 0.0f, -0.0f, 1.0f, -1.0f, 1e-30f, -1e-30f, 0.5f};
    _mm256_storeu_ps(y, eo_v8_exp(_mm256_loadu_ps(nan8)));
    CHECK(isnan(y[0]));
    CHECK(y[1] == 1.0f && y[2] == 1.0f && y[5] == 1.0f && y[6] == 1.0f);
    ck_assert_int_le(ulp_dist(y[3], expf(1.0f)), 1);
}
END_TEST

START_TEST(v8_exp_neg_within_1ulp)
{
    /* The non-positive variant (its own table method): never more than
     * one float from the correctly rounded exp while exp(x) >= FLT_MIN,
     * then 0 (flushed, not denormal). */
    const int64_t n = 105 * 1024;
    float *x = alloc_f(n);
    for (int64_t i = 0; i < n; i++)
        x[i] = -(float)i / 1024.0f;
    int64_t worst = 0;
    float wx = 0;
    for (int64_t i = 0; i < n; i += 8) {
        float y[8];
        _mm256_storeu_ps(y, eo_v8_exp_neg(_mm256_loadu_ps(x + i)));
        for (int k = 0; k < 8; k++) {
            const double want = exp((double)x[i + k]);
            if (want < FLT_MIN) {
                CHECK_MSG(y[k] == 0.0f || fabs(y[k] - want) < FLT_MIN, "x = %g", x[i + k]);
                continue;
            }
            const int64_t d = ulp_dist(y[k], (float)want);
            if (d > worst)
                worst = d, wx = x[i + k];
        }
    }
    CHECK_MSG(worst <= 1, "eo_v8_exp_neg: %lld ulp at x = %.9g", (long long)worst, wx);
    free(x);
    const float sp[8] = {-INFINITY, NAN, -0.0f, 0.0f, -1e-30f, -87.0f, -88.0f, -1e30f};
    float y[8];
    _mm256_storeu_ps(y, eo_v8_exp_neg(_mm256_loadu_ps(sp)));
    CHECK(y[0] == 0.0f && isnan(y[1]) && y[2] == 1.0f && y[3] == 1.0f && y[4] == 1.0f);
    ck_assert_int_le(ulp_dist(y[5], (float)exp(-87.0)), 1);
    CHECK(y[6] == 0.0f && y[7] == 0.0f);
}
END_TEST

START_TEST(v8_exp_sat_within_1ulp)
{
    /* The saturating variant (sums and sigmoids): one float from the
     * correctly rounded exp on [-87.33, 88], clamped outside. */
    const int64_t n = (int64_t)(175 * 1024) / 8 * 8;
    float *x = alloc_f(n), wx = 0;
    for (int64_t i = 0; i < n; i++)
        x[i] = -87.0f + (float)i / 1024.0f;
    int64_t worst = 0;
    for (int64_t i = 0; i + 8 <= n; i += 8) {
        float y[8];
        _mm256_storeu_ps(y, eo_v8_exp_sat(_mm256_loadu_ps(x + i)));
        for (int k = 0; k < 8; k++) {
            const int64_t d = ulp_dist(y[k], (float)exp((double)x[i + k]));
            if (d > worst)
                worst = d, wx = x[i + k];
        }
    }
    CHECK_MSG(worst <= 1, "eo_v8_exp_sat: %lld ulp at x = %.9g", (long long)worst, wx);
    free(x);
    const float sp[8] = {-INFINITY, NAN, -0.0f, 88.0f, -1e30f, -88.0f, 1.0f, -1.0f};
    float y[8];
    _mm256_storeu_ps(y, eo_v8_exp_sat(_mm256_loadu_ps(sp)));
    CHECK(y[0] > 0.0f && y[0] <= 1.3e-38f && isnan(y[1]) && y[2] == 1.0f);
    CHECK(isfinite(y[3]) && y[3] > 1.6e38f && y[4] == y[0] && y[5] == y[0]);
    ck_assert_int_le(ulp_dist(y[6], expf(1.0f)), 1);
    ck_assert_int_le(ulp_dist(y[7], expf(-1.0f)), 1);

    /* The pre-scaled entry point: 2^(u/8) over its whole range. */
    for (float u0 = -1008.0f; u0 < 1015.0f; u0 += 8.0f * 0.123f) {
        float u[8], z[8];
        for (int k = 0; k < 8; k++)
            u[k] = u0 + 0.123f * (float)k;
        _mm256_storeu_ps(z, eo_v8_exp_scaled(_mm256_loadu_ps(u)));
        for (int k = 0; k < 8; k++)
            CHECK_MSG(ulp_dist(z[k], (float)exp2((double)u[k] / 8.0)) <= 1, "eo_v8_exp_scaled(%.9g)",
                      u[k]);
    }
}
END_TEST

/* The summed-terms form (one reduction step): within one float of exp on
 * [-10, 0], within five down to -87.33 (exhaustive over the floats
 * there), clamped below; and a sum of such terms as close to the exact
 * sum as the sum of eo_v8_exp_sat's terms. */
START_TEST(v8_exp_sum_bounds)
{
    int64_t worst_near = 0, worst_far = 0;
    float at = 0;
    for (float v = -87.336544f; v <= 0.0f; v = nextafterf(v, 1.0f)) {
        float y[8];
        _mm256_storeu_ps(y, eo_v8_exp_sum(_mm256_set1_ps(v)));
        const int64_t d = ulp_dist(y[0], (float)exp((double)v));
        if (v >= -10.0f && d > worst_near)
            worst_near = d, at = v;
        if (d > worst_far)
            worst_far = d;
    }
    CHECK_MSG(worst_near <= 1, "eo_v8_exp_sum: %lld floats off at x = %.9g", (long long)worst_near,
              at);
    CHECK_MSG(worst_far <= 5, "eo_v8_exp_sum: %lld floats off below -10", (long long)worst_far);
    const float sp[8] = {-INFINITY, -1e30f, -88.0f, -0.0f, 0.0f, -1.0f, -87.0f, -10.0f};
    float y[8];
    _mm256_storeu_ps(y, eo_v8_exp_sum(_mm256_loadu_ps(sp)));
    CHECK(y[0] > 0.0f && y[0] <= 1.3e-38f && y[1] == y[0] && y[2] == y[0]); /* clamped */
    CHECK(y[3] == 1.0f && y[4] == 1.0f && ulp_dist(y[5], expf(-1.0f)) <= 1);
    /* 50257 terms spread over [-12, 0], as a vocabulary's logits minus
     * their max: both sums against the double one. */
    const int64_t n = 50257 / 8 * 8;
    double exact = 0;
    __m256 s_sum = _mm256_setzero_ps(), s_sat = s_sum;
    for (int64_t i = 0; i < n; i += 8) {
        float x[8];
        for (int k = 0; k < 8; k++) {
            x[k] = -12.0f * (float)((uint32_t)((i + k) * 2654435761u) % 10007u) / 10007.0f;
            exact += exp((double)x[k]);
        }
        s_sum = _mm256_add_ps(s_sum, eo_v8_exp_sum(_mm256_loadu_ps(x)));
        s_sat = _mm256_add_ps(s_sat, eo_v8_exp_sat(_mm256_loadu_ps(x)));
    }
    const double e_sum = fabs(eo_v8_hsum(s_sum) - exact) / exact,
                 e_sat = fabs(eo_v8_hsum(s_sat) - exact) / exact;
    CHECK_MSG(e_sum < 2e-6 && e_sum <= e_sat + 1e-7, "sum of exps: %.3g relative (eo_v8_exp_sat's %.3g)",
              e_sum, e_sat);
}
END_TEST

void eo_simd_avx2_cases(TCase *tc)
{
    tcase_add_test(tc, v8_exp_forms_keep_nan);
    tcase_add_test(tc, v8_exp_within_2ulp);
    tcase_add_test(tc, v8_exp_neg_within_1ulp);
    tcase_add_test(tc, v8_exp_sat_within_1ulp);
    tcase_add_test(tc, v8_exp_sum_bounds);
}
#else
void eo_simd_avx2_cases(TCase *tc) { (void)tc; }
#endif
