/* tools/bench/perfmodel.c — the performance model (perfmodel.h says what
 * it computes; README.md, "Performance counters and the performance
 * model", gives the formula and its limits). All results are estimates.
 *
 * Why a roofline over counters and not a cycle simulator: the figures a
 * kernel author acts on are "which resource runs out first, and how far
 * from its peak is the kernel", and those follow from counts the
 * interpreter measures exactly (instructions by pipe, sectors, wavefronts,
 * loads in flight). A cycle-level model would need the SASS schedule and
 * cache behaviour, which nothing here can see; it would look more precise
 * without being more right. */
#include <ctype.h>
#include <string.h>
#include "tools/bench/perfmodel.h"

/* Sources of the rows:
 *  - H200 SXM: NVIDIA H200 Tensor Core GPU datasheet (FP32 67 TFLOP/s,
 *    BF16 989 TFLOP/s dense, HBM3e 4.8 TB/s); the SM count, L2 size and
 *    per-SM shared memory are the H100 SXM5's (same GH100 die), from the
 *    NVIDIA H100 Tensor Core GPU Architecture whitepaper; EveryO's
 *    GPU-ANCHORS notes give FP32 as 66.9.
 *  - A100 80GB SXM: NVIDIA A100 datasheet (FP32 19.5, BF16 312 dense,
 *    2,039 GB/s) and the NVIDIA A100 Tensor Core GPU Architecture
 *    whitepaper (108 SMs, 1410 MHz boost, 40 MB L2, 164 KB shared per SM).
 *  - RTX 4090: NVIDIA Ada Lovelace GPU Architecture whitepaper (128 SMs,
 *    2520 MHz boost, 82.6 TFLOP/s FP32, 165.2 TFLOP/s BF16 dense with FP32
 *    accumulation, 1008 GB/s GDDR6X, 72 MB L2).
 *  - Per-SM limits (registers, warps, blocks, shared memory, the 1 KB
 *    reserved per block) and the MUFU rate of 16 results per SM per clock:
 *    CUDA C++ Programming Guide, "Compute Capabilities" (feature and
 *    technical specifications table) and "Arithmetic Instructions"
 *    (throughput table), for compute capability 8.0, 8.9 and 9.0.
 *  - The clock is the one that makes the FP32 peak come out: SMs x FP32
 *    lanes x 2 x clock = peak (1.98 GHz for H200, 1.41 for A100, 2.52 for
 *    the 4090).
 *  - mma.sync on Hopper (H100/H200): about two thirds of the dense BF16
 *    peak, 0.67 here -- a secondary source (a microbenchmark study of the
 *    Hopper tensor cores, as summarised in EveryO's GPU-ANCHORS notes);
 *    the full rate needs wgmma. On A100 and the 4090 mma.sync is the
 *    native tensor-core path: the full peak (share 1).
 *  - Latencies are ASSUMPTIONS (the order of magnitude of published
 *    microbenchmarks, not measured here): a DRAM access 600 ns on the HBM
 *    parts and 500 ns on GDDR6X, an L2 hit 200 ns. They only matter for
 *    kernels with few loads in flight per SM. */
static const eo_gpu_spec gpus[] = {
    {"H200", "NVIDIA H200 SXM 141GB", "sm_90", 132, 1.98, 66.9, 989.0, 4800.0, 50.0, 128, 16,
     65536, 64, 32, 233472, 1024, 600.0, 200.0,
     "H200 datasheet; H100 architecture whitepaper; CUDA Programming Guide (cc 9.0)", 1, 0.67},
    /* Only with --gpu H100 (not in the default table): what gpu-report
     * checks against on an H100. HBM3 3.35 TB/s: the H100 SXM datasheet. */
    {"H100", "NVIDIA H100 SXM 80GB", "sm_90", 132, 1.98, 66.9, 989.0, 3350.0, 50.0, 128, 16,
     65536, 64, 32, 233472, 1024, 600.0, 200.0,
     "H100 datasheet and architecture whitepaper; CUDA Programming Guide (cc 9.0)", 0, 0.67},
    {"A100", "NVIDIA A100 80GB SXM", "sm_80", 108, 1.41, 19.5, 312.0, 2039.0, 40.0, 64, 16,
     65536, 64, 32, 167936, 1024, 600.0, 200.0,
     "A100 datasheet and architecture whitepaper; CUDA Programming Guide (cc 8.0)", 1, 1.0},
    {"RTX4090", "NVIDIA GeForce RTX 4090", "sm_89", 128, 2.52, 82.6, 165.2, 1008.0, 72.0, 128, 16,
     65536, 48, 24, 102400, 1024, 500.0, 200.0,
     "Ada Lovelace architecture whitepaper; CUDA Programming Guide (cc 8.9)", 1, 1.0},
};

int eo_gpu_count(void) { return (int)(sizeof gpus / sizeof gpus[0]); }
const eo_gpu_spec *eo_gpu_at(int i) { return i >= 0 && i < eo_gpu_count() ? &gpus[i] : NULL; }

static int same_ci(const char *a, const char *b)
{
    while (*a && *b && tolower((unsigned char)*a) == tolower((unsigned char)*b))
        a++, b++;
    return !*a && !*b;
}

/* Does `hay` contain `needle`, ignoring case and spaces ("RTX 4090" finds
 * "RTX4090")? */
static int contains_ci(const char *hay, const char *needle)
{
    for (; *hay; hay++) {
        const char *h = hay, *n = needle;
        while (*h && *n) {
            if (*h == ' ') {
                h++;
                continue;
            }
            if (tolower((unsigned char)*h) != tolower((unsigned char)*n))
                break;
            h++, n++;
        }
        if (!*n)
            return 1;
    }
    return 0;
}

const eo_gpu_spec *eo_gpu_find(const char *name)
{
    if (!name)
        return NULL;
    for (int i = 0; i < eo_gpu_count(); i++)
        if (same_ci(gpus[i].name, name))
            return &gpus[i];
    for (int i = 0; i < eo_gpu_count(); i++)
        if (contains_ci(name, gpus[i].name))
            return &gpus[i];
    return NULL;
}

/* ---- occupancy ------------------------------------------------------------------
 * The CUDA occupancy calculator's rules for compute capability 8.x/9.0:
 * registers are given out per warp in units of 256, shared memory per
 * block in units of 128 bytes after adding the 1 KB the driver reserves
 * per block, and an SM holds at most max_warps_per_sm warps and
 * max_blocks_per_sm blocks. */
void eo_occupancy_compute(const eo_gpu_spec *g, unsigned threads_per_block,
                          const eo_kernel_resources *res, size_t shared_per_block,
                          eo_occupancy *out)
{
    memset(out, 0, sizeof *out);
    int wpb = (int)((threads_per_block + 31) / 32);
    if (wpb < 1)
        wpb = 1;
    out->warps_per_block = wpb;
    int blocks = g->max_blocks_per_sm;
    out->limiter = "blocks per SM";
    int by_warps = g->max_warps_per_sm / wpb;
    if (by_warps < blocks) {
        blocks = by_warps;
        out->limiter = "warps per SM";
    }
    size_t smem = shared_per_block;
    if (res && (size_t)res->shared_static > smem)
        smem = (size_t)res->shared_static;
    size_t per_block = (smem + (size_t)g->smem_reserved_per_block + 127) / 128 * 128;
    int by_smem = (int)((size_t)g->smem_per_sm / per_block);
    if (by_smem < blocks) {
        blocks = by_smem;
        out->limiter = "shared memory";
    }
    if (res && res->regs > 0) {
        out->regs_known = 1;
        int per_warp = (res->regs * 32 + 255) / 256 * 256;
        int by_regs = g->regs_per_sm / per_warp / wpb;
        if (by_regs < blocks) {
            blocks = by_regs;
            out->limiter = "registers";
        }
    }
    if (blocks < 1)
        blocks = 0; /* the block does not fit at all: reported as 0 % */
    out->blocks_per_sm = blocks;
    out->warps_per_sm = blocks * wpb;
    out->occupancy = (double)out->warps_per_sm / (double)g->max_warps_per_sm;
}

/* ---- the model ---------------------------------------------------------------------- */

const char *eo_limiter_name(int lim)
{
    static const char *const names[EO_LIM_COUNT] = {"DRAM",  "FP32",   "SFU",     "shared",
                                                   "issue", "tensor", "latency", "launch"};
    return lim >= 0 && lim < EO_LIM_COUNT ? names[lim] : "?";
}

#define LAUNCH_FLOOR_MS 0.002 /* ~2 us per kernel launch, an assumption */

void eo_predict(const eo_gpu_spec *g, const eo_px_counters *c, const eo_occupancy *occ,
                eo_prediction *out)
{
    memset(out, 0, sizeof *out);
    double run = c->blocks_run ? (double)c->blocks_run : 1.0;
    double blocks = c->blocks ? (double)c->blocks : 1.0;
    double s = blocks / run;
    out->scale = s;
    out->sampled = c->blocks_run != c->blocks;
    double clk = g->clock_ghz * 1e9, sms = g->sms;

    /* Where the grid runs: the busiest SM gets ceil(blocks / SMs) blocks
     * (the tail of the last wave), so an SM-local term takes
     * work_per_block * ceil(blocks / SMs) / rate_per_SM. Few resident
     * warps starve the 4 schedulers: an SM holding w < 4 warps issues at
     * w/4 of its rate. */
    double per_sm_blocks = (double)((c->blocks + (uint64_t)g->sms - 1) / (uint64_t)g->sms);
    if (per_sm_blocks < 1)
        per_sm_blocks = 1;
    double tail = per_sm_blocks * sms / blocks; /* >= 1: work spread over the busy SMs */
    int wpb = occ->warps_per_block ? occ->warps_per_block : 1;
    double resident = occ->blocks_per_sm > 0 ? occ->blocks_per_sm : 1;
    if (resident > per_sm_blocks)
        resident = per_sm_blocks;
    double warps_res = resident * wpb;
    double starve = warps_res < 4 ? warps_res / 4.0 : 1.0;

    double fp32_warp = (double)(c->warp_inst[EO_PX_C_FFMA] + c->warp_inst[EO_PX_C_FMUL] +
                                c->warp_inst[EO_PX_C_FADD]) * s;
    double sfu_warp = (double)c->warp_inst[EO_PX_C_SFU] * s;
    double waves = (double)(c->sld.wavefronts + c->sst.wavefronts) * s;
    double insts = (double)c->warp_insts * s;
    double active = c->warp_insts ? (double)c->thread_insts / (32.0 * (double)c->warp_insts) : 1;
    out->fp32_flops = (double)(2 * c->warp_inst[EO_PX_C_FFMA] + c->warp_inst[EO_PX_C_FMUL] +
                               c->warp_inst[EO_PX_C_FADD]) * s * 32.0 * active;

    out->ideal_ms[EO_LIM_FP32] = 1e3 * fp32_warp * 32.0 / (g->fp32_lanes * sms * clk);
    out->ideal_ms[EO_LIM_SFU] = 1e3 * sfu_warp * 32.0 / (g->sfu_lanes * sms * clk);
    out->ideal_ms[EO_LIM_SHARED] = 1e3 * waves / (sms * clk);
    out->ideal_ms[EO_LIM_ISSUE] = 1e3 * insts / (4.0 * sms * clk);
    /* Tensor cores: the counted mma FLOPs at the dense 16-bit peak (the
     * ideal), and at the share of it mma.sync reaches on this GPU (the
     * term), spread over the busy SMs like the other pipes. */
    double share = g->mma_sync_share > 0 ? g->mma_sync_share : 1.0;
    out->tensor_flops = (double)c->tensor_flops * s;
    out->ideal_ms[EO_LIM_TENSOR] = 1e3 * out->tensor_flops / (g->bf16_tflops * 1e12);
    for (int i = EO_LIM_FP32; i <= EO_LIM_TENSOR; i++)
        out->t_ms[i] = out->ideal_ms[i] * tail / starve;
    out->t_ms[EO_LIM_TENSOR] /= share;

    /* DRAM bytes. The footprint is the distinct sectors the grid touches
     * (measured exactly when every block ran; when sampling, the sampled
     * blocks' distinct sectors scaled to the grid, capped by the bytes of
     * the allocations they touched). A footprint that fits in L2 moves
     * once. A larger one may be re-read: blocks that run at the same time
     * (a wave: SMs x blocks per SM, consecutive in block index) share what
     * they read through L2, so each wave is charged one block's distinct
     * sectors plus, for each further block, what a block adds that its
     * neighbour had not read (pair_new_sectors), at most the footprint;
     * the total never exceeds every block fetching all its own sectors
     * (the per-block sum) nor falls below the footprint. */
    double foot = (double)c->unique_sectors * 32.0;
    if (out->sampled) {
        foot *= s;
        if (c->alloc_bytes && foot > (double)c->alloc_bytes)
            foot = (double)c->alloc_bytes;
        if (foot < (double)c->unique_sectors * 32.0)
            foot = (double)c->unique_sectors * 32.0;
    }
    double block_sum = (double)c->block_sectors * 32.0 * s;
    double bytes = foot;
    out->dram_rule = "footprint fits in L2: each sector once";
    if (foot > g->l2_mb * 1e6) {
        double wave_blocks = sms * (occ->blocks_per_sm > 0 ? occ->blocks_per_sm : 1);
        double nwaves = blocks / wave_blocks;
        if (nwaves < 1)
            nwaves = 1;
        double per_block = (double)c->block_sectors * 32.0 / run;
        double extra = c->pair_blocks ? (double)c->pair_new_sectors * 32.0 / (double)c->pair_blocks
                                      : per_block;
        double per_wave = per_block + (wave_blocks - 1) * extra;
        if (per_wave > foot)
            per_wave = foot;
        bytes = per_wave * nwaves;
        if (bytes > block_sum)
            bytes = block_sum;
        if (bytes < foot)
            bytes = foot;
        out->dram_rule = bytes > foot * 1.01 ? "footprint exceeds L2: waves re-read"
                                             : "footprint exceeds L2: each sector once";
    }
    /* A sector both read and written (an update in place: accumulate,
     * the optimizers, atomics) crosses the DRAM interface twice: it is
     * fetched, and the dirty line is written back. The footprint counted
     * it once; add the write-back (scaled like the footprint when
     * sampling). */
    double rw = (double)c->rw_sectors * 32.0 * (out->sampled ? s : 1.0);
    if (rw > foot)
        rw = foot;
    bytes += rw;
    out->dram_bytes = bytes;
    out->ideal_ms[EO_LIM_DRAM] = out->t_ms[EO_LIM_DRAM] = 1e3 * bytes / (g->dram_gbs * 1e9);

    /* Latency. A warp waits once per group of global loads (count.c: the
     * loads issued before the first use of one of them), for the DRAM
     * latency on the share of the load traffic that misses L2 and the L2
     * latency on the rest. An SM overlaps the waits of the warps it holds,
     * so a block's waits take (groups per warp) x latency, and the busiest
     * SM runs ceil(blocks per SM / resident blocks) rounds of blocks.
     * Shared-memory and barrier latencies are not charged. */
    if (c->load_groups && c->gld.sectors) {
        double f = bytes / (32.0 * (double)c->gld.sectors * s);
        f = f > 1 ? 1 : f;
        double lat = f * g->dram_latency_ns + (1 - f) * g->l2_latency_ns;
        double per_warp = (double)c->load_groups / run / wpb;
        double rounds = per_sm_blocks / resident;
        rounds = (double)(uint64_t)(rounds + 0.999999);
        out->load_latency_ns = lat;
        out->t_ms[EO_LIM_LATENCY] = rounds * per_warp * lat * 1e-6;
        out->ideal_ms[EO_LIM_LATENCY] = out->t_ms[EO_LIM_LATENCY]; /* no faster rate exists */
    }
    out->occupancy = warps_res / g->max_warps_per_sm;
    out->ideal_ms[EO_LIM_LAUNCH] = out->t_ms[EO_LIM_LAUNCH] = LAUNCH_FLOOR_MS * (double)c->launches;

    out->limiter = 0;
    for (int i = 1; i < EO_LIM_COUNT; i++)
        if (out->t_ms[i] > out->t_ms[out->limiter])
            out->limiter = i;
    out->ms = out->t_ms[out->limiter];
    /* Latency and the launch floor have no peak to be a fraction of: for
     * them the figure is the busiest throughput resource's share. */
    double used = out->ideal_ms[out->limiter];
    if (out->limiter == EO_LIM_LATENCY || out->limiter == EO_LIM_LAUNCH) {
        used = 0;
        for (int i = EO_LIM_DRAM; i <= EO_LIM_TENSOR; i++)
            used = out->ideal_ms[i] > used ? out->ideal_ms[i] : used;
    }
    out->pct_of_peak = out->ms > 0 ? 100.0 * used / out->ms : 0;
}

void eo_prediction_print(FILE *f, const eo_gpu_spec *g, const eo_prediction *p)
{
    int busy = p->limiter == EO_LIM_LATENCY || p->limiter == EO_LIM_LAUNCH;
    fprintf(f, "estimate for %s (%s): %.4f ms, limited by %s, %.0f %% of %s%s\n", g->full_name,
            g->arch, p->ms, eo_limiter_name(p->limiter), p->pct_of_peak,
            busy ? "the busiest resource's peak" : "its peak",
            p->sampled ? " (counters from a sample of blocks, scaled to the grid)" : "");
    for (int i = 0; i < EO_LIM_COUNT; i++)
        fprintf(f, "  %-7s %10.4f ms estimated (%.4f ms at full rate)%s\n", eo_limiter_name(i),
                p->t_ms[i], p->ideal_ms[i], i == p->limiter ? "  <- limiter" : "");
    fprintf(f, "  DRAM bytes %.3f MB (%s); mean load latency charged %.0f ns at %.0f %% "
               "occupancy\n", p->dram_bytes * 1e-6, p->dram_rule, p->load_latency_ns,
            100.0 * p->occupancy);
    if (p->fp32_flops > 0)
        fprintf(f, "  FP32 %.3f GFLOP: %.1f %% of the %.1f TFLOP/s peak at the estimated time\n",
                p->fp32_flops * 1e-9, 100.0 * p->fp32_flops / (p->ms * 1e-3) / (g->fp32_tflops * 1e12),
                g->fp32_tflops);
    if (p->tensor_flops > 0)
        fprintf(f, "  tensor %.3f GFLOP: %.1f %% of the %.0f TFLOP/s dense BF16 peak at the "
                   "estimated time\n", p->tensor_flops * 1e-9,
                100.0 * p->tensor_flops / (p->ms * 1e-3) / (g->bf16_tflops * 1e12),
                g->bf16_tflops);
}
