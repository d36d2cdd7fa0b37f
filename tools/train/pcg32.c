/* tools/train/pcg32.c — PCG32 (see pcg32.h for the source and why). */
#include "tools/train/pcg32.h"

/* The 64-bit LCG multiplier of the PCG paper. */
#define PCG_MULT UINT64_C(6364136223846793005)

uint32_t eo_pcg32_next(eo_pcg32 *r)
{
    uint64_t old = r->state;
    r->state = old * PCG_MULT + r->inc;
    /* Output function XSH-RR: xorshift the high bits down, then rotate by
     * the top 5 bits, so the weak low bits of the LCG never show alone. */
    uint32_t xorshifted = (uint32_t)(((old >> 18) ^ old) >> 27);
    uint32_t rot = (uint32_t)(old >> 59);
    return (xorshifted >> rot) | (xorshifted << ((32u - rot) & 31u));
}

void eo_pcg32_seed(eo_pcg32 *r, uint64_t seed, uint64_t stream)
{
    r->state = 0;
    r->inc = (stream << 1) | 1u;
    eo_pcg32_next(r);
    r->state += seed;
    eo_pcg32_next(r);
}

uint32_t eo_pcg32_below(eo_pcg32 *r, uint32_t bound)
{
    if (bound <= 1)
        return 0;
    /* 2^32 mod bound, computed in 32-bit arithmetic. */
    uint32_t threshold = (0u - bound) % bound;
    for (;;) {
        uint32_t v = eo_pcg32_next(r);
        if (v >= threshold)
            return v % bound;
    }
}
