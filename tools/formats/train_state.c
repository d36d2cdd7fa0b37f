/* tools/formats/train_state.c — see train_state.h.
 *
 * The parameters and the optimizer's state travel as one parameter list
 * through the checkpoint writer and reader (checkpoint.h): the state
 * tensors get their "optimizer.m.NAME" keys for the duration of the call,
 * so saving and loading (all or nothing, any device, either byte order)
 * are the checkpoint's own code. */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "tools/cli/errbuf.h"
#include "tools/formats/checkpoint.h"
#include "tools/formats/safetensors.h"
#include "tools/formats/train_state.h"

#define KIND_KEY "everyo.kind"
#define KIND "train_state"
#define SETTING "setting."

int eo_ts_set(eo_ts_kv *kv, const char *key, const char *fmt, ...)
{
    int i = 0;
    while (i < kv->n && strcmp(kv->key[i], key) != 0)
        i++;
    if (i == EO_TS_MAX || strlen(key) >= sizeof kv->key[0])
        return 0;
    va_list ap;
    va_start(ap, fmt);
    int w = vsnprintf(kv->value[i], sizeof kv->value[0], fmt, ap);
    va_end(ap);
    if (w < 0 || (size_t)w >= sizeof kv->value[0])
        return 0;
    snprintf(kv->key[i], sizeof kv->key[0], "%s", key);
    if (i == kv->n)
        kv->n++;
    return 1;
}

const char *eo_ts_get(const eo_ts_kv *kv, const char *key)
{
    for (int i = 0; i < kv->n; i++)
        if (strcmp(kv->key[i], key) == 0)
            return kv->value[i];
    return NULL;
}

/* Floats as the hex of their bits: the exact value, NaN payloads too. */
int eo_ts_set_f32(eo_ts_kv *kv, const char *key, float v)
{
    uint32_t b;
    memcpy(&b, &v, sizeof b);
    return eo_ts_set(kv, key, "0x%08" PRIx32, b);
}

int eo_ts_set_decimal(eo_ts_kv *kv, const char *key, float v)
{
    char buf[48];
    for (int digits = 1; digits <= 9; digits++) {
        snprintf(buf, sizeof buf, "%.*g", digits, (double)v);
        if (strtof(buf, NULL) == v || digits == 9)
            break;
    }
    return eo_ts_set(kv, key, "%s", buf);
}

int eo_ts_set_i64(eo_ts_kv *kv, const char *key, int64_t v)
{
    return eo_ts_set(kv, key, "%" PRId64, v);
}

int eo_ts_set_u64(eo_ts_kv *kv, const char *key, uint64_t v)
{
    return eo_ts_set(kv, key, "%" PRIu64, v);
}

int eo_ts_get_u64(const eo_ts_kv *kv, const char *key, uint64_t *out)
{
    const char *s = eo_ts_get(kv, key);
    char *end;
    if (!s || !*s || *s == '-')
        return 0;
    unsigned long long v = strtoull(s, &end, 0);
    if (*end)
        return 0;
    *out = (uint64_t)v;
    return 1;
}

int eo_ts_get_i64(const eo_ts_kv *kv, const char *key, int64_t *out)
{
    const char *s = eo_ts_get(kv, key);
    char *end;
    if (!s || !*s)
        return 0;
    long long v = strtoll(s, &end, 10);
    if (*end)
        return 0;
    *out = (int64_t)v;
    return 1;
}

int eo_ts_get_f32(const eo_ts_kv *kv, const char *key, float *out)
{
    uint64_t b;
    if (!eo_ts_get_u64(kv, key, &b) || b > 0xffffffffu)
        return 0;
    uint32_t b32 = (uint32_t)b;
    memcpy(out, &b32, sizeof *out);
    return 1;
}

eo_status eo_ts_check(const eo_ts_kv *saved, const eo_ts_kv *now, const char *path, char *err,
                      size_t errlen)
{
    size_t pl = strlen(SETTING);
    for (int i = 0; i < now->n; i++) {
        if (strncmp(now->key[i], SETTING, pl) != 0)
            continue;
        const char *was = eo_ts_get(saved, now->key[i]);
        if (!was || strcmp(was, now->value[i]) != 0)
            return eo_errf(err, errlen, EO_ERR_ARG,
                           "%s: was saved with %s %s, this run has %s %s: resume with the same "
                           "settings", path, now->key[i] + pl, was ? was : "(not set)",
                           now->key[i] + pl, now->value[i]);
    }
    for (int i = 0; i < saved->n; i++)
        if (strncmp(saved->key[i], SETTING, pl) == 0 && !eo_ts_get(now, saved->key[i]))
            return eo_errf(err, errlen, EO_ERR_ARG,
                           "%s: was saved with %s %s, which this run does not have: resume "
                           "with the same settings", path, saved->key[i] + pl, saved->value[i]);
    return EO_OK;
}

/* The parameters followed by the optimizer's state tensors, the latter
 * named for the file; restore_names puts their old names back. */
typedef struct {
    eo_params all;
    char **names;       /* the keys made for the state tensors */
    const char **old;   /* their names before */
    int nstate;
} state_list;

static void restore_names(state_list *l)
{
    for (int i = 0; i < l->nstate; i++) {
        l->all.items[l->all.count - l->nstate + i]->name = l->old[i];
        free(l->names[i]);
    }
    free(l->names);
    free(l->old);
    free(l->all.items);
    memset(l, 0, sizeof *l);
}

static eo_status make_list(const eo_params *ps, const eo_optimizer *o, const char *path,
                           state_list *l, char *err, size_t errlen)
{
    memset(l, 0, sizeof *l);
    if (!ps || !o || ps->count < 0 || (ps->count && !ps->items))
        return eo_errf(err, errlen, EO_ERR_ARG, "train state: %s: NULL or empty parameter list "
                       "or optimizer", path);
    if (o->sharded)
        return eo_errf(err, errlen, EO_ERR_ARG,
                       "train state: %s: a ZeRO-1 optimizer (each rank holds a shard of its "
                       "state) cannot be saved or resumed yet: run without --zero", path);
    int n = ps->count, cap = 3 * n;
    l->all.items = calloc((size_t)(cap ? cap : 1), sizeof *l->all.items);
    l->names = calloc((size_t)(2 * n + 1), sizeof *l->names);
    l->old = calloc((size_t)(2 * n + 1), sizeof *l->old);
    if (!l->all.items || !l->names || !l->old) {
        restore_names(l);
        return eo_errf(err, errlen, EO_ERR_OOM, "train state: %s: out of memory", path);
    }
    l->all.cap = cap;
    l->all.borrowed = 1;
    for (int i = 0; i < n; i++) {
        if (!ps->items[i] || !ps->items[i]->name) {
            restore_names(l);
            return eo_errf(err, errlen, EO_ERR_ARG, "train state: %s: parameter %d has no name",
                           path, i);
        }
        l->all.items[l->all.count++] = ps->items[i];
    }
    for (int k = 0; k < 2; k++) {
        eo_tensor **st = k == 0 ? o->m : o->v;
        for (int i = 0; st && i < n; i++) {
            if (!st[i])
                continue;
            const char *pn = ps->items[i]->name;
            size_t len = strlen(pn) + 16;
            char *name = malloc(len);
            if (!name) {
                restore_names(l);
                return eo_errf(err, errlen, EO_ERR_OOM, "train state: %s: out of memory", path);
            }
            snprintf(name, len, "optimizer.%c.%s", k == 0 ? 'm' : 'v', pn);
            l->names[l->nstate] = name;
            l->old[l->nstate++] = st[i]->name;
            st[i]->name = name;
            l->all.items[l->all.count++] = st[i];
        }
    }
    return EO_OK;
}

eo_status eo_train_state_save(eo_ctx *ctx, const eo_params *ps, const eo_optimizer *o,
                              const char *path, const eo_ts_kv *kv, char *err, size_t errlen)
{
    state_list l;
    eo_status s = make_list(ps, o, path, &l, err, errlen);
    if (s != EO_OK)
        return s;
    const char *keys[EO_TS_MAX + 2], *vals[EO_TS_MAX + 2];
    char step[24];
    size_t nm = 0;
    keys[nm] = KIND_KEY;
    vals[nm++] = KIND;
    snprintf(step, sizeof step, "%" PRId64, o->step);
    keys[nm] = "optimizer.step";
    vals[nm++] = step;
    for (int i = 0; kv && i < kv->n; i++) {
        keys[nm] = kv->key[i];
        vals[nm++] = kv->value[i];
    }
    s = eo_checkpoint_save(ctx, &l.all, path, keys, vals, nm, err, errlen);
    restore_names(&l);
    return s;
}

eo_status eo_train_state_load(eo_ctx *ctx, const eo_params *ps, eo_optimizer *o,
                              const char *path, const eo_ts_kv *now, eo_ts_kv *kv, char *err,
                              size_t errlen)
{
    memset(kv, 0, sizeof *kv);
    eo_st_file f;
    eo_status s = eo_st_read(path, &f, err, errlen);
    if (s != EO_OK)
        return s;
    const char *kind = eo_st_meta_get(&f, KIND_KEY);
    if (!kind || strcmp(kind, KIND) != 0)
        s = eo_errf(err, errlen, EO_ERR_FORMAT,
                    "%s: not a training state (no \"%s\": \"%s\" in its metadata; --load "
                    "reads weights-only checkpoints)", path, KIND_KEY, KIND);
    for (size_t i = 0; i < f.nmeta && s == EO_OK; i++)
        if (!eo_ts_set(kv, f.meta[i].key, "%s", f.meta[i].value))
            s = eo_errf(err, errlen, EO_ERR_FORMAT, "%s: metadata pair %zu (%s) is too long or "
                        "there are too many", path, i, f.meta[i].key);
    eo_st_close(&f);
    int64_t step = 0;
    if (s == EO_OK && (!eo_ts_get_i64(kv, "optimizer.step", &step) || step < 0))
        s = eo_errf(err, errlen, EO_ERR_FORMAT, "%s: optimizer.step missing or malformed", path);
    if (s == EO_OK && now)
        s = eo_ts_check(kv, now, path, err, errlen);
    if (s != EO_OK)
        return s;
    state_list l;
    if ((s = make_list(ps, o, path, &l, err, errlen)) != EO_OK)
        return s;
    s = eo_checkpoint_load(ctx, &l.all, path, err, errlen);
    restore_names(&l);
    if (s == EO_OK)
        o->step = step;
    return s;
}
