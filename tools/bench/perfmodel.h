/* tools/bench/perfmodel.h — how long a kernel would take on a named GPU,
 * estimated from the PTX interpreter's performance counters.
 *
 * Every figure this model produces is an ESTIMATE: a roofline over the
 * counted work, not a measurement. README.md ("Performance counters and the
 * performance model") gives the formula, the GPU figures with their
 * sources, and the limits; in short, the predicted time is the largest of
 *   DRAM      bytes that must come from device memory / bandwidth;
 *   FP32      FP32 lane operations / the FP32 pipe's rate;
 *   tensor    tensor-core FLOPs (mma.sync) / the dense BF16/F16 peak times
 *             the share of it mma.sync reaches on that GPU;
 *   SFU       transcendental lane operations / the MUFU pipe's rate;
 *   shared    shared-memory wavefronts / one wavefront per SM per clock;
 *   issue     warp instructions / 4 schedulers per SM per clock;
 *   latency   rounds of dependent global loads a warp waits for x the
 *             load latency, over the warps an SM holds at once (what
 *             occupancy buys: latency hidden by other warps);
 *   launch    a floor of a few microseconds per launch;
 * where the per-SM terms are spread over the SMs the grid can keep busy
 * (blocks, tail of the last wave) and slowed when an SM holds fewer warps
 * than it has schedulers. The largest term is the limiter.
 *
 * Kept in tools/ (not the library): it is for people and benchmarks. */
#ifndef EO_TOOLS_BENCH_PERFMODEL_H
#define EO_TOOLS_BENCH_PERFMODEL_H

#include <stddef.h>
#include <stdio.h>
#include "tools/ptxsim/ptxsim.h"

/* A GPU as the model sees it. Peaks are the vendor's dense figures;
 * perfmodel.c cites the source of each row. */
typedef struct eo_gpu_spec {
    const char *name;         /* "H200", "A100", "RTX4090" */
    const char *full_name;    /* "NVIDIA H200 SXM 141GB" */
    const char *arch;         /* ptxas target: "sm_90" */
    int sms;
    double clock_ghz;         /* the boost clock the FP32 peak is quoted at */
    double fp32_tflops, bf16_tflops; /* dense */
    double dram_gbs;          /* GB/s, 1e9 bytes */
    double l2_mb;             /* MB, 1e6 bytes */
    int fp32_lanes;           /* FP32 results per SM per clock */
    int sfu_lanes;            /* MUFU results per SM per clock */
    int regs_per_sm, max_warps_per_sm, max_blocks_per_sm;
    int smem_per_sm;          /* bytes of shared memory an SM can give blocks */
    int smem_reserved_per_block; /* bytes the driver keeps per block (1 KB from sm_80) */
    double dram_latency_ns;   /* ASSUMED load-to-use latency of a DRAM access */
    double l2_latency_ns;     /* ASSUMED load-to-use latency of an L2 hit */
    const char *source;
    int in_table;             /* shown by default in eo-bench --device sim */
    /* The share of the dense BF16 peak that mma.sync can reach (0 means 1):
     * on Hopper the full rate needs wgmma, and mma.sync is reported to top
     * out near two thirds (perfmodel.c cites the source). */
    double mma_sync_share;
} eo_gpu_spec;

int eo_gpu_count(void);
const eo_gpu_spec *eo_gpu_at(int i);
/* By short name, case-insensitive ("h200"), or by a substring of a device
 * name as cuDeviceGetName reports it ("NVIDIA H200" -> H200); NULL if none. */
const eo_gpu_spec *eo_gpu_find(const char *name);

/* Registers per thread and static shared memory per block, as ptxas
 * reports them for one kernel of a PTX module on one target. */
typedef struct eo_kernel_resources {
    int regs;
    int shared_static;
} eo_kernel_resources;

/* Run ptxas -v on the module text (found as $EO_PTXAS, on PATH, or in
 * /usr/local/cuda/bin) and read kernel's figures. Results are cached per
 * module text and target. 0 on success; -1 with a reason in why (no
 * ptxas, ptxas failed, no such kernel). */
int eo_ptxas_resources(const char *ptx, size_t len, const char *kernel, const char *arch,
                       eo_kernel_resources *out, char *why, size_t whylen);

/* Blocks per SM by the CUDA occupancy rules (registers in units of 256
 * per warp, shared memory in units of 128 bytes plus the per-block
 * reserve, warps and blocks per SM). res NULL: registers unknown, not a
 * limit. */
typedef struct eo_occupancy {
    int blocks_per_sm, warps_per_sm, warps_per_block;
    double occupancy;         /* warps_per_sm / max warps per SM */
    const char *limiter;      /* "registers", "shared memory", "warps", "blocks" */
    int regs_known;
} eo_occupancy;
void eo_occupancy_compute(const eo_gpu_spec *g, unsigned threads_per_block,
                          const eo_kernel_resources *res, size_t shared_per_block,
                          eo_occupancy *out);

enum { EO_LIM_DRAM, EO_LIM_FP32, EO_LIM_SFU, EO_LIM_SHARED, EO_LIM_ISSUE, EO_LIM_TENSOR,
       EO_LIM_LATENCY, EO_LIM_LAUNCH, EO_LIM_COUNT };
const char *eo_limiter_name(int lim);

typedef struct eo_prediction {
    double ms;                /* the estimate: max of t_ms[] */
    double t_ms[EO_LIM_COUNT];/* each term, scaled for occupancy and tail */
    double ideal_ms[EO_LIM_COUNT]; /* each term at the resource's full rate */
    int limiter;
    double pct_of_peak;       /* 100 * ideal_ms[limiter] / ms; for latency and launch,
                                 the busiest throughput resource's ideal_ms instead */
    double dram_bytes;        /* the bytes the DRAM term counts */
    const char *dram_rule;    /* "footprint <= L2", "wave re-reads", ... */
    double fp32_flops;        /* useful FP32 flops (2 per active FMA lane) */
    double tensor_flops;      /* tensor-core flops (4096 per mma.m16n8k16) */
    double load_latency_ns;   /* the mean latency the latency term charges per round */
    double occupancy;         /* resident warps / max warps per SM, as used */
    double scale;             /* grid blocks / blocks run (sampling) */
    int sampled;
} eo_prediction;

/* Predict one kernel's time from its counters (summed over its launches)
 * on g with occupancy occ. When the counters come from a sample of the
 * grid, per-block counts are scaled to the grid. */
void eo_predict(const eo_gpu_spec *g, const eo_px_counters *c, const eo_occupancy *occ,
                eo_prediction *out);
/* The prediction and its terms, for people; every line says "estimate". */
void eo_prediction_print(FILE *f, const eo_gpu_spec *g, const eo_prediction *p);

#endif
