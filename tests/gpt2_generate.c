/* tests/gpt2_generate.c — see gpt2_generate.h. */
#include "tests/gpt2_generate.h"

#include <check.h>
#include <stdlib.h>
#include <string.h>
#include "tests/fixtures/gpt2_generate.h"
#include "tools/formats/gpt2.h"
#include "tools/text/bpe_files.h"
#include "tools/text/generate.h"

#define GEN_MODEL "tests/fixtures/gpt2_gen/model.safetensors"
#define GEN_VOCAB "tests/fixtures/bpe/vocab.json"
#define GEN_MERGES "tests/fixtures/bpe/merges.txt"

int eo_gen_fixture_cases(void)
{
    return (int)(sizeof gen_cases / sizeof gen_cases[0]);
}

void eo_gen_fixture_check(eo_ctx *ctx, eo_device dev, int i)
{
    const gen_case *gc = &gen_cases[i];
    char err[512];
    eo_bpe_vocab bv = {0};
    ck_assert_msg(eo_bpe_read_hf(GEN_VOCAB, GEN_MERGES, &bv, err, sizeof err) == EO_OK, "%s",
                  err);
    ck_assert_uint_eq(eo_bpe_vocab_size(bv.bpe), 1500);

    /* The prompt's ids: the tokenizer agrees with GPT2Tokenizer's. */
    size_t plen = strlen(gc->prompt), cnt = 0;
    uint32_t ids[64];
    ck_assert_msg(eo_bpe_encode(bv.bpe, gc->prompt, plen, NULL, 0, ids, 64, &cnt, err,
                                sizeof err) == EO_OK, "%s", err);
    ck_assert_uint_eq(cnt, (size_t)gc->n_prompt);
    int32_t toks[64 + GEN_NEW];
    for (size_t j = 0; j < cnt; j++) {
        ck_assert_uint_eq(ids[j], (uint32_t)gc->prompt_ids[j]);
        toks[j] = (int32_t)ids[j];
    }

    /* The model, as eo-sample loads it: inference mode, heads from the
     * config.json beside the file. */
    eo_gpt m;
    eo_gpt2_info info;
    eo_ctx_set_inference(ctx, 1);
    ck_assert_msg(eo_gpt2_open(ctx, dev, GEN_MODEL, 0, &m, &info, err, sizeof err) == EO_OK,
                  "%s", err);
    ck_assert_str_eq(info.heads_from, "config.json");
    ck_assert_int_eq(m.cfg.tied, 1);
    eo_set_grad(ctx, 0);
    eo_set_training(ctx, 0);
    eo_gpt_set_fused(&m, 1);
    eo_gpt_cache cache;
    ck_assert_int_eq(eo_gpt_cache_init(ctx, &m, 1, &cache), EO_OK);
    eo_pcg32 rng;
    eo_pcg32_seed(&rng, 1, 1);
    eo_gen_opts o = { 0.0f, 0, 1.0f, 1500 }; /* greedy */
    size_t n = 0;
    eo_status st = eo_gen_run(ctx, &m, dev, &cache, toks, cnt, GEN_NEW, &o, &rng, NULL, NULL, &n);
    ck_assert_msg(st == EO_OK, "eo_gen_run: %s", eo_last_error(ctx));
    ck_assert_uint_eq(n, cnt + GEN_NEW);
    for (int j = 0; j < GEN_NEW; j++)
        ck_assert_msg(toks[cnt + (size_t)j] == gc->ids[j],
                      "prompt %d, new token %d: %d, transformers %d", i, j,
                      (int)toks[cnt + (size_t)j], gc->ids[j]);

    /* The text: the tokens' bytes, exactly (some end inside a UTF-8
     * character). */
    uint32_t nid[GEN_NEW];
    for (int j = 0; j < GEN_NEW; j++)
        nid[j] = (uint32_t)toks[cnt + (size_t)j];
    char text[4096];
    size_t tl = 0;
    ck_assert_int_eq(eo_bpe_decode(bv.bpe, nid, GEN_NEW, text, sizeof text, &tl, err,
                                   sizeof err), EO_OK);
    ck_assert_uint_eq(tl, (size_t)gc->text_len);
    ck_assert(memcmp(text, gc->text, tl) == 0);
    eo_bpe_vocab_free(&bv);
}
