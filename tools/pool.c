/* tools/pool.c — the persistent thread pool behind eo_par (see pool.h).
 *
 * How a run() hands out work: the job (body, arg, n) is written into the
 * pool, then a generation counter is bumped. Workers watch that counter:
 * first by spinning for a short while (a kernel usually follows another
 * within microseconds, and a spinning worker starts at once), then by
 * sleeping on a condition variable, so an idle pool costs no CPU. Each
 * worker runs its own fixed chunk, then decrements a pending count; the
 * last one to finish wakes the caller, who meanwhile did chunk 0.
 *
 * The split is static (chunk i is always [n*i/t, n*(i+1)/t) on worker i),
 * which is what makes kernel results independent of timing. */
#include "tools/pool.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>

/* Spin iterations before a waiting thread goes to sleep. One iteration is
 * one pause instruction (tens of cycles), so this is on the order of
 * 100 microseconds: longer than the gap between consecutive kernels in a
 * training step, far shorter than anything a person would notice as a
 * busy core. */
#define EO_POOL_SPIN 4096

struct eo_pool {
    int nthreads;            /* workers in all, the caller included */
    pthread_t *threads;      /* nthreads - 1 started threads */
    int started;             /* how many of them were started (for cleanup) */

    pthread_mutex_t run_lock; /* serialises concurrent run() callers */
    pthread_mutex_t lock;     /* guards the sleeps on the two conditions */
    pthread_cond_t work;      /* signalled when `gen` moves */
    pthread_cond_t done;      /* signalled when `pending` reaches 0 */

    /* The current job. Written by run() before `gen` is bumped, read by
     * workers after they see the new `gen`; never written while a
     * worker may still read it (run() waits for pending == 0 first). */
    eo_par_body body;
    void *arg;
    int64_t n;

    atomic_uint gen;          /* bumped once per job (and once to stop) */
    atomic_int pending;       /* workers that have not finished this job */
    atomic_int stop;
};

/* Which pool's body this thread is running, and as which worker, so a
 * nested run() can run inline instead of waiting on itself. */
static _Thread_local const eo_pool *tl_pool;
static _Thread_local int tl_worker;

static void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

static unsigned wait_for_job(eo_pool *p, unsigned seen)
{
    unsigned g;
    for (int i = 0; i < EO_POOL_SPIN; i++) {
        g = atomic_load_explicit(&p->gen, memory_order_acquire);
        if (g != seen)
            return g;
        cpu_relax();
    }
    pthread_mutex_lock(&p->lock);
    while ((g = atomic_load_explicit(&p->gen, memory_order_acquire)) == seen)
        pthread_cond_wait(&p->work, &p->lock);
    pthread_mutex_unlock(&p->lock);
    return g;
}

typedef struct worker_start {
    eo_pool *pool;
    int id;
} worker_start;

static void *worker_main(void *v)
{
    worker_start ws = *(worker_start *)v;
    free(v);
    eo_pool *p = ws.pool;
    const int id = ws.id, t = p->nthreads;
    tl_pool = p;
    tl_worker = id;
    /* Generation 0 means "no job yet". A worker that starts late still
     * sees job 1 (gen is then 1, not 0), and job 2 cannot be published
     * before this worker has finished job 1. */
    unsigned seen = 0;
    for (;;) {
        seen = wait_for_job(p, seen);
        if (atomic_load_explicit(&p->stop, memory_order_acquire))
            break;
        int64_t n = p->n;
        int64_t begin = n * id / t, end = n * (id + 1) / t;
        if (begin < end)
            p->body(p->arg, begin, end, id);
        if (atomic_fetch_sub_explicit(&p->pending, 1, memory_order_acq_rel) == 1) {
            /* Under the lock, so the caller cannot check `pending` and
             * then miss this signal before it starts waiting. */
            pthread_mutex_lock(&p->lock);
            pthread_cond_signal(&p->done);
            pthread_mutex_unlock(&p->lock);
        }
    }
    return NULL;
}

static void pool_run(void *user, eo_par_body body, void *arg, int64_t n)
{
    eo_pool *p = user;
    const int t = p->nthreads;
    if (n <= 0)
        return;
    if (tl_pool == p) { /* nested: this thread already holds a worker slot */
        body(arg, 0, n, tl_worker);
        return;
    }
    if (t == 1) {
        body(arg, 0, n, 0);
        return;
    }
    pthread_mutex_lock(&p->run_lock);
    p->body = body;
    p->arg = arg;
    p->n = n;
    atomic_store_explicit(&p->pending, t - 1, memory_order_relaxed);
    pthread_mutex_lock(&p->lock);
    atomic_fetch_add_explicit(&p->gen, 1, memory_order_release);
    pthread_cond_broadcast(&p->work);
    pthread_mutex_unlock(&p->lock);

    /* Chunk 0 on this thread, marked as worker 0 of this pool so a
     * nested run() from the body stays inline. */
    const eo_pool *saved_pool = tl_pool;
    int saved_worker = tl_worker;
    tl_pool = p;
    tl_worker = 0;
    int64_t end0 = n / t;
    if (end0 > 0)
        body(arg, 0, end0, 0);
    tl_pool = saved_pool;
    tl_worker = saved_worker;

    int spun = 0;
    while (atomic_load_explicit(&p->pending, memory_order_acquire) != 0 &&
           spun++ < EO_POOL_SPIN)
        cpu_relax();
    if (atomic_load_explicit(&p->pending, memory_order_acquire) != 0) {
        pthread_mutex_lock(&p->lock);
        while (atomic_load_explicit(&p->pending, memory_order_acquire) != 0)
            pthread_cond_wait(&p->done, &p->lock);
        pthread_mutex_unlock(&p->lock);
    }
    pthread_mutex_unlock(&p->run_lock);
}

static void stop_workers(eo_pool *p)
{
    pthread_mutex_lock(&p->lock);
    atomic_store_explicit(&p->stop, 1, memory_order_release);
    atomic_fetch_add_explicit(&p->gen, 1, memory_order_release);
    pthread_cond_broadcast(&p->work);
    pthread_mutex_unlock(&p->lock);
    for (int i = 0; i < p->started; i++)
        pthread_join(p->threads[i], NULL);
}

eo_pool *eo_pool_create(int nthreads)
{
    if (nthreads <= 0) {
        long c = sysconf(_SC_NPROCESSORS_ONLN);
        nthreads = c > 0 ? (int)c : 1;
    }
    eo_pool *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    p->nthreads = nthreads;
    p->threads = calloc((size_t)nthreads, sizeof *p->threads);
    if (!p->threads) {
        free(p);
        return NULL;
    }
    pthread_mutex_init(&p->run_lock, NULL);
    pthread_mutex_init(&p->lock, NULL);
    pthread_cond_init(&p->work, NULL);
    pthread_cond_init(&p->done, NULL);
    atomic_init(&p->gen, 0u);
    atomic_init(&p->pending, 0);
    atomic_init(&p->stop, 0);
    for (int i = 1; i < nthreads; i++) {
        worker_start *ws = malloc(sizeof *ws);
        if (ws) {
            ws->pool = p;
            ws->id = i;
        }
        if (!ws || pthread_create(&p->threads[p->started], NULL, worker_main, ws) != 0) {
            free(ws);
            eo_pool_destroy(p);
            return NULL;
        }
        p->started++;
    }
    return p;
}

eo_par eo_pool_par(eo_pool *pool)
{
    eo_par par = {pool_run, pool, pool ? pool->nthreads : 1};
    if (!pool)
        par.run = NULL;
    return par;
}

int eo_pool_threads(const eo_pool *pool)
{
    return pool ? pool->nthreads : 1;
}

void eo_pool_destroy(eo_pool *pool)
{
    if (!pool)
        return;
    stop_workers(pool);
    pthread_cond_destroy(&pool->done);
    pthread_cond_destroy(&pool->work);
    pthread_mutex_destroy(&pool->lock);
    pthread_mutex_destroy(&pool->run_lock);
    free(pool->threads);
    free(pool);
}
