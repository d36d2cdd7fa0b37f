/* tools/train/eo-train.c — the training program.
 *
 *   eo-train                       MLP 784-256-10 on Fashion-MNIST, defaults
 *   eo-train --model cnn           the convolutional model
 *   eo-train --load m.safetensors --eval    evaluate a checkpoint only
 *   eo-train --model vit           a small Vision Transformer, 1 epoch
 *   eo-train --model gpt           a character-level GPT on the fortunes
 *                                  corpus (or --text FILE); see eo-sample
 *   eo-train --model gpt2 --tokens train.bin --val-tokens val.bin
 *                                  GPT-2 124M on llm.c's token shards
 *
 * Options are GNU style (getopt_long): --opt=value or --opt value, -h.
 * Run with --help for every option. The defaults are the figures quoted in
 * README.md. Under `mpirun -np N` it runs one rank per process (see
 * tools/dist/README.md). */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>
#include "core/nn.h"
#include "tools/cli/args.h"
#include "tools/dist/dist.h"
#include "tools/formats/gpt2.h"
#include "tools/formats/safetensors.h"
#include "tools/train/arena_size.h"
#include "tools/train/gpt_limits.h"
#include "tools/train/precision.h"
#include "tools/train/textlm.h"
#include "tools/train/tokens.h"
#include "tools/train/trainer.h"

/* Bounds far above any sensible run; they turn a typo into a message. */
#define MAX_EPOCHS 100000
#define MAX_BATCH 65536
#define MAX_THREADS 1024
#define MAX_STEPS 2000000000

/* ---- data parallelism (tools/dist/) -----------------------------------------
 * Kept apart from the rest of the option parsing so either can change
 * alone: both option tables end with DIST_OPTIONS, and dist_option()
 * handles their codes. */
typedef struct dist_opts {
    int mode;  /* --dist auto|mpi|none: index into dist_modes */
    int micro; /* --micro-batches N */
    int zero;  /* --zero 0|1 */
} dist_opts;

static const char *const dist_modes[] = {"auto", "mpi", "none"};

static const char dist_usage[] =
    "      --dist auto|mpi|none  one rank per process under mpirun (auto: when started by it)\n"
    "      --micro-batches N  run each rank's share of a batch as N slices in turn, adding\n"
    "                         their gradients (1); one process with N gives the same\n"
    "                         result as N ranks\n"
    "      --zero 0|1         1: ZeRO-1, AdamW's state sharded across the ranks (CPU,\n"
    "                         image models, no --clip); the same result as 0\n";

enum { O_DIST = 1000, O_MICRO, O_ZERO };

/* --checkpoint / --checkpoint-every / --resume / --stop-after, the same
 * for every model (tools/formats/train_state.h). */
typedef struct {
    const char *checkpoint, *resume;
    int every;
    int stop_after;
} resume_opts;
enum { O_CHECKPOINT = 1100, O_CHECKPOINT_EVERY, O_RESUME, O_STOP_AFTER };
#define RESUME_OPTIONS                                                                    \
    {"checkpoint", required_argument, NULL, O_CHECKPOINT},                                \
    {"checkpoint-every", required_argument, NULL, O_CHECKPOINT_EVERY},                    \
    {"resume", required_argument, NULL, O_RESUME},                                        \
    {"stop-after", required_argument, NULL, O_STOP_AFTER}
static const char resume_usage[] =
    "      --checkpoint FILE  the whole training state (weights, optimizer state, step,\n"
    "                         data position, random and loss-scaler state, settings) as\n"
    "                         safetensors, written atomically (experimental)\n"
    "      --checkpoint-every N  write it after every N steps\n"
    "      --resume FILE      continue the run that wrote FILE, bit for bit (the same\n"
    "                         options; --log continues its log)\n"
    "      --stop-after N     stop after N steps in all (writing --checkpoint) without\n"
    "                         changing the schedule: a planned pause\n";

/* 1: one of the options above, -1: a bad value (reported), 0: another. */
static int resume_option(resume_opts *r, int code, const char *v)
{
    switch (code) {
    case O_CHECKPOINT: r->checkpoint = v; return 1;
    case O_RESUME: r->resume = v; return 1;
    case O_CHECKPOINT_EVERY:
        return eo_arg_int_range("--checkpoint-every", v, 1, 2000000000, &r->every) ? 1 : -1;
    case O_STOP_AFTER:
        return eo_arg_int_range("--stop-after", v, 1, 2000000000, &r->stop_after) ? 1 : -1;
    default: return 0;
    }
}

/* The combinations that cannot work, refused before anything runs. */
static int resume_check(const resume_opts *r, const char *load, int zero)
{
    if (r->every && !r->checkpoint) {
        fprintf(stderr, "eo-train: --checkpoint-every needs --checkpoint FILE\n");
        return 0;
    }
    if (r->resume && load) {
        fprintf(stderr, "eo-train: --resume continues a run (its weights included): it takes no "
                        "--load\n");
        return 0;
    }
    if (zero && (r->checkpoint || r->resume)) {
        fprintf(stderr, "eo-train: --checkpoint and --resume do not support --zero 1 yet (each "
                        "rank holds a shard of the optimizer state)\n");
        return 0;
    }
    return 1;
}
#define DIST_OPTIONS                                                                      \
    {"dist", required_argument, NULL, O_DIST},                                            \
    {"micro-batches", required_argument, NULL, O_MICRO},                                  \
    {"zero", required_argument, NULL, O_ZERO}

/* 1: the option was a data-parallel one, 0: not one, -1: a bad value
 * (reported). */
static int dist_option(dist_opts *d, int code, const char *v)
{
    if (code == O_DIST)
        return eo_arg_choice("--dist", v, dist_modes, 3, &d->mode) ? 1 : -1;
    if (code == O_MICRO)
        return eo_arg_int_range("--micro-batches", v, 1, 1 << 20, &d->micro) ? 1 : -1;
    if (code == O_ZERO)
        return eo_arg_int_range("--zero", v, 0, 1, &d->zero) ? 1 : -1;
    return 0;
}

/* Join the world before training; 0 on success. */
static int dist_start(eo_dist *w, const dist_opts *d)
{
    char err[512];
    if (eo_dist_init(w, dist_modes[d->mode], err, sizeof err) != EO_OK) {
        fprintf(stderr, "eo-train: %s\n", err);
        return -1;
    }
    return 0;
}

/* A failure on one rank: say which, and stop the others (they would
 * wait in the next collective). */
static void dist_fail(eo_dist *w, const char *err, eo_status s)
{
    if (w->size > 1)
        fprintf(stderr, "eo-train (rank %d of %d): %s (%s)\n", w->rank, w->size, err,
                eo_status_name(s));
    else
        fprintf(stderr, "eo-train: %s (%s)\n", err, eo_status_name(s));
    eo_dist_abort(w, 1);
}

static void usage(FILE *f)
{
    fprintf(f,
            "usage: eo-train [options]\n"
            "Train a classifier on Fashion-MNIST (or, with --model gpt, a character GPT).\n"
            "\n"
            "  -m, --model mlp|cnn|vit|gpt|gpt2  network (default mlp, or the one --load's\n"
            "                         file names); gpt, gpt2: see eo-train --model gpt --help\n"
            "      --epochs N         passes over the training set (mlp 15, cnn 4, vit 1)\n"
            "      --steps N          stop after N >= 1 steps in all, then evaluate (off)\n"
            "      --eval             only evaluate the --load checkpoint on the test set\n"
            "  -b, --batch N          images per step (128)\n"
            "      --lr F             peak learning rate (mlp and cnn 2e-3, vit 1e-3)\n"
            "      --optimizer sgd|adamw  (adamw)\n"
            "      --momentum F       SGD momentum (0.9)\n"
            "      --nesterov         Nesterov momentum for SGD\n"
            "      --weight-decay F   (0; vit 0.01)\n"
            "      --schedule constant|step|cosine   learning-rate schedule (cosine)\n"
            "      --warmup N         cosine warm-up steps (0)\n"
            "      --clip F           clip the global gradient norm to F (off)\n"
            "      --seed N           initialisation and shuffling seed (1)\n"
            "  -j, --threads N        worker threads (2)\n"
            "      --data DIR         IDX files (/usr/share/datasets/fashion-mnist)\n"
            "      --subset N         train on the first N images only\n"
            "      --test-subset N    evaluate on the first N test images only\n"
            "      --save FILE        write the weights (safetensors) at the end\n"
            "      --load FILE        start from these weights (safetensors)\n"
            "      --log FILE         per-step loss as CSV\n"
            "      --plot FILE        loss and accuracy curves as SVG (eo-train-MODEL.svg)\n"
            "      --device cpu|cuda  where tensors live (cpu)\n"
            "      --persist-mb N     persistent arena (weights, gradients, optimizer state)\n"
            "                         in MiB (default: measured from the model and batch)\n"
            "      --step-mb N        step arena (activations, tape, scratch) in MiB\n"
            "                         (default: measured); too small: the message says what\n"
            "                         is needed\n"
            "      --precision f32|bf16|f16  arithmetic of the forward and backward (f32):\n"
            "                         bf16/f16 autocast matmul and conv to 16 bits with f32\n"
            "                         master weights and AdamW state; f16 adds dynamic loss\n"
            "                         scaling (steps with inf/NaN gradients are skipped)\n"
            "  -q, --quiet            no progress bar\n"
            "      --profile          after training, time per op kind and pass (forward\n"
            "                         call, backward rule) and its share of the step\n""%s%s"
            "  -h, --help             this text\n"
            "      --version          the program's and the library's version\n",
            dist_usage, resume_usage);
}

static void usage_gpt(FILE *f)
{
    fprintf(f,
            "usage: eo-train --model gpt|gpt2 [options]\n"
            "Train a GPT on characters (sample from it with eo-sample) or on token shards.\n"
            "--model gpt2 is --model gpt with GPT-2 124M's sizes (12 layers, 12 heads,\n"
            "d_model 768, context 1024, vocabulary 50257, fused attention) and nanoGPT's\n"
            "recipe (lr 6e-4, weight decay 0.1 on 2-D weights, --clip 1, cosine to lr/10);\n"
            "it needs --tokens.\n"
            "\n"
            "      --tokens FILE      train on an llm.c token shard (uint16 ids after a 1 KiB\n"
            "                         header) instead of characters; batches are llm.c's:\n"
            "                         consecutive windows, stride batch x context\n"
            "      --val-tokens FILE  validation shard (default: the last 10%% of --tokens)\n"
            "      --vocab N          vocabulary of the token ids, each must be below it (50257)\n"
            "      --text FILE        train on this text (default: the fortunes corpus)\n"
            "      --fortunes DIR     where the fortunes are (" EO_FORTUNES_DIR ")\n"
            "      --steps N          training steps (1000)\n"
            "      --context N, --ctx N  characters or tokens of context (64; gpt2 1024)\n"
            "      --d-model N        width (128)\n"
            "      --heads N          attention heads, dividing --d-model (4)\n"
            "      --layers N         transformer blocks (4)\n"
            "  -b, --batch N          windows per step (32)\n"
            "      --lr F             AdamW (peak) learning rate (1e-3)\n"
            "      --weight-decay F   (0.01); on token data only 2-D weights (matmul weights,\n"
            "                         embeddings) decay, biases and LayerNorm do not\n"
            "      --schedule constant|cosine  learning rate (constant; gpt2 cosine)\n"
            "      --warmup N         cosine: linear warm-up steps (0)\n"
            "      --min-lr F         cosine: the rate at the last step (lr / 10)\n"
            "      --clip F           clip the global gradient norm to F (off; gpt2 1)\n"
            "      --eval-every N     validation loss every N steps (100; 0: at the end)\n"
            "      --val-windows N    validation windows of context+1 chars or tokens (512;\n"
            "                         gpt2 20)\n"
            "      --fused            fused attention instead of the composed one\n"
            "      --seed N           initialisation and batch seed (1)\n"
            "  -j, --threads N        worker threads (2)\n"
            "      --device cpu|cuda  where tensors live (cpu)\n"
            "      --persist-mb N     persistent arena (weights, gradients, optimizer state)\n"
            "                         in MiB (default: measured from the model and batch)\n"
            "      --step-mb N        step arena (activations, tape, scratch) in MiB\n"
            "                         (default: measured); too small: the message says what\n"
            "                         is needed\n"
            "      --precision f32|bf16|f16  as for the image models (f32); f16 with loss scaling\n"
            "      --save FILE        checkpoint (safetensors, vocabulary and sizes in the metadata)\n"
            "      --load FILE        start from this checkpoint of eo-train --model gpt (EveryO's\n"
            "                         or Hugging Face's GPT-2 layout, eo-safetensors convert-gpt2):\n"
            "                         its sizes and characters replace --context ... --layers\n"
            "      --log FILE         per-step CSV: step, train loss, validation loss\n"
            "      --plot FILE        the loss curves as SVG (eo-train-gpt.svg)\n"
            "  -q, --quiet            no progress lines\n"
            "      --profile          after training, time per op kind and pass (forward\n"
            "                         call, backward rule) and its share of the step\n""%s%s"
            "  -h, --help             this text\n"
            "      --version          the program's and the library's version\n", dist_usage,
            resume_usage);
}

/* Long-only options get codes above the character range. */
enum {
    O_EPOCHS = 256, O_STEPS, O_EVAL, O_LR, O_OPTIMIZER, O_MOMENTUM, O_NESTEROV, O_WD,
    O_SCHEDULE, O_WARMUP, O_CLIP, O_SEED, O_DATA, O_SUBSET, O_TEST_SUBSET, O_SAVE, O_LOAD,
    O_LOG, O_PLOT, O_DEVICE, O_VERSION, O_TEXT, O_FORTUNES, O_CONTEXT, O_DMODEL, O_HEADS,
    O_LAYERS, O_EVAL_EVERY, O_VAL_WINDOWS, O_FUSED, O_PROFILE, O_PERSIST_MB, O_STEP_MB,
    O_PRECISION, O_TOKENS, O_VAL_TOKENS, O_VOCAB, O_MIN_LR,
};

static const char short_opts[] = "m:b:j:qh";

static const struct option image_opts[] = {
    {"model", required_argument, NULL, 'm'},       {"epochs", required_argument, NULL, O_EPOCHS},
    {"steps", required_argument, NULL, O_STEPS},   {"eval", no_argument, NULL, O_EVAL},
    {"batch", required_argument, NULL, 'b'},       {"lr", required_argument, NULL, O_LR},
    {"optimizer", required_argument, NULL, O_OPTIMIZER},
    {"momentum", required_argument, NULL, O_MOMENTUM},
    {"nesterov", no_argument, NULL, O_NESTEROV},   {"weight-decay", required_argument, NULL, O_WD},
    {"schedule", required_argument, NULL, O_SCHEDULE},
    {"warmup", required_argument, NULL, O_WARMUP}, {"clip", required_argument, NULL, O_CLIP},
    {"seed", required_argument, NULL, O_SEED},     {"threads", required_argument, NULL, 'j'},
    {"data", required_argument, NULL, O_DATA},     {"subset", required_argument, NULL, O_SUBSET},
    {"test-subset", required_argument, NULL, O_TEST_SUBSET},
    {"save", required_argument, NULL, O_SAVE},     {"load", required_argument, NULL, O_LOAD},
    {"log", required_argument, NULL, O_LOG},       {"plot", required_argument, NULL, O_PLOT},
    {"device", required_argument, NULL, O_DEVICE}, {"quiet", no_argument, NULL, 'q'},
    {"profile", no_argument, NULL, O_PROFILE},
    {"persist-mb", required_argument, NULL, O_PERSIST_MB},
    {"step-mb", required_argument, NULL, O_STEP_MB},
    {"precision", required_argument, NULL, O_PRECISION},
    {"help", no_argument, NULL, 'h'},              {"version", no_argument, NULL, O_VERSION},
    DIST_OPTIONS,
    RESUME_OPTIONS,
    {NULL, 0, NULL, 0},
};

static const struct option gpt_opts[] = {
    {"model", required_argument, NULL, 'm'},       {"text", required_argument, NULL, O_TEXT},
    {"fortunes", required_argument, NULL, O_FORTUNES},
    {"steps", required_argument, NULL, O_STEPS},   {"context", required_argument, NULL, O_CONTEXT},
    {"ctx", required_argument, NULL, O_CONTEXT},
    {"tokens", required_argument, NULL, O_TOKENS},
    {"val-tokens", required_argument, NULL, O_VAL_TOKENS},
    {"vocab", required_argument, NULL, O_VOCAB},
    {"schedule", required_argument, NULL, O_SCHEDULE},
    {"warmup", required_argument, NULL, O_WARMUP}, {"min-lr", required_argument, NULL, O_MIN_LR},
    {"clip", required_argument, NULL, O_CLIP},
    {"d-model", required_argument, NULL, O_DMODEL},
    {"heads", required_argument, NULL, O_HEADS},   {"layers", required_argument, NULL, O_LAYERS},
    {"batch", required_argument, NULL, 'b'},       {"lr", required_argument, NULL, O_LR},
    {"weight-decay", required_argument, NULL, O_WD},
    {"eval-every", required_argument, NULL, O_EVAL_EVERY},
    {"val-windows", required_argument, NULL, O_VAL_WINDOWS},
    {"fused", no_argument, NULL, O_FUSED},         {"seed", required_argument, NULL, O_SEED},
    {"threads", required_argument, NULL, 'j'},     {"save", required_argument, NULL, O_SAVE},
    {"load", required_argument, NULL, O_LOAD},
    {"log", required_argument, NULL, O_LOG},       {"plot", required_argument, NULL, O_PLOT},
    {"device", required_argument, NULL, O_DEVICE}, {"quiet", no_argument, NULL, 'q'},
    {"profile", no_argument, NULL, O_PROFILE},
    {"persist-mb", required_argument, NULL, O_PERSIST_MB},
    {"step-mb", required_argument, NULL, O_STEP_MB},
    {"precision", required_argument, NULL, O_PRECISION},
    {"help", no_argument, NULL, 'h'},              {"version", no_argument, NULL, O_VERSION},
    DIST_OPTIONS,
    RESUME_OPTIONS,
    {NULL, 0, NULL, 0},
};

/* --precision f32|bf16|f16 into an eo_dtype; 0 (reported) for another value. */
static int precision_option(const char *a, const char *v, int *dtype)
{
    static const char *const names[] = {"f32", "bf16", "f16"};
    int k;
    if (!eo_arg_choice(a, v, names, 3, &k))
        return 0;
    *dtype = eo_precision_parse(names[k]);
    return 1;
}

/* The name getopt_long matched, for messages: "--batch" or "-b". */
static const char *opt_name(const struct option *table, int code)
{
    static char buf[40];
    for (const struct option *o = table; o->name; o++)
        if (o->val == code) {
            snprintf(buf, sizeof buf, "--%s", o->name);
            return buf;
        }
    snprintf(buf, sizeof buf, "-%c", code);
    return buf;
}

/* --model gpt2: GPT-2 124M's sizes (Radford et al. 2019, the smallest of
 * the four) and nanoGPT's training recipe for it (train.py: lr 6e-4,
 * weight decay 0.1, clip 1.0, cosine decay to lr/10). */
static void gpt2_preset(eo_lm_config *c)
{
    c->layers = 12;
    c->heads = 12;
    c->d_model = 768;
    c->context = 1024;
    c->vocab = 50257;
    c->lr = 6e-4f;
    c->weight_decay = 0.1f;
    c->clip = 1.0f;
    c->cosine = 1;
    c->batch = 4;
    /* FlashAttention-style: at context 1024 the composed attention keeps
     * every [T, T] score matrix of the step (about 20 GiB at batch 4). */
    c->fused = 1;
    c->tied = 1; /* lm_head is wte, as in GPT-2: 124 M parameters, not 163 M */
    c->val_windows = 20; /* llm.c's train_gpt2: 5 validation batches of 4 */
    c->plot = "eo-train-gpt2.svg";
}

/* --load's sizes replace the options': the checkpoint's GPT is trained
 * further. 0, or -1 with err set (not a GPT file, no character
 * vocabulary). */
static int gpt_sizes_from(eo_lm_config *c, char *err, size_t errlen)
{
    eo_st_file f;
    eo_gpt2_info info;
    if (eo_st_read(c->load, &f, err, errlen) != EO_OK)
        return -1;
    int rc = 0;
    const char *model = eo_st_meta_get(&f, "model");
    int chars = eo_st_meta_get(&f, "vocab") && model && strcmp(model, "gpt") == 0;
    /* without eo-train's metadata the head count only matters for the message */
    if (eo_gpt2_inspect(&f, c->load, chars ? 0 : 1, &info, err, errlen) != EO_OK)
        rc = -1;
    else if (!chars) {
        snprintf(err, errlen, "%s holds a GPT-2 model (n_layer %lld, n_embd %lld, vocab %lld) "
                              "without eo-train's character vocabulary (metadata model=gpt, "
                              "vocab): GPT-2's BPE tokenizer is not in EveryO yet",
                 c->load, (long long)info.cfg.layers, (long long)info.cfg.d_model,
                 (long long)info.cfg.vocab);
        rc = -1;
    } else {
        c->context = info.cfg.context;
        c->d_model = info.cfg.d_model;
        c->heads = info.cfg.heads;
        c->layers = info.cfg.layers;
    }
    eo_st_close(&f);
    return rc;
}

static int main_gpt(int argc, char **argv, int gpt2)
{
    eo_lm_config c;
    eo_lm_defaults(&c);
    c.plot = "eo-train-gpt.svg";
    c.vocab = 50257; /* GPT-2's, for --tokens without --vocab */
    if (gpt2)
        gpt2_preset(&c);
    float min_lr = -1; /* lr / 10 unless given */
    static const char *const schedules[] = {"constant", "cosine"};
    dist_opts dopt = {0, 1, 0};
    resume_opts ropt = {0};
    static const char *const devices[] = {"cpu", "cuda"};
    int o, vocab_given = 0;
    optind = 0; /* GNU getopt: start over, re-reading the environment */
    while ((o = getopt_long(argc, argv, short_opts, gpt_opts, NULL)) != -1) {
        const char *a = opt_name(gpt_opts, o), *v = optarg;
        unsigned long long u;
        int ok = 1;
        switch (o) {
        case 'h': usage_gpt(stdout); return 0;
        case O_VERSION: eo_args_version(stdout); return 0;
        case 'm': break; /* chosen before */
        case O_TEXT: c.text = v; break;
        case O_FORTUNES: c.fortunes = v; break;
        case O_STEPS: ok = eo_arg_int_range(a, v, 1, MAX_STEPS, &c.steps); break;
        case O_CONTEXT: ok = eo_arg_i64_range(a, v, 1, EO_GPT_MAX_CONTEXT, &c.context); break;
        case O_DMODEL: ok = eo_arg_i64_range(a, v, 1, EO_GPT_MAX_D_MODEL, &c.d_model); break;
        case O_HEADS: ok = eo_arg_i64_range(a, v, 1, EO_GPT_MAX_D_MODEL, &c.heads); break;
        case O_LAYERS: ok = eo_arg_i64_range(a, v, 1, EO_GPT_MAX_LAYERS, &c.layers); break;
        case 'b': ok = eo_arg_int_range(a, v, 1, EO_GPT_MAX_BATCH, &c.batch); break;
        case O_LR: ok = eo_arg_float(a, v, &c.lr); break;
        case O_WD: ok = eo_arg_float(a, v, &c.weight_decay); break;
        case O_EVAL_EVERY: ok = eo_arg_int_range(a, v, 0, MAX_STEPS, &c.eval_every); break;
        case O_VAL_WINDOWS: ok = eo_arg_int_range(a, v, 1, 1 << 20, &c.val_windows); break;
        case O_FUSED: c.fused = 1; break;
        case O_SEED: ok = eo_arg_u64(a, v, &u); c.seed = u; break;
        case 'j': ok = eo_arg_int_range(a, v, 1, MAX_THREADS, &c.threads); break;
        case O_SAVE: c.save = v; break;
        case O_LOAD: c.load = v; break;
        case O_LOG: c.log = v; break;
        case O_PLOT: c.plot = v; break;
        case 'q': c.quiet = 1; break;
        case O_DEVICE: ok = eo_arg_choice(a, v, devices, 2, &c.cuda); break;
        case O_PROFILE: c.profile = 1; break;
        case O_PERSIST_MB: ok = eo_arg_arena_mb(a, v, &c.persist_mb); break;
        case O_STEP_MB: ok = eo_arg_arena_mb(a, v, &c.step_mb); break;
        case O_PRECISION: ok = precision_option(a, v, &c.precision); break;
        case O_TOKENS: c.tokens = v; break;
        case O_VAL_TOKENS: c.val_tokens = v; break;
        case O_VOCAB: ok = eo_arg_int_range(a, v, 1, 65536, &c.vocab); vocab_given = 1; break;
        case O_SCHEDULE: ok = eo_arg_choice(a, v, schedules, 2, &c.cosine); break;
        case O_WARMUP: ok = eo_arg_int_range(a, v, 0, MAX_STEPS, &c.warmup); break;
        case O_MIN_LR: ok = eo_arg_float(a, v, &min_lr); break;
        case O_CLIP: ok = eo_arg_float(a, v, &c.clip); break;
        case O_DIST:
        case O_MICRO: case O_ZERO: ok = dist_option(&dopt, o, v) > 0; break;
        case O_CHECKPOINT: case O_CHECKPOINT_EVERY: case O_RESUME:
        case O_STOP_AFTER: ok = resume_option(&ropt, o, v) > 0; break;
        default: return eo_args_try_help(); /* getopt_long named the problem */
        }
        if (!ok)
            return 2;
    }
    if (!eo_args_no_operands(argc, argv))
        return 2;
    if (!(c.lr > 0)) {
        fprintf(stderr, "eo-train: --lr must be > 0\n");
        return 2;
    }
    if (c.weight_decay < 0 || c.clip < 0 || (min_lr != -1 && !(min_lr >= 0))) {
        fprintf(stderr, "eo-train: --weight-decay, --clip and --min-lr must be >= 0\n");
        return 2;
    }
    if (gpt2 && !c.tokens) {
        fprintf(stderr, "eo-train: --model gpt2 trains on token shards: give --tokens FILE (llm.c's "
                        "format; --model gpt trains on characters)\n");
        return 2;
    }
    if (!c.tokens && (c.val_tokens || vocab_given)) {
        fprintf(stderr, "eo-train: --%s needs --tokens FILE\n",
                c.val_tokens ? "val-tokens" : "vocab");
        return 2;
    }
    if (c.tokens && c.text) {
        fprintf(stderr, "eo-train: --tokens and --text: give one kind of data\n");
        return 2;
    }
    if (c.tokens && c.load) {
        /* --load reads a character vocabulary (textlm.c); token ids need
         * the checkpoint's vocabulary size checked against --vocab first. */
        fprintf(stderr, "eo-train: --load with --tokens is not supported yet (--load continues "
                        "a character GPT)\n");
        return 2;
    }
    c.min_lr = min_lr != -1 ? min_lr : c.lr / 10;
    if (c.cosine && c.warmup > c.steps) {
        fprintf(stderr, "eo-train: --warmup %d is more than --steps %d\n", c.warmup, c.steps);
        return 2;
    }
    if (!c.cosine && (c.warmup || min_lr != -1)) {
        fprintf(stderr, "eo-train: --warmup and --min-lr shape the cosine schedule: add "
                        "--schedule cosine\n");
        return 2;
    }
    char err[512];
    if (c.load && gpt_sizes_from(&c, err, sizeof err) != 0) {
        fprintf(stderr, "eo-train: --load: %s\n", err);
        return 1;
    }
    /* The characters are not known before the text is read: count them as
     * 1, so the estimate stays a lower bound; token data gives --vocab. */
    eo_gpt_sizes sz = {c.context, c.d_model, c.heads, c.layers, c.tokens ? c.vocab : 1, c.batch,
                       1};
    /* Without --persist-mb / --step-mb the arenas are measured; the most
     * either can be is the machine's memory. */
    size_t mem = eo_memory_bytes();
    if (!eo_gpt_sizes_check_vocab(&sz, EO_GPT_MAX_TOKEN_VOCAB,
                                  c.persist_mb ? c.persist_mb << 20 : mem,
                                  c.step_mb ? c.step_mb << 20 : mem, 1, err, sizeof err)) {
        fprintf(stderr, "eo-train: %s%s\n", err,
                c.persist_mb && c.step_mb ? "" : " (the machine's memory, the most a measured "
                                                  "arena can be)");
        return 2;
    }
    if (!resume_check(&ropt, c.load, dopt.zero))
        return 2;
    c.checkpoint = ropt.checkpoint;
    c.checkpoint_every = ropt.every;
    c.resume = ropt.resume;
    c.stop_after = ropt.stop_after;
    eo_lm_result r;
    eo_dist world;
    if (dist_start(&world, &dopt) != 0)
        return 1;
    c.dist = &world;
    c.micro_batches = dopt.micro;
    if (dopt.zero) {
        fprintf(stderr, "eo-train: --zero 1 is implemented for the image models, not gpt\n");
        eo_dist_finalize(&world);
        return 2;
    }
    eo_status s = eo_lm_train_run(&c, &r, stdout, err, sizeof err);
    if (s != EO_OK) {
        dist_fail(&world, err, s);
        eo_dist_finalize(&world);
        return 1;
    }
    int root = eo_dist_root(&world);
    eo_dist_finalize(&world);
    if (!root)
        return 0;
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    printf("done: validation loss %.4f nats/%s after %d steps (%s), %.1f ms/step, peak "
           "resident %.1f MiB\n", r.val_loss, c.tokens ? "token" : "char", c.steps, eo_precision_name(c.precision),
           r.ms_per_step, ru.ru_maxrss / 1024.0);
    return 0;
}

/* The model a checkpoint says it holds ("model" in its metadata), so
 * `--load m.safetensors` needs no --model and a wrong one is caught
 * before the weights are compared name by name. NULL when the file has
 * none; 0 returned when it cannot be read (message printed). */
static int checkpoint_model(const char *path, char *model, size_t len)
{
    char err[512];
    eo_st_file f;
    if (eo_st_read(path, &f, err, sizeof err) != EO_OK) {
        fprintf(stderr, "eo-train: --load: %s\n", err);
        return 0;
    }
    const char *m = eo_st_meta_get(&f, "model");
    snprintf(model, len, "%s", m ? m : "");
    eo_st_close(&f);
    return 1;
}

int main(int argc, char **argv)
{
    eo_args_program("eo-train");
    /* First pass, silent: which model (it decides the option set and the
     * defaults), and --load (its file may name the model). */
    const char *model = NULL, *load = NULL;
    int o;
    /* Both option sets at once, so every option consumes its value. */
    struct option all[sizeof image_opts / sizeof *image_opts + sizeof gpt_opts / sizeof *gpt_opts];
    size_t n = 0;
    for (const struct option *q = image_opts; q->name; q++)
        all[n++] = *q;
    for (const struct option *q = gpt_opts; q->name; q++)
        all[n++] = *q;
    all[n] = (struct option){NULL, 0, NULL, 0};
    opterr = 0;
    while ((o = getopt_long(argc, argv, short_opts, all, NULL)) != -1)
        if (o == 'm')
            model = optarg;
        else if (o == O_LOAD)
            load = optarg;
    opterr = 1;
    char file_model[32] = "";
    if (load && !checkpoint_model(load, file_model, sizeof file_model))
        return 1;
    if (file_model[0] && model && strcmp(model, file_model) != 0) {
        fprintf(stderr, "eo-train: --model %s, but %s holds a '%s' model\n", model, load,
                file_model);
        return 2;
    }
    if (!model)
        model = file_model[0] ? file_model : "mlp";
    if (strcmp(model, "gpt") == 0 || strcmp(model, "gpt2") == 0) /* --load: a GPT checkpoint, either layout */
        return main_gpt(argc, argv, strcmp(model, "gpt2") == 0);
    int kind = eo_model_parse(model);
    if (kind < 0) {
        fprintf(stderr, "eo-train: --model: '%s' is not one of mlp, cnn, vit, gpt, gpt2\n", model);
        return eo_args_try_help();
    }
    eo_train_config c;
    eo_train_defaults(&c, (eo_model_kind)kind);
    char plot[256];
    snprintf(plot, sizeof plot, "eo-train-%s.svg", model);
    c.plot = plot;
    static const char *const optimizers[] = {"sgd", "adamw"};
    static const char *const schedules[] = {"constant", "step", "cosine"};
    static const int schedule_kind[] = {EO_LR_CONSTANT, EO_LR_STEP, EO_LR_COSINE};
    static const char *const devices[] = {"cpu", "cuda"};
    int eval_only = 0, epochs_given = 0;
    dist_opts dopt = {0, 1, 0};
    resume_opts ropt = {0};
    optind = 0;
    while ((o = getopt_long(argc, argv, short_opts, image_opts, NULL)) != -1) {
        const char *a = opt_name(image_opts, o), *v = optarg;
        unsigned long long u = 0;
        int ok = 1, k;
        switch (o) {
        case 'h': usage(stdout); return 0;
        case O_VERSION: eo_args_version(stdout); return 0;
        case 'm': break; /* chosen above */
        case O_EPOCHS:
            ok = eo_arg_int_range(a, v, 0, MAX_EPOCHS, &c.epochs);
            if (ok && c.epochs == 0) {
                fprintf(stderr, "eo-train: --epochs: '0' trains nothing; --load FILE --eval only "
                                "evaluates\n");
                return 2;
            }
            epochs_given = 1;
            break;
        case O_STEPS: ok = eo_arg_u64(a, v, &u); c.max_steps = u;
            if (ok && (u < 1 || u > MAX_STEPS)) {
                fprintf(stderr, "eo-train: --steps: '%s' is not from 1 to %d (--eval only "
                                "evaluates)\n", v, MAX_STEPS);
                return 2;
            }
            break;
        case O_EVAL: eval_only = 1; break;
        case 'b': ok = eo_arg_int_range(a, v, 1, MAX_BATCH, &c.batch); break;
        case O_LR: ok = eo_arg_float(a, v, &c.lr); break;
        case O_OPTIMIZER: ok = eo_arg_choice(a, v, optimizers, 2, &c.adamw); break;
        case O_MOMENTUM: ok = eo_arg_float(a, v, &c.momentum); break;
        case O_NESTEROV: c.nesterov = 1; break;
        case O_WD: ok = eo_arg_float(a, v, &c.weight_decay); break;
        case O_SCHEDULE: ok = eo_arg_choice(a, v, schedules, 3, &k); if (ok) c.schedule = schedule_kind[k]; break;
        case O_WARMUP: ok = eo_arg_int_range(a, v, 0, MAX_STEPS, &c.warmup); break;
        case O_CLIP: ok = eo_arg_float(a, v, &c.clip); break;
        case O_SEED: ok = eo_arg_u64(a, v, &u); c.seed = u; break;
        case 'j': ok = eo_arg_int_range(a, v, 1, MAX_THREADS, &c.threads); break;
        case O_DATA: c.data_dir = v; break;
        case O_SUBSET: ok = eo_arg_u64(a, v, &u); c.train_subset = u; break;
        case O_TEST_SUBSET: ok = eo_arg_u64(a, v, &u); c.test_subset = u; break;
        case O_SAVE: c.save = v; break;
        case O_LOAD: c.load = v; break;
        case O_LOG: c.log = v; break;
        case O_PLOT: c.plot = v; break;
        case O_DEVICE: ok = eo_arg_choice(a, v, devices, 2, &c.cuda); break;
        case 'q': c.quiet = 1; break;
        case O_PROFILE: c.profile = 1; break;
        case O_PERSIST_MB: ok = eo_arg_arena_mb(a, v, &c.persist_mb); break;
        case O_STEP_MB: ok = eo_arg_arena_mb(a, v, &c.step_mb); break;
        case O_PRECISION: ok = precision_option(a, v, &c.precision); break;
        case O_DIST:
        case O_MICRO: case O_ZERO: ok = dist_option(&dopt, o, v) > 0; break;
        case O_CHECKPOINT: case O_CHECKPOINT_EVERY: case O_RESUME:
        case O_STOP_AFTER: ok = resume_option(&ropt, o, v) > 0; break;
        default: return eo_args_try_help(); /* getopt_long named the problem */
        }
        if (!ok)
            return 2;
    }
    if (!eo_args_no_operands(argc, argv))
        return 2;
    if (!(c.lr > 0)) {
        fprintf(stderr, "eo-train: --lr must be > 0\n");
        return 2;
    }
    if (c.weight_decay < 0 || c.momentum < 0 || c.clip < 0) {
        fprintf(stderr, "eo-train: --weight-decay, --momentum and --clip must be >= 0\n");
        return 2;
    }
    if (eval_only) {
        if (!c.load) {
            fprintf(stderr, "eo-train: --eval needs --load FILE (the weights to evaluate)\n");
            return 2;
        }
        if (epochs_given || c.max_steps || c.save || c.log) {
            fprintf(stderr, "eo-train: --eval only evaluates: it takes no --epochs, --steps, "
                            "--save or --log\n");
            return 2;
        }
        c.epochs = 0; /* the trainer's "evaluate only" */
    }
    if (!resume_check(&ropt, c.load, dopt.zero))
        return 2;
    c.checkpoint = ropt.checkpoint;
    c.checkpoint_every = ropt.every;
    c.resume = ropt.resume;
    c.stop_after = (size_t)ropt.stop_after;
    eo_train_result r;
    char err[512];
    eo_dist world;
    if (dist_start(&world, &dopt) != 0)
        return 1;
    c.dist = &world;
    c.micro_batches = dopt.micro;
    c.zero = dopt.zero;
    c.cuda_device = world.local_rank; /* one GPU per rank */
    eo_status s = eo_train_run(&c, &r, stdout, err, sizeof err);
    if (s != EO_OK) {
        dist_fail(&world, err, s);
        eo_dist_finalize(&world);
        return 1;
    }
    int root = eo_dist_root(&world);
    eo_dist_finalize(&world);
    if (!root)
        return 0;
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    if (eval_only)
        printf("done: test accuracy %.2f%%, peak resident %.1f MiB\n", 100.0 * r.test_accuracy,
               ru.ru_maxrss / 1024.0);
    else
        printf("done: test accuracy %.2f%%, %.2f s/epoch, %.1f ms/step, %.0f images/s, peak "
               "resident %.1f MiB\n", 100.0 * r.test_accuracy, r.seconds_per_epoch, r.ms_per_step,
               r.images_per_second, ru.ru_maxrss / 1024.0);
    return 0;
}
