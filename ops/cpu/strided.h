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
#include "ops/cpu/grain.h"

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

/* ---- splitting a merged walk among threads ---------------------------------
 * A merged walk is rows = shape[0]*shape[1]*shape[2] outer iterations of
 * an inner run of shape[3] elements. Two threads must never write the
 * same destination element, and each element must see its contributions
 * in the same order as on one thread (a broadcast gradient sums a whole
 * axis into one element), so the walk is cut only along axes where the
 * destination (operand 0) moves:
 *  - the outer rows, when every outer axis of size > 1 has a destination
 *    stride (the common case: an elementwise op, a copy, a gradient
 *    summed along the inner run);
 *  - else the inner run, in blocks of EO_STRIDED_UNIT elements, when it
 *    has one (a bias gradient: rows summed into one row, cut by columns);
 *  - else (everything sums into one element) not at all.
 * Each element is then handled by exactly one item, with its
 * contributions in the serial order: results do not depend on the thread
 * count. */
#define EO_STRIDED_UNIT 16

typedef struct eo_strided_cut {
    int inner;    /* 1: items are blocks of the inner run, 0: outer rows */
    int64_t items;/* what to hand to eo_par_for (0: run serially) */
} eo_strided_cut;

static inline eo_strided_cut eo_strided_plan(const int64_t shape[4], const int64_t dst[4])
{
    eo_strided_cut c = {0, 0};
    int outer_ok = 1;
    for (int k = 0; k < 3; k++)
        if (shape[k] > 1 && dst[k] == 0)
            outer_ok = 0;
    int64_t rows = shape[0] * shape[1] * shape[2];
    if (outer_ok && rows >= 2) {
        c.items = rows;
    } else if (dst[3] != 0 && shape[3] >= 2 * EO_STRIDED_UNIT) {
        c.inner = 1;
        c.items = (shape[3] + EO_STRIDED_UNIT - 1) / EO_STRIDED_UNIT;
    }
    return c;
}

/* Items [begin, end) of the cut as outer rows [*r0, *r1) and inner
 * elements [*j0, *j1). */
static inline void eo_strided_items(const int64_t shape[4], eo_strided_cut c, int64_t begin,
                                    int64_t end, int64_t *r0, int64_t *r1, int64_t *j0,
                                    int64_t *j1)
{
    if (c.inner) {
        *r0 = 0;
        *r1 = shape[0] * shape[1] * shape[2];
        *j0 = begin * EO_STRIDED_UNIT;
        *j1 = end * EO_STRIDED_UNIT < shape[3] ? end * EO_STRIDED_UNIT : shape[3];
    } else {
        *r0 = begin;
        *r1 = end;
        *j0 = 0;
        *j1 = shape[3];
    }
}

/* Merge the walk (shape and nops stride arrays, operand 0 the
 * destination), plan its cut into *cut, and run body(arg, ...) over it:
 * on threads when it is large enough and can be cut, else serially,
 * outer row by outer row as always (then *cut says outer rows). */
static inline void eo_strided_run(int64_t shape[4], int nops, int64_t st[][4],
                                  eo_strided_cut *cut, const eo_par *par, eo_par_body body,
                                  void *arg)
{
    eo_strided_merge(shape, nops, st);
    int64_t rows = shape[0] * shape[1] * shape[2];
    par = eo_par_if(par, rows * shape[3]);
    *cut = eo_strided_plan(shape, st[0]);
    if (!par || eo_par_threads(par) < 2 || cut->items < 2) {
        cut->inner = 0;
        body(arg, 0, rows, 0);
        return;
    }
    eo_par_for(par, cut->items, body, arg);
}

/* ---- walking the outer rows ------------------------------------------------
 * A body visits rows r0, r0 + 1, ... of its item and needs each operand's
 * offset of element j0 of the row. Finding row r's position on the three
 * outer axes takes three divisions; done per row for every operand, that
 * was most of the time of a row of 16 to 64 elements (a bias gradient cut
 * by columns among threads, a head's slice of a view's gradient). So the
 * position is found once per item and then stepped: each operand's offset
 * moves by its stride on axis 2, and on wrapping back along axis 2 (then
 * axis 1), by the difference. The offsets are the same numbers, so the
 * kernels touch the same elements in the same order. */
typedef struct eo_strided_row {
    int64_t i1, i2;                    /* the row's position on axes 1 and 2 */
    int64_t off[EO_STRIDED_MAX_OPS];   /* each operand's offset of (row, j0) */
} eo_strided_row;

static inline void eo_strided_row_start(const int64_t shape[4], int nops, const int64_t st[][4],
                                        int64_t r, int64_t j0, eo_strided_row *p)
{
    const int64_t i2 = r % shape[2], i1 = (r / shape[2]) % shape[1];
    const int64_t i0 = r / (shape[2] * shape[1]);
    p->i1 = i1;
    p->i2 = i2;
    for (int o = 0; o < nops; o++)
        p->off[o] = i0 * st[o][0] + i1 * st[o][1] + i2 * st[o][2] + j0 * st[o][3];
}

static inline void eo_strided_row_next(const int64_t shape[4], int nops, const int64_t st[][4],
                                       eo_strided_row *p)
{
    for (int o = 0; o < nops; o++)
        p->off[o] += st[o][2];
    if (++p->i2 < shape[2])
        return;
    p->i2 = 0;
    for (int o = 0; o < nops; o++)
        p->off[o] += st[o][1] - shape[2] * st[o][2];
    if (++p->i1 < shape[1])
        return;
    p->i1 = 0;
    for (int o = 0; o < nops; o++)
        p->off[o] += st[o][0] - shape[1] * st[o][1];
}

#endif
