/* tools/ptxsim/count.c — turning what the interpreter executes into the
 * counters Nsight Compute reports (see eo_px_counters in ptxsim.h for the
 * meaning of each, and count.h for how the executor calls in).
 *
 * Cost: everything here runs once per WARP instruction. Arithmetic costs
 * one table lookup and two additions; a memory instruction costs a sort of
 * its (at most 32) lane addresses, which are nearly always in order
 * already, so the insertion sort is linear in practice. Per-lane work is
 * only what the addresses need.
 *
 * The rules, with their sources:
 *
 * Global memory. A warp's ld/st/atom is one request to L1; the request
 * touches every 32-byte sector that holds a byte an active lane asked for,
 * and sectors are the unit the memory system moves (L1 and L2 lines are
 * 128 bytes of 4 sectors). So 32 lanes reading 32 consecutive floats touch
 * 4 sectors, a stride of 2 floats 8, a scattered gather up to 32. Source:
 * NVIDIA's description of L1TEX requests, sectors and wavefronts (Nsight
 * Compute Profiling Guide, "Memory" sections; NVIDIA developer forum
 * answers by the Nsight Compute team on sectors per request). Accesses the
 * interpreter allows are naturally aligned and at most 16 bytes, so one
 * lane's access never straddles two sectors.
 *
 * Shared memory. 32 banks of 4 bytes; word w lives in bank w mod 32. In
 * one pass (wavefront) each bank delivers one word; lanes that ask for the
 * SAME word share it (broadcast for reads; for writes one lane wins), so a
 * pass is needed per DISTINCT word in the busiest bank. Source: CUDA C++
 * Programming Guide, "Compute capability 5.x and later, Shared Memory"
 * (banks, and no conflict between threads accessing the same 32-bit word).
 * Wider accesses: a 64-bit access is processed per half-warp (lanes 0-15,
 * then 16-31) and a 128-bit access per quarter-warp (8 lanes each), each
 * part at 128 bytes per pass, with the same distinct-word rule inside it.
 * So a conflict-free v2 request takes 2 wavefronts, a v4 request 4, and a
 * conflict means two lanes OF THE SAME PART hit different words of one
 * bank. Source: NVIDIA engineers' answers on the NVIDIA developer forum
 * about 64- and 128-bit shared-memory accesses on Volta and later, which
 * Nsight Compute's wavefront counts bear out; the Programming Guide does
 * not spell this out for compute capability 5.x and later, so treat it as
 * the best public description rather than a specification.
 *
 * Memory-level parallelism. A warp waits for a load only when it first
 * uses the load's destination, the scoreboard rule every
 * NVIDIA GPU since Fermi applies; the global loads a warp issues before
 * such a wait are in flight together. PTX order is not SASS order: within
 * a basic block ptxas hoists independent loads above the first use of an
 * earlier one, so a group here runs to the end of the basic block in
 * which its first use falls (the next branch or barrier), except that a
 * load whose address needs a pending value starts a new group (pointer
 * chasing cannot be hoisted; values computed from loaded ones count as
 * loaded). Across basic blocks nothing is hoisted: loop bodies count as
 * written, unrolled or not. count.h says how groups are kept. */
#include <stdlib.h>
#include <string.h>
#include "tools/ptxsim/count.h"

#define CLS_BY_ADDRESS 0xff

/* The class an instruction counts in, or CLS_BY_ADDRESS when only the
 * address says (generic ld/st/atom). */
static uint8_t classify(const px_insn *in)
{
    int f = in->t1 == PX_T_F32, d = in->t1 == PX_T_F64;
    switch (in->op) {
    case PX_OP_LD:
        if (in->space == PX_SP_PARAM)
            return EO_PX_C_OTHER;
        return in->space == PX_SP_SHARED ? EO_PX_C_LD_SHARED
               : in->space == PX_SP_GLOBAL ? EO_PX_C_LD_GLOBAL : CLS_BY_ADDRESS;
    case PX_OP_ST:
        return in->space == PX_SP_SHARED ? EO_PX_C_ST_SHARED
               : in->space == PX_SP_GLOBAL ? EO_PX_C_ST_GLOBAL : CLS_BY_ADDRESS;
    case PX_OP_ATOM: case PX_OP_RED:
        return in->space == PX_SP_SHARED ? EO_PX_C_ST_SHARED
               : in->space == PX_SP_GLOBAL ? EO_PX_C_ATOM_GLOBAL : CLS_BY_ADDRESS;
    case PX_OP_MOV: return EO_PX_C_OTHER;
    case PX_OP_CVT: return EO_PX_C_CVT;
    case PX_OP_CVTA: return EO_PX_C_INT;
    case PX_OP_ADD: case PX_OP_SUB:
        return f ? EO_PX_C_FADD : d ? EO_PX_C_FP_OTHER : EO_PX_C_INT;
    case PX_OP_MUL: return f ? EO_PX_C_FMUL : d ? EO_PX_C_FP_OTHER : EO_PX_C_INT;
    case PX_OP_MAD: case PX_OP_FMA:
        return f ? EO_PX_C_FFMA : d ? EO_PX_C_FP_OTHER : EO_PX_C_INT;
    case PX_OP_DIV: return f || d ? EO_PX_C_SFU : EO_PX_C_INT;
    case PX_OP_RCP: case PX_OP_SQRT: case PX_OP_RSQRT: case PX_OP_EX2: case PX_OP_LG2:
    case PX_OP_SIN: case PX_OP_COS: case PX_OP_TANH:
        return EO_PX_C_SFU;
    case PX_OP_MIN: case PX_OP_MAX: case PX_OP_ABS: case PX_OP_NEG: case PX_OP_COPYSIGN:
    case PX_OP_SETP: case PX_OP_SELP:
        return f || d ? EO_PX_C_FP_OTHER : EO_PX_C_INT;
    case PX_OP_BRA: case PX_OP_EXIT: return EO_PX_C_BRANCH;
    case PX_OP_BAR: case PX_OP_BAR_WARP: case PX_OP_MEMBAR: return EO_PX_C_BAR;
    case PX_OP_SHFL: case PX_OP_VOTE: return EO_PX_C_SHFL;
    case PX_OP_MMA: return EO_PX_C_MMA;
    case PX_OP_LDMATRIX: return EO_PX_C_LD_SHARED;
    case PX_OP_CP_ASYNC: return EO_PX_C_LD_GLOBAL;
    case PX_OP_CP_COMMIT: case PX_OP_CP_WAIT: return EO_PX_C_BAR;
    default: return EO_PX_C_INT; /* rem and the bitwise operations */
    }
}

int px_count_begin(px_count *pc, eo_px_counters *c, const eo_px_kernel *k, const eo_px_heap *h,
                   unsigned nwarps)
{
    memset(pc, 0, sizeof *pc);
    if (!c)
        return 0;
    pc->heap = h;
    pc->nregs = k->nregs ? k->nregs : 1;
    pc->nwarps = nwarps;
    (void)k;
    pc->hcap = 256;
    pc->hkey = calloc(pc->hcap, sizeof *pc->hkey); /* 0: empty; keys are stored + 1 */
    pc->hval = malloc(pc->hcap * sizeof *pc->hval);
    pc->hflag = calloc(pc->hcap, 1);
    pc->pend = calloc((size_t)nwarps * (size_t)pc->nregs, sizeof *pc->pend);
    pc->gen = malloc(nwarps * sizeof *pc->gen);
    pc->grp = calloc(nwarps, sizeof *pc->grp);
    pc->wait = calloc(nwarps, 1);
    if (!pc->hkey || !pc->hval || !pc->hflag || !pc->pend || !pc->gen || !pc->grp || !pc->wait) {
        px_count_end(pc);
        return -1;
    }
    for (unsigned w = 0; w < nwarps; w++)
        pc->gen[w] = 1;
    pc->c = c;
    return 0;
}

void px_count_end(px_count *pc)
{
    if (pc->c) {
        for (int i = 0; i < pc->na; i++)
            pc->c->alloc_bytes += pc->asize[i];
        pc->c->unique_sectors += pc->hn;
    }
    free(pc->hkey);
    free(pc->hval);
    free(pc->hflag);
    free(pc->pend);
    free(pc->gen);
    free(pc->grp);
    free(pc->wait);
    memset(pc, 0, sizeof *pc);
}

static void close_group(px_count *pc, unsigned w)
{
    uint64_t k = pc->grp[w];
    if (!k)
        return;
    pc->c->mlp_loads += k;
    pc->c->mlp_sq += k * k;
    pc->c->load_groups++;
    pc->grp[w] = 0;
    pc->wait[w] = 0;
    pc->gen[w]++; /* every register of the group stops being pending at once */
}

void px_count_block_begin(px_count *pc, int second)
{
    if (!pc->c)
        return;
    pc->serial++;
    pc->c->blocks_run++;
    pc->second = second;
    pc->hn_at_block = pc->hn;
}

void px_count_block_end(px_count *pc)
{
    if (!pc->c)
        return;
    for (unsigned w = 0; w < pc->nwarps; w++)
        close_group(pc, w);
    if (pc->second) {
        pc->c->pair_blocks++;
        pc->c->pair_new_sectors += pc->hn - pc->hn_at_block;
    }
}

/* ---- memory-level parallelism ------------------------------------------------ */

static int pending(const px_count *pc, unsigned w, int r)
{
    return r >= 0 && pc->pend[(size_t)w * (size_t)pc->nregs + (size_t)r] == pc->gen[w];
}

/* The destination registers of `in` now hold values of the current group
 * (loaded, or computed from loaded values). */
static void mark_dest(px_count *pc, const px_insn *in, unsigned w)
{
    const px_operand *d = &in->o[0];
    uint32_t *p = pc->pend + (size_t)w * (size_t)pc->nregs;
    if (in->op == PX_OP_ST || in->op == PX_OP_RED)
        return;
    if (d->kind == PX_O_REG && d->reg >= 0) {
        p[d->reg] = pc->gen[w];
        if (d->nvec && d->v[0] >= 0)
            p[d->v[0]] = pc->gen[w];
    } else if (d->kind == PX_O_VEC) {
        for (int j = 0; j < d->nvec; j++)
            if (d->v[j] >= 0)
                p[d->v[j]] = pc->gen[w];
    }
}

static void mark_pending(px_count *pc, const px_insn *in, unsigned w)
{
    mark_dest(pc, in, w);
    pc->grp[w]++;
}

void px_count_uses(px_count *pc, const px_insn *in, unsigned w)
{
    if (!pc->c || !pc->grp[w])
        return;
    int hit = in->guard >= 0 && pending(pc, w, in->guard);
    /* Sources only: a write to a pending register is no wait, as ptxas
     * renames PTX's virtual registers. st and red have no destination. */
    int first = in->op == PX_OP_ST || in->op == PX_OP_RED ? 0 : 1;
    for (int i = first; i < in->nops && !hit; i++) {
        const px_operand *o = &in->o[i];
        if (o->kind == PX_O_REG || o->kind == PX_O_MEM)
            hit = pending(pc, w, o->reg);
        else if (o->kind == PX_O_VEC)
            for (int j = 0; j < o->nvec && !hit; j++)
                hit = pending(pc, w, o->v[j]);
        if (o->kind == PX_O_REG && o->nvec)
            hit = hit || pending(pc, w, o->v[0]);
    }
    if (!hit)
        return;
    unsigned cls = classify(in);
    if (cls == EO_PX_C_LD_GLOBAL || (cls == CLS_BY_ADDRESS && in->op == PX_OP_LD)) {
        close_group(pc, w); /* a dependent load: it cannot join the group */
        return;
    }
    pc->wait[w] = 2;        /* the wait falls here; the group ends with the basic block */
    mark_dest(pc, in, w);   /* and what is computed from the loads depends on it too */
}

/* ---- distinct sectors ------------------------------------------------------------ */

/* The slot of key (a sector number + 1) or the empty slot where it goes. */
static size_t slot(const px_count *pc, uint64_t key)
{
    uint64_t h = key * 0x9E3779B97F4A7C15ull;
    size_t i = (size_t)(h >> 20) & (pc->hcap - 1);
    while (pc->hkey[i] != key && pc->hkey[i] != 0)
        i = (i + 1) & (pc->hcap - 1);
    return i;
}

static void grow(px_count *pc)
{
    size_t oc = pc->hcap;
    uint64_t *ok = pc->hkey;
    uint32_t *ov = pc->hval;
    uint8_t *of = pc->hflag;
    uint64_t *nk = calloc(2 * oc, sizeof *nk);
    uint32_t *nv = malloc(2 * oc * sizeof *nv);
    uint8_t *nf = calloc(2 * oc, 1);
    if (!nk || !nv || !nf) {
        free(nk);
        free(nv);
        free(nf);
        pc->oom = 1;
        return;
    }
    pc->hkey = nk;
    pc->hval = nv;
    pc->hflag = nf;
    pc->hcap = 2 * oc;
    for (size_t i = 0; i < oc; i++)
        if (ok[i] != 0) {
            size_t j = slot(pc, ok[i]);
            pc->hkey[j] = ok[i];
            pc->hval[j] = ov[i];
            pc->hflag[j] = of[i];
        }
    free(ok);
    free(ov);
    free(of);
}

/* A sector this block touched: new to the launch, new to the block, or
 * neither. kind: 1 a load, 2 a store, 3 an atomic (both); a sector that
 * has been both read and written is counted once in rw_sectors. */
static void touch_sector(px_count *pc, uint64_t sector, unsigned kind)
{
    if (pc->hn * 2 >= pc->hcap && !pc->oom)
        grow(pc);
    if (pc->oom)
        return; /* the footprint counts stop growing; the rest stays right */
    size_t i = slot(pc, sector + 1);
    if (pc->hkey[i] == 0) {
        pc->hkey[i] = sector + 1;
        pc->hval[i] = pc->serial;
        pc->hflag[i] = 0;
        pc->hn++;
        pc->c->block_sectors++;
    } else if (pc->hval[i] != pc->serial) {
        pc->hval[i] = pc->serial;
        pc->c->block_sectors++;
    }
    if (pc->hflag[i] != 3 && (pc->hflag[i] | kind) == 3)
        pc->c->rw_sectors++;
    pc->hflag[i] |= (uint8_t)kind;
}

static void touch_alloc(px_count *pc, uint64_t addr)
{
    if (pc->na && addr - pc->abase[pc->alast] < pc->asize[pc->alast])
        return; /* the common case: the same buffer as the last request */
    for (int i = 0; i < pc->na; i++)
        if (addr - pc->abase[i] < pc->asize[i]) {
            pc->alast = i;
            return;
        }
    uint64_t base;
    size_t size;
    if (pc->na < 64 && eo_px_heap_extent(pc->heap, addr, &base, &size)) {
        pc->alast = pc->na;
        pc->abase[pc->na] = base;
        pc->asize[pc->na++] = size;
    }
}

/* ---- requests ---------------------------------------------------------------------- */

/* The active lanes' addresses, sorted; returns how many. */
static unsigned sorted_addresses(const uint64_t *addr, uint32_t mask, uint64_t *a)
{
    unsigned n = 0;
    for (unsigned l = 0; l < 32; l++) {
        if (!((mask >> l) & 1))
            continue;
        uint64_t v = addr[l];
        unsigned j = n++;
        while (j > 0 && a[j - 1] > v) {
            a[j] = a[j - 1];
            j--;
        }
        a[j] = v;
    }
    return n;
}

static void global_request(px_count *pc, eo_px_mem *m, uint32_t mask, const uint64_t *addr,
                           unsigned bytes, unsigned kind)
{
    uint64_t a[32];
    unsigned n = sorted_addresses(addr, mask, a);
    uint64_t last_addr = ~0ull, last_sector = ~0ull;
    m->requests++;
    for (unsigned i = 0; i < n; i++) {
        if (a[i] == last_addr)
            continue;
        last_addr = a[i];
        m->bytes += bytes;
        uint64_t s = a[i] >> 5;
        if (s != last_sector) {
            last_sector = s;
            m->sectors++;
            touch_sector(pc, s, kind);
        }
    }
    touch_alloc(pc, a[0]);
    touch_alloc(pc, a[n - 1]);
}

unsigned px_shared_wavefronts(const uint64_t *addr, uint32_t mask, unsigned bytes,
                              unsigned *ideal)
{
    /* Lanes per part: 32 for accesses up to 4 bytes, 16 for 8, 8 for 16. */
    unsigned per = bytes <= 4 ? 32 : bytes == 8 ? 16 : 8, total = 0, parts = 0;
    for (unsigned p = 0; p < 32; p += per) {
        uint32_t pm = (uint32_t)(((1ull << per) - 1) << p) & mask;
        if (!pm)
            continue;
        parts++;
        /* The common case first: all the words within a 32-word window
         * lie in distinct banks (or are the same word): one pass. */
        uint64_t lo = ~0ull, hi = 0;
        for (unsigned l = p; l < p + per; l++)
            if ((pm >> l) & 1) {
                uint64_t a = addr[l] / 4, z = (addr[l] + (bytes ? bytes : 1) - 1) / 4;
                lo = a < lo ? a : lo;
                hi = z > hi ? z : hi;
            }
        if (hi - lo < 32) {
            total += 1;
            continue;
        }
        /* The part's distinct words, sorted (at most 32: per lanes x bytes/4). */
        uint64_t w[32];
        unsigned nw = 0;
        for (unsigned l = p; l < p + per; l++) {
            if (!((pm >> l) & 1))
                continue;
            uint64_t first = addr[l] / 4, last = (addr[l] + (bytes ? bytes : 1) - 1) / 4;
            for (uint64_t x = first; x <= last && nw < 32; x++) {
                unsigned j = nw;
                while (j > 0 && w[j - 1] > x)
                    j--;
                if (j > 0 && w[j - 1] == x)
                    continue; /* the same word: served by the same pass */
                memmove(w + j + 1, w + j, (nw - j) * sizeof *w);
                w[j] = x;
                nw++;
            }
        }
        unsigned bank[32] = {0}, worst = 0;
        for (unsigned i = 0; i < nw; i++) {
            unsigned b = (unsigned)(w[i] % 32);
            if (++bank[b] > worst)
                worst = bank[b];
        }
        total += worst;
    }
    *ideal = parts;
    return total;
}

static void shared_request(eo_px_smem *m, uint32_t mask, const uint64_t *addr, unsigned bytes)
{
    unsigned ideal;
    m->requests++;
    m->wavefronts += px_shared_wavefronts(addr, mask, bytes, &ideal);
    m->ideal += ideal;
}

void px_count_async_dst(px_count *pc, uint32_t mask, const uint64_t *addr, unsigned bytes)
{
    if (pc->c && mask)
        shared_request(&pc->c->sst, mask, addr, bytes);
}

void px_count_insn(px_count *pc, const px_insn *in, unsigned w, uint32_t exec,
                   uint32_t mem_mask, const uint64_t *addr, unsigned bytes, int shared)
{
    eo_px_counters *c = pc->c;
    if (!c)
        return;
    unsigned cls = classify(in);
    if (cls == CLS_BY_ADDRESS) {
        int st = in->op == PX_OP_ST, at = in->op == PX_OP_ATOM || in->op == PX_OP_RED;
        if (shared)
            cls = st || at ? EO_PX_C_ST_SHARED : EO_PX_C_LD_SHARED;
        else
            cls = at ? EO_PX_C_ATOM_GLOBAL : st ? EO_PX_C_ST_GLOBAL : EO_PX_C_LD_GLOBAL;
    }
    c->warp_inst[cls]++;
    if ((in->op == PX_OP_DIV || in->op == PX_OP_REM) && cls == EO_PX_C_INT)
        c->idiv_insts++; /* a ~20-instruction sequence in SASS, no hardware divider */
    c->warp_insts++;
    if ((cls == EO_PX_C_BRANCH || cls == EO_PX_C_BAR) && pc->wait[w])
        close_group(pc, w); /* the end of the basic block the wait fell in */
    c->thread_insts += (uint64_t)__builtin_popcount(exec);
    if (cls == EO_PX_C_MMA)
        c->tensor_flops += 2 * 16 * 8 * 16;
    if (!mem_mask)
        return;
    switch (cls) {
    case EO_PX_C_LD_GLOBAL:
        global_request(pc, &c->gld, mem_mask, addr, bytes, 1);
        if (in->op != PX_OP_CP_ASYNC) /* cp.async writes no register: nothing to wait on */
            mark_pending(pc, in, w);
        break;
    case EO_PX_C_ST_GLOBAL: global_request(pc, &c->gst, mem_mask, addr, bytes, 2); break;
    case EO_PX_C_ATOM_GLOBAL: global_request(pc, &c->gatom, mem_mask, addr, bytes, 3); break;
    case EO_PX_C_LD_SHARED: shared_request(&c->sld, mem_mask, addr, bytes); break;
    case EO_PX_C_ST_SHARED: shared_request(&c->sst, mem_mask, addr, bytes); break;
    default: break;
    }
}
