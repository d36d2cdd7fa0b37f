/* tests/test_gpt2_generate.c — generation for real: a tiny random GPT-2
 * whose vocabulary is the test BPE (tests/fixtures/bpe/), made and run by
 * transformers (tools/reference/ref_gpt2_generate.py); eo-sample's loop
 * must give generate(do_sample=False)'s tokens and bytes exactly, and
 * the sampling filters (temperature, top-k, top-p) must keep the tokens
 * transformers' warpers keep. Run from the repository root. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "tests/gpt2_generate.h"
#include "tests/gradcheck.h"
#include "tools/text/generate.h"
#include "tools/train/gpt_limits.h"

START_TEST(greedy_matches_transformers)
{
    eo_ctx *ctx = eo_test_ctx(8, 32);
    eo_gen_fixture_check(ctx, EO_CPU, _i);
    eo_test_ctx_free(ctx);
}
END_TEST

/* Draws many times and records which ids came out. */
static void drawn(const float *lg, int V, eo_gen_opts o, int *seen)
{
    eo_pcg32 rng;
    eo_gen_cand w[16];
    eo_pcg32_seed(&rng, 5, 9);
    memset(seen, 0, (size_t)V * sizeof *seen);
    for (int r = 0; r < 4000; r++) {
        int t = eo_gen_pick(lg, V, &o, &rng, w);
        ck_assert(t >= 0 && t < V);
        seen[t]++;
    }
}

/* Probabilities (temperature 1) of these logits: 0.5, 0.25, 0.125,
 * 0.0625, 0.0625. transformers' TopPLogitsWarper keeps the smallest set
 * whose cumulative probability reaches p: 0.5 -> {0}; 0.6 -> {0, 1};
 * 0.75 -> {0, 1}; 0.8 -> {0, 1, 2}; 1 -> all. */
START_TEST(top_p_keeps_the_smallest_nucleus)
{
    const float lg[5] = { logf(8), logf(4), logf(2), logf(1), logf(1) };
    static const struct { float p; int keep; } cases[] = {
        { 0.5f, 1 }, { 0.6f, 2 }, { 0.75f, 2 }, { 0.8f, 3 }, { 0.1f, 1 }, { 1.0f, 5 },
    };
    int seen[5];
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        drawn(lg, 5, (eo_gen_opts){ 1.0f, 0, cases[c].p, 0 }, seen);
        for (int t = 0; t < 5; t++)
            ck_assert_msg((seen[t] > 0) == (t < cases[c].keep),
                          "top-p %.2f: token %d drawn %d times, expected %s", cases[c].p, t,
                          seen[t], t < cases[c].keep ? "some" : "never");
    }
    /* Top-k first, then top-p over the renormalised survivors: k = 2
     * leaves 2/3, 1/3, so p = 0.6 keeps one and p = 0.7 both (over all
     * five, 0.7 would keep three). */
    drawn(lg, 5, (eo_gen_opts){ 1.0f, 2, 0.6f, 0 }, seen);
    ck_assert(seen[0] == 4000);
    drawn(lg, 5, (eo_gen_opts){ 1.0f, 2, 0.7f, 0 }, seen);
    ck_assert(seen[0] > 0 && seen[1] > 0 && seen[2] == 0);
    /* Frequencies follow the renormalised probabilities (2/3, 1/3). */
    ck_assert_msg(fabs(seen[0] / 4000.0 - 2.0 / 3) < 0.03, "%d of 4000", seen[0]);
}
END_TEST

START_TEST(greedy_and_usable_ids)
{
    const float lg[4] = { 1, 3, 3, 7 };
    eo_pcg32 rng;
    eo_pcg32_seed(&rng, 1, 1);
    /* The first maximum, as torch.argmax; ids past `usable` never. */
    ck_assert_int_eq(eo_gen_pick(lg, 4, &(eo_gen_opts){ 0, 0, 1, 0 }, &rng, NULL), 3);
    ck_assert_int_eq(eo_gen_pick(lg, 4, &(eo_gen_opts){ 0, 0, 1, 3 }, &rng, NULL), 1);
    int seen[4];
    drawn(lg, 4, (eo_gen_opts){ 2.0f, 0, 1.0f, 3 }, seen);
    ck_assert_int_eq(seen[3], 0);
    ck_assert(seen[0] > 0 && seen[1] > 0 && seen[2] > 0);
}
END_TEST

/* eo-sample refused GPT-2 124M (163 M parameters counted with an untied
 * head, 8 bytes each: "needing at least 1243.9 MiB (weights and
 * gradients)") in a persistent arena that holds it: generation keeps the
 * weights alone (inference mode), 497.8 MB with the tied head. */
START_TEST(generation_limits_count_weights_only)
{
    eo_gpt_sizes s = { 1024, 768, 12, 12, 50257, 1, 0 };
    char err[512];
    ck_assert_msg(eo_gpt_sizes_check_vocab(&s, EO_GPT_MAX_TOKEN_VOCAB, (size_t)500 << 20,
                                           (size_t)240 << 20, 0, err, sizeof err), "%s", err);
    ck_assert(!eo_gpt_sizes_check_vocab(&s, EO_GPT_MAX_TOKEN_VOCAB, (size_t)400 << 20,
                                        (size_t)240 << 20, 0, err, sizeof err));
    ck_assert_msg(strstr(err, "(weights)"), "%s", err);
}
END_TEST

Suite *eo_suite_gpt2_generate(void)
{
    Suite *s = suite_create("gpt2_generate");
    TCase *tc = tcase_create("gpt2_generate");
    tcase_set_timeout(tc, 120);
    tcase_add_loop_test(tc, greedy_matches_transformers, 0, eo_gen_fixture_cases());
    tcase_add_test(tc, top_p_keeps_the_smallest_nucleus);
    tcase_add_test(tc, greedy_and_usable_ids);
    tcase_add_test(tc, generation_limits_count_weights_only);
    suite_add_tcase(s, tc);
    return s;
}
