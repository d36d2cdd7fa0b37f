/* tools/dist/dist.h — the world a data-parallel training run lives in:
 * one process, or one rank of an MPI job.
 *
 * How eo-train uses it (tools/train/trainer.c, textlm.c):
 *   - every rank builds the same model from the same seed and draws the
 *     same shuffled global batch; rank r trains on its contiguous slice
 *     eo_dist_slice(rows, size, r), weighting its loss by its share of
 *     the batch (slice rows / batch rows), so the sum over ranks of the
 *     gradients is the gradient of the global batch's mean loss;
 *   - the gradients are summed through the context's hook
 *     (eo_dist_grad_sync: MPI for CPU tensors; tools/dist/nccl.h for CUDA
 *     tensors), the same optimizer step then runs on every rank and the
 *     replicas stay identical;
 *   - evaluation batches are dealt round-robin to the ranks and the
 *     counts summed (eo_dist_sum); rank 0 alone prints and writes files.
 *
 * The sum is taken in rank order, ((g0 + g1) + g2) + ..., for every
 * element, and the result is the same bit for bit on every rank, so N
 * ranks train exactly as one process that runs the N slices one after
 * the other and adds their gradients in that order (eo-train
 * --micro-batches N; tests/test_dist.c checks it). How: each rank owns
 * 1/N of the flattened gradient, receives every rank's copy of that part
 * (MPI_Alltoallv), adds them in rank order, and the sums are gathered
 * back (MPI_Allgatherv): the traffic of a ring all-reduce,
 * 2 (N-1)/N x bytes per rank. EO_DIST_REDUCE=mpi selects MPI_Allreduce
 * instead (its order is Open MPI's choice; for 2 ranks the same result,
 * since a + b = b + a). */
#ifndef EO_TOOLS_DIST_H
#define EO_TOOLS_DIST_H

#include <stddef.h>
#include "core/everyo.h"
#include "core/nn.h"
#include "tools/dist/mpi.h"

typedef enum eo_dist_kind { EO_DIST_NONE, EO_DIST_MPI } eo_dist_kind;

typedef struct eo_dist {
    eo_dist_kind kind;
    int rank, size;     /* 0 and 1 for one process */
    int local_rank;     /* rank among the processes on this machine (picks the GPU) */
    int ordered;        /* 1: rank-order sum (default); 0: MPI_Allreduce */
    eo_mpi mpi;
    float *flat, *recv; /* the CPU hook's buffers, grown on demand */
    size_t cap;
    int *counts;        /* 4 x size ints: the collectives' counts and offsets */
    /* The gradient hook's wall time, for the step breakdown: waiting at a
     * barrier for the slowest rank, then packing, summing and unpacking. */
    double hook_wait_seconds, hook_seconds;
    long hook_calls;
} eo_dist;

/* Join the world. mode "none": one process; "mpi": MPI_Init through the
 * loaded Open MPI (EO_ERR_NO_DEVICE, with the reason, if there is none);
 * "auto" (or NULL): "mpi" when started by mpirun (eo_mpi_launched()),
 * else "none". EO_ERR_ARG for another mode. */
eo_status eo_dist_init(eo_dist *d, const char *mode, char *err, size_t errlen);
/* MPI_Finalize (after a barrier) and free the buffers. */
void eo_dist_finalize(eo_dist *d);
/* Stop every rank of the job (MPI_Abort): after a failure on one rank,
 * the others would wait forever in the next collective. One process:
 * returns. */
void eo_dist_abort(eo_dist *d, int code);

static inline int eo_dist_root(const eo_dist *d) { return !d || d->rank == 0; }

/* Rows [*begin, *begin + *count) of a batch of `rows`, part k of `parts`:
 * contiguous, sizes differing by at most one. */
static inline void eo_dist_slice(size_t rows, size_t parts, size_t k, size_t *begin,
                                 size_t *count)
{
    *begin = rows * k / parts;
    *count = rows * (k + 1) / parts - *begin;
}

/* The hook for CPU gradients (a zeroed hook for one process). Buffers on
 * another device give EO_ERR_DEVICE: CUDA tensors use tools/dist/nccl.h. */
eo_grad_sync eo_dist_grad_sync(eo_dist *d);

/* ---- ZeRO-1: optimizer state sharded across ranks -----------------------
 * (eo-train --zero 1, CPU tensors.) The parameters flattened in list
 * order are cut into one contiguous shard per rank (eo_dist_shard, the
 * split of eo_dist_slice); each rank keeps AdamW's m and v for its shard
 * only (eo_adamw_init_shard, core/nn.h). A step: the backward; the hook
 * eo_dist_grad_sync_zero sums only the rank's shard of the gradients
 * (reduce-scatter: MPI_Alltoallv, then the same rank-order addition as
 * eo_dist_sum_f32, so those elements get exactly the full all-reduce's
 * values); the optimizer updates the shard; eo_dist_gather_params sends
 * every rank's updated shard to all (MPI_Allgatherv). The traffic is the
 * all-reduce's, 2 (N-1)/N x bytes, the weights now carrying the second
 * half; the result is bit-identical to plain data parallelism. Always
 * the rank-order sum (EO_DIST_REDUCE is ignored). */
/* Elements [*begin, *begin + *count) of `total`: this rank's shard. */
void eo_dist_shard(const eo_dist *d, size_t total, size_t *begin, size_t *count);
/* The reduce-scatter hook (a zeroed hook for one process). */
eo_grad_sync eo_dist_grad_sync_zero(eo_dist *d);
/* Every rank's shard of the parameters' values to every rank, in place
 * (CPU f32 tensors; EO_ERR_DEVICE otherwise). One process: nothing. */
eo_status eo_dist_gather_params(eo_dist *d, const eo_params *ps, char *err, size_t errlen);

/* x[0..n) summed over the ranks, in place, in rank order (see above);
 * the same bits on every rank. EO_ERR_IO with MPI's message on failure,
 * EO_ERR_OOM. */
eo_status eo_dist_sum_f32(eo_dist *d, float *x, size_t n, char *err, size_t errlen);
/* The same for a few doubles (losses, counts): every rank's values are
 * gathered and added in rank order. n <= 64. */
eo_status eo_dist_sum(eo_dist *d, double *v, int n, char *err, size_t errlen);
/* Rank `root`'s bytes to every rank. */
eo_status eo_dist_bcast(eo_dist *d, void *buf, size_t bytes, int root, char *err, size_t errlen);

#endif
