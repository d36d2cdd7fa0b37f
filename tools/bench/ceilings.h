/* tools/bench/ceilings.h — eo-bench's ceiling loops, one set per
 * instruction set.
 *
 * The FMA peak is a property of the CPU, not of the build: it must be
 * measured with the widest vectors the CPU has (an AVX-512 machine with a
 * 512-bit datapath issues twice the flops of its AVX2 code), whatever
 * kernel variant runs. Like the library's kernel variants, each set is its
 * own file compiled with that instruction set's flags (the Makefile gives
 * tools/bench/ceil_<isa>.c the ISA_FLAGS_<isa> of its "CPU kernel
 * variants"), and eo-bench calls one only when the CPU reports it
 * (eo_cpu_features). A build without the flags (another architecture, a
 * NATIVE build for a CPU without them) leaves flops_per_iter 0. */
#ifndef EO_BENCH_CEILINGS_H
#define EO_BENCH_CEILINGS_H

#include <stddef.h>

typedef struct eo_ceil_isa {
    const char *name;   /* what the FMA loop runs, for the output: "AVX-512 FMA (16 lanes)" */
    int flops_per_iter; /* of one fma_loop iteration; 0: not compiled in this build */
    void (*fma_loop)(long iters);
    /* A copy of 64-byte blocks with streamed (non-temporal) stores; NULL: none. */
    void (*stream_copy)(char *dst, const char *src, size_t bytes);
    /* The row kernels' vector exp over x[0..1024) `reps` times, summed;
     * NULL: none. Which exp: exp_name. */
    double (*exp_loop)(const float *x, int reps);
    const char *exp_name;
} eo_ceil_isa;

extern const eo_ceil_isa eo_ceil_avx2, eo_ceil_avx512;

#endif
