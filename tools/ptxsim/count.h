/* tools/ptxsim/count.h — the performance counters' bookkeeping, used by the
 * executor (exec.c) once per warp instruction. Internal to tools/ptxsim/.
 *
 * Kept out of exec.c because it is a different job: exec.c decides what a
 * warp does, this file decides what that costs in the units Nsight Compute
 * reports (eo_px_counters in ptxsim.h says what each counter means). The
 * executor hands over, per warp instruction, the instruction, its active
 * mask and, for memory instructions, the 32 lanes' addresses; everything
 * else happens here. */
#ifndef EO_PTXSIM_COUNT_H
#define EO_PTXSIM_COUNT_H

#include <stdint.h>
#include "tools/ptxsim/isa.h"

typedef struct px_count {
    eo_px_counters *c;          /* where the launch's counts are added */
    const eo_px_heap *heap;
    /* Distinct-sector tracking: an open-addressing table from sector
     * number to the serial of the last block that touched it. */
    uint64_t *hkey;
    uint32_t *hval;
    uint8_t *hflag;             /* per sector: 1 loaded, 2 stored, 3 both */
    size_t hcap, hn;
    uint32_t serial;            /* the running block's serial, from 1 */
    /* Allocations touched (footprint), a short list. */
    uint64_t abase[64];
    size_t asize[64];
    int na, alast;              /* alast: the one the last request touched */
    /* Memory-level parallelism per warp: pend[w*nregs + r] == gen[w] marks
     * register r of warp w as waiting on a global load of the current
     * group; grp[w] counts that group's loads. */
    uint32_t *pend, *gen, *grp;
    uint8_t *wait;              /* per warp: 2 once the group's first use has issued */
    size_t hn_at_block;         /* distinct sectors when the block began */
    int second;                 /* the running block is the second of a pair */
    int nregs;
    unsigned nwarps;
    int oom;
} px_count;

/* Set up for one launch of k with nwarps warps per block; 0, or -1 when
 * out of memory. Cheap: tests launch thousands of small kernels, so
 * nothing here is proportional to the kernel's length. */
int px_count_begin(px_count *pc, eo_px_counters *c, const eo_px_kernel *k, const eo_px_heap *h,
                   unsigned nwarps);
void px_count_end(px_count *pc);
/* second: the block's linear index is odd (the second of a pair). */
void px_count_block_begin(px_count *pc, int second);
void px_count_block_end(px_count *pc);

/* One warp instruction `in` issued by warp w
 * with `exec` the lanes that executed it. For memory instructions
 * mem_mask is the set of lanes whose access was made, addr[lane] their
 * addresses (shared addresses as offsets), bytes the access size per lane
 * (vector width included) and shared whether they reached shared memory.
 * Call px_count_uses before the instruction runs (it closes a load group
 * the instruction waits on), px_count_insn after. */
void px_count_uses(px_count *pc, const px_insn *in, unsigned w);
void px_count_insn(px_count *pc, const px_insn *in, unsigned w, uint32_t exec,
                   uint32_t mem_mask, const uint64_t *addr, unsigned bytes, int shared);

/* cp.async's shared side: the destinations (offsets) of the lanes in
 * mask, `bytes` each, counted as one shared store request. */
void px_count_async_dst(px_count *pc, uint32_t mask, const uint64_t *addr, unsigned bytes);

/* Exposed for the unit tests of the bank rule: the wavefronts one shared
 * request takes (*ideal receives the conflict-free count). */
unsigned px_shared_wavefronts(const uint64_t *addr, uint32_t mask, unsigned bytes,
                              unsigned *ideal);

#endif
