/* tools/ptxsim/alu.c — what one thread computes for one arithmetic,
 * logic, comparison or conversion instruction.
 *
 * Kept apart from the executor because this part has nothing to do with
 * warps, memory or checks: values come in as raw 64-bit register bits
 * (already narrowed and sign- or zero-extended to the instruction's type
 * by the executor), and the result goes out as raw bits. Someone checking
 * "does the interpreter round cvt.rni like the hardware?" reads only this
 * file.
 *
 * Approximate instructions (ex2.approx, sin.approx, ...) use the C
 * library's accurate functions: tests compare against CPU references with
 * a tolerance anyway, and an interpreter that is *more* accurate than the
 * GPU cannot hide a bug that the GPU would show. */
#include <fenv.h>
#include <math.h>
#include <string.h>
#include "tools/ptxsim/alu.h"

static float f32(uint64_t v)
{
    uint32_t u = (uint32_t)v;
    float f;
    memcpy(&f, &u, 4);
    return f;
}
static double f64(uint64_t v)
{
    double d;
    memcpy(&d, &v, 8);
    return d;
}
static uint64_t bits32(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}
static uint64_t bits64(double d)
{
    uint64_t u;
    memcpy(&u, &d, 8);
    return u;
}

/* .ftz: subnormal f32 inputs and results become zero of the same sign. */
static float ftz(float x, int on)
{
    if (on && fpclassify(x) == FP_SUBNORMAL)
        return copysignf(0.0f, x);
    return x;
}

int px_src_type(const px_insn *in, int i)
{
    switch (in->op) {
    case PX_OP_CVT: return in->t2;
    case PX_OP_CVTA: return PX_T_U64;
    case PX_OP_SHL: case PX_OP_SHR: return i == 2 ? PX_T_U32 : in->t1;
    case PX_OP_SETP: return i == 3 ? PX_T_PRED : in->t1;
    case PX_OP_SELP: return i == 3 ? PX_T_PRED : in->t1;
    case PX_OP_MAD:
        if ((in->flags & PX_F_WIDE) && i == 3)
            return px_wide_type(in->t1);
        return in->t1;
    case PX_OP_SHFL: return i == 1 ? PX_T_B32 : PX_T_U32;
    case PX_OP_VOTE: return i == 1 ? PX_T_PRED : PX_T_B32;
    case PX_OP_MMA: return i == 3 ? PX_T_F32 : PX_T_B32; /* a, b packed pairs; c f32 */
    default: return in->t1;
    }
}

int px_wide_type(int t)
{
    switch (t) {
    case PX_T_U16: return PX_T_U32;
    case PX_T_S16: return PX_T_S32;
    case PX_T_U32: return PX_T_U64;
    case PX_T_S32: return PX_T_S64;
    default: return t;
    }
}

int px_dst_type(const px_insn *in)
{
    switch (in->op) {
    case PX_OP_SETP: return PX_T_PRED;
    case PX_OP_POPC: case PX_OP_CLZ: return PX_T_U32;
    case PX_OP_CVTA: return PX_T_U64;
    case PX_OP_MMA: return PX_T_F32;
    case PX_OP_LDMATRIX: return PX_T_B32; /* each register: two 16-bit elements */
    case PX_OP_MUL: case PX_OP_MAD:
        return (in->flags & PX_F_WIDE) ? px_wide_type(in->t1) : in->t1;
    default: return in->t1;
    }
}

/* High 64 bits of a 64x64 product, built from 32-bit halves because
 * ISO C has no 128-bit integer. */
static uint64_t mulhi_u64(uint64_t a, uint64_t b)
{
    uint64_t al = (uint32_t)a, ah = a >> 32, bl = (uint32_t)b, bh = b >> 32;
    uint64_t ll = al * bl, lh = al * bh, hl = ah * bl, hh = ah * bh;
    uint64_t mid = (ll >> 32) + (uint32_t)lh + (uint32_t)hl;
    return hh + (lh >> 32) + (hl >> 32) + (mid >> 32);
}
static uint64_t mulhi_s64(uint64_t a, uint64_t b)
{
    uint64_t h = mulhi_u64(a, b);
    if ((int64_t)a < 0)
        h -= b;
    if ((int64_t)b < 0)
        h -= a;
    return h;
}

/* Integer multiply by the .lo/.hi/.wide rule of the type's width. */
static uint64_t imul(const px_insn *in, uint64_t a, uint64_t b)
{
    unsigned bytes = px_type_bytes(in->t1);
    int sgn = px_type_is_signed(in->t1);
    if (in->flags & PX_F_WIDE)
        return a * b; /* inputs are already extended; the product fits */
    if (!(in->flags & PX_F_HI))
        return a * b;
    if (bytes == 8)
        return sgn ? mulhi_s64(a, b) : mulhi_u64(a, b);
    int64_t p = sgn ? (int64_t)a * (int64_t)b : (int64_t)(a * b);
    return (uint64_t)(sgn ? p >> (bytes * 8) : (int64_t)((uint64_t)p >> (bytes * 8)));
}

static int64_t sat_s32(int64_t v)
{
    return v > INT32_MAX ? INT32_MAX : v < INT32_MIN ? INT32_MIN : v;
}

static uint64_t fbin(const px_insn *in, uint64_t ua, uint64_t ub)
{
    int z = (in->flags & PX_F_FTZ) != 0;
    if (in->t1 == PX_T_F64) {
        double a = f64(ua), b = f64(ub), r = 0;
        switch (in->op) {
        case PX_OP_ADD: r = a + b; break;
        case PX_OP_SUB: r = a - b; break;
        case PX_OP_MUL: r = a * b; break;
        case PX_OP_DIV: r = a / b; break;
        case PX_OP_MIN: r = fmin(a, b); break;
        case PX_OP_MAX: r = fmax(a, b); break;
        default: break;
        }
        return bits64(r);
    }
    float a = ftz(f32(ua), z), b = ftz(f32(ub), z), r = 0;
    switch (in->op) {
    case PX_OP_ADD: r = a + b; break;
    case PX_OP_SUB: r = a - b; break;
    case PX_OP_MUL: r = a * b; break;
    case PX_OP_DIV: r = a / b; break;
    case PX_OP_MIN: r = fminf(a, b); break; /* NaN only if both are NaN, as in PTX */
    case PX_OP_MAX: r = fmaxf(a, b); break;
    default: break;
    }
    if (in->flags & PX_F_SAT)
        r = r != r ? 0.0f : r < 0.0f ? 0.0f : r > 1.0f ? 1.0f : r;
    return bits32(ftz(r, z));
}

static uint64_t funary(const px_insn *in, uint64_t ua)
{
    int z = (in->flags & PX_F_FTZ) != 0;
    if (in->t1 == PX_T_F64) {
        double a = f64(ua), r = 0;
        switch (in->op) {
        case PX_OP_ABS: r = fabs(a); break;
        case PX_OP_NEG: r = -a; break;
        case PX_OP_RCP: r = 1.0 / a; break;
        case PX_OP_SQRT: r = sqrt(a); break;
        case PX_OP_RSQRT: r = 1.0 / sqrt(a); break;
        default: r = a; break;
        }
        return bits64(r);
    }
    float a = ftz(f32(ua), z), r = 0;
    switch (in->op) {
    case PX_OP_ABS: r = fabsf(a); break;
    case PX_OP_NEG: r = -a; break;
    case PX_OP_RCP: r = 1.0f / a; break;
    case PX_OP_SQRT: r = sqrtf(a); break;
    case PX_OP_RSQRT: r = 1.0f / sqrtf(a); break;
    case PX_OP_EX2: r = exp2f(a); break;
    case PX_OP_LG2: r = log2f(a); break;
    case PX_OP_SIN: r = sinf(a); break;
    case PX_OP_COS: r = cosf(a); break;
    case PX_OP_TANH: r = tanhf(a); break;
    default: r = a; break;
    }
    return bits32(ftz(r, z));
}

/* Round a double to an integral value by a cvt rounding modifier. */
static double round_int(double x, int rnd)
{
    switch (rnd) {
    case PX_RND_RZI: return trunc(x);
    case PX_RND_RMI: return floor(x);
    case PX_RND_RPI: return ceil(x);
    default: return nearbyint(x); /* round half to even in the default mode */
    }
}

/* Float to integer: PTX saturates to the destination's range and turns
 * NaN into 0 (unlike C, where this is undefined). */
static uint64_t f_to_int(double x, int rnd, int dt)
{
    if (x != x)
        return 0;
    x = round_int(x, rnd);
    unsigned bits = px_type_bytes(dt) * 8;
    if (px_type_is_signed(dt)) {
        double lo = -ldexp(1.0, (int)bits - 1), hi = ldexp(1.0, (int)bits - 1);
        if (x < lo)
            return px_narrow((uint64_t)1 << (bits - 1), dt);
        if (x >= hi)
            return bits == 64 ? (uint64_t)INT64_MAX : (((uint64_t)1 << (bits - 1)) - 1);
        return px_narrow((uint64_t)(int64_t)x, dt);
    }
    double hi = ldexp(1.0, (int)bits);
    if (x <= 0)
        return 0;
    if (x >= hi)
        return bits == 64 ? UINT64_MAX : (((uint64_t)1 << bits) - 1);
    return (uint64_t)x;
}

/* ---- 16-bit floats -----------------------------------------------------------------
 * Formats (IEEE 754-2008 binary16; bfloat16 = the top half of a binary32):
 *   f16:  1 sign, 5 exponent (bias 15), 10 fraction bits; max 65504,
 *         smallest normal 2^-14, subnormals down to 2^-24;
 *   bf16: 1 sign, 8 exponent (bias 127), 7 fraction bits: the f32 range.
 * Both conversions from f32 work on the value, not on bit tricks: the
 * value's quantum (the spacing of the 16-bit format's numbers at its
 * magnitude, a power of two) divides |x| exactly in double, the quotient
 * is rounded to an integer by the mode, and the rounded value is encoded.
 * A quotient that rounds up to the next power of two simply encodes as
 * the next exponent. */
static double round_mode(double q, int rnd, int neg)
{
    switch (rnd) {
    case PX_RND_RZ: return trunc(q);
    case PX_RND_RP: return neg ? trunc(q) : ceil(q);  /* toward +inf */
    case PX_RND_RM: return neg ? ceil(q) : trunc(q);  /* toward -inf */
    default: return nearbyint(q); /* ties to even in the default mode */
    }
}

/* |x| rounded to a format with `man` fraction bits whose smallest normal
 * exponent is emin (subnormals below it share its quantum). */
static double round_to_format(double a, int man, int emin, int rnd, int neg)
{
    if (a == 0)
        return 0;
    int e;
    frexp(a, &e); /* a = f * 2^e, f in [0.5, 1): a's exponent is e - 1 */
    e -= 1;
    if (e < emin)
        e = emin;
    double quantum = ldexp(1.0, e - man);
    return round_mode(a / quantum, rnd, neg) * quantum;
}

uint16_t px_f32_to_f16(float x, int rnd)
{
    if (x != x)
        return 0x7fff;
    int neg = signbit(x) != 0;
    uint16_t sign = neg ? 0x8000 : 0;
    double a = fabs((double)x), r;
    if (isinf(x))
        return sign | 0x7c00;
    r = round_to_format(a, 10, -14, rnd, neg);
    if (r > 65504.0) { /* overflow: inf, unless the mode rounds toward zero here */
        int to_inf = rnd == PX_RND_RN || rnd == PX_RND_NONE || (rnd == PX_RND_RP && !neg) ||
                     (rnd == PX_RND_RM && neg);
        return sign | (to_inf ? 0x7c00 : 0x7bff);
    }
    if (r < ldexp(1.0, -14)) /* subnormal (or zero): a count of 2^-24 */
        return sign | (uint16_t)(r / ldexp(1.0, -24));
    int e;
    double f = frexp(r, &e); /* r = f * 2^e, f in [0.5, 1) */
    unsigned biased = (unsigned)(e - 1 + 15), frac = (unsigned)((f * 2.0 - 1.0) * 1024.0);
    return (uint16_t)(sign | biased << 10 | frac);
}

uint16_t px_f32_to_bf16(float x, int rnd)
{
    uint32_t u = (uint32_t)bits32(x);
    if (x != x)
        return 0x7fff;
    if (isinf(x))
        return (uint16_t)(u >> 16);
    int neg = signbit(x) != 0;
    double r = round_to_format(fabs((double)x), 7, -126, rnd, neg);
    if (r > 0x1.fep127) { /* past the largest finite bf16 */
        int to_inf = rnd == PX_RND_RN || rnd == PX_RND_NONE || (rnd == PX_RND_RP && !neg) ||
                     (rnd == PX_RND_RM && neg);
        return (uint16_t)((neg ? 0x8000 : 0) | (to_inf ? 0x7f80 : 0x7f7f));
    }
    /* every bf16 value is an f32 value: its top half is the encoding */
    float rf = (float)(neg ? -r : r);
    return (uint16_t)(bits32(rf) >> 16);
}

float px_f16_to_f32(uint16_t h)
{
    unsigned e = (h >> 10) & 31, m = h & 1023;
    double v = e == 0 ? ldexp((double)m, -24)
               : e == 31 ? (m ? NAN : INFINITY)
                         : ldexp(1024.0 + m, (int)e - 25);
    if (e == 31 && m) { /* keep the payload's top bits and quietness, as the hardware does */
        uint32_t u = (uint32_t)(h & 0x8000) << 16 | 0x7f800000u | (uint32_t)m << 13 | 0x400000u;
        return f32(u);
    }
    return (float)((h & 0x8000) ? -v : v);
}

float px_bf16_to_f32(uint16_t h) { return f32((uint64_t)h << 16); }

static uint64_t cvt(const px_insn *in, uint64_t a, uint64_t b)
{
    int dt = in->t1, st = in->t2;
    int sat = (in->flags & PX_F_SAT) != 0;
    /* 16-bit floats: to and from f32 only (parse.c refuses the rest).
     * The packed forms put the conversion of the FIRST source (a) in the
     * upper half, of the second (b) in the lower half (PTX ISA, cvt). */
    switch (dt) {
    case PX_T_F16: return px_f32_to_f16(f32(a), in->rnd);
    case PX_T_BF16: return px_f32_to_bf16(f32(a), in->rnd);
    case PX_T_F16X2:
        return (uint64_t)px_f32_to_f16(f32(a), in->rnd) << 16 | px_f32_to_f16(f32(b), in->rnd);
    case PX_T_BF16X2:
        return (uint64_t)px_f32_to_bf16(f32(a), in->rnd) << 16 | px_f32_to_bf16(f32(b), in->rnd);
    default: break;
    }
    if (st == PX_T_F16)
        return bits32(px_f16_to_f32((uint16_t)a));
    if (st == PX_T_BF16)
        return bits32(px_bf16_to_f32((uint16_t)a));
    if (px_type_is_float(st)) {
        double x = st == PX_T_F32 ? (double)f32(a) : f64(a);
        if (st == PX_T_F32 && (in->flags & PX_F_FTZ))
            x = ftz((float)x, 1);
        if (!px_type_is_float(dt))
            return f_to_int(x, in->rnd, dt);
        if (in->rnd >= PX_RND_RNI)
            x = round_int(x, in->rnd);
        if (sat)
            x = x != x ? 0.0 : x < 0 ? 0.0 : x > 1 ? 1.0 : x;
        return dt == PX_T_F32 ? bits32(ftz((float)x, (in->flags & PX_F_FTZ) != 0)) : bits64(x);
    }
    if (px_type_is_float(dt)) {
        double x = px_type_is_signed(st) ? (double)(int64_t)a : (double)a;
        /* An int64 can be inexact even in double; float(int) in C rounds
         * to nearest as .rn asks. */
        if (dt == PX_T_F32)
            return bits32(px_type_is_signed(st) ? (float)(int64_t)a : (float)a);
        return bits64(x);
    }
    /* Integer to integer: a was extended from the source type, so
     * narrowing to the destination is plain truncation; .sat clamps. */
    if (sat) {
        unsigned bits = px_type_bytes(dt) * 8;
        int64_t lo, hi;
        if (px_type_is_signed(dt)) {
            lo = -(int64_t)((uint64_t)1 << (bits - 1));
            hi = (int64_t)(((uint64_t)1 << (bits - 1)) - 1);
        } else {
            lo = 0;
            hi = bits == 64 ? INT64_MAX : (int64_t)(((uint64_t)1 << bits) - 1);
        }
        if (px_type_is_signed(st)) {
            int64_t v = (int64_t)a;
            return px_narrow((uint64_t)(v < lo ? lo : v > hi ? hi : v), dt);
        }
        return px_narrow(a > (uint64_t)hi ? (uint64_t)hi : a, dt);
    }
    return px_narrow(a, dt);
}

int px_compare(int cmp, int type, uint64_t a, uint64_t b)
{
    if (px_type_is_float(type)) {
        double x = type == PX_T_F32 ? f32(a) : f64(a);
        double y = type == PX_T_F32 ? f32(b) : f64(b);
        int nan = x != x || y != y;
        switch (cmp) {
        case PX_CMP_EQ: return !nan && x == y;
        case PX_CMP_NE: return !nan && x != y;
        case PX_CMP_LT: return !nan && x < y;
        case PX_CMP_LE: return !nan && x <= y;
        case PX_CMP_GT: return !nan && x > y;
        case PX_CMP_GE: return !nan && x >= y;
        case PX_CMP_EQU: return nan || x == y;
        case PX_CMP_NEU: return nan || x != y;
        case PX_CMP_LTU: return nan || x < y;
        case PX_CMP_LEU: return nan || x <= y;
        case PX_CMP_GTU: return nan || x > y;
        case PX_CMP_GEU: return nan || x >= y;
        case PX_CMP_NUM: return !nan;
        case PX_CMP_NAN: return nan;
        default: return 0;
        }
    }
    int64_t sa = (int64_t)a, sb = (int64_t)b;
    int sgn = px_type_is_signed(type);
    switch (cmp) {
    case PX_CMP_EQ: return a == b;
    case PX_CMP_NE: return a != b;
    case PX_CMP_LT: return sgn ? sa < sb : a < b;
    case PX_CMP_LE: return sgn ? sa <= sb : a <= b;
    case PX_CMP_GT: return sgn ? sa > sb : a > b;
    case PX_CMP_GE: return sgn ? sa >= sb : a >= b;
    case PX_CMP_LO: return a < b;
    case PX_CMP_LS: return a <= b;
    case PX_CMP_HI: return a > b;
    case PX_CMP_HS: return a >= b;
    default: return 0;
    }
}

static uint64_t alu(const px_insn *in, uint64_t a, uint64_t b, uint64_t c)
{
    int t = in->t1;
    int fl = px_type_is_float(t);
    int sgn = px_type_is_signed(t);
    unsigned bits = px_type_bytes(t) * 8;
    switch (in->op) {
    case PX_OP_MOV: return a;
    case PX_OP_CVT: return cvt(in, a, b);
    case PX_OP_ADD: case PX_OP_SUB:
        if (fl)
            return fbin(in, a, b);
        if ((in->flags & PX_F_SAT) && t == PX_T_S32)
            return (uint64_t)sat_s32(in->op == PX_OP_ADD ? (int64_t)a + (int64_t)b
                                                         : (int64_t)a - (int64_t)b);
        return in->op == PX_OP_ADD ? a + b : a - b;
    case PX_OP_MUL: return fl ? fbin(in, a, b) : imul(in, a, b);
    case PX_OP_MAD: case PX_OP_FMA:
        if (t == PX_T_F32) {
            int z = (in->flags & PX_F_FTZ) != 0;
            float r = ftz(fmaf(ftz(f32(a), z), ftz(f32(b), z), ftz(f32(c), z)), z);
            if (in->flags & PX_F_SAT)
                r = r != r ? 0.0f : r < 0.0f ? 0.0f : r > 1.0f ? 1.0f : r;
            return bits32(r);
        }
        if (t == PX_T_F64)
            return bits64(fma(f64(a), f64(b), f64(c)));
        return imul(in, a, b) + c;
    case PX_OP_DIV:
        if (fl)
            return fbin(in, a, b);
        /* Integer division by zero does not trap on the GPU; its result
         * is unspecified. All ones is what the hardware gives. */
        if (b == 0)
            return px_narrow(UINT64_MAX, t);
        if (sgn)
            return (int64_t)b == -1 ? (uint64_t)0 - a : (uint64_t)((int64_t)a / (int64_t)b);
        return a / b;
    case PX_OP_REM:
        if (b == 0)
            return a;
        if (sgn)
            return (int64_t)b == -1 ? 0 : (uint64_t)((int64_t)a % (int64_t)b);
        return a % b;
    case PX_OP_MIN: case PX_OP_MAX:
        if (fl)
            return fbin(in, a, b);
        if (sgn)
            return ((int64_t)a < (int64_t)b) == (in->op == PX_OP_MIN) ? a : b;
        return (a < b) == (in->op == PX_OP_MIN) ? a : b;
    case PX_OP_ABS:
        if (fl)
            return funary(in, a);
        return (int64_t)a < 0 ? (uint64_t)0 - a : a;
    case PX_OP_NEG:
        if (fl)
            return funary(in, a);
        return (uint64_t)0 - a;
    case PX_OP_RCP: case PX_OP_SQRT: case PX_OP_RSQRT: case PX_OP_EX2: case PX_OP_LG2:
    case PX_OP_SIN: case PX_OP_COS: case PX_OP_TANH:
        return funary(in, a);
    case PX_OP_AND: return a & b;
    case PX_OP_OR: return a | b;
    case PX_OP_XOR: return t == PX_T_PRED ? (a != b) : a ^ b;
    case PX_OP_NOT: return t == PX_T_PRED ? !a : ~a;
    case PX_OP_CNOT: return a == 0;
    case PX_OP_SHL:
        /* Shift amounts past the width give 0 (or all sign bits for an
         * arithmetic right shift), unlike C where they are undefined. */
        return b >= bits ? 0 : a << b;
    case PX_OP_SHR:
        if (sgn)
            return b >= bits ? ((int64_t)a < 0 ? UINT64_MAX : 0)
                             : (uint64_t)((int64_t)a >> b);
        return b >= bits ? 0 : px_narrow(a, t) >> b;
    case PX_OP_POPC: {
        uint64_t v = px_narrow(a, t == PX_T_B64 ? PX_T_U64 : PX_T_U32), n = 0;
        for (; v; v &= v - 1)
            n++;
        return n;
    }
    case PX_OP_CLZ: {
        uint64_t n = 0;
        for (int i = (int)bits - 1; i >= 0 && !((a >> i) & 1); i--)
            n++;
        return n;
    }
    case PX_OP_SELP: return c ? a : b;
    case PX_OP_COPYSIGN: /* the sign of a on the magnitude of b */
        if (t == PX_T_F32)
            return bits32(copysignf(f32(b), f32(a)));
        return bits64(copysign(f64(b), f64(a)));
    default: return 0;
    }
}

/* Directed rounding (.rz .rm .rp on float results: nvcc's expf uses
 * fma.rm) runs the operation under the matching C rounding mode. The
 * volatile copies pin the operation between the two fesetround calls,
 * which the compiler could otherwise move it across. */
uint64_t px_alu(const px_insn *in, uint64_t a, uint64_t b, uint64_t c)
{
    int mode;
    switch (in->rnd) {
    case PX_RND_RZ: mode = FE_TOWARDZERO; break;
    case PX_RND_RM: mode = FE_DOWNWARD; break;
    case PX_RND_RP: mode = FE_UPWARD; break;
    default: return alu(in, a, b, c);
    }
    volatile uint64_t va = a, vb = b, vc = c, vr;
    int old = fegetround();
    fesetround(mode);
    vr = alu(in, va, vb, vc);
    fesetround(old);
    return vr;
}

uint64_t px_atom_apply(int sub, int type, uint64_t old, uint64_t b, uint64_t c)
{
    int sgn = px_type_is_signed(type);
    switch (sub) {
    case PX_SUB_ADD:
        if (type == PX_T_F32)
            return bits32(f32(old) + f32(b));
        if (type == PX_T_F64)
            return bits64(f64(old) + f64(b));
        return old + b;
    case PX_SUB_MIN:
        if (type == PX_T_F32)
            return bits32(fminf(f32(old), f32(b)));
        return (sgn ? (int64_t)b < (int64_t)old : b < old) ? b : old;
    case PX_SUB_MAX:
        if (type == PX_T_F32)
            return bits32(fmaxf(f32(old), f32(b)));
        return (sgn ? (int64_t)b > (int64_t)old : b > old) ? b : old;
    case PX_SUB_INC: return old >= b ? 0 : old + 1;
    case PX_SUB_DEC: return (old == 0 || old > b) ? b : old - 1;
    case PX_SUB_CAS: return old == b ? c : old;
    case PX_SUB_EXCH: return b;
    case PX_SUB_AND: return old & b;
    case PX_SUB_OR: return old | b;
    case PX_SUB_XOR: return old ^ b;
    default: return old;
    }
}
