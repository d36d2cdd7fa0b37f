/* tests/test_transformer_parity.c — EveryO's GPT and ViT against PyTorch.
 *
 * The fixtures tests/fixtures/{gpt,vit}_parity.safetensors hold a tiny
 * model's weights, one fixed batch, and what PyTorch (float64, see
 * tools/reference/ref_transformer.py; regenerate with `make fixtures`) computed from
 * them: the logits, the mean cross-entropy and every parameter's
 * gradient. The test loads the weights from the file (so it does not
 * depend on EveryO's generator), runs forward and backward in float32 and
 * compares:
 *   loss      |eo - ref| <= 1e-4 |ref|;
 *   logits    max |eo - ref| <= 1e-4 max(1, max |ref|);
 *   gradients max |eo - ref| <= 1e-3 max |ref| per tensor (relative to
 *             the tensor's largest entry, so tiny entries of a large
 *             gradient are not held to a tolerance float32 cannot meet).
 * Both models run twice: with the composed eo_attention and with
 * eo_attention_fused. Run from the repository root (as `make test` does). */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/transformer.h"
#include "tests/gradcheck.h"
#include "tools/formats/checkpoint.h"
#include "alloc/byteorder.h"
#include "tools/formats/safetensors.h"

#define GPT_FIXTURE "tests/fixtures/gpt_parity.safetensors"
#define VIT_FIXTURE "tests/fixtures/vit_parity.safetensors"

static int64_t meta_int(const eo_st_file *f, const char *key)
{
    const char *v = eo_st_meta_get(f, key);
    ck_assert_msg(v != NULL, "fixture has no metadata '%s'", key);
    return atoll(v);
}

/* A copy of a fixture tensor (its data may be unaligned in the file). */
static void *copy_of(const eo_st_file *f, const char *name, eo_st_dtype dt, size_t *n)
{
    const eo_st_tensor *t = eo_st_find(f, name);
    ck_assert_msg(t != NULL, "fixture has no tensor '%s'", name);
    ck_assert_msg(t->dtype == dt, "'%s' has dtype %s", name, eo_st_dtype_name(t->dtype));
    /* the file's bytes are little-endian: to host order, 4 bytes a value */
    uint32_t *p = malloc(t->nbytes ? t->nbytes : 1);
    *n = t->nbytes / eo_st_dtype_size(dt);
    for (size_t i = 0; i < *n; i++)
        p[i] = eo_le32_load((const unsigned char *)t->data + 4 * i);
    return p;
}

/* max |a - ref| <= tol * scale, with scale = max |ref| (at least floor). */
static void compare(const char *how, const char *what, const float *a, const float *ref, size_t n,
                    double tol, double floor)
{
    double md = 0, mr = floor;
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
    if (getenv("EO_PARITY_VERBOSE")) /* the margins, for the README */
        printf("%-9s %-40s max |diff| / scale = %.2e (tolerance %.0e)\n", how, what, md / mr, tol);
    ck_assert_msg(md <= tol * mr, "%s %s: max |diff| %.3g at %zu (eo %.7g, torch %.7g), "
                                  "allowed %.3g", how, what, md, at, (double)a[at], (double)ref[at],
                  tol * mr);
}

/* Loss, logits and all gradients against the fixture. */
static void check_all(eo_ctx *ctx, const eo_st_file *f, const eo_params *ps, eo_tensor *logits,
                      eo_tensor *loss, int fused)
{
    const char *how = fused ? "fused" : "composed";
    size_t n;
    float l, *ref = copy_of(f, "out.loss", EO_ST_F32, &n);
    ck_assert_int_eq(eo_read(ctx, loss, &l, sizeof l), EO_OK);
    if (getenv("EO_PARITY_VERBOSE"))
        printf("%-9s %-40s relative diff %.2e (tolerance 1e-04)\n", how, "loss",
               fabs((double)l - ref[0]) / fabs((double)ref[0]));
    ck_assert_msg(fabsf(l - ref[0]) <= 1e-4f * fabsf(ref[0]), "%s: loss %.7g, torch %.7g", how,
                  (double)l, (double)ref[0]);
    free(ref);
    ref = copy_of(f, "out.logits", EO_ST_F32, &n);
    ck_assert_int_eq((int64_t)n, eo_numel(logits));
    float *got = malloc(n * sizeof *got);
    ck_assert_int_eq(eo_read(ctx, logits, got, n * sizeof *got), EO_OK);
    compare(how, "logits", got, ref, n, 1e-4, 1.0);
    free(got);
    free(ref);
    for (int i = 0; i < ps->count; i++) {
        eo_tensor *p = ps->items[i];
        char name[160];
        snprintf(name, sizeof name, "grad.%s", p->name);
        ref = copy_of(f, name, EO_ST_F32, &n);
        ck_assert_int_eq((int64_t)n, eo_numel(p));
        compare(how, name, p->grad->data, ref, n, 1e-3, 0.0);
        free(ref);
    }
}

START_TEST(gpt_matches_pytorch)
{
    eo_st_file f;
    char err[256];
    ck_assert_msg(eo_st_read(GPT_FIXTURE, &f, err, sizeof err) == EO_OK, "%s (run from the "
                  "repository root)", err);
    eo_ctx *ctx = eo_test_ctx(8, 32);
    eo_gpt_config c = { meta_int(&f, "vocab"), meta_int(&f, "context"), meta_int(&f, "d_model"),
                        meta_int(&f, "heads"), meta_int(&f, "layers"), 0 };
    eo_gpt m;
    ck_assert_int_eq(eo_gpt_build(ctx, EO_CPU, &c, &m), EO_OK);
    ck_assert_msg(eo_checkpoint_load(ctx, &m.params, GPT_FIXTURE, err, sizeof err) == EO_OK, "%s",
                  err);
    size_t n;
    int32_t *idx = copy_of(&f, "batch.idx", EO_ST_I32, &n);
    int32_t *tgt = copy_of(&f, "batch.targets", EO_ST_I32, &n);
    const eo_st_tensor *ti = eo_st_find(&f, "batch.idx");
    int64_t sh[2] = { (int64_t)ti->shape[0], (int64_t)ti->shape[1] };
    for (int fused = 0; fused < 2; fused++) {
        eo_tensor *x, *y, *logits, *loss;
        eo_gpt_set_fused(&m, fused);
        eo_mark mk = eo_mark_get(ctx);
        ck_assert_int_eq(eo_tensor_wrap(ctx, EO_I32, 2, sh, idx, &x), EO_OK);
        ck_assert_int_eq(eo_tensor_wrap(ctx, EO_I32, 2, sh, tgt, &y), EO_OK);
        ck_assert_int_eq(eo_params_zero_grad(ctx, &m.params), EO_OK);
        ck_assert_int_eq(eo_gpt_loss(ctx, &m, x, y, &logits, &loss), EO_OK);
        ck_assert_int_eq(eo_backward(ctx, loss), EO_OK);
        check_all(ctx, &f, &m.params, logits, loss, fused);
        eo_rewind(ctx, mk);
    }
    free(idx);
    free(tgt);
    eo_st_close(&f);
    eo_test_ctx_free(ctx);
}
END_TEST

START_TEST(vit_matches_pytorch)
{
    eo_st_file f;
    char err[256];
    ck_assert_msg(eo_st_read(VIT_FIXTURE, &f, err, sizeof err) == EO_OK, "%s (run from the "
                  "repository root)", err);
    eo_ctx *ctx = eo_test_ctx(8, 32);
    eo_vit_config c = { meta_int(&f, "image"), meta_int(&f, "patch"), meta_int(&f, "d_model"),
                        meta_int(&f, "heads"), meta_int(&f, "layers"), meta_int(&f, "classes") };
    eo_vit m;
    ck_assert_int_eq(eo_vit_build(ctx, EO_CPU, &c, &m), EO_OK);
    ck_assert_msg(eo_checkpoint_load(ctx, &m.params, VIT_FIXTURE, err, sizeof err) == EO_OK, "%s",
                  err);
    size_t n;
    float *px = copy_of(&f, "batch.x", EO_ST_F32, &n);
    int32_t *py = copy_of(&f, "batch.y", EO_ST_I32, &n);
    int64_t sx[2] = { (int64_t)n, c.image * c.image }, sy[1] = { (int64_t)n };
    for (int fused = 0; fused < 2; fused++) {
        eo_tensor *x, *y, *logits, *loss;
        eo_vit_set_fused(&m, fused);
        eo_mark mk = eo_mark_get(ctx);
        ck_assert_int_eq(eo_tensor_wrap(ctx, EO_F32, 2, sx, px, &x), EO_OK);
        ck_assert_int_eq(eo_tensor_wrap(ctx, EO_I32, 1, sy, py, &y), EO_OK);
        ck_assert_int_eq(eo_params_zero_grad(ctx, &m.params), EO_OK);
        ck_assert_int_eq(eo_vit_forward(ctx, &m, x, &logits), EO_OK);
        ck_assert_int_eq(eo_cross_entropy(ctx, logits, y, -100, &loss), EO_OK);
        ck_assert_int_eq(eo_backward(ctx, loss), EO_OK);
        check_all(ctx, &f, &m.params, logits, loss, fused);
        eo_rewind(ctx, mk);
    }
    free(px);
    free(py);
    eo_st_close(&f);
    eo_test_ctx_free(ctx);
}
END_TEST

Suite *eo_suite_parity(void)
{
    Suite *s = suite_create("parity");
    TCase *tc = tcase_create("pytorch");
    tcase_add_test(tc, gpt_matches_pytorch);
    tcase_add_test(tc, vit_matches_pytorch);
    suite_add_tcase(s, tc);
    return s;
}
