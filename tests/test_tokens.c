/* tests/test_tokens.c — GPT training on token data (tools/train/tokens.h,
 * eo-train --tokens): llm.c's shard format read and checked, malformed
 * shards refused with messages naming the file, llm.c's sequential
 * batches, and a small GPT trained on a shard the test writes. */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "tests/tmpdir.h"
#include "tools/train/textlm.h"
#include "tools/train/tokens.h"

/* A shard's bytes by hand: the header's three fields, then n ids. */
static size_t shard_bytes(unsigned char *b, int32_t magic, int32_t version, int32_t count,
                          const uint16_t *ids, size_t n)
{
    memset(b, 0, EO_TOKENS_HEADER_BYTES);
    const int32_t h[3] = { magic, version, count };
    for (int k = 0; k < 3; k++)
        for (int j = 0; j < 4; j++)
            b[4 * k + j] = (unsigned char)((uint32_t)h[k] >> (8 * j));
    for (size_t i = 0; i < n; i++) {
        b[EO_TOKENS_HEADER_BYTES + 2 * i] = (unsigned char)(ids[i] & 0xff);
        b[EO_TOKENS_HEADER_BYTES + 2 * i + 1] = (unsigned char)(ids[i] >> 8);
    }
    return EO_TOKENS_HEADER_BYTES + 2 * n;
}

/* The written file reads back the same ids, little-endian (id 258 is the
 * bytes 02 01), and its header is llm.c's. */
START_TEST(shard_round_trip_little_endian)
{
    ck_assert_ptr_nonnull(eo_tmpdir_make());
    const int32_t ids[5] = { 0, 1, 258, 50256, 7 };
    const char *p = eo_tmpdir_path("a.bin");
    char err[512];
    ck_assert_int_eq(eo_tokens_save(p, ids, 5, err, sizeof err), EO_OK);
    FILE *f = fopen(p, "rb");
    unsigned char b[1034];
    ck_assert_uint_eq(fread(b, 1, sizeof b, f), sizeof b);
    fclose(f);
    ck_assert_int_eq(b[0] | b[1] << 8 | b[2] << 16 | b[3] << 24, 20240520);
    ck_assert_int_eq(b[4], 1);
    ck_assert_int_eq(b[8], 5);
    ck_assert_int_eq(b[1024 + 4], 2);
    ck_assert_int_eq(b[1024 + 5], 1);
    int32_t *t;
    size_t n;
    ck_assert_int_eq(eo_tokens_load(p, 50257, &t, &n, err, sizeof err), EO_OK);
    ck_assert_uint_eq(n, 5);
    for (int i = 0; i < 5; i++)
        ck_assert_int_eq(t[i], ids[i]);
    free(t);
    eo_tmpdir_remove();
}
END_TEST

/* Each malformed shard: refused, the message names the file and says
 * what is wrong. */
static void refused(const char *name, const unsigned char *b, size_t len, int vocab,
                    eo_status want, const char *needle)
{
    const char *p = eo_tmpdir_file(name, b, len);
    ck_assert_ptr_nonnull(p);
    char err[512] = "";
    int32_t *t = NULL;
    size_t n = 0;
    eo_status s = eo_tokens_load(p, vocab, &t, &n, err, sizeof err);
    ck_assert_msg(s == want, "%s: status %d, expected %d (%s)", name, s, want, err);
    ck_assert_ptr_null(t);
    ck_assert_msg(strstr(err, p) && strstr(err, needle), "%s: expected the path and '%s' in: %s",
                  name, needle, err);
}

START_TEST(malformed_shards_refused_naming_the_file)
{
    ck_assert_ptr_nonnull(eo_tmpdir_make());
    static unsigned char b[EO_TOKENS_HEADER_BYTES + 64];
    const uint16_t ids[8] = { 1, 2, 3, 4, 5, 6, 7, 8 };
    size_t len = shard_bytes(b, EO_TOKENS_MAGIC, 1, 8, ids, 8);
    refused("magic.bin", b, (shard_bytes(b, 20240521, 1, 8, ids, 8), len), 16, EO_ERR_ARG,
            "magic 20240521, expected 20240520");
    refused("version.bin", b, (shard_bytes(b, EO_TOKENS_MAGIC, 2, 8, ids, 8), len), 16,
            EO_ERR_ARG, "version 2, expected 1");
    shard_bytes(b, EO_TOKENS_MAGIC, 1, 8, ids, 8);
    refused("truncated.bin", b, len - 3, 16, EO_ERR_ARG, "(truncated?)");
    refused("header.bin", b, 100, 16, EO_ERR_ARG, "shorter than the 1024-byte header");
    refused("empty.bin", b, 0, 16, EO_ERR_ARG, "0 bytes");
    refused("extra.bin", b, len + 2, 16, EO_ERR_ARG, "the header says 8 tokens");
    refused("count.bin", b, (shard_bytes(b, EO_TOKENS_MAGIC, 1, -1, ids, 8), len), 16,
            EO_ERR_ARG, "the header says -1 tokens");
    refused("vocab.bin", b, (shard_bytes(b, EO_TOKENS_MAGIC, 1, 8, ids, 8), len), 8, EO_ERR_ARG,
            "token 7 is 8, not below the vocabulary size 8");
    /* Not a regular file: the shared reader's refusal (tools/cli/files.h). */
    char err[512] = "";
    int32_t *t = NULL;
    size_t n;
    const char *dir = eo_tmpdir_path("");
    ck_assert_int_eq(eo_tokens_load(dir, 16, &t, &n, err, sizeof err), EO_ERR_IO);
    ck_assert_msg(strstr(err, "directory") && strstr(err, "token shard"), "%s", err);
    /* A vocabulary a uint16 cannot index is the caller's mistake. */
    ck_assert_int_eq(eo_tokens_parse("x.bin", b, len, 65537, NULL, &n, err, sizeof err),
                     EO_ERR_ARG);
    eo_tmpdir_remove();
}
END_TEST

/* llm.c's DataLoader: consecutive windows of B*T+1 tokens, stride B*T,
 * back to the start before a batch that would run past the end. */
START_TEST(loader_is_sequential_with_stride_bt)
{
    int32_t tok[23];
    for (int i = 0; i < 23; i++)
        tok[i] = i;
    eo_token_loader l;
    char err[256];
    ck_assert_int_eq(eo_token_loader_init(&l, tok, 23, 2, 5, err, sizeof err), EO_OK);
    int32_t x[10], y[10];
    const int starts[4] = { 0, 10, 0, 10 }; /* 20 + 11 > 23: the third wraps */
    for (int k = 0; k < 4; k++) {
        eo_token_loader_next(&l, x, y);
        for (int i = 0; i < 10; i++) {
            ck_assert_int_eq(x[i], starts[k] + i);
            ck_assert_int_eq(y[i], starts[k] + i + 1);
        }
    }
    ck_assert_int_eq(eo_token_loader_init(&l, tok, 10, 2, 5, err, sizeof err), EO_ERR_ARG);
    ck_assert_msg(strstr(err, "10 tokens are too few"), "%s", err);
}
END_TEST

/* A shard of a learnable stream (each token a function of the one
 * before, over a 24-token vocabulary, with every 7th drawn at random):
 * a small GPT trains, the loss is finite and falls well below the
 * uniform ln 24, and the same seed gives the same loss bit for bit. */
START_TEST(small_gpt_trains_on_a_shard)
{
    ck_assert_ptr_nonnull(eo_tmpdir_make());
    enum { N = 6000, V = 24 };
    static int32_t ids[N];
    uint32_t r = 12345;
    ids[0] = 0;
    for (int i = 1; i < N; i++) {
        r = r * 1664525u + 1013904223u;
        ids[i] = i % 7 == 0 ? (int32_t)((r >> 16) % V) : (ids[i - 1] * 5 + 3) % V;
    }
    char err[512];
    const char *p = eo_tmpdir_path("train.bin");
    ck_assert_int_eq(eo_tokens_save(p, ids, N, err, sizeof err), EO_OK);
    eo_lm_config c;
    eo_lm_defaults(&c);
    c.tokens = p;
    c.vocab = V;
    c.steps = 60;
    c.context = 16;
    c.d_model = 32;
    c.heads = 2;
    c.layers = 1;
    c.batch = 8;
    c.lr = 3e-3f;
    c.weight_decay = 0.1f;
    c.cosine = 1;
    c.warmup = 5;
    c.min_lr = 3e-4f;
    c.clip = 1.0f;
    c.threads = 1;
    c.eval_every = 0;
    c.val_windows = 32;
    c.quiet = 1;
    eo_lm_result r0, r1, r2;
    eo_lm_config c0 = c;
    c0.steps = 0; /* the untrained model's validation loss */
    eo_status s = eo_lm_train_run(&c0, &r0, NULL, err, sizeof err);
    ck_assert_msg(s == EO_OK, "%s", err);
    s = eo_lm_train_run(&c, &r1, NULL, err, sizeof err);
    ck_assert_msg(s == EO_OK, "%s", err);
    ck_assert_int_eq(r1.vocab, V);
    ck_assert_uint_eq(r1.train_chars, N - N / 10);
    ck_assert_uint_eq(r1.val_chars, N / 10);
    ck_assert_msg(isfinite(r1.val_loss) && isfinite(r1.train_loss), "loss %g", r1.val_loss);
    ck_assert_msg(r1.val_loss < r0.val_loss - 0.5 && r1.val_loss < log(V) - 0.5,
                  "validation loss %.4f after 60 steps, %.4f before (ln V = %.4f)", r1.val_loss,
                  r0.val_loss, log(V));
    ck_assert_int_eq(eo_lm_train_run(&c, &r2, NULL, err, sizeof err), EO_OK);
    ck_assert_msg(r1.val_loss == r2.val_loss, "same seed: %.9g vs %.9g", r1.val_loss,
                  r2.val_loss);
    /* A validation shard of its own; a token beyond --vocab in it is
     * refused with its name. */
    const char *pv = eo_tmpdir_path("val.bin");
    ck_assert_int_eq(eo_tokens_save(pv, ids, 600, err, sizeof err), EO_OK);
    c.val_tokens = pv;
    c.steps = 2;
    c.warmup = 0;
    ck_assert_int_eq(eo_lm_train_run(&c, &r2, NULL, err, sizeof err), EO_OK);
    ck_assert_uint_eq(r2.train_chars, N);
    ck_assert_uint_eq(r2.val_chars, 600);
    ids[599] = V;
    ck_assert_int_eq(eo_tokens_save(pv, ids, 600, err, sizeof err), EO_OK);
    ck_assert_int_eq(eo_lm_train_run(&c, &r2, NULL, err, sizeof err), EO_ERR_ARG);
    ck_assert_msg(strstr(err, pv) && strstr(err, "token 599 is 24"), "%s", err);
    eo_tmpdir_remove();
}
END_TEST

Suite *eo_suite_tokens(void)
{
    Suite *s = suite_create("tokens");
    TCase *tc = tcase_create("tokens");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, shard_round_trip_little_endian);
    tcase_add_test(tc, malformed_shards_refused_naming_the_file);
    tcase_add_test(tc, loader_is_sequential_with_stride_bt);
    tcase_add_test(tc, small_gpt_trains_on_a_shard);
    suite_add_tcase(s, tc);
    return s;
}
