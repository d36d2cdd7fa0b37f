/* tests/test_pool.c — the thread pool behind eo_par: the exact static
 * split parallel.h promises (that is what makes kernel results
 * independent of timing), real concurrency, thousands of back-to-back
 * jobs (the spin/sleep hand-off must never lose a wake-up), nested runs
 * that stay inline, and the NULL / one-thread edge cases. */
#include <check.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include "tools/threads/pool.h"

#define MAXN 1000

typedef struct record {
    int owner[MAXN];    /* worker that processed each index, -1 if none */
    atomic_int calls;   /* body invocations */
    atomic_int hits[MAXN];
} record;

static void record_body(void *arg, int64_t begin, int64_t end, int worker)
{
    record *r = arg;
    atomic_fetch_add(&r->calls, 1);
    for (int64_t i = begin; i < end; i++) {
        r->owner[i] = worker;
        atomic_fetch_add(&r->hits[i], 1);
    }
}

START_TEST(static_split_covers_range_once)
{
    static record r;
    const int64_t ns[] = {1, 2, 3, 5, 7, 100, MAXN};
    for (int t = 1; t <= 4; t++) {
        eo_pool *pool = eo_pool_create(t);
        ck_assert_ptr_nonnull(pool);
        ck_assert_int_eq(eo_pool_threads(pool), t);
        eo_par par = eo_pool_par(pool);
        ck_assert_int_eq(par.nthreads, t);
        for (size_t k = 0; k < sizeof ns / sizeof ns[0]; k++) {
            int64_t n = ns[k];
            memset(&r, 0, sizeof r);
            par.run(par.user, record_body, &r, n);
            int nonempty = 0;
            for (int w = 0; w < t; w++)
                nonempty += n * (w + 1) / t > n * w / t;
            ck_assert_int_eq(atomic_load(&r.calls), nonempty); /* empty chunks not called */
            for (int64_t i = 0; i < n; i++) {
                ck_assert_int_eq(atomic_load(&r.hits[i]), 1);
                int w = r.owner[i];
                ck_assert(n * w / t <= i && i < n * (w + 1) / t);
            }
        }
        eo_pool_destroy(pool);
    }
}
END_TEST

/* Both workers must be inside the body at the same time: each arrives,
 * then waits (bounded) for the other. A pool that ran chunks one after
 * another would time out here. */
typedef struct meet {
    atomic_int arrived;
    atomic_int met;
} meet;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void meet_body(void *arg, int64_t begin, int64_t end, int worker)
{
    (void)begin, (void)end, (void)worker;
    meet *m = arg;
    atomic_fetch_add(&m->arrived, 1);
    double t0 = now_s();
    while (atomic_load(&m->arrived) < 2 && now_s() - t0 < 2.0)
        ;
    if (atomic_load(&m->arrived) == 2)
        atomic_fetch_add(&m->met, 1);
}

START_TEST(chunks_run_concurrently)
{
    eo_pool *pool = eo_pool_create(2);
    ck_assert_ptr_nonnull(pool);
    eo_par par = eo_pool_par(pool);
    meet m;
    atomic_init(&m.arrived, 0);
    atomic_init(&m.met, 0);
    eo_par_for(&par, 2, meet_body, &m);
    ck_assert_int_eq(atomic_load(&m.met), 2);
    eo_pool_destroy(pool);
}
END_TEST

static void sum_body(void *arg, int64_t begin, int64_t end, int worker)
{
    (void)worker;
    int64_t s = 0;
    for (int64_t i = begin; i < end; i++)
        s += i;
    atomic_fetch_add((atomic_llong *)arg, (long long)s);
}

/* Tiny jobs back to back exercise the spin path; the sleep in between
 * every hundredth job sends the worker to its condition variable. */
START_TEST(many_jobs_no_lost_wakeup)
{
    /* More threads than this machine may have cores: chunks get claimed
     * by whichever thread is running. */
    eo_pool *pool = eo_pool_create(5);
    ck_assert_ptr_nonnull(pool);
    eo_par par = eo_pool_par(pool);
    atomic_llong total;
    atomic_init(&total, 0);
    long long want = 0;
    for (int j = 0; j < 5000; j++) {
        int64_t n = 1 + j % 17;
        eo_par_for(&par, n, sum_body, &total);
        want += n * (n - 1) / 2;
        if (j % 1000 == 999) {
            struct timespec ts = {0, 2000000}; /* 2 ms: longer than the spin */
            nanosleep(&ts, NULL);
        }
    }
    ck_assert_int_eq(atomic_load(&total), want);
    eo_pool_destroy(pool);
}
END_TEST

/* A body that calls run() again gets the inner range on its own thread,
 * under its own worker index (so per-worker scratch stays private). */
typedef struct nest {
    eo_par par;
    atomic_int bad;
    atomic_int inner_items;
} nest;

static nest *g_nest;

static void inner_body(void *arg, int64_t begin, int64_t end, int worker)
{
    int outer_worker = *(int *)arg;
    if (worker != outer_worker)
        atomic_fetch_add(&g_nest->bad, 1);
    atomic_fetch_add(&g_nest->inner_items, (int)(end - begin));
}

static void outer_body(void *arg, int64_t begin, int64_t end, int worker)
{
    nest *s = arg;
    for (int64_t i = begin; i < end; i++)
        s->par.run(s->par.user, inner_body, &worker, 10);
}

START_TEST(nested_run_stays_inline)
{
    eo_pool *pool = eo_pool_create(2);
    ck_assert_ptr_nonnull(pool);
    nest s;
    s.par = eo_pool_par(pool);
    atomic_init(&s.bad, 0);
    atomic_init(&s.inner_items, 0);
    g_nest = &s;
    eo_par_for(&s.par, 4, outer_body, &s);
    ck_assert_int_eq(atomic_load(&s.bad), 0);
    ck_assert_int_eq(atomic_load(&s.inner_items), 40);
    eo_pool_destroy(pool);
}
END_TEST

START_TEST(edge_cases)
{
    eo_pool_destroy(NULL);
    eo_par none = eo_pool_par(NULL);
    ck_assert(none.run == NULL);
    ck_assert_int_eq(eo_par_threads(&none), 1);

    eo_pool *pool = eo_pool_create(0); /* one per CPU */
    ck_assert_ptr_nonnull(pool);
    ck_assert_int_ge(eo_pool_threads(pool), 1);
    eo_par par = eo_pool_par(pool);
    atomic_llong total;
    atomic_init(&total, 0);
    par.run(par.user, sum_body, &total, 0); /* empty range: no call */
    ck_assert_int_eq(atomic_load(&total), 0);
    par.run(par.user, sum_body, &total, 1000);
    ck_assert_int_eq(atomic_load(&total), 999 * 1000 / 2);
    eo_pool_destroy(pool);
}
END_TEST

Suite *eo_suite_pool(void)
{
    Suite *s = suite_create("pool");
    TCase *tc = tcase_create("pool");
    tcase_set_timeout(tc, 20);
    tcase_add_test(tc, static_split_covers_range_once);
    tcase_add_test(tc, chunks_run_concurrently);
    tcase_add_test(tc, many_jobs_no_lost_wakeup);
    tcase_add_test(tc, nested_run_stays_inline);
    tcase_add_test(tc, edge_cases);
    suite_add_tcase(s, tc);
    return s;
}
