/* tools/train/trainer.h — train an image classifier on Fashion-MNIST (or any
 * IDX data of the same shape) from a configuration: the whole main job in
 * one call, used by eo-train and by the fast training test. */
#ifndef EO_TOOLS_TRAINER_H
#define EO_TOOLS_TRAINER_H

#include <stdint.h>
#include <stdio.h>
#include "core/everyo.h"
#include "tools/train/models.h"

typedef struct eo_train_config {
    eo_model_kind model;
    const char *data_dir;     /* holds {train,t10k}-{images-idx3,labels-idx1}-ubyte[.gz] */
    int epochs;
    int batch;
    float lr;
    int adamw;                /* 1: AdamW, 0: SGD */
    float momentum;           /* SGD */
    int nesterov;             /* SGD */
    float weight_decay;
    int schedule;             /* eo_lr_kind */
    int warmup;               /* COSINE warm-up steps */
    float clip;               /* max global grad norm; 0 = off */
    uint64_t seed;
    int threads;
    size_t train_subset;      /* 0 = all */
    size_t test_subset;       /* 0 = all */
    size_t max_steps;         /* stop after this many steps in all, then evaluate; 0 = off */
    const char *save;         /* safetensors path or NULL */
    const char *load;         /* safetensors path or NULL */
    const char *log;          /* per-step CSV or NULL */
    const char *plot;         /* SVG path or NULL */
    int quiet;                /* no progress bar */
    int profile;              /* print the per-op profile (tools/train/profile.h) */
    int cuda;                 /* 1: tensors on the first CUDA device */
    const struct eo_cuda_driver *cuda_driver; /* NULL: the real driver; tests pass the PTX interpreter */
    size_t persist_mb, step_mb;
    /* Data parallelism (tools/dist/dist.h): each global batch of `batch`
     * rows is cut into size x micro_batches contiguous slices; this rank
     * runs its micro_batches slices in turn and the gradients are summed
     * over all of them. Only rank 0 prints and writes files. */
    struct eo_dist *dist;     /* NULL: one process */
    int micro_batches;        /* slices per rank and step (0 or 1: the whole share at once) */
    int cuda_device;          /* device number when cuda (eo-train: the rank on its machine) */
    const struct eo_nccl_api *nccl; /* CUDA across ranks; NULL: dlopen libnccl.so.2 */
    int zero;                 /* 1: ZeRO-1 (tools/dist/dist.h): AdamW state sharded across
                               * the ranks; CPU, AdamW, no clip; bit-identical to 0 */
    int precision;            /* EO_F32 (0, the default), EO_BF16 or EO_F16: see
                               * tools/train/precision.h */
    /* Training state (tools/formats/train_state.h; experimental): every
     * checkpoint_every steps the whole state goes to `checkpoint`;
     * `resume` continues a run from such a file (the same settings, bit
     * for bit); stop_after > 0 ends the run after that many steps in all
     * (the schedule still that of the whole run), writing `checkpoint`
     * and skipping evaluation and --save: a planned stop. One process
     * (no MPI) for now. */
    const char *checkpoint;
    int checkpoint_every;
    const char *resume;
    size_t stop_after;
} eo_train_config;

typedef struct eo_train_result {
    double test_accuracy;     /* after the last epoch (or after loading, 0 epochs) */
    double last_loss;         /* mean training loss of the last epoch */
    double seconds_per_epoch; /* mean wall time of the training part of an epoch */
    double images_per_second;
    double ms_per_step;       /* mean wall time of one training step */
    size_t persist_high, step_high; /* arenas' high-water marks, bytes */
    size_t step_high_after_first;   /* step arena high-water after step 1 */
    size_t step_high_epoch1;        /* ... after every step of epoch 1 (before evaluation) */
    int64_t skipped_steps;          /* f16: steps the loss scaler skipped (inf/NaN gradients) */
    float loss_scale;               /* f16: the scale at the end */
} eo_train_result;

/* Defaults for the model: the ones README.md quotes. */
void eo_train_defaults(eo_train_config *c, eo_model_kind model);

/* After a failed run: when err says an arena of ctx ran out ("arena
 * 'step': need ..."), append which arena it was, how many bytes it needed
 * at least against the size given, and the option to raise ("the step
 * arena needs at least 3.2 MiB (3355520 bytes) here, --step-mb gives 1
 * MiB: raise --step-mb to 4 or more"); otherwise leave err alone. Shared
 * with the GPT trainer (textlm.c). */
struct eo_ctx;
void eo_train_arena_hint(const struct eo_ctx *ctx, char *err, size_t errlen);

/* Run it. Prints progress to `out` (may be NULL for silence). On failure
 * returns the status and writes a message into err. */
eo_status eo_train_run(const eo_train_config *c, eo_train_result *r, FILE *out, char *err,
                       size_t errlen);

#endif
