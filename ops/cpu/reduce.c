/* ops/cpu/reduce.c — sum, mean and max over one axis, their backward, the
 * log-sum-exp over an axis and its backward, and the sum of squares used
 * for gradient clipping.
 *
 * x is viewed as [outer, n, inner] and reduced over n. Sums are carried
 * in double: a loss averaged over a large batch, or a norm over millions
 * of parameters, would otherwise lose digits in float, and these kernels
 * are never the bottleneck. On a single-precision FPU (Cortex-M4) each
 * double add is a libgcc call: the price is paid only by sums, means,
 * log-sum-exp and clipping, not by a forward of Linear/ReLU layers (matmul,
 * add, relu, softmax use float throughout), and every float->double is
 * written out as a cast so -Wdouble-promotion (make cortex-m4) finds any
 * accidental one. When inner > 1 the reduced axis is not the
 * contiguous one, so the loop runs over n rows of `inner` contiguous
 * elements, a tile of `inner` at a time, with one double per column on
 * the stack: the reads stay sequential.
 *
 * Work is split over `outer` for the thread hook; every output element is
 * summed by one worker in a fixed order, so results do not depend on the
 * thread count. */
#include <math.h>
#include "ops/cpu/grain.h"
#include "ops/kernels.h"

#define TILE 64

typedef struct reduce_args {
    eo_redop op;
    int64_t n, inner;
    const float *x, *dy;
    float *y, *dx;
    int32_t *argmax;
    const int32_t *argmax_in;
} reduce_args;

/* First maximum; NaN counts as larger than anything, so the first NaN wins
 * and stays. */
static inline int max_wins(float v, float m)
{
    return m == m && (v > m || v != v);
}

/* Sum of a contiguous run in double, with eight running sums so the adds
 * do not wait on each other (one sum would be bound by add latency). */
static double sum_run(const float *x, int64_t n)
{
    double acc[8] = {0};
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int k = 0; k < 8; k++)
            acc[k] += (double)x[i + k];
    for (; i < n; i++)
        acc[0] += (double)x[i];
    return ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
}

static void reduce_slab(const reduce_args *a, const float *x, float *y, int32_t *arg)
{
    const int64_t n = a->n, inner = a->inner;
    if (inner == 1 && a->op != EO_RED_MAX) {
        const double s = sum_run(x, n);
        y[0] = (float)(a->op == EO_RED_MEAN ? s / (double)n : s);
        return;
    }
    for (int64_t c0 = 0; c0 < inner; c0 += TILE) {
        const int64_t w = inner - c0 < TILE ? inner - c0 : TILE;
        if (a->op == EO_RED_MAX) {
            float m[TILE];
            int32_t k[TILE];
            for (int64_t c = 0; c < w; c++) {
                m[c] = x[c0 + c];
                k[c] = 0;
            }
            for (int64_t j = 1; j < n; j++)
                for (int64_t c = 0; c < w; c++) {
                    const float v = x[j * inner + c0 + c];
                    if (max_wins(v, m[c])) {
                        m[c] = v;
                        k[c] = (int32_t)j;
                    }
                }
            for (int64_t c = 0; c < w; c++) {
                y[c0 + c] = m[c];
                if (arg)
                    arg[c0 + c] = k[c];
            }
        } else {
            double s[TILE] = {0};
            for (int64_t j = 0; j < n; j++)
                for (int64_t c = 0; c < w; c++)
                    s[c] += (double)x[j * inner + c0 + c];
            const double scale = a->op == EO_RED_MEAN ? 1.0 / (double)n : 1.0;
            for (int64_t c = 0; c < w; c++)
                y[c0 + c] = (float)(s[c] * scale);
        }
    }
}

static void reduce_body(void *arg, int64_t o0, int64_t o1, int worker)
{
    (void)worker;
    const reduce_args *a = arg;
    for (int64_t o = o0; o < o1; o++)
        reduce_slab(a, a->x + o * a->n * a->inner, a->y + o * a->inner,
                    a->argmax ? a->argmax + o * a->inner : NULL);
}

void eo_k_reduce(eo_redop op, int64_t outer, int64_t n, int64_t inner, const float *x, float *y,
                 int32_t *argmax, const eo_exec *ex)
{
    const eo_par *par = eo_exec_par(ex);
    if (op == EO_RED_MAX && n <= 0)
        return; /* a max over nothing has no value; the core never asks */
    reduce_args a = {op, n, inner, x, NULL, y, NULL, op == EO_RED_MAX ? argmax : NULL, NULL};
    eo_par_for(eo_par_if(par, outer * n * inner), outer, reduce_body, &a);
}

/* max: each slab o scatters its inner gradients to the argmax rows. */
static void max_backward_body(void *arg, int64_t o0, int64_t o1, int worker)
{
    (void)worker;
    const reduce_args *a = arg;
    const int64_t n = a->n, inner = a->inner;
    for (int64_t o = o0; o < o1; o++) {
        const float *dy = a->dy + o * inner;
        float *dx = a->dx + o * n * inner;
        const int32_t *k = a->argmax_in + o * inner;
        for (int64_t c = 0; c < inner; c++)
            dx[(int64_t)k[c] * inner + c] += dy[c];
    }
}

/* sum, mean: every row j of every slab o gets dy[o] / div, so the items
 * are the outer * n rows (each dx element in one item: any cut of them
 * gives the same result), not the slabs: a sum over everything is one
 * slab of n rows and would otherwise run on one thread. A row of one
 * element (inner = 1: the sum of a whole tensor) is a long run with one
 * value, its quotient formed once (the same division, so the same value
 * as per element). */
static void sum_backward_body(void *arg, int64_t r0, int64_t r1, int worker)
{
    (void)worker;
    const reduce_args *a = arg;
    const int64_t n = a->n, inner = a->inner;
    const float div = a->op == EO_RED_MEAN ? (float)n : 1.0f;
    if (inner == 1) {
        for (int64_t r = r0; r < r1;) {
            const int64_t o = r / n, end = (o + 1) * n < r1 ? (o + 1) * n : r1;
            const float v = a->dy[o] / div;
            for (; r < end; r++)
                a->dx[r] += v;
        }
        return;
    }
    for (int64_t r = r0; r < r1; r++) {
        const float *dy = a->dy + r / n * inner;
        float *dx = a->dx + r * inner;
        for (int64_t c = 0; c < inner; c++)
            dx[c] += dy[c] / div;
    }
}

void eo_k_reduce_backward(eo_redop op, int64_t outer, int64_t n, int64_t inner, const float *dy,
                          const int32_t *argmax, float *dx, const eo_exec *ex)
{
    const eo_par *par = eo_par_if(eo_exec_par(ex), outer * n * inner);
    reduce_args a = {op, n, inner, NULL, dy, NULL, dx, NULL, argmax};
    if (op == EO_RED_MAX) {
        eo_par_for(par, outer, max_backward_body, &a);
        return;
    }
    eo_par_for(par, outer * n, sum_backward_body, &a);
}

/* ---- log-sum-exp ----------------------------------------------------------
 * Two walks over each column of the slab, a tile of TILE columns at a
 * time (reads stay sequential when inner > 1): the max (NaN wins, as in
 * max_wins), then the exps summed in double. Never the bottleneck of
 * anything, so it keeps to plain loops on every path. */
static void lse_slab(int64_t n, int64_t inner, const float *x, float *y, float *st)
{
    for (int64_t c0 = 0; c0 < inner; c0 += TILE) {
        const int64_t w = inner - c0 < TILE ? inner - c0 : TILE;
        float m[TILE], sub[TILE];
        double s[TILE];
        for (int64_t c = 0; c < w; c++) {
            m[c] = -INFINITY;
            s[c] = 0.0;
        }
        for (int64_t j = 0; j < n; j++)
            for (int64_t c = 0; c < w; c++) {
                const float v = x[j * inner + c0 + c];
                if (max_wins(v, m[c]))
                    m[c] = v;
            }
        /* torch.logsumexp's guard: an infinite max is not subtracted, so
         * all -inf sums exp(-inf) = 0 (log: -inf) and +inf sums inf. */
        for (int64_t c = 0; c < w; c++)
            sub[c] = m[c] == INFINITY || m[c] == -INFINITY ? 0.0f : m[c];
        for (int64_t j = 0; j < n; j++)
            for (int64_t c = 0; c < w; c++)
                s[c] += (double)expf(x[j * inner + c0 + c] - sub[c]);
        for (int64_t c = 0; c < w; c++) {
            const float L = logf((float)s[c]);
            y[c0 + c] = m[c] + L;
            if (st) {
                st[2 * (c0 + c)] = sub[c];
                st[2 * (c0 + c) + 1] = L;
            }
        }
    }
}

typedef struct lse_args {
    int64_t n, inner;
    const float *x, *st_in, *dy;
    float *out, *st;
} lse_args;

static void lse_body(void *arg, int64_t o0, int64_t o1, int worker)
{
    (void)worker;
    const lse_args *a = arg;
    for (int64_t o = o0; o < o1; o++)
        lse_slab(a->n, a->inner, a->x + o * a->n * a->inner, a->out + o * a->inner,
                 a->st ? a->st + 2 * o * a->inner : NULL);
}

void eo_k_logsumexp(int64_t outer, int64_t n, int64_t inner, const float *x, float *y,
                    float *stats, const eo_exec *ex)
{
    const eo_par *par = eo_exec_par(ex);
    lse_args a = {n, inner, x, NULL, NULL, y, stats};
    eo_par_for(eo_par_if(par, outer * n * inner), outer, lse_body, &a);
}

/* dx += dy exp((x - m') - L): the softmax along the axis, times dy; x - m'
 * is exact near the max, so an offset of 1e8 costs the softmax nothing. */
static void lse_backward_body(void *arg, int64_t o0, int64_t o1, int worker)
{
    (void)worker;
    const lse_args *a = arg;
    const int64_t n = a->n, inner = a->inner;
    for (int64_t o = o0; o < o1; o++) {
        const float *x = a->x + o * n * inner, *st = a->st_in + 2 * o * inner;
        const float *dy = a->dy + o * inner;
        float *dx = a->out + o * n * inner;
        for (int64_t j = 0; j < n; j++)
            for (int64_t c = 0; c < inner; c++)
                if (st[2 * c + 1] != -INFINITY)
                    dx[j * inner + c] += dy[c] * expf((x[j * inner + c] - st[2 * c]) - st[2 * c + 1]);
    }
}

void eo_k_logsumexp_backward(int64_t outer, int64_t n, int64_t inner, const float *x,
                             const float *stats, const float *dy, float *dx, const eo_exec *ex)
{
    const eo_par *par = eo_exec_par(ex);
    lse_args a = {n, inner, x, stats, dy, dx, NULL};
    eo_par_for(eo_par_if(par, outer * n * inner), outer, lse_backward_body, &a);
}

/* The sum of squares (gradient clipping's global norm) over a fixed
 * cut: at most SUMSQ_BLOCKS blocks of at least SUMSQ_MIN elements, each
 * summed in eight double accumulators (as in sum_run), the block sums
 * then added in block order. The cut depends only on n, so the threads
 * share the blocks and the result is the same for every thread count. */
enum { SUMSQ_BLOCKS = 256, SUMSQ_MIN = 1 << 16 };

typedef struct sumsq_args {
    const float *x;
    int64_t n, bs;
    double *part;
} sumsq_args;

static double sumsq_run(const float *x, int64_t n)
{
    double acc[8] = {0};
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int k = 0; k < 8; k++)
            acc[k] += (double)x[i + k] * (double)x[i + k];
    for (; i < n; i++)
        acc[0] += (double)x[i] * (double)x[i];
    return ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
}

static void sumsq_body(void *arg, int64_t b0, int64_t b1, int worker)
{
    (void)worker;
    const sumsq_args *a = arg;
    for (int64_t b = b0; b < b1; b++) {
        const int64_t lo = b * a->bs, len = a->n - lo < a->bs ? a->n - lo : a->bs;
        a->part[b] = sumsq_run(a->x + lo, len);
    }
}

void eo_k_sumsq(int64_t n, const float *x, float *out, const eo_exec *ex)
{
    double part[SUMSQ_BLOCKS];
    int64_t bs = (n + SUMSQ_BLOCKS - 1) / SUMSQ_BLOCKS;
    if (bs < SUMSQ_MIN)
        bs = SUMSQ_MIN;
    const int64_t nb = n > 0 ? (n + bs - 1) / bs : 0;
    sumsq_args a = {x, n, bs, part};
    eo_par_for(eo_par_if(eo_exec_par(ex), n), nb, sumsq_body, &a);
    double total = 0.0;
    for (int64_t b = 0; b < nb; b++)
        total += part[b];
    out[0] = (float)total;
}
