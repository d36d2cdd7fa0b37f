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

/* Room for `cap` entries of `size` bytes in the persistent arena. */
static eo_status persistent_array(eo_ctx *ctx, size_t size, int64_t cap, void **out)
{
    size_t bytes;
    if (cap < 1 || eo_size_mul_overflows(size, (size_t)cap, &bytes))
        return eo_fail(ctx, EO_ERR_ARG, "need a capacity >= 1 whose bytes fit, got %lld",
                       (long long)cap);
    return eo_host_alloc(ctx, EO_PERSIST, bytes, out);
}

EO_PUBLIC(params_init, (eo_ctx *ctx, eo_params *ps, int cap), (ctx, ps, cap))
{
    if (!ps)
        return eo_fail(ctx, EO_ERR_ARG, "params_init: NULL list");
    eo_params empty = { NULL, 0, 0, 0 }; /* what a failed init leaves: adding says STATE */
    *ps = empty;
    EO_CHECK(persistent_array(ctx, sizeof(eo_tensor *), cap, (void **)&ps->items));
    ps->cap = cap;
    return EO_OK;
}

EO_PUBLIC(params_init_borrowed, (eo_ctx *ctx, eo_params *ps, int cap), (ctx, ps, cap))
{
    EO_CHECK(eo_params_init(ctx, ps, cap));
    ps->borrowed = 1;
    return EO_OK;
}

EO_PUBLIC(params_add, (eo_ctx *ctx, eo_params *ps, eo_tensor *t), (ctx, ps, t))
{
    if (!ps || !t)
        return eo_fail(ctx, EO_ERR_ARG, "params_add: NULL %s", !ps ? "parameter list" : "tensor");
    if ((!t->requires_grad || !t->grad) && !t->readonly)
        return eo_fail(ctx, EO_ERR_ARG, "params_add: %T is not a parameter", t);
    if (!ps->items)
        return eo_fail(ctx, EO_ERR_STATE, "params_add: the list was not initialised");
    if (ps->count == ps->cap)
        return eo_fail(ctx, EO_ERR_STATE, "params_add: list full (%d entries)", ps->cap);
    ps->items[ps->count++] = t;
    return EO_OK;
}

eo_status eo_expect_params(eo_ctx *ctx, const char *op, const eo_params *ps)
{
    for (int i = 0; i < ps->count; i++) {
        const eo_tensor *p = ps->items[i];
        if (!p)
            return eo_fail(ctx, EO_ERR_ARG, "%s: parameter %d is NULL", op, i);
        EO_CHECK(eo_expect_live(ctx, op, p));
        EO_CHECK(eo_expect_live(ctx, op, p->grad));
        EO_CHECK(eo_expect_live(ctx, op, p->low));
    }
    return EO_OK;
}

EO_PUBLIC(params_zero_grad, (eo_ctx *ctx, const eo_params *ps), (ctx, ps))
{
    if (!ps)
        return eo_fail(ctx, EO_ERR_ARG, "params_zero_grad: NULL list");
    EO_CHECK(eo_expect_params(ctx, "params_zero_grad", ps));
    for (int i = 0; i < ps->count; i++) {
        eo_tensor *g = ps->items[i]->grad;
        if (!g) /* a borrowed parameter: inference only */
            return eo_expect_writable(ctx, "params_zero_grad", ps->items[i]);
        size_t bytes = (size_t)eo_numel(g) * eo_dtype_size(g->dtype);
        EO_CHECK(ctx->backend[g->device]->zero(ctx, g->data, bytes));
    }
    return EO_OK;
}

int64_t eo_params_numel(const eo_params *ps)
{
    int64_t n = 0;
    if (!ps)
        return 0;
    for (int i = 0; i < ps->count; i++)
        n += eo_numel(ps->items[i]);
    return n;
}

eo_tensor *eo_params_find(const eo_params *ps, const char *name)
{
    if (!ps || !name)
        return NULL;
    for (int i = 0; i < ps->count; i++)
        if (ps->items[i]->name && eo_text_eq(ps->items[i]->name, name))
            return ps->items[i];
    return NULL;
}

EO_PUBLIC(param_named, (eo_ctx *ctx, eo_params *ps, eo_device dev, const char *prefix,
                       const char *leaf, int rank, const int64_t *shape, eo_tensor **out),
          (ctx, ps, dev, prefix, leaf, rank, shape, out))
{
    if (!prefix || !leaf || !out)
        return eo_fail(ctx, EO_ERR_ARG, "param_named: NULL %s",
                       !prefix ? "prefix" : !leaf ? "leaf name" : "output pointer");
    size_t lp = eo_text_len(prefix), ll = eo_text_len(leaf);
    char *name;
    EO_CHECK(eo_host_alloc(ctx, EO_PERSIST, lp + ll + 2, (void **)&name));
    memcpy(name, prefix, lp);
    name[lp] = '.';
    memcpy(name + lp + 1, leaf, ll + 1);
    if (ps && ps->borrowed)
        EO_CHECK(eo_param_borrowed(ctx, dev, name, rank, shape, out));
    else
        EO_CHECK(eo_param_new(ctx, dev, name, rank, shape, out));
    return ps ? eo_params_add(ctx, ps, *out) : EO_OK;
}

EO_PUBLIC(init_param, (eo_ctx *ctx, eo_tensor *t, float bound, int normal),
          (ctx, t, bound, normal))
{
    if (t && t->readonly && !t->data)
        return EO_OK; /* borrowed: its values will come from an image */
    EO_CHECK(eo_expect(ctx, "init_param", t, EO_F32));
    EO_CHECK(eo_expect_writable(ctx, "init_param", t));
    EO_CHECK(eo_need(ctx, bound >= 0.0f && bound < INFINITY, "init_param: bound",
                     "finite and >= 0", (double)bound));
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

/* A layer's constructor builds into a local copy and hands it over only
 * when everything worked. On failure the caller's module keeps its kind
 * and no weight (a forward says EO_ERR_STATE), the parameter list is cut
 * back to its length before the call, and eo_leave gives the memory back. */
static eo_status finish_init(eo_status s, eo_params *ps, int count0, const eo_module *built,
                             eo_module *m)
{
    if (s != EO_OK) {
        if (ps)
            ps->count = count0;
        return s;
    }
    *m = *built;
    return EO_OK;
}

/* Check what every constructor shares and give *m its "not made" state. */
static eo_status start_init(eo_ctx *ctx, const char *op, const char *prefix, eo_module_kind k,
                            eo_module *m, eo_module *built)
{
    eo_module z = {0};
    z.kind = k;
    *built = z;
    if (!m || !prefix)
        return eo_fail(ctx, EO_ERR_ARG, "%s: NULL %s", op, !m ? "module" : "name prefix");
    *m = z;
    return EO_OK;
}

static eo_status linear_make(eo_ctx *ctx, eo_params *ps, eo_device dev, const char *prefix,
                             int64_t in, int64_t out, int bias, eo_init init, eo_module *m)
{
    int64_t ws[2] = { out, in };
    EO_CHECK(eo_param_named(ctx, ps, dev, prefix, "weight", 2, ws, &m->w));
    if (bias)
        EO_CHECK(eo_param_named(ctx, ps, dev, prefix, "bias", 1, &out, &m->b));
    return init_weights(ctx, m, init, in, out);
}

EO_PUBLIC(linear_init, (eo_ctx *ctx, eo_params *ps, eo_device dev, const char *prefix, int64_t in,
                       int64_t out, int bias, eo_init init, eo_module *m),
          (ctx, ps, dev, prefix, in, out, bias, init, m))
{
    eo_module t;
    EO_CHECK(start_init(ctx, "linear_init", prefix, EO_MOD_LINEAR, m, &t));
    if (in < 1 || out < 1)
        return eo_fail(ctx, EO_ERR_ARG, "linear_init: in %lld and out %lld must be >= 1",
                       (long long)in, (long long)out);
    if ((unsigned)init > EO_INIT_NORMAL_002)
        return eo_fail(ctx, EO_ERR_ARG, "linear_init: unknown init scheme %d", (int)init);
    int n0 = ps ? ps->count : 0;
    return finish_init(linear_make(ctx, ps, dev, prefix, in, out, bias, init, &t), ps, n0, &t, m);
}

static eo_status conv2d_make(eo_ctx *ctx, eo_params *ps, eo_device dev, const char *prefix,
                             int64_t in_ch, int64_t out_ch, int k, eo_module *m)
{
    int64_t ws[4] = { out_ch, in_ch, k, k }, fan_in, fan_out;
    if (eo_mul_overflows(in_ch, (int64_t)k * k, &fan_in) ||
        eo_mul_overflows(out_ch, (int64_t)k * k, &fan_out))
        return eo_fail(ctx, EO_ERR_SHAPE, "conv2d_init: %lld -> %lld channels with k %d: the "
                       "weight's size overflows", (long long)in_ch, (long long)out_ch, k);
    EO_CHECK(eo_param_named(ctx, ps, dev, prefix, "weight", 4, ws, &m->w));
    EO_CHECK(eo_param_named(ctx, ps, dev, prefix, "bias", 1, &out_ch, &m->b));
    return init_weights(ctx, m, EO_INIT_KAIMING_UNIFORM, fan_in, fan_out);
}

EO_PUBLIC(conv2d_init, (eo_ctx *ctx, eo_params *ps, eo_device dev, const char *prefix,
                       int64_t in_ch, int64_t out_ch, int k, int pad, int stride, eo_module *m),
          (ctx, ps, dev, prefix, in_ch, out_ch, k, pad, stride, m))
{
    eo_module t;
    EO_CHECK(start_init(ctx, "conv2d_init", prefix, EO_MOD_CONV2D, m, &t));
    if (in_ch < 1 || out_ch < 1 || k < 1 || pad < 0 || stride < 1)
        return eo_fail(ctx, EO_ERR_ARG,
                       "conv2d_init: need channels >= 1 (got %lld -> %lld), kernel k >= 1 (%d), "
                       "pad >= 0 (%d), stride >= 1 (%d)",
                       (long long)in_ch, (long long)out_ch, k, pad, stride);
    t.pad = pad;
    t.stride = stride;
    int n0 = ps ? ps->count : 0;
    return finish_init(conv2d_make(ctx, ps, dev, prefix, in_ch, out_ch, k, &t), ps, n0, &t, m);
}

static eo_status layernorm_make(eo_ctx *ctx, eo_params *ps, eo_device dev, const char *prefix,
                                int64_t dim, eo_module *m)
{
    EO_CHECK(eo_param_named(ctx, ps, dev, prefix, "weight", 1, &dim, &m->w));
    EO_CHECK(eo_param_named(ctx, ps, dev, prefix, "bias", 1, &dim, &m->b));
    return eo_fill(ctx, m->w, 1.0f);
}

EO_PUBLIC(layernorm_init, (eo_ctx *ctx, eo_params *ps, eo_device dev, const char *prefix,
                          int64_t dim, float eps, eo_module *m),
          (ctx, ps, dev, prefix, dim, eps, m))
{
    eo_module t;
    EO_CHECK(start_init(ctx, "layernorm_init", prefix, EO_MOD_LAYERNORM, m, &t));
    if (dim < 1)
        return eo_fail(ctx, EO_ERR_ARG, "layernorm_init: dim must be >= 1, got %lld",
                       (long long)dim);
    EO_CHECK(eo_need(ctx, eps > 0.0f && eps < INFINITY, "layernorm_init: eps", "finite and > 0",
                     (double)eps));
    t.eps = eps;
    int n0 = ps ? ps->count : 0;
    return finish_init(layernorm_make(ctx, ps, dev, prefix, dim, &t), ps, n0, &t, m);
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
    if (!ctx)
        return 0;
    int old = ctx->training;
    ctx->training = training != 0;
    return old;
}

/* The name a layer's forward goes by in messages: "linear_forward: ...". */
static const char *forward_name(const eo_module *m)
{
    static const char *const names[] = {
        [EO_MOD_LINEAR] = "linear_forward", [EO_MOD_RELU] = "relu_forward",
        [EO_MOD_TANH] = "tanh_forward", [EO_MOD_GELU] = "gelu_forward",
        [EO_MOD_DROPOUT] = "dropout_forward", [EO_MOD_LAYERNORM] = "layernorm_forward",
        [EO_MOD_CONV2D] = "conv2d_forward", [EO_MOD_MAXPOOL2D] = "maxpool2d_forward",
        [EO_MOD_FLATTEN] = "flatten_forward",
    };
    if (!m || (unsigned)m->kind >= sizeof names / sizeof names[0])
        return "module_forward";
    return names[m->kind];
}

static eo_status module_forward_body(eo_ctx *ctx, const eo_module *m, eo_tensor *x,
                                     eo_tensor **y);

eo_status eo_module_forward(eo_ctx *ctx, const eo_module *m, eo_tensor *x, eo_tensor **y)
{
    EO_RUN(ctx, forward_name(m), module_forward_body(ctx, m, x, y));
}

static eo_status module_forward_body(eo_ctx *ctx, const eo_module *m, eo_tensor *x,
                                     eo_tensor **y)
{
    const char *op = forward_name(m);
    if (!m || !x || !y)
        return eo_fail(ctx, EO_ERR_ARG, "%s: NULL %s", op,
                       !m ? "layer" : !x ? "input" : "output pointer");
    EO_CHECK(eo_expect_any(ctx, op, x));
    int has_params = m->kind == EO_MOD_LINEAR || m->kind == EO_MOD_CONV2D ||
                     m->kind == EO_MOD_LAYERNORM;
    if (has_params && !m->w)
        return eo_fail(ctx, EO_ERR_STATE,
                       "%s: the layer has no weight (its init failed or never ran)", op);
    switch (m->kind) {
    case EO_MOD_LINEAR: {
        if (x->rank < 1 || x->shape[x->rank - 1] != m->w->shape[1])
            return eo_fail(ctx, EO_ERR_SHAPE, "%s: input %T, expected last axis %lld", op, x,
                           (long long)m->w->shape[1]);
        eo_tensor *x2 = x;
        if (x->rank == 1) {
            int64_t s[2] = { 1, x->shape[0] };
            EO_CHECK(eo_reshape(ctx, x, 2, s, &x2));
        }
        EO_CHECK(eo_matmul(ctx, x2, m->w, 0, 1, y));
        if (m->b) {
            /* Autocast: the bias joins the matmul's 16-bit output in its
             * dtype (torch's linear is one autocast op, bias included),
             * else the add would promote the activation back to f32. */
            eo_tensor *b = m->b;
            EO_CHECK(eo_autocast_low(ctx, &b));
            EO_CHECK(eo_add(ctx, *y, b, y));
        }
        return EO_OK;
    }
    case EO_MOD_RELU: return eo_relu(ctx, x, y);
    case EO_MOD_GELU: return eo_gelu(ctx, x, y);
    case EO_MOD_TANH: return eo_tanh(ctx, x, y);
    case EO_MOD_DROPOUT:
        EO_CHECK(eo_need(ctx, m->p >= 0.0f && m->p < 1.0f, "dropout_forward: p", "in [0, 1)",
                         (double)m->p));
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

EO_PUBLIC(sequential_init, (eo_ctx *ctx, eo_sequential *s, int cap), (ctx, s, cap))
{
    if (!s)
        return eo_fail(ctx, EO_ERR_ARG, "sequential_init: NULL container");
    eo_sequential empty = { NULL, 0, 0 }; /* what a failed init leaves: STATE on use */
    *s = empty;
    EO_CHECK(persistent_array(ctx, sizeof(eo_module), cap, (void **)&s->mods));
    s->cap = cap;
    return EO_OK;
}

EO_PUBLIC(sequential_add, (eo_ctx *ctx, eo_sequential *s, eo_module m), (ctx, s, m))
{
    if (!s)
        return eo_fail(ctx, EO_ERR_ARG, "sequential_add: NULL container");
    if (!s->mods)
        return eo_fail(ctx, EO_ERR_STATE, "sequential_add: the container was not initialised");
    if (s->count == s->cap)
        return eo_fail(ctx, EO_ERR_STATE, "sequential_add: full (%d layers)", s->cap);
    s->mods[s->count++] = m;
    return EO_OK;
}

EO_PUBLIC(sequential_forward, (eo_ctx *ctx, const eo_sequential *s, eo_tensor *x, eo_tensor **y),
          (ctx, s, x, y))
{
    if (!s || !x || !y)
        return eo_fail(ctx, EO_ERR_ARG, "sequential_forward: NULL %s",
                       !s ? "container" : !x ? "input" : "output pointer");
    if (!s->mods)
        return eo_fail(ctx, EO_ERR_STATE, "sequential_forward: the container was not initialised");
    for (int i = 0; i < s->count; i++) {
        eo_status st;
        const int fuse = s->mods[i].kind == EO_MOD_RELU && i + 1 < s->count &&
                         s->mods[i + 1].kind == EO_MOD_MAXPOOL2D;
        if (fuse) /* ReLU then max pool: one op, the same values and gradients */
            st = eo_relu_maxpool2d(ctx, x, s->mods[i + 1].k, &x);
        else
            st = eo_module_forward(ctx, &s->mods[i], x, &x);
        if (st != EO_OK) { /* "sequential_forward: layer 2: linear_forward: ..." */
            char which[16];
            eo_format(which, sizeof which, "%d", i);
            return eo_refail(ctx, st, "layer", which);
        }
        i += fuse;
    }
    *y = x;
    return EO_OK;
}
