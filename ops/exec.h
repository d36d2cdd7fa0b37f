/* ops/exec.h — the execution handle every kernel receives last.
 *
 * A kernel needs to know *where* it runs, not just *what* to compute:
 * the CPU kernels need the thread hook (ops/parallel.h), the CUDA
 * launchers need their device (driver table, loaded modules, stream,
 * first-error slot). Both travel in one small struct that the core owns
 * inside each context and passes to every kernel call, so no kernel ever
 * looks anything up in a global: two contexts on two devices in one
 * process, or on two host threads, never see each other.
 *
 * A CPU kernel reads only `par` and accepts a NULL handle (one thread);
 * a CUDA launcher reads only `cuda`. */
#ifndef EO_EXEC_H
#define EO_EXEC_H

#include "ops/parallel.h"

#ifdef __cplusplus
extern "C" {
#endif

struct eo_cuda; /* ops/cuda/device.h */

typedef struct eo_exec {
    eo_par par;            /* CPU thread hook; run == NULL: one thread */
    struct eo_cuda *cuda;  /* the CUDA device state; NULL when none is attached */
} eo_exec;

/* The thread hook of a handle (NULL handle: NULL, i.e. one thread). */
static inline const eo_par *eo_exec_par(const eo_exec *ex) { return ex ? &ex->par : (const eo_par *)0; }

#ifdef __cplusplus
}
#endif

#endif
