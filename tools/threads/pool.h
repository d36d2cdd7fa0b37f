/* tools/threads/pool.h — a persistent pthread pool that implements the eo_par
 * hook of ops/parallel.h.
 *
 * Why a pool and not a thread per call: a training step calls dozens of
 * kernels, many of them a few microseconds long. Creating threads costs
 * tens of microseconds each time; parked workers that wake on a signal
 * (after spinning 2 ms, so that the kernels of a step do not pay for the
 * wake-up: see pool.c) keep the hand-off cost to a few microseconds.
 *
 * The pool lives in tools/ because the library itself is freestanding:
 * it never sees a thread, only the eo_par hook this pool fills in. */
#ifndef EO_TOOLS_POOL_H
#define EO_TOOLS_POOL_H

#include "ops/parallel.h"

/* Installed as part of libeveryo-io (everyo-io.pc): C and C++ callers. */
#ifdef __cplusplus
extern "C" {
#endif

typedef struct eo_pool eo_pool;

/* A pool of `nthreads` workers in all, counting the thread that calls
 * run() (it does chunk 0 itself), so nthreads - 1 threads are created.
 * nthreads <= 0 means one per online CPU. Returns NULL if memory or a
 * thread cannot be had (whatever was started is cleaned up). */
eo_pool *eo_pool_create(int nthreads);

/* The hook to hand to kernels; valid until eo_pool_destroy. Chunks are
 * split exactly as parallel.h requires: chunk i = [n*i/t, n*(i+1)/t),
 * always passed worker index i; empty chunks are not called, and run()
 * returns when all are done. Which thread runs a chunk is not fixed: a
 * chunk whose worker has not woken yet (a busy machine) is taken by a
 * thread that is free, so one late thread does not stall the others.
 *
 * run() may be called from several threads: calls are serialised. A body
 * that itself calls run() (nested parallelism) gets its inner range run
 * inline on its own thread, with its own worker index, instead of a
 * deadlock. */
eo_par eo_pool_par(eo_pool *pool);

/* Number of workers (>= 1), the caller included. */
int eo_pool_threads(const eo_pool *pool);

/* Stop and join the workers and free the pool. NULL is a no-op. Must not
 * be called while a run() is in progress. */
void eo_pool_destroy(eo_pool *pool);

#ifdef __cplusplus
}
#endif

#endif
