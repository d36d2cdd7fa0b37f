/* tests/gpt2_generate.h — the greedy-generation fixture
 * (tests/fixtures/gpt2_generate.h, tests/fixtures/gpt2_gen/) run through
 * eo-sample's loop (tools/text/generate.h), shared by the CPU suite
 * gpt2_generate and the CUDA one cuda_gpt2_generate. */
#ifndef EO_TESTS_GPT2_GENERATE_H
#define EO_TESTS_GPT2_GENERATE_H

#include "core/transformer.h"

/* Number of prompts in the fixture. */
int eo_gen_fixture_cases(void);
/* Encodes prompt i with the test tokenizer (its ids must be
 * GPT2Tokenizer's), generates greedily with the fixture model on dev in
 * inference mode, and asserts the new ids and their bytes equal
 * transformers' generate(do_sample=False). */
void eo_gen_fixture_check(eo_ctx *ctx, eo_device dev, int i);

#endif
