/* ops/cpu/attention.c — fused scaled dot-product attention, forward and
 * backward, without ever storing the [Tq, Tk] score matrix.
 *
 * The method is FlashAttention's (Dao et al., 2022; the loop order of
 * FlashAttention-2, Dao 2023). A task owns a block of BR query rows and
 * walks the keys in tiles of BC. For each tile it forms the scores
 * S = scale * q·kᵀ + mask, and folds them into the output with the online
 * softmax (Milakov & Gimelshein, 2018): each row keeps its running max m
 * and running sum l of exp(s - m); when a tile raises the max, what was
 * accumulated so far is rescaled by exp(m_old - m_new). After the last
 * tile, out = acc / l, and lse = m + log l is saved: one float per row is
 * all the backward needs to recompute any probability exactly,
 * p = exp(s - lse).
 *
 * The backward walks key tiles in the outer loop (so each key tile is
 * packed once) and query blocks inside, recomputing S and P from q, k and
 * lse, and with delta_i = sum_d dO_id O_id (which equals sum_j P_ij dP_ij)
 *   dV += Pᵀ dO,   dP = dO Vᵀ,   dS = P (dP - delta),
 *   dQ += scale dS K,   dK += scale dSᵀ Q,   dmask += dS.
 * Memory: a few tiles per worker (eo_k_attention_ws), against the
 * B·H·Tq·Tk floats twice over of the composed graph.
 *
 * Masking. A score of -inf (from the additive mask, the causal rule, or
 * the padding of the last tile) gets probability 0. A row that has seen
 * only -inf so far has m = -inf; its tile is skipped rather than computing
 * exp(-inf - -inf) = NaN, so a row masked everywhere ends with l = 0: its
 * output is 0, its lse -inf, and the backward gives it no gradient.
 * With the causal flag, key tiles wholly above the diagonal are never
 * visited, which halves the work. The diagonal ends at the bottom right:
 * with Tq < Tk (new queries against a cache of earlier keys) query i is
 * position i + Tk - Tq and sees the keys up to it.
 *
 * NaN. A NaN score (from q, k or the mask) among the keys a row sees
 * makes that row's output and lse NaN, as the composed softmax(q kᵀ +
 * mask) v of PyTorch gives, and its gradients NaN. The max is NaN-blind,
 * but the NaN's own exp joins l (the exp and its clamp keep NaN); a tile
 * whose max is -inf is skipped only when it holds no NaN. Keys hidden by
 * the causal flag are never looked at (as a masked_fill would hide them).
 *
 * Products. q·kᵀ for a tile is computed against a copy of the key tile
 * stored transposed ([D][BC]), so the inner loop broadcasts one q element
 * and multiplies it into BC contiguous keys (eight FMA lanes, no
 * horizontal sums). The other products (P·V, dSᵀ·Q, ...) accumulate rows
 * of D floats scaled by one probability at a time. D may be any size: the
 * last vector of a row is loaded and stored through a lane mask.
 *
 * Threads: the forward splits (batch·head, query block) tasks, the
 * backward (batch·head) tasks, so that the dk and dv of a head are written
 * by one thread only. Every task computes in a fixed order whoever runs
 * it, so results do not depend on the thread count at all. */
#include <math.h>
#include "ops/cpu/grain.h"
#include "ops/kernels.h"
#include "ops/cpu/simd.h"

#define BR 64 /* query rows per block */
#define BC 64 /* keys per tile */

static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }

/* dst[d][j] = src[j][d] for j < n, zero for n <= j < BC: a key (or
 * value) tile stored transposed, padded to a whole tile. */
static void pack_t(int64_t n, int64_t D, const float *src, float *dst)
{
    for (int64_t d = 0; d < D; d++) {
        float *row = dst + d * BC;
        for (int64_t j = 0; j < n; j++)
            row[j] = src[j * D + d];
        for (int64_t j = n; j < BC; j++)
            row[j] = 0.0f;
    }
}

#ifdef EO_AVX2
/* Half a tile row pair: S[r][h..h+32) and S[r+1][h..h+32) = A[r], A[r+1]
 * times Bt. Two rows share each load of Bt, so eight FMAs cost four
 * loads and two broadcasts; the eight sums stay in registers across D. */
static void dot_2x32(int64_t D, const float *a0, const float *a1, const float *Bt, float *s0,
                     float *s1, float scale)
{
    __m256 x0 = _mm256_setzero_ps(), x1 = x0, x2 = x0, x3 = x0;
    __m256 y0 = x0, y1 = x0, y2 = x0, y3 = x0;
    for (int64_t d = 0; d < D; d++) {
        const float *b = Bt + d * BC;
        const __m256 u = _mm256_set1_ps(a0[d]), w = _mm256_set1_ps(a1[d]);
        const __m256 b0 = _mm256_loadu_ps(b), b1 = _mm256_loadu_ps(b + 8);
        const __m256 b2 = _mm256_loadu_ps(b + 16), b3 = _mm256_loadu_ps(b + 24);
        x0 = _mm256_fmadd_ps(u, b0, x0);
        x1 = _mm256_fmadd_ps(u, b1, x1);
        x2 = _mm256_fmadd_ps(u, b2, x2);
        x3 = _mm256_fmadd_ps(u, b3, x3);
        y0 = _mm256_fmadd_ps(w, b0, y0);
        y1 = _mm256_fmadd_ps(w, b1, y1);
        y2 = _mm256_fmadd_ps(w, b2, y2);
        y3 = _mm256_fmadd_ps(w, b3, y3);
    }
    const __m256 k = _mm256_set1_ps(scale);
    _mm256_storeu_ps(s0, _mm256_mul_ps(x0, k));
    _mm256_storeu_ps(s0 + 8, _mm256_mul_ps(x1, k));
    _mm256_storeu_ps(s0 + 16, _mm256_mul_ps(x2, k));
    _mm256_storeu_ps(s0 + 24, _mm256_mul_ps(x3, k));
    _mm256_storeu_ps(s1, _mm256_mul_ps(y0, k));
    _mm256_storeu_ps(s1 + 8, _mm256_mul_ps(y1, k));
    _mm256_storeu_ps(s1 + 16, _mm256_mul_ps(y2, k));
    _mm256_storeu_ps(s1 + 24, _mm256_mul_ps(y3, k));
}

/* S[r][0..BC) = scale * A[r] · Bt for r < nr: A rows of D floats, Bt
 * [D][BC]. The scale multiplies the finished sum, as a separate scale op
 * would. An odd last row is paired with itself (computed twice, stored
 * once). */
static void tile_dot(int64_t nr, int64_t D, const float *A, const float *Bt, float *S,
                     float scale)
{
    float spare[32];
    for (int64_t r = 0; r < nr; r += 2) {
        const int two = r + 1 < nr;
        const float *a1 = A + (two ? r + 1 : r) * D;
        for (int h = 0; h < BC; h += 32)
            dot_2x32(D, A + r * D, a1, Bt + h, S + r * BC + h, two ? S + (r + 1) * BC + h : spare,
                     scale);
    }
}

static inline __m256 ld8(const float *p, __m256i k, int full)
{
    return full ? _mm256_loadu_ps(p) : _mm256_maskload_ps(p, k);
}

static inline void st8(float *p, __m256i k, int full, __m256 v)
{
    if (full)
        _mm256_storeu_ps(p, v);
    else
        _mm256_maskstore_ps(p, k, v);
}

/* Columns [d0, d0 + w) of two output rows c0, c1 (w <= 32; `full` when
 * w == 32, else through lane masks):
 *   c = alpha c + sum_t p[t*pts] X[t]   for each of the two rows. */
static inline void acc_2x32(int64_t nt, int64_t D, int64_t d0, int64_t w, int full,
                            const float *p0, const float *p1, int64_t pts, const float *X,
                            float *c0, float *c1, float a0, float a1)
{
    const __m256i k0 = eo_v8_mask(w), k1 = eo_v8_mask(w - 8);
    const __m256i k2 = eo_v8_mask(w - 16), k3 = eo_v8_mask(w - 24);
    const __m256 va = _mm256_set1_ps(a0), vb = _mm256_set1_ps(a1);
    c0 += d0, c1 += d0, X += d0;
    __m256 x0 = _mm256_mul_ps(va, ld8(c0, k0, full)), x1 = _mm256_mul_ps(va, ld8(c0 + 8, k1, full));
    __m256 x2 = _mm256_mul_ps(va, ld8(c0 + 16, k2, full)), x3 = _mm256_mul_ps(va, ld8(c0 + 24, k3, full));
    __m256 y0 = _mm256_mul_ps(vb, ld8(c1, k0, full)), y1 = _mm256_mul_ps(vb, ld8(c1 + 8, k1, full));
    __m256 y2 = _mm256_mul_ps(vb, ld8(c1 + 16, k2, full)), y3 = _mm256_mul_ps(vb, ld8(c1 + 24, k3, full));
    for (int64_t t = 0; t < nt; t++) {
        const float *x = X + t * D;
        const __m256 u = _mm256_set1_ps(p0[t * pts]), v = _mm256_set1_ps(p1[t * pts]);
        const __m256 b0 = ld8(x, k0, full), b1 = ld8(x + 8, k1, full);
        const __m256 b2 = ld8(x + 16, k2, full), b3 = ld8(x + 24, k3, full);
        x0 = _mm256_fmadd_ps(u, b0, x0);
        x1 = _mm256_fmadd_ps(u, b1, x1);
        x2 = _mm256_fmadd_ps(u, b2, x2);
        x3 = _mm256_fmadd_ps(u, b3, x3);
        y0 = _mm256_fmadd_ps(v, b0, y0);
        y1 = _mm256_fmadd_ps(v, b1, y1);
        y2 = _mm256_fmadd_ps(v, b2, y2);
        y3 = _mm256_fmadd_ps(v, b3, y3);
    }
    /* c1 == c0 for an unpaired last row: store it second, from the same
     * sums, so either order gives the same bits. */
    st8(c1, k0, full, y0);
    st8(c1 + 8, k1, full, y1);
    st8(c1 + 16, k2, full, y2);
    st8(c1 + 24, k3, full, y3);
    st8(c0, k0, full, x0);
    st8(c0 + 8, k1, full, x1);
    st8(c0 + 16, k2, full, x2);
    st8(c0 + 24, k3, full, x3);
}

/* For r < nr: C[r] = alpha[r] C[r] + sum_{t < nt} P[r*prs + t*pts] X[t]
 * (alpha NULL: 1), rows of D floats, two rows at a time so that each
 * load of X feeds two FMAs. An odd last row is paired with itself. */
static void acc_rows(int64_t nr, int64_t nt, int64_t D, const float *P, int64_t prs,
                     int64_t pts, const float *X, float *C, const float *alpha)
{
    for (int64_t r = 0; r < nr; r += 2) {
        const int64_t r1 = r + 1 < nr ? r + 1 : r;
        const float a0 = alpha ? alpha[r] : 1.0f, a1 = alpha ? alpha[r1] : 1.0f;
        for (int64_t d0 = 0; d0 < D; d0 += 32) {
            if (D - d0 >= 32)
                acc_2x32(nt, D, d0, 32, 1, P + r * prs, P + r1 * prs, pts, X, C + r * D,
                         C + r1 * D, a0, a1);
            else
                acc_2x32(nt, D, d0, D - d0, 0, P + r * prs, P + r1 * prs, pts, X, C + r * D,
                         C + r1 * D, a0, a1);
        }
    }
}

/* row[j] += m[j] for j < n (a mask contiguous along keys). */
static void add_row(int64_t n, float *row, const float *m)
{
    int64_t j = 0;
    for (; j + 8 <= n; j += 8)
        _mm256_storeu_ps(row + j, _mm256_add_ps(_mm256_loadu_ps(row + j), _mm256_loadu_ps(m + j)));
    for (; j < n; j++)
        row[j] += m[j];
}

/* Max of a whole tile row (BC floats). */
static float row_max(const float *row) { return eo_v8_row_max(row, BC); }

/* row[j] = exp(min(row[j] - sub, 0)) over a whole tile row; returns the
 * sum. The min only guards the backward against a rounding hair above
 * lse (exp of it would be a hair above 1 anyway); it keeps a NaN (min_ps
 * returns its second operand when either is NaN). */
static float row_exp(float *row, float sub)
{
    const __m256 m = _mm256_set1_ps(sub), z = _mm256_setzero_ps();
    __m256 s0 = z, s1 = z;
    for (int j = 0; j < BC; j += 16) {
        const __m256 a = eo_v8_exp_neg(_mm256_min_ps(z, _mm256_sub_ps(_mm256_loadu_ps(row + j), m)));
        const __m256 b = eo_v8_exp_neg(_mm256_min_ps(z, _mm256_sub_ps(_mm256_loadu_ps(row + j + 8), m)));
        _mm256_storeu_ps(row + j, a);
        _mm256_storeu_ps(row + j + 8, b);
        s0 = _mm256_add_ps(s0, a);
        s1 = _mm256_add_ps(s1, b);
    }
    return eo_v8_hsum(_mm256_add_ps(s0, s1));
}

/* ds[j] = p[j] (ds[j] - delta) scale over a whole tile row. */
static void row_ds(const float *p, float *ds, float delta, float scale)
{
    const __m256 dl = _mm256_set1_ps(delta), k = _mm256_set1_ps(scale);
    for (int j = 0; j < BC; j += 8)
        _mm256_storeu_ps(ds + j, _mm256_mul_ps(_mm256_mul_ps(_mm256_loadu_ps(p + j),
                                                             _mm256_sub_ps(_mm256_loadu_ps(ds + j), dl)),
                                               k));
}
#else
static void tile_dot(int64_t nr, int64_t D, const float *A, const float *Bt, float *S,
                     float scale)
{
    for (int64_t r = 0; r < nr; r++) {
        float *s = S + r * BC;
        for (int j = 0; j < BC; j++)
            s[j] = 0.0f;
        for (int64_t d = 0; d < D; d++) {
            const float a = A[r * D + d], *b = Bt + d * BC;
            for (int j = 0; j < BC; j++)
                s[j] += a * b[j];
        }
        for (int j = 0; j < BC; j++)
            s[j] *= scale;
    }
}

static void acc_rows(int64_t nr, int64_t nt, int64_t D, const float *P, int64_t prs,
                     int64_t pts, const float *X, float *C, const float *alpha)
{
    for (int64_t r = 0; r < nr; r++) {
        float *c = C + r * D;
        if (alpha)
            for (int64_t d = 0; d < D; d++)
                c[d] *= alpha[r];
        for (int64_t t = 0; t < nt; t++) {
            const float p = P[r * prs + t * pts], *x = X + t * D;
            for (int64_t d = 0; d < D; d++)
                c[d] += p * x[d];
        }
    }
}

static void add_row(int64_t n, float *row, const float *m)
{
    for (int64_t j = 0; j < n; j++)
        row[j] += m[j];
}

static float row_max(const float *row)
{
    float m = -INFINITY;
    for (int j = 0; j < BC; j++)
        m = row[j] > m ? row[j] : m;
    return m;
}

static float row_exp(float *row, float sub)
{
    float s = 0.0f;
    for (int j = 0; j < BC; j++) {
        const float x = row[j] - sub;
        row[j] = expf(x > 0.0f ? 0.0f : x); /* NaN stays NaN */
        s += row[j];
    }
    return s;
}

static void row_ds(const float *p, float *ds, float delta, float scale)
{
    for (int j = 0; j < BC; j++)
        ds[j] = p[j] * (ds[j] - delta) * scale;
}
#endif

/* What both passes share: sizes, inputs and the mask's strides. */
typedef struct attn_args {
    int64_t B, H, Tq, Tk, D, nqb;
    const float *q, *k, *v, *mask, *o, *lse, *dout;
    int64_t ms[4], dms[4];
    int causal;
    int64_t off; /* causal: query i sits at key position i + off, off = Tk - Tq */
    float scale;
    float *out, *lse_out, *dq, *dk, *dv, *dmask;
    float *ws;
    size_t ws_floats; /* per worker */
} attn_args;

/* Scores of one (query block, key tile) from the scaled products in S:
 * S += mask, -inf above the diagonal (causal) and in the padding columns
 * nj..BC of the last tile. */
static void finish_scores(const attn_args *a, const float *mbase, int64_t i0, int64_t nr,
                          int64_t j0, int64_t nj, float *S)
{
    for (int64_t r = 0; r < nr; r++) {
        float *row = S + r * BC;
        const int64_t i = i0 + r;
        if (mbase && a->ms[3] == 1) {
            add_row(nj, row, mbase + i * a->ms[2] + j0);
        } else if (mbase) {
            const float *m = mbase + i * a->ms[2] + j0 * a->ms[3];
            for (int64_t j = 0; j < nj; j++)
                row[j] += m[j * a->ms[3]];
        }
        /* Keys j0 + j visible to query i: j < i + off - j0 + 1 (causal), j < nj. */
        int64_t lim = a->causal ? min64(nj, i + a->off - j0 + 1) : nj;
        for (int64_t j = lim < 0 ? 0 : lim; j < BC; j++)
            row[j] = -INFINITY;
    }
}

/* Last key (exclusive) query rows [i0, i0 + nr) may see. */
static int64_t key_end(const attn_args *a, int64_t i0, int64_t nr)
{
    return a->causal ? min64(a->Tk, i0 + nr + a->off) : a->Tk;
}

/* ---- forward ------------------------------------------------------------ */

static void forward_block(const attn_args *a, int64_t bh, int64_t qb, float *ws)
{
    const int64_t D = a->D, Tq = a->Tq, Tk = a->Tk;
    const int64_t b = bh / a->H, h = bh % a->H;
    const int64_t i0 = qb * BR, nr = min64(BR, Tq - i0);
    const float *Q = a->q + (bh * Tq + i0) * D;
    const float *K = a->k + bh * Tk * D, *V = a->v + bh * Tk * D;
    const float *mbase = a->mask ? a->mask + b * a->ms[0] + h * a->ms[1] : NULL;
    float *O = a->out + (bh * Tq + i0) * D, *lse = a->lse_out + bh * Tq + i0;
    float *S = ws, *Kt = S + BR * BC, *m = Kt + D * BC, *l = m + BR, *alpha = l + BR;

    for (int64_t r = 0; r < nr * D; r++)
        O[r] = 0.0f;
    for (int64_t r = 0; r < nr; r++) {
        m[r] = -INFINITY;
        l[r] = 0.0f;
    }
    const int64_t kend = key_end(a, i0, nr);
    for (int64_t j0 = 0; j0 < kend; j0 += BC) {
        const int64_t nj = min64(BC, kend - j0);
        pack_t(nj, D, K + j0 * D, Kt);
        tile_dot(nr, D, Q, Kt, S, a->scale);
        finish_scores(a, mbase, i0, nr, j0, nj, S);
        for (int64_t r = 0; r < nr; r++) {
            float *row = S + r * BC;
            const float mx = row_max(row), mn = mx > m[r] ? mx : m[r];
            if (mn == -INFINITY && !eo_row_has_nan(row, BC)) { /* nothing visible yet */
                for (int j = 0; j < BC; j++)
                    row[j] = 0.0f;
                alpha[r] = 1.0f;
                continue;
            }
            /* A max of -inf here means a NaN among -infs: subtracting 0
             * gives it exp(NaN) = NaN, and every hidden key 0. */
            const float sub = mn == -INFINITY ? 0.0f : mn;
            alpha[r] = expf(m[r] - sub); /* 0 on the first visible tile */
            l[r] = l[r] * alpha[r] + row_exp(row, sub);
            m[r] = mn;
        }
        acc_rows(nr, nj, D, S, BC, 1, V + j0 * D, O, alpha);
    }
    for (int64_t r = 0; r < nr; r++) {
        if (l[r] == 0.0f) {
            lse[r] = -INFINITY; /* every key masked: output stays 0 */
        } else { /* l NaN (a NaN score): the row's output and lse are NaN */
            const float inv = 1.0f / l[r];
            for (int64_t d = 0; d < D; d++)
                O[r * D + d] *= inv;
            lse[r] = m[r] + logf(l[r]);
        }
    }
}

static void forward_body(void *arg, int64_t t0, int64_t t1, int worker)
{
    const attn_args *a = arg;
    for (int64_t t = t0; t < t1; t++) {
        const int64_t bh = t / a->nqb, k = t % a->nqb;
        /* Causal blocks grow with the row index; interleaving first and
         * last blocks gives each thread's contiguous chunk a fair share. */
        const int64_t qb = !a->causal ? k : (k % 2 == 0 ? k / 2 : a->nqb - 1 - k / 2);
        forward_block(a, bh, qb, a->ws + (size_t)worker * a->ws_floats);
    }
}

/* ---- backward ------------------------------------------------------------ */

static void backward_head(const attn_args *a, int64_t bh, float *ws)
{
    const int64_t D = a->D, Tq = a->Tq, Tk = a->Tk;
    const int64_t b = bh / a->H, h = bh % a->H;
    const float *Q = a->q + bh * Tq * D, *K = a->k + bh * Tk * D, *V = a->v + bh * Tk * D;
    const float *O = a->o + bh * Tq * D, *dO = a->dout + bh * Tq * D, *lse = a->lse + bh * Tq;
    const float *mbase = a->mask ? a->mask + b * a->ms[0] + h * a->ms[1] : NULL;
    float *dQ = a->dq ? a->dq + bh * Tq * D : NULL;
    float *dK = a->dk ? a->dk + bh * Tk * D : NULL, *dV = a->dv ? a->dv + bh * Tk * D : NULL;
    float *dM = a->dmask ? a->dmask + b * a->dms[0] + h * a->dms[1] : NULL;
    float *P = ws, *dS = P + BR * BC, *Kt = dS + BR * BC, *Vt = Kt + D * BC, *delta = Vt + D * BC;

    /* delta_i = sum_d dO_id O_id = sum_j P_ij dP_ij: the softmax's
     * correction term, one dot product per row instead of per tile. */
    for (int64_t i = 0; i < Tq; i++) {
        float s = 0.0f;
        for (int64_t d = 0; d < D; d++)
            s += dO[i * D + d] * O[i * D + d];
        delta[i] = s;
    }
    for (int64_t j0 = 0; j0 < Tk; j0 += BC) {
        const int64_t nj0 = min64(BC, Tk - j0);
        pack_t(nj0, D, K + j0 * D, Kt);
        pack_t(nj0, D, V + j0 * D, Vt);
        /* Causal: blocks whose last row is above this tile see none of it. */
        int64_t first = a->causal && j0 > a->off ? (j0 - a->off) / BR * BR : 0;
        for (int64_t i0 = first; i0 < Tq; i0 += BR) {
            const int64_t nr = min64(BR, Tq - i0), kend = key_end(a, i0, nr);
            if (kend <= j0)
                continue;
            const int64_t nj = min64(nj0, kend - j0);
            tile_dot(nr, D, Q + i0 * D, Kt, P, a->scale);
            finish_scores(a, mbase, i0, nr, j0, nj, P);
            for (int64_t r = 0; r < nr; r++) {
                float *row = P + r * BC;
                if (lse[i0 + r] == -INFINITY) { /* fully masked row: no gradient */
                    for (int j = 0; j < BC; j++)
                        row[j] = 0.0f;
                } else {
                    row_exp(row, lse[i0 + r]);
                }
            }
            if (dV) /* dV[t] += sum_r P[r][t] dO[r] */
                acc_rows(nj, nr, D, P, 1, BC, dO + i0 * D, dV + j0 * D, NULL);
            if (!dQ && !dK && !dM)
                continue;
            tile_dot(nr, D, dO + i0 * D, Vt, dS, 1.0f); /* dP */
            /* The scale joins dS here, once, rather than in dQ and dK;
             * the mask's gradient is dS before it. */
            for (int64_t r = 0; r < nr; r++)
                row_ds(P + r * BC, dS + r * BC, delta[i0 + r], dM ? 1.0f : a->scale);
            if (dM)
                for (int64_t r = 0; r < nr; r++) {
                    float *dm = dM + (i0 + r) * a->dms[2] + j0 * a->dms[3], *ds = dS + r * BC;
                    for (int64_t j = 0; j < nj; j++)
                        dm[j * a->dms[3]] += ds[j];
                    for (int j = 0; j < BC; j++)
                        ds[j] *= a->scale;
                }
            if (dQ)
                acc_rows(nr, nj, D, dS, BC, 1, K + j0 * D, dQ + i0 * D, NULL);
            if (dK)
                acc_rows(nj, nr, D, dS, 1, BC, Q + i0 * D, dK + j0 * D, NULL);
        }
    }
}

static void backward_body(void *arg, int64_t t0, int64_t t1, int worker)
{
    const attn_args *a = arg;
    for (int64_t bh = t0; bh < t1; bh++)
        backward_head(a, bh, a->ws + (size_t)worker * a->ws_floats);
}

/* ---- entry points ------------------------------------------------------------ */

/* Floats of scratch one worker needs (the larger of the two passes). */
static size_t ws_floats(int64_t Tq, int64_t D)
{
    const size_t fwd = BR * BC + (size_t)D * BC + 3 * BR;
    const size_t bwd = 2 * BR * BC + 2 * (size_t)D * BC + (size_t)Tq;
    return (fwd > bwd ? fwd : bwd) + 16; /* + a cache line between workers */
}

size_t eo_k_attention_ws(int64_t Tq, int64_t Tk, int64_t D, int nthreads)
{
    (void)Tk;
    return ws_floats(Tq, D) * sizeof(float) * (size_t)(nthreads > 1 ? nthreads : 1);
}

void eo_k_attention(int64_t B, int64_t H, int64_t Tq, int64_t Tk, int64_t D, const float *q,
                    const float *k, const float *v, const float *mask, const int64_t ms[4],
                    int causal, float scale, float *out, float *lse, void *ws,
                    const eo_exec *ex)
{
    const eo_par *par = eo_exec_par(ex);
    attn_args a = { 0 };
    a.B = B, a.H = H, a.Tq = Tq, a.Tk = Tk, a.D = D, a.nqb = (Tq + BR - 1) / BR;
    a.q = q, a.k = k, a.v = v, a.mask = mask;
    for (int i = 0; i < 4; i++)
        a.ms[i] = mask ? ms[i] : 0;
    a.causal = causal, a.scale = scale, a.off = causal ? Tk - Tq : 0;
    a.out = out, a.lse_out = lse;
    a.ws = ws, a.ws_floats = ws_floats(Tq, D);
    eo_par_for(eo_par_if(par, B * H * Tq * Tk * (D > 0 ? D : 1) / 8), B * H * a.nqb,
               forward_body, &a);
}

void eo_k_attention_backward(int64_t B, int64_t H, int64_t Tq, int64_t Tk, int64_t D,
                             const float *q, const float *k, const float *v, const float *mask,
                             const int64_t ms[4], int causal, float scale, const float *out,
                             const float *lse, const float *dout, float *dq, float *dk,
                             float *dv, float *dmask, const int64_t dms[4], void *ws,
                             const eo_exec *ex)
{
    const eo_par *par = eo_exec_par(ex);
    attn_args a = { 0 };
    a.B = B, a.H = H, a.Tq = Tq, a.Tk = Tk, a.D = D, a.nqb = (Tq + BR - 1) / BR;
    a.q = q, a.k = k, a.v = v, a.mask = mask, a.o = out, a.lse = lse, a.dout = dout;
    for (int i = 0; i < 4; i++) {
        a.ms[i] = mask ? ms[i] : 0;
        a.dms[i] = dmask ? dms[i] : 0;
    }
    a.causal = causal, a.scale = scale, a.off = causal ? Tk - Tq : 0;
    a.dq = dq, a.dk = dk, a.dv = dv, a.dmask = dmask;
    a.ws = ws, a.ws_floats = ws_floats(Tq, D);
    /* A mask gradient shared by several heads (or batch entries) would be
     * written by several tasks at once: then one thread does them all. */
    const int shared = dmask && ((B > 1 && dms[0] == 0) || (H > 1 && dms[1] == 0));
    eo_par_for(shared ? NULL : eo_par_if(par, B * H * Tq * Tk * (D > 0 ? D : 1) / 8), B * H,
               backward_body, &a);
}
