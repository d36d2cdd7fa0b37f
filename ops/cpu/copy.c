/* ops/cpu/copy.c — strided copy, strided accumulate, fill.
 *
 * These are the kernels behind views made real (permute then contiguous),
 * broadcast gradients reduced back to their input's shape, and zeroing.
 * All three are memory-bound, so the only work worth doing is making the
 * innermost loop long and unit-stride: axes are merged first (strided.h),
 * then the inner loop picks a fast path when its strides allow one. Large
 * walks are cut among threads where the destination moves (strided.h). */
#include <string.h>
#include "ops/kernels.h"
#include "ops/cpu/grain.h"
#include "ops/cpu/strided.h"

/* The merged walk of a copy or an accumulate and how it is cut among
 * threads (strided.h: only along axes where the destination moves, so a
 * broadcast gradient summed into one element keeps its serial order). */
typedef struct walk2 {
    int64_t sh[4];
    int64_t st[2][4];
    eo_strided_cut cut;
    void *dst;
    const void *src;
} walk2;

static void copy_body(void *arg, int64_t begin, int64_t end, int worker)
{
    const walk2 *w = arg;
    int64_t r0, r1, j0, j1;
    (void)worker;
    eo_strided_items(w->sh, w->cut, begin, end, &r0, &r1, &j0, &j1);
    const int64_t n = j1 - j0, dj = w->st[0][3], sj = w->st[1][3];
    eo_strided_row p;
    eo_strided_row_start(w->sh, 2, w->st, r0, j0, &p);
    for (int64_t r = r0; r < r1; r++, eo_strided_row_next(w->sh, 2, w->st, &p)) {
        uint32_t *dr = (uint32_t *)w->dst + p.off[0];
        const uint32_t *sr = (const uint32_t *)w->src + p.off[1];
        if (dj == 1 && sj == 1)
            memcpy(dr, sr, (size_t)n * sizeof *dr);
        else
            for (int64_t j = 0; j < n; j++)
                dr[j * dj] = sr[j * sj];
    }
}

void eo_k_copy32(const int64_t shape[4], void *dst, const int64_t sd[4], const void *src,
                 const int64_t ss[4], const eo_exec *ex)
{
    if (eo_strided_count(shape) == 0)
        return;
    walk2 w = {{shape[0], shape[1], shape[2], shape[3]},
               {{sd[0], sd[1], sd[2], sd[3]}, {ss[0], ss[1], ss[2], ss[3]}},
               {0, 0}, dst, src};
    eo_strided_run(w.sh, 2, w.st, &w.cut, eo_exec_par(ex), copy_body, &w);
}

/* dst[j*dj] += src[j*sj] for j < n. A stride-0 dst is a sum over the
 * axis: it is formed in a register and added once, so the running total
 * is not stored and reloaded for every element. */
static void accumulate_row(int64_t n, float *dst, int64_t dj, const float *src, int64_t sj)
{
    if (dj == 0) {
        float acc = 0.0f;
        for (int64_t j = 0; j < n; j++)
            acc += src[j * sj];
        dst[0] += acc;
    } else if (dj == 1 && sj == 1) {
        for (int64_t j = 0; j < n; j++)
            dst[j] += src[j];
    } else if (dj == 1 && sj == 0) {
        const float v = src[0];
        for (int64_t j = 0; j < n; j++)
            dst[j] += v;
    } else {
        for (int64_t j = 0; j < n; j++)
            dst[j * dj] += src[j * sj];
    }
}

static void accumulate_body(void *arg, int64_t begin, int64_t end, int worker)
{
    const walk2 *w = arg;
    int64_t r0, r1, j0, j1;
    (void)worker;
    eo_strided_items(w->sh, w->cut, begin, end, &r0, &r1, &j0, &j1);
    eo_strided_row p;
    eo_strided_row_start(w->sh, 2, w->st, r0, j0, &p);
    for (int64_t r = r0; r < r1; r++, eo_strided_row_next(w->sh, 2, w->st, &p))
        accumulate_row(j1 - j0, (float *)w->dst + p.off[0], w->st[0][3],
                       (const float *)w->src + p.off[1], w->st[1][3]);
}

void eo_k_accumulate(const int64_t shape[4], float *dst, const int64_t sd[4], const float *src,
                     const int64_t ss[4], const eo_exec *ex)
{
    if (eo_strided_count(shape) == 0)
        return;
    walk2 w = {{shape[0], shape[1], shape[2], shape[3]},
               {{sd[0], sd[1], sd[2], sd[3]}, {ss[0], ss[1], ss[2], ss[3]}},
               {0, 0}, dst, src};
    eo_strided_run(w.sh, 2, w.st, &w.cut, eo_exec_par(ex), accumulate_body, &w);
}

typedef struct fill_job {
    float *x;
    float value;
} fill_job;

static void fill_body(void *arg, int64_t begin, int64_t end, int worker)
{
    const fill_job *f = arg;
    (void)worker;
    for (int64_t i = begin * EO_STRIDED_UNIT, e = end * EO_STRIDED_UNIT; i < e; i++)
        f->x[i] = f->value;
}

/* Zero fills cut into blocks of EO_ZERO_BLOCK bytes, each a memset; a
 * call smaller than EO_PAR_GRAIN floats runs on the caller. */
#define EO_ZERO_BLOCK ((size_t)64 << 10)

typedef struct zero_job {
    char *dst;
    size_t n;
} zero_job;

static void zero_body(void *arg, int64_t begin, int64_t end, int worker)
{
    const zero_job *z = arg;
    (void)worker;
    const size_t lo = (size_t)begin * EO_ZERO_BLOCK, hi = (size_t)end * EO_ZERO_BLOCK;
    memset(z->dst + lo, 0, (hi < z->n ? hi : z->n) - lo);
}

void eo_k_zero(void *dst, size_t n, const eo_exec *ex)
{
    if (n == 0)
        return;
    zero_job z = {dst, n};
    const size_t blocks = n / EO_ZERO_BLOCK + (n % EO_ZERO_BLOCK != 0);
    eo_par_for(eo_par_if(eo_exec_par(ex), (int64_t)(n / sizeof(float))), (int64_t)blocks,
               zero_body, &z);
}

void eo_k_fill(int64_t n, float *x, float value, const eo_exec *ex)
{
    fill_job f = {x, value};
    int64_t blocks = n / EO_STRIDED_UNIT;
    eo_par_for(eo_par_if(eo_exec_par(ex), n), blocks, fill_body, &f);
    for (int64_t i = blocks * EO_STRIDED_UNIT; i < n; i++)
        x[i] = value;
}
