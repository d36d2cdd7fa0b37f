/* ops/cpu/binary16.c — add, sub, mul, div, maximum, minimum with
 * broadcasting on bf16 / f16 storage, and their backward
 * (eo_k_binary16_fn, eo_k_binary_backward16_fn in ops/kernels.h).
 *
 * The walk is the f32 kernel's (binary.c): the same operands' axes merged
 * the same way (strided.h), so every run of the innermost axis is the run
 * the f32 kernel sees. Each run goes through f32 buffers on the stack in
 * pieces of CHUNK elements: widened (half.c's SIMD converters for a unit
 * stride, one value for a broadcast stride 0), computed by the f32 code,
 * rounded once into the 16-bit output.
 *
 * A gradient summed over a broadcast axis (a stride-0 da or db) must stay
 * in f32 until its last contribution, in the f32 kernel's order, to be
 * the f32 result rounded once. So the backward does not walk row after
 * row as binary.c does; it walks each destination element's own
 * contributions: the outer axes are split into those the gradient moves
 * along ("kept") and those it is summed over ("summed"), and one work
 * item is a kept position and a piece of the inner run. The item widens
 * its piece of the gradient into an f32 accumulator, adds the terms of
 * every summed position in order (the f32 kernel, whose order for one
 * element is the same: row by row), and rounds once. A gradient summed
 * along the inner run itself (stride 0 there) is summed per row in one
 * f32 register, then added to the element, as in binary.c's loop, from
 * the shared term of binary.h. Each element belongs to one item and sees
 * its terms in the serial order, so the result is bit for bit the f32
 * kernel's on the widened values, rounded once, for any thread count.
 *
 * With da and db the same buffer (x * x) each pass rounds its own sum:
 * two roundings where the f32 fallback has one. */
#include "ops/kernels.h"
#include "ops/cpu/binary.h"
#include "ops/cpu/grain.h"
#include "ops/cpu/half.h"
#include "ops/cpu/strided.h"

#define CHUNK 1024 /* elements of a run per piece; 4 f32 buffers of it on the stack */
#define SUMMED_CHUNK 64 /* a summed gradient's pieces: more items for the threads */

typedef struct b16_walk {
    int64_t sh[4], st[4][4]; /* merged; operand 0 is the destination */
    int dt, fwd;
    eo_binop op;
    eo_bin_grad kind;
    int right;               /* backward: the pass for b */
    int nk, ns;              /* kept and summed outer axes */
    int ax_k[3], ax_s[3];
    int64_t nkept, nsum;     /* positions of each */
    int64_t chunk, nchunks;  /* the inner run's pieces (1 when summed along it) */
    uint16_t *dst;
    const uint16_t *p1, *p2, *p3; /* fwd: a, b; bwd: dout, a, b */
} b16_walk;

/* buf = the run's n values widened; returns the stride to read buf with
 * (0 for a broadcast run: one value). */
static int64_t widen_run(int dt, int64_t n, const uint16_t *p, int64_t s, float *buf)
{
    if (s == 0) {
        buf[0] = eo_half_get(dt, p[0]);
        return 0;
    }
    if (s == 1)
        eo_half_to_f32(dt, n, p, buf);
    else
        for (int64_t j = 0; j < n; j++)
            buf[j] = eo_half_get(dt, p[j * s]);
    return 1;
}

static void narrow_run(int dt, int64_t n, const float *buf, uint16_t *p, int64_t s)
{
    if (s == 1)
        eo_f32_to_half(dt, n, buf, p);
    else
        for (int64_t j = 0; j < n; j++)
            p[j * s] = eo_half_put(dt, buf[j]);
}

/* Offset in operand o of outer index (i[0], i[1], i[2]) and inner j. */
static int64_t at(const b16_walk *w, int o, const int64_t i[3], int64_t j)
{
    return i[0] * w->st[o][0] + i[1] * w->st[o][1] + i[2] * w->st[o][2] + j * w->st[o][3];
}

/* The outer index of kept position p and summed position q (each read
 * as a row-major number over its axes). */
static void outer_index(const b16_walk *w, int64_t p, int64_t q, int64_t i[3])
{
    i[0] = i[1] = i[2] = 0;
    for (int k = w->nk - 1; k >= 0; k--) {
        i[w->ax_k[k]] = p % w->sh[w->ax_k[k]];
        p /= w->sh[w->ax_k[k]];
    }
    for (int k = w->ns - 1; k >= 0; k--) {
        i[w->ax_s[k]] = q % w->sh[w->ax_s[k]];
        q /= w->sh[w->ax_s[k]];
    }
}

static void b16_body(void *arg, int64_t begin, int64_t end, int worker)
{
    const b16_walk *w = arg;
    float g[CHUNK], d[CHUNK], a[CHUNK], b[CHUNK];
    const int64_t unit[4] = {0, 0, 0, 1};
    (void)worker;
    for (int64_t it = begin; it < end; it++) {
        const int64_t p = it / w->nchunks, j0 = it % w->nchunks * w->chunk;
        const int64_t inner = w->sh[3];
        int64_t i[3];
        if (w->fwd) { /* out has no stride-0 axis: one summed position */
            const int64_t n = inner - j0 < w->chunk ? inner - j0 : w->chunk;
            outer_index(w, p, 0, i);
            const int64_t sa = widen_run(w->dt, n, w->p1 + at(w, 1, i, j0), w->st[1][3], a);
            const int64_t sb = widen_run(w->dt, n, w->p2 + at(w, 2, i, j0), w->st[2][3], b);
            const int64_t shape[4] = {1, 1, 1, n}, ta[4] = {0, 0, 0, sa}, tb[4] = {0, 0, 0, sb};
            eo_k_binary(w->op, shape, g, unit, a, ta, b, tb, NULL);
            narrow_run(w->dt, n, g, w->dst + at(w, 0, i, j0), w->st[0][3]);
            continue;
        }
        const int uses_ab = eo_bin_uses_ab(w->op);
        if (w->st[0][3] != 0 || inner == 1) {
            /* the gradient moves along the run: an f32 accumulator per element */
            const int64_t n = inner - j0 < w->chunk ? inner - j0 : w->chunk;
            outer_index(w, p, 0, i);
            uint16_t *dst = w->dst + at(w, 0, i, j0);
            widen_run(w->dt, n, dst, w->st[0][3] ? w->st[0][3] : 1, g);
            for (int64_t q = 0; q < w->nsum; q++) {
                outer_index(w, p, q, i);
                const int64_t sd = widen_run(w->dt, n, w->p1 + at(w, 1, i, j0), w->st[1][3], d);
                int64_t sa = 0, sb = 0;
                if (uses_ab) {
                    sa = widen_run(w->dt, n, w->p2 + at(w, 2, i, j0), w->st[2][3], a);
                    sb = widen_run(w->dt, n, w->p3 + at(w, 3, i, j0), w->st[3][3], b);
                }
                const int64_t shape[4] = {1, 1, 1, n}, td[4] = {0, 0, 0, sd};
                const int64_t ta[4] = {0, 0, 0, sa}, tb[4] = {0, 0, 0, sb};
                eo_k_binary_backward(w->op, shape, d, td, a, ta, b, tb, w->right ? NULL : g, unit,
                                     w->right ? g : NULL, unit, NULL);
            }
            narrow_run(w->dt, n, g, dst, w->st[0][3] ? w->st[0][3] : 1);
            continue;
        }
        /* summed along the run too: each row's run in one register, as
         * binary.c's grad_run_k, then added to the element */
        outer_index(w, p, 0, i);
        uint16_t *dst = w->dst + at(w, 0, i, 0);
        float acc_g = eo_half_get(w->dt, dst[0]);
        for (int64_t q = 0; q < w->nsum; q++) {
            outer_index(w, p, q, i);
            float acc = 0.0f;
            for (int64_t j = 0; j < inner; j += CHUNK) {
                const int64_t n = inner - j < CHUNK ? inner - j : CHUNK;
                const int64_t sd = widen_run(w->dt, n, w->p1 + at(w, 1, i, j), w->st[1][3], d);
                int64_t sa = 0, sb = 0;
                a[0] = b[0] = 0.0f;
                if (uses_ab) {
                    sa = widen_run(w->dt, n, w->p2 + at(w, 2, i, j), w->st[2][3], a);
                    sb = widen_run(w->dt, n, w->p3 + at(w, 3, i, j), w->st[3][3], b);
                }
                for (int64_t k = 0; k < n; k++)
                    acc += eo_bin_grad_term(w->kind, d[k * sd], a[k * sa], b[k * sb]);
            }
            acc_g += acc;
        }
        dst[0] = eo_half_put(w->dt, acc_g);
    }
}

/* Merge the walk (nops operands, operand 0 the destination), split its
 * outer axes into kept and summed, cut the inner run, and run it. */
static void b16_run(b16_walk *w, int nops, const eo_exec *ex)
{
    eo_strided_merge(w->sh, nops, w->st);
    w->nk = w->ns = 0;
    w->nkept = w->nsum = 1;
    for (int k = 0; k < 3; k++) {
        if (w->sh[k] == 1)
            continue;
        if (w->st[0][k] != 0) {
            w->ax_k[w->nk++] = k;
            w->nkept *= w->sh[k];
        } else {
            w->ax_s[w->ns++] = k;
            w->nsum *= w->sh[k];
        }
    }
    const int64_t inner = w->sh[3];
    if (!w->fwd && w->st[0][3] == 0 && inner > 1) {
        w->chunk = inner;
        w->nchunks = 1;
    } else {
        w->chunk = w->nsum > 1 ? SUMMED_CHUNK : CHUNK;
        w->nchunks = (inner + w->chunk - 1) / w->chunk;
    }
    const int64_t work = w->nkept * w->nsum * inner;
    eo_par_for(eo_par_if(eo_exec_par(ex), work), w->nkept * w->nchunks, b16_body, w);
}

void eo_k_binary16(eo_binop op, int dt, const int64_t shape[4], void *out, const int64_t so[4],
                   const void *a, const int64_t sa[4], const void *b, const int64_t sb[4],
                   const eo_exec *ex)
{
    if (eo_strided_count(shape) == 0 || (unsigned)op >= EO_BIN_COUNT)
        return;
    b16_walk w = {{shape[0], shape[1], shape[2], shape[3]},
                  {{so[0], so[1], so[2], so[3]},
                   {sa[0], sa[1], sa[2], sa[3]},
                   {sb[0], sb[1], sb[2], sb[3]},
                   {0, 0, 0, 0}},
                  dt, 1, op, EO_BG_DOUT, 0, 0, 0, {0}, {0}, 1, 1, 1, 1,
                  out, a, b, NULL};
    b16_run(&w, 3, ex);
}

static void grad16_pass(eo_binop op, int right, int dt, const int64_t shape[4], void *g,
                        const int64_t sg[4], const void *d, const int64_t sd[4], const void *a,
                        const int64_t sa[4], const void *b, const int64_t sb[4], const eo_exec *ex)
{
    b16_walk w = {{shape[0], shape[1], shape[2], shape[3]},
                  {{sg[0], sg[1], sg[2], sg[3]},
                   {sd[0], sd[1], sd[2], sd[3]},
                   {sa[0], sa[1], sa[2], sa[3]},
                   {sb[0], sb[1], sb[2], sb[3]}},
                  dt, 0, op, eo_bin_grad_of(op, right), right, 0, 0, {0}, {0}, 1, 1, 1, 1,
                  g, d, a, b};
    b16_run(&w, 4, ex);
}

void eo_k_binary_backward16(eo_binop op, int dt, const int64_t shape[4], const void *dout,
                            const int64_t sdo[4], const void *a, const int64_t sa[4],
                            const void *b, const int64_t sb[4], void *da, const int64_t sda[4],
                            void *db, const int64_t sdb[4], const eo_exec *ex)
{
    if (eo_strided_count(shape) == 0 || (unsigned)op >= EO_BIN_COUNT)
        return;
    /* as binary.c: ADD and SUB never read a or b, and their zeroed
     * strides merge the same axes as there */
    static const int64_t zero[4] = {0, 0, 0, 0};
    const int uses_ab = eo_bin_uses_ab(op);
    const void *pa = uses_ab ? a : dout, *pb = uses_ab ? b : dout;
    const int64_t *ta = uses_ab ? sa : zero, *tb = uses_ab ? sb : zero;
    if (da)
        grad16_pass(op, 0, dt, shape, da, sda, dout, sdo, pa, ta, pb, tb, ex);
    if (db)
        grad16_pass(op, 1, dt, shape, db, sdb, dout, sdo, pa, ta, pb, tb, ex);
}
