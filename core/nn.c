/* core/nn.c — parameter lists, layers and the sequential container.
 *
 * Everything a layer allocates at construction (parameters, their
 * gradients, their names) goes to the persistent arena; everything its
 * forward makes goes to the step arena through the ops it calls. */
#include <math.h>
#include <string.h> /* memcpy */
#include "alloc/text.h"
#include "core/internal.h"
#include "core/nn.h"

eo_status eo_params_init(eo_ctx *ctx, eo_params *ps, int cap)
{
    if (!ps || cap < 1)
        return eo_fail(ctx, EO_ERR_ARG, "params_init: need a list and cap >= 1");
    ps->count = 0;
    ps->cap = cap;
    return eo_host_alloc(ctx, EO_PERSIST, sizeof(eo_tensor *) * (size_t)cap, (void **)&ps->items);
}

eo_status eo_params_add(eo_ctx *ctx, eo_params *ps, eo_tensor *t)
{
    if (!ps || !t || !t->requires_grad || !t->grad)
        return eo_fail(ctx, EO_ERR_ARG, "params_add: %T is not a parameter", t);
    if (ps->count == ps->cap)
        return eo_fail(ctx, EO_ERR_STATE, "params_add: list full (%d entries)", ps->cap);
    ps->items[ps->count++] = t;
    return EO_OK;
}

eo_status eo_params_zero_grad(eo_ctx *ctx, const eo_params *ps)
{
    for (int i = 0; i < ps->count; i++) {
        eo_tensor *g = ps->items[i]->grad;
        EO_CHECK(ctx->backend[g->device]->zero(ctx, g->data, (size_t)eo_numel(g) * 4));
    }
    return EO_OK;
}

int64_t eo_params_numel(const eo_params *ps)
{
    int64_t n = 0;
    for (int i = 0; i < ps->count; i++)
        n += eo_numel(ps->items[i]);
    return n;
}

eo_tensor *eo_params_find(const eo_params *ps, const char *name)
{
    for (int i = 0; i < ps->count; i++)
        if (ps->items[i]->name && eo_text_eq(ps->items[i]->name, name))
            return ps->items[i];
    return NULL;
}

eo_status eo_param_named(eo_ctx *ctx, eo_params *ps, eo_device dev, const char *prefix,
                         const char *leaf, int rank, const int64_t *shape, eo_tensor **out)
{
    size_t lp = eo_text_len(prefix), ll = eo_text_len(leaf);
    char *name;
    EO_CHECK(eo_host_alloc(ctx, EO_PERSIST, lp + ll + 2, (void **)&name));
    memcpy(name, prefix, lp);
    name[lp] = '.';
    memcpy(name + lp + 1, leaf, ll + 1);
    EO_CHECK(eo_param_new(ctx, dev, name, rank, shape, out));
    return ps ? eo_params_add(ctx, ps, *out) : EO_OK;
}

eo_status eo_init_param(eo_ctx *ctx, eo_tensor *t, float bound, int normal)
{
    /* Values are drawn on the host in element order (so a CPU and a CUDA
     * model with the same seed start identical), then uploaded. */
    int64_t n = eo_numel(t);
    eo_mark m = eo_mark_get(ctx);
    float *host;
    EO_CHECK(eo_host_alloc(ctx, EO_STEP, (size_t)n * sizeof(float), (void **)&host));
    for (int64_t i = 0; i < n; i++)
        host[i] = normal ? bound * eo_rand_normal(ctx)
                         : bound * (2.0f * eo_rand_uniform(ctx) - 1.0f);
    eo_status s = eo_write(ctx, t, host, (size_t)n * sizeof(float));
    eo_rewind(ctx, m);
    return s;
}

/* Weight and bias bounds of the schemes in nn.h. */
static eo_status init_weights(eo_ctx *ctx, eo_module *m, eo_init init, int64_t fan_in,
                              int64_t fan_out)
{
    float wb, bb = 0;
    int normal = 0;
    switch (init) {
    case EO_INIT_KAIMING_UNIFORM: wb = bb = 1.0f / sqrtf((float)fan_in); break;
    case EO_INIT_XAVIER_UNIFORM: wb = sqrtf(6.0f / (float)(fan_in + fan_out)); break;
    default: wb = 0.02f; normal = 1; break;
    }
    EO_CHECK(eo_init_param(ctx, m->w, wb, normal));
    if (m->b && bb > 0)
        EO_CHECK(eo_init_param(ctx, m->b, bb, 0));
    return EO_OK;
}

eo_status eo_linear_init(eo_ctx *ctx, eo_params *ps, eo_device dev, const char *prefix,
                         int64_t in, int64_t out, int bias, eo_init init, eo_module *m)
{
    if (!m || !prefix || in < 1 || out < 1)
        return eo_fail(ctx, EO_ERR_ARG, "linear: bad arguments (in %lld, out %lld)",
                       (long long)in, (long long)out);
    eo_module z = {0};
    *m = z;
    m->kind = EO_MOD_LINEAR;
    int64_t ws[2] = { out, in };
    EO_CHECK(eo_param_named(ctx, ps, dev, prefix, "weight", 2, ws, &m->w));
    if (bias)
        EO_CHECK(eo_param_named(ctx, ps, dev, prefix, "bias", 1, &out, &m->b));
    return init_weights(ctx, m, init, in, out);
}

eo_status eo_conv2d_init(eo_ctx *ctx, eo_params *ps, eo_device dev, const char *prefix,
                         int64_t in_ch, int64_t out_ch, int k, int pad, int stride,
                         eo_module *m)
{
    if (!m || !prefix || in_ch < 1 || out_ch < 1 || k < 1)
        return eo_fail(ctx, EO_ERR_ARG, "conv2d: bad arguments");
    eo_module z = {0};
    *m = z;
    m->kind = EO_MOD_CONV2D;
    m->pad = pad;
    m->stride = stride;
    int64_t ws[4] = { out_ch, in_ch, k, k };
    EO_CHECK(eo_param_named(ctx, ps, dev, prefix, "weight", 4, ws, &m->w));
    EO_CHECK(eo_param_named(ctx, ps, dev, prefix, "bias", 1, &out_ch, &m->b));
    return init_weights(ctx, m, EO_INIT_KAIMING_UNIFORM, in_ch * k * k, out_ch * k * k);
}

eo_status eo_layernorm_init(eo_ctx *ctx, eo_params *ps, eo_device dev, const char *prefix,
                            int64_t dim, float eps, eo_module *m)
{
    if (!m || !prefix || dim < 1)
        return eo_fail(ctx, EO_ERR_ARG, "layernorm_init: bad arguments");
    eo_module z = {0};
    *m = z;
    m->kind = EO_MOD_LAYERNORM;
    m->eps = eps;
    EO_CHECK(eo_param_named(ctx, ps, dev, prefix, "weight", 1, &dim, &m->w));
    EO_CHECK(eo_param_named(ctx, ps, dev, prefix, "bias", 1, &dim, &m->b));
    return eo_fill(ctx, m->w, 1.0f);
}

static eo_module simple(eo_module_kind k)
{
    eo_module m = {0};
    m.kind = k;
    return m;
}
eo_module eo_relu_module(void) { return simple(EO_MOD_RELU); }
eo_module eo_gelu_module(void) { return simple(EO_MOD_GELU); }
eo_module eo_tanh_module(void) { return simple(EO_MOD_TANH); }
eo_module eo_flatten_module(void) { return simple(EO_MOD_FLATTEN); }
eo_module eo_dropout_module(float p) { eo_module m = simple(EO_MOD_DROPOUT); m.p = p; return m; }
eo_module eo_maxpool2d_module(int k) { eo_module m = simple(EO_MOD_MAXPOOL2D); m.k = k; return m; }

int eo_set_training(eo_ctx *ctx, int training)
{
    int old = ctx->training;
    ctx->training = training != 0;
    return old;
}

eo_status eo_module_forward(eo_ctx *ctx, const eo_module *m, eo_tensor *x, eo_tensor **y)
{
    if (!m || !x || !y)
        return eo_fail(ctx, EO_ERR_ARG, "module_forward: NULL argument");
    switch (m->kind) {
    case EO_MOD_LINEAR: {
        if (x->rank < 1 || x->shape[x->rank - 1] != m->w->shape[1])
            return eo_fail(ctx, EO_ERR_SHAPE, "linear: input %T, expected last axis %lld", x,
                           (long long)m->w->shape[1]);
        eo_tensor *x2 = x;
        if (x->rank == 1) {
            int64_t s[2] = { 1, x->shape[0] };
            EO_CHECK(eo_reshape(ctx, x, 2, s, &x2));
        }
        EO_CHECK(eo_matmul(ctx, x2, m->w, 0, 1, y));
        if (m->b)
            EO_CHECK(eo_add(ctx, *y, m->b, y));
        return EO_OK;
    }
    case EO_MOD_RELU: return eo_relu(ctx, x, y);
    case EO_MOD_GELU: return eo_gelu(ctx, x, y);
    case EO_MOD_TANH: return eo_tanh(ctx, x, y);
    case EO_MOD_DROPOUT:
        if (!ctx->training || m->p == 0.0f) {
            *y = x;
            return EO_OK;
        }
        return eo_dropout(ctx, x, m->p, ((uint64_t)eo_rand_u32(ctx) << 32) | eo_rand_u32(ctx),
                          y);
    case EO_MOD_LAYERNORM: return eo_layernorm(ctx, x, m->w, m->b, m->eps, y);
    case EO_MOD_CONV2D: return eo_conv2d(ctx, x, m->w, m->b, m->pad, m->stride, y);
    case EO_MOD_MAXPOOL2D: return eo_maxpool2d(ctx, x, m->k, y);
    case EO_MOD_FLATTEN: {
        int64_t s[2] = { x->rank ? x->shape[0] : 1, -1 };
        return eo_reshape(ctx, x, 2, s, y);
    }
    }
    return eo_fail(ctx, EO_ERR_ARG, "module_forward: unknown layer kind %d", (int)m->kind);
}

eo_status eo_sequential_init(eo_ctx *ctx, eo_sequential *s, int cap)
{
    if (!s || cap < 1)
        return eo_fail(ctx, EO_ERR_ARG, "sequential_init: need cap >= 1");
    s->count = 0;
    s->cap = cap;
    return eo_host_alloc(ctx, EO_PERSIST, sizeof(eo_module) * (size_t)cap, (void **)&s->mods);
}

eo_status eo_sequential_add(eo_ctx *ctx, eo_sequential *s, eo_module m)
{
    if (s->count == s->cap)
        return eo_fail(ctx, EO_ERR_STATE, "sequential_add: full (%d layers)", s->cap);
    s->mods[s->count++] = m;
    return EO_OK;
}

eo_status eo_sequential_forward(eo_ctx *ctx, const eo_sequential *s, eo_tensor *x,
                                eo_tensor **y)
{
    for (int i = 0; i < s->count; i++)
        EO_CHECK(eo_module_forward(ctx, &s->mods[i], x, &x));
    *y = x;
    return EO_OK;
}
