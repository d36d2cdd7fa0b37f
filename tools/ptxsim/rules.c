/* tools/ptxsim/rules.c — PTX's rules on the decoded form (see rules.h).
 *
 * Sources: the PTX ISA document (each instruction's "PTX ISA Notes" and
 * "Target ISA Notes", the type-checking rules of its "Operand Type
 * Information" section, and the table of targets per ISA version), with
 * every rule below confirmed by running ptxas 13.0 on a kernel that
 * breaks it. Where the two could differ, ptxas wins: the point is that a
 * kernel the interpreter accepts is one the driver's JIT accepts too. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include "tools/cli/errbuf.h"
#include "tools/ptxsim/alu.h"
#include "tools/ptxsim/rules.h"

/* ---- targets ---------------------------------------------------------------- */

/* Each target with the first ISA version that knows it. */
static const struct {
    int sm, ptx;
} targets[] = {
    {20, 20}, {21, 20}, {30, 30}, {32, 40}, {35, 31}, {37, 41}, {50, 40}, {52, 41},
    {53, 42}, {60, 50}, {61, 50}, {62, 50}, {70, 60}, {72, 61}, {75, 63}, {80, 70},
    {86, 71}, {87, 74}, {89, 78}, {90, 78}, {100, 86}, {120, 87},
};

eo_status px_rules_target(int ptx, int sm, char *msg, size_t cap)
{
    for (size_t i = 0; i < sizeof targets / sizeof targets[0]; i++) {
        if (targets[i].sm != sm)
            continue;
        if (ptx < targets[i].ptx) {
            snprintf(msg, cap, "PTX .version %d.%d does not support .target sm_%d (it needs %d.%d)",
                     ptx / 10, ptx % 10, sm, targets[i].ptx / 10, targets[i].ptx % 10);
            return EO_ERR_FORMAT;
        }
        if (sm > EO_PX_SM_MAX) {
            snprintf(msg, cap, "unsupported: .target sm_%d is newer than the sm_%d the interpreter "
                     "models", sm, EO_PX_SM_MAX);
            return EO_ERR_UNSUPPORTED;
        }
        return EO_OK;
    }
    snprintf(msg, cap, "unknown .target sm_%d", sm);
    return EO_ERR_FORMAT;
}

/* ---- what each opcode takes ------------------------------------------------------ */

#define T(x) (1u << PX_T_##x)
#define TB (T(B16) | T(B32) | T(B64))
#define TU (T(U16) | T(U32) | T(U64))
#define TS (T(S16) | T(S32) | T(S64))
#define TF (T(F32) | T(F64))
#define T8 (T(B8) | T(U8) | T(S8))
#define TMEM (T8 | TB | TU | TS | TF)
#define TCVT (T(U8) | T(S8) | TU | TS | TF | T(F16) | T(BF16) | T(F16X2) | T(BF16X2))

/* The instruction types an opcode takes, and the ISA version (x10) and
 * target it first appeared in. Forms with rules of their own (atom and
 * red by operation, vote by mode, the .sync and memory-order variants)
 * are refined in requirement() and insn_types() below. */
static const struct oprule {
    const char *name;
    uint32_t types; /* 0: the opcode takes no type */
    uint8_t ptx, sm;
} oprules[PX_OP_COUNT] = {
    [PX_OP_LD] = {"ld", TMEM, 10, 10},          [PX_OP_ST] = {"st", TMEM, 10, 10},
    [PX_OP_MOV] = {"mov", T(PRED) | TB | TU | TS | TF, 10, 10},
    [PX_OP_CVTA] = {"cvta", T(U64), 20, 20},    [PX_OP_CVT] = {"cvt", TCVT, 10, 10},
    [PX_OP_ADD] = {"add", TU | TS | TF, 10, 10}, [PX_OP_SUB] = {"sub", TU | TS | TF, 10, 10},
    [PX_OP_MUL] = {"mul", TU | TS | TF, 10, 10}, [PX_OP_MAD] = {"mad", TU | TS | TF, 10, 10},
    [PX_OP_FMA] = {"fma", TF, 14, 13},          [PX_OP_DIV] = {"div", TU | TS | TF, 10, 10},
    [PX_OP_REM] = {"rem", TU | TS, 10, 10},     [PX_OP_MIN] = {"min", TU | TS | TF, 10, 10},
    [PX_OP_MAX] = {"max", TU | TS | TF, 10, 10}, [PX_OP_ABS] = {"abs", TS | TF, 10, 10},
    [PX_OP_NEG] = {"neg", TS | TF, 10, 10},     [PX_OP_RCP] = {"rcp", TF, 10, 10},
    [PX_OP_SQRT] = {"sqrt", TF, 10, 10},        [PX_OP_RSQRT] = {"rsqrt", TF, 10, 10},
    [PX_OP_EX2] = {"ex2", T(F32), 10, 10},      [PX_OP_LG2] = {"lg2", T(F32), 10, 10},
    [PX_OP_SIN] = {"sin", T(F32), 10, 10},      [PX_OP_COS] = {"cos", T(F32), 10, 10},
    [PX_OP_TANH] = {"tanh", T(F32), 70, 75},
    [PX_OP_AND] = {"and", T(PRED) | TB, 10, 10}, [PX_OP_OR] = {"or", T(PRED) | TB, 10, 10},
    [PX_OP_XOR] = {"xor", T(PRED) | TB, 10, 10}, [PX_OP_NOT] = {"not", T(PRED) | TB, 10, 10},
    [PX_OP_CNOT] = {"cnot", TB, 10, 10},        [PX_OP_SHL] = {"shl", TB, 10, 10},
    [PX_OP_SHR] = {"shr", TB | TU | TS, 10, 10}, [PX_OP_POPC] = {"popc", T(B32) | T(B64), 20, 20},
    [PX_OP_CLZ] = {"clz", T(B32) | T(B64), 20, 20}, [PX_OP_COPYSIGN] = {"copysign", TF, 20, 20},
    [PX_OP_SETP] = {"setp", TB | TU | TS | TF, 10, 10},
    [PX_OP_SELP] = {"selp", TB | TU | TS | TF, 10, 10},
    [PX_OP_BRA] = {"bra", 0, 10, 10},           [PX_OP_BAR] = {"bar", 0, 10, 10},
    [PX_OP_BAR_WARP] = {"bar.warp", 0, 60, 30}, [PX_OP_SHFL] = {"shfl", T(B32), 30, 30},
    [PX_OP_VOTE] = {"vote", T(PRED) | T(B32), 12, 12},
    [PX_OP_ATOM] = {"atom", T(B32) | T(B64) | T(U32) | T(U64) | T(S32) | T(S64) | TF, 11, 11},
    [PX_OP_RED] = {"red", T(B32) | T(B64) | T(U32) | T(U64) | T(S32) | T(S64) | TF, 12, 11},
    [PX_OP_MEMBAR] = {"membar", 0, 14, 10},     [PX_OP_EXIT] = {"exit", 0, 10, 10},
    [PX_OP_CP_ASYNC] = {"cp.async", 0, 70, 80}, [PX_OP_CP_COMMIT] = {"cp.async.commit_group", 0, 70, 80},
    [PX_OP_CP_WAIT] = {"cp.async.wait_group", 0, 70, 80},
    /* m16n8k16 with f16 or bf16 inputs: PTX ISA 7.0, sm_80 (the m16n8k8
     * f16 form of sm_75 is not modelled); ldmatrix: 6.5, sm_75. */
    [PX_OP_MMA] = {"mma.m16n8k16", T(F32), 70, 80}, [PX_OP_LDMATRIX] = {"ldmatrix", T(B16), 65, 75},
};

/* The types atom/red take for each operation. */
static uint32_t atom_types(int sub)
{
    switch (sub) {
    case PX_SUB_ADD: return T(U32) | T(S32) | T(U64) | TF;
    case PX_SUB_INC: case PX_SUB_DEC: return T(U32);
    case PX_SUB_MIN: case PX_SUB_MAX: return T(U32) | T(S32) | T(U64) | T(S64);
    case PX_SUB_AND: case PX_SUB_OR: case PX_SUB_XOR:
    case PX_SUB_EXCH: case PX_SUB_CAS: return T(B32) | T(B64);
    default: return 0;
    }
}

static uint32_t insn_types(const px_insn *in)
{
    if (in->op == PX_OP_ATOM || in->op == PX_OP_RED)
        return atom_types(in->sub);
    if (in->op == PX_OP_VOTE)
        return in->sub == PX_SUB_BALLOT ? T(B32) : T(PRED);
    return oprules[in->op].types;
}

/* One thing the instruction uses and the version and target it needs. */
typedef struct need {
    const char *what;
    int ptx, sm;
} need;

/* Everything this instruction needs beyond its opcode's row. */
static int requirements(const px_insn *in, need *n)
{
    int c = 0, op = in->op;
    n[c++] = (need){oprules[op].name, oprules[op].ptx, oprules[op].sm};
    if (op == PX_OP_BAR && !(in->flags & PX_F_ALIGNED))
        n[c++] = (need){"barrier", 60, 30};
    if ((op == PX_OP_SHFL || op == PX_OP_VOTE) && (in->flags & PX_F_SYNC))
        n[c++] = (need){op == PX_OP_SHFL ? "shfl.sync" : "vote.sync", 60, 30};
    if (op == PX_OP_MEMBAR && (in->flags & PX_F_FENCE))
        n[c++] = (need){"fence", 60, 70};
    if (in->flags & PX_F_ORDER)
        n[c++] = (need){"memory-order qualifiers (.relaxed .acquire .release .acq_rel .sc)", 60, 70};
    if (in->flags & PX_F_NC)
        n[c++] = (need){"ld.global.nc", 31, 32};
    if ((op == PX_OP_ATOM || op == PX_OP_RED) && (in->flags & PX_F_SCOPE))
        n[c++] = (need){"scoped atomics (.cta .gpu .sys)", 50, 60};
    if ((op == PX_OP_ATOM || op == PX_OP_RED) && in->sub == PX_SUB_ADD && in->t1 == PX_T_F32)
        n[c++] = (need){"atom/red .add.f32", 20, 20};
    if ((op == PX_OP_ATOM || op == PX_OP_RED) && in->sub == PX_SUB_ADD && in->t1 == PX_T_F64)
        n[c++] = (need){"atom/red .add.f64", 50, 60};
    if ((op == PX_OP_ATOM || op == PX_OP_RED) && px_type_bytes(in->t1) == 8 &&
        (in->sub == PX_SUB_AND || in->sub == PX_SUB_OR || in->sub == PX_SUB_XOR ||
         in->sub == PX_SUB_MIN || in->sub == PX_SUB_MAX))
        n[c++] = (need){"64-bit atom/red .and .or .xor .min .max", 31, 32};
    if (op == PX_OP_FMA && in->t1 == PX_T_F32)
        n[c++] = (need){"fma.f32", 20, 20};
    /* cvt with bf16 or packed pairs: 7.0/sm_80; FROM bf16 to f32: 7.8
     * (ptxas 13.0 refuses cvt.f32.bf16 under .version 7.0 on sm_80). */
    if (op == PX_OP_CVT && (in->t1 == PX_T_BF16 || in->t1 == PX_T_F16X2 || in->t1 == PX_T_BF16X2))
        n[c++] = (need){"cvt to .bf16, .f16x2 or .bf16x2", 70, 80};
    if (op == PX_OP_CVT && in->t2 == PX_T_BF16)
        n[c++] = (need){"cvt from .bf16", 78, 80};
    return c;
}

/* ---- operand types ---------------------------------------------------------------- */

enum { K_NONE, K_PRED, K_B, K_U, K_S, K_F };

static int kind(int t)
{
    if (t == PX_T_PRED) return K_PRED;
    if (t >= PX_T_B8 && t <= PX_T_B64) return K_B;
    if (t >= PX_T_U8 && t <= PX_T_U64) return K_U;
    if (t >= PX_T_S8 && t <= PX_T_S64) return K_S;
    return px_type_is_float(t) || px_type_is_16f(t) ? K_F : K_NONE;
}

/* Can a register declared `reg` stand where the instruction uses type
 * `want`? The same size, and a bit type goes with anything, a float type
 * only with float and bit registers, an integer type with integer and
 * bit registers; a .pred only with a .pred. ld, st and cvt (`relaxed`)
 * also take a wider register for their data, except a float for a
 * float, so that ld.u8 can load into a 32-bit register. */
static int reg_fits(int reg, int want, int relaxed)
{
    int rk = kind(reg), wk = kind(want);
    if (rk == K_PRED || wk == K_PRED)
        return rk == wk;
    if ((wk == K_F && rk != K_F && rk != K_B) || ((wk == K_U || wk == K_S) && rk == K_F))
        return 0;
    unsigned rb = px_type_bytes(reg), wb = px_type_bytes(want);
    return relaxed && !(rk == K_F && wk == K_F) ? rb >= wb : rb == wb;
}

/* An immediate's spelling must fit the type: integers for integer and
 * predicate types, float literals (0f, 0d, decimal) for float types, and
 * for bit types an integer or the hex float of the same width. */
static int imm_fits(int ik, int want)
{
    switch (kind(want)) {
    case K_F: return ik != PX_IK_INT;
    case K_B:
        return ik == PX_IK_INT || (ik == PX_IK_F32BITS && px_type_bytes(want) == 4) ||
               (ik == PX_IK_F64BITS && px_type_bytes(want) == 8);
    default: return ik == PX_IK_INT;
    }
}

static const char *fits_text(int want, int relaxed, char *buf, size_t cap)
{
    unsigned bits = 8 * px_type_bytes(want);
    switch (kind(want)) {
    case K_PRED: return ".pred";
    case K_F: snprintf(buf, cap, ".f%u or .b%u%s", bits, bits, relaxed ? " (or a wider .b)" : ""); break;
    case K_B: snprintf(buf, cap, "a %s%u-bit register", relaxed ? "wider or " : "", bits); break;
    default:
        snprintf(buf, cap, ".b%u, .u%u or .s%u%s", bits, bits, bits, relaxed ? " (or wider)" : "");
        break;
    }
    return buf;
}

typedef struct ctx {
    const eo_px_kernel *k;
    const px_insn *in;
    char *msg;
    size_t cap;
} ctx;

static eo_status refuse(ctx *c, const char *fmt, ...) EO_PRINTF_LIKE(2, 3);
static eo_status refuse(ctx *c, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->msg, c->cap, fmt, ap);
    va_end(ap);
    return EO_ERR_FORMAT;
}

/* Register r as operand `pos` (1-based, as ptxas counts) of type want. */
static eo_status check_reg(ctx *c, int r, int want, int relaxed, int pos)
{
    if (r < 0 || reg_fits(c->k->reg_type[r], want, relaxed))
        return EO_OK;
    char need[64];
    return refuse(c, "operand %d: register %s is %s, which does not fit: this instruction needs %s "
                  "there", pos, c->k->reg_name[r], px_type_name(c->k->reg_type[r]),
                  fits_text(want, relaxed, need, sizeof need));
}

/* The type operand i is read or written as, for the checks (px_src_type
 * and px_dst_type say how the executor reads it; the rules differ in a
 * few slots, e.g. shfl's lane operands are .b32 and its mask an integer). */
static int want_type(const px_insn *in, int i)
{
    if (i == 0)
        return in->op == PX_OP_VOTE ? in->t1 : px_dst_type(in);
    if (in->op == PX_OP_SHFL)
        return i == 4 ? PX_T_U32 : PX_T_B32;
    if (in->op == PX_OP_VOTE && i == 2)
        return PX_T_U32;
    if (in->op == PX_OP_BAR_WARP || in->op == PX_OP_CP_ASYNC)
        return PX_T_U32; /* cp.async: the src-size register */
    if (in->op == PX_OP_ST || in->op == PX_OP_RED)
        return in->t1;
    return px_src_type(in, i);
}

static int writes_dest(int op)
{
    return op != PX_OP_ST && op != PX_OP_RED && op != PX_OP_BRA && op != PX_OP_BAR &&
           op != PX_OP_BAR_WARP && op != PX_OP_MEMBAR && op != PX_OP_EXIT;
}

static eo_status check_operands(ctx *c)
{
    const px_insn *in = c->in;
    int op = in->op;
    eo_status st;
    if (in->guard >= 0 && c->k->reg_type[in->guard] != PX_T_PRED)
        return refuse(c, "the guard %s is %s: a guard must be a .pred register",
                      c->k->reg_name[in->guard], px_type_name(c->k->reg_type[in->guard]));
    for (int i = 0; i < in->nops; i++) {
        const px_operand *o = &in->o[i];
        /* operand 0 is the destination only where the instruction writes one */
        int slot = writes_dest(op) ? i : i + 1;
        int want = want_type(in, slot);
        int relaxed = op == PX_OP_CVT || ((op == PX_OP_LD || op == PX_OP_ST) && o->kind != PX_O_MEM);
        switch (o->kind) {
        case PX_O_REG:
            if (o->neg && c->k->reg_type[o->reg] != PX_T_PRED)
                return refuse(c, "operand %d: '!' negates a predicate, and %s is %s", i + 1,
                              c->k->reg_name[o->reg], px_type_name(c->k->reg_type[o->reg]));
            if ((st = check_reg(c, o->reg, want, relaxed, i + 1)) != EO_OK)
                return st;
            /* setp's and shfl's second destination: p|q */
            if (o->nvec && (st = check_reg(c, o->v[0], PX_T_PRED, 0, i + 1)) != EO_OK)
                return st;
            break;
        case PX_O_VEC:
            /* mma's a and b fragments: ptxas wants bit registers, not .f32 */
            for (int j = 0; op == PX_OP_MMA && (i == 1 || i == 2) && j < o->nvec; j++)
                if (o->v[j] >= 0 && kind(c->k->reg_type[o->v[j]]) != K_B)
                    return refuse(c, "operand %d: mma's %s fragment is .b32 registers, and %s is %s",
                                  i + 1, i == 1 ? "a" : "b", c->k->reg_name[o->v[j]],
                                  px_type_name(c->k->reg_type[o->v[j]]));
            for (int j = 0; j < o->nvec; j++)
                if ((st = check_reg(c, o->v[j], want, relaxed, i + 1)) != EO_OK)
                    return st;
            break;
        case PX_O_MEM:
            /* An address register holds an integer: 64 bits for global and
             * generic addresses (.address_size 64); a shared offset may
             * sit in a narrower one (ptxas zero-extends it). */
            if (o->reg >= 0) {
                int rt = c->k->reg_type[o->reg], rk = kind(rt);
                if (rk == K_F || rk == K_PRED ||
                    (px_type_bytes(rt) < 8 && in->space != PX_SP_SHARED))
                    return refuse(c, "address register %s is %s: an address needs %s",
                                  c->k->reg_name[o->reg], px_type_name(rt),
                                  in->space == PX_SP_SHARED ? "an integer or bit register"
                                                            : "a 64-bit integer or bit register");
            }
            break;
        case PX_O_IMM:
            if (!imm_fits(o->ik, want))
                return refuse(c, "operand %d: %s does not fit %s", i + 1,
                              o->ik == PX_IK_INT ? "an integer literal" : "a float literal",
                              px_type_name(want));
            break;
        case PX_O_SREG: {
            /* Special registers are read by mov and cvt only; %tid, %ntid,
             * %ctaid and %nctaid may also be read as 16 bits (an old form
             * ptxas still accepts). */
            int s = o->reg, wide = s == PX_SR_CLOCK64;
            unsigned wb = px_type_bytes(want);
            int narrow_ok = s <= PX_SR_NCTAID_Z && wb == 2;
            if (op != PX_OP_MOV && op != PX_OP_CVT)
                return refuse(c, "special register %s as an operand of %s: only mov and cvt read "
                              "special registers", px_sreg_name(s), oprules[op].name);
            if (kind(want) == K_F || kind(want) == K_PRED ||
                (wb != (wide ? 8u : 4u) && !narrow_ok))
                return refuse(c, "special register %s is %s: it does not fit %s", px_sreg_name(s),
                              wide ? ".u64" : ".u32", px_type_name(want));
            break;
        }
        case PX_O_SYM:
            if ((kind(want) != K_U && kind(want) != K_S && kind(want) != K_B) ||
                px_type_bytes(want) < 4)
                return refuse(c, "the address of a shared variable is an integer: it does not fit "
                              "%s", px_type_name(want));
            break;
        default:
            break;
        }
    }
    return EO_OK;
}

/* ---- modifiers each form requires or forbids ------------------------------------------ */

static int float_rounding(int r) { return r >= PX_RND_RN && r <= PX_RND_RP; }
static int integer_rounding(int r) { return r >= PX_RND_RNI; }

static eo_status check_modifiers(ctx *c)
{
    const px_insn *in = c->in;
    int op = in->op, t = in->t1, rnd = in->rnd;
    int approx = (in->flags & PX_F_APPROX) != 0, f = px_type_is_float(t);
    const char *name = oprules[op].name;
    if ((op == PX_OP_MUL || op == PX_OP_MAD) && !f &&
        !(in->flags & (PX_F_LO | PX_F_HI | PX_F_WIDE)))
        return refuse(c, "integer %s needs .lo, .hi or .wide", name);
    if ((op == PX_OP_MUL || op == PX_OP_MAD) && f && (in->flags & (PX_F_LO | PX_F_HI | PX_F_WIDE)))
        return refuse(c, "%s%s takes no .lo, .hi or .wide", name, px_type_name(t));
    if ((in->flags & PX_F_WIDE) && px_type_bytes(t) != 2 && px_type_bytes(t) != 4)
        return refuse(c, "%s.wide takes 16- or 32-bit types, not %s", name, px_type_name(t));
    if ((op == PX_OP_FMA || (op == PX_OP_MAD && f) || (op == PX_OP_DIV && t == PX_T_F64)) &&
        !float_rounding(rnd))
        return refuse(c, "%s%s needs a rounding modifier (.rn .rz .rm .rp)", name,
                      px_type_name(t));
    if ((op == PX_OP_DIV && t == PX_T_F32 && !float_rounding(rnd) && !approx &&
         !(in->flags & PX_F_FULL)) ||
        ((op == PX_OP_SQRT || op == PX_OP_RCP) && t == PX_T_F32 && !float_rounding(rnd) && !approx))
        return refuse(c, "%s.f32 needs a rounding modifier or .approx", name);
    if (op == PX_OP_SQRT && t == PX_T_F64 && !float_rounding(rnd))
        return refuse(c, "sqrt.f64 needs a rounding modifier (.approx is f32 only)");
    if (op == PX_OP_RCP && t == PX_T_F64 && !float_rounding(rnd) &&
        !(approx && (in->flags & PX_F_FTZ)))
        return refuse(c, "rcp.f64 needs a rounding modifier or .approx.ftz");
    if ((op == PX_OP_EX2 || op == PX_OP_LG2 || op == PX_OP_SIN || op == PX_OP_COS ||
         op == PX_OP_TANH || op == PX_OP_RSQRT) && !approx)
        return refuse(c, "%s needs .approx", name);
    if (op == PX_OP_CVT) {
        int fd = px_type_is_float(in->t1), fs = px_type_is_float(in->t2);
        const char *why = NULL;
        int h1 = px_type_is_16f(in->t1), h2 = px_type_is_16f(in->t2);
        if ((h1 || h2) && !(h1 && h2)) { /* parse.c: the other side is .f32 */
            if (h1 && !float_rounding(rnd))
                why = "f32 to a 16-bit float needs .rn .rz .rm or .rp";
            else if (h2 && rnd)
                why = "a 16-bit float to f32 is exact and takes no rounding modifier";
        } else if (fd && !fs && !float_rounding(rnd))
            why = "integer to float needs .rn .rz .rm or .rp";
        else if (!fd && fs && !integer_rounding(rnd))
            why = "float to integer needs .rni .rzi .rmi or .rpi";
        else if (fd && fs && in->t1 < in->t2 && !float_rounding(rnd))
            why = "f64 to f32 needs .rn .rz .rm or .rp";
        else if (fd && fs && in->t1 > in->t2 && rnd)
            why = "f32 to f64 is exact and takes no rounding modifier";
        else if (fd && fs && in->t1 == in->t2 && float_rounding(rnd))
            why = "a float to the same type takes only .rni .rzi .rmi or .rpi";
        else if (!fd && !fs && rnd)
            why = "integer to integer takes no rounding modifier";
        else if (fd && !fs && integer_rounding(rnd))
            why = "integer to float takes no integer rounding";
        if (why)
            return refuse(c, "cvt%s%s: %s", px_type_name(in->t1), px_type_name(in->t2), why);
    }
    if (op == PX_OP_SETP && in->cmp != PX_CMP_EQ && in->cmp != PX_CMP_NE) {
        int k = kind(t), cmp = in->cmp;
        int ordered = cmp >= PX_CMP_LT && cmp <= PX_CMP_GE;
        int unsigned_only = cmp >= PX_CMP_LO && cmp <= PX_CMP_HS;
        int ok = k == K_F ? !unsigned_only : k == K_U ? ordered || unsigned_only
                                            : k == K_S ? ordered : 0;
        if (!ok)
            return refuse(c, "setp: this comparison does not apply to %s (%s)", px_type_name(t),
                          k == K_B ? "bit types compare with .eq and .ne only"
                                   : "see the comparison operators of setp");
    }
    if (op != PX_OP_CVT && rnd && !f)
        return refuse(c, "%s%s: rounding modifiers apply to float types only", name,
                      px_type_name(t));
    if ((in->flags & PX_F_SAT) && op != PX_OP_CVT &&
        !(t == PX_T_S32 && (op == PX_OP_ADD || op == PX_OP_SUB ||
                            (op == PX_OP_MAD && (in->flags & PX_F_HI)))) &&
        !(t == PX_T_F32 && (op == PX_OP_ADD || op == PX_OP_SUB || op == PX_OP_MUL ||
                            op == PX_OP_MAD || op == PX_OP_FMA)))
        return refuse(c, "%s%s does not take .sat (.s32 add, sub and mad.hi, and .f32 add, sub, "
                      "mul, mad and fma do)", name, px_type_name(t));
    if ((op == PX_OP_SHFL || op == PX_OP_VOTE) && !(in->flags & PX_F_SYNC))
        return refuse(c, "%s without .sync: ptxas refuses it on sm_70 and later from PTX ISA "
                      "6.4, and the interpreter models the .sync form only", name);
    return EO_OK;
}

eo_status px_rules_insn(const eo_px_kernel *k, const px_insn *in, int ptx, int sm, char *msg,
                        size_t cap)
{
    ctx c = {k, in, msg, cap};
    const char *name = oprules[in->op].name;
    uint32_t types = insn_types(in);
    if (types && in->t1 != PX_T_NONE && !(types & (1u << in->t1)))
        return refuse(&c, "%s does not take type %s", name, px_type_name(in->t1));
    if (in->op == PX_OP_CVT && in->t2 != PX_T_NONE && !(types & (1u << in->t2)))
        return refuse(&c, "%s does not take type %s", name, px_type_name(in->t2));
    need n[8];
    int count = requirements(in, n);
    for (int i = 0; i < count; i++) {
        char v[16], s[16];
        if (ptx < n[i].ptx) {
            snprintf(v, sizeof v, "%d.%d", n[i].ptx / 10, n[i].ptx % 10);
            snprintf(s, sizeof s, "%d.%d", ptx / 10, ptx % 10);
            return refuse(&c, "%s requires PTX ISA .version %s or later (the module declares %s)",
                          n[i].what, v, s);
        }
        if (sm < n[i].sm) {
            snprintf(v, sizeof v, "sm_%d", n[i].sm);
            snprintf(s, sizeof s, "sm_%d", sm);
            return refuse(&c, "%s requires .target %s or higher (the module declares %s)",
                          n[i].what, v, s);
        }
    }
    eo_status st = check_modifiers(&c);
    return st != EO_OK ? st : check_operands(&c);
}
