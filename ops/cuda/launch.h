/* ops/cuda/launch.h — what every CUDA launcher shares (private to ops/cuda/).
 *
 * A launcher (ops/cuda/<family>.c, named like the ptx/<family>.ptx it
 * launches) does three things: find its device in the execution handle,
 * check that the sizes fit the PTX's 32-bit indexing, and call
 * cuLaunchKernel with a `void *params[]` array in the order of
 * ops/cuda/kernels.def. The helpers below are those three steps; the
 * device state itself (open, memory, the first-error slot) is
 * ops/cuda/device.c. */
#ifndef EO_CUDA_LAUNCH_H
#define EO_CUDA_LAUNCH_H

#include "ops/cuda/device.h"
#include "ops/cuda/msg.h"

/* Scratch, one device allocation made at open:
 *   [0, 256)           one float: cross-entropy's backward scale; at 64,
 *                      the id-check flag slots (ops/cuda/check.c); at 128,
 *                      the u32 count of cross-entropy forward blocks done
 *                      (0 between launches: zeroed at open, reset by the
 *                      last block);
 *   [256, 8448)        up to 1024 double partial sums for eo_sumsq_part;
 *   [8448, 24832)      4096 u32 counters of finished blocks, one per column
 *                      strip, for the fused column sums of
 *                      eo_binary_bwd_colpart, eo_layernorm_bwd_wb_part and
 *                      eo_binary16_bwd_row_*, and (counter 0) the
 *                      one-pass layernorm backwards' count of groups done
 *                      (counters 1, 2, ...: of blocks done in each group),
 *                      or one per tile for eo_matmul_sk's split-K sums
 *                      (0 between launches: zeroed at open, each reset by
 *                      its strip's or tile's last block, so the kernels
 *                      share them);
 *   [24832, +4 MiB)    the work buffer for two-stage sums
 *                      (eo_layernorm_bwd_wb_part, eo_reduce_*part, the
 *                      split-K matmul's partial tiles, the partials of the
 *                      one-pass layernorm backwards and of
 *                      eo_binary16_bwd_row_*) and the
 *                      other launchers' temporaries (cross-entropy's row
 *                      losses, attention's row sums, embedding lists);
 *   [+4 MiB, +8 MiB)   the checked copy of token ids or class targets
 *                      (ops/cuda/check.c), apart from the work buffer: the
 *                      kernel that reads the copy may use the work buffer
 *                      for its own temporaries (cross-entropy's row losses
 *                      once overwrote the targets there). */
enum { EO_CU_BLOCK = 256, EO_CU_MAX_GRID = 65535, EO_CU_SCRATCH_CE = 0, EO_CU_SCRATCH_CHECK = 64,
       EO_CU_SCRATCH_CE_DONE = 128, EO_CU_CHECK_SLOTS = 2, EO_CU_CHECK_SLOT_BYTES = 16, EO_CU_SCRATCH_SUMSQ = 256,
       EO_CU_SUMSQ_PARTS = 1024, EO_CU_SCRATCH_COLDONE = EO_CU_SCRATCH_SUMSQ + EO_CU_SUMSQ_PARTS * 8,
       EO_CU_COLDONE_STRIPS = 4096,
       EO_CU_SCRATCH_WORK = EO_CU_SCRATCH_COLDONE + EO_CU_COLDONE_STRIPS * 4,
       EO_CU_WORK_BYTES = 4 << 20, EO_CU_SCRATCH_IDS = EO_CU_SCRATCH_WORK + EO_CU_WORK_BYTES,
       EO_CU_IDS_BYTES = 4 << 20, EO_CU_SCRATCH_BYTES = EO_CU_SCRATCH_IDS + EO_CU_IDS_BYTES };
/* The launch limits a caller can reach with ordinary sizes, which the
 * backend table hands to the core (core/backend.h, eo_backend.limits) so
 * an op refuses them at the call, not at the next sync: the fused
 * attention's head dim (the kernels keep a row of D floats per thread
 * group), its B*H (grid.y) and Tq (a row of the scratch work buffer per
 * query in the backward), and the 16-bit cross-entropy's rows (its row
 * losses wait in the work buffer). */
enum { EO_CU_ATTN_MAX_D = 128, EO_CU_ATTN_MAX_BH = EO_CU_MAX_GRID,
       EO_CU_ATTN_MAX_TQ = EO_CU_WORK_BYTES / 4, EO_CU_CE16_MAX_ROWS = EO_CU_WORK_BYTES / 4 };
#define BLOCK EO_CU_BLOCK
#define MAX_GRID EO_CU_MAX_GRID
#define WORK_BYTES EO_CU_WORK_BYTES
#define SCRATCH_CE EO_CU_SCRATCH_CE
#define SCRATCH_SUMSQ EO_CU_SCRATCH_SUMSQ
#define SUMSQ_PARTS EO_CU_SUMSQ_PARTS
#define SCRATCH_WORK EO_CU_SCRATCH_WORK
#define SCRATCH_CHECK EO_CU_SCRATCH_CHECK
#define SCRATCH_CE_DONE EO_CU_SCRATCH_CE_DONE
#define SCRATCH_COLDONE EO_CU_SCRATCH_COLDONE
#define COLDONE_STRIPS EO_CU_COLDONE_STRIPS
/* The fused layernorm backwards (eo_layernorm_bwd_fused and its 16-bit
 * twins) keep 8 values of a row per thread: rows of at most 2048 columns.
 * Each block owns rows_per_block consecutive rows and leaves 2 cols f32
 * partial sums in the work buffer (then 2 cols more per group of 16
 * blocks, the kernels' first level of sums). About 384 blocks (three per SM on the
 * largest GPUs, which the kernels' registers allow: 11 rows each at 4096
 * rows, so a block waits for 11 rows' loads in turn), fewer when the
 * partials would not fit. The count depends on the shape alone, so the
 * order of every sum, and the bits of dw and db, are the same on every
 * run and GPU. */
enum { EO_CU_FUSED_COLS = 2048 };
#define FUSED_COLS EO_CU_FUSED_COLS
static inline uint32_t fused_rows_per_block(int64_t rows, int64_t cols)
{
    /* the blocks' partials and, after them, one per group of 16 blocks */
    int64_t rpb = (rows + 383) / 384, fit = WORK_BYTES / (cols * 8) * 16 / 17;
    if ((rows + rpb - 1) / rpb > fit)
        rpb = (rows + fit - 1) / fit;
    return (uint32_t)rpb;
}

/* Ids checked on the device (ops/cuda/check.c): slot 0 embedding indices,
 * 1 cross-entropy targets. Returns the address the next kernel should
 * read the ids from. */
enum { EO_CU_CHECK_EMBEDDING = 0, EO_CU_CHECK_TARGET = 1 };
uint64_t eo_cuda_check_ids(eo_cuda *cu, int slot, const int32_t *ids, int64_t n, int64_t limit,
                           int has_ignore, int32_t ignore, int32_t rep);

/* The embedding backwards' pre-pass (ops/cuda/embedding16.c), shared by
 * the f32 and 16-bit backwards: for n checked ids (>= 0) at idx, writes
 * link[i] = the next position of idx[i]'s id (low 31 bits, 0x7fffffff:
 * none), top bit set when an earlier one exists, into the work buffer
 * (eo_embedding16_links over segments, then eo_embedding16_link_join) and
 * returns link's device address; 0 when the lists do not fit the work
 * buffer (past ~2^19 ids: the caller takes its per-column fallback). */
uint64_t eo_cuda_embedding_links(eo_cuda *cu, int64_t n, const int32_t *idx);

/* The device a launcher runs on: ex->cuda when it is open and no failure
 * is pending (a pending failure means this launch's inputs may be wrong,
 * so it is skipped and the first failure is what the core reports), with
 * its context made current on the calling thread (eo_cuda_enter; a
 * failure there is recorded and NULL returned). NULL when there is
 * nothing to launch on; a NULL handle or a handle without a device is a
 * caller error the core never makes. */
eo_cuda *eo_cuda_ready(const eo_exec *ex);

/* Launch kernel k on cu's stream; a driver failure, or a parameter count
 * that differs from kernels.def, is recorded in cu. */
void eo_cuda_launch(eo_cuda *cu, eo_cuda_kernel k, unsigned gx, unsigned gy, unsigned gz,
                    unsigned bx, unsigned by, void **params, size_t nparams);
#define LAUNCH(cu, k, gx, gy, gz, bx, by, ...)                                  \
    do {                                                                        \
        void *launch_params_[] = {__VA_ARGS__};                                 \
        eo_cuda_launch(cu, k, gx, gy, gz, bx, by, launch_params_,               \
                       sizeof launch_params_ / sizeof launch_params_[0]);       \
    } while (0)

/* Record a failure: the first one since the last eo_cuda_take_error is
 * kept, later ones are usually its consequences. fail_begin returns a
 * writer into cu->msg (or one that discards). */
eo_cuda_msg eo_cuda_fail_begin(eo_cuda *cu, eo_status s);
eo_status eo_cuda_fail_text(eo_cuda *cu, eo_status s, const char *a, const char *b,
                            const char *c);

/* A device address as the kernels receive it (.u64). */
static inline uint64_t eo_cuda_dp(const void *p) { return (uint64_t)(uintptr_t)p; }

/* Blocks for a grid-stride kernel over `work` items. */
static inline unsigned eo_cuda_grid(int64_t work)
{
    int64_t g = (work + BLOCK - 1) / BLOCK;
    return g > MAX_GRID ? MAX_GRID : (unsigned)g;
}

/* Blocks for the contiguous fast path (a kernel that moves 4 elements a
 * thread per step with 128-bit accesses, then a scalar tail): at most 4
 * waves of resident 256-thread blocks (8 per SM), so at large sizes each
 * thread streams several chunks; the grid is then trimmed so that every
 * block makes the same number of rounds (no half-empty last round). Any
 * grid size is correct. */
static inline unsigned eo_cuda_grid_v4(const eo_cuda *cu, int64_t n)
{
    int64_t chunks = (n + 3) / 4, cap = (int64_t)(cu->sm_count > 0 ? cu->sm_count : 1) * 32;
    if (cap > MAX_GRID)
        cap = MAX_GRID;
    int64_t rounds = (chunks + cap * BLOCK - 1) / (cap * BLOCK);
    if (rounds < 1)
        rounds = 1;
    int64_t g = (chunks + rounds * BLOCK - 1) / (rounds * BLOCK);
    return g < 1 ? 1 : (unsigned)g;
}

/* Sizes the PTX indexes with 32-bit integers must lie in [0, 2^31);
 * otherwise a failure naming `who` is recorded and 0 returned. */
int eo_cuda_fits(eo_cuda *cu, const char *who, int64_t v);

/* ---- 4-D strided operands ---- */
typedef struct shape4 {
    uint32_t n[4];
    int64_t total;
} shape4;
typedef struct strides4 {
    int32_t s[4];
} strides4;
/* The shape as u32, its product checked to fit. */
int eo_cuda_shape4(eo_cuda *cu, const char *who, const int64_t shape[4], shape4 *out);
/* Strides as s32, checking every reachable offset fits (s == NULL: zeros). */
int eo_cuda_strides4(eo_cuda *cu, const char *who, const int64_t shape[4], const int64_t *s,
                     strides4 *out);
/* Row-major contiguous over `shape` (size-1 axes may have any stride)? */
int eo_cuda_contiguous(const int64_t shape[4], const int64_t s[4]);

#define N4(sh) &(sh).n[0], &(sh).n[1], &(sh).n[2], &(sh).n[3]
#define S4(st) &(st).s[0], &(st).s[1], &(st).s[2], &(st).s[3]

#endif
