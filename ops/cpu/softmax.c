/* ops/cpu/softmax.c — softmax and log_softmax over the last axis, forward and
 * backward.
 *
 * The forward reads each row from memory once and writes it once. With
 * AVX2, rows of up to EO_ROW_CACHED floats are pipelined (softmax_rows):
 * each row's max, then its exps (one per element, the dominant cost),
 * from cache, while the previous row's output is written and the next
 * row is fetched (the exps in 16-lane vectors where the CPU has
 * AVX-512). Softmax keeps the exps in a per-worker row of workspace (ws)
 * until their sum is known. A longer row takes the max
 * and the sum in one read (the online normaliser of simd.h) and pays 2.25
 * exps per element to avoid a second trip to memory. log_softmax never
 * stores exps: y = (x - max) - log(sum). The scalar path is the plain
 * three-pass form.
 *
 * Subtracting the max is what keeps logits of ±1e4 finite. A row of only
 * -inf has no mass: softmax writes 0 and log_softmax -inf, never 0/0.
 * A NaN anywhere in a row makes that whole row NaN, as in PyTorch, on
 * every path, at no cost to the hot loops: the max walk is NaN-blind, but
 * the NaN's own exp makes the row's sum, and so every output, NaN. The
 * one row that hides it from both, a NaN among -infs (max -inf, nothing
 * summed), is looked at in the rare branch that handles -inf rows.
 *
 * The backward is two walks per row (the sum, then dx); with arrays too
 * large for the cache, the dx walk prefetches the next row's y and dy
 * (softmax_backward_row).
 *
 * Rows are independent, so the thread hook gets whole rows; each row is
 * computed the same way whoever computes it, and results do not depend on
 * the thread count. */
#include <math.h>
#include "ops/cpu/grain.h"
#include "ops/kernels.h"
#include "ops/cpu/sum8.h"
#include "ops/cpu/simd.h"

typedef struct softmax_args {
    int log;
    int64_t cols;
    const float *x, *y, *dy;
    float *out;
    float *ws;  /* forward only: one row per worker (softmax) */
    int stream; /* forward: stream y (see EO_STREAM_MIN_BYTES); backward: y, dy and dx
                 * together are that large, so prefetch the next rows */
    int set;    /* backward: dx's old values are taken as +0 and not read */
} softmax_args;

#ifdef EO_AVX2
/* Floats per worker in ws: a row, rounded up to whole cache lines (only
 * the AVX2 path has a workspace; clang flags an unused one otherwise). */
static inline int64_t ws_stride(int64_t cols)
{
    return (cols + 15) / 16 * 16;
}
#endif

/* A row with no probability mass: every entry -inf. */
static void empty_row(int log, int64_t cols, float *y)
{
    for (int64_t j = 0; j < cols; j++)
        y[j] = log ? -INFINITY : 0.0f;
}

/* A row holding a NaN: NaN everywhere. */
static void nan_row(int64_t cols, float *y)
{
    for (int64_t j = 0; j < cols; j++)
        y[j] = NAN;
}

/* The backward of a row with no mass (log_softmax's y all -inf): its
 * dx gets +0 (set: is +0), the documented zero gradient. PyTorch gives
 * NaN there (its forward already gave NaN). */
static void no_mass_grad(int set, int64_t cols, float *dx)
{
    for (int64_t j = 0; j < cols; j++)
        dx[j] = set ? 0.0f : dx[j] + 0.0f;
}

/* A row whose max is -inf: no mass, or a NaN among -infs. */
static void minus_inf_row(int log, int64_t cols, const float *x, float *y)
{
    if (eo_row_has_nan(x, cols))
        nan_row(cols, y);
    else
        empty_row(log, cols, y);
}

#ifdef EO_AVX2
/* ---- Rows up to EO_ROW_CACHED floats: pipelined ---------------------------
 * Each row is walked three times: its max, then its exps (summed; for
 * softmax also kept in the worker's row of ws), then its output, y = e/S
 * or (x - M) - log S. The first two walks are arithmetic on a row in
 * cache; the third only moves memory. Done one after the other, the
 * memory system would idle through the exps and the arithmetic units
 * through the output. So the output walk of row r is done inside the
 * exps walk of row r + 1, 16 columns per 16: its loads and (for large
 * outputs, streamed) stores then go out while the exps are computed, and
 * the next row is prefetched in the same loop, so the max walk finds it
 * in cache.
 *
 * Softmax's exps need somewhere to wait for their sum: ws, one row per
 * worker, which stays in cache. Writing them into y instead would make
 * every line of y travel three times (read for ownership, written back,
 * reread to scale) when y is larger than the cache. One row of ws holds
 * both the pending row's exps and the current row's: at column j the
 * pending row is read at head + LEAD + j >= j before the current row
 * writes j, and its first head + LEAD columns are written before the walk
 * starts.
 *
 * LEAD puts the pending row's loads and stores 16 columns ahead of the
 * current row's (in rows of 256 columns or more; shorter rows would lose
 * more to writing those columns up front). Measured, not derived: with
 * no lead, softmax at 4096 x 1024 (in cache) is 6 % slower, which fits
 * the CPU holding back loads whose address matches a pending store's in
 * the low bits; with 64 columns, the streamed 512 x 50257 case is a fifth
 * slower; 16 is the best of both. */
#define LEAD 16

/* One term exp(x_j - max): flushed (eo_v8_exp_neg) when it is kept as a
 * probability; when log_softmax only adds it up, eo_v8_exp_sum (one
 * reduction step fewer, simd.h), saturated. In a narrow row (simd.h:
 * every x_j - max is above the flush) neither the flush nor the clamp is
 * needed: the same bits without them. `how` is a constant after
 * inlining. */
enum { TERM_SUM, TERM_FLUSH, TERM_NARROW, TERM_NARROW_SUM };
EO_V8_INLINE __m256 row_term(__m256 d, int how)
{
    return how == TERM_NARROW       ? eo_v8_exp_clamped(d)
           : how == TERM_NARROW_SUM ? eo_v8_exp_sum_clamped(d)
           : how == TERM_FLUSH      ? eo_v8_exp_neg(d)
                                    : eo_v8_exp_sum(d);
}
#ifdef EO_AVX512
EO_V8_INLINE __m512 row_term16(__m512 d, int how)
{
    return how == TERM_NARROW       ? eo_v16_exp_clamped(d)
           : how == TERM_NARROW_SUM ? eo_v16_exp_sum_clamped(d)
           : how == TERM_FLUSH      ? eo_v16_exp_neg(d)
                                    : eo_v16_exp_sum(d);
}
#endif
typedef struct out_row {
    const float *src; /* softmax: its exps (ws); log_softmax: its x */
    float *y;         /* NULL: no row pending */
    __m256 a, b;      /* y = src * a, or (src - a) - b */
    int64_t head;     /* columns before y's first 32-byte boundary (0 unless streaming) */
    int64_t done;     /* [head, done) written */
} out_row;

static inline __m256 out8(int log, __m256 v, __m256 a, __m256 b)
{
    return log ? _mm256_sub_ps(_mm256_sub_ps(v, a), b) : _mm256_mul_ps(v, a);
}

/* Write columns [from, to) of the pending row: vectors in `mode` (1 or
 * EO_V8_STREAM, which needs y + from aligned), the last partial one
 * masked. */
EO_V8_INLINE void out_span(int log, const out_row *o, int64_t from, int64_t to, int mode)
{
    const __m256i all = _mm256_set1_epi32(-1);
    for (int64_t j = from; j < to; j += 8) {
        const int whole = j + 8 <= to;
        const __m256i m = whole ? all : eo_v8_mask(to - j);
        const __m256 v = out8(log, eo_v8_ld(o->src + j, whole, m, 0.0f), o->a, o->b);
        eo_v8_st(o->y + j, whole ? mode : 0, m, v);
    }
}

/* 16 more columns of the pending row, or all that is left if fewer. */
EO_V8_INLINE void out_step(int log, out_row *o, int64_t cols, int mode)
{
    const int64_t k = o->done;
    if (k + 16 <= cols) {
        const __m256 v0 = out8(log, _mm256_loadu_ps(o->src + k), o->a, o->b);
        const __m256 v1 = out8(log, _mm256_loadu_ps(o->src + k + 8), o->a, o->b);
        const __m256i all = _mm256_set1_epi32(-1); /* unused by whole-vector stores */
        eo_v8_st(o->y + k, mode, all, v0);
        eo_v8_st(o->y + k + 8, mode, all, v1);
        o->done = k + 16;
    } else if (k < cols) {
        out_span(log, o, k, cols, mode);
        o->done = cols;
    }
}

EO_V8_INLINE void finish(int log, out_row *o, int64_t cols, int mode)
{
    if (o->y)
        out_span(log, o, o->done, cols, mode);
    o->y = NULL;
}

/* The exps walk of one row over its whole 16-column steps: the terms
 * exp(x - M) (`how`: row_term), summed into *s0 and *s1 and, for softmax,
 * kept in e; each step also writes 16 columns of the pending row *o and
 * prefetches the next row. Returns the columns done. `log`, `how` and
 * `mode` are constants after inlining, so each copy carries only its own
 * exp. */
EO_V8_INLINE int64_t exps_walk(int log, int how, int mode, int64_t cols, const float *xr,
                               const float *next, float *e, out_row *o, float M, __m256 *s0,
                               __m256 *s1)
{
    int64_t j = 0;
#ifdef EO_AVX512
    /* The 16 exps of a step in one 16-lane vector (simd.h). */
    const __m512 vm16 = _mm512_set1_ps(M);
    __m512 s16 = _mm512_setzero_ps();
    for (; j + 16 <= cols; j += 16) {
        if (next)
            _mm_prefetch((const char *)(next + j), _MM_HINT_T1);
        if (o->y)
            out_step(log, o, cols, mode);
        const __m512 p = row_term16(_mm512_sub_ps(_mm512_loadu_ps(xr + j), vm16), how);
        if (!log)
            _mm512_storeu_ps(e + j, p);
        s16 = _mm512_add_ps(s16, p);
    }
    *s0 = eo_v16_lo(s16);
    *s1 = eo_v16_hi(s16);
#else
    const __m256 vm = _mm256_set1_ps(M);
    __m256 a0 = _mm256_setzero_ps(), a1 = a0;
    for (; j + 16 <= cols; j += 16) {
        if (next)
            _mm_prefetch((const char *)(next + j), _MM_HINT_T1);
        if (o->y)
            out_step(log, o, cols, mode);
        const __m256 d0 = _mm256_sub_ps(_mm256_loadu_ps(xr + j), vm);
        const __m256 d1 = _mm256_sub_ps(_mm256_loadu_ps(xr + j + 8), vm);
        const __m256 p0 = row_term(d0, how), p1 = row_term(d1, how);
        if (!log) {
            _mm256_storeu_ps(e + j, p0);
            _mm256_storeu_ps(e + j + 8, p1);
        }
        a0 = _mm256_add_ps(a0, p0);
        a1 = _mm256_add_ps(a1, p1);
    }
    *s0 = a0;
    *s1 = a1;
#endif
    return j;
}

/* Rows [r0, r1) of x into y; e: this worker's row of ws (softmax only).
 * log and mode (1, or EO_V8_STREAM for a streamed y) are constants in
 * each call below, so each copy's loop carries only its own work. */
EO_V8_INLINE void softmax_rows(int log, int64_t cols, const float *x, float *y, int64_t r0,
                               int64_t r1, float *e, int mode)
{
    out_row o = {0};
    for (int64_t r = r0; r < r1; r++) {
        const float *xr = x + r * cols, *next = r + 1 < r1 ? xr + cols : NULL;
        float *yr = y + r * cols;
        int narrow;
        const float M = eo_v8_row_max_narrow(xr, cols, &narrow);
        if (o.y) { /* before ws is overwritten */
            out_span(log, &o, 0, o.head, 1);
            out_span(log, &o, o.head, o.done, mode);
        }
        if (M == -INFINITY) {
            finish(log, &o, cols, mode);
            minus_inf_row(log, cols, xr, yr);
            continue;
        }
        /* The whole steps with the cheapest exp the row allows; the
         * tail's masked-off lanes are -inf, so it keeps the flush
         * (softmax) or the clamp (log_softmax). */
        const int how = log ? TERM_SUM : TERM_FLUSH;
        const int how_narrow = log ? TERM_NARROW_SUM : TERM_NARROW;
        const __m256 vm = _mm256_set1_ps(M);
        __m256 s0, s1;
        int64_t j = narrow ? exps_walk(log, how_narrow, mode, cols, xr, next, e, &o, M, &s0, &s1)
                           : exps_walk(log, how, mode, cols, xr, next, e, &o, M, &s0, &s1);
        finish(log, &o, cols, mode);
        for (; j < cols; j += 8) {
            const __m256i k = eo_v8_mask(cols - j);
            const __m256 p =
                row_term(_mm256_sub_ps(eo_v8_load_tail(xr + j, k, -INFINITY), vm), how);
            if (!log)
                _mm256_maskstore_ps(e + j, k, p);
            s0 = _mm256_add_ps(s0, p);
        }
        /* M is not -inf, so its own term makes S >= 1, or NaN when the
         * row holds a NaN (or a +inf): then 1/S and log S make every
         * output NaN, which is the result wanted. */
        const float S = eo_v8_hsum(_mm256_add_ps(s0, s1));
        o.src = log ? xr : e;
        o.y = yr;
        o.a = log ? vm : _mm256_set1_ps(1.0f / S);
        o.b = _mm256_set1_ps(log ? logf(S) : 0.0f);
        o.head = mode == EO_V8_STREAM ? eo_v8_stream_head(yr, cols) : 0;
        o.done = cols >= 16 * LEAD ? o.head + LEAD : o.head;
    }
    if (o.y) {
        out_span(log, &o, 0, o.head, 1);
        out_span(log, &o, o.head, cols, mode);
    }
    if (mode == EO_V8_STREAM)
        _mm_sfence();
}

/* ---- Longer rows, one at a time ----------------------------------------------
 * The max and the sum in one read (the online normaliser of simd.h), then
 * the output, 2.25 exps per element: a row this long would not stay in
 * cache for a second walk. Also softmax's fallback when it gets no ws. */

/* The write pass of a long row, 8 columns: y = (x - M) - ls, or
 * y = exp(x - M) * inv. Separate functions, so neither loop carries the
 * other's arithmetic (a select between the two would compute both). */
static inline void log_out8(const float *x, float *y, int64_t j, int whole, __m256i m, float M,
                            float ls)
{
    const __m256 d = _mm256_sub_ps(eo_v8_ld(x + j, whole, m, 0.0f), _mm256_set1_ps(M));
    eo_v8_st(y + j, whole, m, _mm256_sub_ps(d, _mm256_set1_ps(ls)));
}

static inline void exp_out8(const float *x, float *y, int64_t j, int whole, __m256i m, float M,
                            float inv)
{
    const __m256 d = _mm256_sub_ps(eo_v8_ld(x + j, whole, m, 0.0f), _mm256_set1_ps(M));
    eo_v8_st(y + j, whole, m, _mm256_mul_ps(eo_v8_exp_neg(d), _mm256_set1_ps(inv)));
}

static void softmax_row(int log, int64_t cols, const float *x, float *y, const float *next)
{
    float M, S;
    eo_v8_row_max_sumexp(x, cols, &M, &S, next);
    if (S != S) { /* a NaN in the row (simd.h) */
        nan_row(cols, y);
        return;
    }
    if (!(S > 0.0f)) {
        empty_row(log, cols, y);
        return;
    }
    const int64_t body = cols - cols % 8;
    const __m256i all = _mm256_set1_epi32(-1), tail = eo_v8_mask(cols % 8);
    if (log) {
        /* (x - M) - log S, not x - (M + log S), keeps the digits of the
         * entries near the max. */
        const float ls = logf(S);
        for (int64_t j = 0; j < body; j += 8)
            log_out8(x, y, j, 1, all, M, ls);
        if (body < cols)
            log_out8(x, y, body, 0, tail, M, ls);
    } else {
        const float inv = 1.0f / S;
        for (int64_t j = 0; j < body; j += 8)
            exp_out8(x, y, j, 1, all, M, inv);
        if (body < cols)
            exp_out8(x, y, body, 0, tail, M, inv);
    }
}

/* dx += y (dy - s) (softmax) or dy - exp(y) s (log_softmax), for 8
 * columns. An entry whose input was -inf (y = -inf, exp(y) = 0) gets dy,
 * as in PyTorch; only a row with no mass at all gets nothing, and that is
 * decided per row by the caller. */
static inline void smb_dx8(int log, int set, const float *y, const float *dy, float *dx, int64_t j,
                           int whole, __m256i m, __m256 s)
{
    const __m256 yv = eo_v8_ld(y + j, whole, m, 0.0f), g = eo_v8_ld(dy + j, whole, m, 0.0f);
    const __m256 d = set ? _mm256_setzero_ps() : eo_v8_ld(dx + j, whole, m, 0.0f);
    __m256 r;
    if (log) {
        r = _mm256_add_ps(d, _mm256_fnmadd_ps(eo_v8_exp_neg(yv), s, g));
    } else {
        r = _mm256_fmadd_ps(yv, _mm256_sub_ps(g, s), d);
    }
    eo_v8_st(dx + j, whole, m, r);
}

/* One row of the backward: the sum s (a walk over dy and y, which reads
 * them from memory), then dx (a second walk, which finds this row's y
 * and dy in cache and reads and writes dx). In the second walk memory
 * would carry only dx, so the walk also asks for the next row's y and dy
 * (nexty, nextdy), a cache line of each per 16 columns; the sum walk that
 * follows then finds them in cache, and memory stays busy through both
 * walks instead of waiting on the sum walk's loads. Only when y, dy and
 * dx together are too large for the cache (EO_STREAM_MIN_BYTES): in
 * cache the prefetches are pure overhead. At 4096 x 1024 and 512 x 50257
 * (48 and 309 MiB) it measured 1.15-1.18x faster on one thread (noisy
 * shared machine, same-run ratios); the prefetch changes no result.
 * s = sum dy*y for softmax, sum dy for log_softmax; lanes past the end
 * load 0 and add 0. log_softmax's sum walk also reads y, to find a row
 * with no mass (every y -inf: no entry is "live"), whose dx gets nothing
 * (no_mass_grad); y then comes from memory in this walk instead of the
 * next, the same traffic. */
static void softmax_backward_row(int log, int set, int64_t cols, const float *y, const float *dy,
                                 float *dx, const float *nexty, const float *nextdy)
{
    const int64_t body = cols - cols % 8;
    const __m256i all = _mm256_set1_epi32(-1), tail = eo_v8_mask(cols % 8);
    const __m256 ninf = _mm256_set1_ps(-INFINITY);
    __m256 acc0 = _mm256_setzero_ps(), acc1 = _mm256_setzero_ps(), live = _mm256_setzero_ps();
    int64_t j = 0;
    for (; j + 16 <= body; j += 16) {
        const __m256 g0 = _mm256_loadu_ps(dy + j), g1 = _mm256_loadu_ps(dy + j + 8);
        const __m256 y0 = _mm256_loadu_ps(y + j), y1 = _mm256_loadu_ps(y + j + 8);
        if (log) {
            acc0 = _mm256_add_ps(acc0, g0);
            acc1 = _mm256_add_ps(acc1, g1);
            live = _mm256_or_ps(live, _mm256_or_ps(_mm256_cmp_ps(y0, ninf, _CMP_NEQ_UQ),
                                                   _mm256_cmp_ps(y1, ninf, _CMP_NEQ_UQ)));
        } else {
            acc0 = _mm256_fmadd_ps(g0, y0, acc0);
            acc1 = _mm256_fmadd_ps(g1, y1, acc1);
        }
    }
    for (; j < cols; j += 8) {
        const int whole = j + 8 <= cols;
        const __m256 g = eo_v8_ld(dy + j, whole, tail, 0.0f);
        const __m256 yv = eo_v8_ld(y + j, whole, tail, log ? -INFINITY : 0.0f);
        if (log) {
            acc0 = _mm256_add_ps(acc0, g);
            live = _mm256_or_ps(live, _mm256_cmp_ps(yv, ninf, _CMP_NEQ_UQ));
        } else {
            acc0 = _mm256_fmadd_ps(g, yv, acc0);
        }
    }
    if (log && _mm256_movemask_ps(live) == 0) {
        no_mass_grad(set, cols, dx);
        return;
    }
    const __m256 s = _mm256_set1_ps(eo_v8_hsum(_mm256_add_ps(acc0, acc1)));
    if (set && nexty) {
        /* A fresh dx too large for the cache is not read again soon:
         * streamed past the cache from its first 32-byte boundary on, it
         * costs one stream of memory traffic instead of two (the read
         * for ownership a plain store makes). The values are the same. */
        const int64_t h = eo_v8_stream_head(dx, cols);
        if (h > 0)
            smb_dx8(log, 1, y, dy, dx, 0, 0, eo_v8_mask(h), s);
        for (j = h; j + 8 <= cols; j += 8) {
            if ((j - h) % 16 == 0) {
                _mm_prefetch((const char *)(nexty + j), _MM_HINT_T0);
                _mm_prefetch((const char *)(nextdy + j), _MM_HINT_T0);
            }
            smb_dx8(log, 1, y, dy, dx, j, EO_V8_STREAM, all, s);
        }
        if (j < cols)
            smb_dx8(log, 1, y, dy, dx, j, 0, eo_v8_mask(cols - j), s);
        return;
    }
    for (j = 0; j < body; j += 8) {
        if (nexty && j % 16 == 0) {
            _mm_prefetch((const char *)(nexty + j), _MM_HINT_T0);
            _mm_prefetch((const char *)(nextdy + j), _MM_HINT_T0);
        }
        smb_dx8(log, set, y, dy, dx, j, 1, all, s);
    }
    if (body < cols)
        smb_dx8(log, set, y, dy, dx, body, 0, tail, s);
}
#else
static void softmax_row(int log, int64_t cols, const float *x, float *y, const float *next)
{
    (void)next; /* the scalar path leaves prefetching to the hardware */
    float M = -INFINITY;
    for (int64_t j = 0; j < cols; j++)
        M = x[j] > M ? x[j] : M;
    if (M == -INFINITY) {
        minus_inf_row(log, cols, x, y);
        return;
    }
    /* A NaN elsewhere makes S, and so the whole row, NaN by itself. */
    eo_sum8 acc;
    eo_sum8_init(&acc);
    if (log) {
        for (int64_t j = 0; j < cols; j++)
            eo_sum8_add(&acc, j, expf(x[j] - M));
        const float ls = logf(eo_sum8_total(&acc));
        for (int64_t j = 0; j < cols; j++)
            y[j] = (x[j] - M) - ls;
    } else {
        for (int64_t j = 0; j < cols; j++) {
            y[j] = expf(x[j] - M);
            eo_sum8_add(&acc, j, y[j]);
        }
        const float inv = 1.0f / eo_sum8_total(&acc);
        for (int64_t j = 0; j < cols; j++)
            y[j] *= inv;
    }
}

static void softmax_backward_row(int log, int set, int64_t cols, const float *y, const float *dy,
                                 float *dx, const float *nexty, const float *nextdy)
{
    (void)nexty, (void)nextdy; /* the scalar path leaves prefetching to the hardware */
    eo_sum8 acc;
    eo_sum8_init(&acc);
    int live = 0; /* log_softmax: an entry that is not -inf (see the AVX2 path) */
    for (int64_t j = 0; j < cols; j++) {
        eo_sum8_add(&acc, j, log ? dy[j] : dy[j] * y[j]);
        live |= !(y[j] == -INFINITY);
    }
    if (log && !live) {
        no_mass_grad(set, cols, dx);
        return;
    }
    const float s = eo_sum8_total(&acc);
    for (int64_t j = 0; j < cols; j++) {
        const float d = set ? 0.0f : dx[j]; /* set: +0, as an add into zeros */
        if (log)
            dx[j] = d + (dy[j] - expf(y[j]) * s); /* -inf: exp 0, so dy */
        else
            dx[j] = d + y[j] * (dy[j] - s);
    }
}
#endif

static void softmax_body(void *arg, int64_t r0, int64_t r1, int worker)
{
    const softmax_args *a = arg;
#ifdef EO_AVX2
    if (a->cols <= EO_ROW_CACHED && (a->log || a->ws)) {
        float *e = a->log ? NULL : a->ws + (int64_t)worker * ws_stride(a->cols);
        if (a->log && a->stream)
            softmax_rows(1, a->cols, a->x, a->out, r0, r1, e, EO_V8_STREAM);
        else if (a->log)
            softmax_rows(1, a->cols, a->x, a->out, r0, r1, e, 1);
        else if (a->stream)
            softmax_rows(0, a->cols, a->x, a->out, r0, r1, e, EO_V8_STREAM);
        else
            softmax_rows(0, a->cols, a->x, a->out, r0, r1, e, 1);
        return;
    }
#else
    (void)worker;
#endif
    for (int64_t r = r0; r < r1; r++)
        softmax_row(a->log, a->cols, a->x + r * a->cols, a->out + r * a->cols,
                    r + 1 < r1 ? a->x + (r + 1) * a->cols : NULL);
}

static void softmax_backward_body(void *arg, int64_t r0, int64_t r1, int worker)
{
    (void)worker;
    const softmax_args *a = arg;
    for (int64_t r = r0; r < r1; r++) {
        const int more = a->stream && r + 1 < r1;
        softmax_backward_row(a->log, a->set, a->cols, a->y + r * a->cols, a->dy + r * a->cols,
                             a->out + r * a->cols, more ? a->y + (r + 1) * a->cols : NULL,
                             more ? a->dy + (r + 1) * a->cols : NULL);
    }
#ifdef EO_AVX2
    if (a->set && a->stream)
        _mm_sfence(); /* the streamed stores are visible before the call returns */
#endif
}

size_t eo_k_softmax_ws(int log, int64_t rows, int64_t cols, int nthreads)
{
    (void)rows;
#ifdef EO_AVX2
    if (!log && cols <= EO_ROW_CACHED)
        return (size_t)(nthreads > 1 ? nthreads : 1) * (size_t)ws_stride(cols) * sizeof(float);
#else
    (void)log, (void)cols, (void)nthreads;
#endif
    return 0;
}

void eo_k_softmax(int log, int64_t rows, int64_t cols, const float *x, float *y, void *ws,
                  const eo_exec *ex)
{
    const eo_par *par = eo_exec_par(ex);
    softmax_args a = {log, cols, x, NULL, NULL, y, ws, 0, 0};
#ifdef EO_AVX2
    a.stream = eo_v8_stream_worth(rows * cols);
#endif
    eo_par_for(eo_par_if(par, rows * cols), rows, softmax_body, &a);
}

static void softmax_backward(int log, int set, int64_t rows, int64_t cols, const float *y,
                             const float *dy, float *dx, const eo_exec *ex)
{
    const eo_par *par = eo_exec_par(ex);
    softmax_args a = {log, cols, NULL, y, dy, dx, NULL, 0, set};
#ifdef EO_AVX2
    a.stream = eo_v8_stream_worth(3 * rows * cols); /* here: prefetch the next rows */
#endif
    eo_par_for(eo_par_if(par, rows * cols), rows, softmax_backward_body, &a);
}

void eo_k_softmax_backward(int log, int64_t rows, int64_t cols, const float *y, const float *dy,
                           float *dx, const eo_exec *ex)
{
    softmax_backward(log, 0, rows, cols, y, dy, dx, ex);
}

void eo_k_softmax_backward_set(int log, int64_t rows, int64_t cols, const float *y,
                               const float *dy, float *dx, const eo_exec *ex)
{
    softmax_backward(log, 1, rows, cols, y, dy, dx, ex);
}
