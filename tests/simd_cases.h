/* tests/simd_cases.h — the vector helpers' own test cases, in files built
 * with their instruction set's flags (tests/simd_avx2.c, simd_avx512.c).
 * Call one only on a CPU that reports that set: the function itself is
 * compiled with it. Each adds nothing when the build lacks the flags. */
#ifndef EO_TESTS_SIMD_CASES_H
#define EO_TESTS_SIMD_CASES_H

#include <check.h>

void eo_simd_avx2_cases(TCase *tc);
void eo_simd_avx512_cases(TCase *tc);

#endif
