/* tools/train/gpt_limits.h — refusing a GPT whose sizes cannot work,
 * before any memory is touched.
 *
 * eo-train takes the sizes from its command line and eo-sample from a
 * checkpoint's metadata; either may say "--d-model 99999999999". Each size
 * is checked against a bound far above what a CPU trains, then the
 * parameter count and a lower bound of the activations are computed with
 * overflow checks and compared with the arenas, so the answer is one clear
 * message instead of a wrapped product or an hour of swapping. */
#ifndef EO_TOOLS_GPT_LIMITS_H
#define EO_TOOLS_GPT_LIMITS_H

#include <stddef.h>
#include <stdint.h>

#define EO_GPT_MAX_CONTEXT 65536
#define EO_GPT_MAX_D_MODEL 65536
#define EO_GPT_MAX_LAYERS 4096
#define EO_GPT_MAX_VOCAB 256   /* characters: one per byte value */
#define EO_GPT_MAX_TOKEN_VOCAB 65536 /* token ids: llm.c's shards hold uint16 */
#define EO_GPT_MAX_BATCH (1 << 20)

typedef struct eo_gpt_sizes {
    int64_t context, d_model, heads, layers, vocab, batch;
    int training;          /* 1: parameters carry gradients and AdamW's m and v */
} eo_gpt_sizes;

/* 1 when every size is in range and the model fits persist_bytes (its
 * parameters) and step_bytes (a lower bound of its activations); else 0
 * with the reason in err, naming sizes as `--d-model` style options when
 * opt_style is 1 and as metadata keys ("d_model") when 0. */
int eo_gpt_sizes_check(const eo_gpt_sizes *s, size_t persist_bytes, size_t step_bytes,
                       int opt_style, char *err, size_t errlen);
/* The same for a GPT on token ids (eo-train --tokens): the vocabulary may
 * be up to max_vocab instead of EO_GPT_MAX_VOCAB. */
int eo_gpt_sizes_check_vocab(const eo_gpt_sizes *s, int64_t max_vocab, size_t persist_bytes,
                             size_t step_bytes, int opt_style, char *err, size_t errlen);

/* A generous first guess of the arena bytes a GPT of these sizes needs
 * (for eo_arena_measure, tools/train/arena_size.h, which measures the real
 * figure in buffers this large): the parameters with gradients, AdamW
 * state and 16-bit copies when training, a key/value cache for
 * generation, and an upper estimate of one step's activations and their
 * gradients. Saturates at SIZE_MAX / 4; the sizes must have passed
 * eo_gpt_sizes_check. */
void eo_gpt_arena_guess(const eo_gpt_sizes *s, size_t *persist, size_t *step);

#endif
