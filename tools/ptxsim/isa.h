/* tools/ptxsim/isa.h — the interpreter's compact form of a PTX kernel,
 * shared by the parser (which writes it) and the executor (which reads
 * it). Internal to tools/ptxsim_*.c.
 *
 * Why a decoded form: PTX is text with dotted modifiers ("ld.global.v4.f32",
 * "setp.lt.and.f32"). Re-reading strings for every thread of every warp
 * would make the interpreter slow and, worse, would spread the knowledge
 * of what a modifier means across the executor. The parser resolves every
 * name once: opcode and modifiers into small enums, registers into
 * indices, labels into instruction indices, symbols into offsets. The
 * executor then only switches on numbers. */
#ifndef EO_PTXSIM_ISA_H
#define EO_PTXSIM_ISA_H

#include <stdint.h>
#include "tools/ptxsim/ptxsim.h"

typedef enum px_type {
    PX_T_NONE, PX_T_PRED,
    PX_T_B8, PX_T_B16, PX_T_B32, PX_T_B64,
    PX_T_U8, PX_T_U16, PX_T_U32, PX_T_U64,
    PX_T_S8, PX_T_S16, PX_T_S32, PX_T_S64,
    PX_T_F32, PX_T_F64,
    /* 16-bit floats (tensor-core operands): IEEE half and bfloat16, and
     * the packed pairs cvt writes into a .b32 register (the first source
     * in the upper half). Registers holding them are declared .b16/.b32. */
    PX_T_F16, PX_T_BF16, PX_T_F16X2, PX_T_BF16X2,
    PX_T_COUNT
} px_type;

typedef enum px_op {
    PX_OP_LD, PX_OP_ST, PX_OP_MOV, PX_OP_CVTA, PX_OP_CVT,
    PX_OP_ADD, PX_OP_SUB, PX_OP_MUL, PX_OP_MAD, PX_OP_FMA, PX_OP_DIV, PX_OP_REM,
    PX_OP_MIN, PX_OP_MAX, PX_OP_ABS, PX_OP_NEG,
    PX_OP_RCP, PX_OP_SQRT, PX_OP_RSQRT, PX_OP_EX2, PX_OP_LG2, PX_OP_SIN, PX_OP_COS,
    PX_OP_TANH,
    PX_OP_AND, PX_OP_OR, PX_OP_XOR, PX_OP_NOT, PX_OP_CNOT, PX_OP_SHL, PX_OP_SHR,
    PX_OP_POPC, PX_OP_CLZ, PX_OP_COPYSIGN,
    PX_OP_SETP, PX_OP_SELP,
    PX_OP_BRA, PX_OP_BAR, PX_OP_BAR_WARP, PX_OP_SHFL, PX_OP_VOTE,
    PX_OP_ATOM, PX_OP_RED, PX_OP_MEMBAR, PX_OP_EXIT,
    /* asynchronous global-to-shared copies (sm_80): cp.async.{ca,cg}.shared.global,
     * cp.async.commit_group, cp.async.wait_group N / cp.async.wait_all */
    PX_OP_CP_ASYNC, PX_OP_CP_COMMIT, PX_OP_CP_WAIT,
    /* tensor cores (sm_80): mma.sync.aligned.m16n8k16.row.col.f32.{bf16,f16}.{..}.f32
     * (sub: PX_MMA_BF16 or PX_MMA_F16) and ldmatrix.sync.aligned.m8n8.x{1,2,4}
     * {.trans}.shared.b16 (vec: the number of matrices; PX_F_TRANS). exec.c,
     * "tensor cores", says how they run. */
    PX_OP_MMA, PX_OP_LDMATRIX,
    PX_OP_COUNT
} px_op;

/* State spaces of ld/st/atom/cvta. GENERIC means "no space given": the
 * address itself says whether it is global or shared. */
typedef enum px_space { PX_SP_GENERIC, PX_SP_GLOBAL, PX_SP_SHARED, PX_SP_PARAM } px_space;

/* The `sub` field: what the second-level modifier means depends on the
 * opcode (setp's boolean combiner, atom's operation, shfl's mode, vote's
 * mode), so they share one small numbering. */
enum {
    PX_SUB_NONE,
    PX_SUB_AND, PX_SUB_OR, PX_SUB_XOR,             /* setp combiner, atom op */
    PX_SUB_ADD, PX_SUB_MIN, PX_SUB_MAX, PX_SUB_INC, PX_SUB_DEC,
    PX_SUB_CAS, PX_SUB_EXCH,                       /* atom ops */
    PX_SUB_UP, PX_SUB_DOWN, PX_SUB_BFLY, PX_SUB_IDX, /* shfl modes */
    PX_SUB_ALL, PX_SUB_ANY, PX_SUB_UNI, PX_SUB_BALLOT /* vote modes */
};

/* setp comparisons; the U forms are true when either input is NaN. */
enum {
    PX_CMP_NONE, PX_CMP_EQ, PX_CMP_NE, PX_CMP_LT, PX_CMP_LE, PX_CMP_GT, PX_CMP_GE,
    PX_CMP_LO, PX_CMP_LS, PX_CMP_HI, PX_CMP_HS,
    PX_CMP_EQU, PX_CMP_NEU, PX_CMP_LTU, PX_CMP_LEU, PX_CMP_GTU, PX_CMP_GEU,
    PX_CMP_NUM, PX_CMP_NAN
};

/* Rounding: plain forms for float results, I forms round a float to an
 * integral value (cvt.rni.s32.f32). */
enum { PX_RND_NONE, PX_RND_RN, PX_RND_RZ, PX_RND_RM, PX_RND_RP,
       PX_RND_RNI, PX_RND_RZI, PX_RND_RMI, PX_RND_RPI };

/* Flag bits. */
enum {
    PX_F_HI = 1 << 0, PX_F_LO = 1 << 1, PX_F_WIDE = 1 << 2, PX_F_SAT = 1 << 3,
    PX_F_FTZ = 1 << 4, PX_F_APPROX = 1 << 5, PX_F_ALIGNED = 1 << 6, PX_F_TO = 1 << 7,
    PX_F_CLAMP_PRED = 1 << 8, /* shfl with a second (predicate) destination */
    /* Modifiers without effect in the interpreter, kept because PTX's
     * rules (rules.c) depend on them: which ISA version and target an
     * instruction needs, and which forms ptxas refuses. */
    PX_F_SYNC = 1 << 9,   /* shfl.sync, vote.sync */
    PX_F_ORDER = 1 << 10, /* .relaxed .acquire .release .acq_rel .sc */
    PX_F_NC = 1 << 11,    /* ld.global.nc */
    PX_F_SCOPE = 1 << 12, /* .cta .gpu .sys */
    PX_F_FENCE = 1 << 13, /* written fence, not membar */
    PX_F_FULL = 1 << 14,  /* div.full.f32 */
    PX_F_TRANS = 1 << 15  /* ldmatrix .trans */
};

/* mma's input type, in `sub`. */
enum { PX_MMA_BF16 = 1, PX_MMA_F16 = 2 };

/* Special (read-only) registers. */
typedef enum px_sreg {
    PX_SR_TID_X, PX_SR_TID_Y, PX_SR_TID_Z, PX_SR_NTID_X, PX_SR_NTID_Y, PX_SR_NTID_Z,
    PX_SR_CTAID_X, PX_SR_CTAID_Y, PX_SR_CTAID_Z, PX_SR_NCTAID_X, PX_SR_NCTAID_Y,
    PX_SR_NCTAID_Z, PX_SR_LANEID, PX_SR_WARPID, PX_SR_NWARPID, PX_SR_SMID, PX_SR_NSMID,
    PX_SR_CLOCK, PX_SR_CLOCK64, PX_SR_LANEMASK_EQ, PX_SR_LANEMASK_LT, PX_SR_LANEMASK_LE,
    PX_SR_LANEMASK_GT, PX_SR_LANEMASK_GE,
    PX_SR_COUNT
} px_sreg;

typedef enum px_okind {
    PX_O_NONE,
    PX_O_REG,   /* reg; `neg` is the ! of a predicate operand */
    PX_O_IMM,   /* imm: integer value, or raw float bits (see ik) */
    PX_O_SREG,  /* reg holds a px_sreg */
    PX_O_MEM,   /* [reg + imm] or [symbol + imm]; reg < 0 when no register */
    PX_O_VEC,   /* {v[0], ..., v[nvec-1]} */
    PX_O_LABEL, /* imm: target instruction index */
    PX_O_SYM,   /* the address of a .shared variable: imm = its offset */
    PX_O_SINK   /* `_`: a destination whose value is dropped */
} px_okind;

/* How an immediate was written: an integer, 0fXXXXXXXX (f32 bits),
 * 0dXXXXXXXXXXXXXXXX (f64 bits), or a decimal float (f64 bits). */
enum { PX_IK_INT, PX_IK_F32BITS, PX_IK_F64BITS, PX_IK_DEC };

typedef struct px_operand {
    uint8_t kind;
    uint8_t neg;
    uint8_t ik;
    uint8_t nvec;
    uint8_t sym_space;   /* MEM: PX_SP_SHARED/PARAM when a symbol is the base */
    int32_t reg;
    int32_t v[4];
    int64_t imm;
} px_operand;

#define PX_MAX_OPS 5

typedef struct px_insn {
    uint8_t op, t1, t2, space, cmp, sub, vec, rnd, nops;
    uint8_t guard_neg;
    uint16_t flags;
    int32_t guard;      /* predicate register, or -1 */
    int32_t line;
    uint32_t text_off, text_len; /* the source text, for traces */
    uint8_t stype[PX_MAX_OPS];   /* the type each source operand is read as */
    uint8_t dtype;               /* the type the destination is written as */
    px_operand o[PX_MAX_OPS];
} px_insn;

typedef struct px_param {
    char name[64];
    uint8_t type;
    size_t offset, size;
} px_param;

struct eo_px_kernel {
    char name[64];
    int line;              /* line of the .entry */
    px_insn *code;
    int ncode;
    int nregs;
    uint8_t *reg_type;     /* px_type of each register */
    char **reg_name;
    px_param *params;
    int nparams;
    size_t param_bytes;
    size_t static_shared;  /* bytes of fixed-size .shared arrays */
    size_t dyn_shared_off; /* where `.extern .shared` arrays start */
    const char *src;       /* the module's copy of the text */
};

struct eo_px_module {
    int ptx_version;       /* .version as major * 10 + minor (7.0 -> 70) */
    int sm;                /* .target as a number (sm_80 -> 80) */
    char *src;
    eo_px_kernel *kernels;
    int nkernels;
};

/* Type helpers used by both sides; inline because the executor asks
 * them for every operand of every thread. The integer types come in runs
 * of four widths (8, 16, 32, 64 bits) in the enum above. */
static inline unsigned px_type_bytes(int t)
{
    if (t >= PX_T_B8 && t <= PX_T_S64)
        return 1u << ((t - PX_T_B8) % 4);
    if (t == PX_T_F16 || t == PX_T_BF16)
        return 2;
    if (t == PX_T_F16X2 || t == PX_T_BF16X2)
        return 4;
    return t == PX_T_F32 ? 4 : t == PX_T_F64 ? 8 : t == PX_T_PRED ? 1 : 0;
}
/* Scalar float types; the 16-bit ones occur only in cvt (rules.c). */
static inline int px_type_is_float(int t)
{
    return t == PX_T_F32 || t == PX_T_F64 || t == PX_T_F16 || t == PX_T_BF16;
}
static inline int px_type_is_16f(int t) { return t >= PX_T_F16 && t <= PX_T_BF16X2; }
static inline int px_type_is_signed(int t) { return t >= PX_T_S8 && t <= PX_T_S64; }
const char *px_type_name(int t);
const char *px_sreg_name(int s);

#endif
