/* tools/ptxsim/ptxsim.h — a PTX interpreter, so that every hand-written CUDA
 * kernel can be run, and checked, on a machine without a GPU.
 *
 * Why an interpreter and not "compile the kernel for the CPU": the bugs
 * worth catching in a GPU kernel are the ones a C compiler cannot see —
 * a thread reading shared memory that another thread has not finished
 * writing, a __syncthreads() that half a block never reaches, a warp
 * shuffle whose partner lanes have diverged, an index one past the end
 * of a buffer. To see those, the interpreter executes the PTX the way the
 * hardware does (warps of 32 threads in lockstep, barriers per block)
 * and checks every memory access and every register read as it goes.
 *
 * The pieces, one file each:
 *   ptxsim_parse.c  text -> a compact instruction array (ptxsim_isa.h);
 *                   anything outside the supported subset is rejected
 *                   here, at load time, with its line number;
 *   rules.c         PTX's own rules, as ptxas enforces them (.version and
 *                   .target of each instruction, instruction and register
 *                   types, required modifiers): refused at load too;
 *   ptxsim_heap.c   "device memory": host buffers behind fake device
 *                   addresses, with the allocation table the checks use;
 *   ptxsim_exec.c   the grid/block/warp scheduler, barriers, shuffles,
 *                   memory accesses and the shared-memory race detector;
 *   ptxsim_alu.c    what one thread does for one arithmetic instruction;
 *   count.c         performance counters, counted per warp instruction;
 *   profile.c       adding and printing counters, the double's record;
 *   ptxsim_driver.c the CUDA driver-API double built on the above;
 *   eo-ptxsim.c     a command line for studying one kernel.
 *
 * Errors in the kernel are not reported by aborting: eo_px_run() stops at
 * the first fault and describes it in an eo_px_fault (kernel, block,
 * thread, PTX line, what went wrong).
 *
 * The supported subset (everything else is refused at load):
 *   directives  .version .target .address_size 64, .visible/.weak .entry
 *               with .param lists (scalars, .align'ed byte arrays),
 *               .maxntid/.reqntid/.minnctapersm/.maxnreg, .reg (also
 *               %r<N> ranges), .shared (module or kernel scope, .align,
 *               arrays, .extern .shared name[] for dynamic shared memory),
 *               labels, nested { } scopes, .loc/.file/.pragma (ignored);
 *   types       .pred .b8-.b64 .u8-.u64 .s8-.s64 .f32 .f64; .f16 .bf16 (and
 *               the packed .f16x2 .bf16x2) in cvt to and from .f32, their
 *               values in .b16/.b32 registers;
 *   memory      ld/st .global .shared .param(ld of kernel params) or
 *               generic, with .v2/.v4 up to 16 bytes; atom/red .global or
 *               .shared: add inc dec min max and or xor cas exch;
 *               cvta(.to).global/.shared; membar/fence (no-ops);
 *   arithmetic  add sub mul(.lo/.hi/.wide) mad(.lo/.hi/.wide) fma div rem
 *               min max abs neg copysign, rcp sqrt rsqrt ex2 lg2 sin cos
 *               tanh (.approx/.full/.ftz/.sat and rounding accepted), and
 *               or xor not cnot shl shr popc clz, setp (all comparisons,
 *               .and/.or/.xor combiners, p|q), selp, mov (registers,
 *               immediates, special registers, shared addresses), cvt
 *               (int/float both ways, .rni/.rzi/.rmi/.rpi, .sat; f32 <-> f16/bf16
 *               with .rn .rz .rm .rp);
 *   async/tc    cp.async.{ca,cg}.shared.global (4/8/16 bytes, src-size),
 *               commit_group, wait_group, wait_all; ldmatrix.sync.aligned
 *               .m8n8.x1/.x2/.x4{.trans}.shared.b16; mma.sync.aligned
 *               .m16n8k16.row.col.f32.{bf16.bf16,f16.f16}.f32;
 *   control     @p/@!p guards, bra(.uni), ret, exit, bar.sync 0 /
 *               barrier.sync 0, bar.warp.sync, shfl.sync up/down/bfly/idx
 *               .b32 (with optional predicate), vote.sync all/any/uni/ballot;
 *   special     %tid %ntid %ctaid %nctaid (.x .y .z), %laneid %warpid
 *               %nwarpid %smid %nsmid %clock %clock64 %lanemask_*. */
#ifndef EO_PTXSIM_H
#define EO_PTXSIM_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "alloc/status.h"

/* ---- modules ---------------------------------------------------------- */

typedef struct eo_px_module eo_px_module;
typedef struct eo_px_kernel eo_px_kernel;

/* Parse PTX text (len bytes; it need not be NUL-terminated). On failure
 * returns EO_ERR_FORMAT (malformed) or EO_ERR_UNSUPPORTED (valid PTX the
 * interpreter does not model) and writes "line N: ..." into err. */
eo_status eo_px_module_load(const char *ptx, size_t len, eo_px_module **out,
                            char *err, size_t errcap);
void eo_px_module_free(eo_px_module *m);

int eo_px_module_kernel_count(const eo_px_module *m);
/* The module's .version as major * 10 + minor (7.0 -> 70) and its
 * .target's number (sm_80 -> 80). The parser has checked each
 * instruction against both, as ptxas does (rules.h). */
int eo_px_module_ptx_version(const eo_px_module *m);
int eo_px_module_target(const eo_px_module *m);
const eo_px_kernel *eo_px_module_kernel_at(const eo_px_module *m, int i);
/* NULL when the module has no .entry of that name. */
const eo_px_kernel *eo_px_module_kernel(const eo_px_module *m, const char *name);

const char *eo_px_kernel_name(const eo_px_kernel *k);
int eo_px_kernel_param_count(const eo_px_kernel *k);
/* Offset and size in bytes of parameter i inside the packed parameter
 * buffer; its PTX type name (".u64", ".f32", ".b8" for byte arrays). */
void eo_px_kernel_param(const eo_px_kernel *k, int i, size_t *offset, size_t *size,
                        const char **type);
size_t eo_px_kernel_param_bytes(const eo_px_kernel *k); /* whole buffer */
size_t eo_px_kernel_static_shared(const eo_px_kernel *k);
int eo_px_kernel_nregs(const eo_px_kernel *k);

/* ---- device memory ------------------------------------------------------
 * Device addresses are fake 64-bit numbers in a range no host pointer
 * uses, so a kernel that is handed a host pointer (or a launcher that
 * memcpy's from a device address) fails loudly instead of working by
 * accident. Allocations are separated by unmapped gaps so that running
 * off the end of one never lands silently in the next. New allocations
 * hold all-ones bytes, not zeros, as a GPU's hold garbage. */

typedef struct eo_px_heap eo_px_heap;

/* The library keeps a device address in a tensor's `void *data`, so on a
 * 32-bit host every device address must fit in 32 bits, as CUdeviceptr
 * did on 32-bit CUDA hosts: there the devices share the top half of the
 * 32-bit range, 256 MiB of addresses each (addresses are never reused,
 * so that is what one process can allocate on one device over its life).
 * Shared memory's generic window is only ever a kernel register value, so
 * it stays where it is. */
#if UINTPTR_MAX > 0xffffffffu
#define EO_PX_GLOBAL_BASE 0x00000d0000000000ull /* first device address */
#define EO_PX_DEVICE_SPAN ((uint64_t)1 << 40)   /* device i from BASE + i * SPAN */
#else
#define EO_PX_GLOBAL_BASE 0x80000000ull
#define EO_PX_DEVICE_SPAN ((uint64_t)1 << 28)
#endif
#define EO_PX_SHARED_WINDOW 0x00000a0000000000ull /* generic address of shared byte 0 */

eo_px_heap *eo_px_heap_new(void);
/* The same, handing out addresses from `base` upward (a multiple of 256,
 * at least EO_PX_GLOBAL_BASE): the driver double gives each simulated
 * device its own range, so a pointer used on the wrong device faults. */
eo_px_heap *eo_px_heap_new_at(uint64_t base);
void eo_px_heap_free(eo_px_heap *h); /* frees every allocation too */
/* n may be 0 (a unique address with no bytes behind it). */
eo_status eo_px_heap_alloc(eo_px_heap *h, size_t n, uint64_t *dev);
/* dev must be the start of a live allocation, else EO_ERR_ARG. */
eo_status eo_px_heap_release(eo_px_heap *h, uint64_t dev);
/* The host bytes behind [dev, dev+n) if they lie inside one live
 * allocation, else NULL. */
void *eo_px_heap_span(const eo_px_heap *h, uint64_t dev, size_t n);
size_t eo_px_heap_live_count(const eo_px_heap *h);
/* The live allocation holding byte dev: 1 and its base and size, else 0
 * (the counters use it to measure a kernel's footprint). */
int eo_px_heap_extent(const eo_px_heap *h, uint64_t dev, uint64_t *base, size_t *size);

/* Why an access at `dev` of n bytes is bad, as a sentence ("8 bytes past
 * the end of the 4096-byte allocation at 0xd0000000000"), or NULL if it
 * is fine. `buf` receives the text. */
const char *eo_px_heap_explain(const eo_px_heap *h, uint64_t dev, size_t n, char *buf,
                               size_t cap);

/* ---- running a kernel ---------------------------------------------------- */

typedef struct eo_px_dim {
    unsigned x, y, z;
} eo_px_dim;

typedef enum eo_px_fault_kind {
    EO_PX_FAULT_NONE = 0,
    EO_PX_FAULT_GLOBAL_OOB,     /* global access outside every live allocation */
    EO_PX_FAULT_MISALIGNED,     /* address not a multiple of the access size */
    EO_PX_FAULT_SHARED_OOB,     /* shared access past the block's shared memory */
    EO_PX_FAULT_PARAM_OOB,      /* ld.param past the parameter buffer */
    EO_PX_FAULT_SHARED_RACE,    /* two threads touch a byte, one writes, no barrier between */
    EO_PX_FAULT_DIVERGENT_BARRIER, /* bar.sync reached by part of a warp/block */
    EO_PX_FAULT_SHFL_DIVERGED,  /* shfl/vote mask names lanes not executing it */
    EO_PX_FAULT_UNINIT_REG,     /* a register read before this thread wrote it */
    EO_PX_FAULT_STEP_LIMIT,     /* ran longer than the configured limit (a hang) */
    EO_PX_FAULT_COUNT
} eo_px_fault_kind;

typedef struct eo_px_fault {
    eo_px_fault_kind kind;
    int line;                   /* PTX line of the faulting instruction */
    eo_px_dim block, thread;    /* who faulted */
    char kernel[64];
    char msg[384];              /* full sentence with all of the above */
} eo_px_fault;

/* A short stable name for a fault kind ("shared-race"). */
const char *eo_px_fault_name(eo_px_fault_kind k);

/* ---- performance counters -------------------------------------------------
 * What Nsight Compute would report for a launch, counted by the
 * interpreter as it runs (deterministic: same kernel, same inputs, same
 * numbers). Everything is counted per WARP instruction, as the hardware
 * issues them; what a single lane does only enters through the active
 * mask and the addresses. Counting is on when eo_px_config.counters is
 * not NULL; tools/ptxsim/counters.c adds, scales and prints them.
 *
 * Limits, read before trusting a number: the interpreter runs PTX, not
 * the SASS that ptxas makes of it, so instruction counts are PTX counts
 * (ptxas may fuse, unroll, hoist or add address arithmetic); global
 * traffic is counted at the L1 level (requests and sectors), never as
 * DRAM traffic, which depends on caches the interpreter does not model.
 *
 * Instruction classes (a warp instruction counts once however many of
 * its lanes are active; a guarded-off instruction still issues):
 *   ffma fmul fadd  f32 fma/mad, mul, add/sub (the FP32 pipe)
 *   fp_other        other f32/f64 arithmetic: min max abs neg, setp and
 *                   selp on floats, f64 anything except transcendentals
 *   sfu             transcendentals and divides: rcp sqrt rsqrt ex2 lg2
 *                   sin cos tanh div (the MUFU pipe on the GPU)
 *   integer         integer and bitwise arithmetic, integer setp/selp
 *   convert         cvt (cvta is integer arithmetic)
 *   ld/st shared    ld/st that reach shared memory, atomics there too
 *   ld/st global    ld/st that reach global memory (generic addresses are
 *                   classified by where they land), atom/red global
 *   shuffle         shfl and vote
 *   barrier         bar.sync, bar.warp.sync, membar/fence
 *   branch          bra, ret, exit
 *   other           mov, ld.param (a constant-bank operand in SASS)
 *   mma             tensor-core mma.sync (HMMA in SASS); each m16n8k16
 *                   is 2*16*8*16 = 4096 FLOPs, summed in tensor_flops
 * ldmatrix counts as a shared load (16 bytes per address-giving lane:
 * one wavefront per 8x8 matrix when conflict-free); cp.async as a global
 * load (its source) and a shared store (its destination, counted when
 * issued). */
typedef enum eo_px_class {
    EO_PX_C_FFMA, EO_PX_C_FMUL, EO_PX_C_FADD, EO_PX_C_FP_OTHER, EO_PX_C_SFU,
    EO_PX_C_INT, EO_PX_C_CVT, EO_PX_C_LD_SHARED, EO_PX_C_ST_SHARED, EO_PX_C_LD_GLOBAL,
    EO_PX_C_ST_GLOBAL, EO_PX_C_ATOM_GLOBAL, EO_PX_C_SHFL, EO_PX_C_BAR, EO_PX_C_BRANCH,
    EO_PX_C_OTHER, EO_PX_C_MMA,
    EO_PX_NCLASS
} eo_px_class;

/* Global memory, one set per direction (loads, stores, atomics):
 *   requests  warp instructions with at least one lane executing;
 *   sectors   32-byte sectors those requests touch (per request, the
 *             distinct sectors of the active lanes' addresses: 4 per
 *             request for 32 consecutive floats);
 *   bytes     bytes the active lanes asked for, each distinct address
 *             once (a broadcast load asks for 4 bytes, not 128).
 * Sector efficiency = bytes / (32 * sectors).
 *
 * Shared memory (loads; stores, with shared atomics counted as stores):
 *   requests   warp instructions reaching shared memory;
 *   wavefronts passes the banks need (tools/ptxsim/exec.c, shared_wavefronts,
 *              has the rule and its source);
 *   ideal      wavefronts the same request would take with no bank
 *              conflict (1 per 32-bit request, 2 per 64-bit, 4 per
 *              128-bit when every lane is active);
 * Bank conflicts = wavefronts - ideal, as Nsight Compute counts them. */
typedef struct eo_px_mem {
    uint64_t requests, sectors, bytes;
} eo_px_mem;
typedef struct eo_px_smem {
    uint64_t requests, wavefronts, ideal;
} eo_px_smem;

typedef struct eo_px_counters {
    uint64_t launches;       /* launches added into this record */
    uint64_t blocks;         /* blocks in the grid(s) */
    uint64_t blocks_run;     /* blocks the interpreter ran: fewer when sampling */
    unsigned threads_per_block; /* of the last launch added */
    size_t shared_per_block;    /* static + dynamic bytes, of the last launch */
    uint64_t warp_inst[EO_PX_NCLASS];
    uint64_t warp_insts;     /* all classes */
    uint64_t thread_insts;   /* sum over warp instructions of executing lanes */
    eo_px_mem gld, gst, gatom;
    eo_px_smem sld, sst;
    /* Global footprint, in 32-byte sectors:
     *   unique_sectors  distinct sectors the launch touched (each once over
     *                   all the blocks that ran: the compulsory traffic);
     *   block_sectors   sum over blocks of the distinct sectors each block
     *                   touched (the traffic if no block found another's
     *                   data in L2);
     *   alloc_bytes     bytes of the distinct allocations it touched (an
     *                   upper bound on the footprint when sampling);
     *   rw_sectors      of the distinct sectors, those both read and written
     *                   (loaded and stored, or hit by an atomic): DRAM moves
     *                   them twice, in and back out. */
    uint64_t unique_sectors, block_sectors, alloc_bytes;
    uint64_t rw_sectors;
    /* How much a block shares with its neighbour (blocks with adjacent
     * linear indices run at the same time on the GPU): over the odd blocks
     * (linear index 2i+1) that ran, pair_new_sectors sums the sectors each
     * touched that no earlier block of the launch had; pair_blocks counts
     * them. The model uses it to estimate what a wave of blocks reads. */
    uint64_t pair_new_sectors, pair_blocks;
    /* Memory-level parallelism: global loads a warp issues before it first
     * uses one of their results form a group of k loads in flight. Over
     * all groups: mlp_loads = sum k (global load instructions), mlp_sq =
     * sum k*k; mlp_sq / mlp_loads is the load-weighted mean group size. */
    uint64_t mlp_loads, mlp_sq, load_groups; /* load_groups: the number of groups */
    uint64_t tensor_flops;   /* 4096 per mma.m16n8k16 warp instruction */
    uint64_t idiv_insts;     /* integer div/rem warp instructions (counted in integer too) */
} eo_px_counters;

/* Counter arithmetic and printing (tools/ptxsim/profile.c). */
void eo_px_counters_add(eo_px_counters *into, const eo_px_counters *c);
const char *eo_px_class_name(int cls); /* "ffma", "ld.global", ... */
/* Sector efficiency (0..1) of one direction; 0 when it made no request. */
double eo_px_sector_efficiency(const eo_px_mem *m);
/* The counters as a readable report, two-space indented, for people. */
void eo_px_counters_print(FILE *f, const char *kernel, const eo_px_counters *c);

typedef struct eo_px_config {
    eo_px_dim grid, block;
    size_t dyn_shared;          /* bytes for `.extern .shared` arrays */
    const void *params;         /* packed as eo_px_kernel_param() says */
    size_t params_size;         /* must equal eo_px_kernel_param_bytes() */
    uint64_t step_limit;        /* warp-instructions for the grid; 0 means 1e8 */
    /* Tracing (for people studying a kernel), when trace is not NULL:
     * every executed warp instruction of block trace_block (linear index;
     * -1: every block) with its active mask, followed by the values it
     * wrote for thread trace_thread (linear index in the block; -1: every
     * thread that executed it). */
    FILE *trace;
    long trace_block;
    long trace_thread;
    /* Counters, when not NULL: the launch's counts are ADDED to *counters
     * (zero it first for one launch's figures). */
    eo_px_counters *counters;
    /* Sampling, for studying large grids: when sample_blocks is not 0 and
     * smaller than the grid, only that many blocks run, spread evenly over
     * the grid in adjacent pairs (blocks 2j and 2j+1 for S/2 values of j
     * from a golden-ratio sequence, S rounded up to even), so that what
     * neighbouring blocks share can be measured. The output is then
     * incomplete: this is for counters, never for results. */
    unsigned sample_blocks;
} eo_px_config;

/* Run the whole grid. EO_OK: the kernel ran to completion; EO_ERR_ARG:
 * the launch itself is invalid (zero or too many threads, parameter
 * buffer of the wrong size, too much shared memory); EO_ERR_CUDA: the
 * kernel faulted and *fault says how. fault may be NULL. */
eo_status eo_px_run(const eo_px_kernel *k, eo_px_heap *h, const eo_px_config *c,
                    eo_px_fault *fault);

#define EO_PX_MAX_THREADS 1024
#define EO_PX_MAX_SHARED (48u * 1024u)

#endif
