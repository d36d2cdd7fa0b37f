/* tools/ptxsim/parse.c — PTX text to the decoded form of ptxsim_isa.h.
 *
 * The parser's other job is to say "no" early. A kernel that uses an
 * instruction the interpreter does not model must fail at module load,
 * with the line and the token, rather than run with a silently wrong
 * meaning: a test that passes on the interpreter has to mean the PTX was
 * understood in full. So every opcode, every modifier and every directive
 * is looked up in a closed list, and anything else is an error.
 *
 * Structure: a tiny lexer (identifiers keep their dots: "ld.global.f32"
 * is one token, split later), then one function per kind of statement.
 * Errors unwind with longjmp to eo_px_module_load, which frees whatever
 * was built; that keeps each parsing step free of error plumbing. */
#include <ctype.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdint.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include "alloc/checked.h"
#include "tools/ptxsim/alu.h"
#include "tools/ptxsim/rules.h"

/* ---- types ---------------------------------------------------------------- */

static const char *const type_names[PX_T_COUNT] = {
    "", ".pred", ".b8", ".b16", ".b32", ".b64", ".u8", ".u16", ".u32", ".u64",
    ".s8", ".s16", ".s32", ".s64", ".f32", ".f64", ".f16", ".bf16", ".f16x2", ".bf16x2",
};

const char *px_type_name(int t) { return (unsigned)t < PX_T_COUNT ? type_names[t] : "?"; }

static const char *const sreg_names[PX_SR_COUNT] = {
    "%tid.x", "%tid.y", "%tid.z", "%ntid.x", "%ntid.y", "%ntid.z",
    "%ctaid.x", "%ctaid.y", "%ctaid.z", "%nctaid.x", "%nctaid.y", "%nctaid.z",
    "%laneid", "%warpid", "%nwarpid", "%smid", "%nsmid", "%clock", "%clock64",
    "%lanemask_eq", "%lanemask_lt", "%lanemask_le", "%lanemask_gt", "%lanemask_ge",
};
const char *px_sreg_name(int s) { return (unsigned)s < PX_SR_COUNT ? sreg_names[s] : "?"; }

/* ---- lexer ------------------------------------------------------------------ */

enum { TK_EOF, TK_ID, TK_NUM, TK_PUNCT };

typedef struct tok {
    int kind;
    const char *s;
    size_t len;
    int line;
    size_t off;
} tok;

/* A register declaration: one name, or a range "%r<32>" = %r0..%r31. */
typedef struct regdecl {
    char name[48];
    int count; /* 0: a single register */
    int first;
} regdecl;

typedef struct shsym {
    char name[64];
    uint64_t align; /* as written: 2^62 is legal and must not be cut to a 32-bit size_t */
    size_t size, offset;
    int is_extern;
} shsym;

typedef struct labelref {
    char name[64];
    int insn, line;
} labelref;

typedef struct parser {
    const char *s;
    size_t n, pos;
    int line;
    tok t;          /* current token */
    jmp_buf fail;
    eo_status st;
    char *err;
    size_t errcap;
    eo_px_module *m;
    int ptx, sm;     /* the module's .version (x10) and .target */
    eo_px_kernel *k; /* kernel being built */
    int cap_code, cap_regs;
    regdecl *decls;
    int ndecls, cap_decls;
    shsym *sh;
    int nsh, cap_sh, nsh_module; /* the first nsh_module are module-scope */
    char (*labels)[64];
    int *label_pc;
    int nlabels, cap_labels;
    labelref *refs;
    int nrefs, cap_refs;
} parser;

static void fail(parser *p, eo_status st, int line, const char *fmt, ...)
{
    int n = snprintf(p->err, p->errcap, "line %d: ", line);
    if (n < 0)
        n = 0;
    va_list ap;
    va_start(ap, fmt);
    if ((size_t)n < p->errcap)
        vsnprintf(p->err + n, p->errcap - (size_t)n, fmt, ap);
    va_end(ap);
    p->st = st;
    longjmp(p->fail, 1);
}

/* Grow an array by one element, failing the parse when memory runs out. */
static void *grow(parser *p, void *arr, int *cap, int need, size_t elem)
{
    if (need <= *cap)
        return arr;
    size_t grown;
    if (eo_grow_overflows((size_t)*cap, (size_t)need, 16, elem, &grown) || grown > INT_MAX)
        fail(p, EO_ERR_OOM, p->line, "out of memory");
    const int nc = (int)grown;
    void *q = realloc(arr, (size_t)nc * elem);
    if (!q)
        fail(p, EO_ERR_OOM, p->line, "out of memory");
    memset((char *)q + (size_t)*cap * elem, 0, (size_t)(nc - *cap) * elem);
    *cap = nc;
    return q;
}

/* x rounded up to a multiple of align (a power of two), or fail when
 * that is more than `limit`: alignments come from the text (.align
 * 2^62 is legal PTX), so the rounding itself must not wrap. */
static size_t align_up(parser *p, size_t x, uint64_t align, size_t limit, int line, const char *what)
{
    if (x == 0)
        return 0; /* aligned to anything: `.shared .align 1048576` alone is fine */
    /* the aligned offset may reach the limit exactly: a kernel with 48 KB
     * of static shared memory has its (empty) dynamic part at 48 KB. In
     * 64 bits whatever size_t is, so a 32-bit host refuses what a 64-bit
     * one does. */
    const uint64_t x64 = x;
    if (x > limit || align - 1 > UINT64_MAX - x64 || ((x64 + align - 1) & ~(align - 1)) > limit)
        fail(p, EO_ERR_FORMAT, line, "'%s': offset %zu aligned to %llu goes past the limit of %zu "
             "bytes", what, x, (unsigned long long)align, limit);
    return (size_t)((x64 + align - 1) & ~(align - 1));
}

static int id_start(int c) { return isalpha(c) || c == '_' || c == '$' || c == '%' || c == '.'; }
static int id_char(int c) { return isalnum(c) || c == '_' || c == '$' || c == '.'; }

static void skip_space(parser *p)
{
    while (p->pos < p->n) {
        char c = p->s[p->pos];
        if (c == '\n') {
            p->line++;
            p->pos++;
        } else if (isspace((unsigned char)c)) {
            p->pos++;
        } else if (c == '/' && p->pos + 1 < p->n && p->s[p->pos + 1] == '/') {
            while (p->pos < p->n && p->s[p->pos] != '\n')
                p->pos++;
        } else if (c == '/' && p->pos + 1 < p->n && p->s[p->pos + 1] == '*') {
            p->pos += 2;
            while (p->pos + 1 < p->n && !(p->s[p->pos] == '*' && p->s[p->pos + 1] == '/')) {
                if (p->s[p->pos] == '\n')
                    p->line++;
                p->pos++;
            }
            p->pos += 2;
        } else {
            break;
        }
    }
}

static void next(parser *p)
{
    skip_space(p);
    tok *t = &p->t;
    t->line = p->line;
    t->off = p->pos;
    t->s = p->s + p->pos;
    if (p->pos >= p->n) {
        t->kind = TK_EOF;
        t->len = 0;
        return;
    }
    unsigned char c = (unsigned char)p->s[p->pos];
    size_t start = p->pos;
    if (isdigit(c)) {
        /* Numbers keep letters and dots (0f3F800000, 0x1F, 1.5e-3, 10U);
         * a sign belongs to the number only right after a decimal exponent. */
        int radix_prefix = p->pos + 1 < p->n && strchr("xXfFdD", p->s[p->pos + 1]) && c == '0';
        p->pos++;
        while (p->pos < p->n) {
            unsigned char d = (unsigned char)p->s[p->pos];
            char prev = p->s[p->pos - 1];
            if (isalnum(d) || d == '.')
                p->pos++;
            else if ((d == '-' || d == '+') && !radix_prefix && (prev == 'e' || prev == 'E'))
                p->pos++;
            else
                break;
        }
        t->kind = TK_NUM;
    } else if (id_start(c)) {
        p->pos++;
        while (p->pos < p->n && id_char((unsigned char)p->s[p->pos]))
            p->pos++;
        t->kind = TK_ID;
    } else {
        p->pos++;
        t->kind = TK_PUNCT;
    }
    t->len = p->pos - start;
}

static int is(parser *p, const char *s)
{
    return p->t.kind != TK_EOF && p->t.len == strlen(s) && memcmp(p->t.s, s, p->t.len) == 0;
}

static int is_punct(parser *p, char c)
{
    return p->t.kind == TK_PUNCT && p->t.s[0] == c;
}

static const char *tokstr(parser *p, char *buf, size_t cap)
{
    if (p->t.kind == TK_EOF)
        return "end of file";
    size_t n = p->t.len < cap - 1 ? p->t.len : cap - 1;
    memcpy(buf, p->t.s, n);
    buf[n] = 0;
    return buf;
}

static void expect(parser *p, char c)
{
    if (!is_punct(p, c)) {
        char b[64];
        fail(p, EO_ERR_FORMAT, p->t.line, "expected '%c', found '%s'", c, tokstr(p, b, sizeof b));
    }
    next(p);
}

static void take_id(parser *p, char *out, size_t cap)
{
    if (p->t.kind != TK_ID || p->t.len >= cap) {
        char b[64];
        fail(p, EO_ERR_FORMAT, p->t.line, "expected a name, found '%s'", tokstr(p, b, sizeof b));
    }
    memcpy(out, p->t.s, p->t.len);
    out[p->t.len] = 0;
    next(p);
}

/* An integer literal (decimal, 0x hex, 0 octal, optional U suffix). */
static int64_t parse_int_text(parser *p, const char *s, size_t len, int line)
{
    char b[64];
    if (len == 0 || len >= sizeof b)
        fail(p, EO_ERR_FORMAT, line, "bad number");
    memcpy(b, s, len);
    b[len] = 0;
    if (len > 1 && (b[len - 1] == 'U' || b[len - 1] == 'u'))
        b[len - 1] = 0;
    char *end;
    unsigned long long v = strtoull(b, &end, 0);
    if (*end)
        fail(p, EO_ERR_FORMAT, line, "bad integer '%s'", b);
    return (int64_t)v;
}

static int64_t take_int(parser *p)
{
    int neg = 0;
    if (is_punct(p, '-')) {
        neg = 1;
        next(p);
    }
    if (p->t.kind != TK_NUM) {
        char b[64];
        fail(p, EO_ERR_FORMAT, p->t.line, "expected a number, found '%s'", tokstr(p, b, sizeof b));
    }
    int64_t v = parse_int_text(p, p->t.s, p->t.len, p->t.line);
    next(p);
    return neg ? (int64_t)(0 - (uint64_t)v) : v; /* no overflow on INT64_MIN */
}

static int lookup_type(const char *s, size_t len)
{
    for (int t = 1; t < PX_T_COUNT; t++)
        if (strlen(type_names[t]) == len && memcmp(type_names[t], s, len) == 0)
            return t;
    return PX_T_NONE;
}

static int take_type(parser *p)
{
    int t = p->t.kind == TK_ID ? lookup_type(p->t.s, p->t.len) : PX_T_NONE;
    if (t == PX_T_NONE) {
        char b[64];
        fail(p, EO_ERR_UNSUPPORTED, p->t.line, "unsupported type '%s'", tokstr(p, b, sizeof b));
    }
    next(p);
    return t;
}

/* ---- registers and symbols ------------------------------------------------------ */

static int find_reg(parser *p, const char *s, size_t len)
{
    for (int i = p->ndecls - 1; i >= 0; i--) {
        const regdecl *d = &p->decls[i];
        size_t nl = strlen(d->name);
        if (!d->count) {
            if (nl == len && memcmp(d->name, s, len) == 0)
                return d->first;
            continue;
        }
        if (len <= nl || memcmp(d->name, s, nl) != 0)
            continue;
        /* "%r12" against the range "%r<N>": digits only, no leading 0. */
        const char *q = s + nl;
        size_t ql = len - nl;
        if (ql > 1 && q[0] == '0')
            continue;
        long v = 0;
        size_t j = 0;
        for (; j < ql && isdigit((unsigned char)q[j]) && v < 1000000; j++)
            v = v * 10 + (q[j] - '0');
        if (j == ql && v < d->count)
            return d->first + (int)v;
    }
    return -1;
}

/* Every thread of a block gets every register (8 bytes each, plus a
 * written-yet bit): 1024 threads x 16384 registers is already 150 MB. */
enum { MAX_REGS = 16384 };

static int new_reg(parser *p, int type, const char *name)
{
    eo_px_kernel *k = p->k;
    if (k->nregs >= MAX_REGS)
        fail(p, EO_ERR_UNSUPPORTED, p->t.line, "kernel '%s' declares more than %d registers",
             k->name, MAX_REGS);
    int cap = p->cap_regs;
    k->reg_type = grow(p, k->reg_type, &cap, k->nregs + 1, 1);
    int cap2 = p->cap_regs;
    k->reg_name = grow(p, k->reg_name, &cap2, k->nregs + 1, sizeof(char *));
    p->cap_regs = cap;
    k->reg_type[k->nregs] = (uint8_t)type;
    k->reg_name[k->nregs] = malloc(strlen(name) + 1);
    if (!k->reg_name[k->nregs])
        fail(p, EO_ERR_OOM, p->line, "out of memory");
    strcpy(k->reg_name[k->nregs], name);
    return k->nregs++;
}

/* .reg .TYPE name, name<N>, ... ; */
static void parse_reg_decl(parser *p)
{
    int line = p->t.line;
    next(p);
    if (is(p, ".v2") || is(p, ".v4"))
        fail(p, EO_ERR_UNSUPPORTED, line, "unsupported: vector registers");
    int type = take_type(p);
    for (;;) {
        char name[48];
        take_id(p, name, sizeof name - 8);
        int count = 0;
        if (is_punct(p, '<')) {
            next(p);
            int64_t c = take_int(p);
            if (c <= 0 || c > 65536)
                fail(p, EO_ERR_FORMAT, line, "bad register count %lld", (long long)c);
            count = (int)c;
            expect(p, '>');
        }
        p->decls = grow(p, p->decls, &p->cap_decls, p->ndecls + 1, sizeof *p->decls);
        regdecl *d = &p->decls[p->ndecls++];
        strcpy(d->name, name);
        d->count = count;
        d->first = p->k->nregs;
        if (!count) {
            new_reg(p, type, name);
        } else {
            for (int i = 0; i < count; i++) {
                char nm[64];
                snprintf(nm, sizeof nm, "%s%d", name, i);
                new_reg(p, type, nm);
            }
        }
        if (!is_punct(p, ','))
            break;
        next(p);
    }
    expect(p, ';');
}

/* [.extern] .shared [.align N] .TYPE name[N]...[N] ; (or name[] when extern) */
static void parse_shared_decl(parser *p, int is_extern)
{
    int line = p->t.line;
    next(p);
    uint64_t align = 0;
    if (is(p, ".align")) {
        next(p);
        int64_t a = take_int(p);
        if (a <= 0 || (a & (a - 1)))
            fail(p, EO_ERR_FORMAT, line, "alignment %lld is not a power of two", (long long)a);
        align = (uint64_t)a;
    }
    int type = take_type(p);
    shsym s;
    memset(&s, 0, sizeof s);
    take_id(p, s.name, sizeof s.name);
    s.align = align ? align : px_type_bytes(type);
    s.size = px_type_bytes(type);
    s.is_extern = is_extern;
    int dims = 0;
    while (is_punct(p, '[')) {
        next(p);
        if (is_punct(p, ']')) {
            if (!is_extern || dims)
                fail(p, EO_ERR_FORMAT, line, "array '%s' without a size", s.name);
            s.size = 0;
        } else {
            int64_t c = take_int(p);
            if (c <= 0 || c > (int64_t)EO_PX_MAX_SHARED)
                fail(p, EO_ERR_FORMAT, line, "bad array size %lld", (long long)c);
            /* Each dimension is at most the limit, but their product is
             * checked before it is formed: [49152][49152][49152][49152]
             * of .f64 would wrap 64 bits to a small number. */
            if (s.size > EO_PX_MAX_SHARED / (size_t)c)
                fail(p, EO_ERR_FORMAT, line, "shared array '%s' is more than the limit of %u bytes",
                     s.name, EO_PX_MAX_SHARED);
            s.size *= (size_t)c;
        }
        expect(p, ']');
        dims++;
    }
    if (is_punct(p, '='))
        fail(p, EO_ERR_UNSUPPORTED, line, "unsupported: initialised .shared variable");
    expect(p, ';');
    p->sh = grow(p, p->sh, &p->cap_sh, p->nsh + 1, sizeof *p->sh);
    p->sh[p->nsh++] = s;
}

static int find_shared(parser *p, const char *s, size_t len)
{
    for (int i = p->nsh - 1; i >= 0; i--)
        if (strlen(p->sh[i].name) == len && memcmp(p->sh[i].name, s, len) == 0)
            return i;
    return -1;
}

static int find_param(parser *p, const char *s, size_t len)
{
    for (int i = 0; i < p->k->nparams; i++)
        if (strlen(p->k->params[i].name) == len && memcmp(p->k->params[i].name, s, len) == 0)
            return i;
    return -1;
}

/* ---- instructions ------------------------------------------------------------- */

typedef struct opdef {
    const char *name;
    uint8_t op, nmin, nmax;
} opdef;

static const opdef opdefs[] = {
    {"ld", PX_OP_LD, 2, 2},       {"st", PX_OP_ST, 2, 2},       {"mov", PX_OP_MOV, 2, 2},
    {"cvta", PX_OP_CVTA, 2, 2},   {"cvt", PX_OP_CVT, 2, 3},     {"add", PX_OP_ADD, 3, 3},
    {"sub", PX_OP_SUB, 3, 3},     {"mul", PX_OP_MUL, 3, 3},     {"mad", PX_OP_MAD, 4, 4},
    {"fma", PX_OP_FMA, 4, 4},     {"div", PX_OP_DIV, 3, 3},     {"rem", PX_OP_REM, 3, 3},
    {"min", PX_OP_MIN, 3, 3},     {"max", PX_OP_MAX, 3, 3},     {"abs", PX_OP_ABS, 2, 2},
    {"neg", PX_OP_NEG, 2, 2},     {"rcp", PX_OP_RCP, 2, 2},     {"sqrt", PX_OP_SQRT, 2, 2},
    {"rsqrt", PX_OP_RSQRT, 2, 2}, {"ex2", PX_OP_EX2, 2, 2},     {"lg2", PX_OP_LG2, 2, 2},
    {"sin", PX_OP_SIN, 2, 2},     {"cos", PX_OP_COS, 2, 2},     {"tanh", PX_OP_TANH, 2, 2},
    {"and", PX_OP_AND, 3, 3},     {"or", PX_OP_OR, 3, 3},       {"xor", PX_OP_XOR, 3, 3},
    {"not", PX_OP_NOT, 2, 2},     {"cnot", PX_OP_CNOT, 2, 2},   {"shl", PX_OP_SHL, 3, 3},
    {"shr", PX_OP_SHR, 3, 3},     {"popc", PX_OP_POPC, 2, 2},   {"clz", PX_OP_CLZ, 2, 2},
    {"copysign", PX_OP_COPYSIGN, 3, 3},
    {"setp", PX_OP_SETP, 3, 4},   {"selp", PX_OP_SELP, 4, 4},   {"bra", PX_OP_BRA, 1, 1},
    {"bar", PX_OP_BAR, 1, 1},     {"barrier", PX_OP_BAR, 1, 1}, {"shfl", PX_OP_SHFL, 5, 5},
    {"vote", PX_OP_VOTE, 3, 3},   {"atom", PX_OP_ATOM, 3, 4},   {"red", PX_OP_RED, 2, 2},
    {"membar", PX_OP_MEMBAR, 0, 0}, {"fence", PX_OP_MEMBAR, 0, 0},
    {"ret", PX_OP_EXIT, 0, 0},    {"exit", PX_OP_EXIT, 0, 0},
};

typedef struct moddef {
    const char *name;
    uint8_t cat, val;
} moddef;

enum { M_SPACE = 1, M_VEC, M_RND, M_CMP, M_SUB, M_FLAG, M_IGNORE };

/* Modifiers that mean the same for every opcode. Those whose meaning
 * depends on the opcode (lo/hi, and/or/xor, add/min/max, uni) are decided
 * in decode_mod below. */
static const moddef moddefs[] = {
    {"global", M_SPACE, PX_SP_GLOBAL}, {"shared", M_SPACE, PX_SP_SHARED},
    {"param", M_SPACE, PX_SP_PARAM},   {"v2", M_VEC, 2}, {"v4", M_VEC, 4},
    {"rn", M_RND, PX_RND_RN},   {"rz", M_RND, PX_RND_RZ},   {"rm", M_RND, PX_RND_RM},
    {"rp", M_RND, PX_RND_RP},   {"rni", M_RND, PX_RND_RNI}, {"rzi", M_RND, PX_RND_RZI},
    {"rmi", M_RND, PX_RND_RMI}, {"rpi", M_RND, PX_RND_RPI},
    {"eq", M_CMP, PX_CMP_EQ},   {"ne", M_CMP, PX_CMP_NE},   {"lt", M_CMP, PX_CMP_LT},
    {"le", M_CMP, PX_CMP_LE},   {"gt", M_CMP, PX_CMP_GT},   {"ge", M_CMP, PX_CMP_GE},
    {"ls", M_CMP, PX_CMP_LS},   {"hs", M_CMP, PX_CMP_HS},   {"equ", M_CMP, PX_CMP_EQU},
    {"neu", M_CMP, PX_CMP_NEU}, {"ltu", M_CMP, PX_CMP_LTU}, {"leu", M_CMP, PX_CMP_LEU},
    {"gtu", M_CMP, PX_CMP_GTU}, {"geu", M_CMP, PX_CMP_GEU}, {"num", M_CMP, PX_CMP_NUM},
    {"nan", M_CMP, PX_CMP_NAN},
    {"inc", M_SUB, PX_SUB_INC}, {"dec", M_SUB, PX_SUB_DEC}, {"cas", M_SUB, PX_SUB_CAS},
    {"exch", M_SUB, PX_SUB_EXCH}, {"up", M_SUB, PX_SUB_UP}, {"down", M_SUB, PX_SUB_DOWN},
    {"bfly", M_SUB, PX_SUB_BFLY}, {"idx", M_SUB, PX_SUB_IDX}, {"all", M_SUB, PX_SUB_ALL},
    {"any", M_SUB, PX_SUB_ANY}, {"ballot", M_SUB, PX_SUB_BALLOT},
    {"wide", M_FLAG, 2}, {"sat", M_FLAG, 3}, {"ftz", M_FLAG, 4}, {"approx", M_FLAG, 5},
    {"aligned", M_FLAG, 6}, {"to", M_FLAG, 7},
    /* Without effect here, but recorded for PTX's rules (rules.c): "full"
     * division is simply exact; sync, memory-order and scope qualifiers
     * change nothing for an interpreter that runs one memory operation at
     * a time, yet they decide which .version and .target a kernel needs. */
    {"sync", M_FLAG, 9},      {"relaxed", M_FLAG, 10}, {"acquire", M_FLAG, 10},
    {"release", M_FLAG, 10},  {"acq_rel", M_FLAG, 10}, {"sc", M_FLAG, 10},
    {"nc", M_FLAG, 11},       {"gpu", M_FLAG, 12},     {"cta", M_FLAG, 12},
    {"sys", M_FLAG, 12},      {"full", M_FLAG, 14},
    /* Accepted and without effect: volatile and cache hints. */
    {"volatile", M_IGNORE, 0}, {"gl", M_IGNORE, 0},
    {"ca", M_IGNORE, 0}, {"cg", M_IGNORE, 0}, {"cs", M_IGNORE, 0}, {"lu", M_IGNORE, 0},
    {"cv", M_IGNORE, 0}, {"wb", M_IGNORE, 0}, {"wt", M_IGNORE, 0},
};

static int piece_is(const char *s, size_t len, const char *w)
{
    return strlen(w) == len && memcmp(s, w, len) == 0;
}

/* Apply one ".xxx" piece of an opcode to the instruction. */
static void decode_mod(parser *p, px_insn *in, const char *s, size_t len, int *ntypes,
                       const char *whole)
{
    int op = in->op;
    int t = lookup_type(s - 1, len + 1);
    if (t != PX_T_NONE) {
        if (*ntypes == 0)
            in->t1 = (uint8_t)t;
        else if (*ntypes == 1)
            in->t2 = (uint8_t)t;
        else
            fail(p, EO_ERR_FORMAT, in->line, "too many types in '%s'", whole);
        (*ntypes)++;
        return;
    }
    /* Meaning that depends on the opcode. */
    if (piece_is(s, len, "lo") || piece_is(s, len, "hi")) {
        if (op == PX_OP_SETP)
            in->cmp = piece_is(s, len, "lo") ? PX_CMP_LO : PX_CMP_HI;
        else
            in->flags |= piece_is(s, len, "lo") ? PX_F_LO : PX_F_HI;
        return;
    }
    if (op == PX_OP_SETP || op == PX_OP_ATOM || op == PX_OP_RED) {
        static const char *const w[] = {"and", "or", "xor", "add", "min", "max"};
        static const uint8_t v[] = {PX_SUB_AND, PX_SUB_OR, PX_SUB_XOR, PX_SUB_ADD, PX_SUB_MIN,
                                    PX_SUB_MAX};
        for (int i = 0; i < 6; i++)
            if (piece_is(s, len, w[i]) && (op != PX_OP_SETP || i < 3)) {
                in->sub = v[i];
                return;
            }
    }
    if (piece_is(s, len, "uni")) {
        if (op == PX_OP_VOTE)
            in->sub = PX_SUB_UNI;
        return; /* bra.uni: a promise of no divergence; nothing to do */
    }
    if (piece_is(s, len, "warp") && op == PX_OP_BAR) {
        in->op = PX_OP_BAR_WARP;
        return;
    }
    for (size_t i = 0; i < sizeof moddefs / sizeof moddefs[0]; i++) {
        const moddef *d = &moddefs[i];
        if (!piece_is(s, len, d->name))
            continue;
        switch (d->cat) {
        case M_SPACE: in->space = d->val; return;
        case M_VEC: in->vec = d->val; return;
        case M_RND: in->rnd = d->val; return;
        case M_CMP: in->cmp = d->val; return;
        case M_SUB: in->sub = d->val; return;
        case M_FLAG: in->flags |= (uint16_t)(1u << d->val); return;
        default: return;
        }
    }
    fail(p, EO_ERR_UNSUPPORTED, in->line, "unsupported modifier '.%.*s' in '%s'", (int)len, s,
         whole);
}

/* ---- cp.async (sm_80 asynchronous copies) ------------------------------------
 * Kept apart from the table above because its opcode is three words long
 * ("cp.async.wait_group") and its first form has two addresses:
 *     cp.async.ca.shared.global [dst], [src], cp-size{, src-size};   cp-size 4, 8 or 16
 *     cp.async.cg.shared.global [dst], [src], 16{, src-size};        (.cg: 16 only)
 *     cp.async.commit_group;   cp.async.wait_group N;   cp.async.wait_all;
 * How the executor runs them is described in exec.c ("asynchronous copies"). */
static const opdef cp_async_defs[] = {
    {"cp.async", PX_OP_CP_ASYNC, 3, 4},
    {"cp.async.commit_group", PX_OP_CP_COMMIT, 0, 0},
    {"cp.async.wait_group", PX_OP_CP_WAIT, 1, 1},
    {"cp.async.wait_all", PX_OP_CP_WAIT, 0, 0},
};

static void decode_cp_async(parser *p, px_insn *in, const char *whole, const opdef **def)
{
    if (strcmp(whole, "cp.async.commit_group") == 0)
        *def = &cp_async_defs[1];
    else if (strcmp(whole, "cp.async.wait_group") == 0)
        *def = &cp_async_defs[2];
    else if (strcmp(whole, "cp.async.wait_all") == 0)
        *def = &cp_async_defs[3];
    else if (strcmp(whole, "cp.async.ca.shared.global") == 0 ||
             strcmp(whole, "cp.async.cg.shared.global") == 0) {
        *def = &cp_async_defs[0];
        in->space = PX_SP_SHARED;
        in->sub = whole[10] == 'g' ? 1 : 0; /* 1: .cg (16-byte copies only) */
    } else
        fail(p, EO_ERR_UNSUPPORTED, in->line, "unsupported instruction '%s'", whole);
    in->op = (*def)->op;
    next(p);
}

static void validate_cp_async(parser *p, px_insn *in)
{
    const px_operand *o = in->o;
    int line = in->line;
    if (in->op == PX_OP_CP_WAIT && in->nops == 1 && o[0].kind != PX_O_IMM)
        fail(p, EO_ERR_FORMAT, line, "cp.async.wait_group takes an integer constant");
    if (in->op != PX_OP_CP_ASYNC)
        return;
    if (o[0].kind != PX_O_MEM || o[1].kind != PX_O_MEM || o[1].sym_space != 0)
        fail(p, EO_ERR_FORMAT, line, "cp.async needs [shared destination], [global source]");
    if (o[2].kind != PX_O_IMM || (o[2].imm != 4 && o[2].imm != 8 && o[2].imm != 16) ||
        (in->sub == 1 && o[2].imm != 16))
        fail(p, EO_ERR_FORMAT, line, "cp.async copies 4, 8 or 16 bytes (.cg: 16)");
    if (in->nops == 4 && o[3].kind != PX_O_IMM && o[3].kind != PX_O_REG)
        fail(p, EO_ERR_FORMAT, line, "cp.async src-size must be a register or a constant");
}
/* ---- end of cp.async ---------------------------------------------------------- */

/* ---- tensor cores: mma.sync and ldmatrix ---------------------------------------
 * Only the forms a bf16/f16 GEMM needs, spelled out whole (the PTX ISA
 * document, "Warp Level Matrix Multiply-Accumulate Instructions": mma and
 * ldmatrix):
 *     mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32  {d0..d3}, {a0..a3}, {b0,b1}, {c0..c3};
 *     mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32    (the same operands)
 *     ldmatrix.sync.aligned.m8n8.x1|x2|x4{.trans}.shared{::cta}.b16  {d0..}, [addr];
 * d and c are .f32 registers, a and b .b32 registers holding two 16-bit
 * values each. exec.c ("tensor cores") has the fragment layouts. */
static const opdef tc_defs[] = {
    {"mma", PX_OP_MMA, 4, 4},
    {"ldmatrix", PX_OP_LDMATRIX, 2, 2},
};

static void decode_tc(parser *p, px_insn *in, const char *whole, const opdef **def)
{
    static const char mma_pre[] = "mma.sync.aligned.m16n8k16.row.col.f32.";
    static const char ldm_pre[] = "ldmatrix.sync.aligned.m8n8.";
    size_t n = strlen(mma_pre), m = strlen(ldm_pre);
    if (strncmp(whole, mma_pre, n) == 0) {
        const char *t = whole + n;
        *def = &tc_defs[0];
        in->t1 = PX_T_F32;
        if (strcmp(t, "bf16.bf16.f32") == 0)
            in->sub = PX_MMA_BF16;
        else if (strcmp(t, "f16.f16.f32") == 0)
            in->sub = PX_MMA_F16;
        else
            fail(p, EO_ERR_UNSUPPORTED, in->line, "unsupported mma form '%s' (the interpreter "
                 "models m16n8k16.row.col with f32 accumulation of bf16 or f16)", whole);
    } else if (strncmp(whole, ldm_pre, m) == 0) {
        const char *t = whole + m;
        *def = &tc_defs[1];
        in->t1 = PX_T_B16;
        in->space = PX_SP_SHARED;
        in->vec = (uint8_t)(t[0] == 'x' ? t[1] - '0' : 0);
        if (t[0] == 'x')
            t += 2;
        if (strncmp(t, ".trans", 6) == 0) {
            in->flags |= PX_F_TRANS;
            t += 6;
        }
        if ((in->vec != 1 && in->vec != 2 && in->vec != 4) ||
            (strcmp(t, ".shared.b16") != 0 && strcmp(t, ".shared::cta.b16") != 0))
            fail(p, EO_ERR_UNSUPPORTED, in->line, "unsupported ldmatrix form '%s' (the "
                 "interpreter models m8n8.x1/.x2/.x4{.trans}.shared.b16)", whole);
    } else {
        fail(p, EO_ERR_UNSUPPORTED, in->line, "unsupported instruction '%s'", whole);
    }
    in->flags |= PX_F_SYNC | PX_F_ALIGNED;
    in->op = (*def)->op;
    next(p);
}

static void validate_tc(parser *p, px_insn *in)
{
    const px_operand *o = in->o;
    if (in->op == PX_OP_MMA) {
        static const int want[4] = {4, 4, 2, 4};
        for (int i = 0; i < 4; i++)
            if (o[i].kind != PX_O_VEC || o[i].nvec != want[i])
                fail(p, EO_ERR_FORMAT, in->line, "mma.m16n8k16 takes {4 registers}, {4}, {2}, "
                     "{4} (operand %d)", i + 1);
        return;
    }
    if (o[0].kind != PX_O_VEC || o[0].nvec != in->vec)
        fail(p, EO_ERR_FORMAT, in->line, "ldmatrix .x%d writes {%d registers}", in->vec, in->vec);
    if (o[1].kind != PX_O_MEM)
        fail(p, EO_ERR_FORMAT, in->line, "ldmatrix reads a shared address [..]");
}
/* ---- end of tensor cores --------------------------------------------------------- */

static void decode_opcode(parser *p, px_insn *in, const opdef **def)
{
    char whole[96];
    size_t len = p->t.len < sizeof whole - 1 ? p->t.len : sizeof whole - 1;
    memcpy(whole, p->t.s, len);
    whole[len] = 0;
    const char *dot = strchr(whole, '.');
    size_t blen = dot ? (size_t)(dot - whole) : len;
    *def = NULL;
    if (piece_is(whole, blen, "cp")) { /* cp.async: see above */
        decode_cp_async(p, in, whole, def);
        return;
    }
    if (piece_is(whole, blen, "mma") || piece_is(whole, blen, "ldmatrix")) {
        decode_tc(p, in, whole, def);
        return;
    }
    for (size_t i = 0; i < sizeof opdefs / sizeof opdefs[0]; i++)
        if (piece_is(whole, blen, opdefs[i].name))
            *def = &opdefs[i];
    if (!*def)
        fail(p, EO_ERR_UNSUPPORTED, in->line, "unsupported instruction '%s'", whole);
    in->op = (*def)->op;
    if (in->op == PX_OP_BAR)
        in->flags |= piece_is(whole, blen, "bar") ? PX_F_ALIGNED : 0;
    if (in->op == PX_OP_MEMBAR)
        in->flags |= piece_is(whole, blen, "fence") ? PX_F_FENCE : 0;
    /* Spaces the interpreter does not model are refused by name. */
    if (strstr(whole, ".local") || strstr(whole, ".const") || strstr(whole, ".tex"))
        fail(p, EO_ERR_UNSUPPORTED, in->line, "unsupported state space in '%s'", whole);
    int ntypes = 0;
    const char *q = dot;
    while (q) {
        const char *s = q + 1;
        const char *e = strchr(s, '.');
        size_t pl = e ? (size_t)(e - s) : strlen(s);
        if (pl == 0)
            fail(p, EO_ERR_FORMAT, in->line, "malformed opcode '%s'", whole);
        decode_mod(p, in, s, pl, &ntypes, whole);
        q = e;
    }
    next(p);
}

static int find_sreg(const char *s, size_t len)
{
    for (int i = 0; i < PX_SR_COUNT; i++)
        if (strlen(sreg_names[i]) == len && memcmp(sreg_names[i], s, len) == 0)
            return i;
    return -1;
}

static int take_reg(parser *p)
{
    char b[64];
    if (p->t.kind != TK_ID)
        fail(p, EO_ERR_FORMAT, p->t.line, "expected a register, found '%s'", tokstr(p, b, sizeof b));
    int r = find_reg(p, p->t.s, p->t.len);
    if (r < 0)
        fail(p, EO_ERR_FORMAT, p->t.line, "unknown register '%s'", tokstr(p, b, sizeof b));
    next(p);
    return r;
}

/* A float or integer literal; `neg` when a '-' preceded it. */
static void parse_number(parser *p, px_operand *o, int neg)
{
    char b[64];
    const char *s = p->t.s;
    size_t len = p->t.len;
    o->kind = PX_O_IMM;
    if (len >= 2 && s[0] == '0' && (s[1] == 'f' || s[1] == 'F' || s[1] == 'd' || s[1] == 'D')) {
        int is64 = s[1] == 'd' || s[1] == 'D';
        size_t want = is64 ? 16 : 8;
        if (len != want + 2)
            fail(p, EO_ERR_FORMAT, p->t.line, "bad float literal '%s'", tokstr(p, b, sizeof b));
        uint64_t v = 0;
        for (size_t i = 2; i < len; i++) {
            int c = (unsigned char)s[i];
            if (!isxdigit(c))
                fail(p, EO_ERR_FORMAT, p->t.line, "bad float literal '%s'", tokstr(p, b, sizeof b));
            v = v * 16 + (uint64_t)(isdigit(c) ? c - '0' : (tolower(c) - 'a' + 10));
        }
        if (neg)
            v ^= is64 ? 0x8000000000000000ull : 0x80000000ull;
        o->ik = is64 ? PX_IK_F64BITS : PX_IK_F32BITS;
        o->imm = (int64_t)v;
    } else if (memchr(s, '.', len) || ((memchr(s, 'e', len) || memchr(s, 'E', len)) &&
                                        !(len > 1 && (s[1] == 'x' || s[1] == 'X')))) {
        tokstr(p, b, sizeof b);
        char *end;
        double d = strtod(b, &end);
        if (*end)
            fail(p, EO_ERR_FORMAT, p->t.line, "bad number '%s'", b);
        if (neg)
            d = -d;
        o->ik = PX_IK_DEC;
        memcpy(&o->imm, &d, sizeof d);
    } else {
        int64_t v = parse_int_text(p, s, len, p->t.line);
        o->ik = PX_IK_INT;
        o->imm = neg ? (int64_t)(0 - (uint64_t)v) : v;
    }
    next(p);
}

static void add_label_ref(parser *p, int line)
{
    p->refs = grow(p, p->refs, &p->cap_refs, p->nrefs + 1, sizeof *p->refs);
    labelref *r = &p->refs[p->nrefs++];
    size_t len = p->t.len < sizeof r->name - 1 ? p->t.len : sizeof r->name - 1;
    memcpy(r->name, p->t.s, len);
    r->name[len] = 0;
    r->insn = p->k->ncode;
    r->line = line;
}

/* [reg], [reg+imm], [sym], [sym+imm], [imm] */
static void parse_mem(parser *p, px_operand *o, int line)
{
    char b[64];
    next(p); /* [ */
    o->kind = PX_O_MEM;
    o->reg = -1;
    o->v[0] = -1;
    if (p->t.kind == TK_NUM) {
        o->imm = take_int(p);
        expect(p, ']');
        return;
    }
    if (p->t.kind != TK_ID)
        fail(p, EO_ERR_FORMAT, line, "bad address '%s'", tokstr(p, b, sizeof b));
    int r = find_reg(p, p->t.s, p->t.len);
    int sh = r < 0 ? find_shared(p, p->t.s, p->t.len) : -1;
    int pa = r < 0 && sh < 0 ? find_param(p, p->t.s, p->t.len) : -1;
    if (r >= 0) {
        o->reg = r;
    } else if (sh >= 0) {
        o->sym_space = PX_SP_SHARED;
        o->v[0] = sh; /* resolved to an offset once the layout is known */
    } else if (pa >= 0) {
        o->sym_space = PX_SP_PARAM;
        o->imm = (int64_t)p->k->params[pa].offset;
    } else {
        fail(p, EO_ERR_FORMAT, line, "unknown register or symbol '%s'", tokstr(p, b, sizeof b));
    }
    next(p);
    if (is_punct(p, '+')) {
        next(p);
        o->imm = (int64_t)((uint64_t)o->imm + (uint64_t)take_int(p));
    } else if (is_punct(p, '-')) {
        fail(p, EO_ERR_FORMAT, line, "write a negative offset as [base+-N]"); /* as ptxas */
    }
    expect(p, ']');
}

static void parse_operand(parser *p, px_operand *o, int line)
{
    char b[64];
    memset(o, 0, sizeof *o);
    o->reg = -1;
    if (is_punct(p, '[')) {
        parse_mem(p, o, line);
        return;
    }
    if (is_punct(p, '{')) {
        next(p);
        o->kind = PX_O_VEC;
        for (;;) {
            if (o->nvec == 4)
                fail(p, EO_ERR_UNSUPPORTED, line, "vector of more than 4 elements");
            if (is(p, "_")) {
                o->v[o->nvec++] = -1;
                next(p);
            } else {
                o->v[o->nvec++] = take_reg(p);
            }
            if (!is_punct(p, ','))
                break;
            next(p);
        }
        expect(p, '}');
        return;
    }
    if (is_punct(p, '!')) {
        next(p);
        o->kind = PX_O_REG;
        o->neg = 1;
        o->reg = take_reg(p);
        return;
    }
    if (is_punct(p, '-')) {
        next(p);
        if (p->t.kind != TK_NUM)
            fail(p, EO_ERR_FORMAT, line, "expected a number after '-'");
        parse_number(p, o, 1);
        return;
    }
    if (p->t.kind == TK_NUM) {
        parse_number(p, o, 0);
        return;
    }
    if (p->t.kind != TK_ID)
        fail(p, EO_ERR_FORMAT, line, "unexpected '%s'", tokstr(p, b, sizeof b));
    if (is(p, "_")) {
        o->kind = PX_O_SINK;
        next(p);
        return;
    }
    int r = find_reg(p, p->t.s, p->t.len);
    if (r >= 0) {
        o->kind = PX_O_REG;
        o->reg = r;
        next(p);
        if (is_punct(p, '|')) { /* setp/shfl second destination: p|q */
            next(p);
            o->nvec = 1;
            o->v[0] = take_reg(p);
        }
        return;
    }
    if (p->t.s[0] == '%') {
        int s = find_sreg(p->t.s, p->t.len);
        if (s < 0)
            fail(p, EO_ERR_UNSUPPORTED, line, "unknown register '%s'", tokstr(p, b, sizeof b));
        o->kind = PX_O_SREG;
        o->reg = s;
        next(p);
        return;
    }
    int sh = find_shared(p, p->t.s, p->t.len);
    if (sh >= 0) {
        o->kind = PX_O_SYM;
        o->v[0] = sh;
        next(p);
        return;
    }
    if (find_param(p, p->t.s, p->t.len) >= 0)
        fail(p, EO_ERR_UNSUPPORTED, line, "unsupported: the address of parameter '%s'",
             tokstr(p, b, sizeof b));
    o->kind = PX_O_LABEL;
    add_label_ref(p, line);
    next(p);
}

/* What each opcode needs, checked once here so the executor can trust
 * the decoded form without re-checking per thread. */
static void validate(parser *p, px_insn *in)
{
    int op = in->op, line = in->line;
    const px_operand *o = in->o;
    if (op == PX_OP_CP_ASYNC || op == PX_OP_CP_COMMIT || op == PX_OP_CP_WAIT) {
        validate_cp_async(p, in);
        return;
    }
    if (op == PX_OP_MMA || op == PX_OP_LDMATRIX) {
        validate_tc(p, in);
        return;
    }
    /* cvt to a packed pair takes two sources; 16-bit floats convert
     * to and from f32 only (the forms the interpreter models). */
    if (op == PX_OP_CVT && (in->t1 == PX_T_F16X2 || in->t1 == PX_T_BF16X2) != (in->nops == 3))
        fail(p, EO_ERR_FORMAT, line, "cvt to .f16x2/.bf16x2 takes two sources, other cvt one");
    if (op == PX_OP_CVT && (px_type_is_16f(in->t1) || px_type_is_16f(in->t2)) &&
        (px_type_is_16f(in->t1) ? in->t2 : in->t1) != PX_T_F32)
        fail(p, EO_ERR_UNSUPPORTED, line, "unsupported: cvt between a 16-bit float and %s "
             "(the interpreter models conversions to and from .f32)",
             px_type_name(px_type_is_16f(in->t1) ? in->t2 : in->t1));
    if (op == PX_OP_CVT && (in->t2 == PX_T_F16X2 || in->t2 == PX_T_BF16X2))
        fail(p, EO_ERR_FORMAT, line, "a packed pair is not a cvt source");
    int needs_type = !(op == PX_OP_BRA || op == PX_OP_BAR || op == PX_OP_BAR_WARP ||
                       op == PX_OP_MEMBAR || op == PX_OP_EXIT);
    if (needs_type && in->t1 == PX_T_NONE)
        fail(p, EO_ERR_FORMAT, line, "instruction needs a type");
    if (op != PX_OP_CVT && op != PX_OP_SETP && in->t2 != PX_T_NONE)
        fail(p, EO_ERR_FORMAT, line, "unexpected second type");
    if (op == PX_OP_CVT && in->t2 == PX_T_NONE)
        fail(p, EO_ERR_FORMAT, line, "cvt needs two types");
    if (in->vec && op != PX_OP_LD && op != PX_OP_ST)
        fail(p, EO_ERR_UNSUPPORTED, line, "vector form only for ld/st");
    int rd = op != PX_OP_ST && op != PX_OP_RED && op != PX_OP_BRA && op != PX_OP_BAR &&
             op != PX_OP_BAR_WARP && op != PX_OP_MEMBAR && op != PX_OP_EXIT;
    if (rd) {
        int ok = o[0].kind == PX_O_REG || o[0].kind == PX_O_SINK ||
                 (op == PX_OP_LD && in->vec && o[0].kind == PX_O_VEC);
        if (!ok || o[0].neg)
            fail(p, EO_ERR_FORMAT, line, "destination must be a register");
        if (o[0].kind == PX_O_REG && o[0].nvec && op != PX_OP_SETP && op != PX_OP_SHFL)
            fail(p, EO_ERR_FORMAT, line, "'|' only in setp and shfl destinations");
    }
    int is_mem = op == PX_OP_LD || op == PX_OP_ST || op == PX_OP_ATOM || op == PX_OP_RED;
    for (int i = 0; i < in->nops; i++) {
        int k = o[i].kind;
        int mem_slot = is_mem && i == (op == PX_OP_LD || op == PX_OP_ATOM ? 1 : 0);
        if (mem_slot != (k == PX_O_MEM))
            fail(p, EO_ERR_FORMAT, line, mem_slot ? "expected an address [..]"
                                                  : "an address [..] is not allowed here");
        if (k == PX_O_LABEL && op != PX_OP_BRA)
            fail(p, EO_ERR_FORMAT, line, "unknown register or symbol");
        if (k == PX_O_VEC && !((op == PX_OP_LD && i == 0) || (op == PX_OP_ST && i == 1)))
            fail(p, EO_ERR_UNSUPPORTED, line, "unsupported: vector operand here");
        if (k == PX_O_VEC && o[i].nvec != (in->vec ? in->vec : 1))
            fail(p, EO_ERR_FORMAT, line, "vector operand size does not match .v%d", in->vec);
        if (k == PX_O_SYM && op != PX_OP_MOV)
            fail(p, EO_ERR_UNSUPPORTED, line, "unsupported: a symbol as an operand here");
        if (k == PX_O_SINK && i > 0)
            fail(p, EO_ERR_FORMAT, line, "'_' only as a destination");
    }
    if (op == PX_OP_BRA && o[0].kind != PX_O_LABEL)
        fail(p, EO_ERR_UNSUPPORTED, line, "unsupported: indirect branch");
    if (is_mem) {
        const px_operand *m = &o[op == PX_OP_LD || op == PX_OP_ATOM ? 1 : 0];
        if (m->sym_space == PX_SP_PARAM && in->space != PX_SP_PARAM)
            fail(p, EO_ERR_FORMAT, line, "parameter used without .param");
        if (in->space == PX_SP_PARAM && (op != PX_OP_LD || m->sym_space != PX_SP_PARAM))
            fail(p, EO_ERR_UNSUPPORTED, line, "unsupported: .param access other than ld of a kernel parameter");
        if (m->sym_space == PX_SP_SHARED && in->space == PX_SP_GLOBAL)
            fail(p, EO_ERR_FORMAT, line, "shared variable used with .global");
        /* Vector accesses move at most 16 bytes, of 32- or 64-bit elements. */
        if (in->vec && (px_type_bytes(in->t1) < 4 || px_type_bytes(in->t1) * in->vec > 16))
            fail(p, EO_ERR_UNSUPPORTED, line, "unsupported: .v%d access of %s", in->vec,
                 px_type_name(in->t1));
    }
    if ((op == PX_OP_ATOM || op == PX_OP_RED) && in->sub == PX_SUB_NONE)
        fail(p, EO_ERR_FORMAT, line, "atom/red needs an operation");
    if (op == PX_OP_ATOM && (in->sub == PX_SUB_CAS) != (in->nops == 4))
        fail(p, EO_ERR_FORMAT, line, "wrong operand count for atom");
    if (op == PX_OP_RED && (in->sub == PX_SUB_CAS || in->sub == PX_SUB_EXCH))
        fail(p, EO_ERR_FORMAT, line, "red has no cas/exch");
    if ((op == PX_OP_ATOM || op == PX_OP_RED) && in->space == PX_SP_GENERIC)
        fail(p, EO_ERR_UNSUPPORTED, line, "unsupported: generic-address atomics (name .global or .shared)");
    if (op == PX_OP_SETP && in->cmp == PX_CMP_NONE)
        fail(p, EO_ERR_FORMAT, line, "setp needs a comparison");
    if (op == PX_OP_SETP && (in->nops == 4) != (in->sub != PX_SUB_NONE))
        fail(p, EO_ERR_FORMAT, line, "setp: a combiner needs a third source and vice versa");
    if (op == PX_OP_SHFL && (in->sub < PX_SUB_UP || in->sub > PX_SUB_IDX || in->t1 != PX_T_B32))
        fail(p, EO_ERR_UNSUPPORTED, line, "unsupported shfl form (need shfl.sync.MODE.b32)");
    if (op == PX_OP_VOTE && (in->sub < PX_SUB_ALL))
        fail(p, EO_ERR_FORMAT, line, "vote needs a mode");
    if (op == PX_OP_CVTA && in->space != PX_SP_GLOBAL && in->space != PX_SP_SHARED)
        fail(p, EO_ERR_UNSUPPORTED, line, "unsupported cvta space");
    if (op == PX_OP_BAR && in->vec)
        fail(p, EO_ERR_FORMAT, line, "bad barrier");
    if (op == PX_OP_BAR && (o[0].kind != PX_O_IMM || o[0].imm != 0))
        fail(p, EO_ERR_UNSUPPORTED, line, "unsupported: barriers other than 'bar.sync 0'");
    if ((op == PX_OP_BAR || op == PX_OP_BAR_WARP) && in->sub != PX_SUB_NONE)
        fail(p, EO_ERR_UNSUPPORTED, line, "unsupported barrier form");
    if (in->t1 == PX_T_PRED && op != PX_OP_SETP && op != PX_OP_MOV && op != PX_OP_AND &&
        op != PX_OP_OR && op != PX_OP_XOR && op != PX_OP_NOT && op != PX_OP_VOTE &&
        op != PX_OP_SELP)
        fail(p, EO_ERR_FORMAT, line, "this instruction does not take .pred");
    int rnd = in->rnd;
    int rounds = op == PX_OP_CVT || op == PX_OP_ADD || op == PX_OP_SUB || op == PX_OP_MUL ||
                 op == PX_OP_MAD || op == PX_OP_FMA || op == PX_OP_DIV || op == PX_OP_SQRT ||
                 op == PX_OP_RCP;
    if (rnd != PX_RND_NONE && !rounds)
        fail(p, EO_ERR_FORMAT, line, "this instruction takes no rounding modifier");
    if (rnd >= PX_RND_RZ && rnd <= PX_RND_RP && op != PX_OP_CVT && !px_type_is_float(in->t1))
        fail(p, EO_ERR_FORMAT, line, "rounding modifiers apply to float results only");
    if (rnd >= PX_RND_RNI && op != PX_OP_CVT)
        fail(p, EO_ERR_FORMAT, line, "integer rounding only in cvt");
    if (op == PX_OP_COPYSIGN && !px_type_is_float(in->t1))
        fail(p, EO_ERR_FORMAT, line, "copysign needs .f32 or .f64");
}

static void parse_instruction(parser *p)
{
    eo_px_kernel *k = p->k;
    int cap = p->cap_code;
    k->code = grow(p, k->code, &cap, k->ncode + 1, sizeof *k->code);
    p->cap_code = cap;
    px_insn *in = &k->code[k->ncode];
    memset(in, 0, sizeof *in);
    in->guard = -1;
    in->line = p->t.line;
    in->text_off = (uint32_t)p->t.off;
    if (is_punct(p, '@')) {
        next(p);
        if (is_punct(p, '!')) {
            in->guard_neg = 1;
            next(p);
        }
        in->guard = take_reg(p);
    }
    if (p->t.kind != TK_ID) {
        char b[64];
        fail(p, EO_ERR_FORMAT, p->t.line, "expected an instruction, found '%s'", tokstr(p, b, sizeof b));
    }
    const opdef *def;
    decode_opcode(p, in, &def);
    while (!is_punct(p, ';')) {
        if (p->t.kind == TK_EOF)
            fail(p, EO_ERR_FORMAT, in->line, "missing ';'");
        if (in->nops == PX_MAX_OPS)
            fail(p, EO_ERR_FORMAT, in->line, "too many operands");
        parse_operand(p, &in->o[in->nops++], in->line);
        if (is_punct(p, ','))
            next(p);
        else if (!is_punct(p, ';')) {
            char b[64];
            fail(p, EO_ERR_FORMAT, p->t.line, "expected ',' or ';', found '%s'", tokstr(p, b, sizeof b));
        }
    }
    in->text_len = (uint32_t)(p->t.off + 1 - in->text_off);
    next(p);
    if (in->nops < def->nmin || in->nops > def->nmax)
        fail(p, EO_ERR_FORMAT, in->line, "%s takes %d operand(s), found %d", def->name, def->nmin,
             in->nops);
    validate(p, in);
    char why[256];
    eo_status st = px_rules_insn(k, in, p->ptx, p->sm, why, sizeof why);
    if (st != EO_OK)
        fail(p, st, in->line, "'%.*s': %s", (int)(in->text_len < 80 ? in->text_len : 80),
             p->s + in->text_off, why);
    for (int i = 0; i < PX_MAX_OPS; i++)
        in->stype[i] = (uint8_t)px_src_type(in, i);
    in->dtype = (uint8_t)px_dst_type(in);
    k->ncode++;
}

/* Lay out the kernel's shared variables, then patch the operands that
 * named them. Extern arrays all start at the same place, after the
 * static ones, as in CUDA. */
static void finish_kernel(parser *p)
{
    eo_px_kernel *k = p->k;
    size_t off = 0;
    uint64_t ext_align = 16;
    for (int i = 0; i < p->nsh; i++) {
        shsym *s = &p->sh[i];
        if (s->is_extern) {
            if (s->align > ext_align)
                ext_align = s->align;
            continue;
        }
        off = align_up(p, off, s->align, EO_PX_MAX_SHARED, k->line, s->name);
        s->offset = off;
        if (s->size > EO_PX_MAX_SHARED - off)
            fail(p, EO_ERR_FORMAT, k->line,
                 "kernel '%s' declares more than %u bytes of shared memory (at '%s')", k->name,
                 EO_PX_MAX_SHARED, s->name);
        off += s->size;
    }
    k->static_shared = off;
    k->dyn_shared_off = align_up(p, off, ext_align, EO_PX_MAX_SHARED, k->line,
                                 "the dynamic shared memory");
    for (int i = 0; i < p->nsh; i++)
        if (p->sh[i].is_extern)
            p->sh[i].offset = k->dyn_shared_off;
    for (int i = 0; i < k->ncode; i++)
        for (int j = 0; j < k->code[i].nops; j++) {
            px_operand *o = &k->code[i].o[j];
            if ((o->kind == PX_O_SYM || (o->kind == PX_O_MEM && o->sym_space == PX_SP_SHARED)) &&
                o->v[0] >= 0) {
                o->imm += (int64_t)p->sh[o->v[0]].offset;
                o->v[0] = -1;
            }
        }
    for (int i = 0; i < p->nrefs; i++) {
        int pc = -1;
        for (int j = 0; j < p->nlabels; j++)
            if (strcmp(p->labels[j], p->refs[i].name) == 0)
                pc = p->label_pc[j];
        if (pc < 0)
            fail(p, EO_ERR_FORMAT, p->refs[i].line, "unknown label or symbol '%s'", p->refs[i].name);
        for (int j = 0; j < k->code[p->refs[i].insn].nops; j++)
            if (k->code[p->refs[i].insn].o[j].kind == PX_O_LABEL)
                k->code[p->refs[i].insn].o[j].imm = pc;
    }
    /* A kernel that runs off its end has an implicit exit. */
    if (k->ncode == 0 || k->code[k->ncode - 1].op != PX_OP_EXIT) {
        int cap = p->cap_code;
        k->code = grow(p, k->code, &cap, k->ncode + 1, sizeof *k->code);
        p->cap_code = cap;
        px_insn *in = &k->code[k->ncode++];
        memset(in, 0, sizeof *in);
        in->op = PX_OP_EXIT;
        in->guard = -1;
        in->line = p->line;
    }
}

/* Skip to the end of the current source line (for .loc/.file, which
 * have no terminating ';'). */
static void skip_line(parser *p)
{
    int line = p->t.line;
    while (p->t.kind != TK_EOF && p->t.line == line)
        next(p);
}

static void parse_body(parser *p)
{
    int depth = 1;
    expect(p, '{');
    while (depth > 0) {
        char b[64];
        if (p->t.kind == TK_EOF)
            fail(p, EO_ERR_FORMAT, p->line, "missing '}' at end of kernel '%s'", p->k->name);
        if (is_punct(p, '{')) {
            depth++;
            next(p);
        } else if (is_punct(p, '}')) {
            depth--;
            next(p);
        } else if (is_punct(p, ';')) {
            next(p);
        } else if (is(p, ".reg")) {
            parse_reg_decl(p);
        } else if (is(p, ".shared")) {
            parse_shared_decl(p, 0);
        } else if (is(p, ".extern")) {
            fail(p, EO_ERR_FORMAT, p->t.line, ".extern is only allowed at module scope (as ptxas)");
        } else if (is(p, ".loc") || is(p, ".file")) {
            skip_line(p);
        } else if (is(p, ".pragma")) {
            while (!is_punct(p, ';') && p->t.kind != TK_EOF)
                next(p);
        } else if (p->t.kind == TK_ID && p->t.s[0] == '.') {
            fail(p, EO_ERR_UNSUPPORTED, p->t.line, "unsupported directive '%s'", tokstr(p, b, sizeof b));
        } else if (p->t.kind == TK_ID && p->pos < p->n && p->s[p->pos] == ':') {
            p->labels = grow(p, p->labels, &p->cap_labels, p->nlabels + 1, sizeof *p->labels);
            p->label_pc = realloc(p->label_pc, (size_t)p->cap_labels * sizeof *p->label_pc);
            if (!p->label_pc)
                fail(p, EO_ERR_OOM, p->line, "out of memory");
            take_id(p, p->labels[p->nlabels], sizeof p->labels[0]);
            for (int j = 0; j < p->nlabels; j++)
                if (strcmp(p->labels[j], p->labels[p->nlabels]) == 0)
                    fail(p, EO_ERR_FORMAT, p->t.line, "label '%s' defined twice", p->labels[j]);
            p->label_pc[p->nlabels++] = p->k->ncode;
            expect(p, ':');
        } else {
            parse_instruction(p);
        }
    }
}

/* .entry name ( .param .TYPE [.align N] name[[N]], ... ) [perf directives] { body } */
static void parse_entry(parser *p)
{
    int line = p->t.line;
    next(p);
    int cap = p->m->nkernels;
    eo_px_kernel *ks = realloc(p->m->kernels, (size_t)(cap + 1) * sizeof *ks);
    if (!ks)
        fail(p, EO_ERR_OOM, line, "out of memory");
    p->m->kernels = ks;
    eo_px_kernel *k = &ks[p->m->nkernels++];
    memset(k, 0, sizeof *k);
    p->k = k;
    k->line = line;
    k->src = p->m->src;
    p->cap_code = p->cap_regs = 0;
    p->ndecls = p->nlabels = p->nrefs = 0;
    p->nsh = p->nsh_module;
    take_id(p, k->name, sizeof k->name);
    for (int i = 0; i + 1 < p->m->nkernels; i++)
        if (strcmp(p->m->kernels[i].name, k->name) == 0)
            fail(p, EO_ERR_FORMAT, line, "kernel '%s' defined twice", k->name);
    if (is_punct(p, '(')) {
        next(p);
        int pcap = 0;
        while (!is_punct(p, ')')) {
            if (!is(p, ".param")) {
                char b[64];
                fail(p, EO_ERR_FORMAT, p->t.line, "expected .param, found '%s'", tokstr(p, b, sizeof b));
            }
            int pline = p->t.line;
            next(p);
            uint64_t align = 0;
            int type = PX_T_NONE;
            /* .align and the type may come in either order; .ptr
             * attributes (.ptr .global .align N) only inform the compiler. */
            for (;;) {
                if (is(p, ".align")) {
                    next(p);
                    int64_t a = take_int(p);
                    if (a <= 0 || (a & (a - 1)))
                        fail(p, EO_ERR_FORMAT, p->t.line, "bad alignment");
                    align = (uint64_t)a;
                } else if (is(p, ".ptr") || is(p, ".global") || is(p, ".shared")) {
                    next(p);
                } else if (type == PX_T_NONE && p->t.kind == TK_ID && p->t.s[0] == '.') {
                    type = take_type(p);
                } else {
                    break;
                }
            }
            if (type == PX_T_NONE || type == PX_T_PRED)
                fail(p, EO_ERR_FORMAT, p->t.line, "parameter needs a type");
            k->params = grow(p, k->params, &pcap, k->nparams + 1, sizeof *k->params);
            px_param *pa = &k->params[k->nparams];
            take_id(p, pa->name, sizeof pa->name);
            pa->type = (uint8_t)type;
            pa->size = px_type_bytes(type);
            if (is_punct(p, '[')) {
                next(p);
                int64_t c = take_int(p);
                if (c <= 0 || c > 4096)
                    fail(p, EO_ERR_FORMAT, p->t.line, "bad parameter array size");
                pa->size *= (size_t)c;
                expect(p, ']');
            }
            if (!align)
                align = px_type_bytes(type);
            /* Checked as it grows: one huge .align must not wrap the
             * offsets of the parameters after it. */
            k->param_bytes = align_up(p, k->param_bytes, align, 4096, pline, pa->name);
            pa->offset = k->param_bytes;
            if (pa->size > 4096 - k->param_bytes)
                fail(p, EO_ERR_FORMAT, pline, "parameters exceed 4 KiB (at '%s')", pa->name);
            k->param_bytes += pa->size;
            k->nparams++;
            if (is_punct(p, ','))
                next(p);
            else if (!is_punct(p, ')'))
                fail(p, EO_ERR_FORMAT, p->t.line, "expected ',' or ')' in the parameter list");
        }
        next(p);
    }
    if (k->param_bytes > 4096)
        fail(p, EO_ERR_FORMAT, line, "parameters exceed 4 KiB");
    while (p->t.kind == TK_ID && (is(p, ".maxntid") || is(p, ".reqntid") || is(p, ".minnctapersm") ||
                                  is(p, ".maxnreg") || is(p, ".noreturn") || is(p, ".pragma"))) {
        next(p);
        while (p->t.kind == TK_NUM || is_punct(p, ',') || p->t.kind == TK_PUNCT) {
            if (is_punct(p, '{'))
                break;
            next(p);
        }
    }
    parse_body(p);
    finish_kernel(p);
}

/* .version MAJOR.MINOR, which must open the module (as ptxas requires). */
static void parse_version(parser *p)
{
    char b[64];
    int line = p->t.line;
    if (!is(p, ".version"))
        fail(p, EO_ERR_FORMAT, line, "missing .version directive at the start of the module "
             "(found '%s')", tokstr(p, b, sizeof b));
    next(p);
    const char *s = p->t.s;
    size_t n = p->t.len;
    if (p->t.kind != TK_NUM || n != 3 || !isdigit((unsigned char)s[0]) || s[1] != '.' ||
        !isdigit((unsigned char)s[2]))
        fail(p, EO_ERR_FORMAT, line, "bad .version '%s': expected MAJOR.MINOR such as 7.0",
             tokstr(p, b, sizeof b));
    p->ptx = (s[0] - '0') * 10 + (s[2] - '0');
    if (p->ptx < 23)
        fail(p, EO_ERR_UNSUPPORTED, line, "unsupported: PTX ISA .version %c.%c (.address_size 64 "
             "needs 2.3 or later)", s[0], s[2]);
    next(p);
}

/* .target sm_NN[a|f] (or compute_NN) [, texmode_unified | texmode_independent | debug],
 * right after .version; checked against the version by rules.c. */
static void parse_target(parser *p)
{
    char b[64];
    int line = p->t.line;
    if (!is(p, ".target"))
        fail(p, EO_ERR_FORMAT, line, "missing .target directive after .version (found '%s')",
             tokstr(p, b, sizeof b));
    next(p);
    take_id(p, b, sizeof b);
    const char *digits = strncmp(b, "sm_", 3) == 0 ? b + 3
                         : strncmp(b, "compute_", 8) == 0 ? b + 8 : NULL;
    char *end = NULL;
    long sm = digits && isdigit((unsigned char)digits[0]) ? strtol(digits, &end, 10) : -1;
    if (sm < 0 || sm > 1000 || (*end && strcmp(end, "a") != 0 && strcmp(end, "f") != 0))
        fail(p, EO_ERR_FORMAT, line, "bad .target '%s': expected sm_NN", b);
    p->sm = (int)sm;
    char why[160];
    eo_status st = px_rules_target(p->ptx, p->sm, why, sizeof why);
    if (st != EO_OK)
        fail(p, st, line, "%s", why);
    while (is_punct(p, ',')) {
        next(p);
        take_id(p, b, sizeof b);
        if (strcmp(b, "map_f64_to_f32") == 0)
            fail(p, EO_ERR_UNSUPPORTED, line, "unsupported: .target option map_f64_to_f32");
        if (strcmp(b, "texmode_unified") != 0 && strcmp(b, "texmode_independent") != 0 &&
            strcmp(b, "debug") != 0)
            fail(p, EO_ERR_FORMAT, line, "unknown .target option '%s'", b);
    }
}

static void parse_module(parser *p)
{
    next(p);
    parse_version(p);
    parse_target(p);
    p->m->ptx_version = p->ptx;
    p->m->sm = p->sm;
    while (p->t.kind != TK_EOF) {
        char b[64];
        int line = p->t.line;
        if (is(p, ".version") || is(p, ".target")) {
            fail(p, EO_ERR_FORMAT, line, "a second %s directive", tokstr(p, b, sizeof b));
        } else if (is(p, ".address_size")) {
            next(p);
            if (take_int(p) != 64)
                fail(p, EO_ERR_UNSUPPORTED, line, "unsupported: .address_size other than 64");
        } else if (is(p, ".file")) {
            skip_line(p);
        } else if (is(p, ".visible") || is(p, ".weak")) {
            next(p);
        } else if (is(p, ".entry")) {
            parse_entry(p);
        } else if (is(p, ".shared")) {
            parse_shared_decl(p, 0);
            p->nsh_module = p->nsh;
        } else if (is(p, ".extern")) {
            next(p);
            if (!is(p, ".shared"))
                fail(p, EO_ERR_UNSUPPORTED, line, "unsupported directive '.extern %s'", tokstr(p, b, sizeof b));
            parse_shared_decl(p, 1);
            p->nsh_module = p->nsh;
        } else if (p->t.kind == TK_ID && p->t.s[0] == '.') {
            fail(p, EO_ERR_UNSUPPORTED, line, "unsupported directive '%s'", tokstr(p, b, sizeof b));
        } else {
            fail(p, EO_ERR_FORMAT, line, "unexpected '%s' at module scope", tokstr(p, b, sizeof b));
        }
    }
}

void eo_px_module_free(eo_px_module *m)
{
    if (!m)
        return;
    for (int i = 0; i < m->nkernels; i++) {
        eo_px_kernel *k = &m->kernels[i];
        for (int r = 0; r < k->nregs; r++)
            free(k->reg_name[r]);
        free(k->reg_name);
        free(k->reg_type);
        free(k->code);
        free(k->params);
    }
    free(m->kernels);
    free(m->src);
    free(m);
}

eo_status eo_px_module_load(const char *ptx, size_t len, eo_px_module **out, char *err,
                            size_t errcap)
{
    char dummy[1];
    if (!err || !errcap) {
        err = dummy;
        errcap = sizeof dummy;
    }
    err[0] = 0;
    if (!out || (!ptx && len)) {
        snprintf(err, errcap, "no PTX text");
        return EO_ERR_ARG;
    }
    *out = NULL;
    parser *p = calloc(1, sizeof *p);
    eo_px_module *m = calloc(1, sizeof *m);
    char *src = malloc(len + 1);
    if (!p || !m || !src) {
        free(p);
        free(m);
        free(src);
        snprintf(err, errcap, "out of memory");
        return EO_ERR_OOM;
    }
    if (len)
        memcpy(src, ptx, len);
    src[len] = 0;
    m->src = src;
    p->s = src;
    p->n = strnlen(src, len); /* the driver API passes NUL-terminated text */
    p->line = 1;
    p->err = err;
    p->errcap = errcap;
    p->m = m;
    eo_status st = EO_OK;
    if (setjmp(p->fail) == 0) {
        parse_module(p);
    } else {
        st = p->st;
    }
    free(p->decls);
    free(p->sh);
    free(p->labels);
    free(p->label_pc);
    free(p->refs);
    free(p);
    if (st != EO_OK) {
        eo_px_module_free(m);
        return st;
    }
    *out = m;
    return EO_OK;
}

int eo_px_module_kernel_count(const eo_px_module *m) { return m ? m->nkernels : 0; }
int eo_px_module_ptx_version(const eo_px_module *m) { return m ? m->ptx_version : 0; }
int eo_px_module_target(const eo_px_module *m) { return m ? m->sm : 0; }

const eo_px_kernel *eo_px_module_kernel_at(const eo_px_module *m, int i)
{
    return m && i >= 0 && i < m->nkernels ? &m->kernels[i] : NULL;
}

const eo_px_kernel *eo_px_module_kernel(const eo_px_module *m, const char *name)
{
    for (int i = 0; m && name && i < m->nkernels; i++)
        if (strcmp(m->kernels[i].name, name) == 0)
            return &m->kernels[i];
    return NULL;
}

const char *eo_px_kernel_name(const eo_px_kernel *k) { return k->name; }
int eo_px_kernel_param_count(const eo_px_kernel *k) { return k->nparams; }
size_t eo_px_kernel_param_bytes(const eo_px_kernel *k) { return k->param_bytes; }
size_t eo_px_kernel_static_shared(const eo_px_kernel *k) { return k->static_shared; }
int eo_px_kernel_nregs(const eo_px_kernel *k) { return k->nregs; }

void eo_px_kernel_param(const eo_px_kernel *k, int i, size_t *offset, size_t *size,
                        const char **type)
{
    const px_param *pa = &k->params[i];
    if (offset)
        *offset = pa->offset;
    if (size)
        *size = pa->size;
    if (type)
        *type = px_type_name(pa->type);
}
