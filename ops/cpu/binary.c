/* ops/cpu/binary.c — add, sub, mul, div, maximum, minimum with broadcasting,
 * and their backward.
 *
 * Forward and backward sit together so the derivative of each op can be
 * read next to the op. Broadcasting is only strides: an input repeated
 * along an axis has stride 0 there. In the backward the same stride 0 on
 * the gradient makes `+=` sum over that axis, so a bias gradient is
 * reduced here with no separate pass.
 *
 * Axes are merged first (strided.h); the innermost loop then has fast
 * paths for the common layouts (all unit-stride, one side a scalar run),
 * which the compiler vectorises. Large walks are cut among threads only
 * where the destination moves (strided.h), so a broadcast gradient still
 * sums each element in the serial order: results do not depend on the
 * thread count. */
#include "ops/kernels.h"
#include "ops/cpu/binary.h"
#include "ops/cpu/strided.h"

/* One op over a run of n elements. EXPR uses x and y for the two inputs;
 * the stride cases are spelt out so each becomes a simple, vectorisable
 * loop. */
#define EO_BIN_RUN(EXPR)                                                       \
    do {                                                                       \
        if (so == 1 && sa == 1 && sb == 1) {                                   \
            for (int64_t j = 0; j < n; j++) {                                  \
                const float x = a[j], y = b[j];                                \
                out[j] = (EXPR);                                               \
            }                                                                  \
        } else if (so == 1 && sa == 1 && sb == 0) {                            \
            const float y = b[0];                                              \
            for (int64_t j = 0; j < n; j++) {                                  \
                const float x = a[j];                                          \
                out[j] = (EXPR);                                               \
            }                                                                  \
        } else if (so == 1 && sa == 0 && sb == 1) {                            \
            const float x = a[0];                                              \
            for (int64_t j = 0; j < n; j++) {                                  \
                const float y = b[j];                                          \
                out[j] = (EXPR);                                               \
            }                                                                  \
        } else {                                                               \
            for (int64_t j = 0; j < n; j++) {                                  \
                const float x = a[j * sa], y = b[j * sb];                      \
                out[j * so] = (EXPR);                                          \
            }                                                                  \
        }                                                                      \
    } while (0)

void eo_bin_run(eo_binop op, int64_t n, float *out, int64_t so, const float *a, int64_t sa,
                const float *b, int64_t sb)
{
    switch (op) {
    case EO_BIN_ADD: EO_BIN_RUN(x + y); break;
    case EO_BIN_SUB: EO_BIN_RUN(x - y); break;
    case EO_BIN_MUL: EO_BIN_RUN(x * y); break;
    case EO_BIN_DIV: EO_BIN_RUN(x / y); break;
    /* As torch.maximum / minimum: a NaN on either side wins (fmaxf would
     * drop it), and a tie gives the first operand, which decides the
     * sign of zero: maximum(-0, +0) = -0, maximum(+0, -0) = +0. */
    case EO_BIN_MAX: EO_BIN_RUN(x >= y || x != x ? x : y); break;
    case EO_BIN_MIN: EO_BIN_RUN(x <= y || x != x ? x : y); break;
    default: break;
    }
}

/* The merged walk, its operands' strides and how it is cut (strided.h). */
typedef struct walk {
    int64_t sh[4];
    int64_t st[4][4];
    eo_strided_cut cut;
    int kind; /* eo_binop forward, eo_bin_grad backward */
    float *o;
    const float *p1, *p2, *p3;
} walk;

static void binary_body(void *arg, int64_t begin, int64_t end, int worker)
{
    const walk *w = arg;
    int64_t r0, r1, j0, j1;
    (void)worker;
    eo_strided_items(w->sh, w->cut, begin, end, &r0, &r1, &j0, &j1);
    eo_strided_row p;
    eo_strided_row_start(w->sh, 3, w->st, r0, j0, &p);
    for (int64_t r = r0; r < r1; r++, eo_strided_row_next(w->sh, 3, w->st, &p))
        eo_bin_run((eo_binop)w->kind, j1 - j0, w->o + p.off[0], w->st[0][3], w->p1 + p.off[1],
                   w->st[1][3], w->p2 + p.off[2], w->st[2][3]);
}

void eo_k_binary(eo_binop op, const int64_t shape[4], float *out, const int64_t so[4],
                 const float *a, const int64_t sa[4], const float *b, const int64_t sb[4],
                 const eo_exec *ex)
{
    if (eo_strided_count(shape) == 0)
        return;
    walk w = {{shape[0], shape[1], shape[2], shape[3]},
              {{so[0], so[1], so[2], so[3]},
               {sa[0], sa[1], sa[2], sa[3]},
               {sb[0], sb[1], sb[2], sb[3]},
               {0, 0, 0, 0}},
              {0, 0}, (int)op, out, a, b, NULL};
    eo_strided_run(w.sh, 3, w.st, &w.cut, eo_exec_par(ex), binary_body, &w);
}

/* ---- backward ------------------------------------------------------------
 * Each gradient is its own pass: g += dout * d(out)/d(input), the terms
 * defined in binary.h (shared with binary16.c). Doing da and db
 * separately keeps each loop simple, and stays correct when da and db are
 * the same buffer (x * x): every contribution is still added. */

/* g[j*sg] += term(dout[j*sd], a[j*sa], b[j*sb]) for j < n; a stride-0 g
 * (broadcast along this run) sums the run in a register first. Inlined
 * with a constant kind below, so each loop holds only its own term. */
static inline void grad_run_k(eo_bin_grad k, int64_t n, float *g, int64_t sg, const float *d,
                              int64_t sd, const float *a, int64_t sa, const float *b, int64_t sb)
{
    if (sg == 0) {
        float acc = 0.0f;
        for (int64_t j = 0; j < n; j++)
            acc += eo_bin_grad_term(k, d[j * sd], a[j * sa], b[j * sb]);
        g[0] += acc;
    } else if (sg == 1 && sd == 1 && sa == 1 && sb == 1) {
        for (int64_t j = 0; j < n; j++)
            g[j] += eo_bin_grad_term(k, d[j], a[j], b[j]);
    } else if (sg == 1 && sd == 1) { /* a bias-like gradient, row by row */
        for (int64_t j = 0; j < n; j++)
            g[j] += eo_bin_grad_term(k, d[j], a[j * sa], b[j * sb]);
    } else {
        for (int64_t j = 0; j < n; j++)
            g[j * sg] += eo_bin_grad_term(k, d[j * sd], a[j * sa], b[j * sb]);
    }
}

void eo_bin_grad_run(eo_bin_grad k, int64_t n, float *g, int64_t sg, const float *d, int64_t sd,
                     const float *a, int64_t sa, const float *b, int64_t sb)
{
    switch (k) {
    case EO_BG_DOUT: grad_run_k(EO_BG_DOUT, n, g, sg, d, sd, a, sa, b, sb); break;
    case EO_BG_NEG_DOUT: grad_run_k(EO_BG_NEG_DOUT, n, g, sg, d, sd, a, sa, b, sb); break;
    case EO_BG_MUL_B: grad_run_k(EO_BG_MUL_B, n, g, sg, d, sd, a, sa, b, sb); break;
    case EO_BG_MUL_A: grad_run_k(EO_BG_MUL_A, n, g, sg, d, sd, a, sa, b, sb); break;
    case EO_BG_DIV_B: grad_run_k(EO_BG_DIV_B, n, g, sg, d, sd, a, sa, b, sb); break;
    case EO_BG_SEL_GT: grad_run_k(EO_BG_SEL_GT, n, g, sg, d, sd, a, sa, b, sb); break;
    case EO_BG_SEL_LT: grad_run_k(EO_BG_SEL_LT, n, g, sg, d, sd, a, sa, b, sb); break;
    default: grad_run_k(EO_BG_DIV_AB, n, g, sg, d, sd, a, sa, b, sb); break;
    }
}

static void grad_body(void *arg, int64_t begin, int64_t end, int worker)
{
    const walk *w = arg;
    int64_t r0, r1, j0, j1;
    (void)worker;
    eo_strided_items(w->sh, w->cut, begin, end, &r0, &r1, &j0, &j1);
    eo_strided_row p;
    eo_strided_row_start(w->sh, 4, w->st, r0, j0, &p);
    for (int64_t r = r0; r < r1; r++, eo_strided_row_next(w->sh, 4, w->st, &p))
        eo_bin_grad_run((eo_bin_grad)w->kind, j1 - j0, w->o + p.off[0], w->st[0][3],
                        w->p1 + p.off[1], w->st[1][3], w->p2 + p.off[2], w->st[2][3],
                        w->p3 + p.off[3], w->st[3][3]);
}

static void grad_pass(eo_bin_grad k, const int64_t shape[4], float *g, const int64_t sg[4],
                      const float *d, const int64_t sd[4], const float *a, const int64_t sa[4],
                      const float *b, const int64_t sb[4], const eo_exec *ex)
{
    if (k == EO_BG_DOUT) {
        /* g += dout: an accumulate, the same walk and additions (a and b
         * are not read), whose column sum (a bias gradient) keeps g in
         * registers down the rows (copy.c). */
        eo_k_accumulate(shape, g, sg, d, sd, ex);
        return;
    }
    walk w = {{shape[0], shape[1], shape[2], shape[3]},
              {{sg[0], sg[1], sg[2], sg[3]},
               {sd[0], sd[1], sd[2], sd[3]},
               {sa[0], sa[1], sa[2], sa[3]},
               {sb[0], sb[1], sb[2], sb[3]}},
              {0, 0}, (int)k, g, d, a, b};
    eo_strided_run(w.sh, 4, w.st, &w.cut, eo_exec_par(ex), grad_body, &w);
}

void eo_k_binary_backward(eo_binop op, const int64_t shape[4], const float *dout,
                          const int64_t sdo[4], const float *a, const int64_t sa[4],
                          const float *b, const int64_t sb[4], float *da, const int64_t sda[4],
                          float *db, const int64_t sdb[4], const eo_exec *ex)
{
    if (eo_strided_count(shape) == 0 || (unsigned)op >= EO_BIN_COUNT)
        return;
    /* ADD and SUB never read a or b: their strides are zeroed so they
     * cannot stop axes from merging (and a NULL a or b is harmless). */
    static const int64_t zero[4] = {0, 0, 0, 0};
    const int uses_ab = eo_bin_uses_ab(op);
    const float *pa = uses_ab ? a : dout, *pb = uses_ab ? b : dout;
    const int64_t *ta = uses_ab ? sa : zero, *tb = uses_ab ? sb : zero;
    if (da)
        grad_pass(eo_bin_grad_of(op, 0), shape, da, sda, dout, sdo, pa, ta, pb, tb, ex);
    if (db)
        grad_pass(eo_bin_grad_of(op, 1), shape, db, sdb, dout, sdo, pa, ta, pb, tb, ex);
}
