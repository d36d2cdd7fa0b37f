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
 *   types       .pred .b8-.b64 .u8-.u64 .s8-.s64 .f32 .f64 (no .f16);
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
 *               (int/float both ways, .rni/.rzi/.rmi/.rpi, .sat);
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

#define EO_PX_GLOBAL_BASE 0x00000d0000000000ull /* first device address */
#define EO_PX_SHARED_WINDOW 0x00000a0000000000ull /* generic address of shared byte 0 */

eo_px_heap *eo_px_heap_new(void);
void eo_px_heap_free(eo_px_heap *h); /* frees every allocation too */
/* n may be 0 (a unique address with no bytes behind it). */
eo_status eo_px_heap_alloc(eo_px_heap *h, size_t n, uint64_t *dev);
/* dev must be the start of a live allocation, else EO_ERR_ARG. */
eo_status eo_px_heap_release(eo_px_heap *h, uint64_t dev);
/* The host bytes behind [dev, dev+n) if they lie inside one live
 * allocation, else NULL. */
void *eo_px_heap_span(const eo_px_heap *h, uint64_t dev, size_t n);
size_t eo_px_heap_live_count(const eo_px_heap *h);

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
