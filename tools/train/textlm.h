/* tools/train/textlm.h — language modelling with the GPT of
 * core/transformer.h: the character corpus, its vocabulary, batches of
 * windows, and the training loop behind `eo-train --model gpt` and
 * eo-sample; on token ids instead (eo_lm_config.tokens, tools/train/tokens.h)
 * behind `eo-train --tokens` and `--model gpt2`.
 *
 * Corpus recipe (the one the PyTorch reference figures used): every
 * regular file (not a link) of the fortunes directory except *.dat, in
 * byte order of name, concatenated; tabs become spaces, text is
 * lower-cased, and bytes other than printable ASCII and newline are
 * dropped. The first 90% is the training split, the rest validation. The
 * vocabulary is the sorted set of bytes that occur. */
#ifndef EO_TOOLS_TEXTLM_H
#define EO_TOOLS_TEXTLM_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "core/transformer.h"

#define EO_FORTUNES_DIR "/usr/share/games/fortunes"

/* The most text either loader reads, all files together (1 GiB): a corpus
 * is held in memory whole, and a name like /dev/zero must not be read
 * until memory runs out (only regular files are read at all). */
#define EO_TEXT_MAX_BYTES ((size_t)1 << 30)

/* Cleaned text, malloc'd (free it). dir: the fortunes recipe above over
 * that directory; eo_text_load_file: one file, cleaned the same way. */

eo_status eo_text_load_fortunes(const char *dir, char **text, size_t *len, char *err,
                                size_t errlen);
eo_status eo_text_load_file(const char *path, char **text, size_t *len, char *err, size_t errlen);

/* The characters of a text, sorted, and the inverse map. */
typedef struct eo_vocab {
    int size;
    char chars[257];     /* chars[i] is token i; NUL-terminated */
    int16_t id[256];     /* byte -> token, -1 if absent */
} eo_vocab;

void eo_vocab_build(eo_vocab *v, const char *text, size_t len);
/* From the characters in token order (as saved in a checkpoint). -1 if
 * a character repeats. */
int eo_vocab_from_chars(eo_vocab *v, const char *chars);

/* Evenly spaced windows of the validation split: window k starts at
 * k * ((n - T - 1) / K), so the set depends on nothing but the text, and
 * the PyTorch script reproduces it exactly. */
size_t eo_val_window_start(size_t n, int64_t T, int K, int k);

typedef struct eo_lm_config {
    const char *text;     /* a text file; NULL: the fortunes corpus */
    const char *fortunes; /* its directory (EO_FORTUNES_DIR) */
    int steps;
    int64_t context, d_model, heads, layers;
    int batch;
    float lr, weight_decay;
    uint64_t seed;
    int threads;
    int eval_every;       /* validation every N steps and at the end; 0: end only */
    int val_windows;      /* K windows of context+1 characters */
    int fused;            /* eo_attention_fused instead of eo_attention */
    int tied;             /* the head is wte itself (GPT-2's choice; eo_gpt_config.tied) */
    const char *save;     /* safetensors checkpoint or NULL */
    const char *load;     /* start from this GPT checkpoint (either layout of
                             tools/formats/gpt2.h) or NULL: its vocabulary
                             is the run's (every character of the text must
                             be in it) and its sizes must be context,
                             d_model, heads, layers */
    const char *log;      /* CSV of step, train loss, val loss or NULL */
    const char *plot;     /* SVG of the train and validation loss, or NULL */
    int quiet;
    int profile;              /* print the per-op profile (tools/train/profile.h) */
    size_t persist_mb, step_mb;
    struct eo_dist *dist; /* data-parallel world, as eo_train_config's; NULL: one process */
    int micro_batches;    /* slices per rank and step (0 or 1: one) */
    int cuda;             /* 1: parameters, optimizer state and activations on the first CUDA device */
    const struct eo_cuda_driver *cuda_driver; /* NULL: the real driver; tests pass the PTX interpreter */
    int precision;        /* EO_F32 (0, default), EO_BF16, EO_F16: tools/train/precision.h */
    /* Token data (tools/train/tokens.h) instead of characters: tokens is
     * an llm.c shard (train split), val_tokens one for validation or NULL
     * (then the last 10% of tokens is the validation split); vocab the
     * model's vocabulary, every id below it. Batches are llm.c's
     * DataLoader's (sequential windows of context+1 tokens, stride
     * batch*context), and AdamW decays 2-D parameters only (nanoGPT). */
    const char *tokens, *val_tokens;
    int vocab;
    /* Learning rate and gradients, both data kinds: cosine 1 gives a
     * cosine decay from lr to min_lr over the steps after a linear
     * warm-up of `warmup` steps (eo_lr_at, core/nn.h); 0: constant lr.
     * clip > 0 clips the global gradient norm to it. Defaults: off. */
    int cosine, warmup;
    float min_lr, clip;
    /* Training state, as eo_train_config's (tools/train/trainer.h):
     * --checkpoint FILE every checkpoint_every steps, --resume FILE,
     * --stop-after N. One process only. */
    const char *checkpoint;
    int checkpoint_every;
    const char *resume;
    int stop_after;
} eo_lm_config;

typedef struct eo_lm_result {
    double val_loss;      /* nats/char (nats/token on token data) at the end */
    double train_loss;    /* mean of the last eval_every steps (or all) */
    double ms_per_step;   /* training steps only, mean */
    int vocab;
    size_t train_chars, val_chars; /* characters or tokens per split */
    int64_t params;
    size_t step_high;     /* the step arena's high-water mark, bytes (device arena on CUDA) */
    int64_t skipped_steps;/* f16: steps the loss scaler skipped */
} eo_lm_result;

/* The README's defaults: 1000 steps, context 64, d_model 128, 4 heads, 4
 * layers, batch 32, AdamW lr 1e-3 wd 0.01, seed 1, 2 threads. */
void eo_lm_defaults(eo_lm_config *c);

eo_status eo_lm_train_run(const eo_lm_config *c, eo_lm_result *r, FILE *out, char *err,
                          size_t errlen);

#endif
