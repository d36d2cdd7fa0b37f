/* tools/formats/checkpoint.c — see checkpoint.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "tools/formats/checkpoint.h"
#include "tools/formats/safetensors.h"

eo_status eo_checkpoint_save(eo_ctx *ctx, const eo_params *ps, const char *path,
                             const char *const *keys, const char *const *values, size_t nmeta,
                             char *err, size_t errlen)
{
    size_t n = (size_t)ps->count, total = 0;
    eo_st_tensor *ts = calloc(n ? n : 1, sizeof *ts);
    eo_st_meta *meta = calloc(nmeta ? nmeta : 1, sizeof *meta);
    for (size_t i = 0; i < n; i++)
        total += (size_t)eo_numel(ps->items[i]);
    float *host = malloc((total ? total : 1) * sizeof(float)), *p = host;
    eo_status s = (ts && meta && host) ? EO_OK : EO_ERR_IO;
    if (s != EO_OK)
        snprintf(err, errlen, "%s: out of memory", path);
    for (size_t i = 0; i < n && s == EO_OK; i++) {
        const eo_tensor *t = ps->items[i];
        size_t cnt = (size_t)eo_numel(t);
        s = eo_read(ctx, t, p, cnt * sizeof(float)); /* works for CUDA parameters too */
        if (s != EO_OK) {
            snprintf(err, errlen, "%s: reading %s: %s", path, t->name, eo_last_error(ctx));
            break;
        }
        ts[i].name = t->name;
        ts[i].dtype = EO_ST_F32;
        ts[i].rank = t->rank;
        for (int d = 0; d < t->rank; d++)
            ts[i].shape[d] = (uint64_t)t->shape[d];
        ts[i].data = p;
        ts[i].nbytes = cnt * sizeof(float);
        p += cnt;
    }
    for (size_t i = 0; i < nmeta; i++) {
        meta[i].key = keys[i];
        meta[i].value = values[i];
    }
    if (s == EO_OK)
        s = eo_st_write(path, ts, n, meta, nmeta, err, errlen);
    free(host);
    free(meta);
    free(ts);
    return s;
}

eo_status eo_checkpoint_load(eo_ctx *ctx, const eo_params *ps, const char *path, char *err,
                             size_t errlen)
{
    eo_st_file f;
    eo_status s = eo_st_read(path, &f, err, errlen);
    if (s != EO_OK)
        return s;
    /* Pass 1: check everything; pass 2: copy. */
    for (int i = 0; i < ps->count && s == EO_OK; i++) {
        const eo_tensor *t = ps->items[i];
        const eo_st_tensor *e = eo_st_find(&f, t->name);
        int same = e && e->rank == t->rank;
        for (int d = 0; same && d < t->rank; d++)
            same = e->shape[d] == (uint64_t)t->shape[d];
        if (!e) {
            /* Name what the file does hold: usually a prefix or a model
             * mismatch that one look at the list explains. */
            int w = snprintf(err, errlen, "%s: no tensor named '%s' (the model needs it); the "
                             "file has %zu:", path, t->name, f.count);
            for (size_t k = 0; k < f.count && w >= 0 && (size_t)w < errlen; k++) {
                if (errlen - (size_t)w < strlen(f.tensors[k].name) + 8) {
                    snprintf(err + w, errlen - (size_t)w, " ...");
                    break;
                }
                w += snprintf(err + w, errlen - (size_t)w, " %s", f.tensors[k].name);
            }
            s = EO_ERR_FORMAT;
        } else if (e->dtype != EO_ST_F32) {
            snprintf(err, errlen, "%s: '%s' has dtype %s, expected F32", path, t->name,
                     eo_st_dtype_name(e->dtype));
            s = EO_ERR_FORMAT;
        } else if (!same) {
            char want[64] = "", have[64] = "";
            for (int d = 0; d < t->rank; d++)
                snprintf(want + strlen(want), sizeof want - strlen(want), "%s%lld", d ? "x" : "",
                         (long long)t->shape[d]);
            for (int d = 0; d < e->rank; d++)
                snprintf(have + strlen(have), sizeof have - strlen(have), "%s%llu", d ? "x" : "",
                         (unsigned long long)e->shape[d]);
            snprintf(err, errlen, "%s: '%s' has shape [%s], the model has [%s]", path, t->name,
                     have, want);
            s = EO_ERR_FORMAT;
        }
    }
    for (int i = 0; i < ps->count && s == EO_OK; i++) {
        eo_tensor *t = ps->items[i];
        const eo_st_tensor *e = eo_st_find(&f, t->name);
        s = eo_write(ctx, t, e->data, e->nbytes);
        if (s != EO_OK)
            snprintf(err, errlen, "%s: copying '%s': %s", path, t->name, eo_last_error(ctx));
    }
    eo_st_close(&f);
    return s;
}
