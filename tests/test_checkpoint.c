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
#include "ops/cpu/half.h"

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

/* Mixed precision: a model with bf16 working copies saves its f32 masters
 * (bit for bit) and, loaded into another such model, refreshes that
 * model's copies; a model whose parameters are themselves bf16 saves
 * them as BF16 and loads them back bit for bit. */
START_TEST(masters_saved_and_working_copies_refreshed)
{
    char path[512], path16[512], err[512];
    ck_assert_ptr_nonnull(eo_tmpdir_make());
    snprintf(path, sizeof path, "%s", eo_tmpdir_path("amp.safetensors"));
    snprintf(path16, sizeof path16, "%s", eo_tmpdir_path("bf16.safetensors"));
    eo_ctx *ctx = eo_test_ctx(8, 8);
    eo_classifier a, b;
    eo_seed(ctx, 1);
    ck_assert_int_eq(eo_classifier_build(ctx, EO_MODEL_MLP, EO_CPU, &a), EO_OK);
    eo_seed(ctx, 2);
    ck_assert_int_eq(eo_classifier_build(ctx, EO_MODEL_MLP, EO_CPU, &b), EO_OK);
    ck_assert_int_eq(eo_params_enable_low(ctx, &a.params, EO_BF16), EO_OK);
    ck_assert_int_eq(eo_params_enable_low(ctx, &b.params, EO_BF16), EO_OK);
    ck_assert_int_eq(eo_checkpoint_save(ctx, &a.params, path, NULL, NULL, 0, err, sizeof err),
                     EO_OK);
    ck_assert_int_eq(eo_checkpoint_load(ctx, &b.params, path, err, sizeof err), EO_OK);
    size_t n, m;
    float *want = snapshot(&a.params, &n), *got = snapshot(&b.params, &m);
    ck_assert_int_eq(memcmp(want, got, n * sizeof(float)), 0); /* the f32 masters */
    for (int i = 0; i < b.params.count; i++) { /* b's copies now round a's masters */
        const eo_tensor *p = b.params.items[i];
        ck_assert_ptr_nonnull(p->low);
        const float *w = p->data;
        const uint16_t *h = p->low->data;
        for (int64_t k = 0; k < eo_numel(p); k++)
            ck_assert_uint_eq(h[k], eo_f32_to_bf16(w[k]));
    }
    /* bf16 parameters: saved as BF16, loaded back bit for bit */
    eo_params ps, qs;
    eo_tensor *w16, *v16;
    int64_t sh[2] = { 3, 5 };
    ck_assert_int_eq(eo_params_init(ctx, &ps, 1), EO_OK);
    ck_assert_int_eq(eo_params_init(ctx, &qs, 1), EO_OK);
    ck_assert_int_eq(eo_cast(ctx, eo_test_rand(ctx, 2, sh, -1, 1, 5, 0), EO_BF16, &w16), EO_OK);
    ck_assert_int_eq(eo_tensor_zeros(ctx, EO_STEP, EO_CPU, EO_BF16, 2, sh, &v16), EO_OK);
    w16->name = v16->name = "w";
    w16->requires_grad = v16->requires_grad = 1; /* parameters: with a gradient */
    ck_assert_int_eq(eo_tensor_zeros(ctx, EO_STEP, EO_CPU, EO_BF16, 2, sh, &w16->grad), EO_OK);
    ck_assert_int_eq(eo_tensor_zeros(ctx, EO_STEP, EO_CPU, EO_BF16, 2, sh, &v16->grad), EO_OK);
    ck_assert_int_eq(eo_params_add(ctx, &ps, w16), EO_OK);
    ck_assert_int_eq(eo_params_add(ctx, &qs, v16), EO_OK);
    ck_assert_int_eq(eo_checkpoint_save(ctx, &ps, path16, NULL, NULL, 0, err, sizeof err), EO_OK);
    eo_st_file f;
    ck_assert_int_eq(eo_st_read(path16, &f, err, sizeof err), EO_OK);
    ck_assert_uint_eq(f.count, 1);
    ck_assert_int_eq(f.tensors[0].dtype, EO_ST_BF16);
    eo_st_close(&f);
    ck_assert_int_eq(eo_checkpoint_load(ctx, &qs, path16, err, sizeof err), EO_OK);
    ck_assert_int_eq(memcmp(w16->data, v16->data, 15 * 2), 0);
    free(want);
    free(got);
    eo_test_ctx_free(ctx);
    eo_tmpdir_remove();
}
END_TEST

/* Bad arguments come back as statuses with a message, never a crash:
 * NULL keys or values with nmeta > 0 were dereferenced, a directory as
 * the file to load asked malloc for LLONG_MAX bytes, and a NULL err with
 * a length reached snprintf. */
START_TEST(bad_arguments_and_directories_are_refused)
{
    char err[512];
    const char *dir = eo_tmpdir_make();
    ck_assert_ptr_nonnull(dir);
    char path[512];
    snprintf(path, sizeof path, "%s", eo_tmpdir_path("m.safetensors"));
    eo_ctx *ctx = eo_test_ctx(8, 8);
    eo_classifier a;
    ck_assert_int_eq(eo_classifier_build(ctx, EO_MODEL_MLP, EO_CPU, &a), EO_OK);

    const char *keys[1] = { "k" }, *values[1] = { "v" };
    ck_assert_int_eq(eo_checkpoint_save(ctx, &a.params, path, NULL, NULL, 1, err, sizeof err),
                     EO_ERR_ARG);
    ck_assert_msg(strstr(err, "eo_checkpoint_save") && strstr(err, "NULL keys with 1 metadata"),
                  "%s", err);
    ck_assert_int_eq(eo_checkpoint_save(ctx, &a.params, path, keys, NULL, 1, err, sizeof err),
                     EO_ERR_ARG);
    ck_assert_ptr_nonnull(strstr(err, "NULL values"));
    ck_assert_int_eq(eo_checkpoint_save_as(ctx, &a.params, path, EO_ST_BF16, NULL, values, 2,
                                           NULL, 64),
                     EO_ERR_ARG);
    ck_assert_int_eq(eo_checkpoint_save(NULL, &a.params, path, NULL, NULL, 0, err, sizeof err),
                     EO_ERR_ARG);
    ck_assert_ptr_nonnull(strstr(err, "NULL context"));
    ck_assert_int_eq(eo_checkpoint_save(ctx, NULL, path, NULL, NULL, 0, err, sizeof err),
                     EO_ERR_ARG);
    ck_assert_int_eq(eo_checkpoint_save(ctx, &a.params, NULL, NULL, NULL, 0, err, sizeof err),
                     EO_ERR_ARG);
    ck_assert_int_eq(eo_checkpoint_save_as(ctx, &a.params, path, EO_ST_I32, NULL, NULL, 0, NULL,
                                           64),
                     EO_ERR_ARG);
    eo_params odd = a.params;
    odd.count = -1;
    ck_assert_int_eq(eo_checkpoint_save(ctx, &odd, path, NULL, NULL, 0, err, sizeof err),
                     EO_ERR_ARG);
    ck_assert_ptr_nonnull(strstr(err, "count -1"));
    ck_assert_int_eq(eo_checkpoint_load(ctx, &odd, path, err, sizeof err), EO_ERR_ARG);
    eo_tensor *items[2] = { a.params.items[0], NULL };
    odd.items = items;
    odd.count = 2;
    ck_assert_int_eq(eo_checkpoint_save(ctx, &odd, path, NULL, NULL, 0, err, sizeof err),
                     EO_ERR_ARG);
    ck_assert_ptr_nonnull(strstr(err, "parameter 1 of 2 is NULL"));
    ck_assert_ptr_null(fopen(path, "rb")); /* nothing refused was written */

    ck_assert_int_eq(eo_checkpoint_save(ctx, &a.params, path, keys, values, 1, err, sizeof err),
                     EO_OK);
    ck_assert_int_eq(eo_checkpoint_load(ctx, &a.params, dir, err, sizeof err), EO_ERR_IO);
    ck_assert_msg(strstr(err, dir) && strstr(err, "is a directory"), "%s", err);
    ck_assert_int_eq(eo_checkpoint_load(ctx, &a.params, dir, NULL, 32), EO_ERR_IO);
    ck_assert_int_eq(eo_checkpoint_load(NULL, &a.params, path, err, sizeof err), EO_ERR_ARG);
    ck_assert_int_eq(eo_checkpoint_load(ctx, NULL, path, err, sizeof err), EO_ERR_ARG);
    ck_assert_int_eq(eo_checkpoint_load(ctx, &a.params, NULL, err, sizeof err), EO_ERR_ARG);
    ck_assert_int_eq(eo_checkpoint_load(ctx, &a.params, path, err, sizeof err), EO_OK);
    eo_test_ctx_free(ctx);
    eo_tmpdir_remove();
}
END_TEST

Suite *eo_suite_checkpoint(void)
{
    Suite *s = suite_create("checkpoint");
    TCase *tc = tcase_create("checkpoint");
    tcase_add_test(tc, round_trip_and_bad_files_leave_model_unchanged);
    tcase_add_test(tc, masters_saved_and_working_copies_refreshed);
    tcase_add_test(tc, bad_arguments_and_directories_are_refused);
    suite_add_tcase(s, tc);
    return s;
}
