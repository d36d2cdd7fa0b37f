/* core/ctx.c — the context: arenas, grad mode, PRNG, step marks.
 *
 * Everything mutable lives in the context, so two contexts in one process
 * (two models, two threads each with its own) never see each other. */
#include <math.h>
#include "core/internal.h"

/* Everything a context starts with but its CPU kernel table, which the
 * caller sets: eo_ctx_init the full one (below), eo_ctx_init_kernels one
 * holding only the kernels the program named (core/cpu_kernels.c). */
eo_status eo_ctx_setup(eo_ctx *ctx, void *persist_buf, size_t persist_bytes, void *step_buf,
                       size_t step_bytes)
{
    if (!ctx)
        return EO_ERR_ARG;
    /* Zero the struct without memset's help being required of the caller;
     * a refused init too, so eo_last_error has a string to give (the
     * caller's struct may hold anything before this call). */
    eo_ctx zero = {0};
    *ctx = zero;
    if (!persist_buf || !step_buf) {
        return eo_fail(ctx, EO_ERR_ARG, "ctx_init: NULL %s buffer (%zu bytes)",
                       !persist_buf ? "persistent" : "step",
                       !persist_buf ? persist_bytes : step_bytes);
    }
    eo_arena_init(&ctx->persist, persist_buf, persist_bytes, "persistent");
    eo_arena_init(&ctx->step, step_buf, step_bytes, "step");
    ctx->grad_enabled = 1;
    ctx->training = 1;
    ctx->exec.par.nthreads = 1;
    eo_seed(ctx, 0);
    return EO_OK;
}

eo_status eo_ctx_init(eo_ctx *ctx, void *persist_buf, size_t persist_bytes, void *step_buf,
                      size_t step_bytes)
{
    EO_CHECK(eo_ctx_setup(ctx, persist_buf, persist_bytes, step_buf, step_bytes));
    ctx->backend[EO_CPU] = &eo_backend_cpu;
    return EO_OK;
}

const char *eo_last_error(const eo_ctx *ctx) { return ctx ? ctx->err : "no context"; }

void eo_ctx_set_parallel(eo_ctx *ctx, eo_par par)
{
    if (!ctx)
        return;
    if (par.nthreads < 1)
        par.nthreads = 1;
    ctx->exec.par = par;
}

void eo_ctx_set_grad_sync(eo_ctx *ctx, eo_grad_sync hook)
{
    if (ctx)
        ctx->grad_sync = hook;
}

void eo_ctx_set_profile(eo_ctx *ctx, eo_profile_hook hook)
{
    if (ctx)
        ctx->profile = hook;
}

int eo_set_grad(eo_ctx *ctx, int enabled)
{
    if (!ctx)
        return 0;
    int old = ctx->grad_enabled;
    ctx->grad_enabled = enabled != 0;
    return old;
}

eo_mark eo_mark_get(const eo_ctx *ctx)
{
    eo_mark none = { 0, 0, NULL, 0 };
    if (!ctx)
        return none;
    eo_mark m = { eo_arena_mark_get(&ctx->step), eo_arena_mark_get(&ctx->dev_step), ctx->tape,
                  ctx->tape ? ctx->tape->serial : 0 };
    return m;
}

/* Give back the step arenas' memory past host and dev, then forget what
 * lived there: the tape and the leaves' step gradients are lists in the
 * step arena, newest first, so what was given back is a prefix of each
 * (core/tape.c). The tape is never taken from a mark, so no mark can make
 * it point into memory handed out again. */
static void restore(eo_ctx *ctx, eo_arena_mark host, eo_arena_mark dev)
{
    eo_arena_rewind(&ctx->step, host);
    eo_arena_rewind(&ctx->dev_step, dev);
    eo_tape_rewound(ctx);
}

/* Why m cannot be rewound to, or NULL. Marks nest: a rewind to a mark
 * gives back every mark taken after it. Such a mark is past the arena's
 * top, or (once the arena has grown back past it) the tape below it is no
 * longer the one it saw (by serial: a new node can sit at the old one's
 * address). A device part past a device arena with no memory
 * (none attached, or detached) is not checked: there is nothing there to
 * give back. */
static const char *stale(const eo_ctx *ctx, eo_mark m)
{
    if (m.host > ctx->step.used)
        return "the host step arena";
    if (m.dev > ctx->dev_step.used && ctx->dev_step.cap > 0)
        return "the device step arena";
    const eo_node *t = ctx->tape;
    while (t && (uintptr_t)t - ctx->step.base >= m.host)
        t = t->prev;
    return t == m.tape && (!t || t->serial == m.tape_serial) ? NULL : "the tape";
}

eo_status eo_rewind(eo_ctx *ctx, eo_mark m)
{
    if (!ctx)
        return EO_ERR_ARG;
    const char *where = stale(ctx, m);
    if (where) {
        /* Nothing changes: a half-restored context (host memory back,
         * the tape not) is what made the next backward loop forever. */
        const char *was = ctx->op;
        if (ctx->depth == 0)
            ctx->op = "rewind";
        eo_fail(ctx, EO_ERR_STATE, "rewind: a stale mark: %s has already been rewound below it "
                                   "(marks are rewound innermost first; a rewind to an outer "
                                   "mark ends every mark taken after it)", where);
        ctx->op = was;
        return EO_ERR_STATE;
    }
    restore(ctx, m.host, m.dev);
    return EO_OK;
}

/* ---- public calls: see EO_RUN in internal.h ------------------------------ */

void eo_enter(eo_ctx *ctx, const char *op)
{
    if (ctx->profile.fn)
        ctx->profile.fn(ctx->profile.user, op, EO_PROFILE_FORWARD, 0, ctx->depth + 1);
    if (ctx->depth++ > 0)
        return; /* an op inside another: the outer one keeps the name and the marks */
    ctx->op = op;
    ctx->entry = eo_mark_get(ctx);
    ctx->entry_persist = eo_arena_mark_get(&ctx->persist);
    ctx->entry_dev_persist = eo_arena_mark_get(&ctx->dev_persist);
}

eo_status eo_leave(eo_ctx *ctx, const char *op, eo_status s)
{
    if (ctx->profile.fn)
        ctx->profile.fn(ctx->profile.user, op, EO_PROFILE_FORWARD, 1, ctx->depth);
    if (--ctx->depth > 0 || s == EO_OK)
        return s;
    /* The caller's call failed: give back everything it took. */
    restore(ctx, ctx->entry.host, ctx->entry.dev);
    eo_arena_rewind(&ctx->persist, ctx->entry_persist);
    eo_arena_rewind(&ctx->dev_persist, ctx->entry_dev_persist);
    return s;
}

/* ---- PCG32 (XSH-RR): 64-bit LCG state, output permuted to 32 bits. ---- */
void eo_seed(eo_ctx *ctx, uint64_t seed)
{
    if (!ctx)
        return;
    ctx->rng_state = 0;
    ctx->rng_inc = (seed << 1u) | 1u; /* the stream: any odd increment */
    eo_rand_u32(ctx);
    ctx->rng_state += 0x853c49e6748fea9bULL ^ seed;
    eo_rand_u32(ctx);
}

uint32_t eo_rand_u32(eo_ctx *ctx)
{
    if (!ctx)
        return 0;
    uint64_t old = ctx->rng_state;
    ctx->rng_state = old * 6364136223846793005ULL + ctx->rng_inc;
    uint32_t xorshifted = (uint32_t)(((old >> 18u) ^ old) >> 27u);
    uint32_t rot = (uint32_t)(old >> 59u);
    return (xorshifted >> rot) | (xorshifted << ((-rot) & 31));
}

float eo_rand_uniform(eo_ctx *ctx) { return (float)(eo_rand_u32(ctx) >> 8) * (1.0f / 16777216.0f); }

float eo_rand_normal(eo_ctx *ctx)
{
    if (!ctx)
        return 0.0f;
    /* Box–Muller; 1 - u keeps the log's argument in (0, 1]. */
    float u1 = 1.0f - eo_rand_uniform(ctx);
    float u2 = eo_rand_uniform(ctx);
    return sqrtf(-2.0f * logf(u1)) * cosf(6.28318530718f * u2);
}
