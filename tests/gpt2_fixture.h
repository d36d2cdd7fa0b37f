/* tests/gpt2_fixture.h — running a Hugging Face GPT-2 parity fixture
 * (tests/fixtures/gpt2_<name>{,_expect}.safetensors, written by
 * tools/reference/ref_gpt2_hf.py) on one device, for the CPU suite
 * (tests/test_gpt2_hf.c) and the CUDA one (tests/test_cuda_gpt2_hf.c).
 *
 * The model is loaded from transformers' own file through
 * eo_gpt2_open (tools/formats/gpt2.h: names, the four Conv1D transposes,
 * the tied head), one forward and backward run in float32, and compared
 * with transformers' float64 results:
 *   logits and every gradient  max |eo - ref| / max |ref| per tensor;
 *   loss                       |eo - ref| / |ref|;
 * each at most EO_GPT2_PARITY_TOL. Why 1e-5 holds in float32: the
 * reference has no rounding of its own (float64 from the file's float32
 * weights), and at these sizes (C <= 20, T <= 16) every dot product and
 * reduction is short, so float32's error stays at a few units of 2^-24
 * (6e-8) times the condition of the layer norms and the softmax, well
 * under 1e-5 of the tensor's scale (the measured margins are in
 * README.md's GPT-2 section). */
#ifndef EO_TESTS_GPT2_FIXTURE_H
#define EO_TESTS_GPT2_FIXTURE_H

#include "core/transformer.h"

#define EO_GPT2_PARITY_TOL 1e-5

/* The fixtures' names: "small", "wide", "deep". */
#define EO_GPT2_FIXTURES 3
extern const char *const eo_gpt2_fixture_names[EO_GPT2_FIXTURES];

/* The largest errors one run measured. */
typedef struct eo_gpt2_errs {
    double logits, loss, grad;
} eo_gpt2_errs;

/* Load `weights` (a path; NULL: the fixture's own HF file) into a GPT on
 * dev, run fixture `name`'s batch (fused or composed attention), assert
 * every comparison above and return the errors in *e (may be NULL). */
void eo_gpt2_fixture_run(eo_ctx *ctx, eo_device dev, const char *name, const char *weights,
                         int fused, eo_gpt2_errs *e);

/* The fixture's head count (its _expect file's metadata n_head). */
int64_t eo_gpt2_fixture_heads(const char *name);

/* The fixture's path for name and suffix ("" or "_expect" or "_hub"). */
const char *eo_gpt2_fixture_path(char *buf, size_t len, const char *name, const char *suffix);

#endif
