/* ops/parallel.h — how a kernel splits work across threads without
 * knowing what a thread is.
 *
 * The library is freestanding: it has no pthreads. A host program that
 * wants threads installs a `run` function (tools/ ships one built on a
 * persistent pthread pool). A kernel describes its work as a range
 * [0, n) and a body; eo_par_for() hands the range to `run`, or, with no
 * hook, calls the body once on the whole range. Kernels split ranges
 * statically and never reduce across workers in a racy order, so the same
 * thread count always gives bit-identical results. */
#ifndef EO_PARALLEL_H
#define EO_PARALLEL_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Process items [begin, end). `worker` is in [0, nthreads) and is unique
 * among concurrent calls, so a body may use a per-worker scratch slice. */
typedef void (*eo_par_body)(void *arg, int64_t begin, int64_t end, int worker);

typedef struct eo_par {
    /* Split [0, n) into at most `nthreads` contiguous chunks, call
     * body(arg, begin, end, worker) for each (concurrently), and return
     * when all are done. Chunk i must be [n*i/t, n*(i+1)/t) so results do
     * not depend on timing. NULL: everything runs on the caller. */
    void (*run)(void *user, eo_par_body body, void *arg, int64_t n);
    void *user;
    int nthreads; /* >= 1 */
} eo_par;

/* Run body over [0, n): through par->run if installed and worthwhile
 * (n >= 2 and nthreads > 1), else directly with worker 0. */
static inline void eo_par_for(const eo_par *par, int64_t n, eo_par_body body, void *arg)
{
    if (n <= 0)
        return;
    if (par && par->run && par->nthreads > 1 && n > 1)
        par->run(par->user, body, arg, n);
    else
        body(arg, 0, n, 0);
}

/* Threads a kernel may use (1 when no hook is installed). */
static inline int eo_par_threads(const eo_par *par)
{
    return (par && par->run && par->nthreads > 1) ? par->nthreads : 1;
}

#ifdef __cplusplus
}
#endif

#endif
