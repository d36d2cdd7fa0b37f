/* tools/formats/gpt2.c — see gpt2.h. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "alloc/byteorder.h"
#include "alloc/checked.h"
#include "ops/cpu/half.h"
#include "tools/cli/errbuf.h"
#include "tools/formats/gpt2.h"

#define PREFIX "transformer."
#define PREFIX_LEN (sizeof PREFIX - 1)

/* A block's parameters (after "h.<i>.") and the buffers Hugging Face
 * files carry beside them. */
static const char *const block_leaves[] = {
    "ln_1.weight", "ln_1.bias", "attn.c_attn.weight", "attn.c_attn.bias",
    "attn.c_proj.weight", "attn.c_proj.bias", "ln_2.weight", "ln_2.bias",
    "mlp.c_fc.weight", "mlp.c_fc.bias", "mlp.c_proj.weight", "mlp.c_proj.bias",
};
static const char *const ignored_leaves[] = { "attn.bias", "attn.masked_bias" };
static const char *const top_names[] = { "wte.weight", "wpe.weight", "ln_f.weight", "ln_f.bias",
                                         "lm_head.weight" };

static int ends_with(const char *s, const char *tail)
{
    size_t n = strlen(s), k = strlen(tail);
    return n >= k && strcmp(s + n - k, tail) == 0;
}

/* The four weights GPT-2's Conv1D stores [in, out]. */
static int is_conv1d(const char *name)
{
    return ends_with(name, ".attn.c_attn.weight") || ends_with(name, ".attn.c_proj.weight") ||
           ends_with(name, ".mlp.c_fc.weight") || ends_with(name, ".mlp.c_proj.weight");
}

/* name without "transformer." */
static const char *bare(const char *name)
{
    return strncmp(name, PREFIX, PREFIX_LEN) == 0 ? name + PREFIX_LEN : name;
}

/* "h.<i>.<leaf>": 1 and *layer, *leaf for a block name, else 0. */
static int block_name(const char *n, long *layer, const char **leaf)
{
    if (strncmp(n, "h.", 2) != 0 || !isdigit((unsigned char)n[2]))
        return 0;
    const char *p = n + 2;
    long v = 0;
    if (p[0] == '0' && isdigit((unsigned char)p[1]))
        return 0; /* no leading zeros: "h.01" is not h.1 */
    for (; isdigit((unsigned char)*p); p++) {
        v = v * 10 + (*p - '0');
        if (v > (1L << 20))
            return 0;
    }
    if (*p != '.')
        return 0;
    *layer = v;
    *leaf = p + 1;
    return 1;
}

static int in_list(const char *s, const char *const *list, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(s, list[i]) == 0)
            return 1;
    return 0;
}

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

/* 1 for a buffer GPT-2 files may carry that holds no weights. */
static int ignored(const char *bare_name)
{
    long l;
    const char *leaf;
    return block_name(bare_name, &l, &leaf) && in_list(leaf, ignored_leaves, COUNT(ignored_leaves));
}

/* A positive int from a decimal string (all of it). */
static int64_t parse_pos(const char *s)
{
    if (!s || !*s)
        return 0;
    int64_t v = 0;
    for (; *s; s++) {
        if (!isdigit((unsigned char)*s) || v > (1LL << 40))
            return 0;
        v = v * 10 + (*s - '0');
    }
    return v;
}

/* "n_head" of a config.json beside path (save_pretrained writes one),
 * else 0. A plain scan for the key and the integer after it: the file is
 * only a hint, and a wrong count fails the head-count check or the
 * parity of whatever uses it, never memory safety. */
static int64_t heads_from_config(const char *path)
{
    const char *slash = strrchr(path, '/');
    size_t dir = slash ? (size_t)(slash - path) + 1 : 0;
    char *cfg = malloc(dir + sizeof "config.json");
    if (!cfg)
        return 0;
    memcpy(cfg, path, dir);
    memcpy(cfg + dir, "config.json", sizeof "config.json");
    FILE *fp = fopen(cfg, "rb");
    free(cfg);
    if (!fp)
        return 0;
    char buf[1 << 16];
    size_t n = fread(buf, 1, sizeof buf - 1, fp);
    fclose(fp);
    buf[n] = 0;
    const char *k = strstr(buf, "\"n_head\"");
    if (!k)
        return 0;
    k += sizeof "\"n_head\"" - 1;
    while (*k == ' ' || *k == '\t' || *k == '\n' || *k == '\r' || *k == ':')
        k++;
    int64_t v = 0;
    for (; isdigit((unsigned char)*k) && v < (1LL << 40); k++)
        v = v * 10 + (*k - '0');
    return v;
}

/* The file tensor for parameter `name` of a model stored as info says. */
static const eo_st_tensor *source_of(const eo_st_file *f, const eo_gpt2_info *info,
                                     const char *name)
{
    char full[256];
    int top_level_head = strcmp(name, "lm_head.weight") == 0;
    snprintf(full, sizeof full, "%s%s", info->prefixed && !top_level_head ? PREFIX : "", name);
    return eo_st_find(f, full);
}

static int same_bytes(const eo_st_tensor *a, const eo_st_tensor *b)
{
    if (a->dtype != b->dtype || a->rank != b->rank || a->nbytes != b->nbytes)
        return 0;
    for (int d = 0; d < a->rank; d++)
        if (a->shape[d] != b->shape[d])
            return 0;
    return memcmp(a->data, b->data, a->nbytes) == 0;
}

eo_status eo_gpt2_inspect(const eo_st_file *f, const char *path, int64_t heads,
                          eo_gpt2_info *info, char *err, size_t errlen)
{
    if (!f || !path || !info)
        return eo_errf(err, errlen, EO_ERR_ARG, "eo_gpt2_inspect: NULL %s",
                       !f ? "file" : !path ? "path" : "info");
    memset(info, 0, sizeof *info);
    long layers = 0;
    int prefixed = 0;
    for (size_t i = 0; i < f->count; i++) {
        const char *n = f->tensors[i].name, *b = bare(n), *leaf;
        long l;
        prefixed |= b != n;
        if (ignored(b))
            continue;
        if (block_name(b, &l, &leaf) && in_list(leaf, block_leaves, COUNT(block_leaves))) {
            if (l + 1 > layers)
                layers = l + 1;
            continue;
        }
        /* lm_head sits beside "transformer.", never under it */
        int prefixed_head = b != n && strcmp(b, "lm_head.weight") == 0;
        if (in_list(b, top_names, COUNT(top_names)) && !prefixed_head)
            continue;
        return eo_errf(err, errlen, EO_ERR_FORMAT,
                       "%s: tensor '%s' is not a GPT-2 parameter (expected wte, wpe, h.<i>.{ln_1, "
                       "attn.c_attn, attn.c_proj, ln_2, mlp.c_fc, mlp.c_proj}, ln_f, lm_head, "
                       "optionally under 'transformer.', or the attn.bias / attn.masked_bias "
                       "buffers)", path, n);
    }
    info->prefixed = prefixed;
    const eo_st_tensor *wte = eo_st_find(f, prefixed ? PREFIX "wte.weight" : "wte.weight");
    const eo_st_tensor *wpe = eo_st_find(f, prefixed ? PREFIX "wpe.weight" : "wpe.weight");
    if (!wte || !wpe || wte->rank != 2 || wpe->rank != 2 || wte->shape[1] != wpe->shape[1])
        return eo_errf(err, errlen, EO_ERR_FORMAT,
                       "%s: expected %swte.weight [vocab, C] and %swpe.weight [positions, C]: %s",
                       path, prefixed ? PREFIX : "", prefixed ? PREFIX : "",
                       !wte ? "no wte.weight" : !wpe ? "no wpe.weight" : "not two matching 2-D "
                                                                         "tables");
    if (layers < 1)
        return eo_errf(err, errlen, EO_ERR_FORMAT, "%s: no transformer block (h.0.*)", path);
    eo_gpt_config *c = &info->cfg;
    c->vocab = (int64_t)wte->shape[0];
    c->d_model = (int64_t)wte->shape[1];
    c->context = (int64_t)wpe->shape[0];
    c->layers = layers;

    /* Layout: the metadata when it says, else the names, else the shape of
     * the first fused projection (3C x C in EveryO, C x 3C in GPT-2). */
    const char *wl = eo_st_meta_get(f, "weight_layout");
    const eo_st_tensor *ca = eo_st_find(f, prefixed ? PREFIX "h.0.attn.c_attn.weight"
                                                    : "h.0.attn.c_attn.weight");
    if (wl && strcmp(wl, "conv1d_in_out") == 0)
        info->layout = EO_GPT2_HF;
    else if (wl && strcmp(wl, "out_in") == 0)
        info->layout = EO_GPT2_EVERYO;
    else if (prefixed)
        info->layout = EO_GPT2_HF;
    else
        info->layout = ca && ca->rank == 2 && ca->shape[0] == wte->shape[1] &&
                               ca->shape[1] == 3 * wte->shape[1]
                           ? EO_GPT2_HF
                           : EO_GPT2_EVERYO;

    /* Tied: no lm_head.weight; in a Hugging Face file also one equal to
     * wte (older files saved both). */
    const eo_st_tensor *head = eo_st_find(f, "lm_head.weight");
    c->tied = !head || (info->layout == EO_GPT2_HF && same_bytes(head, wte));

    const char *mh = eo_st_meta_get(f, "n_head");
    if (!mh)
        mh = eo_st_meta_get(f, "heads");
    if (heads > 0) {
        c->heads = heads;
        info->heads_from = "caller";
    } else if (parse_pos(mh) > 0) {
        c->heads = parse_pos(mh);
        info->heads_from = "metadata";
    } else if ((c->heads = heads_from_config(path)) > 0) {
        info->heads_from = "config.json";
    } else if (c->d_model % 64 == 0) {
        c->heads = c->d_model / 64;
        info->heads_from = "d_model / 64";
    } else {
        return eo_errf(err, errlen, EO_ERR_FORMAT,
                       "%s: the number of heads is not in the file (metadata n_head), no "
                       "config.json beside it gives n_head, and d_model %lld is not a multiple "
                       "of 64: give it (--heads)", path, (long long)c->d_model);
    }
    if (c->d_model % c->heads != 0)
        return eo_errf(err, errlen, EO_ERR_FORMAT,
                       "%s: %lld heads (from %s) do not divide d_model %lld", path,
                       (long long)c->heads, info->heads_from, (long long)c->d_model);
    return EO_OK;
}

/* Element k of a file tensor as a float. */
static float elem(const eo_st_tensor *t, size_t k)
{
    const unsigned char *p = t->data;
    if (t->dtype == EO_ST_F32) {
        uint32_t u = eo_le32_load(p + 4 * k);
        float v;
        memcpy(&v, &u, 4);
        return v;
    }
    uint16_t h = eo_le16_load(p + 2 * k);
    return t->dtype == EO_ST_BF16 ? eo_bf16_to_f32(h) : eo_f16_to_f32(h);
}

static void shape_str(char *buf, size_t len, int rank, const uint64_t *s)
{
    if (rank == 1)
        snprintf(buf, len, "[%llu]", (unsigned long long)s[0]);
    else if (rank == 2)
        snprintf(buf, len, "[%llu, %llu]", (unsigned long long)s[0], (unsigned long long)s[1]);
    else
        snprintf(buf, len, "(rank %d)", rank);
}

eo_status eo_gpt2_load(eo_ctx *ctx, const eo_gpt *m, const eo_st_file *f,
                       const eo_gpt2_info *info, const char *path, char *err, size_t errlen)
{
    if (!ctx || !m || !f || !info || !path)
        return eo_errf(err, errlen, EO_ERR_ARG, "eo_gpt2_load: NULL argument");
    if (!m->wte || !m->h)
        return eo_errf(err, errlen, EO_ERR_STATE, "eo_gpt2_load: the model was not built");
    const eo_params *ps = &m->params;
    size_t most = 1;
    /* Pass 1: every parameter has a source of the right dtype and shape. */
    for (int i = 0; i < ps->count; i++) {
        const eo_tensor *p = ps->items[i];
        const eo_st_tensor *t = source_of(f, info, p->name);
        if (p->dtype != EO_F32)
            return eo_errf(err, errlen, EO_ERR_DTYPE, "eo_gpt2_load: %s: parameter %s is %s, "
                           "expected f32", path, p->name, eo_dtype_name(p->dtype));
        if (!t)
            return eo_errf(err, errlen, EO_ERR_FORMAT, "%s: no tensor %s%s", path,
                           info->prefixed && strcmp(p->name, "lm_head.weight") ? PREFIX : "",
                           p->name);
        if (t->dtype != EO_ST_F32 && t->dtype != EO_ST_BF16 && t->dtype != EO_ST_F16)
            return eo_errf(err, errlen, EO_ERR_FORMAT, "%s: %s is %s, expected F32, BF16 or F16",
                           path, t->name, eo_st_dtype_name(t->dtype));
        uint64_t want[2] = { 0, 0 };
        int tr = info->layout == EO_GPT2_HF && is_conv1d(p->name);
        for (int d = 0; d < p->rank && d < 2; d++)
            want[d] = (uint64_t)p->shape[tr ? 1 - d : d];
        if (t->rank != p->rank || p->rank > 2 || t->shape[0] != want[0] ||
            (p->rank == 2 && t->shape[1] != want[1])) {
            char a[48], b[48];
            shape_str(a, sizeof a, t->rank, t->shape);
            shape_str(b, sizeof b, p->rank, want);
            return eo_errf(err, errlen, EO_ERR_FORMAT, "%s: %s is %s, expected %s%s", path,
                           t->name, a, b, tr ? " (GPT-2's Conv1D layout [in, out])" : "");
        }
        if ((size_t)eo_numel(p) > most)
            most = (size_t)eo_numel(p);
    }
    const eo_st_tensor *head = eo_st_find(f, "lm_head.weight");
    if (m->cfg.tied && head && !same_bytes(head, source_of(f, info, "wte.weight")))
        return eo_errf(err, errlen, EO_ERR_FORMAT, "%s: lm_head.weight differs from wte.weight, "
                       "but the model's head is tied (build it untied)", path);
    size_t bytes;
    if (eo_size_mul_overflows(most, sizeof(float), &bytes))
        return eo_errf(err, errlen, EO_ERR_OOM, "%s: a tensor too large to stage", path);
    float *buf = malloc(bytes);
    if (!buf)
        return eo_errf(err, errlen, EO_ERR_OOM, "%s: out of memory", path);
    /* Pass 2: convert (and transpose) each into floats, then write. */
    eo_status s = EO_OK;
    for (int i = 0; i < ps->count && s == EO_OK; i++) {
        eo_tensor *p = ps->items[i];
        const eo_st_tensor *t = source_of(f, info, p->name);
        size_t n = (size_t)eo_numel(p);
        if (info->layout == EO_GPT2_HF && is_conv1d(p->name)) {
            /* file [in, out] -> parameter [out, in] */
            size_t rows = (size_t)t->shape[0], cols = (size_t)t->shape[1];
            for (size_t r = 0; r < rows; r++)
                for (size_t q = 0; q < cols; q++)
                    buf[q * rows + r] = elem(t, r * cols + q);
        } else {
            for (size_t k = 0; k < n; k++)
                buf[k] = elem(t, k);
        }
        s = eo_write(ctx, p, buf, n * sizeof(float));
        if (s != EO_OK)
            eo_errf(err, errlen, s, "%s: writing %s: %s", path, p->name, eo_last_error(ctx));
    }
    free(buf);
    if (s == EO_OK && (s = eo_params_refresh_low(ctx, ps)) != EO_OK)
        eo_errf(err, errlen, s, "%s: %s", path, eo_last_error(ctx));
    return s;
}

eo_status eo_gpt2_open(eo_ctx *ctx, eo_device dev, const char *path, int64_t heads, eo_gpt *m,
                       eo_gpt2_info *info, char *err, size_t errlen)
{
    if (!ctx || !path || !m)
        return eo_errf(err, errlen, EO_ERR_ARG, "eo_gpt2_open: NULL argument");
    eo_st_file f;
    eo_gpt2_info local;
    if (!info)
        info = &local;
    eo_status s = eo_st_read(path, &f, err, errlen);
    if (s != EO_OK)
        return s;
    s = eo_gpt2_inspect(&f, path, heads, info, err, errlen);
    if (s == EO_OK && (s = eo_gpt_build(ctx, dev, &info->cfg, m)) != EO_OK)
        eo_errf(err, errlen, s, "%s: %s", path, eo_last_error(ctx));
    if (s == EO_OK)
        s = eo_gpt2_load(ctx, m, &f, info, path, err, errlen);
    eo_st_close(&f);
    return s;
}

size_t eo_gpt2_meta(const eo_gpt_config *c, eo_gpt2_layout layout, eo_gpt2_meta_buf *buf,
                    const char **keys, const char **values)
{
    const int64_t nums[5] = { c->layers, c->heads, c->d_model, c->vocab, c->context };
    static const char *const num_keys[5] = { "n_layer", "n_head", "n_embd", "vocab_size",
                                             "n_positions" };
    size_t n = 0;
    keys[n] = "format", values[n++] = "pt";
    keys[n] = "weight_layout", values[n++] = layout == EO_GPT2_HF ? "conv1d_in_out" : "out_in";
    keys[n] = "architecture", values[n++] = "gpt2";
    for (int i = 0; i < 5; i++) {
        snprintf(buf->num[i], sizeof buf->num[i], "%lld", (long long)nums[i]);
        keys[n] = num_keys[i], values[n++] = buf->num[i];
    }
    keys[n] = "layer_norm_epsilon", values[n++] = "1e-05";
    keys[n] = "activation_function", values[n++] = "gelu_new";
    keys[n] = "tie_word_embeddings", values[n++] = c->tied ? "true" : "false";
    return n;
}

eo_status eo_gpt2_save(eo_ctx *ctx, const eo_gpt *m, const char *path, eo_gpt2_layout layout,
                       char *err, size_t errlen)
{
    return eo_gpt2_save_with(ctx, m, path, layout, NULL, 0, err, errlen);
}

eo_status eo_gpt2_save_with(eo_ctx *ctx, const eo_gpt *m, const char *path,
                            eo_gpt2_layout layout, const eo_st_meta *extra, size_t nextra,
                            char *err, size_t errlen)
{
    if (nextra > 0 && !extra)
        return eo_errf(err, errlen, EO_ERR_ARG, "eo_gpt2_save: %zu extra metadata pairs, NULL "
                       "array", nextra);
    if (!ctx || !m || !path)
        return eo_errf(err, errlen, EO_ERR_ARG, "eo_gpt2_save: NULL argument");
    if (!m->wte || !m->h)
        return eo_errf(err, errlen, EO_ERR_STATE, "eo_gpt2_save: the model was not built");
    const eo_params *ps = &m->params;
    size_t n = (size_t)ps->count, total = 0, bytes;
    for (size_t i = 0; i < n; i++)
        if (eo_size_add_overflows(total, (size_t)eo_numel(ps->items[i]), &total))
            return eo_errf(err, errlen, EO_ERR_OOM, "%s: the parameters do not fit", path);
    if (eo_size_mul_overflows(total ? total : 1, sizeof(float), &bytes))
        return eo_errf(err, errlen, EO_ERR_OOM, "%s: the parameters do not fit", path);
    eo_st_tensor *ts = calloc(n ? n : 1, sizeof *ts);
    char (*names)[256] = calloc(n ? n : 1, sizeof *names);
    float *host = malloc(bytes), *tmp = malloc(bytes), *at = host;
    eo_status s = ts && names && host && tmp ? EO_OK : EO_ERR_OOM;
    if (s != EO_OK)
        eo_errf(err, errlen, s, "%s: out of memory", path);
    for (size_t i = 0; i < n && s == EO_OK; i++) {
        const eo_tensor *p = ps->items[i];
        size_t cnt = (size_t)eo_numel(p);
        if (p->dtype != EO_F32) {
            s = eo_errf(err, errlen, EO_ERR_DTYPE, "eo_gpt2_save: %s: parameter %s is %s, "
                        "expected f32", path, p->name, eo_dtype_name(p->dtype));
            break;
        }
        int tr = layout == EO_GPT2_HF && is_conv1d(p->name);
        s = eo_read(ctx, p, tr ? tmp : at, cnt * sizeof(float));
        if (s != EO_OK) {
            eo_errf(err, errlen, s, "%s: reading %s: %s", path, p->name, eo_last_error(ctx));
            break;
        }
        ts[i].rank = p->rank;
        for (int d = 0; d < p->rank; d++)
            ts[i].shape[d] = (uint64_t)p->shape[tr ? p->rank - 1 - d : d];
        if (tr) { /* parameter [out, in] -> file [in, out] */
            size_t rows = (size_t)p->shape[0], cols = (size_t)p->shape[1];
            for (size_t r = 0; r < rows; r++)
                for (size_t q = 0; q < cols; q++)
                    at[q * rows + r] = tmp[r * cols + q];
        }
        int head = strcmp(p->name, "lm_head.weight") == 0;
        snprintf(names[i], sizeof names[i], "%s%s", layout == EO_GPT2_HF && !head ? PREFIX : "",
                 p->name);
        ts[i].name = names[i];
        ts[i].dtype = EO_ST_F32;
        ts[i].data = at;
        ts[i].nbytes = cnt * sizeof(float);
        at += cnt;
    }
    if (s == EO_OK) {
        eo_gpt2_meta_buf mb;
        const char *keys[EO_GPT2_META_MAX], *vals[EO_GPT2_META_MAX];
        size_t nm = eo_gpt2_meta(&m->cfg, layout, &mb, keys, vals);
        eo_st_meta *meta = calloc(nm + nextra, sizeof *meta);
        if (!meta)
            s = eo_errf(err, errlen, EO_ERR_OOM, "%s: out of memory", path);
        size_t all = 0;
        for (size_t i = 0; meta && i < nm; i++) {
            meta[all].key = keys[i];
            meta[all++].value = vals[i];
        }
        for (size_t i = 0; meta && i < nextra; i++) {
            int ours = 0;
            for (size_t k = 0; k < nm; k++)
                ours |= extra[i].key && strcmp(extra[i].key, keys[k]) == 0;
            if (!ours)
                meta[all++] = extra[i];
        }
        if (meta)
            s = eo_st_write(path, ts, n, meta, all, err, errlen);
        free(meta);
    }
    free(tmp);
    free(host);
    free(names);
    free(ts);
    return s;
}
