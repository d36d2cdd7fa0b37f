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
#include "ops/cpu/simd.h"

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

/* A column sum: every row of src added into the one row dst (a bias
 * gradient). Row by row, dst[j] would be loaded and stored once per row,
 * and each row's loads wait on the previous row's stores; with the
 * columns cut among threads, each thread's rows were no shorter to wait
 * on, and the sum ran slower on two threads than on one (6400 x 192:
 * 0.46 ms, 1.31 ms). So blocks of 64 columns are kept in registers
 * across all the rows and stored once: the same additions in the same
 * order, so the same bits. */
static int column_sum(const walk2 *w)
{
    return w->st[0][0] == 0 && w->st[0][1] == 0 && w->st[0][2] == 0 && w->st[0][3] == 1 &&
           w->st[1][3] == 1;
}

#ifdef EO_AVX2
/* Columns [j, j + 8 nv) over rows [r0, r1) in one walk down the rows;
 * masked (nv 1, under m) for a last partial vector. nv and masked are
 * constants in each call below, so a[] stays in registers. */
EO_V8_INLINE void column_block(const walk2 *w, int64_t r0, int64_t r1, int64_t j, int nv,
                               int masked, __m256i m)
{
    float *dst = (float *)w->dst + j;
    const float *src = (const float *)w->src + j;
    __m256 a[8];
    for (int v = 0; v < nv; v++)
        a[v] = masked ? _mm256_maskload_ps(dst, m) : _mm256_loadu_ps(dst + 8 * v);
    eo_strided_row p;
    eo_strided_row_start(w->sh, 2, w->st, r0, 0, &p);
    for (int64_t r = r0; r < r1; r++, eo_strided_row_next(w->sh, 2, w->st, &p))
        for (int v = 0; v < nv; v++)
            a[v] = _mm256_add_ps(a[v], masked ? _mm256_maskload_ps(src + p.off[1], m)
                                              : _mm256_loadu_ps(src + p.off[1] + 8 * v));
    for (int v = 0; v < nv; v++) {
        if (masked)
            _mm256_maskstore_ps(dst, m, a[v]);
        else
            _mm256_storeu_ps(dst + 8 * v, a[v]);
    }
}

/* Up to 64 columns per walk down the rows, so that each row's share is
 * read once: a walk per 8 columns re-read rows that no longer fit the
 * cache (a 16 MiB sum ran 4x slower on two threads than on one). A last
 * partial vector takes a walk of its own. */
static void column_sum_rows(const walk2 *w, int64_t r0, int64_t r1, int64_t j0, int64_t j1)
{
    const __m256i m = _mm256_set1_epi32(-1); /* unused: whole vectors */
    int64_t j = j0;
    while (j + 8 <= j1) {
        const int64_t nv = (j1 - j) / 8 < 8 ? (j1 - j) / 8 : 8;
        switch (nv) {
        case 8: column_block(w, r0, r1, j, 8, 0, m); break;
        case 7: column_block(w, r0, r1, j, 7, 0, m); break;
        case 6: column_block(w, r0, r1, j, 6, 0, m); break;
        case 5: column_block(w, r0, r1, j, 5, 0, m); break;
        case 4: column_block(w, r0, r1, j, 4, 0, m); break;
        case 3: column_block(w, r0, r1, j, 3, 0, m); break;
        case 2: column_block(w, r0, r1, j, 2, 0, m); break;
        default: column_block(w, r0, r1, j, 1, 0, m); break;
        }
        j += 8 * nv;
    }
    if (j < j1)
        column_block(w, r0, r1, j, 1, 1, eo_v8_mask(j1 - j));
}
#endif

static void accumulate_body(void *arg, int64_t begin, int64_t end, int worker)
{
    const walk2 *w = arg;
    int64_t r0, r1, j0, j1;
    (void)worker;
    eo_strided_items(w->sh, w->cut, begin, end, &r0, &r1, &j0, &j1);
#ifdef EO_AVX2
    if (column_sum(w) && r1 - r0 > 1) {
        column_sum_rows(w, r0, r1, j0, j1);
        return;
    }
#else
    (void)column_sum;
#endif
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
