/* core/optimizer.c — SGD and AdamW steps, gradient clipping, learning-rate
 * schedules.
 *
 * The update arithmetic is in the kernels (ops/kernels.h states the exact
 * formulas, with their sources); this file owns the state tensors — one
 * or two per parameter, made once in the persistent arena — and walks the
 * parameter list. Under mixed precision the parameters are the f32
 * masters and the state is f32; after each parameter's update its 16-bit
 * working copy (p->low) is rewritten from it (core/autocast.c). */
#include <math.h>
#include <stdint.h>
#include "core/internal.h"
#include "core/nn.h"

static eo_status make_state(eo_ctx *ctx, const eo_params *ps, eo_tensor ***out)
{
    eo_tensor **st;
    EO_CHECK(eo_host_alloc(ctx, EO_PERSIST, sizeof(eo_tensor *) * (size_t)ps->count,
                           (void **)&st));
    for (int i = 0; i < ps->count; i++) {
        eo_tensor *p = ps->items[i];
        EO_CHECK(eo_new_zeros(ctx, EO_PERSIST, p->device, EO_F32, p->rank, p->shape, &st[i]));
    }
    *out = st;
    return EO_OK;
}

/* The part of parameter p, at flat offset at, inside o's shard: local
 * elements [*lo, *hi). All of it when o is not sharded. */
static void shard_part(const eo_optimizer *o, int64_t at, int64_t n, int64_t *lo, int64_t *hi)
{
    if (!o->sharded) {
        *lo = 0;
        *hi = n;
        return;
    }
    int64_t b = o->shard_begin - at, e = o->shard_begin + o->shard_count - at;
    *lo = b > 0 ? b : 0;
    *hi = e < n ? e : n;
    if (*hi < *lo)
        *hi = *lo;
}

/* ZeRO-1's state: 1-D, the overlap of each parameter with the shard;
 * NULL where there is none. */
static eo_status make_shard_state(eo_ctx *ctx, const eo_optimizer *o, const eo_params *ps,
                                  eo_tensor ***out)
{
    eo_tensor **st;
    EO_CHECK(eo_host_alloc(ctx, EO_PERSIST, sizeof(eo_tensor *) * (size_t)ps->count,
                           (void **)&st));
    int64_t at = 0;
    for (int i = 0; i < ps->count; i++) {
        eo_tensor *p = ps->items[i];
        int64_t n = eo_numel(p), lo, hi;
        shard_part(o, at, n, &lo, &hi);
        st[i] = NULL;
        if (hi > lo) {
            int64_t len = hi - lo;
            EO_CHECK(eo_new_zeros(ctx, EO_PERSIST, p->device, EO_F32, 1, &len, &st[i]));
        }
        at += n;
    }
    *out = st;
    return EO_OK;
}

/* The hyper-parameters every optimizer shares. A NaN fails every test. */
static eo_status check_common(eo_ctx *ctx, const char *op, eo_optimizer *o, const eo_params *ps,
                              float lr, float weight_decay)
{
    if (!o || !ps)
        return eo_fail(ctx, EO_ERR_ARG, "%s: NULL %s", op, !o ? "optimizer" : "parameter list");
    eo_optimizer z = {0}; /* what a failed init leaves: a step says STATE */
    *o = z;
    EO_CHECK(eo_refuse_inference(ctx));
    EO_CHECK(eo_need(ctx, lr >= 0 && lr < INFINITY, "lr", "finite and >= 0", (double)lr));
    return eo_need(ctx, weight_decay >= 0 && weight_decay < INFINITY, "weight_decay",
                   "finite and >= 0", (double)weight_decay);
}

/* The optimizer's own copy of the caller's list, in the persistent arena
 * with its state: the caller's eo_params may go out of scope, and a
 * parameter added to it later (which has no state here) is not stepped,
 * as torch.optim keeps the parameters it was given. */
static eo_status own_list(eo_ctx *ctx, const char *op, const eo_params *ps,
                          const eo_params **out)
{
    if (ps->count < 0 || (ps->count > 0 && !ps->items))
        return eo_fail(ctx, EO_ERR_ARG, "%s: the parameter list holds %d entries at %s "
                                        "(not made by eo_params_init?)", op, ps->count,
                       ps->items ? "an array" : "NULL");
    for (int i = 0; i < ps->count; i++) {
        const eo_tensor *p = ps->items[i];
        if (p && !p->grad && !p->readonly) /* read-only ones are refused by the step */
            return eo_fail(ctx, EO_ERR_STATE, "%s: parameter %d ('%s', %T) has no gradient "
                                              "(made in inference mode?): call "
                                              "eo_params_enable_grad first", op, i,
                           p->name ? p->name : "", p);
    }
    eo_params *own;
    eo_tensor **items = NULL;
    EO_CHECK(eo_host_alloc(ctx, EO_PERSIST, sizeof *own, (void **)&own));
    if (ps->count > 0)
        EO_CHECK(eo_host_alloc(ctx, EO_PERSIST, sizeof(eo_tensor *) * (size_t)ps->count,
                               (void **)&items));
    for (int i = 0; i < ps->count; i++)
        items[i] = ps->items[i];
    eo_params copy = { items, ps->count, ps->count, ps->borrowed };
    *own = copy;
    *out = own;
    return EO_OK;
}

/* Make the state tensors; on failure *o is left unusable (eo_leave gives
 * the memory back). */
static eo_status with_state(eo_optimizer *o, eo_status s)
{
    if (s != EO_OK)
        o->params = NULL;
    return s;
}

EO_PUBLIC(sgd_init, (eo_ctx *ctx, eo_optimizer *o, const eo_params *ps, float lr, float momentum,
                    float weight_decay, int nesterov),
          (ctx, o, ps, lr, momentum, weight_decay, nesterov))
{
    EO_CHECK(check_common(ctx, "sgd_init", o, ps, lr, weight_decay));
    EO_CHECK(eo_need(ctx, momentum >= 0 && momentum < INFINITY, "momentum", "finite and >= 0",
                     (double)momentum));
    if (nesterov && momentum <= 0)
        return eo_fail(ctx, EO_ERR_ARG, "sgd_init: Nesterov needs momentum > 0");
    const eo_params *own;
    EO_CHECK(own_list(ctx, "sgd_init", ps, &own));
    o->kind = EO_OPTIM_SGD;
    o->params = own;
    o->lr = lr;
    o->momentum = momentum;
    o->weight_decay = weight_decay;
    o->nesterov = nesterov;
    return with_state(o, momentum > 0 ? make_state(ctx, own, &o->v) : EO_OK);
}

EO_PUBLIC(sgd_init_ex, (eo_ctx *ctx, eo_optimizer *o, const eo_params *ps, float lr,
                       float momentum, float dampening, float weight_decay, int nesterov),
          (ctx, o, ps, lr, momentum, dampening, weight_decay, nesterov))
{
    if (!(dampening >= 0 && dampening <= 1))
        return eo_fail(ctx, EO_ERR_ARG, "sgd_init_ex: dampening %f is outside [0, 1]",
                       (double)dampening);
    if (nesterov && dampening != 0)
        return eo_fail(ctx, EO_ERR_ARG, "sgd_init_ex: Nesterov needs dampening 0, got %f",
                       (double)dampening);
    EO_CHECK(eo_sgd_init(ctx, o, ps, lr, momentum, weight_decay, nesterov));
    o->dampening = dampening;
    return EO_OK;
}

EO_PUBLIC(adamw_init, (eo_ctx *ctx, eo_optimizer *o, const eo_params *ps, float lr, float beta1,
                      float beta2, float eps, float weight_decay),
          (ctx, o, ps, lr, beta1, beta2, eps, weight_decay))
{
    EO_CHECK(check_common(ctx, "adamw_init", o, ps, lr, weight_decay));
    EO_CHECK(eo_need(ctx, beta1 >= 0 && beta1 < 1, "beta1", "in [0, 1)", (double)beta1));
    EO_CHECK(eo_need(ctx, beta2 >= 0 && beta2 < 1, "beta2", "in [0, 1)", (double)beta2));
    EO_CHECK(eo_need(ctx, eps > 0 && eps < INFINITY, "eps", "finite and > 0", (double)eps));
    const eo_params *own;
    EO_CHECK(own_list(ctx, "adamw_init", ps, &own));
    o->kind = EO_OPTIM_ADAMW;
    o->params = own;
    o->lr = lr;
    o->beta1 = beta1;
    o->beta2 = beta2;
    o->eps = eps;
    o->weight_decay = weight_decay;
    eo_status s = make_state(ctx, own, &o->m);
    return with_state(o, s == EO_OK ? make_state(ctx, own, &o->v) : s);
}

EO_PUBLIC(adamw_init_shard, (eo_ctx *ctx, eo_optimizer *o, const eo_params *ps, float lr,
                            float beta1, float beta2, float eps, float weight_decay,
                            int64_t begin, int64_t count),
          (ctx, o, ps, lr, beta1, beta2, eps, weight_decay, begin, count))
{
    EO_CHECK(check_common(ctx, "adamw_init_shard", o, ps, lr, weight_decay));
    const eo_params *own;
    EO_CHECK(own_list(ctx, "adamw_init_shard", ps, &own));
    ps = own;
    int64_t total = 0;
    for (int i = 0; i < ps->count; i++)
        total += eo_numel(ps->items[i]);
    if (begin < 0 || count <= 0 || begin > total - count)
        return eo_fail(ctx, EO_ERR_ARG, "adamw_init_shard: shard [%lld, +%lld) is empty or "
                       "outside the %lld parameter elements", (long long)begin,
                       (long long)count, (long long)total);
    EO_CHECK(eo_need(ctx, beta1 >= 0 && beta1 < 1, "beta1", "in [0, 1)", (double)beta1));
    EO_CHECK(eo_need(ctx, beta2 >= 0 && beta2 < 1, "beta2", "in [0, 1)", (double)beta2));
    EO_CHECK(eo_need(ctx, eps > 0 && eps < INFINITY, "eps", "finite and > 0", (double)eps));
    o->kind = EO_OPTIM_ADAMW;
    o->params = own;
    o->lr = lr;
    o->beta1 = beta1;
    o->beta2 = beta2;
    o->eps = eps;
    o->weight_decay = weight_decay;
    o->sharded = 1;
    o->shard_begin = begin;
    o->shard_count = count;
    eo_status s = make_shard_state(ctx, o, ps, &o->m);
    return with_state(o, s == EO_OK ? make_shard_state(ctx, o, ps, &o->v) : s);
}

/* Data-parallel training: every rank's gradients are summed once per
 * step, in the parameter list's order, by the hook the program installed
 * (the library cannot know MPI or NCCL). The buffer list is built in the
 * step arena and given back before returning. */
EO_PUBLIC(grad_allreduce, (eo_ctx *ctx, const eo_params *ps), (ctx, ps))
{
    if (!ps)
        return eo_fail(ctx, EO_ERR_ARG, "grad_allreduce: NULL parameter list");
    EO_CHECK(eo_refuse_inference(ctx));
    EO_CHECK(eo_expect_params(ctx, "grad_allreduce", ps));
    ctx->grads_pending = 0;
    if (!ctx->grad_sync.allreduce || ps->count == 0)
        return EO_OK;
    eo_lent l;
    EO_CHECK(eo_lend(ctx, EO_CPU, sizeof(eo_grad_buffer) * (size_t)ps->count, &l));
    eo_grad_buffer *b = l.p;
    for (int i = 0; i < ps->count; i++) {
        const eo_tensor *g = ps->items[i]->grad;
        if (!g)
            return eo_expect_writable(ctx, "grad_allreduce", ps->items[i]);
        eo_grad_buffer one = { g->data, eo_numel(g), g->dtype, g->device };
        b[i] = one;
    }
    char msg[256];
    msg[0] = 0;
    eo_status s = ctx->grad_sync.allreduce(ctx->grad_sync.user, b, ps->count, msg, sizeof msg);
    msg[sizeof msg - 1] = 0; /* the hook's text is the caller's: terminate it here */
    eo_give_back(&l);
    if (s != EO_OK) {
        ctx->grads_pending = 1; /* nothing was summed */
        return eo_fail(ctx, s, "grad_allreduce: %s", msg[0] ? msg : "the hook failed");
    }
    return EO_OK;
}

/* The state tensors are on the parameters' device: a list rebuilt after
 * an eo_cuda_detach and a new attach is live while the state made
 * before is not. Reads the entries the step below reads. */
static eo_status state_live(eo_ctx *ctx, const eo_optimizer *o)
{
    for (int i = 0; i < o->params->count; i++) {
        EO_CHECK(eo_expect_live(ctx, "optimizer_step", o->m ? o->m[i] : NULL));
        EO_CHECK(eo_expect_live(ctx, "optimizer_step", o->v ? o->v[i] : NULL));
    }
    return EO_OK;
}

EO_PUBLIC(optimizer_step, (eo_ctx *ctx, eo_optimizer *o), (ctx, o))
{
    if (!o)
        return eo_fail(ctx, EO_ERR_ARG, "optimizer_step: NULL optimizer");
    EO_CHECK(eo_refuse_inference(ctx));
    if (!o->params)
        return eo_fail(ctx, EO_ERR_STATE, "optimizer_step: the optimizer was not initialised "
                                          "(or its init failed)");
    /* A schedule sets lr before every step: check it where it is used. */
    EO_CHECK(eo_need(ctx, o->lr >= 0 && o->lr < INFINITY, "optimizer_step: lr",
                     "finite and >= 0", (double)o->lr));
    EO_CHECK(eo_expect_params(ctx, "optimizer_step", o->params));
    for (int i = 0; i < o->params->count; i++)
        EO_CHECK(eo_expect_writable(ctx, "optimizer_step", o->params->items[i]));
    /* f32 parameters and gradients only: a bf16/f16 model keeps f32
     * master weights here (the 16-bit update kernels are sgd16/adamw16,
     * ops/kernels.h). Checked before anything changes. */
    for (int i = 0; i < o->params->count; i++) {
        const eo_tensor *p = o->params->items[i];
        if (p->dtype != EO_F32 || !p->grad || p->grad->dtype != EO_F32)
            return eo_fail(ctx, EO_ERR_DTYPE,
                           "optimizer_step: parameter %d is %T with gradient %T; expected f32 "
                           "(keep f32 master weights)", i, p, p->grad);
    }
    EO_CHECK(state_live(ctx, o));
    /* Every kernel the loop below calls is looked up before anything
     * changes: a step refused half-way would leave the first parameters
     * updated, and a retry (the scaler's) would update them twice. */
    for (int i = 0; i < o->params->count; i++) {
        const eo_backend *be = eo_backend_of(ctx, o->params->items[i]);
        if (o->sharded || o->kind != EO_OPTIM_SGD)
            EO_NEED_KERNEL(ctx, "adamw", be, adamw);
        else
            EO_NEED_KERNEL(ctx, "sgd", be, sgd);
    }
    if (ctx->grads_pending)
        EO_CHECK(eo_grad_allreduce(ctx, o->params));
    o->step++;
    int64_t at = 0;
    for (int i = 0; i < o->params->count; i++) {
        eo_tensor *p = o->params->items[i];
        const eo_backend *be = eo_backend_of(ctx, p);
        int64_t n = eo_numel(p);
        /* decay_min_rank: nanoGPT's two parameter groups without groups */
        const float wd = p->rank >= o->decay_min_rank ? o->weight_decay : 0.0f;
        if (o->sharded) {
            /* ZeRO-1: the elements of this rank's shard only; the kernels
             * are element-wise, so a sub-range updates exactly as the
             * whole would (a device pointer is offset the same way). */
            int64_t lo, hi;
            shard_part(o, at, n, &lo, &hi);
            at += n;
            if (hi == lo)
                continue;
            EO_NEED_KERNEL(ctx, "adamw", be, adamw);
            be->adamw(hi - lo, (float *)p->data + lo, (const float *)p->grad->data + lo,
                      o->m[i]->data, o->v[i]->data, o->lr, o->beta1, o->beta2, o->eps,
                      wd, o->step, &ctx->exec);
            EO_CHECK(eo_params_refresh_low_one(ctx, p)); /* the other shards' parts: after
                                                           the program's gather */
            continue;
        }
        if (o->kind == EO_OPTIM_SGD) {
            EO_NEED_KERNEL(ctx, "sgd", be, sgd);
            /* torch starts the buffer undamped: v = d on the first step */
            be->sgd(n, p->data, p->grad->data, o->v ? o->v[i]->data : NULL, o->lr, o->momentum,
                    o->step == 1 ? 0.0f : o->dampening, wd, o->nesterov,
                    &ctx->exec);
        } else {
            EO_NEED_KERNEL(ctx, "adamw", be, adamw);
            be->adamw(n, p->data, p->grad->data, o->m[i]->data, o->v[i]->data, o->lr,
                      o->beta1, o->beta2, o->eps, wd, o->step, &ctx->exec);
        }
        /* Mixed precision: the forward's 16-bit copy follows its master,
         * once per step (core/autocast.c). */
        EO_CHECK(eo_params_refresh_low_one(ctx, p));
    }
    return EO_OK;
}

static eo_status clip(eo_ctx *ctx, const eo_params *ps, float max_norm, int error_if_nonfinite,
                      float *norm_out);

EO_PUBLIC(clip_grad_norm, (eo_ctx *ctx, const eo_params *ps, float max_norm, float *norm_out),
          (ctx, ps, max_norm, norm_out))
{
    return clip(ctx, ps, max_norm, 0, norm_out);
}

EO_PUBLIC(clip_grad_norm_ex, (eo_ctx *ctx, const eo_params *ps, float max_norm,
                             int error_if_nonfinite, float *norm_out),
          (ctx, ps, max_norm, error_if_nonfinite, norm_out))
{
    return clip(ctx, ps, max_norm, error_if_nonfinite, norm_out);
}

/* The body of both; messages name whichever the caller called. */
static eo_status clip(eo_ctx *ctx, const eo_params *ps, float max_norm, int error_if_nonfinite,
                      float *norm_out)
{
    double total = 0;
    if (!ps)
        return eo_fail(ctx, EO_ERR_ARG, "NULL parameter list");
    EO_CHECK(eo_refuse_inference(ctx));
    /* max_norm <= 0 or NaN would flip or poison every gradient. */
    EO_CHECK(eo_need(ctx, max_norm > 0, "max_norm", "> 0", (double)max_norm));
    EO_CHECK(eo_expect_params(ctx, ctx->op, ps));
    if (ctx->grads_pending)
        EO_CHECK(eo_grad_allreduce(ctx, ps)); /* the global norm, the same on every rank */
    for (int i = 0; i < ps->count; i++)
        if (!ps->items[i]->grad) /* a borrowed parameter: inference only */
            return eo_expect_writable(ctx, "clip_grad_norm", ps->items[i]);
    for (int i = 0; i < ps->count; i++) {
        eo_tensor *g = ps->items[i]->grad;
        if (!g || g->dtype != EO_F32)
            return eo_fail(ctx, EO_ERR_DTYPE, "gradient %d is %T; expected f32",
                           i, g);
        const eo_backend *be = eo_backend_of(ctx, g);
        EO_NEED_KERNEL(ctx, "clip_grad_norm", be, sumsq);
        EO_NEED_KERNEL(ctx, "clip_grad_norm", be, unary); /* the scaling, below */
        /* The kernel writes one float on the device; bring it home. */
        eo_mark m = eo_mark_get(ctx);
        float part = 0, *dev;
        EO_CHECK(eo_scratch(ctx, g->device, sizeof(float), (void **)&dev));
        be->sumsq(eo_numel(g), g->data, dev, &ctx->exec);
        eo_status s = be->download(ctx, &part, dev, sizeof part);
        eo_rewind(ctx, m);
        EO_CHECK(s);
        total += (double)part;
    }
    float norm = sqrtf((float)total);
    if (norm_out)
        *norm_out = norm;
    /* A step a grad scaler will skip has an inf or NaN norm: by default
     * that is a result, not an error (torch's error_if_nonfinite=False),
     * and the gradients are multiplied as torch multiplies them (by 0 for
     * inf, NaN for NaN: its clamp(max_norm / (norm + 1e-6), max=1) keeps
     * a NaN). */
    if (!isfinite(norm) && error_if_nonfinite)
        return eo_fail(ctx, EO_ERR_NUMERIC, "gradient norm is %f "
                       "(error_if_nonfinite)", (double)norm);
    if (norm > max_norm || norm != norm) {
        float f = max_norm / (norm + 1e-6f);
        for (int i = 0; i < ps->count; i++) {
            eo_tensor *g = ps->items[i]->grad;
            const eo_backend *be = eo_backend_of(ctx, g);
            be->unary(EO_UN_SCALE, eo_numel(g), g->data, g->data, f, &ctx->exec);
        }
    }
    return EO_OK;
}

/* A float's bits: the settling test below must tell -0 from +0 and see a
 * NaN equal to itself, which == does neither. */
static uint32_t f32_bits(float x)
{
    union { float f; uint32_t u; } v = { x }; /* C11 6.5.2.3: reads the bytes as uint32_t */
    return v.u;
}

/* x * g^k for k > 0 by squaring, in double: O(log k) multiplications for a
 * k too large to walk. At most ~126 double roundings (about 1e-14
 * relative) stay far below float's last bit, and double's range keeps
 * every intermediate that still matters to a float result, so the final
 * rounding to float is nearly always the only visible one. */
static float scale_pow(float x, float g, int64_t k)
{
    double r = x, b = g;
    for (uint64_t e = (uint64_t)k; e; e >>= 1) {
        if (e & 1)
            r *= b;
        b *= b;
    }
    return (float)r;
}

float eo_lr_at(const eo_lr_schedule *s, int64_t step)
{
    if (!s)
        return 0.0f;
    switch (s->kind) {
    case EO_LR_STEP: {
        /* The decay as it always was: one float multiplication per
         * step_size steps, in order, so a schedule's rates keep their
         * bits. A walk that settles (0, a denormal that rounds back to
         * itself, inf, NaN, gamma 1; or a two-cycle of signs for a
         * negative gamma) stops there with the bits the full walk would
         * give; one that has not settled after LR_WALK factors (gamma
         * near 1: 0.9999 takes about a million to reach 0) finishes by
         * squaring, so no step number costs more than about LR_WALK + 126
         * multiplications. */
        enum { LR_WALK = 1 << 16 };
        float lr = s->base;
        int64_t k = s->step_size > 0 && step > 0 ? step / s->step_size : 0;
        for (int64_t i = 0; k > 0; k--, i++) {
            if (i == LR_WALK)
                return scale_pow(lr, s->gamma, k);
            float next = lr * s->gamma;
            if (f32_bits(next) == f32_bits(lr))
                return lr;
            if (f32_bits(next * s->gamma) == f32_bits(lr))
                return k % 2 ? next : lr;
            lr = next;
        }
        return lr;
    }
    case EO_LR_COSINE: {
        /* Fields outside the documented range are read as the nearest
         * value inside it (step and warmup at least 0, total at least
         * warmup) so every difference below is of two numbers in
         * [0, INT64_MAX] with the larger first: it cannot wrap, and a
         * valid schedule's arithmetic, and so its bits, is unchanged. */
        int64_t w = s->warmup > 0 ? s->warmup : 0;
        int64_t n = step > 0 ? step : 0;
        if (n < w)
            return s->base * (float)(n + 1) / (float)w;
        float span = s->total > w ? (float)(s->total - w) : 0.0f;
        float t = span > 0 ? (float)(n - w) / span : 1.0f;
        t = t < 0 ? 0 : t > 1 ? 1 : t;
        return s->min + (s->base - s->min) * 0.5f * (1.0f + cosf(3.14159265358979f * t));
    }
    default:
        return s->base;
    }
}

EO_PUBLIC(lr_schedule_check, (eo_ctx *ctx, const eo_lr_schedule *s), (ctx, s))
{
    if (!s)
        return eo_fail(ctx, EO_ERR_ARG, "lr_schedule_check: NULL schedule");
    if (s->kind != EO_LR_CONSTANT && s->kind != EO_LR_STEP && s->kind != EO_LR_COSINE)
        return eo_fail(ctx, EO_ERR_ARG,
                       "lr_schedule_check: kind %d is not EO_LR_CONSTANT, EO_LR_STEP or "
                       "EO_LR_COSINE",
                       (int)s->kind);
    EO_CHECK(eo_need(ctx, s->base >= 0 && s->base < INFINITY, "base", "finite and >= 0",
                     (double)s->base));
    if (s->kind == EO_LR_STEP) {
        EO_CHECK(eo_need(ctx, s->gamma >= 0 && s->gamma < INFINITY, "gamma", "finite and >= 0",
                         (double)s->gamma));
        if (s->step_size <= 0)
            return eo_fail(ctx, EO_ERR_ARG, "lr_schedule_check: step_size must be > 0, got %lld",
                           (long long)s->step_size);
    }
    if (s->kind == EO_LR_COSINE) {
        EO_CHECK(eo_need(ctx, s->min >= 0 && s->min < INFINITY, "min", "finite and >= 0",
                         (double)s->min));
        if (s->warmup < 0 || s->total < s->warmup)
            return eo_fail(ctx, EO_ERR_ARG,
                           "lr_schedule_check: warmup %lld and total %lld must satisfy "
                           "0 <= warmup <= total",
                           (long long)s->warmup, (long long)s->total);
    }
    return EO_OK;
}
