/* ops/cpu/sum8.h — the portable (non-SIMD) kernels' row sums: eight running
 * float sums, element j into sum j mod 8, added pairwise at the end.
 *
 * One running float sum over a long row (cross-entropy's 9000 exps, a
 * layernorm row) loses about n·eps of relative accuracy, enough to differ
 * from the AVX2 path (eight lanes) and the GPU (a tree) by more than their
 * tests allow; eight sums cut the error the same way those do, and the
 * adds no longer wait on each other. Only the NATIVE=0 paths (what a
 * cross target such as aarch64, armhf, s390x or a Cortex-M4 builds) use it. */
#ifndef EO_OPS_CPU_SUM8_H
#define EO_OPS_CPU_SUM8_H

#include <stdint.h>

typedef struct eo_sum8 {
    float s[8];
} eo_sum8;

static inline void eo_sum8_init(eo_sum8 *a)
{
    for (int k = 0; k < 8; k++)
        a->s[k] = 0.0f;
}

static inline void eo_sum8_add(eo_sum8 *a, int64_t j, float v) { a->s[j & 7] += v; }

static inline float eo_sum8_total(const eo_sum8 *a)
{
    return ((a->s[0] + a->s[1]) + (a->s[2] + a->s[3])) + ((a->s[4] + a->s[5]) + (a->s[6] + a->s[7]));
}

#endif
