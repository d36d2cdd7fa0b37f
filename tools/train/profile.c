/* tools/train/profile.c — the per-op profile of eo-train --profile.
 *
 * The library calls the hook at the beginning and end of every public call
 * (forward, at every depth: gpt_forward contains block_forward contains
 * matmul) and around every backward rule. Each end charges the elapsed
 * time minus what the calls nested inside took ("self" time, as in
 * PyTorch's profiler table), so the rows add up to the time spent in the
 * library, and the rest of the step is the program's own work (copying a
 * batch in, reading the loss). */
#include "tools/train/profile.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* CPU time of every thread of the process: divided by the wall time of
 * an op, it says how many threads were busy in it, which a loaded
 * machine's wall times alone cannot (a serial op shows about 1.0 at any
 * thread count; the pool's workers spin ~0.1 ms after each op, so short
 * ops read a little high). */
static double cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void eo_prof_init(eo_prof *p) { memset(p, 0, sizeof *p); }

/* Names are static strings from the library: compare them by content,
 * since two public calls may spell the same op from different places. */
static int kind_of(eo_prof *p, const char *name, eo_profile_dir dir)
{
    for (int i = 0; i < p->nkinds; i++)
        if (p->kind[i].dir == dir && !strcmp(p->kind[i].name, name))
            return i;
    if (p->nkinds == EO_PROF_KINDS)
        return EO_PROF_KINDS - 1; /* full: the last row takes the rest */
    p->kind[p->nkinds].name = name;
    p->kind[p->nkinds].dir = dir;
    return p->nkinds++;
}

static void on_event(void *user, const char *name, eo_profile_dir dir, int end, int depth)
{
    eo_prof *p = user;
    (void)depth; /* the stack below tracks nesting itself */
    double t = now_s(), c = cpu_s();
    if (!end) {
        if (p->depth < EO_PROF_DEPTH) {
            p->stack[p->depth].kind = p->on ? kind_of(p, name, dir) : -1;
            p->stack[p->depth].t0 = t;
            p->stack[p->depth].nested = 0;
            p->stack[p->depth].c0 = c;
            p->stack[p->depth].nested_cpu = 0;
        }
        p->depth++;
        return;
    }
    if (--p->depth >= EO_PROF_DEPTH || p->depth < 0)
        return;
    double took = t - p->stack[p->depth].t0, used = c - p->stack[p->depth].c0;
    int k = p->stack[p->depth].kind;
    if (k >= 0) {
        p->kind[k].self_s += took - p->stack[p->depth].nested;
        p->kind[k].self_cpu += used - p->stack[p->depth].nested_cpu;
        p->kind[k].calls++;
    }
    if (p->depth > 0 && p->depth - 1 < EO_PROF_DEPTH) {
        p->stack[p->depth - 1].nested += took;
        p->stack[p->depth - 1].nested_cpu += used;
    }
}

eo_profile_hook eo_prof_hook(eo_prof *p)
{
    eo_profile_hook h = {on_event, p};
    return h;
}

void eo_prof_begin(eo_prof *p)
{
    p->on = 1;
    p->t_step = now_s();
}

void eo_prof_end(eo_prof *p)
{
    p->step_s += now_s() - p->t_step;
    p->steps++;
    p->on = 0;
}

static int by_time(const void *a, const void *b)
{
    const eo_prof_kind *x = a, *y = b;
    return (x->self_s < y->self_s) - (x->self_s > y->self_s);
}

void eo_prof_print(const eo_prof *p, FILE *out, int threads)
{
    if (!p->steps)
        return;
    eo_prof_kind sorted[EO_PROF_KINDS];
    memcpy(sorted, p->kind, sizeof sorted);
    qsort(sorted, (size_t)p->nkinds, sizeof sorted[0], by_time);
    double per = 1e3 / (double)p->steps, step_ms = p->step_s * per, lib = 0, fwd = 0, bwd = 0;
    for (int i = 0; i < p->nkinds; i++) {
        lib += sorted[i].self_s;
        *(sorted[i].dir == EO_PROFILE_FORWARD ? &fwd : &bwd) += sorted[i].self_s;
    }
    fprintf(out, "\nprofile: %ld steps after the first, %d thread%s, %.2f ms per step; self "
                 "time per op kind (nested calls counted where they run; pass \"call\": a "
                 "public call's own work, a forward op or an optimizer step; \"backward\": "
                 "the op's backward rule)\n",
            p->steps, threads, threads == 1 ? "" : "s", step_ms);
    fprintf(out, "(cpu/wall: CPU time of all threads over wall time, the threads busy in it)\n");
    fprintf(out, "%-24s %-9s %10s %12s %8s %9s\n", "op", "pass", "calls/step", "ms/step", "% step",
            "cpu/wall");
    for (int i = 0; i < p->nkinds; i++) {
        const eo_prof_kind *k = &sorted[i];
        fprintf(out, "%-24s %-9s %10.1f %12.3f %7.1f%% %9.2f\n", k->name,
                k->dir == EO_PROFILE_FORWARD ? "call" : "backward",
                (double)k->calls / (double)p->steps, k->self_s * per,
                100.0 * k->self_s / p->step_s, k->self_s > 0 ? k->self_cpu / k->self_s : 0);
    }
    fprintf(out, "%-24s %-9s %10s %12.3f %7.1f%%\n", "(all calls)", "", "", fwd * per,
            100.0 * fwd / p->step_s);
    fprintf(out, "%-24s %-9s %10s %12.3f %7.1f%%\n", "(all backward rules)", "", "", bwd * per,
            100.0 * bwd / p->step_s);
    fprintf(out, "%-24s %-9s %10s %12.3f %7.1f%%\n", "(outside the library)", "", "",
            (p->step_s - lib) * per, 100.0 * (p->step_s - lib) / p->step_s);
}
