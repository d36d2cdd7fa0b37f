/* ops/cpu/binary.h — the per-element derivative of each binary op, shared
 * by the f32 backward (binary.c) and its 16-bit twin (binary16.c).
 *
 * The 16-bit backward must add exactly the terms the f32 backward adds,
 * in the same order, so that its result is the f32 result rounded once;
 * keeping one definition of each term is what guarantees the "exactly".
 * Nothing outside ops/cpu/ includes this header. */
#ifndef EO_OPS_CPU_BINARY_H
#define EO_OPS_CPU_BINARY_H

#include "ops/kernels.h"

/* Each gradient is its own pass: g += dout * d(out)/d(input). */
typedef enum eo_bin_grad {
    EO_BG_DOUT,     /* g += dout            (add: both sides; sub: left)   */
    EO_BG_NEG_DOUT, /* g -= dout            (sub: right)                   */
    EO_BG_MUL_B,    /* g += dout * b        (mul: left)                    */
    EO_BG_MUL_A,    /* g += dout * a        (mul: right)                   */
    EO_BG_DIV_B,    /* g += dout / b        (div: left)                    */
    EO_BG_DIV_AB,   /* g -= dout / b * a / b = dout * -a / b^2  (div: right) */
    EO_BG_SEL_GT,   /* g += dout where a > b, dout/2 where a == b, 0 where a < b,
                       dout when either is NaN (max: left; min: right) */
    EO_BG_SEL_LT    /* the same with a < b (max: right; min: left) */
} eo_bin_grad;

/* The pass that gives op's left (right = 0) or right input its gradient. */
static inline eo_bin_grad eo_bin_grad_of(eo_binop op, int right)
{
    static const eo_bin_grad left_of[EO_BIN_COUNT] = {EO_BG_DOUT,  EO_BG_DOUT,   EO_BG_MUL_B,
                                                      EO_BG_DIV_B, EO_BG_SEL_GT, EO_BG_SEL_LT};
    static const eo_bin_grad right_of[EO_BIN_COUNT] = {EO_BG_DOUT,   EO_BG_NEG_DOUT, EO_BG_MUL_A,
                                                       EO_BG_DIV_AB, EO_BG_SEL_LT,   EO_BG_SEL_GT};
    return right ? right_of[op] : left_of[op];
}

/* ADD and SUB never read a or b. */
static inline int eo_bin_uses_ab(eo_binop op)
{
    return op != EO_BIN_ADD && op != EO_BIN_SUB;
}

static inline float eo_bin_grad_term(eo_bin_grad k, float d, float a, float b)
{
    switch (k) {
    case EO_BG_DOUT: return d;
    case EO_BG_NEG_DOUT: return -d;
    case EO_BG_MUL_B: return d * b;
    case EO_BG_MUL_A: return d * a;
    case EO_BG_DIV_B: return d / b;
    /* PyTorch's rule for maximum/minimum: a tie splits dout in half; the
     * input not selected gets 0 (not 0 * dout), a NaN input gives both dout */
    case EO_BG_SEL_GT: return a < b ? 0.0f : a == b ? 0.5f * d : d;
    case EO_BG_SEL_LT: return a > b ? 0.0f : a == b ? 0.5f * d : d;
    default: return -(d / b) * (a / b); /* not d*a/(b*b): b*b overflows first */
    }
}

#endif
