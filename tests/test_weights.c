/* tests/test_weights.c — the library's safetensors side (core/safetensors.h):
 * an image parsed from memory with a lent workspace, eo_weights_bind all
 * or nothing (wrong shape, missing name, wrong dtype: nothing changes and
 * the message says what was expected and found), weights used in place
 * (read-only: writing and training refused, the arenas untouched), and
 * BF16/F16 against PyTorch (tests/fixtures/st16.safetensors, made by
 * tools/reference/make_fixture_16bit.py): the roundings to 16 bits give
 * torch's bits, the widenings are exact, and a model saved in 16 bits
 * gives torch's bytes back. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "alloc/byteorder.h"
#include "core/safetensors.h"
#include "ops/cpu/half.h"
#include "tests/gradcheck.h"
#include "tests/tmpdir.h"
#include "tools/formats/checkpoint.h"
#include "tools/formats/safetensors.h"

#define ST16_FIXTURE "tests/fixtures/st16.safetensors"

static char err[512];

/* A whole file in malloc'd memory (aligned as malloc aligns). */
static unsigned char *slurp(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    ck_assert_msg(f != NULL, "%s (run from the repository root)", path);
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *b = malloc((size_t)len + 16);
    ck_assert_uint_eq(fread(b, 1, (size_t)len, f), (size_t)len);
    fclose(f);
    *n = (size_t)len;
    return b;
}

typedef struct net {
    eo_params ps;
    eo_module l1, l2;
} net;

/* 3 -> 4 -> 2, parameters "0.weight" [4x3], "0.bias", "2.weight" [2x4], "2.bias". */
static void build(eo_ctx *ctx, net *m)
{
    ck_assert_int_eq(eo_params_init(ctx, &m->ps, 4), EO_OK);
    ck_assert_int_eq(eo_linear_init(ctx, &m->ps, EO_CPU, "0", 3, 4, 1, EO_INIT_KAIMING_UNIFORM,
                                    &m->l1), EO_OK);
    ck_assert_int_eq(eo_linear_init(ctx, &m->ps, EO_CPU, "2", 4, 2, 1, EO_INIT_KAIMING_UNIFORM,
                                    &m->l2), EO_OK);
}

/* Writes m's parameters (plus, by variant, a change) and returns the image. */
static unsigned char *image_of(eo_ctx *ctx, const net *m, const char *name, int variant,
                               size_t *n)
{
    eo_st_tensor t[4];
    static float vals[4][32];
    static int32_t ints[2];
    memset(t, 0, sizeof t);
    for (int i = 0; i < 4; i++) {
        const eo_tensor *p = m->ps.items[i];
        ck_assert_int_eq(eo_read(ctx, p, vals[i], (size_t)eo_numel(p) * 4), EO_OK);
        for (int k = 0; k < eo_numel(p); k++)
            vals[i][k] += 0.25f; /* not the model's values */
        t[i].name = p->name;
        t[i].dtype = EO_ST_F32;
        t[i].rank = p->rank;
        for (int d = 0; d < p->rank; d++)
            t[i].shape[d] = (uint64_t)p->shape[d];
        t[i].data = vals[i];
    }
    if (variant == 1) { /* 2.weight stored transposed */
        t[2].shape[0] = 4;
        t[2].shape[1] = 2;
    } else if (variant == 2) { /* 2.bias missing */
        t[3].name = "2.b";
    } else if (variant == 3) { /* 2.bias as I32 */
        t[3].dtype = EO_ST_I32;
        t[3].data = ints;
    }
    const char *path = eo_tmpdir_path(name);
    ck_assert_msg(eo_st_write(path, t, 4, NULL, 0, err, sizeof err) == EO_OK, "%s", err);
    return slurp(path, n);
}

static void values(eo_ctx *ctx, const net *m, float *out)
{
    for (int i = 0; i < 4; i++) {
        const eo_tensor *p = m->ps.items[i];
        ck_assert_int_eq(eo_read(ctx, p, out, (size_t)eo_numel(p) * 4), EO_OK);
        out += eo_numel(p);
    }
}

START_TEST(parse_from_memory_with_a_lent_workspace)
{
    ck_assert_ptr_nonnull(eo_tmpdir_make());
    eo_ctx *ctx = eo_test_ctx(1, 1);
    net m;
    build(ctx, &m);
    size_t n;
    unsigned char *img = image_of(ctx, &m, "a.safetensors", 0, &n);
    size_t wb = eo_st_workspace_bytes(img, n);
    ck_assert_uint_gt(wb, 0);
    ck_assert_uint_lt(wb, 8192);
    unsigned char *work = malloc(wb);
    eo_st_image im;
    ck_assert_int_eq(eo_st_image_parse(img, n, work, wb - 1, "a", &im, err, sizeof err),
                     EO_ERR_ARG);
    ck_assert_msg(strstr(err, "workspace") != NULL, "%s", err);
    ck_assert_msg(eo_st_image_parse(img, n, work, wb, "a", &im, err, sizeof err) == EO_OK, "%s",
                  err);
    ck_assert_uint_eq(im.count, 4);
    ck_assert_str_eq(im.tensors[2].name, "2.weight"); /* header order */
    ck_assert_uint_eq(im.tensors[2].index, 2);
    const eo_st_tensor *b = eo_st_image_find(&im, "2.bias");
    ck_assert_ptr_nonnull(b);
    ck_assert_ptr_eq(b->data, im.data + b->begin);
    ck_assert_uint_eq(b->nbytes, 8);
    ck_assert_ptr_null(eo_st_image_find(&im, "2.bia"));
    /* Cut anywhere: refused, never read past the end (ASan watches). */
    for (size_t cut = 0; cut < n; cut += 7) {
        unsigned char *c = malloc(cut ? cut : 1);
        memcpy(c, img, cut);
        size_t w2 = eo_st_workspace_bytes(c, cut);
        void *wk = w2 ? malloc(w2) : NULL;
        ck_assert_int_ne(eo_st_image_parse(c, cut, wk, w2, "cut", &im, err, sizeof err), EO_OK);
        free(wk);
        free(c);
    }
    /* Overlapping offsets: tensor 1's range moved onto tensor 0's. */
    char *h = (char *)img + 8, *o = strstr(h, "\"data_offsets\":[48,64]");
    ck_assert_ptr_nonnull(o);
    memcpy(o, "\"data_offsets\":[32,48]", 22);
    ck_assert_int_eq(eo_st_image_parse(img, n, work, wb, "ov", &im, err, sizeof err),
                     EO_ERR_FORMAT);
    ck_assert_msg(strstr(err, "overlap") != NULL, "%s", err);
    free(work);
    free(img);
    eo_test_ctx_free(ctx);
    eo_tmpdir_remove();
}
END_TEST

START_TEST(bind_is_all_or_nothing)
{
    ck_assert_ptr_nonnull(eo_tmpdir_make());
    eo_ctx *ctx = eo_test_ctx(1, 1);
    net m;
    build(ctx, &m);
    float before[64], after[64];
    values(ctx, &m, before);
    size_t persist = eo_arena_used(&ctx->persist), step = eo_arena_used(&ctx->step);
    const char *want[4] = {"'2.weight': the model has [2x4 f32], the image has [4x2] F32",
                           ("no tensor '2.bias' in the image (the model needs it); the image "
                            "has 4: 0.weight 0.bias 2.weight 2.b"),
                           "'2.bias': the model's [2 f32] cannot take the image's I32"};
    const eo_status codes[3] = {EO_ERR_SHAPE, EO_ERR_ARG, EO_ERR_DTYPE};
    for (int v = 1; v <= 3; v++) {
        size_t n;
        char name[32];
        snprintf(name, sizeof name, "bad%d.safetensors", v);
        unsigned char *img = image_of(ctx, &m, name, v, &n);
        ck_assert_int_eq(eo_weights_bind(ctx, &m.ps, img, n, EO_BIND_COPY), codes[v - 1]);
        ck_assert_msg(strstr(eo_last_error(ctx), "weights_bind: ") == eo_last_error(ctx) &&
                          strstr(eo_last_error(ctx), want[v - 1]) != NULL,
                      "%s", eo_last_error(ctx));
        values(ctx, &m, after);
        ck_assert_int_eq(memcmp(before, after, sizeof(float) * 26), 0);
        free(img);
    }
    ck_assert_int_eq(eo_weights_bind(ctx, &m.ps, NULL, 8, 0), EO_ERR_ARG);
    ck_assert_int_eq(eo_weights_bind(ctx, &m.ps, before, 4, 0), EO_ERR_FORMAT);
    ck_assert_int_eq(eo_weights_bind(ctx, &m.ps, before, 0, 4), EO_ERR_ARG);
    /* A good image copies; nothing of either arena is kept. */
    size_t n;
    unsigned char *img = image_of(ctx, &m, "good.safetensors", 0, &n);
    ck_assert_msg(eo_weights_bind(ctx, &m.ps, img, n, EO_BIND_COPY) == EO_OK, "%s",
                  eo_last_error(ctx));
    values(ctx, &m, after);
    for (int k = 0; k < 26; k++)
        ck_assert_float_eq(after[k], before[k] + 0.25f);
    ck_assert(!eo_tensor_is_readonly(m.ps.items[0]));
    ck_assert_uint_eq(eo_arena_used(&ctx->persist), persist);
    ck_assert_uint_eq(eo_arena_used(&ctx->step), step);
    free(img);
    eo_test_ctx_free(ctx);
    eo_tmpdir_remove();
}
END_TEST

START_TEST(in_place_weights_are_read_only)
{
    ck_assert_ptr_nonnull(eo_tmpdir_make());
    eo_ctx *ctx = eo_test_ctx(1, 1);
    net a, b;
    build(ctx, &a);
    build(ctx, &b);
    size_t n;
    unsigned char *img = image_of(ctx, &a, "w.safetensors", 0, &n);
    ck_assert_int_eq(eo_weights_bind(ctx, &a.ps, img, n, EO_BIND_COPY), EO_OK);
    ck_assert_int_eq(eo_weights_bind(ctx, &b.ps, img, n, EO_BIND_IN_PLACE), EO_OK);
    eo_st_file f;
    ck_assert_int_eq(eo_st_parse(img, n, "w", &f, err, sizeof err), EO_OK);
    for (int i = 0; i < 4 && eo_host_is_le(); i++) { /* big-endian: bound by copying */
        ck_assert(eo_tensor_is_readonly(b.ps.items[i]));
        ck_assert_ptr_eq(b.ps.items[i]->data, eo_st_find(&f, b.ps.items[i]->name)->data);
    }
    /* The same forward as the copied weights, bit for bit. */
    float x[6] = {0.5f, -1, 2, 0, 1, -0.25f}, ya[4], yb[4];
    const int64_t xs[2] = {2, 3};
    eo_tensor *xt, *h, *y;
    eo_set_grad(ctx, 0);
    for (int pass = 0; pass < 2; pass++) {
        net *m = pass ? &b : &a;
        eo_mark mk = eo_mark_get(ctx);
        ck_assert_int_eq(eo_tensor_wrap(ctx, EO_F32, 2, xs, x, &xt), EO_OK);
        ck_assert_int_eq(eo_module_forward(ctx, &m->l1, xt, &h), EO_OK);
        ck_assert_int_eq(eo_module_forward(ctx, &m->l2, h, &y), EO_OK);
        ck_assert_int_eq(eo_read(ctx, y, pass ? yb : ya, sizeof ya), EO_OK);
        eo_rewind(ctx, mk);
    }
    ck_assert_int_eq(memcmp(ya, yb, sizeof ya), 0);
    eo_set_grad(ctx, 1);
    unsigned char *odd = NULL;
    if (!eo_host_is_le()) /* b holds copies: nothing below applies */
        goto done;
    /* Nothing writes into the image. */
    eo_tensor *w = b.ps.items[0];
    float zeros[12] = {0};
    ck_assert_int_eq(eo_write(ctx, w, zeros, sizeof zeros), EO_ERR_STATE);
    ck_assert_msg(strstr(eo_last_error(ctx), "write: 0.weight [4x3 f32] uses read-only "
                                             "weights") != NULL, "%s", eo_last_error(ctx));
    ck_assert_int_eq(eo_fill(ctx, w, 1.0f), EO_ERR_STATE);
    ck_assert_int_eq(eo_init_param(ctx, w, 0.1f, 0), EO_ERR_STATE);
    eo_optimizer opt;
    ck_assert_int_eq(eo_sgd_init(ctx, &opt, &b.ps, 0.1f, 0, 0, 0), EO_OK);
    ck_assert_int_eq(eo_optimizer_step(ctx, &opt), EO_ERR_STATE);
    ck_assert_msg(strstr(eo_last_error(ctx), "optimizer_step: 0.weight") != NULL, "%s",
                  eo_last_error(ctx));
    ck_assert_int_eq(memcmp(img, f.image, n), 0);
    /* Copying into a read-only parameter is refused too; a misaligned
     * image falls back to copying. */
    ck_assert_int_eq(eo_weights_bind(ctx, &b.ps, img, n, EO_BIND_COPY), EO_ERR_STATE);
    odd = malloc(n + 1);
    memcpy(odd + 1, img, n);
    net c;
    build(ctx, &c);
    ck_assert_int_eq(eo_weights_bind(ctx, &c.ps, odd + 1, n, EO_BIND_IN_PLACE), EO_OK);
    ck_assert(!eo_tensor_is_readonly(c.ps.items[0]));
done:
    eo_st_close(&f);
    free(odd);
    free(img);
    eo_test_ctx_free(ctx);
    eo_tmpdir_remove();
}
END_TEST

/* A model whose parameters have no storage: the persistent arena holds
 * metadata only, and the image is the weights. */
START_TEST(borrowed_parameters_take_no_arena)
{
    ck_assert_ptr_nonnull(eo_tmpdir_make());
    eo_ctx *ctx = eo_test_ctx(1, 1);
    net a, b;
    build(ctx, &a);
    size_t n;
    unsigned char *img = image_of(ctx, &a, "w.safetensors", 0, &n);
    ck_assert_int_eq(eo_weights_bind(ctx, &a.ps, img, n, EO_BIND_COPY), EO_OK);
    size_t p0 = eo_arena_used(&ctx->persist);
    ck_assert_int_eq(eo_params_init_borrowed(ctx, &b.ps, 4), EO_OK);
    ck_assert_int_eq(eo_linear_init(ctx, &b.ps, EO_CPU, "0", 3, 4, 1, EO_INIT_KAIMING_UNIFORM,
                                    &b.l1), EO_OK);
    ck_assert_int_eq(eo_linear_init(ctx, &b.ps, EO_CPU, "2", 4, 2, 1, EO_INIT_KAIMING_UNIFORM,
                                    &b.l2), EO_OK);
    size_t taken = eo_arena_used(&ctx->persist) - p0;
    ck_assert_msg(taken < 4 * sizeof(eo_tensor) + 4 * 64 + 512, "%zu bytes", taken);
    ck_assert_ptr_null(b.ps.items[0]->data);
    ck_assert_ptr_null(b.ps.items[0]->grad);
    float x[3] = {1, -2, 0.5f}, ya[2], yb[2];
    const int64_t xs[2] = {1, 3};
    eo_tensor *xt, *h, *y;
    eo_set_grad(ctx, 0);
    ck_assert_int_eq(eo_tensor_wrap(ctx, EO_F32, 2, xs, x, &xt), EO_OK);
    ck_assert_int_eq(eo_module_forward(ctx, &b.l1, xt, &h), EO_ERR_STATE);
    ck_assert_msg(strstr(eo_last_error(ctx), "0.weight [4x3 f32] has no data") != NULL, "%s",
                  eo_last_error(ctx));
    /* Only in place: a copy or a misaligned image has nowhere to go. */
    ck_assert_int_eq(eo_weights_bind(ctx, &b.ps, img, n, EO_BIND_COPY), EO_ERR_STATE);
    ck_assert_msg(strstr(eo_last_error(ctx), "is borrowed") != NULL, "%s", eo_last_error(ctx));
    unsigned char *odd = malloc(n + 1);
    memcpy(odd + 1, img, n);
    ck_assert_int_eq(eo_weights_bind(ctx, &b.ps, odd + 1, n, EO_BIND_IN_PLACE), EO_ERR_STATE);
    ck_assert_msg(strstr(eo_last_error(ctx), "not 4-byte aligned") != NULL, "%s",
                  eo_last_error(ctx));
    ck_assert_ptr_null(b.ps.items[0]->data);
    if (!eo_host_is_le()) { /* little-endian F32 stays in place only on a little-endian host */
        ck_assert_int_eq(eo_weights_bind(ctx, &b.ps, img, n, EO_BIND_IN_PLACE), EO_ERR_STATE);
        goto done;
    }
    ck_assert_int_eq(eo_weights_bind(ctx, &b.ps, img, n, EO_BIND_IN_PLACE), EO_OK);
    for (int pass = 0; pass < 2; pass++) {
        net *m = pass ? &b : &a;
        eo_mark mk = eo_mark_get(ctx);
        ck_assert_int_eq(eo_tensor_wrap(ctx, EO_F32, 2, xs, x, &xt), EO_OK);
        ck_assert_int_eq(eo_module_forward(ctx, &m->l1, xt, &h), EO_OK);
        ck_assert_int_eq(eo_module_forward(ctx, &m->l2, h, &y), EO_OK);
        ck_assert_int_eq(eo_read(ctx, y, pass ? yb : ya, sizeof ya), EO_OK);
        eo_rewind(ctx, mk);
    }
    ck_assert_int_eq(memcmp(ya, yb, sizeof ya), 0);
    ck_assert_int_eq(eo_params_zero_grad(ctx, &b.ps), EO_ERR_STATE);
    ck_assert_int_eq(eo_clip_grad_norm(ctx, &b.ps, 1.0f, NULL), EO_ERR_STATE);
done:
    free(odd);
    free(img);
    eo_test_ctx_free(ctx);
    eo_tmpdir_remove();
}
END_TEST

static uint32_t bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

START_TEST(bf16_and_f16_match_pytorch)
{
    ck_assert_ptr_nonnull(eo_tmpdir_make());
    eo_st_file f;
    ck_assert_msg(eo_st_read(ST16_FIXTURE, &f, err, sizeof err) == EO_OK, "%s", err);
    const eo_st_tensor *ref = eo_st_find(&f, "ref"), *rb = eo_st_find(&f, "ref.bf16"),
                       *rh = eo_st_find(&f, "ref.f16");
    ck_assert(ref && rb && rh);
    ck_assert_int_eq(rb->dtype, EO_ST_BF16);
    ck_assert_int_eq(rh->dtype, EO_ST_F16);
    ck_assert_uint_eq(rb->nbytes, 2 * ref->shape[0]);
    size_t n = (size_t)ref->shape[0];
    /* Rounding f32 -> 16 bits: torch's bits for every edge case. */
    for (size_t k = 0; k < n; k++) {
        float v;
        uint16_t hb, hh;
        /* the file's bytes are little-endian whatever the host */
        uint32_t u = eo_le32_load((const char *)ref->data + 4 * k);
        memcpy(&v, &u, 4);
        hb = eo_le16_load((const char *)rb->data + 2 * k);
        hh = eo_le16_load((const char *)rh->data + 2 * k);
        if (isnan(v)) {
            /* Any quiet NaN: torch's own paths differ (c10's scalar
             * conversion gives 7fc0, its AVX2 one ffff). */
            ck_assert((hb & 0x7fc0) == 0x7fc0 && (eo_f32_to_bf16(v) & 0x7fc0) == 0x7fc0);
            ck_assert((hh & 0x7e00) == 0x7e00 && (eo_f32_to_f16(v) & 0x7e00) == 0x7e00);
            continue;
        }
        ck_assert_msg(eo_f32_to_bf16(v) == hb, "bf16 of %g (%08x): %04x, torch %04x",
                      (double)v, bits(v), eo_f32_to_bf16(v), hb);
        ck_assert_msg(eo_f32_to_f16(v) == hh, "f16 of %g (%08x): %04x, torch %04x", (double)v,
                      bits(v), eo_f32_to_f16(v), hh);
    }
    /* Binding into f32 parameters widens exactly: rounding back gives
     * the same bits. */
    eo_ctx *ctx = eo_test_ctx(1, 1);
    eo_params ps;
    eo_tensor *pb, *ph, *w, *b;
    const int64_t sn = (int64_t)n, sw[2] = {3, 4}, sb = 3;
    ck_assert_int_eq(eo_params_init(ctx, &ps, 4), EO_OK);
    ck_assert_int_eq(eo_param_named(ctx, &ps, EO_CPU, "ref", "bf16", 1, &sn, &pb), EO_OK);
    ck_assert_int_eq(eo_param_named(ctx, &ps, EO_CPU, "ref", "f16", 1, &sn, &ph), EO_OK);
    ck_assert_int_eq(eo_param_named(ctx, &ps, EO_CPU, "w", "bf16", 2, sw, &w), EO_OK);
    ck_assert_int_eq(eo_param_named(ctx, &ps, EO_CPU, "b", "f16", 1, &sb, &b), EO_OK);
    ck_assert_msg(eo_weights_bind(ctx, &ps, f.image, f.size, EO_BIND_IN_PLACE) == EO_OK, "%s",
                  eo_last_error(ctx));
    ck_assert(!eo_tensor_is_readonly(pb)); /* 16-bit data: converted, not in place */
    const float *vb = pb->data, *vh = ph->data;
    for (size_t k = 0; k < n; k++) {
        uint16_t hb, hh;
        hb = eo_le16_load((const char *)rb->data + 2 * k);
        hh = eo_le16_load((const char *)rh->data + 2 * k);
        ck_assert_uint_eq(bits(vb[k]), (uint32_t)hb << 16); /* NaN payloads too */
        if (!isnan(vh[k]))
            ck_assert_uint_eq(eo_f32_to_f16(vh[k]), hh);
    }
    ck_assert_float_eq(vh[0], 1.0f);
    ck_assert_float_eq(vh[9], 65504.0f);
    ck_assert(isinf(vh[11]));
    ck_assert_float_eq(vh[12], ldexpf(1.0f, -24)); /* 6e-8: f16's smallest subnormal */
    ck_assert(isnan(vh[18]) && isnan(vb[18]));
    /* Saved back in 16 bits: torch's bytes. */
    for (int pass = 0; pass < 2; pass++) {
        eo_params one;
        ck_assert_int_eq(eo_params_init(ctx, &one, 1), EO_OK);
        ck_assert_int_eq(eo_params_add(ctx, &one, pass ? b : w), EO_OK);
        const char *path = eo_tmpdir_path(pass ? "b.safetensors" : "w.safetensors");
        ck_assert_msg(eo_checkpoint_save_as(ctx, &one, path, pass ? EO_ST_F16 : EO_ST_BF16, NULL,
                                            NULL, 0, err, sizeof err) == EO_OK, "%s", err);
        eo_st_file g;
        ck_assert_msg(eo_st_read(path, &g, err, sizeof err) == EO_OK, "%s", err);
        const eo_st_tensor *mine = &g.tensors[0], *torch = eo_st_find(&f, mine->name);
        ck_assert_int_eq(mine->dtype, torch->dtype);
        ck_assert_uint_eq(mine->nbytes, torch->nbytes);
        ck_assert_int_eq(memcmp(mine->data, torch->data, mine->nbytes), 0);
        eo_st_close(&g);
    }
    ck_assert_int_eq(eo_checkpoint_save_as(ctx, &ps, eo_tmpdir_path("x"), EO_ST_I32, NULL, NULL, 0,
                                           err, sizeof err), EO_ERR_ARG);
    eo_st_close(&f);
    eo_test_ctx_free(ctx);
    eo_tmpdir_remove();
}
END_TEST

Suite *eo_suite_weights(void)
{
    Suite *s = suite_create("weights");
    TCase *tc = tcase_create("weights");
    tcase_add_test(tc, parse_from_memory_with_a_lent_workspace);
    tcase_add_test(tc, bind_is_all_or_nothing);
    tcase_add_test(tc, in_place_weights_are_read_only);
    tcase_add_test(tc, borrowed_parameters_take_no_arena);
    tcase_add_test(tc, bf16_and_f16_match_pytorch);
    suite_add_tcase(s, tc);
    return s;
}
