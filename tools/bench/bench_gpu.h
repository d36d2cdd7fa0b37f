/* tools/bench/bench_gpu.h — the GPU mode of the kernel benchmark. */
#ifndef EO_TOOLS_BENCH_GPU_H
#define EO_TOOLS_BENCH_GPU_H

#include <stdio.h>

struct eo_cuda_driver;

/* Time the PTX kernels with CUDA events on device 0 and print a table:
 * ms, GFLOP/s or GB/s, % of the measured device copy bandwidth, ratio to
 * cuBLAS SGEMM when libcublas is found (dlopen). drv NULL loads the real
 * driver; with no driver or device it prints "no GPU: <reason>" and
 * returns 0. scale: 0 tiny (for the PTX interpreter), 1 quick, 2 full.
 * The table goes to out; csv may be NULL. Returns 0, or 1 when something failed on the device. */
int eo_bench_gpu(const struct eo_cuda_driver *drv, int scale, FILE *out, FILE *csv);

#endif
