/* ops/cpu/cast16.c — the strided 4-D convert / copy / accumulate across
 * f32, bf16 and f16 (eo_k_cast), and the 16-bit fill.
 *
 * The walk is copy.c's: axes merged (strided.h) so the inner run is as
 * long as the layouts allow, cut among threads only where the destination
 * moves. Each inner run is handled in blocks of BLOCK elements through two
 * f32 buffers on the stack: the source block is widened into one (the
 * SIMD row converters of half.c when it is unit-stride), the old
 * destination into the other when accumulating, they are added in f32,
 * and the block is stored in the destination's dtype (rounded once). A
 * stride-0 destination along the inner run (a broadcast axis summed) is
 * summed in f32 over the run and added once. Same dtype without
 * accumulation is a bit copy of 2- or 4-byte elements. */
#include <string.h>
#include "ops/kernels.h"
#include "ops/cpu/half.h"
#include "ops/cpu/strided.h"

#define BLOCK 256

typedef struct cast_walk {
    int64_t sh[4];
    int64_t st[2][4];
    eo_strided_cut cut;
    void *dst;
    const void *src;
    int dd, sdt, acc;
} cast_walk;

static size_t esize(int dt)
{
    return dt == EO_K_BF16 || dt == EO_K_F16 ? 2 : 4;
}

/* buf[j] = src[j * s] as f32, j < n. */
static void load(int dt, int64_t n, const void *src, int64_t s, float *buf)
{
    if (dt == EO_K_F32) {
        const float *p = src;
        if (s == 1)
            memcpy(buf, p, (size_t)n * sizeof *buf);
        else
            for (int64_t j = 0; j < n; j++)
                buf[j] = p[j * s];
        return;
    }
    const uint16_t *p = src;
    if (s == 1)
        eo_half_to_f32(dt, n, p, buf);
    else
        for (int64_t j = 0; j < n; j++)
            buf[j] = eo_half_get(dt, p[j * s]);
}

/* dst[j * s] = buf[j] in dt, j < n. */
static void store(int dt, int64_t n, void *dst, int64_t s, const float *buf)
{
    if (dt == EO_K_F32) {
        float *p = dst;
        if (s == 1)
            memcpy(p, buf, (size_t)n * sizeof *buf);
        else
            for (int64_t j = 0; j < n; j++)
                p[j * s] = buf[j];
        return;
    }
    uint16_t *p = dst;
    if (s == 1)
        eo_f32_to_half(dt, n, buf, p);
    else
        for (int64_t j = 0; j < n; j++)
            p[j * s] = eo_half_put(dt, buf[j]);
}

static void bitcopy_row(size_t es, int64_t n, char *d, int64_t dj, const char *s, int64_t sj)
{
    if (dj == 1 && sj == 1) {
        memcpy(d, s, (size_t)n * es);
    } else if (es == 2) {
        uint16_t *dp = (uint16_t *)(void *)d;
        const uint16_t *sp = (const uint16_t *)(const void *)s;
        for (int64_t j = 0; j < n; j++)
            dp[j * dj] = sp[j * sj];
    } else {
        uint32_t *dp = (uint32_t *)(void *)d;
        const uint32_t *sp = (const uint32_t *)(const void *)s;
        for (int64_t j = 0; j < n; j++)
            dp[j * dj] = sp[j * sj];
    }
}

static void cast_row(const cast_walk *w, int64_t n, char *d, int64_t dj, const char *s,
                     int64_t sj)
{
    float a[BLOCK], b[BLOCK];
    const size_t de = esize(w->dd), se = esize(w->sdt);
    if (w->dd == w->sdt && !w->acc) {
        bitcopy_row(de, n, d, dj, s, sj);
        return;
    }
    if (w->acc && dj == 0) { /* a summed axis: one f32 total, added once */
        float total = 0.0f;
        for (int64_t j0 = 0; j0 < n; j0 += BLOCK) {
            int64_t m = n - j0 < BLOCK ? n - j0 : BLOCK;
            load(w->sdt, m, s + (size_t)(j0 * sj) * se, sj, a);
            for (int64_t j = 0; j < m; j++)
                total += a[j];
        }
        load(w->dd, 1, d, 1, b);
        b[0] += total;
        store(w->dd, 1, d, 1, b);
        return;
    }
    for (int64_t j0 = 0; j0 < n; j0 += BLOCK) {
        int64_t m = n - j0 < BLOCK ? n - j0 : BLOCK;
        char *dp = d + (size_t)(j0 * dj) * de;
        load(w->sdt, m, s + (size_t)(j0 * sj) * se, sj, a);
        if (w->acc) {
            load(w->dd, m, dp, dj, b);
            for (int64_t j = 0; j < m; j++)
                a[j] += b[j];
        }
        store(w->dd, m, dp, dj, a);
    }
}

static void cast_body(void *arg, int64_t begin, int64_t end, int worker)
{
    const cast_walk *w = arg;
    int64_t r0, r1, j0, j1;
    (void)worker;
    eo_strided_items(w->sh, w->cut, begin, end, &r0, &r1, &j0, &j1);
    const size_t de = esize(w->dd), se = esize(w->sdt);
    eo_strided_row p;
    eo_strided_row_start(w->sh, 2, w->st, r0, j0, &p);
    for (int64_t r = r0; r < r1; r++, eo_strided_row_next(w->sh, 2, w->st, &p)) {
        char *d = (char *)w->dst + (size_t)p.off[0] * de;
        const char *s = (const char *)w->src + (size_t)p.off[1] * se;
        cast_row(w, j1 - j0, d, w->st[0][3], s, w->st[1][3]);
    }
}

void eo_k_cast(const int64_t shape[4], int dd, void *dst, const int64_t sd[4], int sdt,
               const void *src, const int64_t ss[4], int accumulate, const eo_exec *ex)
{
    if (eo_strided_count(shape) == 0)
        return;
    cast_walk w = {{shape[0], shape[1], shape[2], shape[3]},
                   {{sd[0], sd[1], sd[2], sd[3]}, {ss[0], ss[1], ss[2], ss[3]}},
                   {0, 0}, dst, src, dd, sdt, accumulate};
    eo_strided_run(w.sh, 2, w.st, &w.cut, eo_exec_par(ex), cast_body, &w);
}

void eo_k_fill16(int64_t n, int dt, void *x, float value, const eo_exec *ex)
{
    (void)ex;
    const uint16_t h = eo_half_put(dt, value);
    uint16_t *p = x;
    for (int64_t i = 0; i < n; i++)
        p[i] = h;
}
