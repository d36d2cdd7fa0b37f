/* tools/ptxsim/exec.c — running a decoded kernel the way a GPU does, and
 * checking it while it runs.
 *
 * The execution model, as simple as it can be while still being faithful
 * to the things kernels depend on:
 *
 *  - Blocks run one after another; nothing in CUDA lets one block wait
 *    for another, so the order cannot change a correct kernel's result.
 *  - A block's threads are grouped in warps of 32 consecutive linear
 *    thread indices. A warp executes one instruction at a time for all its
 *    threads that are at that instruction: each thread keeps its own pc,
 *    and the warp always runs the threads with the LOWEST pc. After an
 *    if/else the threads that took the branch wait (their pc is higher)
 *    until the others catch up, and then the warp runs converged again.
 *    This is the reconvergence rule that makes shfl.sync, vote.sync and
 *    bar.sync behave as on hardware for structured code.
 *  - A warp runs until all its threads wait at a barrier or have exited;
 *    then the next warp runs. When every warp is stuck, the barrier is
 *    released if (and only if) every live thread of the block waits at it.
 *
 * The checks ride on that model: every global access is looked up in the
 * heap's allocation table; every shared byte remembers which thread last
 * wrote and read it since the last barrier (a different thread writing or
 * reading it in the same interval is a race); every register has a
 * "written" bit per thread; a collective instruction compares its mask
 * with the lanes actually executing it.
 *
 * The first fault stops the launch and is reported with kernel, block,
 * thread and PTX line.
 *
 * Performance counters (eo_px_counters) ride on the same loop: each warp
 * instruction, once executed, is handed to count.c with its active mask
 * and, for memory instructions, the addresses its lanes used (collected by
 * mem_at as the lanes run). With sampling, only some blocks run. */
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include "tools/ptxsim/alu.h"
#include "tools/ptxsim/count.h"

enum { TS_RUN, TS_BAR, TS_DONE };

/* Per shared byte, within the current barrier interval (`epoch`): the
 * thread that last wrote it and the thread(s) that read it. */
typedef struct shadow {
    uint32_t epoch;
    int16_t writer, reader; /* -1: none; reader -2: several threads */
    int32_t wline, rline;
} shadow;

typedef struct block {
    const eo_px_kernel *k;
    eo_px_heap *heap;
    const eo_px_config *c;
    eo_px_fault *fault;
    int faulted;
    unsigned nthreads, nwarps;
    eo_px_dim ctaid;
    long linear_block;
    uint64_t *regs;   /* [thread][reg] */
    uint8_t *init;    /* [thread][reg]: written by this thread yet? */
    int32_t *pc;
    uint8_t *state;
    uint8_t *shared;
    shadow *sh;
    size_t shared_size;
    uint32_t epoch;
    uint64_t steps, step_limit;
    int tracing;      /* this block is traced */
    /* Counters: the current warp instruction's memory accesses, per lane
     * (shared ones as offsets), filled by mem_at. */
    px_count count;
    uint64_t lane_addr[32];
    uint32_t mem_mask;
    unsigned mem_bytes;
    int mem_shared;
    int pair_second;  /* an odd linear block index (count.h, pair_new_sectors) */
    uint64_t adst[32]; /* cp.async: each lane's shared destination, for the counters */
    uint32_t adst_mask;
    unsigned adst_bytes;
    /* cp.async state, allocated only for kernels that use it (see
     * "asynchronous copies" below). */
    struct async_copy *acp; /* [thread][PX_ASYNC_MAX] copies in flight */
    uint8_t *nacp;          /* [thread] how many */
    uint32_t *agroups;      /* [thread] groups committed so far */
    int16_t *apending;      /* [shared byte] thread whose copy will write it, or -1 */
} block;

static eo_px_dim thread_dim(const block *b, unsigned t)
{
    eo_px_dim d;
    d.x = t % b->c->block.x;
    d.y = t / b->c->block.x % b->c->block.y;
    d.z = t / (b->c->block.x * b->c->block.y);
    return d;
}

static void fault(block *b, eo_px_fault_kind kind, unsigned t, int line, const char *fmt, ...)
{
    if (b->faulted)
        return;
    b->faulted = 1;
    eo_px_fault *f = b->fault;
    f->kind = kind;
    f->line = line;
    f->block = b->ctaid;
    f->thread = thread_dim(b, t);
    snprintf(f->kernel, sizeof f->kernel, "%s", b->k->name);
    char detail[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(detail, sizeof detail, fmt, ap);
    va_end(ap);
    snprintf(f->msg, sizeof f->msg, "%s: kernel '%s' block (%u,%u,%u) thread (%u,%u,%u) line %d: %s",
             eo_px_fault_name(kind), f->kernel, f->block.x, f->block.y, f->block.z, f->thread.x,
             f->thread.y, f->thread.z, line, detail);
}

const char *eo_px_fault_name(eo_px_fault_kind k)
{
    static const char *const names[EO_PX_FAULT_COUNT] = {
        "no fault", "out-of-bounds global access", "misaligned access",
        "out-of-bounds shared access", "out-of-bounds parameter access", "shared-memory race",
        "divergent barrier", "shuffle/vote with unconverged lanes",
        "uninitialised register", "step limit exceeded",
    };
    return (unsigned)k < EO_PX_FAULT_COUNT ? names[k] : "unknown fault";
}

/* ---- registers -------------------------------------------------------------- */

static uint64_t sreg_value(block *b, unsigned t, int s)
{
    const eo_px_config *c = b->c;
    eo_px_dim d = thread_dim(b, t);
    unsigned lane = t % 32;
    switch (s) {
    case PX_SR_TID_X: return d.x;
    case PX_SR_TID_Y: return d.y;
    case PX_SR_TID_Z: return d.z;
    case PX_SR_NTID_X: return c->block.x;
    case PX_SR_NTID_Y: return c->block.y;
    case PX_SR_NTID_Z: return c->block.z;
    case PX_SR_CTAID_X: return b->ctaid.x;
    case PX_SR_CTAID_Y: return b->ctaid.y;
    case PX_SR_CTAID_Z: return b->ctaid.z;
    case PX_SR_NCTAID_X: return c->grid.x;
    case PX_SR_NCTAID_Y: return c->grid.y;
    case PX_SR_NCTAID_Z: return c->grid.z;
    case PX_SR_LANEID: return lane;
    case PX_SR_WARPID: return t / 32;
    case PX_SR_NWARPID: return b->nwarps;
    case PX_SR_SMID: return 0;
    case PX_SR_NSMID: return 1;
    case PX_SR_CLOCK: return (uint32_t)b->steps;
    case PX_SR_CLOCK64: return b->steps;
    case PX_SR_LANEMASK_EQ: return 1u << lane;
    case PX_SR_LANEMASK_LT: return (1u << lane) - 1;
    case PX_SR_LANEMASK_LE: return lane == 31 ? 0xffffffffu : (2u << lane) - 1;
    case PX_SR_LANEMASK_GT: return lane == 31 ? 0 : ~((2u << lane) - 1) & 0xffffffffu;
    case PX_SR_LANEMASK_GE: return ~((1u << lane) - 1) & 0xffffffffu;
    default: return 0;
    }
}

static uint64_t read_reg(block *b, unsigned t, int r, int line)
{
    size_t i = (size_t)t * (size_t)b->k->nregs + (size_t)r;
    if (!b->init[i]) {
        fault(b, EO_PX_FAULT_UNINIT_REG, t, line, "register %s is read before this thread wrote it",
              b->k->reg_name[r]);
        return 0;
    }
    return b->regs[i];
}

static void write_reg(block *b, unsigned t, int r, uint64_t v, int type)
{
    size_t i = (size_t)t * (size_t)b->k->nregs + (size_t)r;
    b->regs[i] = px_narrow(v, type);
    b->init[i] = 1;
}

/* An immediate as a value of `type`: float literals convert between
 * widths, integer literals in a float instruction convert by value. */
static uint64_t imm_value(const px_operand *o, int type)
{
    double d;
    float f;
    uint32_t u;
    uint64_t v = (uint64_t)o->imm;
    if (type == PX_T_F32 || type == PX_T_F64) {
        switch (o->ik) {
        case PX_IK_F32BITS:
            if (type == PX_T_F32)
                return v;
            u = (uint32_t)v;
            memcpy(&f, &u, 4);
            d = f;
            break;
        case PX_IK_INT: d = (double)o->imm; break;
        default: memcpy(&d, &v, 8); break;
        }
        if (type == PX_T_F64) {
            memcpy(&v, &d, 8);
            return v;
        }
        f = (float)d;
        memcpy(&u, &f, 4);
        return u;
    }
    return px_narrow(v, type);
}

/* Source operand i of `in` for thread t, read as `type`. */
static uint64_t src(block *b, const px_insn *in, unsigned t, int i, int type)
{
    const px_operand *o = &in->o[i];
    switch (o->kind) {
    case PX_O_REG: {
        uint64_t v = px_narrow(read_reg(b, t, o->reg, in->line), type);
        return o->neg ? !v : v;
    }
    case PX_O_IMM: return imm_value(o, type);
    case PX_O_SREG: return px_narrow(sreg_value(b, t, o->reg), type);
    case PX_O_SYM: return (uint64_t)o->imm;
    default: return 0;
    }
}

/* ---- memory -------------------------------------------------------------------- */

/* Record an access to shared bytes [off, off+n) and report a race with
 * another thread's access in the same barrier interval. */
static void shared_track(block *b, unsigned t, size_t off, unsigned n, int write, int line)
{
    for (unsigned i = 0; i < n; i++) {
        shadow *s = &b->sh[off + i];
        if (s->epoch != b->epoch) {
            s->epoch = b->epoch;
            s->writer = s->reader = -1;
        }
        int other_writer = s->writer >= 0 && (unsigned)s->writer != t;
        if (other_writer) {
            eo_px_dim o = thread_dim(b, (unsigned)s->writer);
            fault(b, EO_PX_FAULT_SHARED_RACE, t, line,
                  "%s of shared byte %zu races with the write by thread (%u,%u,%u) at line %d "
                  "(no bar.sync between them)",
                  write ? "write" : "read", off + i, o.x, o.y, o.z, s->wline);
            return;
        }
        if (write) {
            if (s->reader == -2 || (s->reader >= 0 && (unsigned)s->reader != t)) {
                char who[48] = "another thread";
                if (s->reader >= 0) {
                    eo_px_dim o = thread_dim(b, (unsigned)s->reader);
                    snprintf(who, sizeof who, "thread (%u,%u,%u)", o.x, o.y, o.z);
                }
                fault(b, EO_PX_FAULT_SHARED_RACE, t, line,
                      "write of shared byte %zu races with the read by %s at line %d "
                      "(no bar.sync between them)", off + i, who, s->rline);
                return;
            }
            s->writer = (int16_t)t;
            s->wline = line;
        } else {
            s->reader = s->reader == -1 || (unsigned)s->reader == t ? (int16_t)t : -2;
            s->rline = line;
        }
    }
}

/* For the counters: lane t%32 of the current warp instruction accessed n
 * bytes at addr (a shared offset when shared). Warps are 32 consecutive
 * threads, so the lane is t mod 32. */
static void note_access(block *b, unsigned t, uint64_t addr, unsigned n, int shared)
{
    unsigned lane = t % 32;
    b->lane_addr[lane] = addr;
    b->mem_mask |= 1u << lane;
    b->mem_bytes = n;
    b->mem_shared = shared;
}

static int async_pending_hit(block *b, const px_insn *in, unsigned t, size_t off, unsigned n,
                             int write);

/* Host bytes for an access of n bytes at `addr` in `space`, after every
 * check; NULL once a fault has been recorded. Atomics skip race tracking:
 * they are the sanctioned way for threads to share a location. */
static unsigned char *mem_at(block *b, const px_insn *in, unsigned t, int space, uint64_t addr,
                             unsigned n, int write, int atomic)
{
    if (space == PX_SP_GENERIC) {
        if (addr >= EO_PX_SHARED_WINDOW && addr - EO_PX_SHARED_WINDOW < (1u << 24)) {
            space = PX_SP_SHARED;
            addr -= EO_PX_SHARED_WINDOW;
        } else {
            space = PX_SP_GLOBAL;
        }
    }
    /* cp.async's partial source reads (src-size 1..15 bytes) are aligned to
     * the copy's size, which exec_cp_async checks itself */
    if (addr % n && in->op != PX_OP_CP_ASYNC) {
        fault(b, EO_PX_FAULT_MISALIGNED, t, in->line,
              "%u-byte %s access at %s address 0x%llx is not %u-byte aligned", n,
              write ? "write" : "read", space == PX_SP_SHARED ? "shared" : "global",
              (unsigned long long)addr, n);
        return NULL;
    }
    if (space == PX_SP_SHARED) {
        if (addr >= b->shared_size || n > b->shared_size - addr) {
            fault(b, EO_PX_FAULT_SHARED_OOB, t, in->line,
                  "%u-byte %s at shared offset %llu is past the block's %zu bytes of shared memory",
                  n, write ? "write" : "read", (unsigned long long)addr, b->shared_size);
            return NULL;
        }
        if (b->apending && async_pending_hit(b, in, t, (size_t)addr, n, write))
            return NULL;
        if (!atomic)
            shared_track(b, t, (size_t)addr, n, write, in->line);
        if (b->faulted)
            return NULL;
        note_access(b, t, addr, n, 1);
        return b->shared + addr;
    }
    unsigned char *p = eo_px_heap_span(b->heap, addr, n);
    if (!p) {
        char why[200];
        eo_px_heap_explain(b->heap, addr, n, why, sizeof why);
        fault(b, EO_PX_FAULT_GLOBAL_OOB, t, in->line, "global %s: %s", write ? "write" : "read", why);
        return NULL;
    }
    note_access(b, t, addr, n, 0);
    return p;
}

static uint64_t load_bits(const unsigned char *p, unsigned n)
{
    uint8_t u8;
    uint16_t u16;
    uint32_t u32;
    uint64_t u64;
    switch (n) {
    case 1: memcpy(&u8, p, 1); return u8;
    case 2: memcpy(&u16, p, 2); return u16;
    case 4: memcpy(&u32, p, 4); return u32;
    default: memcpy(&u64, p, 8); return u64;
    }
}

static void store_bits(unsigned char *p, uint64_t v, unsigned n)
{
    uint8_t u8 = (uint8_t)v;
    uint16_t u16 = (uint16_t)v;
    uint32_t u32 = (uint32_t)v;
    switch (n) {
    case 1: memcpy(p, &u8, 1); break;
    case 2: memcpy(p, &u16, 2); break;
    case 4: memcpy(p, &u32, 4); break;
    default: memcpy(p, &v, 8); break;
    }
}

/* The address an [..] operand names, for thread t. */
static uint64_t address(block *b, const px_insn *in, unsigned t, const px_operand *o)
{
    uint64_t base = o->reg >= 0 ? read_reg(b, t, o->reg, in->line) : 0;
    if (o->reg < 0 && o->sym_space == PX_SP_SHARED && in->space == PX_SP_GENERIC)
        base = EO_PX_SHARED_WINDOW;
    return base + (uint64_t)o->imm;
}

static void exec_ld(block *b, const px_insn *in, unsigned t)
{
    unsigned n = px_type_bytes(in->t1), nv = in->vec ? in->vec : 1;
    const px_operand *d = &in->o[0];
    uint64_t addr = address(b, in, t, &in->o[1]);
    if (b->faulted)
        return;
    const unsigned char *p;
    if (in->space == PX_SP_PARAM) {
        if (addr + n > b->k->param_bytes) {
            fault(b, EO_PX_FAULT_PARAM_OOB, t, in->line,
                  "ld.param of %u bytes at offset %llu, past the %zu-byte parameter buffer", n,
                  (unsigned long long)addr, b->k->param_bytes);
            return;
        }
        p = (const unsigned char *)b->c->params + addr;
    } else {
        p = mem_at(b, in, t, in->space, addr, n * nv, 0, 0);
        if (!p)
            return;
    }
    for (unsigned i = 0; i < nv; i++) {
        int r = d->kind == PX_O_VEC ? d->v[i] : d->reg;
        if (r >= 0)
            write_reg(b, t, r, px_narrow(load_bits(p + i * n, n), in->t1),
                      px_type_is_signed(in->t1) ? PX_T_S64 : PX_T_U64);
    }
}

static void exec_st(block *b, const px_insn *in, unsigned t)
{
    unsigned n = px_type_bytes(in->t1), nv = in->vec ? in->vec : 1;
    uint64_t vals[4];
    const px_operand *s = &in->o[1];
    for (unsigned i = 0; i < nv; i++) {
        if (s->kind == PX_O_VEC)
            vals[i] = s->v[i] >= 0 ? read_reg(b, t, s->v[i], in->line) : 0;
        else
            vals[i] = src(b, in, t, 1, in->t1);
    }
    uint64_t addr = address(b, in, t, &in->o[0]);
    if (b->faulted)
        return;
    unsigned char *p = mem_at(b, in, t, in->space, addr, n * nv, 1, 0);
    if (!p)
        return;
    for (unsigned i = 0; i < nv; i++)
        store_bits(p + i * n, vals[i], n);
}

static void exec_atom(block *b, const px_insn *in, unsigned t)
{
    int red = in->op == PX_OP_RED;
    const px_operand *m = &in->o[red ? 0 : 1];
    int ib = red ? 1 : 2;
    unsigned n = px_type_bytes(in->t1);
    uint64_t vb = src(b, in, t, ib, in->t1);
    uint64_t vc = in->sub == PX_SUB_CAS ? src(b, in, t, ib + 1, in->t1) : 0;
    uint64_t addr = address(b, in, t, m);
    if (b->faulted)
        return;
    unsigned char *p = mem_at(b, in, t, in->space, addr, n, 1, 1);
    if (!p)
        return;
    uint64_t old = px_narrow(load_bits(p, n), in->t1);
    store_bits(p, px_atom_apply(in->sub, in->t1, old, vb, vc), n);
    if (!red && in->o[0].kind == PX_O_REG)
        write_reg(b, t, in->o[0].reg, old, in->t1);
}

/* ---- asynchronous copies (cp.async) -------------------------------------------------
 * cp.async.{ca,cg}.shared.global [dst], [src], size{, src-size} starts a copy
 * of `size` bytes (the first src-size of them read from global memory, the
 * rest zero) that lands in shared memory at some time before this thread's
 * matching cp.async.wait_group. The interpreter reads the global bytes
 * when the copy is issued (checked like any global read), keeps them with
 * the thread, and writes them to shared memory only when a wait_group
 * retires the copy's group: the write is then recorded as this thread's,
 * so another thread sees it only after a bar.sync, as on hardware.
 *
 * Until then the destination bytes are marked as pending: ANY access to
 * them -- by another thread, or by the issuing thread itself before its
 * wait -- is reported as a shared-memory race at the accessing line, even
 * across a bar.sync (the classic bug: a barrier without the wait_group
 * before it). That is stricter than "the result might be stale", and it
 * catches the bug deterministically.
 *
 * Groups: each thread counts its commit_groups; a copy belongs to the
 * group open when it was issued. wait_group N retires every copy of the
 * committed groups but the N newest; copies not yet committed are never
 * retired by wait_group (as in PTX). wait_all = commit_group; wait_group 0.
 * Copies a thread never waits for are dropped when the block ends. */
enum { PX_ASYNC_MAX = 64 }; /* copies in flight per thread */

struct async_copy {
    uint32_t group;
    uint32_t off;   /* shared offset */
    int32_t line;
    uint8_t n;      /* bytes */
    unsigned char data[16];
};

static int async_pending_hit(block *b, const px_insn *in, unsigned t, size_t off, unsigned n,
                             int write)
{
    for (unsigned i = 0; i < n; i++) {
        int16_t w = b->apending[off + i];
        if (w < 0)
            continue;
        eo_px_dim o = thread_dim(b, (unsigned)w);
        fault(b, EO_PX_FAULT_SHARED_RACE, t, in->line,
              "%s of shared byte %zu while the cp.async of thread (%u,%u,%u) that writes it is "
              "still in flight (missing cp.async.wait_group before the bar.sync?)",
              write ? "write" : "read", off + i, o.x, o.y, o.z);
        return 1;
    }
    return 0;
}

static void exec_cp_async(block *b, const px_insn *in, unsigned t)
{
    unsigned n = (unsigned)in->o[2].imm, have = n;
    if (in->nops == 4) {
        uint64_t s = src(b, in, t, 3, PX_T_U32);
        have = s < n ? (unsigned)s : n;
    }
    uint64_t dst = address(b, in, t, &in->o[0]), from = address(b, in, t, &in->o[1]);
    if (b->faulted)
        return;
    if (b->nacp[t] == PX_ASYNC_MAX) {
        fault(b, EO_PX_FAULT_STEP_LIMIT, t, in->line,
              "more than %d cp.async copies in flight in one thread (interpreter limit)",
              PX_ASYNC_MAX);
        return;
    }
    struct async_copy *c = &b->acp[(size_t)t * PX_ASYNC_MAX + b->nacp[t]];
    memset(c->data, 0, sizeof c->data);
    if (from % n) { /* the source must be aligned like the copy, even when src-size is 0 */
        fault(b, EO_PX_FAULT_MISALIGNED, t, in->line,
              "cp.async of %u bytes from global address 0x%llx, not %u-byte aligned", n,
              (unsigned long long)from, n);
        return;
    }
    if (have) {
        const unsigned char *g = mem_at(b, in, t, PX_SP_GLOBAL, from, have, 0, 0);
        if (!g)
            return;
        memcpy(c->data, g, have);
    }
    /* the destination is checked (bounds, alignment, pending) now, like a write */
    if (dst % n) {
        fault(b, EO_PX_FAULT_MISALIGNED, t, in->line,
              "cp.async of %u bytes to shared offset %llu, not %u-byte aligned", n,
              (unsigned long long)dst, n);
        return;
    }
    if (dst >= b->shared_size || n > b->shared_size - dst) {
        fault(b, EO_PX_FAULT_SHARED_OOB, t, in->line,
              "cp.async of %u bytes to shared offset %llu, past the block's %zu bytes", n,
              (unsigned long long)dst, b->shared_size);
        return;
    }
    if (async_pending_hit(b, in, t, (size_t)dst, n, 1))
        return;
    b->adst[t % 32] = dst;
    b->adst_mask |= 1u << (t % 32);
    b->adst_bytes = n;
    c->group = b->agroups[t];
    c->off = (uint32_t)dst;
    c->n = (uint8_t)n;
    c->line = in->line;
    for (unsigned i = 0; i < n; i++)
        b->apending[dst + i] = (int16_t)t;
    b->nacp[t]++;
}

/* Retire thread t's copies of groups below `upto`, in issue order. */
static void async_retire(block *b, unsigned t, uint32_t upto)
{
    struct async_copy *q = &b->acp[(size_t)t * PX_ASYNC_MAX];
    unsigned keep = 0;
    for (unsigned i = 0; i < b->nacp[t] && !b->faulted; i++) {
        struct async_copy *c = &q[i];
        if (c->group >= upto) {
            q[keep++] = *c;
            continue;
        }
        for (unsigned j = 0; j < c->n; j++)
            b->apending[c->off + j] = -1;
        shared_track(b, t, c->off, c->n, 1, c->line);
        memcpy(b->shared + c->off, c->data, c->n);
    }
    b->nacp[t] = (uint8_t)keep;
}

static void exec_cp_wait(block *b, const px_insn *in, unsigned t)
{
    uint32_t keep = 0;
    if (in->nops == 0)
        b->agroups[t]++; /* wait_all commits the open group first */
    else
        keep = (uint32_t)in->o[0].imm;
    if (b->agroups[t] > keep)
        async_retire(b, t, b->agroups[t] - keep);
}
/* ---- end of asynchronous copies ------------------------------------------------------- */

/* ---- tensor cores: ldmatrix and mma.sync -------------------------------------------------
 * Both are warp-wide: one instruction moves data between the 32 lanes, so
 * they run once per warp (like shfl), and .sync.aligned means every lane
 * of the warp executes them together -- a warp with a lane missing
 * (diverged, exited, predicated off) is a fault here, undefined on the GPU.
 *
 * The layouts below follow the PTX ISA document (release 8.x), section
 * "Warp Level Matrix Multiply-Accumulate Instructions": "Matrix Fragments
 * for mma.m16n8k16 with floating point type" and "ldmatrix". With
 * g = lane / 4 (the "groupID") and q = lane % 4 ("threadID_in_group"), a
 * .b32 register holds two 16-bit elements, the lower-numbered one in its
 * low half:
 *   A (16 x 16, row):  a0 = A[g][2q..2q+1]      a1 = A[g+8][2q..2q+1]
 *                      a2 = A[g][2q+8..2q+9]    a3 = A[g+8][2q+8..2q+9]
 *   B (16 x 8, col):   b0 = B[2q..2q+1][g]      b1 = B[2q+8..2q+9][g]
 *   C, D (16 x 8 f32): c0, c1 = C[g][2q], C[g][2q+1]; c2, c3 = the same at row g+8
 * ldmatrix .xN: lanes 8j..8j+7 give the addresses of rows 0..7 of matrix
 * j (16-byte aligned rows of 8 16-bit elements; the other lanes' addresses
 * are not read); register j of lane l receives row g, elements 2q and
 * 2q+1 of matrix j -- with .trans, column g: elements [2q][g], [2q+1][g].
 * That is exactly A's and B's fragment shape, which is why the GEMM loads
 * its fragments with it.
 *
 * mma's arithmetic: each product of two bf16 (or f16) values is exact in
 * f32 (8 x 8 or 11 x 11 significant bits, and the exponents stay in f32's
 * range except for products of two bf16 values both near the bottom of
 * it). The interpreter accumulates D[i][j] = C[i][j] + sum_k A[i][k] B[k][j]
 * in f32, adding the products in k order 0..15 onto C, one rounding (to
 * nearest) per addition. The hardware's internal order and rounding are
 * not specified bit for bit (tensor cores add groups of products with
 * wider internal sums), so tests compare with a tolerance of the order of
 * 16 f32 roundings of the sum of |products|, not bit for bit. */
static void lanes_text(uint32_t m, char *buf, size_t cap);

static int warp_whole(block *b, const px_insn *in, unsigned w, uint32_t exec)
{
    unsigned lo = w * 32, n = b->nthreads - lo < 32 ? b->nthreads - lo : 32;
    uint32_t full = n == 32 ? 0xffffffffu : (1u << n) - 1;
    if (n == 32 && exec == full)
        return 1;
    if (exec == 0)
        return 0; /* predicated off in every lane: nothing happens */
    char lanes[96];
    lanes_text(~exec, lanes, sizeof lanes);
    fault(b, EO_PX_FAULT_SHFL_DIVERGED, lo, in->line,
          "%s.sync.aligned needs all 32 lanes of the warp; lane(s) %s are not executing it "
          "(diverged, exited, predicated off or absent)",
          in->op == PX_OP_MMA ? "mma" : "ldmatrix", lanes);
    return 0;
}

static void exec_ldmatrix(block *b, const px_insn *in, unsigned w, uint32_t exec)
{
    if (!warp_whole(b, in, w, exec))
        return;
    unsigned nm = in->vec, lo = w * 32;
    uint16_t m[4][8][8]; /* [matrix][row][column] */
    for (unsigned j = 0; j < nm; j++)
        for (unsigned r = 0; r < 8; r++) {
            unsigned t = lo + 8 * j + r; /* the lane that names this row */
            uint64_t addr = address(b, in, t, &in->o[1]);
            if (b->faulted)
                return;
            const unsigned char *p = mem_at(b, in, t, PX_SP_SHARED, addr, 16, 0, 0);
            if (!p)
                return;
            for (unsigned c = 0; c < 8; c++)
                m[j][r][c] = (uint16_t)load_bits(p + 2 * c, 2);
        }
    int tr = (in->flags & PX_F_TRANS) != 0;
    for (unsigned l = 0; l < 32; l++) {
        unsigned g = l / 4, q = l % 4;
        for (unsigned j = 0; j < nm; j++) {
            uint32_t e0 = tr ? m[j][2 * q][g] : m[j][g][2 * q];
            uint32_t e1 = tr ? m[j][2 * q + 1][g] : m[j][g][2 * q + 1];
            int r = in->o[0].v[j];
            if (r >= 0)
                write_reg(b, lo + l, r, e0 | e1 << 16, PX_T_B32);
        }
    }
}

static float half_value(uint32_t h, int sub)
{
    return sub == PX_MMA_BF16 ? px_bf16_to_f32((uint16_t)h) : px_f16_to_f32((uint16_t)h);
}

static void exec_mma(block *b, const px_insn *in, unsigned w, uint32_t exec)
{
    if (!warp_whole(b, in, w, exec))
        return;
    unsigned lo = w * 32;
    float A[16][16], B[16][8], C[16][8];
    for (unsigned l = 0; l < 32; l++) {
        unsigned t = lo + l, g = l / 4, q = l % 4;
        uint32_t a[4], bb[2];
        for (int i = 0; i < 4; i++)
            a[i] = (uint32_t)read_reg(b, t, in->o[1].v[i], in->line);
        for (int i = 0; i < 2; i++)
            bb[i] = (uint32_t)read_reg(b, t, in->o[2].v[i], in->line);
        for (int i = 0; i < 4; i++) {
            uint32_t u = (uint32_t)read_reg(b, t, in->o[3].v[i], in->line);
            float f;
            memcpy(&f, &u, 4);
            C[g + 8 * (unsigned)(i / 2)][2 * q + (unsigned)(i % 2)] = f;
        }
        if (b->faulted)
            return;
        for (int i = 0; i < 4; i++) {
            unsigned row = g + 8 * (unsigned)(i % 2), col = 2 * q + 8 * (unsigned)(i / 2);
            A[row][col] = half_value(a[i] & 0xffff, in->sub);
            A[row][col + 1] = half_value(a[i] >> 16, in->sub);
        }
        for (int i = 0; i < 2; i++) {
            unsigned k = 2 * q + 8 * (unsigned)i;
            B[k][g] = half_value(bb[i] & 0xffff, in->sub);
            B[k + 1][g] = half_value(bb[i] >> 16, in->sub);
        }
    }
    for (unsigned l = 0; l < 32; l++) {
        unsigned g = l / 4, q = l % 4;
        for (int i = 0; i < 4; i++) {
            unsigned row = g + 8 * (unsigned)(i / 2), col = 2 * q + (unsigned)(i % 2);
            /* f32 additions in k order; the product is exact, so a compiler
             * that contracts this into an fma computes the same value */
            float r = C[row][col];
            for (unsigned k = 0; k < 16; k++)
                r += A[row][k] * B[k][col];
            uint32_t u;
            memcpy(&u, &r, 4);
            int d = in->o[0].v[i];
            if (d >= 0)
                write_reg(b, lo + l, d, u, PX_T_F32);
        }
    }
}
/* ---- end of tensor cores -------------------------------------------------------------- */

/* One thread's share of an ordinary instruction. */
static void exec_thread(block *b, const px_insn *in, unsigned t)
{
    switch (in->op) {
    case PX_OP_LD: exec_ld(b, in, t); return;
    case PX_OP_ST: exec_st(b, in, t); return;
    case PX_OP_ATOM: case PX_OP_RED: exec_atom(b, in, t); return;
    case PX_OP_MEMBAR: return;
    case PX_OP_CP_ASYNC: exec_cp_async(b, in, t); return;
    case PX_OP_CP_COMMIT: b->agroups[t]++; return;
    case PX_OP_CP_WAIT: exec_cp_wait(b, in, t); return;
    default: break;
    }
    uint64_t v[3] = {0, 0, 0};
    for (int i = 1; i < in->nops && i <= 3; i++)
        v[i - 1] = src(b, in, t, i, in->stype[i]);
    if (b->faulted)
        return;
    const px_operand *d = &in->o[0];
    if (in->op == PX_OP_SETP) {
        int r = px_compare(in->cmp, in->t1, v[0], v[1]);
        int p = r, q = !r;
        if (in->sub != PX_SUB_NONE) {
            int c = v[2] != 0;
            switch (in->sub) {
            case PX_SUB_AND: p = p && c; q = q && c; break;
            case PX_SUB_OR: p = p || c; q = q || c; break;
            default: p = p != c; q = q != c; break;
            }
        }
        if (d->kind == PX_O_REG)
            write_reg(b, t, d->reg, (uint64_t)p, PX_T_PRED);
        if (d->nvec)
            write_reg(b, t, d->v[0], (uint64_t)q, PX_T_PRED);
        return;
    }
    uint64_t r;
    if (in->op == PX_OP_CVTA) {
        int to = (in->flags & PX_F_TO) != 0;
        r = v[0];
        if (in->space == PX_SP_SHARED)
            r = to ? r - EO_PX_SHARED_WINDOW : r + EO_PX_SHARED_WINDOW;
    } else {
        r = px_alu(in, v[0], v[1], v[2]);
    }
    if (d->kind == PX_O_REG)
        write_reg(b, t, d->reg, r, in->dtype);
}

/* ---- collectives ------------------------------------------------------------------ */

static void lanes_text(uint32_t m, char *buf, size_t cap)
{
    size_t n = 0;
    buf[0] = 0;
    for (int i = 0; i < 32 && n + 8 < cap; i++) {
        if (!((m >> i) & 1))
            continue;
        int j = i;
        while (j + 1 < 32 && ((m >> (j + 1)) & 1))
            j++;
        n += (size_t)snprintf(buf + n, cap - n, j > i ? "%s%d-%d" : "%s%d", n ? "," : "", i, j);
        i = j;
    }
}

/* The mask operand of a collective must name exactly lanes that execute
 * it together; anything else is undefined behaviour on the GPU (and a
 * hang on some). exec is the set of lanes executing this instruction. */
static int check_mask(block *b, const px_insn *in, unsigned w, uint32_t exec, int mask_op)
{
    for (unsigned l = 0; l < 32; l++) {
        if (!((exec >> l) & 1))
            continue;
        unsigned t = w * 32 + l;
        uint32_t m = (uint32_t)src(b, in, t, mask_op, PX_T_B32);
        if (b->faulted)
            return 0;
        char lanes[96];
        if (!((m >> l) & 1)) {
            fault(b, EO_PX_FAULT_SHFL_DIVERGED, t, in->line,
                  "lane %u executes a collective whose mask 0x%08x does not include it", l, m);
            return 0;
        }
        if (m & ~exec) {
            lanes_text(m & ~exec, lanes, sizeof lanes);
            fault(b, EO_PX_FAULT_SHFL_DIVERGED, t, in->line,
                  "mask 0x%08x names lane(s) %s, which are not executing this instruction "
                  "(diverged, exited or absent)", m, lanes);
            return 0;
        }
    }
    return 1;
}

static void exec_shfl(block *b, const px_insn *in, unsigned w, uint32_t exec)
{
    if (!check_mask(b, in, w, exec, 4))
        return;
    uint64_t val[32], res[32];
    int ok[32];
    for (unsigned l = 0; l < 32; l++)
        if ((exec >> l) & 1)
            val[l] = src(b, in, w * 32 + l, 1, PX_T_B32);
    for (unsigned l = 0; l < 32 && !b->faulted; l++) {
        if (!((exec >> l) & 1))
            continue;
        unsigned t = w * 32 + l;
        uint32_t bv = (uint32_t)src(b, in, t, 2, PX_T_U32) & 31;
        uint32_t c = (uint32_t)src(b, in, t, 3, PX_T_U32);
        uint32_t cval = c & 31, seg = (c >> 8) & 31;
        int max_lane = (int)((l & seg) | (cval & ~seg)), min_lane = (int)(l & seg), j = 0, pv = 0;
        switch (in->sub) {
        case PX_SUB_UP: j = (int)l - (int)bv; pv = j >= max_lane; break;
        case PX_SUB_DOWN: j = (int)l + (int)bv; pv = j <= max_lane; break;
        case PX_SUB_BFLY: j = (int)(l ^ bv); pv = j <= max_lane; break;
        default: j = min_lane | (int)(bv & ~seg); pv = j <= max_lane; break;
        }
        if (!pv)
            j = (int)l;
        if (!((exec >> j) & 1)) {
            fault(b, EO_PX_FAULT_SHFL_DIVERGED, t, in->line,
                  "shfl reads lane %d, which is not executing this instruction", j);
            return;
        }
        res[l] = val[j];
        ok[l] = pv;
    }
    for (unsigned l = 0; l < 32 && !b->faulted; l++) {
        if (!((exec >> l) & 1))
            continue;
        const px_operand *d = &in->o[0];
        if (d->kind == PX_O_REG)
            write_reg(b, w * 32 + l, d->reg, res[l], PX_T_B32);
        if (d->nvec)
            write_reg(b, w * 32 + l, d->v[0], (uint64_t)ok[l], PX_T_PRED);
    }
}

static void exec_vote(block *b, const px_insn *in, unsigned w, uint32_t exec)
{
    if (!check_mask(b, in, w, exec, 2))
        return;
    uint32_t ballot = 0;
    for (unsigned l = 0; l < 32; l++)
        if (((exec >> l) & 1) && src(b, in, w * 32 + l, 1, PX_T_PRED))
            ballot |= 1u << l;
    if (b->faulted)
        return;
    for (unsigned l = 0; l < 32; l++) {
        if (!((exec >> l) & 1) || in->o[0].kind != PX_O_REG)
            continue;
        uint64_t r;
        switch (in->sub) {
        case PX_SUB_ALL: r = ballot == exec; break;
        case PX_SUB_ANY: r = ballot != 0; break;
        case PX_SUB_UNI: r = ballot == 0 || ballot == exec; break;
        default: r = ballot; break;
        }
        write_reg(b, w * 32 + l, in->o[0].reg, r, in->sub == PX_SUB_BALLOT ? PX_T_B32 : PX_T_PRED);
    }
}

/* ---- tracing ------------------------------------------------------------------------ */

/* One destination value, shown raw and as the number it means: a float
 * register as a float, otherwise signed if the instruction wrote a signed
 * type. */
static void trace_value(block *b, const px_insn *in, unsigned t, int r)
{
    FILE *f = b->c->trace;
    const eo_px_kernel *k = b->k;
    uint64_t v = b->regs[(size_t)t * (size_t)k->nregs + (size_t)r];
    int ty = k->reg_type[r];
    fprintf(f, "        thread %u: %s = 0x%llx", t, k->reg_name[r], (unsigned long long)v);
    if (ty == PX_T_F32) {
        float x;
        uint32_t u = (uint32_t)v;
        memcpy(&x, &u, 4);
        fprintf(f, " (%.9g)", (double)x);
    } else if (ty == PX_T_F64) {
        double x;
        memcpy(&x, &v, 8);
        fprintf(f, " (%.17g)", x);
    } else if (px_type_is_signed(in->dtype) || px_type_is_signed(ty)) {
        fprintf(f, " (%lld)", (long long)v);
    } else if (ty != PX_T_PRED) {
        fprintf(f, " (%llu)", (unsigned long long)v);
    }
    fputc('\n', f);
}

/* A warp instruction with its masks, then the values it wrote: for the
 * chosen thread, or (trace_thread < 0) for every thread that ran it. */
static void trace(block *b, const px_insn *in, unsigned w, uint32_t active, uint32_t exec)
{
    FILE *f = b->c->trace;
    fprintf(f, "block (%u,%u,%u) warp %u line %4d active %08x exec %08x  %.*s\n", b->ctaid.x,
            b->ctaid.y, b->ctaid.z, w, in->line, active, exec, (int)in->text_len,
            b->k->src + in->text_off);
    if (in->nops == 0 || in->op == PX_OP_ST || in->op == PX_OP_RED || in->op == PX_OP_BRA ||
        in->op == PX_OP_BAR || in->op == PX_OP_BAR_WARP)
        return;
    const px_operand *d = &in->o[0];
    int regs[4], n = 0;
    if (d->kind == PX_O_REG) {
        regs[n++] = d->reg;
        if (d->nvec)
            regs[n++] = d->v[0];
    } else if (d->kind == PX_O_VEC) {
        for (int i = 0; i < d->nvec; i++)
            if (d->v[i] >= 0)
                regs[n++] = d->v[i];
    }
    long tt = b->c->trace_thread;
    for (unsigned l = 0; l < 32; l++) {
        unsigned t = w * 32 + l;
        if (!((exec >> l) & 1) || (tt >= 0 && (unsigned long)tt != t))
            continue;
        for (int i = 0; i < n; i++)
            trace_value(b, in, t, regs[i]);
    }
}

/* ---- scheduling -------------------------------------------------------------------- */

/* Run one instruction of warp w: the threads at the lowest pc. Returns 0
 * when the warp has nothing runnable (all waiting or exited). */
static int warp_step(block *b, unsigned w)
{
    unsigned lo = w * 32, hi = lo + 32 < b->nthreads ? lo + 32 : b->nthreads;
    int32_t pc = INT32_MAX;
    for (unsigned t = lo; t < hi; t++)
        if (b->state[t] == TS_RUN && b->pc[t] < pc)
            pc = b->pc[t];
    if (pc == INT32_MAX)
        return 0;
    const px_insn *in = &b->k->code[pc];
    uint32_t active = 0, exec = 0;
    for (unsigned t = lo; t < hi; t++) {
        if (b->state[t] != TS_RUN || b->pc[t] != pc)
            continue;
        active |= 1u << (t - lo);
        int go = 1;
        if (in->guard >= 0) {
            go = (read_reg(b, t, in->guard, in->line) != 0) != (in->guard_neg != 0);
            if (b->faulted)
                return 0;
        }
        if (go)
            exec |= 1u << (t - lo);
    }
    b->mem_mask = 0;
    b->adst_mask = 0;
    px_count_uses(&b->count, in, w);
    switch (in->op) {
    case PX_OP_SHFL: exec_shfl(b, in, w, exec); break;
    case PX_OP_VOTE: exec_vote(b, in, w, exec); break;
    case PX_OP_BAR_WARP: check_mask(b, in, w, exec, 0); break;
    case PX_OP_LDMATRIX: exec_ldmatrix(b, in, w, exec); break;
    case PX_OP_MMA: exec_mma(b, in, w, exec); break;
    case PX_OP_BRA: case PX_OP_EXIT: case PX_OP_BAR: break;
    default:
        for (unsigned l = 0; l < 32 && !b->faulted; l++)
            if ((exec >> l) & 1)
                exec_thread(b, in, lo + l);
    }
    if (b->faulted)
        return 0;
    px_count_insn(&b->count, in, w, exec, b->mem_mask, b->lane_addr, b->mem_bytes,
                  b->mem_shared);
    if (in->op == PX_OP_CP_ASYNC)
        px_count_async_dst(&b->count, b->adst_mask, b->adst, b->adst_bytes);
    for (unsigned l = 0; l < 32; l++) {
        if (!((active >> l) & 1))
            continue;
        unsigned t = lo + l;
        int ran = (exec >> l) & 1;
        if (ran && in->op == PX_OP_BRA)
            b->pc[t] = (int32_t)in->o[0].imm;
        else if (ran && in->op == PX_OP_EXIT)
            b->state[t] = TS_DONE;
        else if (ran && in->op == PX_OP_BAR)
            b->state[t] = TS_BAR; /* pc stays on the barrier until release */
        else
            b->pc[t]++;
    }
    if (b->tracing)
        trace(b, in, w, active, exec);
    return 1;
}

/* Every warp is stuck: release the barrier if the whole block is there,
 * otherwise report who is missing. Returns 1 when threads may run again,
 * 0 when the block is finished or faulted. */
static int barrier(block *b)
{
    unsigned waiting = 0, done = 0, first_wait = 0, first_done = 0;
    for (unsigned t = 0; t < b->nthreads; t++) {
        if (b->state[t] == TS_BAR && !waiting++)
            first_wait = t;
        if (b->state[t] == TS_DONE && !done++)
            first_done = t;
    }
    if (!waiting)
        return 0;
    int line = b->k->code[b->pc[first_wait]].line;
    if (done) {
        eo_px_dim d = thread_dim(b, first_done);
        fault(b, EO_PX_FAULT_DIVERGENT_BARRIER, first_wait, line,
              "bar.sync is waited on by %u of %u threads, but %u exited without reaching it "
              "(first: thread (%u,%u,%u))", waiting, b->nthreads, done, d.x, d.y, d.z);
        return 0;
    }
    /* bar.sync is "aligned": all threads of a warp must wait at the same
     * instruction. Different warps may use different bar.sync lines. */
    for (unsigned w = 0; w < b->nwarps; w++) {
        unsigned lo = w * 32, hi = lo + 32 < b->nthreads ? lo + 32 : b->nthreads;
        for (unsigned t = lo + 1; t < hi; t++) {
            const px_insn *a = &b->k->code[b->pc[lo]], *c = &b->k->code[b->pc[t]];
            if (b->pc[t] != b->pc[lo] && ((a->flags | c->flags) & PX_F_ALIGNED)) {
                eo_px_dim d = thread_dim(b, lo);
                fault(b, EO_PX_FAULT_DIVERGENT_BARRIER, t, c->line,
                      "threads of one warp wait at different barriers: this one at line %d, "
                      "thread (%u,%u,%u) at line %d", c->line, d.x, d.y, d.z, a->line);
                return 0;
            }
        }
    }
    for (unsigned t = 0; t < b->nthreads; t++) {
        b->state[t] = TS_RUN;
        b->pc[t]++;
    }
    b->epoch++;
    if (b->tracing)
        fprintf(b->c->trace, "block (%u,%u,%u) barrier at line %d released\n", b->ctaid.x,
                b->ctaid.y, b->ctaid.z, line);
    return 1;
}

/* The j-th sampled pair of blocks out of npairs: a golden-ratio sequence
 * (frac(0.5 + j * 0.618...)), so that samples spread over every grid
 * dimension; evenly spaced linear indices would alias with grid.x (every
 * sample on the same column of a 2D grid). */
static uint64_t sample_pair(uint64_t j, uint64_t npairs)
{
    double f = 0.5 + (double)j * 0.6180339887498949;
    f -= (double)(uint64_t)f;
    uint64_t p = (uint64_t)(f * (double)npairs);
    return p < npairs ? p : npairs - 1;
}

/* Run the block's warps until all have exited (or one faulted). */
static void run_warps(block *b)
{
    for (;;) {
        for (unsigned w = 0; w < b->nwarps; w++) {
            while (warp_step(b, w)) {
                if (++b->steps > b->step_limit) {
                    fault(b, EO_PX_FAULT_STEP_LIMIT, w * 32, b->k->code[b->pc[w * 32]].line,
                          "more than %llu warp instructions: an endless loop or a barrier "
                          "that is never reached?", (unsigned long long)b->step_limit);
                    return;
                }
            }
            if (b->faulted)
                return;
        }
        if (!barrier(b))
            return;
    }
}

static void run_block(block *b)
{
    size_t cells = (size_t)b->nthreads * (size_t)b->k->nregs;
    memset(b->init, 0, cells);
    memset(b->pc, 0, b->nthreads * sizeof *b->pc);
    memset(b->state, TS_RUN, b->nthreads);
    memset(b->shared, 0, b->shared_size);
    b->epoch++; /* a new interval: no shadow entry from the last block is current */
    if (b->acp) { /* cp.async: nothing in flight */
        memset(b->nacp, 0, b->nthreads);
        memset(b->agroups, 0, b->nthreads * sizeof *b->agroups);
        memset(b->apending, 0xff, b->shared_size * sizeof *b->apending);
    }
    px_count_block_begin(&b->count, b->pair_second);
    run_warps(b);
    px_count_block_end(&b->count);
}

eo_status eo_px_run(const eo_px_kernel *k, eo_px_heap *h, const eo_px_config *c,
                    eo_px_fault *fault_out)
{
    eo_px_fault dummy;
    eo_px_fault *f = fault_out ? fault_out : &dummy;
    memset(f, 0, sizeof *f);
    if (!k || !h || !c)
        return EO_ERR_ARG;
    /* Each dimension first: three 32-bit factors can wrap the 64-bit
     * product to a small count (tests/test_ptxsim.c has one that makes 64). */
    if (c->block.x > EO_PX_MAX_THREADS || c->block.y > EO_PX_MAX_THREADS)
        return EO_ERR_ARG;
    unsigned long long nthreads = (unsigned long long)c->block.x * c->block.y * c->block.z;
    if (!c->grid.x || !c->grid.y || !c->grid.z || !nthreads || nthreads > EO_PX_MAX_THREADS ||
        c->block.z > 64 || c->grid.y > 65535 || c->grid.z > 65535)
        return EO_ERR_ARG;
    if (c->params_size != k->param_bytes || (k->param_bytes && !c->params))
        return EO_ERR_ARG;
    size_t shared = k->dyn_shared_off + c->dyn_shared;
    if (!c->dyn_shared)
        shared = k->static_shared;
    if (shared > EO_PX_MAX_SHARED)
        return EO_ERR_ARG;
    block b;
    memset(&b, 0, sizeof b);
    b.k = k;
    b.heap = h;
    b.c = c;
    b.fault = f;
    b.nthreads = (unsigned)nthreads;
    b.nwarps = (b.nthreads + 31) / 32;
    b.shared_size = shared;
    b.step_limit = c->step_limit ? c->step_limit : 100000000ull;
    size_t cells = (size_t)nthreads * (size_t)(k->nregs ? k->nregs : 1);
    b.regs = malloc(cells * sizeof *b.regs);
    b.init = malloc(cells);
    b.pc = malloc(nthreads * sizeof *b.pc);
    b.state = malloc(nthreads);
    b.shared = malloc(shared ? shared : 1);
    /* Shadow entries start at epoch 0, and blocks count epochs from 1 on,
     * so one zeroing here serves the whole launch. */
    b.sh = calloc(shared ? shared : 1, sizeof *b.sh);
    int uses_cp_async = 0;
    for (int i = 0; i < k->ncode; i++)
        /* a commit or a wait alone (no copy) still keeps the per-thread
         * group counts (found by tests/fuzz/fuzz_ptx.c) */
        uses_cp_async |= k->code[i].op == PX_OP_CP_ASYNC || k->code[i].op == PX_OP_CP_COMMIT ||
                         k->code[i].op == PX_OP_CP_WAIT;
    if (uses_cp_async) {
        b.acp = malloc(nthreads * PX_ASYNC_MAX * sizeof *b.acp);
        b.nacp = malloc(nthreads);
        b.agroups = malloc(nthreads * sizeof *b.agroups);
        b.apending = malloc((shared ? shared : 1) * sizeof *b.apending);
    }
    eo_status st = EO_OK;
    uint64_t nblocks = (uint64_t)c->grid.x * c->grid.y * c->grid.z;
    if (!b.regs || !b.init || !b.pc || !b.state || !b.shared || !b.sh ||
        px_count_begin(&b.count, c->counters, k, h, b.nwarps) != 0 ||
        (uses_cp_async && (!b.acp || !b.nacp || !b.agroups || !b.apending))) {
        st = EO_ERR_OOM;
    } else {
        if (c->counters) {
            c->counters->launches++;
            c->counters->blocks += nblocks;
            c->counters->threads_per_block = b.nthreads;
            c->counters->shared_per_block = shared;
        }
        /* All blocks in order, or sample_blocks of them in adjacent pairs
         * spread evenly over the grid. */
        uint64_t pairs = (nblocks + 1) / 2, runs = nblocks, want = c->sample_blocks;
        if (want && want < nblocks) {
            pairs = (want + 1) / 2;
            runs = 2 * pairs < nblocks ? 2 * pairs : nblocks;
        }
        for (uint64_t i = 0; i < runs && !b.faulted; i++) {
            uint64_t linear = i;
            if (runs != nblocks)
                linear = 2 * sample_pair(i / 2, nblocks / 2) + i % 2;
            b.pair_second = linear % 2 == 1;
            b.ctaid.x = (unsigned)(linear % c->grid.x);
            b.ctaid.y = (unsigned)(linear / c->grid.x % c->grid.y);
            b.ctaid.z = (unsigned)(linear / ((uint64_t)c->grid.x * c->grid.y));
            b.tracing = c->trace && (c->trace_block < 0 || c->trace_block == (long)linear);
            run_block(&b);
        }
        if (b.faulted)
            st = EO_ERR_CUDA;
    }
    px_count_end(&b.count);
    free(b.regs);
    free(b.init);
    free(b.pc);
    free(b.state);
    free(b.shared);
    free(b.sh);
    free(b.acp);
    free(b.nacp);
    free(b.agroups);
    free(b.apending);
    return st;
}
