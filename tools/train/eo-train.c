/* tools/train/eo-train.c — the training program.
 *
 *   eo-train                       MLP 784-256-10 on Fashion-MNIST, defaults
 *   eo-train --model cnn           the convolutional model
 *   eo-train --load m.safetensors --epochs 0    evaluate a checkpoint
 *   eo-train --model vit           a small Vision Transformer, 1 epoch
 *   eo-train --model gpt           a character-level GPT on the fortunes
 *                                  corpus (or --text FILE); see eo-sample
 *
 * Run with --help for every option. The defaults are the figures quoted in
 * README.md. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>
#include "core/nn.h"
#include "tools/cli/args.h"
#include "tools/train/textlm.h"
#include "tools/train/trainer.h"

static void usage(FILE *f)
{
    fprintf(f,
            "usage: eo-train [options]\n"
            "  --model mlp|cnn|vit|gpt  network (default mlp); gpt: see --model gpt --help\n"
            "  --epochs N             passes over the training set (mlp 15, cnn 4, vit 1)\n"
            "  --steps N              stop after N steps in all, then evaluate (off)\n"
            "  --batch N              images per step (128)\n"
            "  --lr F                 peak learning rate (mlp and cnn 2e-3, vit 1e-3)\n"
            "  --optimizer sgd|adamw  (adamw)\n"
            "  --momentum F           SGD momentum (0.9); --nesterov for Nesterov\n"
            "  --weight-decay F       (0; vit 0.01)\n"
            "  --schedule constant|step|cosine   learning-rate schedule (cosine)\n"
            "  --warmup N             cosine warm-up steps (0)\n"
            "  --clip F               clip the global gradient norm to F (off)\n"
            "  --seed N               initialisation and shuffling seed (1)\n"
            "  --threads N            worker threads (2)\n"
            "  --data DIR             IDX files (/usr/share/datasets/fashion-mnist)\n"
            "  --subset N             train on the first N images only\n"
            "  --test-subset N        evaluate on the first N test images only\n"
            "  --save FILE            write the weights (safetensors) at the end\n"
            "  --load FILE            start from these weights (safetensors)\n"
            "  --log FILE             per-step loss as CSV\n"
            "  --plot FILE            loss and accuracy curves as SVG (eo-train-MODEL.svg)\n"
            "  --device cpu|cuda      where tensors live (cpu)\n"
            "  --quiet                no progress bar\n");
}

static void usage_gpt(FILE *f)
{
    fprintf(f,
            "usage: eo-train --model gpt [options]\n"
            "  --text FILE            train on this text (default: the fortunes corpus)\n"
            "  --fortunes DIR         where the fortunes are (" EO_FORTUNES_DIR ")\n"
            "  --steps N              training steps (1000)\n"
            "  --context N            characters of context (64)\n"
            "  --d-model N            width (128)\n"
            "  --heads N              attention heads (4)\n"
            "  --layers N             transformer blocks (4)\n"
            "  --batch N              windows per step (32)\n"
            "  --lr F                 AdamW learning rate, constant (1e-3)\n"
            "  --weight-decay F       (0.01)\n"
            "  --eval-every N         validation loss every N steps (100; 0: at the end)\n"
            "  --val-windows N        validation windows of context+1 chars (512)\n"
            "  --fused                fused attention instead of the composed one\n"
            "  --seed N               initialisation and batch seed (1)\n"
            "  --threads N            worker threads (2)\n"
            "  --device cpu|cuda      where tensors live (cpu)\n"
            "  --save FILE            checkpoint (safetensors, vocabulary and sizes in the metadata)\n"
            "  --log FILE             per-step CSV: step, train loss, validation loss\n"
            "  --quiet                no progress lines\n");
}

static int main_gpt(int argc, char **argv)
{
    eo_lm_config c;
    eo_lm_defaults(&c);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
#define OPT(name) (strcmp(a, name) == 0 && v && ++i)
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) { usage_gpt(stdout); return 0; }
        else if (OPT("--model")) ;
        else if (OPT("--text")) c.text = v;
        else if (OPT("--fortunes")) c.fortunes = v;
        else if (OPT("--steps")) { if (!eo_arg_int(a, v, &c.steps)) return 2; }
        else if (OPT("--context")) c.context = atoll(v);
        else if (OPT("--d-model")) c.d_model = atoll(v);
        else if (OPT("--heads")) c.heads = atoll(v);
        else if (OPT("--layers")) c.layers = atoll(v);
        else if (OPT("--batch")) { if (!eo_arg_int(a, v, &c.batch)) return 2; }
        else if (OPT("--lr")) { if (!eo_arg_float(a, v, &c.lr)) return 2; }
        else if (OPT("--weight-decay")) { if (!eo_arg_float(a, v, &c.weight_decay)) return 2; }
        else if (OPT("--eval-every")) { if (!eo_arg_int(a, v, &c.eval_every)) return 2; }
        else if (OPT("--val-windows")) { if (!eo_arg_int(a, v, &c.val_windows)) return 2; }
        else if (strcmp(a, "--fused") == 0) c.fused = 1;
        else if (OPT("--seed")) { unsigned long long u_; if (!eo_arg_u64(a, v, &u_)) return 2; c.seed = u_; }
        else if (OPT("--threads")) { if (!eo_arg_int(a, v, &c.threads)) return 2; }
        else if (OPT("--save")) c.save = v;
        else if (OPT("--log")) c.log = v;
        else if (strcmp(a, "--quiet") == 0) c.quiet = 1;
        else if (OPT("--device")) {
            if (strcmp(v, "cuda") == 0) c.cuda = 1;
            else if (strcmp(v, "cpu") == 0) c.cuda = 0;
            else { fprintf(stderr, "eo-train: --device cpu|cuda, not '%s'\n", v); return 2; }
        }
        else { fprintf(stderr, "eo-train: unknown or incomplete option '%s'\n", a); usage_gpt(stderr); return 2; }
#undef OPT
    }
    if (c.steps < 0 || c.batch < 1 || !(c.lr > 0) || c.threads < 1 || c.context < 1 ||
        c.d_model < 1 || c.heads < 1 || c.layers < 1 || c.d_model % c.heads || c.val_windows < 1) {
        fprintf(stderr, "eo-train: need --steps >= 0, positive sizes, --lr > 0 and --d-model "
                        "divisible by --heads\n");
        return 2;
    }
    eo_lm_result r;
    char err[512];
    eo_status s = eo_lm_train_run(&c, &r, stdout, err, sizeof err);
    if (s != EO_OK) {
        fprintf(stderr, "eo-train: %s (%s)\n", err, eo_status_name(s));
        return 1;
    }
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    printf("done: validation loss %.4f nats/char after %d steps, %.1f ms/step, peak resident "
           "%.1f MiB\n", r.val_loss, c.steps, r.ms_per_step, ru.ru_maxrss / 1024.0);
    return 0;
}

int main(int argc, char **argv)
{
    eo_args_program("eo-train");
    eo_train_config c;
    const char *model = "mlp";
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "--model") == 0 && i + 1 < argc)
            model = argv[i + 1];
    if (strcmp(model, "gpt") == 0)
        return main_gpt(argc, argv);
    int kind = eo_model_parse(model);
    if (kind < 0) {
        fprintf(stderr, "eo-train: unknown model '%s' (mlp, cnn, vit, gpt)\n", model);
        return 2;
    }
    eo_train_defaults(&c, (eo_model_kind)kind);
    char plot[256];
    snprintf(plot, sizeof plot, "eo-train-%s.svg", model);
    c.plot = plot;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
#define OPT(name) (strcmp(a, name) == 0 && v && ++i)
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) { usage(stdout); return 0; }
        else if (OPT("--model")) ;
        else if (OPT("--epochs")) { if (!eo_arg_int(a, v, &c.epochs)) return 2; }
        else if (OPT("--steps")) { unsigned long long u_; if (!eo_arg_u64(a, v, &u_)) return 2; c.max_steps = u_; }
        else if (OPT("--batch")) { if (!eo_arg_int(a, v, &c.batch)) return 2; }
        else if (OPT("--lr")) { if (!eo_arg_float(a, v, &c.lr)) return 2; }
        else if (OPT("--optimizer")) {
            if (strcmp(v, "sgd") == 0) c.adamw = 0;
            else if (strcmp(v, "adamw") == 0) c.adamw = 1;
            else { fprintf(stderr, "eo-train: --optimizer sgd|adamw, not '%s'\n", v); return 2; }
        }
        else if (OPT("--momentum")) { if (!eo_arg_float(a, v, &c.momentum)) return 2; }
        else if (strcmp(a, "--nesterov") == 0) c.nesterov = 1;
        else if (OPT("--weight-decay")) { if (!eo_arg_float(a, v, &c.weight_decay)) return 2; }
        else if (OPT("--schedule")) {
            if (strcmp(v, "constant") == 0) c.schedule = EO_LR_CONSTANT;
            else if (strcmp(v, "step") == 0) c.schedule = EO_LR_STEP;
            else if (strcmp(v, "cosine") == 0) c.schedule = EO_LR_COSINE;
            else { fprintf(stderr, "eo-train: --schedule constant|step|cosine, not '%s'\n", v); return 2; }
        }
        else if (OPT("--warmup")) { if (!eo_arg_int(a, v, &c.warmup)) return 2; }
        else if (OPT("--clip")) { if (!eo_arg_float(a, v, &c.clip)) return 2; }
        else if (OPT("--seed")) { unsigned long long u_; if (!eo_arg_u64(a, v, &u_)) return 2; c.seed = u_; }
        else if (OPT("--threads")) { if (!eo_arg_int(a, v, &c.threads)) return 2; }
        else if (OPT("--data")) c.data_dir = v;
        else if (OPT("--subset")) { unsigned long long u_; if (!eo_arg_u64(a, v, &u_)) return 2; c.train_subset = u_; }
        else if (OPT("--test-subset")) { unsigned long long u_; if (!eo_arg_u64(a, v, &u_)) return 2; c.test_subset = u_; }
        else if (OPT("--save")) c.save = v;
        else if (OPT("--load")) c.load = v;
        else if (OPT("--log")) c.log = v;
        else if (OPT("--plot")) c.plot = v;
        else if (OPT("--device")) {
            if (strcmp(v, "cuda") == 0) c.cuda = 1;
            else if (strcmp(v, "cpu") == 0) c.cuda = 0;
            else { fprintf(stderr, "eo-train: --device cpu|cuda, not '%s'\n", v); return 2; }
        }
        else if (strcmp(a, "--quiet") == 0) c.quiet = 1;
        else { fprintf(stderr, "eo-train: unknown or incomplete option '%s'\n", a); usage(stderr); return 2; }
#undef OPT
    }
    if (c.epochs < 0 || c.batch < 1 || !(c.lr > 0) || c.threads < 1) {
        fprintf(stderr, "eo-train: need --epochs >= 0, --batch >= 1, --lr > 0, --threads >= 1\n");
        return 2;
    }
    eo_train_result r;
    char err[512];
    eo_status s = eo_train_run(&c, &r, stdout, err, sizeof err);
    if (s != EO_OK) {
        fprintf(stderr, "eo-train: %s (%s)\n", err, eo_status_name(s));
        return 1;
    }
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    printf("done: test accuracy %.2f%%, %.2f s/epoch, %.1f ms/step, %.0f images/s, peak "
           "resident %.1f MiB\n", 100.0 * r.test_accuracy, r.seconds_per_epoch, r.ms_per_step,
           r.images_per_second, ru.ru_maxrss / 1024.0);
    return 0;
}
