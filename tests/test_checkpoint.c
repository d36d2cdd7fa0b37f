/* tests/test_checkpoint.c — model weights to and from safetensors:
 * round trip is bit-exact, and every bad file (cut short, header lying
 * about offsets, wrong dtype, wrong shape, missing tensor) is refused with
 * a message — leaving the model exactly as it was. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "tests/gradcheck.h"
#include "tests/tmpdir.h"
#include "tools/formats/checkpoint.h"
#include "tools/train/models.h"
#include "tools/formats/safetensors.h"

/* All parameter values, concatenated, for before/after comparison. */
static float *snapshot(const eo_params *ps, size_t *n)
{
    size_t total = 0;
    for (int i = 0; i < ps->count; i++)
        total += (size_t)eo_numel(ps->items[i]);
    float *out = malloc(total * sizeof(float)), *p = out;
    for (int i = 0; i < ps->count; i++) {
        size_t k = (size_t)eo_numel(ps->items[i]);
        memcpy(p, ps->items[i]->data, k * sizeof(float));
        p += k;
    }
    *n = total;
    return out;
}

static void rewrite_truncated(const char *src, const char *dst, long keep)
{
    FILE *f = fopen(src, "rb"), *g = fopen(dst, "wb");
    ck_assert_ptr_nonnull(f);
    ck_assert_ptr_nonnull(g);
    for (long i = 0; i < keep; i++) {
        int c = fgetc(f);
        if (c == EOF)
            break;
        fputc(c, g);
    }
    fclose(f);
    fclose(g);
}

START_TEST(round_trip_and_bad_files_leave_model_unchanged)
{
    char good[512], bad[512], err[512];
    ck_assert_ptr_nonnull(eo_tmpdir_make());
    snprintf(good, sizeof good, "%s", eo_tmpdir_path("mlp.safetensors"));
    snprintf(bad, sizeof bad, "%s", eo_tmpdir_path("bad.safetensors"));

    eo_ctx *ctx = eo_test_ctx(8, 8);
    eo_classifier a, b;
    eo_seed(ctx, 1);
    ck_assert_int_eq(eo_classifier_build(ctx, EO_MODEL_MLP, EO_CPU, &a), EO_OK);
    eo_seed(ctx, 2);
    ck_assert_int_eq(eo_classifier_build(ctx, EO_MODEL_MLP, EO_CPU, &b), EO_OK);
    ck_assert_int_eq(eo_checkpoint_save(ctx, &a.params, good, NULL, NULL, 0, err, sizeof err), EO_OK);

    size_t n, m;
    float *before = snapshot(&b.params, &n);
    /* Cut short: only part of the data area. */
    rewrite_truncated(good, bad, 4000);
    ck_assert_int_ne(eo_checkpoint_load(ctx, &b.params, bad, err, sizeof err), EO_OK);
    ck_assert_ptr_nonnull(strstr(err, "bad.safetensors"));
    /* Header length pointing past the end of the file. */
    rewrite_truncated(good, bad, 1L << 30);
    FILE *f = fopen(bad, "r+b");
    unsigned char big[8] = { 0xff, 0xff, 0xff, 0x0f, 0, 0, 0, 0 };
    fwrite(big, 1, 8, f);
    fclose(f);
    ck_assert_int_eq(eo_checkpoint_load(ctx, &b.params, bad, err, sizeof err), EO_ERR_FORMAT);
    /* Right names, one tensor with the wrong dtype or the wrong shape. */
    int32_t ints[10] = { 0 };
    float floats[12] = { 0 };
    for (int variant = 0; variant < 3; variant++) {
        eo_st_tensor t[4];
        for (int i = 0; i < 4; i++) {
            const eo_tensor *p = a.params.items[i];
            t[i].name = p->name;
            t[i].dtype = EO_ST_F32;
            t[i].rank = p->rank;
            for (int d = 0; d < p->rank; d++)
                t[i].shape[d] = (uint64_t)p->shape[d];
            t[i].data = p->data;
            t[i].nbytes = (size_t)eo_numel(p) * 4;
        }
        if (variant == 0) { /* "2.bias" stored as I32 */
            t[3].dtype = EO_ST_I32;
            t[3].data = ints;
        } else if (variant == 1) { /* "2.bias" with 12 entries instead of 10 */
            t[3].shape[0] = 12;
            t[3].data = floats;
            t[3].nbytes = sizeof floats;
        } else { /* "2.bias" missing */
            t[3].name = "2.something_else";
        }
        ck_assert_int_eq(eo_st_write(bad, t, 4, NULL, 0, err, sizeof err), EO_OK);
        ck_assert_int_eq(eo_checkpoint_load(ctx, &b.params, bad, err, sizeof err), EO_ERR_FORMAT);
        ck_assert_ptr_nonnull(strstr(err, "2.bias"));
    }
    float *after = snapshot(&b.params, &m);
    ck_assert_uint_eq(n, m);
    ck_assert_int_eq(memcmp(before, after, n * sizeof(float)), 0);

    /* The good file loads, bit for bit. */
    ck_assert_int_eq(eo_checkpoint_load(ctx, &b.params, good, err, sizeof err), EO_OK);
    float *loaded = snapshot(&b.params, &m), *orig = snapshot(&a.params, &n);
    ck_assert_int_eq(memcmp(loaded, orig, n * sizeof(float)), 0);
    free(before);
    free(after);
    free(loaded);
    free(orig);
    eo_test_ctx_free(ctx);
    eo_tmpdir_remove();
}
END_TEST

Suite *eo_suite_checkpoint(void)
{
    Suite *s = suite_create("checkpoint");
    TCase *tc = tcase_create("checkpoint");
    tcase_add_test(tc, round_trip_and_bad_files_leave_model_unchanged);
    suite_add_tcase(s, tc);
    return s;
}
