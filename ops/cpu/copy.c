/* ops/cpu/copy.c — strided copy, strided accumulate, fill.
 *
 * These are the kernels behind views made real (permute then contiguous),
 * broadcast gradients reduced back to their input's shape, and zeroing.
 * All three are memory-bound, so the only work worth doing is making the
 * innermost loop long and unit-stride: axes are merged first (strided.h),
 * then the inner loop picks a fast path when its strides allow one. */
#include <string.h>
#include "ops/kernels.h"
#include "ops/cpu/strided.h"

void eo_k_copy32(const int64_t shape[4], void *dst, const int64_t sd[4], const void *src,
                 const int64_t ss[4], const eo_exec *ex)
{
    (void)ex; /* strided walks stay on one thread */
    int64_t sh[4] = {shape[0], shape[1], shape[2], shape[3]};
    int64_t st[2][4] = {{sd[0], sd[1], sd[2], sd[3]}, {ss[0], ss[1], ss[2], ss[3]}};
    if (eo_strided_count(sh) == 0)
        return;
    eo_strided_merge(sh, 2, st);
    uint32_t *d = dst;
    const uint32_t *s = src;
    const int64_t n = sh[3], dj = st[0][3], sj = st[1][3];
    for (int64_t i0 = 0; i0 < sh[0]; i0++)
        for (int64_t i1 = 0; i1 < sh[1]; i1++)
            for (int64_t i2 = 0; i2 < sh[2]; i2++) {
                uint32_t *dr = d + i0 * st[0][0] + i1 * st[0][1] + i2 * st[0][2];
                const uint32_t *sr = s + i0 * st[1][0] + i1 * st[1][1] + i2 * st[1][2];
                if (dj == 1 && sj == 1)
                    memcpy(dr, sr, (size_t)n * sizeof *dr);
                else
                    for (int64_t j = 0; j < n; j++)
                        dr[j * dj] = sr[j * sj];
            }
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

void eo_k_accumulate(const int64_t shape[4], float *dst, const int64_t sd[4], const float *src,
                     const int64_t ss[4], const eo_exec *ex)
{
    (void)ex;
    int64_t sh[4] = {shape[0], shape[1], shape[2], shape[3]};
    int64_t st[2][4] = {{sd[0], sd[1], sd[2], sd[3]}, {ss[0], ss[1], ss[2], ss[3]}};
    if (eo_strided_count(sh) == 0)
        return;
    eo_strided_merge(sh, 2, st);
    for (int64_t i0 = 0; i0 < sh[0]; i0++)
        for (int64_t i1 = 0; i1 < sh[1]; i1++)
            for (int64_t i2 = 0; i2 < sh[2]; i2++)
                accumulate_row(sh[3], dst + i0 * st[0][0] + i1 * st[0][1] + i2 * st[0][2],
                               st[0][3], src + i0 * st[1][0] + i1 * st[1][1] + i2 * st[1][2],
                               st[1][3]);
}

void eo_k_fill(int64_t n, float *x, float value, const eo_exec *ex)
{
    (void)ex;
    for (int64_t i = 0; i < n; i++)
        x[i] = value;
}
