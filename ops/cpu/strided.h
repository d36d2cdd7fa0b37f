/* ops/cpu/strided.h — merging the axes of a strided 4-D walk.
 *
 * The elementwise kernels see every operand as 4-D with its own strides.
 * Walked literally, a contiguous [B, T, C] tensor runs its innermost loop
 * over only C elements, and a plain vector padded to [1, 1, 1, n] is fine
 * but [n, 1, 1, 1] would step one element per outer iteration. Two
 * neighbouring axes can be walked as one whenever, for every operand, the
 * outer stride equals the inner stride times the inner size (broadcast
 * axes, stride 0, chain with each other too). Merging them first gives
 * the longest possible innermost loop, which is what makes the kernels'
 * stride-1 fast paths apply. Size-1 axes are dropped on the way. */
#ifndef EO_STRIDED_H
#define EO_STRIDED_H

#include <stdint.h>

#define EO_STRIDED_MAX_OPS 5

/* Rewrite shape and the nops stride arrays in place so the same elements
 * are visited in the same order over as few axes as possible, right-
 * aligned (leading axes become size 1, stride 0). */
static inline void eo_strided_merge(int64_t shape[4], int nops, int64_t st[][4])
{
    int64_t sh[4], s[EO_STRIDED_MAX_OPS][4];
    int d = 0;
    for (int k = 0; k < 4; k++) {
        if (shape[k] == 1)
            continue;
        int chain = d > 0;
        for (int o = 0; o < nops && chain; o++)
            chain = s[o][d - 1] == st[o][k] * shape[k];
        if (chain) {
            sh[d - 1] *= shape[k];
            for (int o = 0; o < nops; o++)
                s[o][d - 1] = st[o][k];
            continue;
        }
        sh[d] = shape[k];
        for (int o = 0; o < nops; o++)
            s[o][d] = st[o][k];
        d++;
    }
    for (int k = 0; k < 4; k++) {
        int src = k - (4 - d);
        shape[k] = src >= 0 ? sh[src] : 1;
        for (int o = 0; o < nops; o++)
            st[o][k] = src >= 0 ? s[o][src] : 0;
    }
}

/* Number of elements in shape (0 if any axis is empty). */
static inline int64_t eo_strided_count(const int64_t shape[4])
{
    return shape[0] * shape[1] * shape[2] * shape[3];
}

#endif
