/* ops/cpu/unary.c — elementwise activations and their derivatives.
 *
 * Forward and backward of each function sit side by side. The backward
 * uses whichever of x and y makes the derivative cheapest: tanh, sigmoid
 * and exp are written in terms of their own output.
 *
 * GELU (tanh form) is rewritten with 0.5 (1 + tanh u) = sigmoid(2u):
 *   gelu(x)  = x * s,  s = 1 / (1 + exp(-2u)),  u = k (x + c x^3),
 *   gelu'(x) = s + 2 x s (1 - s) u',  u' = k (1 + 3 c x^2).
 * That needs one exp and no tanh, and avoids the cancellation of 1 + tanh u
 * for negative x, where the tanh form loses every digit. With AVX2 the
 * exp is simd.h's table form (eo_v8_exp_sat), and a forward output of
 * 32 MiB or more is written with streaming stores. tanh is built from
 * m = expm1(-2|x|) as -m / (2 + m), exact in relative terms near 0. Only
 * GELU_ERF and LOG stay on libm (erff, logf), on every path.
 *
 * The work is split into fixed blocks of 4096 elements for the thread
 * hook; the vector code handles each block's tail with masks, so every
 * element goes through the same arithmetic whatever the thread count. */
#include <math.h>
#include "ops/cpu/grain.h"
#include "ops/kernels.h"
#include "ops/cpu/simd.h"

#define BLOCK 4096
#define GELU_K 0.7978845608028654f /* sqrt(2/pi) */
#define GELU_C 0.044715f
#define INV_SQRT2 0.7071067811865476f
#define INV_SQRT_2PI 0.3989422804014327f

typedef struct unary_args {
    eo_unop op;
    int64_t n;
    const float *x, *y, *dy;
    float *out; /* y in the forward, dx in the backward */
    float alpha;
    int stream; /* forward: y is big enough to stream (simd.h) */
    int set;    /* backward: dx's old values are taken as +0 and not read */
} unary_args;

/* ---- scalar definitions (the portable path, and the reference for the
 * vector one) ------------------------------------------------------------ */
static inline float gelu_s(float x)
{
    return 1.0f / (1.0f + expf(-2.0f * GELU_K * x * (1.0f + GELU_C * x * x)));
}

/* Where s (1 - s) rounds to 0 (|x| above about 9), the derivative is s,
 * 1 or 0; computed, x * 0 * u' would be NaN once u' overflows (|x| >
 * 1e19). + (x - x) gives ±inf its NaN, as PyTorch does. */
static inline float gelu_d(float x)
{
    const float s = gelu_s(x), t = s * (1.0f - s), du = GELU_K * (1.0f + 3.0f * GELU_C * x * x);
    return (t == 0.0f ? s : s + 2.0f * x * t * du) + (x - x);
}

static inline float gelu_erf_d(float x)
{
    return 0.5f * (1.0f + erff(x * INV_SQRT2)) + x * INV_SQRT_2PI * expf(-0.5f * x * x);
}

/* The op is fixed for a whole call, so the switch sits outside the loops:
 * each case is a plain map the compiler can vectorise (relu, scale) or at
 * least run without a branch per element. */
#define EO_MAP(OP, STMT)                                                       \
    case OP:                                                                   \
        for (int64_t i = i0; i < i1; i++)                                      \
            STMT;                                                              \
        break

static void unary_scalar(const unary_args *a, int64_t i0, int64_t i1)
{
    const float *x = a->x, al = a->alpha;
    float *y = a->out;
    switch (a->op) {
    EO_MAP(EO_UN_RELU, y[i] = x[i] < 0.0f ? 0.0f : x[i]); /* NaN passes through */
    EO_MAP(EO_UN_GELU_TANH, y[i] = x[i] * gelu_s(x[i]));
    EO_MAP(EO_UN_GELU_ERF, y[i] = 0.5f * x[i] * (1.0f + erff(x[i] * INV_SQRT2)));
    EO_MAP(EO_UN_TANH, y[i] = tanhf(x[i]));
    EO_MAP(EO_UN_SIGMOID, y[i] = 1.0f / (1.0f + expf(-x[i])));
    EO_MAP(EO_UN_EXP, y[i] = expf(x[i]));
    EO_MAP(EO_UN_LOG, y[i] = logf(x[i]));
    EO_MAP(EO_UN_SCALE, y[i] = al * x[i]);
    default: break;
    }
}

/* dx += dy * f' (dx = +0 + dy * f' in set mode: the same value as an
 * add into zeros, -0 included). Each case reads only the operand its
 * derivative needs. */
#define DX0(i) (set ? 0.0f : dx[i])
static void unary_backward_scalar(const unary_args *a, int64_t i0, int64_t i1)
{
    const float *x = a->x, *y = a->y, *dy = a->dy, al = a->alpha;
    float *dx = a->out;
    const int set = a->set;
    switch (a->op) {
    EO_MAP(EO_UN_RELU, dx[i] = DX0(i) + (x[i] <= 0.0f ? 0.0f : dy[i])); /* NaN passes dy */
    EO_MAP(EO_UN_GELU_TANH, dx[i] = DX0(i) + dy[i] * gelu_d(x[i]));
    EO_MAP(EO_UN_GELU_ERF, dx[i] = DX0(i) + dy[i] * gelu_erf_d(x[i]));
    EO_MAP(EO_UN_TANH, dx[i] = DX0(i) + dy[i] * (1.0f - y[i] * y[i]));
    EO_MAP(EO_UN_SIGMOID, dx[i] = DX0(i) + dy[i] * (y[i] * (1.0f - y[i])));
    EO_MAP(EO_UN_EXP, dx[i] = DX0(i) + dy[i] * y[i]);
    EO_MAP(EO_UN_LOG, dx[i] = DX0(i) + dy[i] / x[i]);
    EO_MAP(EO_UN_SCALE, dx[i] = DX0(i) + dy[i] * al);
    default: break;
    }
}
#undef DX0
#undef EO_MAP

#ifdef EO_AVX2
/* num * sigmoid(z) = num / (1 + e), e = exp(-z), from negz = -z, with
 * -z clamped to 88 so e stays finite: below z = -88 the result is
 * num / 1.65e38 instead of smaller, an absolute error under 1e-38 |num|;
 * for z above 87.3, e saturates at about 1e-38 and 1 + e rounds to 1. e
 * is returned too: for num = 1 the backwards need s (1 - s) = e s^2, true
 * for either sign of z. One exp (eo_v8_exp_sat, the cheaper form) and one
 * division, whose rounding (half an ulp) is below what a refined
 * reciprocal estimate would give, at about the same speed (measured). */
EO_V8_INLINE __m256 sigmoid8(__m256 negz, __m256 num, __m256 *e_out)
{
    const __m256 e = eo_v8_exp_sat(_mm256_min_ps(_mm256_set1_ps(88.0f), negz)); /* NaN passes */
    *e_out = e;
    return _mm256_div_ps(num, _mm256_add_ps(_mm256_set1_ps(1.0f), e));
}

/* GELU's sigmoid, num * sigmoid(2u) with e = exp(-2u): -2u = -2k x (1 +
 * c x^2) is computed as x (-2k - 2kc x^2) with 8/ln2 folded into the two
 * constants, which is the argument eo_v8_exp_scaled takes (5 % faster
 * than going through sigmoid8, measured), clamped to its range, which is
 * sigmoid8's [-87.33, 88] before scaling. NaN passes both clamps.
 *
 * Past the clamps (|x| above about 10) the sigmoid is 1 or 0 to float
 * precision, and is made exactly that: below the upper clamp e would be
 * held at 1.6e38, so x / (1 + e) would leave -0.6 for x = -1e38 instead
 * of -0. *out (all ones or all zeros per lane) says where a clamp
 * bit, for the backward, whose correction term is 0 there. */
EO_V8_INLINE __m256 gelu_sigmoid8(__m256 x, __m256 num, __m256 *e_out, __m256 *out)
{
    const float k8 = 8.0f / 0.69314718f;
    const __m256 inner = _mm256_fmadd_ps(_mm256_set1_ps(-2.0f * GELU_K * GELU_C * k8),
                                         _mm256_mul_ps(x, x), _mm256_set1_ps(-2.0f * GELU_K * k8));
    const __m256 u0 = _mm256_mul_ps(x, inner), lo = _mm256_set1_ps(-1008.0f),
                 hi = _mm256_set1_ps(1015.0f);
    const __m256 u = _mm256_max_ps(lo, _mm256_min_ps(hi, u0));
    const __m256 e = eo_v8_exp_scaled(u);
    *e_out = e;
    const __m256 gone = _mm256_cmp_ps(u0, hi, _CMP_GT_OQ); /* sigmoid 0: num * 0 */
    *out = _mm256_or_ps(gone, _mm256_cmp_ps(u0, lo, _CMP_LT_OQ));
    const __m256 s = _mm256_div_ps(num, _mm256_add_ps(_mm256_set1_ps(1.0f), e));
    return _mm256_blendv_ps(s, _mm256_mul_ps(num, _mm256_setzero_ps()), gone);
}

/* tanh(x) = sign(x) (1 - e) / (1 + e) with e = exp(-2|x|), written with
 * m = expm1(-2|x|) as -m / (2 + m), so small |x| keeps its digits. */
static inline __m256 tanh8(__m256 x)
{
    const __m256 sign = _mm256_set1_ps(-0.0f);
    const __m256 m = eo_v8_expm1_neg(_mm256_mul_ps(_mm256_set1_ps(2.0f), _mm256_or_ps(x, sign)));
    const __m256 t = _mm256_div_ps(m, _mm256_sub_ps(_mm256_set1_ps(-2.0f), m)); /* tanh|x| */
    return _mm256_or_ps(_mm256_andnot_ps(sign, t), _mm256_and_ps(x, sign));
}

/* One vector of the forward (dy, y, dx unused) or of the backward. */
EO_V8_INLINE __m256 unary8(eo_unop op, int backward, __m256 x, __m256 y, __m256 dy, __m256 dx,
                            float alpha)
{
    const __m256 one = _mm256_set1_ps(1.0f), zero = _mm256_setzero_ps();
    __m256 e, out;
    if (!backward) {
        switch (op) {
        case EO_UN_RELU: return _mm256_max_ps(zero, x); /* NaN passes through */
        case EO_UN_GELU_TANH: return gelu_sigmoid8(x, x, &e, &out);
        case EO_UN_TANH: return tanh8(x);
        case EO_UN_SIGMOID: return sigmoid8(_mm256_xor_ps(x, _mm256_set1_ps(-0.0f)), one, &e);
        case EO_UN_EXP: return eo_v8_exp(x);
        default: return _mm256_mul_ps(_mm256_set1_ps(alpha), x); /* SCALE */
        }
    }
    __m256 d;
    switch (op) {
    case EO_UN_RELU:
        /* dy where not x <= 0: x > 0, and NaN, whose gradient PyTorch
         * passes (its relu backward tests the output, NaN <= 0 false). */
        return _mm256_add_ps(dx, _mm256_and_ps(_mm256_cmp_ps(x, zero, _CMP_NLE_UQ), dy));
    case EO_UN_GELU_TANH: {
        const __m256 s = gelu_sigmoid8(x, one, &e, &out);
        const __m256 s1s = _mm256_mul_ps(e, _mm256_mul_ps(s, s)); /* s (1 - s) */
        const __m256 du = _mm256_mul_ps(
            _mm256_set1_ps(2.0f * GELU_K),
            _mm256_fmadd_ps(_mm256_set1_ps(3.0f * GELU_C), _mm256_mul_ps(x, x), one));
        d = _mm256_fmadd_ps(_mm256_mul_ps(x, s1s), du, s); /* s + 2 x s(1-s) u' */
        /* Past the clamps the term 2 x s(1-s) u' is 0 (s(1-s) falls as
         * exp(-x^3), far faster than x^3 grows), and the clamped e would
         * make it grow like x^3 instead; + (x - x) then gives ±inf its
         * NaN, as in PyTorch. */
        d = _mm256_add_ps(_mm256_blendv_ps(d, s, out), _mm256_sub_ps(x, x));
        break;
    }
    case EO_UN_TANH: d = _mm256_fnmadd_ps(y, y, one); break;
    case EO_UN_SIGMOID: d = _mm256_mul_ps(y, _mm256_sub_ps(one, y)); break;
    case EO_UN_EXP: d = y; break;
    default: d = _mm256_set1_ps(alpha); break; /* SCALE */
    }
    return _mm256_fmadd_ps(dy, d, dx);
}

/* The vector loop over [i0, i1) for one op. Called below with op and
 * backward as constants, so each copy is compiled with its branches on
 * op folded away. Only the operands an op needs are loaded (backwards of
 * tanh, sigmoid and exp read y, relu and GELU x, scale neither). Whole
 * vectors use plain
 * loads; masked ones, slow on some CPUs, only finish the block. */
EO_V8_INLINE void v8_loop(eo_unop op, int backward, const unary_args *a, int64_t i0, int64_t i1)
{
    const int from_y = op == EO_UN_TANH || op == EO_UN_SIGMOID || op == EO_UN_EXP;
    const int need_x = !backward || op == EO_UN_RELU || op == EO_UN_GELU_TANH;
    const int need_y = backward && from_y;
    const __m256 z = _mm256_setzero_ps();
    /* A large forward output is streamed (simd.h) from its first 32-byte
     * boundary on; the elements before it go through the masked path. A
     * backward that adds reads dx anyway, so it gains nothing from
     * streaming; a _set backward writes a fresh dx and streams it too. */
    const int mode = (!backward || a->set) && a->stream ? EO_V8_STREAM : 1;
    const __m256i all = _mm256_set1_epi32(-1);
    int64_t i = i0;
    if (mode == EO_V8_STREAM) {
        const int64_t h = eo_v8_stream_head(a->out + i0, i1 - i0);
        if (h > 0) {
            const __m256i m = eo_v8_mask(h);
            const __m256 x = need_x ? _mm256_maskload_ps(a->x + i, m) : z;
            const __m256 y = need_y ? _mm256_maskload_ps(a->y + i, m) : z;
            const __m256 dy = backward ? _mm256_maskload_ps(a->dy + i, m) : z;
            _mm256_maskstore_ps(a->out + i, m, unary8(op, backward, x, y, dy, z, a->alpha));
            i += h;
        }
    }
    for (; i + 8 <= i1; i += 8) {
        const __m256 x = need_x ? _mm256_loadu_ps(a->x + i) : z;
        const __m256 y = need_y ? _mm256_loadu_ps(a->y + i) : z;
        const __m256 dy = backward ? _mm256_loadu_ps(a->dy + i) : z;
        const __m256 dx = backward && !a->set ? _mm256_loadu_ps(a->out + i) : z;
        eo_v8_st(a->out + i, mode, all, unary8(op, backward, x, y, dy, dx, a->alpha));
    }
    if (i < i1) {
        const __m256i m = eo_v8_mask(i1 - i);
        const __m256 x = need_x ? _mm256_maskload_ps(a->x + i, m) : z;
        const __m256 y = need_y ? _mm256_maskload_ps(a->y + i, m) : z;
        const __m256 dy = backward ? _mm256_maskload_ps(a->dy + i, m) : z;
        const __m256 dx = backward && !a->set ? _mm256_maskload_ps(a->out + i, m) : z;
        _mm256_maskstore_ps(a->out + i, m, unary8(op, backward, x, y, dy, dx, a->alpha));
    }
}

/* Every op but GELU_ERF and LOG (left to libm's erff and logf) has a
 * vector path; for those this returns 0 and the caller runs the scalar
 * loop. */
static int unary_v8(const unary_args *a, int64_t i0, int64_t i1, int backward)
{
#define EO_V8_CASE(OP)                                                         \
    case OP:                                                                   \
        if (backward)                                                          \
            v8_loop(OP, 1, a, i0, i1);                                         \
        else                                                                   \
            v8_loop(OP, 0, a, i0, i1);                                         \
        return 1
    switch (a->op) {
    EO_V8_CASE(EO_UN_RELU);
    EO_V8_CASE(EO_UN_GELU_TANH);
    EO_V8_CASE(EO_UN_TANH);
    EO_V8_CASE(EO_UN_SIGMOID);
    EO_V8_CASE(EO_UN_EXP);
    EO_V8_CASE(EO_UN_SCALE);
    default: return 0;
    }
#undef EO_V8_CASE
}
#endif

static void unary_body(void *arg, int64_t b0, int64_t b1, int worker)
{
    (void)worker;
    const unary_args *a = arg;
    const int64_t i0 = b0 * BLOCK, i1 = b1 * BLOCK < a->n ? b1 * BLOCK : a->n;
#ifdef EO_AVX2
    if (unary_v8(a, i0, i1, 0)) {
        if (a->stream)
            _mm_sfence();
        return;
    }
#endif
    unary_scalar(a, i0, i1);
}

static void unary_backward_body(void *arg, int64_t b0, int64_t b1, int worker)
{
    (void)worker;
    const unary_args *a = arg;
    const int64_t i0 = b0 * BLOCK, i1 = b1 * BLOCK < a->n ? b1 * BLOCK : a->n;
#ifdef EO_AVX2
    if (unary_v8(a, i0, i1, 1)) {
        if (a->set && a->stream)
            _mm_sfence();
        return;
    }
#endif
    unary_backward_scalar(a, i0, i1);
}

void eo_k_unary(eo_unop op, int64_t n, const float *x, float *y, float alpha, const eo_exec *ex)
{
    const eo_par *par = eo_exec_par(ex);
    unary_args a = {op, n, x, NULL, NULL, y, alpha, 0, 0};
#ifdef EO_AVX2
    a.stream = eo_v8_stream_worth(n);
#endif
    eo_par_for(eo_par_if(par, n), (n + BLOCK - 1) / BLOCK, unary_body, &a);
}

static void unary_backward(eo_unop op, int64_t n, const float *x, const float *y,
                           const float *dy, float *dx, float alpha, int set, const eo_exec *ex)
{
    const eo_par *par = eo_exec_par(ex);
    unary_args a = {op, n, x, y, dy, dx, alpha, 0, set};
#ifdef EO_AVX2
    a.stream = set && eo_v8_stream_worth(n);
#endif
    eo_par_for(eo_par_if(par, n), (n + BLOCK - 1) / BLOCK, unary_backward_body, &a);
}

void eo_k_unary_backward(eo_unop op, int64_t n, const float *x, const float *y, const float *dy,
                         float *dx, float alpha, const eo_exec *ex)
{
    unary_backward(op, n, x, y, dy, dx, alpha, 0, ex);
}

void eo_k_unary_backward_set(eo_unop op, int64_t n, const float *x, const float *y,
                             const float *dy, float *dx, float alpha, const eo_exec *ex)
{
    unary_backward(op, n, x, y, dy, dx, alpha, 1, ex);
}
