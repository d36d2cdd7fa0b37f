/* core/optimizer.c — SGD and AdamW steps, gradient clipping, learning-rate
 * schedules.
 *
 * The update arithmetic is in the kernels (ops/kernels.h states the exact
 * formulas, with their sources); this file owns the state tensors — one
 * or two per parameter, made once in the persistent arena — and walks the
 * parameter list. */
#include <math.h>
#include "core/internal.h"
#include "core/nn.h"

static eo_status make_state(eo_ctx *ctx, const eo_params *ps, eo_tensor ***out)
{
    eo_tensor **st;
    ctx->op = "optimizer state";
    EO_CHECK(eo_host_alloc(ctx, EO_PERSIST, sizeof(eo_tensor *) * (size_t)ps->count,
                           (void **)&st));
    for (int i = 0; i < ps->count; i++) {
        eo_tensor *p = ps->items[i];
        EO_CHECK(eo_new_zeros(ctx, EO_PERSIST, p->device, EO_F32, p->rank, p->shape, &st[i]));
    }
    *out = st;
    return EO_OK;
}

eo_status eo_sgd_init(eo_ctx *ctx, eo_optimizer *o, const eo_params *ps, float lr,
                      float momentum, float weight_decay, int nesterov)
{
    if (!o || !ps || !(lr >= 0) || !(momentum >= 0) || !(weight_decay >= 0))
        return eo_fail(ctx, EO_ERR_ARG, "sgd: bad hyper-parameters");
    if (nesterov && momentum <= 0)
        return eo_fail(ctx, EO_ERR_ARG, "sgd: Nesterov needs momentum > 0");
    eo_optimizer z = {0};
    *o = z;
    o->kind = EO_OPTIM_SGD;
    o->params = ps;
    o->lr = lr;
    o->momentum = momentum;
    o->weight_decay = weight_decay;
    o->nesterov = nesterov;
    return momentum > 0 ? make_state(ctx, ps, &o->v) : EO_OK;
}

eo_status eo_sgd_init_ex(eo_ctx *ctx, eo_optimizer *o, const eo_params *ps, float lr,
                         float momentum, float dampening, float weight_decay, int nesterov)
{
    if (!(dampening >= 0 && dampening <= 1))
        return eo_fail(ctx, EO_ERR_ARG, "sgd: dampening %f is outside [0, 1]", (double)dampening);
    if (nesterov && dampening != 0)
        return eo_fail(ctx, EO_ERR_ARG, "sgd: Nesterov needs dampening 0, got %f",
                       (double)dampening);
    EO_CHECK(eo_sgd_init(ctx, o, ps, lr, momentum, weight_decay, nesterov));
    o->dampening = dampening;
    return EO_OK;
}

eo_status eo_adamw_init(eo_ctx *ctx, eo_optimizer *o, const eo_params *ps, float lr,
                        float beta1, float beta2, float eps, float weight_decay)
{
    if (!o || !ps || !(lr >= 0) || !(beta1 >= 0 && beta1 < 1) || !(beta2 >= 0 && beta2 < 1) ||
        !(eps > 0) || !(weight_decay >= 0))
        return eo_fail(ctx, EO_ERR_ARG, "adamw: bad hyper-parameters");
    eo_optimizer z = {0};
    *o = z;
    o->kind = EO_OPTIM_ADAMW;
    o->params = ps;
    o->lr = lr;
    o->beta1 = beta1;
    o->beta2 = beta2;
    o->eps = eps;
    o->weight_decay = weight_decay;
    EO_CHECK(make_state(ctx, ps, &o->m));
    return make_state(ctx, ps, &o->v);
}

eo_status eo_optimizer_step(eo_ctx *ctx, eo_optimizer *o)
{
    if (!o || !o->params)
        return eo_fail(ctx, EO_ERR_ARG, "optimizer_step: not initialised");
    o->step++;
    for (int i = 0; i < o->params->count; i++) {
        eo_tensor *p = o->params->items[i];
        const eo_backend *be = eo_backend_of(ctx, p);
        int64_t n = eo_numel(p);
        if (o->kind == EO_OPTIM_SGD) {
            EO_NEED_KERNEL(ctx, "sgd", be, sgd);
            /* torch starts the buffer undamped: v = d on the first step */
            be->sgd(n, p->data, p->grad->data, o->v ? o->v[i]->data : NULL, o->lr, o->momentum,
                    o->step == 1 ? 0.0f : o->dampening, o->weight_decay, o->nesterov,
                    &ctx->exec);
        } else {
            EO_NEED_KERNEL(ctx, "adamw", be, adamw);
            be->adamw(n, p->data, p->grad->data, o->m[i]->data, o->v[i]->data, o->lr,
                      o->beta1, o->beta2, o->eps, o->weight_decay, o->step, &ctx->exec);
        }
    }
    return EO_OK;
}

eo_status eo_clip_grad_norm(eo_ctx *ctx, const eo_params *ps, float max_norm, float *norm_out)
{
    double total = 0;
    for (int i = 0; i < ps->count; i++) {
        eo_tensor *g = ps->items[i]->grad;
        const eo_backend *be = eo_backend_of(ctx, g);
        EO_NEED_KERNEL(ctx, "clip_grad_norm", be, sumsq);
        /* The kernel writes one float on the device; bring it home. */
        eo_mark m = eo_mark_get(ctx);
        float part = 0, *dev;
        EO_CHECK(eo_scratch(ctx, g->device, sizeof(float), (void **)&dev));
        be->sumsq(eo_numel(g), g->data, dev, &ctx->exec);
        eo_status s = be->download(ctx, &part, dev, sizeof part);
        eo_rewind(ctx, m);
        EO_CHECK(s);
        total += part;
    }
    float norm = sqrtf((float)total);
    if (norm_out)
        *norm_out = norm;
    if (!isfinite(norm))
        return eo_fail(ctx, EO_ERR_NUMERIC, "clip_grad_norm: gradient norm is %f", (double)norm);
    if (norm > max_norm) {
        float f = max_norm / (norm + 1e-6f);
        for (int i = 0; i < ps->count; i++) {
            eo_tensor *g = ps->items[i]->grad;
            const eo_backend *be = eo_backend_of(ctx, g);
            be->unary(EO_UN_SCALE, eo_numel(g), g->data, g->data, f, &ctx->exec);
        }
    }
    return EO_OK;
}

float eo_lr_at(const eo_lr_schedule *s, int64_t step)
{
    switch (s->kind) {
    case EO_LR_STEP: {
        float lr = s->base;
        for (int64_t k = s->step_size > 0 ? step / s->step_size : 0; k > 0; k--)
            lr *= s->gamma;
        return lr;
    }
    case EO_LR_COSINE: {
        if (step < s->warmup)
            return s->base * (float)(step + 1) / (float)s->warmup;
        float span = (float)(s->total - s->warmup);
        float t = span > 0 ? (float)(step - s->warmup) / span : 1.0f;
        t = t < 0 ? 0 : t > 1 ? 1 : t;
        return s->min + (s->base - s->min) * 0.5f * (1.0f + cosf(3.14159265358979f * t));
    }
    default:
        return s->base;
    }
}
