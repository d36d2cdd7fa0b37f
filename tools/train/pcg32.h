/* tools/train/pcg32.h — the PCG32 random number generator (M. E. O'Neill, "PCG: A
 * Family of Simple Fast Space-Efficient Statistically Good Algorithms for
 * Random Number Generation", 2014; the XSH-RR variant with 64-bit state).
 *
 * Why a generator of our own rather than rand(): the shuffle order of a
 * training run must be the same on every machine and libc for a given seed,
 * so that a run can be repeated and compared with a reference. PCG32 is
 * tiny, fast, statistically good, and has published test vectors
 * (seed 42, stream 54 gives 0xa15c02b7 0x7b47f409 ...), which the tests pin. */
#ifndef EO_TOOLS_PCG32_H
#define EO_TOOLS_PCG32_H

#include <stdint.h>

typedef struct eo_pcg32 {
    uint64_t state;
    uint64_t inc; /* always odd: selects one of 2^63 independent streams */
} eo_pcg32;

/* Seeds the generator exactly as the reference pcg32_srandom_r does. */
void eo_pcg32_seed(eo_pcg32 *r, uint64_t seed, uint64_t stream);

/* The next 32 uniformly distributed bits. */
uint32_t eo_pcg32_next(eo_pcg32 *r);

/* A uniform integer in [0, bound), without the modulo bias of `next % bound`:
 * draws below 2^32 mod bound are rejected so that every residue is equally
 * likely (the reference's bounded-rand method). bound must be >= 1. */
uint32_t eo_pcg32_below(eo_pcg32 *r, uint32_t bound);

#endif
