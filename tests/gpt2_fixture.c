/* tests/gpt2_fixture.c — see gpt2_fixture.h. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "alloc/byteorder.h"
#include "tests/gpt2_fixture.h"
#include "tools/formats/gpt2.h"
#include "tools/formats/safetensors.h"

const char *const eo_gpt2_fixture_names[EO_GPT2_FIXTURES] = { "small", "wide", "deep" };

const char *eo_gpt2_fixture_path(char *buf, size_t len, const char *name, const char *suffix)
{
    snprintf(buf, len, "tests/fixtures/gpt2_%s%s.safetensors", name, suffix);
    return buf;
}

static int64_t meta_int(const eo_st_file *f, const char *key)
{
    const char *v = eo_st_meta_get(f, key);
    ck_assert_msg(v != NULL, "fixture has no metadata '%s'", key);
    return atoll(v);
}

int64_t eo_gpt2_fixture_heads(const char *name)
{
    char ep[256], err[512];
    eo_st_file f;
    ck_assert_msg(eo_st_read(eo_gpt2_fixture_path(ep, sizeof ep, name, "_expect"), &f, err,
                             sizeof err) == EO_OK, "%s (run from the repository root)", err);
    int64_t h = meta_int(&f, "n_head");
    eo_st_close(&f);
    return h;
}

/* A float64 copy of an F64 or F32 fixture tensor (the file's bytes are
 * little-endian and may be unaligned). */
static double *f64_of(const eo_st_file *f, const char *name, size_t *n)
{
    const eo_st_tensor *t = eo_st_find(f, name);
    ck_assert_msg(t != NULL, "fixture has no tensor '%s'", name);
    ck_assert_msg(t->dtype == EO_ST_F64 || t->dtype == EO_ST_F32, "'%s' is %s, expected F64 or "
                  "F32", name, eo_st_dtype_name(t->dtype));
    const unsigned char *b = t->data;
    *n = t->nbytes / eo_st_dtype_size(t->dtype);
    double *p = malloc((*n ? *n : 1) * sizeof *p);
    for (size_t i = 0; i < *n; i++) {
        if (t->dtype == EO_ST_F64) {
            uint64_t u = eo_le64_load(b + 8 * i);
            memcpy(&p[i], &u, 8);
        } else {
            uint32_t u = eo_le32_load(b + 4 * i);
            float v;
            memcpy(&v, &u, 4);
            p[i] = v;
        }
    }
    return p;
}

static int32_t *i32_of(const eo_st_file *f, const char *name, int64_t shape[2])
{
    const eo_st_tensor *t = eo_st_find(f, name);
    ck_assert_msg(t && t->dtype == EO_ST_I32 && t->rank == 2, "fixture: %s not I32 [B, T]", name);
    shape[0] = (int64_t)t->shape[0];
    shape[1] = (int64_t)t->shape[1];
    size_t n = t->nbytes / 4;
    int32_t *p = malloc(n * sizeof *p);
    for (size_t i = 0; i < n; i++)
        p[i] = (int32_t)eo_le32_load((const unsigned char *)t->data + 4 * i);
    return p;
}

/* max |a - ref| / max |ref|, asserted against the tolerance. */
static double compare(const char *fx, const char *how, const char *what, eo_ctx *ctx,
                      eo_tensor *t, const double *ref, size_t n)
{
    ck_assert_int_eq((int64_t)n, eo_numel(t));
    float *a = malloc((n ? n : 1) * sizeof *a);
    eo_tensor *c = t;
    ck_assert_int_eq(eo_contiguous(ctx, t, &c), EO_OK);
    ck_assert_msg(eo_read(ctx, c, a, n * sizeof *a) == EO_OK, "%s", eo_last_error(ctx));
    double md = 0, mr = 0;
    size_t at = 0;
    for (size_t i = 0; i < n; i++) {
        double d = fabs((double)a[i] - ref[i]);
        if (d > md || isnan(d)) {
            md = d;
            at = i;
        }
        if (fabs(ref[i]) > mr)
            mr = fabs(ref[i]);
    }
    double rel = mr > 0 ? md / mr : md;
    if (getenv("EO_PARITY_VERBOSE"))
        printf("gpt2 %-5s %-8s %-32s max rel %.2e\n", fx, how, what, rel);
    ck_assert_msg(rel <= EO_GPT2_PARITY_TOL, "gpt2 %s %s %s: max |diff| %.3g at %zu (eo %.9g, "
                  "transformers %.9g), scale %.3g: relative %.3g > %g", fx, how, what, md, at,
                  (double)a[at], ref[at], mr, rel, EO_GPT2_PARITY_TOL);
    free(a);
    return rel;
}

static eo_tensor *on(eo_ctx *ctx, eo_device dev, eo_tensor *t)
{
    if (dev == EO_CPU)
        return t;
    eo_tensor *d;
    ck_assert_int_eq(eo_to_device(ctx, t, dev, EO_STEP, &d), EO_OK);
    return d;
}

void eo_gpt2_fixture_run(eo_ctx *ctx, eo_device dev, const char *name, const char *weights,
                         int fused, eo_gpt2_errs *e)
{
    char wp[256], ep[256], err[512];
    eo_st_file f;
    ck_assert_msg(eo_st_read(eo_gpt2_fixture_path(ep, sizeof ep, name, "_expect"), &f, err,
                             sizeof err) == EO_OK, "%s (run from the repository root)", err);
    if (!weights)
        weights = eo_gpt2_fixture_path(wp, sizeof wp, name, "");
    eo_gpt m;
    eo_gpt2_info info;
    /* The head count the way a user gives it (--heads): transformers'
     * file does not carry it. */
    ck_assert_msg(eo_gpt2_open(ctx, dev, weights, meta_int(&f, "n_head"), &m, &info, err,
                               sizeof err) == EO_OK, "%s", err);
    ck_assert_int_eq(info.layout, EO_GPT2_HF);
    ck_assert_int_eq(m.cfg.vocab, meta_int(&f, "vocab_size"));
    ck_assert_int_eq(m.cfg.context, meta_int(&f, "n_positions"));
    ck_assert_int_eq(m.cfg.d_model, meta_int(&f, "n_embd"));
    ck_assert_int_eq(m.cfg.layers, meta_int(&f, "n_layer"));
    ck_assert_int_eq(m.cfg.tied, meta_int(&f, "tied"));
    eo_gpt_set_fused(&m, fused);
    const char *how = fused ? "fused" : "composed";

    int64_t sh[2];
    int32_t *idx = i32_of(&f, "batch.idx", sh), *tgt = i32_of(&f, "batch.targets", sh);
    eo_tensor *x, *y, *logits, *loss;
    ck_assert_int_eq(eo_tensor_wrap(ctx, EO_I32, 2, sh, idx, &x), EO_OK);
    ck_assert_int_eq(eo_tensor_wrap(ctx, EO_I32, 2, sh, tgt, &y), EO_OK);
    x = on(ctx, dev, x);
    y = on(ctx, dev, y);
    ck_assert_int_eq(eo_params_zero_grad(ctx, &m.params), EO_OK);
    ck_assert_msg(eo_gpt_loss(ctx, &m, x, y, &logits, &loss) == EO_OK, "%s", eo_last_error(ctx));
    ck_assert_msg(eo_backward(ctx, loss) == EO_OK, "%s", eo_last_error(ctx));

    eo_gpt2_errs r = { 0, 0, 0 };
    size_t n;
    double *ref = f64_of(&f, "out.loss", &n);
    float l;
    ck_assert_int_eq(eo_read(ctx, loss, &l, sizeof l), EO_OK);
    r.loss = fabs((double)l - ref[0]) / fabs(ref[0]);
    ck_assert_msg(r.loss <= EO_GPT2_PARITY_TOL, "gpt2 %s %s: loss %.9g, transformers %.9g", name,
                  how, (double)l, ref[0]);
    free(ref);
    ref = f64_of(&f, "out.logits", &n);
    r.logits = compare(name, how, "logits", ctx, logits, ref, n);
    free(ref);
    /* Every parameter EveryO holds has its gradient in the fixture, and
     * every gradient in the fixture belongs to one (a tied wte once). */
    size_t grads = 0;
    for (size_t i = 0; i < f.count; i++)
        grads += strncmp(f.tensors[i].name, "grad.", 5) == 0;
    ck_assert_int_eq((int64_t)grads, m.params.count);
    for (int i = 0; i < m.params.count; i++) {
        eo_tensor *p = m.params.items[i];
        char gname[160];
        snprintf(gname, sizeof gname, "grad.%s", p->name);
        ref = f64_of(&f, gname, &n);
        double g = compare(name, how, gname, ctx, p->grad, ref, n);
        if (g > r.grad)
            r.grad = g;
        free(ref);
    }
    if (e)
        *e = r;
    free(idx);
    free(tgt);
    eo_st_close(&f);
}
