/* tests/test_gpt2_hf.c — Hugging Face GPT-2 checkpoints in and out
 * (tools/formats/gpt2.h) and the tied head (core/transformer.h), on the
 * CPU; tests/test_cuda_gpt2_hf.c runs the same parity on the CUDA path.
 *
 * The fixtures (tests/fixtures/gpt2_*.safetensors) are tiny random
 * GPT2LMHeadModels that transformers itself made and saved, with its
 * float64 logits, loss and gradients (tools/reference/ref_gpt2_hf.py,
 * `make fixtures-gpt2`). Run from the repository root. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/transformer.h"
#include "tests/gpt2_fixture.h"
#include "tests/gradcheck.h"
#include "tests/tmpdir.h"
#include "tools/formats/checkpoint.h"
#include "tools/formats/gpt2.h"
#include "tools/formats/safetensors.h"

/* Logits, loss and every gradient within 1e-5 of transformers', with the
 * composed and the fused attention. The four Conv1D transposes: a loader
 * that dropped the one of c_attn, mlp.c_fc or mlp.c_proj fails here on
 * the shape; the square attn.c_proj on the logits (see
 * a_dropped_c_proj_transpose_is_seen below). */
START_TEST(matches_transformers_on_the_cpu)
{
    const char *name = eo_gpt2_fixture_names[_i / 2];
    eo_ctx *ctx = eo_test_ctx(8, 32);
    eo_gpt2_errs e;
    eo_gpt2_fixture_run(ctx, EO_CPU, name, NULL, _i % 2, &e);
    printf("gpt2 parity cpu %-5s %-8s logits %.2e loss %.2e gradients %.2e\n", name,
           _i % 2 ? "fused" : "composed", e.logits, e.loss, e.grad);
    eo_test_ctx_free(ctx);
}
END_TEST

/* Read `path` whole. */
static eo_st_file read_or_fail(const char *path)
{
    eo_st_file f;
    char err[512];
    ck_assert_msg(eo_st_read(path, &f, err, sizeof err) == EO_OK, "%s", err);
    return f;
}

/* Every tensor of a is in b with the same dtype, shape and bytes, and b
 * has no other. */
static void same_tensors(const char *pa, const char *pb)
{
    eo_st_file a = read_or_fail(pa), b = read_or_fail(pb);
    ck_assert_msg(a.count == b.count, "%s has %zu tensors, %s %zu", pa, a.count, pb, b.count);
    for (size_t i = 0; i < a.count; i++) {
        const eo_st_tensor *x = &a.tensors[i], *y = eo_st_find(&b, x->name);
        ck_assert_msg(y != NULL, "%s lacks %s", pb, x->name);
        ck_assert_msg(x->dtype == y->dtype && x->rank == y->rank && x->nbytes == y->nbytes,
                      "%s differs in dtype or size", x->name);
        for (int d = 0; d < x->rank; d++)
            ck_assert_msg(x->shape[d] == y->shape[d], "%s: axis %d is %llu, not %llu", x->name,
                          d, (unsigned long long)y->shape[d], (unsigned long long)x->shape[d]);
        ck_assert_msg(memcmp(x->data, y->data, x->nbytes) == 0, "%s: bytes differ", x->name);
    }
    eo_st_close(&a);
    eo_st_close(&b);
}

/* transformers' file -> EveryO -> a Hugging Face file again: the same
 * tensors bit for bit, with format: pt; and through EveryO's own layout
 * (detected from its metadata on the way back) the same again. */
START_TEST(saved_file_is_transformers_file)
{
    const char *name = eo_gpt2_fixture_names[_i];
    char hf[256], err[512];
    eo_gpt2_fixture_path(hf, sizeof hf, name, "");
    ck_assert_ptr_nonnull(eo_tmpdir_make());
    eo_ctx *ctx = eo_test_ctx(8, 32);
    eo_gpt m, m2;
    eo_gpt2_info info;
    ck_assert_msg(eo_gpt2_open(ctx, EO_CPU, hf, eo_gpt2_fixture_heads(name), &m, &info, err,
                               sizeof err) == EO_OK, "%s", err);
    char out[512], own[512], back[512];
    snprintf(out, sizeof out, "%s", eo_tmpdir_path("hf.safetensors"));
    snprintf(own, sizeof own, "%s", eo_tmpdir_path("own.safetensors"));
    snprintf(back, sizeof back, "%s", eo_tmpdir_path("back.safetensors"));
    ck_assert_msg(eo_gpt2_save(ctx, &m, out, EO_GPT2_HF, err, sizeof err) == EO_OK, "%s", err);
    same_tensors(hf, out);
    eo_st_file f = read_or_fail(out);
    ck_assert_str_eq(eo_st_meta_get(&f, "format"), "pt");
    ck_assert_str_eq(eo_st_meta_get(&f, "weight_layout"), "conv1d_in_out");
    ck_assert_str_eq(eo_st_meta_get(&f, "tie_word_embeddings"), m.cfg.tied ? "true" : "false");
    eo_st_close(&f);

    ck_assert_msg(eo_gpt2_save(ctx, &m, own, EO_GPT2_EVERYO, err, sizeof err) == EO_OK, "%s",
                  err);
    f = read_or_fail(own);
    ck_assert_str_eq(eo_st_meta_get(&f, "format"), "pt");
    ck_assert_str_eq(eo_st_meta_get(&f, "weight_layout"), "out_in");
    ck_assert_ptr_nonnull(eo_st_find(&f, "h.0.attn.c_attn.weight"));
    eo_st_close(&f);
    ck_assert_msg(eo_gpt2_open(ctx, EO_CPU, own, 0, &m2, &info, err, sizeof err) == EO_OK, "%s",
                  err);
    ck_assert_int_eq(info.layout, EO_GPT2_EVERYO);
    ck_assert_str_eq(info.heads_from, "metadata");
    ck_assert_int_eq(m2.cfg.heads, m.cfg.heads);
    ck_assert_int_eq(m2.cfg.tied, m.cfg.tied);
    ck_assert_msg(eo_gpt2_save(ctx, &m2, back, EO_GPT2_HF, err, sizeof err) == EO_OK, "%s", err);
    same_tensors(hf, back);
    eo_test_ctx_free(ctx);
    eo_tmpdir_remove();
}
END_TEST

/* The Hub's older layout: no "transformer." prefix, attn.bias and
 * attn.masked_bias buffers, lm_head.weight stored equal to wte. It loads
 * as the tied model and matches the same reference. */
START_TEST(hub_layout_loads)
{
    char hub[256], err[512];
    eo_gpt2_fixture_path(hub, sizeof hub, "small", "_hub");
    eo_st_file f = read_or_fail(hub);
    eo_gpt2_info info;
    ck_assert_msg(eo_gpt2_inspect(&f, hub, 3, &info, err, sizeof err) == EO_OK, "%s", err);
    ck_assert_int_eq(info.prefixed, 0);
    ck_assert_int_eq(info.layout, EO_GPT2_HF);
    ck_assert_int_eq(info.cfg.tied, 1);
    ck_assert_ptr_nonnull(eo_st_find(&f, "h.1.attn.masked_bias"));
    eo_st_close(&f);
    eo_ctx *ctx = eo_test_ctx(8, 32);
    eo_gpt2_fixture_run(ctx, EO_CPU, "small", hub, 1, NULL);
    eo_test_ctx_free(ctx);
}
END_TEST

/* Write `src` again with tensor `name` replaced by (rank, shape, data) or
 * removed (data NULL), plus one extra tensor when extra is not NULL. */
static const char *rewrite(const char *src, const char *dst_name, const char *name, int rank,
                           const uint64_t *shape, const void *data, size_t nbytes,
                           const char *extra)
{
    eo_st_file f = read_or_fail(src);
    eo_st_tensor *ts = calloc(f.count + 1, sizeof *ts);
    size_t n = 0;
    static const float one = 1.0f;
    for (size_t i = 0; i < f.count; i++) {
        eo_st_tensor t = f.tensors[i];
        if (name && strcmp(t.name, name) == 0) {
            if (!data)
                continue;
            t.rank = rank;
            for (int d = 0; d < rank; d++)
                t.shape[d] = shape[d];
            t.data = data;
            t.nbytes = nbytes;
        }
        ts[n++] = t;
    }
    if (extra) {
        eo_st_tensor t = { .name = extra, .dtype = EO_ST_F32, .rank = 1, .shape = { 1 },
                           .data = &one, .nbytes = 4 };
        ts[n++] = t;
    }
    const char *dst = eo_tmpdir_path(dst_name);
    char err[512];
    ck_assert_msg(eo_st_write(dst, ts, n, f.meta, f.nmeta, err, sizeof err) == EO_OK, "%s", err);
    free(ts);
    eo_st_close(&f);
    return dst;
}

/* The square attn.c_proj is where a dropped transpose would load
 * silently: the same file with that weight transposed (what a loader
 * without its transpose would hold) loads, and its logits are far
 * outside the parity tolerance, so the parity test above would fail. */
START_TEST(a_dropped_c_proj_transpose_is_seen)
{
    char hf[256], err[512];
    eo_gpt2_fixture_path(hf, sizeof hf, "small", "");
    ck_assert_ptr_nonnull(eo_tmpdir_make());
    eo_st_file f = read_or_fail(hf);
    const eo_st_tensor *w = eo_st_find(&f, "transformer.h.1.attn.c_proj.weight");
    ck_assert_ptr_nonnull(w);
    size_t C = (size_t)w->shape[0];
    ck_assert_int_eq(w->shape[1], C);
    float *t = malloc(C * C * sizeof *t), *src = malloc(C * C * sizeof *src);
    memcpy(src, w->data, C * C * sizeof *src); /* a little-endian host, as the fixtures */
    for (size_t r = 0; r < C; r++)
        for (size_t q = 0; q < C; q++)
            t[q * C + r] = src[r * C + q];
    const char *bad = rewrite(hf, "bad.safetensors", w->name, 2, w->shape, t, C * C * 4, NULL);
    eo_st_close(&f);
    eo_ctx *ctx = eo_test_ctx(8, 32);
    eo_gpt good, wrong;
    ck_assert_msg(eo_gpt2_open(ctx, EO_CPU, hf, 3, &good, NULL, err, sizeof err) == EO_OK, "%s",
                  err);
    ck_assert_msg(eo_gpt2_open(ctx, EO_CPU, bad, 3, &wrong, NULL, err, sizeof err) == EO_OK, "%s",
                  err);
    eo_set_grad(ctx, 0);
    int32_t ids[6] = { 1, 7, 3, 30, 2, 11 };
    int64_t sh[2] = { 1, 6 };
    eo_tensor *x, *la, *lb;
    ck_assert_int_eq(eo_tensor_wrap(ctx, EO_I32, 2, sh, ids, &x), EO_OK);
    ck_assert_int_eq(eo_gpt_forward(ctx, &good, x, &la), EO_OK);
    ck_assert_int_eq(eo_gpt_forward(ctx, &wrong, x, &lb), EO_OK);
    double md = 0, mr = 0;
    const float *a = la->data, *b = lb->data;
    for (int64_t i = 0; i < eo_numel(la); i++) {
        md = fmax(md, fabs((double)a[i] - b[i]));
        mr = fmax(mr, fabs((double)a[i]));
    }
    printf("gpt2: a dropped attn.c_proj transpose moves the logits by %.2e of their scale\n",
           md / mr);
    ck_assert_msg(md / mr > 1000 * 1e-5, "relative change %.3g", md / mr);
    free(t);
    free(src);
    eo_test_ctx_free(ctx);
    eo_tmpdir_remove();
}
END_TEST

/* Bad files are refused with the tensor named: an unknown tensor, a
 * missing one, a Conv1D weight in EveryO's orientation. */
START_TEST(bad_files_name_the_tensor)
{
    char hf[256], err[512];
    eo_gpt2_fixture_path(hf, sizeof hf, "small", "");
    ck_assert_ptr_nonnull(eo_tmpdir_make());
    eo_ctx *ctx = eo_test_ctx(8, 32);
    eo_gpt m;
    const char *p = rewrite(hf, "extra.safetensors", NULL, 0, NULL, NULL, 0,
                            "transformer.h.0.attn.rotary");
    ck_assert_int_eq(eo_gpt2_open(ctx, EO_CPU, p, 3, &m, NULL, err, sizeof err), EO_ERR_FORMAT);
    ck_assert_msg(strstr(err, "'transformer.h.0.attn.rotary' is not a GPT-2 parameter"), "%s",
                  err);
    p = rewrite(hf, "missing.safetensors", "transformer.h.1.ln_2.bias", 0, NULL, NULL, 0, NULL);
    ck_assert_int_eq(eo_gpt2_open(ctx, EO_CPU, p, 3, &m, NULL, err, sizeof err), EO_ERR_FORMAT);
    ck_assert_msg(strstr(err, "no tensor transformer.h.1.ln_2.bias"), "%s", err);
    /* mlp.c_fc stored [4C, C] (EveryO's orientation) in a prefixed file */
    eo_st_file f = read_or_fail(hf);
    const eo_st_tensor *w = eo_st_find(&f, "transformer.h.0.mlp.c_fc.weight");
    uint64_t flipped[2] = { w->shape[1], w->shape[0] };
    p = rewrite(hf, "flipped.safetensors", w->name, 2, flipped, w->data, w->nbytes, NULL);
    eo_st_close(&f);
    ck_assert_int_eq(eo_gpt2_open(ctx, EO_CPU, p, 3, &m, NULL, err, sizeof err), EO_ERR_FORMAT);
    ck_assert_msg(strstr(err, "transformer.h.0.mlp.c_fc.weight is [48, 12], expected [12, 48]"),
                  "%s", err);
    /* no head count anywhere and d_model 12 is not a multiple of 64 */
    ck_assert_int_eq(eo_gpt2_open(ctx, EO_CPU, hf, 0, &m, NULL, err, sizeof err), EO_ERR_FORMAT);
    ck_assert_msg(strstr(err, "number of heads"), "%s", err);
    eo_test_ctx_free(ctx);
    eo_tmpdir_remove();
}
END_TEST

/* The tied head in the library: one parameter (wte) in the list, no
 * lm_head.weight, the head computing with wte, and wte's gradient the sum
 * of its two uses: the same as an untied model whose head starts equal to
 * wte, with the two gradients added. In f32 (_i 0) and under bf16 mixed
 * precision (_i 1: wte's one working copy serves the embedding and the
 * head's matmul, whose gradient goes straight into the f32 master's). */
START_TEST(tied_head_gradient_is_the_sum)
{
    eo_ctx *ctx = eo_test_ctx(8, 32);
    const int amp = _i;
    eo_gpt_config tc = { 13, 6, 8, 2, 1, 1 }, uc = tc;
    uc.tied = 0;
    eo_gpt t, u;
    eo_seed(ctx, 3);
    ck_assert_int_eq(eo_gpt_build(ctx, EO_CPU, &tc, &t), EO_OK);
    eo_seed(ctx, 3);
    ck_assert_int_eq(eo_gpt_build(ctx, EO_CPU, &uc, &u), EO_OK);
    ck_assert_int_eq(u.params.count, t.params.count + 1);
    ck_assert_ptr_null(eo_params_find(&t.params, "lm_head.weight"));
    ck_assert_ptr_eq(t.lm_head.w, t.wte);
    /* u's head := u's wte; every other parameter is already equal */
    int64_t n = eo_numel(u.wte);
    memcpy(u.lm_head.w->data, u.wte->data, (size_t)n * sizeof(float));
    if (amp) {
        ck_assert_int_eq(eo_params_enable_low(ctx, &t.params, EO_BF16), EO_OK);
        ck_assert_int_eq(eo_params_enable_low(ctx, &u.params, EO_BF16), EO_OK);
        ck_assert_ptr_nonnull(t.wte->low);
        ck_assert_int_eq(eo_ctx_set_autocast(ctx, EO_BF16), EO_OK);
    }
    int32_t ids[10] = { 1, 2, 3, 4, 5, 12, 0, 7, 7, 9 }, tg[10] = { 2, 3, 4, 5, 6, 0, 1, 8, 9, 3 };
    int64_t sh[2] = { 2, 5 };
    eo_tensor *x, *y, *lt, *lu;
    ck_assert_int_eq(eo_tensor_wrap(ctx, EO_I32, 2, sh, ids, &x), EO_OK);
    ck_assert_int_eq(eo_tensor_wrap(ctx, EO_I32, 2, sh, tg, &y), EO_OK);
    ck_assert_int_eq(eo_params_zero_grad(ctx, &t.params), EO_OK);
    ck_assert_int_eq(eo_params_zero_grad(ctx, &u.params), EO_OK);
    ck_assert_int_eq(eo_gpt_loss(ctx, &t, x, y, NULL, &lt), EO_OK);
    ck_assert_int_eq(eo_backward(ctx, lt), EO_OK);
    ck_assert_int_eq(eo_gpt_loss(ctx, &u, x, y, NULL, &lu), EO_OK);
    ck_assert_int_eq(eo_backward(ctx, lu), EO_OK);
    float vt, vu;
    ck_assert_int_eq(eo_read(ctx, lt, &vt, sizeof vt), EO_OK);
    ck_assert_int_eq(eo_read(ctx, lu, &vu, sizeof vu), EO_OK);
    ck_assert_float_eq(vt, vu);
    ck_assert_int_eq(t.wte->grad->dtype, EO_F32);
    const float *gt = t.wte->grad->data, *ge = u.wte->grad->data, *gh = u.lm_head.w->grad->data;
    for (int64_t i = 0; i < n; i++)
        ck_assert_msg(fabsf(gt[i] - (ge[i] + gh[i])) <= 1e-6f * (1 + fabsf(gt[i])),
                      "wte grad [%lld]: %g, expected %g + %g", (long long)i, (double)gt[i],
                      (double)ge[i], (double)gh[i]);
    eo_gpt_config bad = tc;
    bad.tied = 2;
    eo_ctx_set_autocast(ctx, EO_F32);
    ck_assert_int_eq(eo_gpt_build(ctx, EO_CPU, &bad, &u), EO_ERR_ARG);
    ck_assert_ptr_nonnull(strstr(eo_last_error(ctx), "tied is 2"));
    eo_test_ctx_free(ctx);
}
END_TEST

/* EveryO's own checkpoints say what they are (format: pt, weight_layout
 * out_in, GPT2Config's fields), and an eo-train-style GPT file goes to
 * Hugging Face's layout and back with its tensors bit for bit and its
 * own metadata (the character vocabulary) kept. */
START_TEST(own_checkpoint_converts_both_ways)
{
    ck_assert_ptr_nonnull(eo_tmpdir_make());
    eo_ctx *ctx = eo_test_ctx(8, 32);
    eo_gpt_config c = { 13, 6, 8, 2, 2, 0 };
    eo_gpt m, a, b;
    eo_seed(ctx, 9);
    ck_assert_int_eq(eo_gpt_build(ctx, EO_CPU, &c, &m), EO_OK);
    char orig[512], hf[512], back[512], err[512];
    snprintf(orig, sizeof orig, "%s", eo_tmpdir_path("orig.safetensors"));
    snprintf(hf, sizeof hf, "%s", eo_tmpdir_path("hf.safetensors"));
    snprintf(back, sizeof back, "%s", eo_tmpdir_path("back.safetensors"));
    const char *keys[3] = { "model", "vocab", "heads" }, *vals[3] = { "gpt", "abcdefghijklm", "2" };
    ck_assert_msg(eo_checkpoint_save(ctx, &m.params, orig, keys, vals, 3, err, sizeof err) ==
                  EO_OK, "%s", err);
    eo_st_file f = read_or_fail(orig);
    ck_assert_str_eq(eo_st_meta_get(&f, "format"), "pt");
    ck_assert_str_eq(eo_st_meta_get(&f, "weight_layout"), "out_in");
    eo_gpt2_info info;
    ck_assert_msg(eo_gpt2_inspect(&f, orig, 0, &info, err, sizeof err) == EO_OK, "%s", err);
    ck_assert_int_eq(info.layout, EO_GPT2_EVERYO);
    ck_assert_int_eq(info.cfg.tied, 0);
    ck_assert_int_eq(info.cfg.heads, 2);
    ck_assert_msg(eo_gpt2_open(ctx, EO_CPU, orig, 0, &a, NULL, err, sizeof err) == EO_OK, "%s",
                  err);
    ck_assert_msg(eo_gpt2_save_with(ctx, &a, hf, EO_GPT2_HF, f.meta, f.nmeta, err, sizeof err) ==
                  EO_OK, "%s", err);
    eo_st_close(&f);
    f = read_or_fail(hf);
    ck_assert_str_eq(eo_st_meta_get(&f, "vocab"), "abcdefghijklm");
    ck_assert_str_eq(eo_st_meta_get(&f, "weight_layout"), "conv1d_in_out");
    ck_assert_ptr_nonnull(eo_st_find(&f, "transformer.h.1.mlp.c_fc.weight"));
    ck_assert_ptr_nonnull(eo_st_find(&f, "lm_head.weight"));
    ck_assert_msg(eo_gpt2_open(ctx, EO_CPU, hf, 0, &b, &info, err, sizeof err) == EO_OK, "%s",
                  err);
    ck_assert_int_eq(info.layout, EO_GPT2_HF);
    ck_assert_msg(eo_gpt2_save_with(ctx, &b, back, EO_GPT2_EVERYO, f.meta, f.nmeta, err,
                                    sizeof err) == EO_OK, "%s", err);
    eo_st_close(&f);
    same_tensors(orig, back);
    eo_test_ctx_free(ctx);
    eo_tmpdir_remove();
}
END_TEST

Suite *eo_suite_gpt2_hf(void)
{
    Suite *s = suite_create("gpt2_hf");
    TCase *tc = tcase_create("gpt2_hf");
    tcase_set_timeout(tc, 120);
    tcase_add_loop_test(tc, matches_transformers_on_the_cpu, 0, 2 * EO_GPT2_FIXTURES);
    tcase_add_loop_test(tc, saved_file_is_transformers_file, 0, EO_GPT2_FIXTURES);
    tcase_add_test(tc, hub_layout_loads);
    tcase_add_test(tc, a_dropped_c_proj_transpose_is_seen);
    tcase_add_test(tc, bad_files_name_the_tensor);
    tcase_add_test(tc, own_checkpoint_converts_both_ways);
    tcase_add_loop_test(tc, tied_head_gradient_is_the_sum, 0, 2);
    suite_add_tcase(s, tc);
    return s;
}
