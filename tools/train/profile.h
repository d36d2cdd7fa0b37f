/* tools/train/profile.h — eo-train --profile: where a training step's time
 * goes, per op kind, forward and backward, from the library's profiling
 * hook (eo_profile_hook in core/everyo.h) and this program's clock. */
#ifndef EO_TOOLS_PROFILE_H
#define EO_TOOLS_PROFILE_H

#include <stdio.h>
#include "core/everyo.h"

#define EO_PROF_KINDS 96
#define EO_PROF_DEPTH 64

typedef struct eo_prof_kind {
    const char *name;
    eo_profile_dir dir;
    double self_s;  /* time inside it, minus the calls nested in it */
    double self_cpu;/* the same in CPU time of the whole process (all threads) */
    long calls;
} eo_prof_kind;

typedef struct eo_prof {
    eo_prof_kind kind[EO_PROF_KINDS];
    int nkinds;
    struct { int kind; double t0, nested, c0, nested_cpu; } stack[EO_PROF_DEPTH];
    int depth;
    int on;          /* count only between eo_prof_begin and eo_prof_end */
    double step_s;   /* wall time of the counted steps */
    long steps;
    double t_step;
} eo_prof;

/* A zeroed profiler and the hook that feeds it (install with
 * eo_ctx_set_profile). */
void eo_prof_init(eo_prof *p);
eo_profile_hook eo_prof_hook(eo_prof *p);
/* Around one training step: only what runs in between is counted. */
void eo_prof_begin(eo_prof *p);
void eo_prof_end(eo_prof *p);
/* The table: one row per op kind and direction, by time. */
void eo_prof_print(const eo_prof *p, FILE *out, int threads);

#endif
