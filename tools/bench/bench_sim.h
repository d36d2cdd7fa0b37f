/* tools/bench/bench_sim.h — `eo-bench --device sim`: estimated GPU times
 * of the PTX kernels at training shapes, from the interpreter's counters
 * and the performance model (bench_sim.c says how). */
#ifndef EO_TOOLS_BENCH_SIM_H
#define EO_TOOLS_BENCH_SIM_H

#include <stdio.h>

/* Run every case (or those whose "kernel shape" label contains filter)
 * and print the table to out: per GPU of the model (or only `gpu`, when
 * not NULL), estimated ms, limiter and % of the limiter's peak. verbose
 * also prints each kernel's counters. csv may be NULL: one row per case
 * and GPU (gpu,kernel,shape,est_ms,limiter,pct_of_limit_peak,rate,unit,
 * blocks_run,blocks). Returns 0, 1 when the device could not be opened,
 * 2 for an unknown GPU name. */
int eo_bench_sim(const char *gpu, const char *filter, int verbose, FILE *out, FILE *csv);

#endif
