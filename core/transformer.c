/* core/transformer.c — see transformer.h. Everything here is composed
 * from public ops (matmul, views, layernorm, gelu, attention, embedding),
 * so the backward is the ops' own and there is no kernel to keep in step
 * with a second implementation. */
#include <math.h>
#include "core/internal.h"
#include "core/transformer.h"

#define PARAM_NAME_LEN 64 /* "blocks.<i>.attn.c_attn" and the like, with room to spare */

static eo_status normal_002(eo_ctx *ctx, eo_tensor *t) { return eo_init_param(ctx, t, 0.02f, 1); }

/* Room for n_fixed + 12 per block parameters, as an int the list takes:
 * 0 when the count does not fit (the builder then refuses the layers). */
static int param_count(int64_t n_fixed, int64_t layers)
{
    int64_t n;
    if (eo_mul_overflows(layers, 12, &n) || eo_add_overflows(n, n_fixed, &n) || n > INT32_MAX)
        return 0;
    return (int)n;
}

/* The widest projection of a block is 4C: does it fit? */
static int width_fits(int64_t C)
{
    int64_t w;
    return !eo_mul_overflows(C, 4, &w);
}

/* What the GPT and the ViT ask of their blocks: d_model a positive
 * multiple of heads with room for the 4C MLP, and layers whose
 * parameters (n_fixed + 12 a block) fit in one list. */
static eo_status check_blocks(eo_ctx *ctx, const char *op, int64_t d_model, int64_t heads,
                              int64_t layers, int64_t n_fixed)
{
    if (d_model < 1 || heads < 1 || d_model % heads || !width_fits(d_model))
        return eo_fail(ctx, EO_ERR_ARG, "%s: d_model %lld must be a positive multiple of heads "
                       "%lld (and 4 d_model must fit)", op, (long long)d_model, (long long)heads);
    if (layers < 1 || !param_count(n_fixed, layers))
        return eo_fail(ctx, EO_ERR_ARG, "%s: layers %lld must be >= 1 and fit in a parameter "
                       "list", op, (long long)layers);
    return EO_OK;
}

static eo_status block_make(eo_ctx *ctx, eo_params *ps, eo_device dev, const char *prefix,
                            int64_t n_embd, int64_t n_head, int causal, eo_block *b);

EO_PUBLIC(block_init, (eo_ctx *ctx, eo_params *ps, eo_device dev, const char *prefix,
                      int64_t n_embd, int64_t n_head, int causal, eo_block *b),
          (ctx, ps, dev, prefix, n_embd, n_head, causal, b))
{
    if (!b || !prefix)
        return eo_fail(ctx, EO_ERR_ARG, "block_init: NULL %s", !b ? "block" : "name prefix");
    eo_block z = {0}; /* what a failed init leaves: a forward says STATE */
    *b = z;
    /* The MLP is 4C wide: C itself must leave room for that product. */
    if (n_embd < 1 || n_head < 1 || n_embd % n_head || !width_fits(n_embd))
        return eo_fail(ctx, EO_ERR_ARG, "block_init: d_model %lld must be a positive multiple "
                                        "of heads %lld", (long long)n_embd, (long long)n_head);
    int n0 = ps ? ps->count : 0;
    eo_block t = z;
    eo_status s = block_make(ctx, ps, dev, prefix, n_embd, n_head, causal, &t);
    if (s != EO_OK) {
        if (ps)
            ps->count = n0;
        return s;
    }
    *b = t;
    return EO_OK;
}

static eo_status block_make(eo_ctx *ctx, eo_params *ps, eo_device dev, const char *prefix,
                            int64_t n_embd, int64_t n_head, int causal, eo_block *b)
{
    char name[PARAM_NAME_LEN];
    const int64_t C = n_embd;
    const float eps = EO_TRANSFORMER_LN_EPS;
    eo_format(name, sizeof name, "%s.ln_1", prefix);
    EO_CHECK(eo_layernorm_init(ctx, ps, dev, name, C, eps, &b->ln_1));
    eo_format(name, sizeof name, "%s.attn.c_attn", prefix);
    EO_CHECK(eo_linear_init(ctx, ps, dev, name, C, 3 * C, 1, EO_INIT_NORMAL_002, &b->attn.c_attn));
    eo_format(name, sizeof name, "%s.attn.c_proj", prefix);
    EO_CHECK(eo_linear_init(ctx, ps, dev, name, C, C, 1, EO_INIT_NORMAL_002, &b->attn.c_proj));
    eo_format(name, sizeof name, "%s.ln_2", prefix);
    EO_CHECK(eo_layernorm_init(ctx, ps, dev, name, C, eps, &b->ln_2));
    eo_format(name, sizeof name, "%s.mlp.c_fc", prefix);
    EO_CHECK(eo_linear_init(ctx, ps, dev, name, C, 4 * C, 1, EO_INIT_NORMAL_002, &b->c_fc));
    eo_format(name, sizeof name, "%s.mlp.c_proj", prefix);
    EO_CHECK(eo_linear_init(ctx, ps, dev, name, 4 * C, C, 1, EO_INIT_NORMAL_002, &b->c_proj));
    b->attn.n_embd = C;
    b->attn.n_head = n_head;
    b->attn.causal = causal != 0;
    b->attn.fused = 0;
    return EO_OK;
}

/* x: an activation of a float dtype (f32; bf16 or f16 under autocast,
 * core/autocast.c, or in a 16-bit model). */
static eo_status expect_activation(eo_ctx *ctx, const char *op, const eo_tensor *x)
{
    EO_CHECK(eo_expect_any(ctx, op, x));
    if (!eo_is_float(x->dtype))
        return eo_fail(ctx, EO_ERR_DTYPE, "%s: expected f32, bf16 or f16, got %T", op, x);
    return EO_OK;
}

/* Self-attention over x; with a cache (ck, cv [B, H, Tmax, D]), x holds
 * the positions len .. len+T-1: their k and v are written into the cache
 * and q attends to all len + T cached keys. */
static eo_status mha(eo_ctx *ctx, const eo_mha *a, eo_tensor *x, eo_tensor *ck, eo_tensor *cv,
                     int64_t len, eo_tensor **y)
{
    if (!a || !x || !y)
        return eo_fail(ctx, EO_ERR_ARG, "mha_forward: NULL %s",
                       !a ? "layer" : !x ? "input" : "output pointer");
    EO_CHECK(expect_activation(ctx, "mha_forward", x));
    if (a->n_embd < 1 || a->n_head < 1)
        return eo_fail(ctx, EO_ERR_STATE, "mha_forward: the layer was not initialised (or its "
                                          "init failed)");
    if (x->rank != 3 || x->shape[2] != a->n_embd)
        return eo_fail(ctx, EO_ERR_SHAPE, "mha_forward: expected x [B, T, %lld], got %T",
                       (long long)a->n_embd, x);
    const int64_t B = x->shape[0], T = x->shape[1], C = a->n_embd, H = a->n_head, D = C / H;
    eo_tensor *qkv, *q, *k, *v, *o;
    EO_CHECK(eo_module_forward(ctx, &a->c_attn, x, &qkv));        /* [B, T, 3C] */
    int64_t s4[4] = { B, T, 3 * H, D };
    EO_CHECK(eo_reshape(ctx, qkv, 4, s4, &qkv));                   /* [B, T, 3H, D] view */
    EO_CHECK(eo_slice(ctx, qkv, 2, 0, H, &q));                     /* [B, T, H, D] views */
    EO_CHECK(eo_slice(ctx, qkv, 2, H, H, &k));
    EO_CHECK(eo_slice(ctx, qkv, 2, 2 * H, H, &v));
    EO_CHECK(eo_transpose(ctx, q, 1, 2, &q));                      /* [B, H, T, D] views */
    EO_CHECK(eo_transpose(ctx, k, 1, 2, &k));
    EO_CHECK(eo_transpose(ctx, v, 1, 2, &v));
    const float scale = 1.0f / sqrtf((float)D);
    if (ck) {
        /* The cache keeps its own dtype (eo_gpt_cache_init: the autocast
         * dtype it was made under): the new k and v are rounded into it,
         * and a forward in another dtype reads it converted to its own,
         * so q, k and v reach the attention in one dtype. */
        eo_tensor *dst;
        if (k->dtype != ck->dtype) {
            EO_CHECK(eo_cast(ctx, k, ck->dtype, &k));
            EO_CHECK(eo_cast(ctx, v, cv->dtype, &v));
        }
        EO_CHECK(eo_slice(ctx, ck, 2, len, T, &dst));
        EO_CHECK(eo_copy_into(ctx, dst, k));
        EO_CHECK(eo_slice(ctx, cv, 2, len, T, &dst));
        EO_CHECK(eo_copy_into(ctx, dst, v));
        EO_CHECK(eo_slice(ctx, ck, 2, 0, len + T, &k));            /* [B, H, len+T, D] */
        EO_CHECK(eo_slice(ctx, cv, 2, 0, len + T, &v));
        if (k->dtype != q->dtype) {
            EO_CHECK(eo_cast(ctx, k, q->dtype, &k));
            EO_CHECK(eo_cast(ctx, v, q->dtype, &v));
        }
        EO_CHECK(eo_attention_fused(ctx, q, k, v, NULL, a->causal, scale, &o));
    } else if (a->fused)
        EO_CHECK(eo_attention_fused(ctx, q, k, v, NULL, a->causal, scale, &o));
    else
        EO_CHECK(eo_attention(ctx, q, k, v, NULL, a->causal, scale, &o));
    EO_CHECK(eo_transpose(ctx, o, 1, 2, &o));                      /* [B, T, H, D] */
    int64_t s3[3] = { B, T, C };
    EO_CHECK(eo_reshape(ctx, o, 3, s3, &o));                       /* the one copy */
    return eo_module_forward(ctx, &a->c_proj, o, y);
}

EO_PUBLIC(mha_forward, (eo_ctx *ctx, const eo_mha *a, eo_tensor *x, eo_tensor **y), (ctx, a, x, y))
{
    return mha(ctx, a, x, NULL, NULL, 0, y);
}

static eo_status block(eo_ctx *ctx, const eo_block *b, eo_tensor *x, eo_tensor *ck,
                       eo_tensor *cv, int64_t len, eo_tensor **y)
{
    if (!b || !x || !y)
        return eo_fail(ctx, EO_ERR_ARG, "block_forward: NULL %s",
                       !b ? "block" : !x ? "input" : "output pointer");
    EO_CHECK(expect_activation(ctx, "block_forward", x));
    if (b->attn.n_embd < 1)
        return eo_fail(ctx, EO_ERR_STATE, "block_forward: the block was not initialised (or its "
                                          "init failed)");
    eo_tensor *h;
    EO_CHECK(eo_module_forward(ctx, &b->ln_1, x, &h));
    EO_CHECK(mha(ctx, &b->attn, h, ck, cv, len, &h));
    EO_CHECK(eo_add(ctx, x, h, &x));
    EO_CHECK(eo_module_forward(ctx, &b->ln_2, x, &h));
    EO_CHECK(eo_module_forward(ctx, &b->c_fc, h, &h));
    EO_CHECK(eo_gelu(ctx, h, &h));
    EO_CHECK(eo_module_forward(ctx, &b->c_proj, h, &h));
    return eo_add(ctx, x, h, y);
}

EO_PUBLIC(block_forward, (eo_ctx *ctx, const eo_block *b, eo_tensor *x, eo_tensor **y),
          (ctx, b, x, y))
{
    return block(ctx, b, x, NULL, NULL, 0, y);
}

/* ---- GPT ------------------------------------------------------------------ */

static eo_status gpt_make(eo_ctx *ctx, eo_device dev, const eo_gpt_config *cfg, eo_gpt *m);

EO_PUBLIC(gpt_build, (eo_ctx *ctx, eo_device dev, const eo_gpt_config *cfg, eo_gpt *m),
          (ctx, dev, cfg, m))
{
    if (!cfg || !m)
        return eo_fail(ctx, EO_ERR_ARG, "gpt_build: NULL %s", !cfg ? "config" : "model");
    eo_gpt z = {0}; /* what a failed build leaves: a forward says STATE */
    *m = z;
    if (cfg->vocab < 1 || cfg->context < 1)
        return eo_fail(ctx, EO_ERR_ARG, "gpt_build: vocab %lld and context %lld must be >= 1",
                       (long long)cfg->vocab, (long long)cfg->context);
    if (cfg->tied != 0 && cfg->tied != 1)
        return eo_fail(ctx, EO_ERR_ARG, "gpt_build: tied is %d, expected 0 (own lm_head) or 1 "
                                        "(head tied to wte)", cfg->tied);
    EO_CHECK(check_blocks(ctx, "gpt_build", cfg->d_model, cfg->heads, cfg->layers, 5));
    eo_status s = gpt_make(ctx, dev, cfg, m);
    if (s != EO_OK)
        *m = z;
    return s;
}

static eo_status gpt_make(eo_ctx *ctx, eo_device dev, const eo_gpt_config *cfg, eo_gpt *m)
{
    const int64_t C = cfg->d_model;
    m->cfg = *cfg;
    EO_CHECK(eo_params_init(ctx, &m->params, param_count(5, cfg->layers)));
    int64_t se[2] = { cfg->vocab, C }, sp[2] = { cfg->context, C };
    EO_CHECK(eo_param_named(ctx, &m->params, dev, "wte", "weight", 2, se, &m->wte));
    EO_CHECK(normal_002(ctx, m->wte));
    EO_CHECK(eo_param_named(ctx, &m->params, dev, "wpe", "weight", 2, sp, &m->wpe));
    EO_CHECK(normal_002(ctx, m->wpe));
    EO_CHECK(eo_host_alloc(ctx, EO_PERSIST, sizeof(eo_block) * (size_t)cfg->layers,
                           (void **)&m->h)); /* layers < 2^31 / 12: no wrap */
    for (int64_t i = 0; i < cfg->layers; i++) {
        char name[PARAM_NAME_LEN];
        eo_format(name, sizeof name, "h.%lld", (long long)i);
        EO_CHECK(eo_block_init(ctx, &m->params, dev, name, C, cfg->heads, 1, &m->h[i]));
    }
    EO_CHECK(eo_layernorm_init(ctx, &m->params, dev, "ln_f", C, EO_TRANSFORMER_LN_EPS, &m->ln_f));
    if (cfg->tied) { /* the head's weight is wte itself: no parameter of its own */
        eo_module head = { .kind = EO_MOD_LINEAR, .w = m->wte };
        m->lm_head = head;
        return EO_OK;
    }
    return eo_linear_init(ctx, &m->params, dev, "lm_head", C, cfg->vocab, 0, EO_INIT_NORMAL_002,
                          &m->lm_head);
}

void eo_gpt_set_fused(eo_gpt *m, int fused)
{
    if (!m || !m->h)
        return;
    for (int64_t i = 0; i < m->cfg.layers; i++)
        m->h[i].attn.fused = fused != 0;
}

EO_PUBLIC(gpt_forward, (eo_ctx *ctx, const eo_gpt *m, eo_tensor *idx, eo_tensor **logits),
          (ctx, m, idx, logits))
{
    if (!m || !idx || !logits)
        return eo_fail(ctx, EO_ERR_ARG, "gpt_forward: NULL %s",
                       !m ? "model" : !idx ? "token ids" : "output pointer");
    EO_CHECK(eo_expect(ctx, "gpt_forward", idx, EO_I32));
    if (!m->wte || !m->h)
        return eo_fail(ctx, EO_ERR_STATE, "gpt_forward: the model was not built (or its build "
                                          "failed)");
    if (idx->rank != 2 || idx->shape[1] > m->cfg.context || idx->shape[1] < 1)
        return eo_fail(ctx, EO_ERR_SHAPE, "gpt_forward: expected token ids [B, T] with 1 <= T "
                                          "<= %lld, got %T", (long long)m->cfg.context, idx);
    eo_tensor *x, *pos;
    EO_CHECK(eo_embedding(ctx, m->wte, idx, &x));                   /* [B, T, C] */
    /* Positions 0..T-1 are the first T rows of wpe: a slice is the same
     * lookup as an embedding of [0, 1, ..., T-1], with no index tensor. */
    EO_CHECK(eo_slice(ctx, m->wpe, 0, 0, idx->shape[1], &pos));     /* [T, C] */
    EO_CHECK(eo_add(ctx, x, pos, &x));
    for (int64_t i = 0; i < m->cfg.layers; i++)
        EO_CHECK(eo_block_forward(ctx, &m->h[i], x, &x));
    EO_CHECK(eo_module_forward(ctx, &m->ln_f, x, &x));
    return eo_module_forward(ctx, &m->lm_head, x, logits);
}

EO_PUBLIC(gpt_cache_init, (eo_ctx *ctx, const eo_gpt *m, int64_t batch, eo_gpt_cache *c),
          (ctx, m, batch, c))
{
    if (!m || !c)
        return eo_fail(ctx, EO_ERR_ARG, "gpt_cache_init: NULL %s", !m ? "model" : "cache");
    if (batch < 1)
        return eo_fail(ctx, EO_ERR_ARG, "gpt_cache_init: batch %lld < 1", (long long)batch);
    eo_gpt_cache z = {0}; /* what a failed init leaves: a cached forward says STATE */
    *c = z;
    if (!m->wte || !m->h)
        return eo_fail(ctx, EO_ERR_STATE, "gpt_cache_init: the model was not built (or its "
                                          "build failed)");
    EO_CHECK(eo_expect_live(ctx, "gpt_cache_init", m->wte));
    const int64_t L = m->cfg.layers, H = m->cfg.heads, D = m->cfg.d_model / H;
    int64_t sh[4] = { batch, H, m->cfg.context, D };
    /* The dtype the cached forwards will make k and v in: autocast's, or
     * a 16-bit model's own (transformer.h). */
    const eo_dtype dt = ctx->autocast != EO_F32     ? ctx->autocast
                        : eo_is_half(m->wte->dtype) ? m->wte->dtype
                                                    : EO_F32;
    c->batch = batch;
    c->len = 0;
    EO_CHECK(eo_host_alloc(ctx, EO_PERSIST, 2 * (size_t)L * sizeof(eo_tensor *), (void **)&c->k));
    c->v = c->k + L;
    for (int64_t i = 0; i < L; i++) {
        eo_status s = eo_tensor_new(ctx, EO_PERSIST, m->wte->device, dt, 4, sh, &c->k[i]);
        if (s == EO_OK)
            s = eo_tensor_new(ctx, EO_PERSIST, m->wte->device, dt, 4, sh, &c->v[i]);
        if (s != EO_OK) {
            *c = z; /* eo_leave gives the memory back: no pointer into it may stay */
            return s;
        }
    }
    return EO_OK;
}

/* The cache's public fields before any arithmetic on them: batch and len
 * are plain int64 a caller may have set, so c->len + T could wrap (UB)
 * and a len past the context would slice outside the cache tensors. Each
 * k and v must be what eo_gpt_cache_init made for this model. */
static eo_status check_cache(eo_ctx *ctx, const eo_gpt *m, const eo_gpt_cache *c)
{
    const int64_t ctxlen = m->cfg.context;
    if (c->batch < 1 || !c->k || !c->v)
        return eo_fail(ctx, EO_ERR_STATE, "gpt_forward_cached: the cache was not initialised "
                                          "(batch %lld, k %s, v %s): expected eo_gpt_cache_init",
                       (long long)c->batch, c->k ? "set" : "NULL", c->v ? "set" : "NULL");
    if (c->len < 0 || c->len > ctxlen)
        return eo_fail(ctx, EO_ERR_STATE, "gpt_forward_cached: cache len %lld is outside "
                                          "0..%lld (the model's context)",
                       (long long)c->len, (long long)ctxlen);
    const int64_t H = m->cfg.heads, D = m->cfg.d_model / H;
    for (int64_t i = 0; i < m->cfg.layers; i++)
        for (int kv = 0; kv < 2; kv++) {
            const eo_tensor *t = kv ? c->v[i] : c->k[i];
            EO_CHECK(eo_expect_live(ctx, "gpt_forward_cached", t));
            /* one float dtype for the whole cache: the first k's */
            const eo_dtype dt = c->k[0] ? c->k[0]->dtype : EO_F32;
            if (!t || !eo_is_float(dt) || t->dtype != dt || t->device != m->wte->device ||
                t->rank != 4 || t->shape[0] != c->batch || t->shape[1] != H ||
                t->shape[2] != ctxlen || t->shape[3] != D)
                return eo_fail(ctx, EO_ERR_STATE, "gpt_forward_cached: cache %s of layer %lld "
                                                  "is %T, expected [%lldx%lldx%lldx%lld %s] "
                                                  "(the dtype of the cache's first k, a float) "
                                                  "on the model's device",
                               kv ? "v" : "k", (long long)i, t, (long long)c->batch,
                               (long long)H, (long long)ctxlen, (long long)D,
                               eo_dtype_name(dt));
        }
    return EO_OK;
}

void eo_gpt_cache_reset(eo_gpt_cache *c)
{
    if (c)
        c->len = 0;
}

EO_PUBLIC(gpt_forward_cached, (eo_ctx *ctx, const eo_gpt *m, eo_gpt_cache *c, eo_tensor *idx,
                              eo_tensor **logits),
          (ctx, m, c, idx, logits))
{
    if (!m || !c || !idx || !logits)
        return eo_fail(ctx, EO_ERR_ARG, "gpt_forward_cached: NULL %s",
                       !m ? "model" : !c ? "cache" : !idx ? "token ids" : "output pointer");
    if (!m->wte || !m->h)
        return eo_fail(ctx, EO_ERR_STATE, "gpt_forward_cached: the model was not built (or its "
                                          "build failed)");
    EO_CHECK(check_cache(ctx, m, c));
    /* 0 <= len <= context now, so context - len cannot wrap; T is
     * compared with what is left rather than added to len. */
    if (idx->rank != 2 || idx->shape[0] != c->batch || idx->shape[1] < 1 ||
        idx->shape[1] > m->cfg.context - c->len)
        return eo_fail(ctx, EO_ERR_SHAPE, "gpt_forward_cached: expected token ids [%lld, T] "
                                          "with %lld + T <= %lld, got %T", (long long)c->batch,
                       (long long)c->len, (long long)m->cfg.context, idx);
    const int64_t T = idx->shape[1];
    eo_tensor *x, *pos;
    EO_CHECK(eo_embedding(ctx, m->wte, idx, &x));                   /* [B, T, C] */
    EO_CHECK(eo_slice(ctx, m->wpe, 0, c->len, T, &pos));            /* positions len.. */
    EO_CHECK(eo_add(ctx, x, pos, &x));
    for (int64_t i = 0; i < m->cfg.layers; i++)
        EO_CHECK(block(ctx, &m->h[i], x, c->k[i], c->v[i], c->len, &x));
    EO_CHECK(eo_module_forward(ctx, &m->ln_f, x, &x));
    EO_CHECK(eo_module_forward(ctx, &m->lm_head, x, logits));
    /* Counted only once the whole call has succeeded: a failure leaves
     * len as it was (positions past len are never read). */
    c->len += T;
    return EO_OK;
}

EO_PUBLIC(gpt_loss, (eo_ctx *ctx, const eo_gpt *m, eo_tensor *idx, eo_tensor *targets,
                    eo_tensor **logits, eo_tensor **loss),
          (ctx, m, idx, targets, logits, loss))
{
    if (!targets || !loss)
        return eo_fail(ctx, EO_ERR_ARG, "gpt_loss: NULL %s", !targets ? "targets" : "output pointer");
    EO_CHECK(eo_expect(ctx, "gpt_loss", targets, EO_I32));
    eo_tensor *lg, *l2, *t1;
    EO_CHECK(eo_gpt_forward(ctx, m, idx, &lg));
    int64_t s2[2] = { lg->shape[0] * lg->shape[1], m->cfg.vocab }, s1[1] = { -1 };
    EO_CHECK(eo_reshape(ctx, lg, 2, s2, &l2));
    EO_CHECK(eo_reshape(ctx, targets, 1, s1, &t1));
    EO_CHECK(eo_cross_entropy(ctx, l2, t1, -100, loss));
    if (logits) /* only on success: a failed call's tensors are given back */
        *logits = lg;
    return EO_OK;
}

/* ---- ViT ------------------------------------------------------------------- */

static eo_status vit_make(eo_ctx *ctx, eo_device dev, const eo_vit_config *cfg, eo_vit *m);

EO_PUBLIC(vit_build, (eo_ctx *ctx, eo_device dev, const eo_vit_config *cfg, eo_vit *m),
          (ctx, dev, cfg, m))
{
    if (!cfg || !m)
        return eo_fail(ctx, EO_ERR_ARG, "vit_build: NULL %s", !cfg ? "config" : "model");
    eo_vit z = {0}; /* what a failed build leaves: a forward says STATE */
    *m = z;
    int64_t pixels;
    if (cfg->patch < 1 || cfg->image < cfg->patch || cfg->image % cfg->patch || cfg->classes < 1)
        return eo_fail(ctx, EO_ERR_ARG,
                       "vit_build: need a patch >= 1 dividing the image and classes >= 1, got "
                       "image %lld, patch %lld, classes %lld",
                       (long long)cfg->image, (long long)cfg->patch, (long long)cfg->classes);
    /* image² pixels (and so (image/patch)² tokens and patch² features) must fit. */
    if (eo_mul_overflows(cfg->image, cfg->image, &pixels))
        return eo_fail(ctx, EO_ERR_ARG, "vit_build: an image of side %lld has too many pixels",
                       (long long)cfg->image);
    EO_CHECK(check_blocks(ctx, "vit_build", cfg->d_model, cfg->heads, cfg->layers, 7));
    eo_status s = vit_make(ctx, dev, cfg, m);
    if (s != EO_OK)
        *m = z;
    return s;
}

static eo_status vit_make(eo_ctx *ctx, eo_device dev, const eo_vit_config *cfg, eo_vit *m)
{
    const int64_t C = cfg->d_model, G = cfg->image / cfg->patch;
    m->cfg = *cfg;
    EO_CHECK(eo_params_init(ctx, &m->params, param_count(7, cfg->layers)));
    EO_CHECK(eo_linear_init(ctx, &m->params, dev, "patch_embed", cfg->patch * cfg->patch, C, 1,
                            EO_INIT_NORMAL_002, &m->patch_embed));
    int64_t sp[2] = { G * G, C };
    EO_CHECK(eo_param_new(ctx, dev, "pos_embed", 2, sp, &m->pos_embed));
    EO_CHECK(eo_params_add(ctx, &m->params, m->pos_embed));
    EO_CHECK(normal_002(ctx, m->pos_embed));
    EO_CHECK(eo_host_alloc(ctx, EO_PERSIST, sizeof(eo_block) * (size_t)cfg->layers,
                           (void **)&m->blocks));
    for (int64_t i = 0; i < cfg->layers; i++) {
        char name[PARAM_NAME_LEN];
        eo_format(name, sizeof name, "blocks.%lld", (long long)i);
        EO_CHECK(eo_block_init(ctx, &m->params, dev, name, C, cfg->heads, 0, &m->blocks[i]));
    }
    EO_CHECK(eo_layernorm_init(ctx, &m->params, dev, "norm", C, EO_TRANSFORMER_LN_EPS, &m->norm));
    return eo_linear_init(ctx, &m->params, dev, "head", C, cfg->classes, 1, EO_INIT_NORMAL_002,
                          &m->head);
}

void eo_vit_set_fused(eo_vit *m, int fused)
{
    if (!m || !m->blocks)
        return;
    for (int64_t i = 0; i < m->cfg.layers; i++)
        m->blocks[i].attn.fused = fused != 0;
}

EO_PUBLIC(vit_forward, (eo_ctx *ctx, const eo_vit *m, eo_tensor *x, eo_tensor **logits),
          (ctx, m, x, logits))
{
    if (!m || !x || !logits)
        return eo_fail(ctx, EO_ERR_ARG, "vit_forward: NULL %s",
                       !m ? "model" : !x ? "images" : "output pointer");
    EO_CHECK(eo_expect(ctx, "vit_forward", x, EO_F32));
    if (!m->pos_embed || !m->blocks)
        return eo_fail(ctx, EO_ERR_STATE, "vit_forward: the model was not built (or its build "
                                          "failed)");
    const int64_t S = m->cfg.image, P = m->cfg.patch, G = S / P;
    if (x->rank != 2 || x->shape[1] != S * S)
        return eo_fail(ctx, EO_ERR_SHAPE, "vit_forward: expected images [B, %lld], got %T",
                       (long long)(S * S), x);
    const int64_t B = x->shape[0];
    /* Patches without a rank-5 view: pixel (gi*P + di, gj*P + dj) of image
     * b sits at [b*G + gi, di, gj, dj] of a [B*G, P, G, P] view; swapping
     * the middle axes and flattening gives token gi*G + gj with features
     * di*P + dj. */
    eo_tensor *t;
    int64_t s4[4] = { B * G, P, G, P }, s3[3] = { B, G * G, P * P };
    EO_CHECK(eo_reshape(ctx, x, 4, s4, &t));
    EO_CHECK(eo_transpose(ctx, t, 1, 2, &t));
    EO_CHECK(eo_reshape(ctx, t, 3, s3, &t));                        /* [B, N, P*P] */
    EO_CHECK(eo_module_forward(ctx, &m->patch_embed, t, &t));       /* [B, N, C] */
    EO_CHECK(eo_add(ctx, t, m->pos_embed, &t));
    for (int64_t i = 0; i < m->cfg.layers; i++)
        EO_CHECK(eo_block_forward(ctx, &m->blocks[i], t, &t));
    EO_CHECK(eo_module_forward(ctx, &m->norm, t, &t));
    EO_CHECK(eo_mean(ctx, t, 1, 0, &t));                            /* [B, C] */
    return eo_module_forward(ctx, &m->head, t, logits);
}
