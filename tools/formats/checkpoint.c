/* tools/formats/checkpoint.c — see checkpoint.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include "alloc/checked.h"
#include "ops/cpu/half.h"
#include "tools/cli/errbuf.h"
#include "tools/formats/checkpoint.h"
#include "tools/formats/safetensors.h"

/* What saving and loading both read: a context, a parameter list whose
 * count and items can be walked (a negative count would become a huge
 * size_t, a NULL item a NULL dereference) and a path. err may be NULL:
 * eo_errf writes nothing then. */
static eo_status check_params(const char *fn, eo_ctx *ctx, const eo_params *ps, const char *path,
                              char *err, size_t errlen)
{
    if (!ctx || !ps || !path)
        return eo_errf(err, errlen, EO_ERR_ARG, "%s: NULL %s", fn,
                       !ctx ? "context" : !ps ? "parameter list" : "path");
    if (ps->count < 0 || (ps->count > 0 && !ps->items))
        return eo_errf(err, errlen, EO_ERR_ARG,
                       "%s: %s: parameter list with count %d and %s items: expected count >= 0 "
                       "and items for each",
                       fn, path, ps->count, ps->items ? "non-NULL" : "NULL");
    for (int i = 0; i < ps->count; i++)
        if (!ps->items[i])
            return eo_errf(err, errlen, EO_ERR_ARG, "%s: %s: parameter %d of %d is NULL", fn,
                           path, i, ps->count);
    return EO_OK;
}

/* Metadata every checkpoint carries (checkpoint.h). */
static const eo_st_meta default_meta[] = {
    { "format", "pt" },
    { "weight_layout", "out_in" },
};
#define COUNT_DEFAULTS (sizeof default_meta / sizeof default_meta[0])

eo_status eo_checkpoint_save(eo_ctx *ctx, const eo_params *ps, const char *path,
                             const char *const *keys, const char *const *values, size_t nmeta,
                             char *err, size_t errlen)
{
    return eo_checkpoint_save_as(ctx, ps, path, EO_ST_F32, keys, values, nmeta, err, errlen);
}

eo_status eo_checkpoint_save_as(eo_ctx *ctx, const eo_params *ps, const char *path,
                                eo_st_dtype dtype, const char *const *keys,
                                const char *const *values, size_t nmeta, char *err,
                                size_t errlen)
{
    eo_status bad = check_params("eo_checkpoint_save", ctx, ps, path, err, errlen);
    if (bad != EO_OK)
        return bad;
    if (nmeta > 0 && (!keys || !values))
        return eo_errf(err, errlen, EO_ERR_ARG,
                       "eo_checkpoint_save: %s: NULL %s with %zu metadata pairs: expected "
                       "arrays of nmeta strings",
                       path, !keys ? "keys" : "values", nmeta);
    if (dtype != EO_ST_F32 && dtype != EO_ST_BF16 && dtype != EO_ST_F16)
        return eo_errf(err, errlen, EO_ERR_ARG,
                       "%s: parameters are saved as F32, BF16 or F16, not %s", path,
                       eo_st_dtype_name(dtype) ? eo_st_dtype_name(dtype) : "an unknown dtype");
    /* One float per element of every parameter, however wide it is, for
     * the staging buffer: the sum and the byte count are checked, since a
     * 16-bit model's floats take twice its own bytes. */
    size_t n = (size_t)ps->count, total = 0, host_bytes;
    for (size_t i = 0; i < n; i++)
        if (eo_size_add_overflows(total, (size_t)eo_numel(ps->items[i]), &total))
            return eo_errf(err, errlen, EO_ERR_OOM,
                           "%s: the parameters' elements do not fit in size_t", path);
    if (eo_size_mul_overflows(total ? total : 1, sizeof(float), &host_bytes))
        return eo_errf(err, errlen, EO_ERR_OOM,
                       "%s: %zu elements are too many to stage as floats", path, total);
    eo_st_tensor *ts = calloc(n ? n : 1, sizeof *ts);
    eo_st_meta *meta = calloc(nmeta + COUNT_DEFAULTS, sizeof *meta);
    float *host = malloc(host_bytes), *p = host;
    eo_status s = (ts && meta && host) ? EO_OK : EO_ERR_OOM;
    if (s != EO_OK)
        eo_errf(err, errlen, s, "%s: out of memory", path);
    for (size_t i = 0; i < n && s == EO_OK; i++) {
        const eo_tensor *t = ps->items[i];
        size_t cnt = (size_t)eo_numel(t);
        /* f32 (a master under mixed precision), or a 16-bit parameter: its
         * own bits, in its own dtype */
        const int is16 = t->dtype == EO_BF16 || t->dtype == EO_F16;
        if (t->dtype != EO_F32 && !is16) {
            s = eo_errf(err, errlen, EO_ERR_DTYPE, "%s: %s is %s; parameters are f32, bf16 or f16",
                        path, t->name, eo_dtype_name(t->dtype));
            break;
        }
        const eo_st_dtype as = !is16 ? dtype : t->dtype == EO_BF16 ? EO_ST_BF16 : EO_ST_F16;
        s = eo_read(ctx, t, p, cnt * eo_dtype_size(t->dtype)); /* CUDA parameters too */
        if (s != EO_OK) {
            eo_errf(err, errlen, s, "%s: reading %s: %s", path, t->name, eo_last_error(ctx));
            break;
        }
        ts[i].name = t->name;
        ts[i].dtype = as;
        ts[i].rank = t->rank;
        for (int d = 0; d < t->rank; d++)
            ts[i].shape[d] = (uint64_t)t->shape[d];
        ts[i].data = p;
        ts[i].nbytes = cnt * eo_st_dtype_size(as);
        if (!is16 && dtype != EO_ST_F32) {
            /* 16 bits in place over the floats just read: element k's two
             * bytes land at or before float k, which is read first. */
            unsigned char *bytes = (unsigned char *)p;
            for (size_t k = 0; k < cnt; k++) {
                float v;
                memcpy(&v, bytes + 4 * k, 4);
                uint16_t h = dtype == EO_ST_BF16 ? eo_f32_to_bf16(v) : eo_f32_to_f16(v);
                memcpy(bytes + 2 * k, &h, 2);
            }
        }
        p += cnt;
    }
    for (size_t i = 0; i < nmeta && s == EO_OK; i++) {
        meta[i].key = keys[i];
        meta[i].value = values[i];
    }
    /* What every file says about itself unless the caller said it:
     * transformers refuses a file without format "pt", and a reader
     * should not have to guess the weights' orientation. */
    size_t all = nmeta;
    for (size_t d = 0; d < COUNT_DEFAULTS && s == EO_OK; d++) {
        int given = 0;
        for (size_t i = 0; i < nmeta; i++)
            given |= keys[i] && strcmp(keys[i], default_meta[d].key) == 0;
        if (!given)
            meta[all++] = default_meta[d];
    }
    if (s == EO_OK)
        s = eo_st_write(path, ts, n, meta, all, err, errlen);
    free(host);
    free(meta);
    free(ts);
    return s;
}

eo_status eo_checkpoint_load(eo_ctx *ctx, const eo_params *ps, const char *path, char *err,
                             size_t errlen)
{
    eo_status bad = check_params("eo_checkpoint_load", ctx, ps, path, err, errlen);
    if (bad != EO_OK)
        return bad;
    eo_st_file f;
    eo_status s = eo_st_read(path, &f, err, errlen);
    if (s != EO_OK)
        return s;
    /* The library checks every name, shape and dtype before it copies
     * (all or nothing) and converts BF16/F16 to f32 where a model asks. */
    s = eo_weights_bind(ctx, ps, f.image, f.size, EO_BIND_COPY);
    if (s == EO_OK) {
        /* Mixed precision: the working copies follow the new masters. */
        s = eo_params_refresh_low(ctx, ps);
        if (s != EO_OK)
            eo_errf(err, errlen, s, "%s: refreshing the 16-bit working copies: %s", path,
                    eo_last_error(ctx));
    } else {
        const char *m = eo_last_error(ctx), *p = "weights_bind: ";
        if (strncmp(m, p, strlen(p)) == 0)
            m += strlen(p);
        eo_errf(err, errlen, s, "%s: %s", path, m);
        /* A file that does not fit the model is a file problem here. */
        if (s == EO_ERR_ARG || s == EO_ERR_SHAPE || s == EO_ERR_DTYPE)
            s = EO_ERR_FORMAT;
    }
    eo_st_close(&f);
    return s;
}
