/* tools/threads/pool.c — the persistent thread pool behind eo_par (see pool.h).
 *
 * How a run() hands out work. The range [0, n) is cut into t chunks,
 * chunk i = [n*i/t, n*(i+1)/t), always the same cut, and chunk i is always
 * run with worker index i: that is what keeps kernel results independent
 * of timing. Which *thread* runs a chunk, though, is decided by claiming:
 * the caller takes chunk 0, then everyone takes the next unclaimed chunk
 * from a shared counter until none are left. Normally each worker claims
 * one chunk and the split is the plain static one; but when the machine
 * is busy and a worker has not been scheduled yet, the caller simply
 * claims that worker's chunk too, instead of waiting a whole time slice
 * for it.
 *
 * Waking: the job (body, arg, n) is written into the pool, then a
 * generation counter is bumped. Workers watch it, first by spinning a
 * short while (a kernel usually follows another within microseconds, and
 * a spinning worker starts at once), then by sleeping on a condition
 * variable, so an idle pool costs no CPU. The caller, once no chunk is
 * left to claim, waits the same way for the chunks others are running. */
#include "tools/threads/pool.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

/* How long a waiting thread spins before it sleeps: 2 ms, measured on
 * the clock (a pause instruction takes from a few to 140 cycles across
 * CPUs, so a count would mean 4 us on one and 200 us on another).
 *
 * Why this long. Waking a sleeping thread is a condition-variable signal
 * and, on a virtual machine whose idle vCPU the host has descheduled, a
 * wait for the host to run that vCPU again: on the 2-core development VM
 * that took longer than a 2 ms kernel, so the caller claimed the
 * sleeper's chunk and ran the whole kernel alone. With 135 us of spin
 * (the earlier 4096 pauses), every gap of more than that between a
 * step's kernels (small serial ops, the optimizer's bookkeeping) put the
 * worker to sleep, and GPT's matmuls ran 1.4x faster on two threads
 * than on one; with 2 ms, 1.7x. OpenMP runtimes and OpenBLAS spin
 * longer still (KMP_BLOCKTIME is 200 ms; OpenBLAS about 0.1 s). An idle
 * pool still costs nothing after 2 ms. */
#define EO_POOL_SPIN_NS 2000000L

struct eo_pool {
    int nthreads;             /* workers in all, the caller included */
    pthread_t *threads;       /* nthreads - 1 started threads */
    int started;              /* how many of them were started (for cleanup) */

    pthread_mutex_t run_lock; /* serialises concurrent run() callers */
    pthread_mutex_t lock;     /* guards the sleeps on the two conditions */
    pthread_cond_t work;      /* signalled when `gen` moves */
    pthread_cond_t done;      /* signalled when `pending` reaches 0 */

    /* The current job. Written by run() before `claim` and `gen` are
     * published, read by a thread only after it has claimed a chunk of
     * this job; never rewritten while a chunk of it is still running. */
    eo_par_body body;
    void *arg;
    int64_t n;

    atomic_uint gen;          /* bumped once per job (and once to stop) */
    /* (generation << 32) | next chunk to hand out. Tagging the counter
     * with the generation lets a worker that wakes late tell a stale job
     * from the current one in the same atomic step that claims a chunk. */
    atomic_uint_fast64_t claim;
    atomic_int pending;       /* chunks of the current job not finished */
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

static int64_t now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

/* Spin until done(p, x) or EO_POOL_SPIN_NS have passed; 1 if done. The
 * clock is read once per 64 pauses. */
static int spin_until(int (*done)(eo_pool *, unsigned), eo_pool *p, unsigned x)
{
    const int64_t end = now_ns() + EO_POOL_SPIN_NS;
    for (;;) {
        for (int i = 0; i < 64; i++) {
            if (done(p, x))
                return 1;
            cpu_relax();
        }
        if (now_ns() > end)
            return done(p, x);
    }
}

static int gen_moved(eo_pool *p, unsigned seen)
{
    return atomic_load_explicit(&p->gen, memory_order_acquire) != seen;
}

static int all_done(eo_pool *p, unsigned unused)
{
    (void)unused;
    return atomic_load_explicit(&p->pending, memory_order_acquire) == 0;
}

static unsigned wait_for_job(eo_pool *p, unsigned seen)
{
    unsigned g;
    if (spin_until(gen_moved, p, seen))
        return atomic_load_explicit(&p->gen, memory_order_acquire);
    pthread_mutex_lock(&p->lock);
    while ((g = atomic_load_explicit(&p->gen, memory_order_acquire)) == seen)
        pthread_cond_wait(&p->work, &p->lock);
    pthread_mutex_unlock(&p->lock);
    return g;
}

/* The next unclaimed chunk of job `g`, or -1 when there is none (all
 * handed out, or `g` is no longer the current job). */
static int claim_chunk(eo_pool *p, unsigned g)
{
    uint_fast64_t cur = atomic_load_explicit(&p->claim, memory_order_acquire);
    for (;;) {
        if ((unsigned)(cur >> 32) != g || (int)(cur & 0xffffffffu) >= p->nthreads)
            return -1;
        if (atomic_compare_exchange_weak_explicit(&p->claim, &cur, cur + 1,
                                                  memory_order_acq_rel, memory_order_acquire))
            return (int)(cur & 0xffffffffu);
    }
}

/* Run chunk c of the current job as worker c, then count it done. */
static void run_chunk(eo_pool *p, int c)
{
    const int t = p->nthreads;
    int64_t n = p->n, begin = n * c / t, end = n * (c + 1) / t;
    const eo_pool *saved_pool = tl_pool;
    int saved_worker = tl_worker;
    tl_pool = p;
    tl_worker = c;
    if (begin < end)
        p->body(p->arg, begin, end, c);
    tl_pool = saved_pool;
    tl_worker = saved_worker;
    if (atomic_fetch_sub_explicit(&p->pending, 1, memory_order_acq_rel) == 1) {
        /* Under the lock, so the caller cannot check `pending` and then
         * miss this signal before it starts waiting. */
        pthread_mutex_lock(&p->lock);
        pthread_cond_signal(&p->done);
        pthread_mutex_unlock(&p->lock);
    }
}

static void *worker_main(void *v)
{
    eo_pool *p = v;
    unsigned seen = 0; /* generation 0 means "no job yet" */
    for (;;) {
        seen = wait_for_job(p, seen);
        if (atomic_load_explicit(&p->stop, memory_order_acquire))
            break;
        int c;
        while ((c = claim_chunk(p, seen)) >= 0)
            run_chunk(p, c);
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
    unsigned g = atomic_load_explicit(&p->gen, memory_order_relaxed) + 1;
    atomic_store_explicit(&p->pending, t, memory_order_relaxed);
    /* Chunk 0 is the caller's: hand out from 1. */
    atomic_store_explicit(&p->claim, ((uint_fast64_t)g << 32) | 1u, memory_order_release);
    pthread_mutex_lock(&p->lock);
    atomic_store_explicit(&p->gen, g, memory_order_release);
    pthread_cond_broadcast(&p->work);
    pthread_mutex_unlock(&p->lock);

    run_chunk(p, 0);
    int c;
    while ((c = claim_chunk(p, g)) >= 0) /* chunks no worker has taken yet */
        run_chunk(p, c);

    if (!spin_until(all_done, p, 0)) {
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
    atomic_init(&p->claim, 0u);
    atomic_init(&p->pending, 0);
    atomic_init(&p->stop, 0);
    for (int i = 1; i < nthreads; i++) {
        if (pthread_create(&p->threads[p->started], NULL, worker_main, p) != 0) {
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
