/* tools/train/trainer.c — the training loop for image classifiers.
 *
 * One step is: mark the step arena, wrap the batch, forward, loss,
 * backward, (clip), optimizer update, rewind. Everything the step makes
 * lives between the mark and the rewind, so after the first step the
 * arena's high-water mark stops moving and no step asks the operating
 * system for memory.
 *
 * Data-parallel (tools/dist/dist.h): every rank draws the same shuffled
 * batch and runs its contiguous slice of it; the gradients are summed
 * across ranks before clipping and the update, so every rank applies the
 * same update. Evaluation batches are dealt round-robin to the ranks. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "core/nn.h"
#include "ops/cuda/device.h"
#include "tools/train/arena_size.h"
#include "tools/train/batch.h"
#include "tools/cli/cpu.h"
#include "tools/cli/errbuf.h"
#include "tools/cli/files.h"
#include "tools/dist/accum.h"
#include "tools/dist/dist.h"
#include "tools/dist/nccl.h"
#include "tools/formats/checkpoint.h"
#include "tools/formats/train_state.h"
#include "tools/train/mnist.h"
#include "tools/train/precision.h"
#include "tools/threads/pool.h"
#include "tools/train/profile.h"
#include "tools/train/resume.h"
#include "tools/train/progress.h"
#include "tools/train/svgplot.h"
#include "tools/train/trainer.h"

#define TRY(x) do { eo_status s_ = (x); if (s_ != EO_OK) return s_; } while (0)

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void eo_train_defaults(eo_train_config *c, eo_model_kind model)
{
    memset(c, 0, sizeof *c);
    c->model = model;
    c->data_dir = "/usr/share/datasets/fashion-mnist";
    c->batch = 128;
    c->adamw = 1;
    c->momentum = 0.9f;
    c->schedule = EO_LR_COSINE;
    c->seed = 1;
    c->threads = 2;
    c->persist_mb = 0; /* measured: tools/train/arena_size.h */
    c->step_mb = 0;
    if (model == EO_MODEL_VIT) {
        c->epochs = 1;
        c->lr = 1e-3f;
        c->weight_decay = 0.01f;
    } else if (model == EO_MODEL_CNN) {
        c->epochs = 4;
        c->lr = 2e-3f;
    } else {
        c->epochs = 15;
        c->lr = 2e-3f;
    }
}

/* A batch from host memory as a tensor on the model's device: a view of
 * the host buffer on the CPU, a copy in the step arena on CUDA. */
static eo_status batch_tensor(eo_ctx *ctx, eo_device dev, eo_dtype dt, int rank,
                              const int64_t *shape, void *data, eo_tensor **out)
{
    TRY(eo_tensor_wrap(ctx, dt, rank, shape, data, out));
    return dev == EO_CPU ? EO_OK : eo_to_device(ctx, *out, dev, EO_STEP, out);
}

static eo_device device_of(const eo_classifier *m) { return m->params.items[0]->device; }

/* Fraction of `ds` classified correctly, in evaluation mode, no tape.
 * Batch j of 500 images goes to rank j mod size: each batch is computed
 * exactly as one process computes it, so the count is the same. */
static eo_status evaluate(eo_ctx *ctx, const eo_classifier *m, const eo_dataset *ds,
                          eo_dist *dist, double *acc, char *err, size_t errlen)
{
    int was_train = eo_set_training(ctx, 0), was_grad = eo_set_grad(ctx, 0);
    size_t correct = 0, B = 500;
    size_t rank = dist ? (size_t)dist->rank : 0, size = dist ? (size_t)dist->size : 1;
    eo_status s = EO_OK;
    float *host = malloc(B * 10 * sizeof(float));
    float *xb = malloc(B * ds->dim * sizeof(float)); /* one batch as floats */
    int oom = !host || !xb;
    if (oom)
        s = EO_ERR_OOM;
    for (size_t i = rank * B; i < ds->n && s == EO_OK; i += size * B) {
        size_t rows = ds->n - i < B ? ds->n - i : B;
        eo_mark mk = eo_mark_get(ctx);
        eo_tensor *x, *logits;
        int64_t shape[2] = { (int64_t)rows, (int64_t)ds->dim };
        for (size_t r = 0; r < rows; r++)
            eo_dataset_row_f32(ds, i + r, xb + r * ds->dim);
        s = batch_tensor(ctx, device_of(m), EO_F32, 2, shape, xb, &x);
        if (s == EO_OK) s = eo_classifier_forward(ctx, m, x, &logits);
        if (s == EO_OK) s = eo_cast(ctx, logits, EO_F32, &logits); /* 16-bit under autocast */
        if (s == EO_OK) s = eo_read(ctx, logits, host, rows * 10 * sizeof(float));
        for (size_t r = 0; r < rows && s == EO_OK; r++) {
            int best = 0;
            for (int k = 1; k < 10; k++)
                if (host[r * 10 + k] > host[r * 10 + best])
                    best = k;
            correct += best == ds->y[i + r];
        }
        eo_rewind(ctx, mk);
    }
    free(host);
    free(xb);
    eo_set_training(ctx, was_train);
    eo_set_grad(ctx, was_grad);
    if (oom)
        return eo_errf(err, errlen, s, "evaluation: out of memory for a batch of %zu", B);
    if (s != EO_OK)
        return eo_errf(err, errlen, s, "%s", eo_last_error(ctx));
    double total = (double)correct; /* integers: exact in any order */
    s = eo_dist_sum(dist, &total, 1, err, errlen);
    *acc = ds->n ? total / (double)ds->n : 0.0;
    return s;
}

/* One training step on a batch; *loss gets its value. */
static eo_status train_step(eo_ctx *ctx, const eo_classifier *m, eo_optimizer *opt,
                            eo_grad_scaler *sc, float clip, float *xb, int32_t *yb, size_t rows,
                            float *loss)
{
    eo_tensor *x, *y, *logits, *L;
    int64_t sx[2] = { (int64_t)rows, 784 }, sy[1] = { (int64_t)rows };
    TRY(batch_tensor(ctx, device_of(m), EO_F32, 2, sx, xb, &x));
    TRY(batch_tensor(ctx, device_of(m), EO_I32, 1, sy, yb, &y));
    TRY(eo_params_zero_grad(ctx, &m->params));
    TRY(eo_classifier_forward(ctx, m, x, &logits));
    TRY(eo_cross_entropy(ctx, logits, y, -100, &L));
    /* backward, (unscale), (clip), step unless skipped, scale update */
    TRY(eo_precision_step(ctx, sc, &m->params, opt, L, clip, NULL));
    return eo_read(ctx, L, loss, sizeof *loss);
}

/* The measuring run for the arenas (tools/train/arena_size.h): the build,
 * the precision set-up and optimizer eo_train_run makes, one training
 * step of a whole batch and one evaluation batch of 500 rows, on the CPU.
 * The inputs are zeros: the arenas' figures do not depend on the values.
 * ZeRO-1's shard of AdamW's state is at most the whole of it. */
typedef struct {
    const eo_train_config *c;
    float *xb;   /* max(batch, 500) x 784 zeros */
    int32_t *yb; /* max(batch, 500) zeros */
} train_measure;

static eo_status train_measure_run(eo_ctx *ctx, void *arg)
{
    const train_measure *a = arg;
    const eo_train_config *c = a->c;
    eo_classifier m;
    eo_optimizer opt;
    eo_grad_scaler sc;
    eo_seed(ctx, c->seed);
    TRY(eo_classifier_build(ctx, c->model, EO_CPU, &m));
    TRY(eo_precision_setup(ctx, &m.params, c->precision, &sc));
    if (c->adamw)
        TRY(eo_adamw_init(ctx, &opt, &m.params, c->lr, 0.9f, 0.999f, 1e-8f, c->weight_decay));
    else
        TRY(eo_sgd_init(ctx, &opt, &m.params, c->lr, c->momentum, c->weight_decay, c->nesterov));
    eo_mark mk = eo_mark_get(ctx);
    float loss;
    eo_status s = train_step(ctx, &m, &opt, &sc, c->clip, a->xb, a->yb, (size_t)c->batch, &loss);
    eo_rewind(ctx, mk);
    if (s != EO_OK)
        return s;
    int was_train = eo_set_training(ctx, 0), was_grad = eo_set_grad(ctx, 0);
    eo_tensor *x, *logits;
    int64_t shape[2] = { 500, 784 };
    s = eo_tensor_wrap(ctx, EO_F32, 2, shape, a->xb, &x);
    if (s == EO_OK) s = eo_classifier_forward(ctx, &m, x, &logits);
    if (s == EO_OK) s = eo_cast(ctx, logits, EO_F32, &logits);
    eo_rewind(ctx, mk);
    eo_set_training(ctx, was_train);
    eo_set_grad(ctx, was_grad);
    return s;
}

/* The settings a resumed run must share with the one that saved the
 * state: everything that changes its numbers (not the file names, the
 * arenas' sizes or what is printed). */
static void train_settings(const eo_train_config *c, size_t train_n, eo_ts_kv *kv)
{
    memset(kv, 0, sizeof *kv);
    eo_ts_set(kv, "setting.model", "%s", eo_model_name(c->model));
    eo_ts_set(kv, "setting.precision", "%s", eo_precision_name(c->precision));
    eo_ts_set(kv, "setting.device", "%s", c->cuda ? "cuda" : "cpu");
    eo_ts_set(kv, "setting.optimizer", "%s", c->adamw ? "adamw" : "sgd");
    eo_ts_set_decimal(kv, "setting.lr", c->lr);
    eo_ts_set_decimal(kv, "setting.momentum", c->momentum);
    eo_ts_set(kv, "setting.nesterov", "%d", c->nesterov);
    eo_ts_set_decimal(kv, "setting.weight_decay", c->weight_decay);
    eo_ts_set(kv, "setting.schedule", "%d", c->schedule);
    eo_ts_set(kv, "setting.warmup", "%d", c->warmup);
    eo_ts_set_decimal(kv, "setting.clip", c->clip);
    eo_ts_set(kv, "setting.batch", "%d", c->batch);
    eo_ts_set(kv, "setting.epochs", "%d", c->epochs);
    eo_ts_set(kv, "setting.steps", "%zu", c->max_steps);
    eo_ts_set_u64(kv, "setting.seed", c->seed);
    eo_ts_set(kv, "setting.threads", "%d", c->threads);
    eo_ts_set(kv, "setting.micro_batches", "%d", c->micro_batches > 1 ? c->micro_batches : 1);
    eo_ts_set(kv, "setting.train_images", "%zu", train_n);
}

/* The whole state after `done` steps, the next being batch `index` of
 * epoch `epoch` (index == batches per epoch: the epoch's evaluation is
 * next). The log is flushed to disk first, so it holds every step the
 * checkpoint counts (resume.h cuts it there). */
static eo_status save_state(eo_ctx *ctx, const eo_train_config *c, const eo_ts_kv *settings,
                            const eo_classifier *m, const eo_optimizer *opt,
                            const eo_grad_scaler *sc, size_t done, int epoch, size_t index,
                            double sum, size_t seen, FILE *log, char *err, size_t errlen)
{
    if (log && (fflush(log) != 0 || fsync(fileno(log)) != 0))
        return eo_errf(err, errlen, EO_ERR_IO, "%s: flushing before the checkpoint: %s", c->log,
                       strerror(errno));
    eo_ts_kv kv = *settings;
    uint64_t sum_bits;
    memcpy(&sum_bits, &sum, sizeof sum_bits);
    eo_ts_set(&kv, "train.step", "%zu", done);
    eo_ts_set(&kv, "train.epoch", "%d", epoch);
    eo_ts_set(&kv, "train.index", "%zu", index);
    eo_ts_set(&kv, "train.epoch_loss_sum", "0x%016llx", (unsigned long long)sum_bits);
    eo_ts_set(&kv, "train.epoch_seen", "%zu", seen);
    eo_ts_set_u64(&kv, "rng.ctx.state", ctx->rng_state);
    eo_ts_set_u64(&kv, "rng.ctx.inc", ctx->rng_inc);
    eo_ts_set_f32(&kv, "scaler.scale", sc->scale);
    eo_ts_set_i64(&kv, "scaler.growth_tracker", sc->growth_tracker);
    eo_ts_set_i64(&kv, "scaler.skipped", sc->skipped);
    return eo_train_state_save(ctx, &m->params, opt, c->checkpoint, &kv, err, errlen);
}

/* Where this rank's share of a step comes from. */
typedef struct {
    eo_dist *dist;       /* NULL: one process */
    size_t micro;        /* slices this rank runs in turn */
    eo_grad_accum acc;   /* their running sum when micro > 1 */
    int zero;            /* ZeRO-1: gather the updated weight shards after the step */
    eo_grad_scaler *sc;  /* loss scaling (a pass-through but for f16) */
} step_plan;

/* A data-parallel (or micro-batched) step on the global batch xb/yb of
 * `rows` rows: slice k = rank * micro + j of size * micro. Each slice's
 * mean loss is weighted by its share of the batch, so the gradients
 * summed over all slices (in slice order, here and across ranks) are
 * those of the batch's mean loss; *loss is that mean, summed the same
 * way, and is the same on every rank. Failures: message in err. */
static eo_status train_step_split(eo_ctx *ctx, const eo_classifier *m, eo_optimizer *opt,
                                  step_plan *sp, float clip, float *xb, int32_t *yb,
                                  size_t rows, double *loss, char *err, size_t errlen)
{
#define CHECKED(x) do { eo_status s_ = (x); if (s_ != EO_OK) return eo_errf(err, errlen, s_, "%s", eo_last_error(ctx)); } while (0)
    size_t rank = sp->dist ? (size_t)sp->dist->rank : 0;
    size_t parts = (sp->dist ? (size_t)sp->dist->size : 1) * sp->micro;
    double part = 0;
    for (size_t j = 0; j < sp->micro; j++) {
        size_t b0, n;
        eo_dist_slice(rows, parts, rank * sp->micro + j, &b0, &n);
        CHECKED(eo_params_zero_grad(ctx, &m->params));
        if (n > 0) {
            eo_tensor *x, *y, *logits, *L, *Ls;
            int64_t sx[2] = { (int64_t)n, 784 }, sy[1] = { (int64_t)n };
            float share = (float)n / (float)rows, l = 0;
            CHECKED(batch_tensor(ctx, device_of(m), EO_F32, 2, sx, xb + b0 * 784, &x));
            CHECKED(batch_tensor(ctx, device_of(m), EO_I32, 1, sy, yb + b0, &y));
            CHECKED(eo_classifier_forward(ctx, m, x, &logits));
            CHECKED(eo_cross_entropy(ctx, logits, y, -100, &L));
            CHECKED(eo_scale(ctx, L, share, &Ls));
            eo_tensor *Lb; /* what the backward starts from: Ls times the loss scale */
            CHECKED(eo_grad_scaler_scale_loss(ctx, sp->sc, Ls, &Lb));
            CHECKED(eo_backward(ctx, Lb));
            CHECKED(eo_read(ctx, Ls, &l, sizeof l));
            part += (double)l;
        }
        if (sp->micro > 1) {
            eo_status s = eo_grad_accum_add(&sp->acc, ctx, &m->params, (int)j, err, errlen);
            if (s != EO_OK)
                return s;
        }
    }
    if (sp->micro > 1) {
        eo_status s = eo_grad_accum_store(&sp->acc, ctx, &m->params, err, errlen);
        if (s != EO_OK)
            return s;
    }
    /* Explicitly, not left to the optimizer: a rank whose slices were all
     * empty ran no backward but must still join the sum. */
    CHECKED(eo_grad_allreduce(ctx, &m->params));
    CHECKED(eo_precision_finish(ctx, sp->sc, &m->params, opt, clip, NULL));
    if (sp->zero) {
        eo_status s = eo_dist_gather_params(sp->dist, &m->params, err, errlen);
        if (s != EO_OK)
            return s;
        CHECKED(eo_params_refresh_low(ctx, &m->params)); /* the gathered shards' copies */
    }
    *loss = part;
    return eo_dist_sum(sp->dist, loss, 1, err, errlen);
#undef CHECKED
}

typedef struct {
    double *x, *loss, *acc; /* per epoch; acc in % */
    size_t n;
    /* The per-step loss, averaged over buckets of `every` steps so a long
     * run still plots about a thousand points; x in epochs. */
    double *sx, *sloss, sum;
    size_t sn, every, in_bucket;
} history;

static void history_step(history *h, size_t global, size_t steps_per_epoch, double loss)
{
    h->sum += loss;
    if (++h->in_bucket < h->every)
        return;
    h->sx[h->sn] = (double)(global + 1) / (double)steps_per_epoch;
    h->sloss[h->sn++] = h->sum / (double)h->in_bucket;
    h->sum = 0;
    h->in_bucket = 0;
}

static eo_status write_plot(const eo_train_config *c, const history *h, size_t train_n,
                            FILE *out, char *err, size_t errlen)
{
    char title[128], sub[256];
    eo_plot_series loss[2] = {
        { "train loss (per step)", "#93c5fd", h->sx, h->sloss, h->sn },
        { "train loss (epoch mean)", "#1d4ed8", h->x, h->loss, h->n },
    };
    eo_plot_series acc = { "test accuracy", "#dc2626", h->x, h->acc, h->n };
    eo_plot_panel panels[2] = { { "cross-entropy (nats)", loss, 2 }, { "test accuracy (%)", &acc, 1 } };
    snprintf(title, sizeof title, "EveryO %s on Fashion-MNIST: %.2f %% test accuracy",
             eo_model_name(c->model), h->acc[h->n - 1]);
    snprintf(sub, sizeof sub, "%s lr %g (%s), batch %d, %d epoch%s on %zu images, seed %llu, "
             "%d thread%s", c->adamw ? "AdamW" : "SGD", (double)c->lr,
             c->schedule == EO_LR_COSINE ? "cosine" : c->schedule == EO_LR_STEP ? "step" : "constant",
             c->batch, (int)h->n, h->n == 1 ? "" : "s", train_n,
             (unsigned long long)c->seed, c->threads, c->threads == 1 ? "" : "s");
    eo_plot p = { title, "epoch", panels, 2, 0, 0, sub };
    eo_status s = eo_svg_plot(c->plot, &p, err, errlen);
    if (s == EO_OK && out)
        fprintf(out, "plot: %s\n", c->plot);
    return s;
}

void eo_train_arena_hint(const eo_ctx *ctx, char *err, size_t errlen)
{
    const eo_arena *all[4] = {&ctx->persist, &ctx->step, &ctx->dev_persist, &ctx->dev_step};
    const char *at = strstr(err, "arena '");
    if (!at)
        return;
    at += strlen("arena '");
    for (int i = 0; i < 4; i++) {
        const eo_arena *a = all[i];
        size_t nl = a->name ? strlen(a->name) : 0;
        if (!nl || strncmp(at, a->name, nl) != 0 || at[nl] != '\'')
            continue;
        /* In use when it failed, plus the request: a lower bound, since the
         * step would have gone on allocating. */
        size_t need = a->cap - a->fail_free + a->fail_need;
        size_t mb = (need + (1u << 20) - 1) >> 20;
        const char *opt = i % 2 ? "--step-mb" : "--persist-mb";
        size_t len = strlen(err);
        /* %.32s: arena names are short; the bound also keeps the message's
         * worst-case length in int range, which GCC checks on 32-bit targets. */
        snprintf(err + len, errlen - len,
                 "; the %.32s arena needs at least %.1f MiB (%zu bytes) here, %s gives %zu MiB "
                 "(%zu bytes): raise %s to %zu or more",
                 a->name, (double)need / (1 << 20), need, opt, a->cap >> 20, a->cap, opt,
                 mb > (a->cap >> 20) ? mb : (a->cap >> 20) + 1);
        return;
    }
}

eo_status eo_train_run(const eo_train_config *c, eo_train_result *r, FILE *out, char *err,
                       size_t errlen)
{
    memset(r, 0, sizeof *r);
    eo_dist *dist = c->dist && c->dist->size > 1 ? c->dist : NULL;
    int root = eo_dist_root(dist);
    if (!root)
        out = NULL; /* rank 0 alone prints, logs, plots and saves */
    if (c->zero && (c->cuda || !c->adamw || c->clip > 0)) {
        /* The shard's gradients alone are summed: a global norm would need
         * one more reduction, and NCCL's reduce-scatter is not wired. */
        snprintf(err, errlen, "--zero 1 needs CPU tensors, AdamW and no --clip");
        return EO_ERR_ARG;
    }
    eo_dataset train = {0}, test = {0};
    /* A subset is all that is read (and held): --subset 2048 decodes 2048 images. */
    eo_status s = eo_mnist_load(c->data_dir, 1, c->train_subset, &train, err, errlen);
    if (s == EO_OK) s = eo_mnist_load(c->data_dir, 0, c->test_subset, &test, err, errlen);
    if (s != EO_OK) {
        eo_dataset_free(&train);
        eo_dataset_free(&test);
        return s;
    }

    if (dist && (c->checkpoint || c->resume)) {
        eo_dataset_free(&train);
        eo_dataset_free(&test);
        return eo_errf(err, errlen, EO_ERR_ARG,
                       "--checkpoint and --resume work in one process only for now, not across "
                       "%d MPI ranks", dist->size);
    }
    eo_pool *pool = c->threads > 1 ? eo_pool_create(c->threads) : NULL;
    /* The arenas: --persist-mb / --step-mb when given, else measured by
     * running the build and one step (tools/train/arena_size.h). The first
     * guess is what these models needed at batch 128, scaled with the
     * batch; it doubles if too small, and costs only what is touched. */
    size_t pbytes = c->persist_mb << 20, sbytes = c->step_mb << 20;
    eo_arena_needs need = {0};
    if (!pbytes || !sbytes) {
        size_t rows = c->batch > 500 ? (size_t)c->batch : 500;
        train_measure tm = { c, calloc(rows * 784, sizeof(float)), calloc(rows, sizeof(int32_t)) };
        size_t per128 = c->model == EO_MODEL_CNN ? 768 : c->model == EO_MODEL_VIT ? 1024 : 128;
        size_t sg = (per128 << 20) / 128 * rows;
        s = tm.xb && tm.yb ? eo_arena_measure((size_t)64 << 20, sg,
                                              pool ? eo_pool_par(pool) : (eo_par){0},
                                              train_measure_run, &tm, &need, err, errlen)
                           : eo_errf(err, errlen, EO_ERR_OOM, "out of memory for a batch");
        free(tm.xb);
        free(tm.yb);
        if (s != EO_OK) {
            if (pool)
                eo_pool_destroy(pool);
            eo_dataset_free(&train);
            eo_dataset_free(&test);
            return s;
        }
        pbytes = pbytes ? pbytes : eo_arena_with_margin(need.persist);
        sbytes = sbytes ? sbytes : eo_arena_with_margin(need.step);
    }
    void *pbuf = malloc(pbytes), *sbuf = malloc(sbytes);
    float *xb = malloc((size_t)c->batch * 784 * sizeof(float));
    int32_t *yb = malloc((size_t)c->batch * sizeof(int32_t));
    FILE *log = NULL;
    eo_batcher bat = {0};
    history h = {0};
    eo_ctx ctx;
    static eo_prof prof; /* --profile; static: it is a few KiB */
    eo_classifier m;
    eo_optimizer opt;
    eo_grad_scaler scaler;
    int attached = 0, ctx_ready = 0;
    step_plan plan = { dist, c->micro_batches > 1 ? (size_t)c->micro_batches : 1, {0},
                       c->zero && dist, &scaler };
    int split = dist || plan.micro > 1;
    eo_nccl_api nccl_api = {0};
    eo_nccl nccl = {0};
    if (!pbuf || !sbuf || !xb || !yb) {
        snprintf(err, errlen, "out of memory for the arenas (%zu + %zu MiB)", pbytes >> 20,
                 sbytes >> 20);
        s = EO_ERR_OOM;
        goto done;
    }
    eo_ctx_init(&ctx, pbuf, pbytes, sbuf, sbytes);
    if (out && (need.persist || need.step))
        fprintf(out, "arenas: persistent %.1f MiB%s, step %.1f MiB%s (measured: the model, its "
                     "optimizer, one step of batch %d and one evaluation batch, plus 1/8 and 1 "
                     "MiB)\n", pbytes / 1048576.0, c->persist_mb ? " (--persist-mb)" : "",
                sbytes / 1048576.0, c->step_mb ? " (--step-mb)" : "", c->batch);
    ctx_ready = 1;
    /* EO_CPU=base|avx2|avx512 forces a CPU kernel variant (tools/cli/cpu.h). */
    if ((s = eo_tool_cpu_apply(&ctx, err, errlen)) != EO_OK)
        goto done;
    if (out) {
        char cpu[256];
        eo_tool_cpu_describe(&ctx, cpu, sizeof cpu);
        fprintf(out, "%s\n", cpu);
    }
    if (pool)
        eo_ctx_set_parallel(&ctx, eo_pool_par(pool));
    if (c->profile) {
        eo_prof_init(&prof);
        eo_ctx_set_profile(&ctx, eo_prof_hook(&prof));
    }
    eo_seed(&ctx, c->seed);
#define CORE(x) do { s = (x); if (s != EO_OK) { snprintf(err, errlen, "%s", eo_last_error(&ctx)); goto done; } } while (0)
    if (c->cuda) {
        /* Device arenas as large as the host ones (twice a measured figure:
         * eo_arena_device); parameters, gradients,
         * optimizer state and activations all stay on the GPU. */
        CORE(eo_cuda_attach(&ctx, c->cuda_driver, c->cuda_device,
                            eo_arena_device(pbytes, c->persist_mb != 0),
                            eo_arena_device(sbytes, c->step_mb != 0)));
        attached = 1;
        if (out) fprintf(out, "device: %s\n", eo_cuda_device_name(&ctx));
    }
    if (dist && c->cuda) {
        /* CUDA gradients are summed by NCCL on the GPU, on the device
         * state's own stream, so the all-reduce is ordered after the
         * backward's kernels and before the optimizer's. */
        if (c->nccl) {
            nccl_api = *c->nccl;
        } else if ((s = eo_nccl_load(&nccl_api, err, errlen)) != EO_OK) {
            goto done;
        }
        if ((s = eo_nccl_init_mpi(&nccl, &nccl_api, dist,
                                   (eo_nccl_stream)ctx.exec.cuda->stream, err, errlen)) != EO_OK)
            goto done;
        eo_ctx_set_grad_sync(&ctx, eo_nccl_grad_sync(&nccl));
    } else if (dist) {
        eo_ctx_set_grad_sync(&ctx, plan.zero ? eo_dist_grad_sync_zero(dist)
                                             : eo_dist_grad_sync(dist));
    }
    CORE(eo_classifier_build(&ctx, c->model, c->cuda ? EO_CUDA : EO_CPU, &m));
    if (c->load) {
        s = eo_checkpoint_load(&ctx, &m.params, c->load, err, errlen);
        if (s != EO_OK)
            goto done;
        if (out) fprintf(out, "loaded %s\n", c->load);
    }
    CORE(eo_precision_setup(&ctx, &m.params, c->precision, &scaler));
    if (plan.zero) {
        /* ZeRO-1: m and v for this rank's shard of the flattened
         * parameters only; the hook sums only that shard's gradients. */
        size_t total = 0, b0, n;
        for (int i = 0; i < m.params.count; i++)
            total += (size_t)eo_numel(m.params.items[i]);
        eo_dist_shard(dist, total, &b0, &n);
        CORE(eo_adamw_init_shard(&ctx, &opt, &m.params, c->lr, 0.9f, 0.999f, 1e-8f,
                                 c->weight_decay, (int64_t)b0, (int64_t)n));
    } else if (c->adamw)
        CORE(eo_adamw_init(&ctx, &opt, &m.params, c->lr, 0.9f, 0.999f, 1e-8f, c->weight_decay));
    else
        CORE(eo_sgd_init(&ctx, &opt, &m.params, c->lr, c->momentum, c->weight_decay, c->nesterov));

    eo_batch_opts bo = { (size_t)c->batch, 1, 0, c->seed };
    s = eo_batcher_init(&bat, &train, bo, err, errlen);
    if (s != EO_OK)
        goto done;
    eo_ts_kv settings, saved;
    train_settings(c, train.n, &settings);
    size_t start_global = 0, start_index = 0;
    int start_epoch = 0, stopped = 0;
    double start_sum = 0;
    size_t start_seen = 0;
    if (c->resume) {
        int64_t e64 = 0, gt = 0, sk = 0;
        uint64_t g = 0, ix = 0, sb = 0, sn = 0, rs = 0, ri = 0;
        s = eo_train_state_load(&ctx, &m.params, &opt, c->resume, &settings, &saved, err, errlen);
        if (s != EO_OK)
            goto done;
        if (!eo_ts_get_u64(&saved, "train.step", &g) || !eo_ts_get_i64(&saved, "train.epoch", &e64) ||
            !eo_ts_get_u64(&saved, "train.index", &ix) ||
            !eo_ts_get_u64(&saved, "train.epoch_loss_sum", &sb) ||
            !eo_ts_get_u64(&saved, "train.epoch_seen", &sn) ||
            !eo_ts_get_u64(&saved, "rng.ctx.state", &rs) || !eo_ts_get_u64(&saved, "rng.ctx.inc", &ri) ||
            !eo_ts_get_f32(&saved, "scaler.scale", &scaler.scale) ||
            !eo_ts_get_i64(&saved, "scaler.growth_tracker", &gt) ||
            !eo_ts_get_i64(&saved, "scaler.skipped", &sk) || e64 < 0 || e64 > c->epochs ||
            ix > bat.nbatches) {
            s = eo_errf(err, errlen, EO_ERR_FORMAT, "%s: the training position (train.*, rng.*, "
                        "scaler.*) is missing or out of range", c->resume);
            goto done;
        }
        start_global = (size_t)g;
        start_epoch = (int)e64;
        start_index = (size_t)ix;
        memcpy(&start_sum, &sb, sizeof start_sum);
        start_seen = (size_t)sn;
        ctx.rng_state = rs;
        ctx.rng_inc = ri;
        scaler.growth_tracker = gt;
        scaler.skipped = sk;
        if (out) fprintf(out, "resumed %s at step %zu (epoch %d, batch %zu)\n", c->resume,
                         start_global, start_epoch + 1, start_index);
        if (root && c->log &&
            (s = eo_resume_log_open(c->log, "step,epoch,loss,lr", (long long)start_global, &log,
                                    err, errlen)) != EO_OK)
            goto done;
    } else if (root && c->log && (s = eo_file_create(c->log, &log, err, errlen)) != EO_OK)
        goto done;
    /* Find out now, not after an hour of training, that --save or --plot
     * points somewhere unwritable, or at a link or device. */
    const char *outputs[2] = { c->save, c->plot };
    for (int k = 0; k < 2 && root; k++)
        if (outputs[k] && (s = eo_file_probe_target(outputs[k], err, errlen)) != EO_OK)
            goto done;
    if (log && !c->resume)
        fprintf(log, "step,epoch,loss,lr\n");
    if (out)
        fprintf(out, "model %s: %lld parameters; train %zu, test %zu images; %s lr %g, batch %d, "
                     "%d thread%s, seed %llu, precision %s\n",
                eo_model_name(c->model), (long long)eo_params_numel(&m.params), train.n, test.n,
                c->adamw ? "AdamW" : "SGD", (double)c->lr, c->batch, c->threads,
                c->threads == 1 ? "" : "s", (unsigned long long)c->seed,
                eo_precision_name(c->precision));
    if (out && split)
        fprintf(out, "data-parallel: %d rank%s x %zu micro-batch%s: each batch of %d cut into "
                     "%zu slices, gradients summed in slice order%s\n",
                dist ? dist->size : 1, dist ? "s (MPI)" : "", plan.micro,
                plan.micro > 1 ? "es" : "", c->batch,
                (size_t)(dist ? dist->size : 1) * plan.micro,
                dist && c->cuda ? " by NCCL" : "");

    size_t steps = bat.nbatches, total = steps * (size_t)c->epochs;
    if (c->max_steps && c->max_steps < total)
        total = c->max_steps; /* the schedule ends where the run does */
    /* --steps ends the run inside an epoch: only the epochs that train
     * are run (and evaluated), not the rest empty. */
    int epochs = c->epochs;
    if (c->max_steps && steps && (total + steps - 1) / steps < (size_t)epochs)
        epochs = (int)((total + steps - 1) / steps);
    eo_lr_schedule sched = { (eo_lr_kind)c->schedule, c->lr, 0.0f, 0.1f,
                             (int64_t)(steps * 3 > 0 ? steps * 3 : 1), c->warmup, (int64_t)total };
    /* A warm-up longer than the run would leave the cosine no decay at all:
     * say so instead of running a schedule the caller did not ask for. */
    if ((s = eo_lr_schedule_check(&ctx, &sched)) != EO_OK) {
        snprintf(err, errlen, "%s (--warmup %d, the run has %zu steps)", eo_last_error(&ctx),
                 c->warmup, total);
        goto done;
    }
    h.x = calloc((size_t)c->epochs + 1, sizeof(double));
    h.loss = calloc((size_t)c->epochs + 1, sizeof(double));
    h.acc = calloc((size_t)c->epochs + 1, sizeof(double));
    h.every = total / 1000 + 1;
    h.sx = calloc(total / h.every + 2, sizeof(double));
    h.sloss = calloc(total / h.every + 2, sizeof(double));
    double train_time = 0;
    size_t global = start_global, total_steps = 0;
    for (int e = start_epoch; e < epochs && !stopped; e++) {
        eo_batcher_epoch(&bat, (uint64_t)e);
        eo_progress pr;
        size_t epoch_steps = total - global < steps ? total - global : steps;
        if (!c->quiet && out)
            eo_progress_start(&pr, out, EO_PROGRESS_AUTO, e + 1, epochs, epoch_steps);
        double t0 = now(), sum = 0;
        size_t seen = 0;
        size_t done_steps = 0;
        size_t i0 = e == start_epoch ? start_index : 0; /* a resumed epoch's first batch */
        if (e == start_epoch && c->resume) {
            sum = start_sum;
            seen = start_seen;
        }
        for (size_t i = i0; i < steps; i++, global++) {
            size_t rows;
            if (c->max_steps && global >= c->max_steps)
                break;
            s = eo_batcher_get(&bat, i, xb, yb, &rows, err, errlen);
            if (s != EO_OK)
                goto done;
            opt.lr = eo_lr_at(&sched, (int64_t)global);
            if (c->profile && global > 0) /* the first step faults pages in */
                eo_prof_begin(&prof);
            eo_mark mk = eo_mark_get(&ctx);
            float loss = 0;
            if (split) {
                double dl = 0;
                s = train_step_split(&ctx, &m, &opt, &plan, c->clip, xb, yb, rows, &dl, err,
                                     errlen);
                if (s != EO_OK)
                    goto done;
                loss = (float)dl;
            } else {
                CORE(train_step(&ctx, &m, &opt, &scaler, c->clip, xb, yb, rows, &loss));
            }
            eo_rewind(&ctx, mk);
            if (c->profile && global > 0)
                eo_prof_end(&prof);
            if (global == 0)
                r->step_high_after_first = eo_arena_high(&ctx.step);
            if (!isfinite(loss)) {
                snprintf(err, errlen, "loss became %f at step %zu (epoch %d): lower --lr?",
                         (double)loss, global, e + 1);
                s = EO_ERR_NUMERIC;
                goto done;
            }
            sum += loss;
            seen += rows;
            if (h.sx && h.sloss)
                history_step(&h, global, steps, loss);
            done_steps++;
            if (log && (fprintf(log, "%zu,%d,%.6f,%.6g\n", global, e + 1, (double)loss,
                                (double)opt.lr) < 0 || ferror(log))) {
                s = eo_errf(err, errlen, EO_ERR_IO, "%s: write failed at step %zu: %s", c->log,
                            global, strerror(errno));
                goto done;
            }
            if (!c->quiet && out)
                eo_progress_update(&pr, i + 1, sum / (double)(i + 1), seen);
            stopped = c->stop_after && global + 1 >= c->stop_after;
            if (c->checkpoint &&
                ((c->checkpoint_every > 0 && (global + 1) % (size_t)c->checkpoint_every == 0) ||
                 stopped) &&
                (s = save_state(&ctx, c, &settings, &m, &opt, &scaler, global + 1, e, i + 1, sum,
                                seen, log, err, errlen)) != EO_OK)
                goto done;
            if (stopped)
                break;
        }
        if (stopped) {
            if (!c->quiet && out)
                eo_progress_finish(&pr, "stopped");
            if (out)
                fprintf(out, "stopped after step %zu (--stop-after)%s%s\n", global + 1,
                        c->checkpoint ? "; state in " : "", c->checkpoint ? c->checkpoint : "");
            break;
        }
        double dt = now() - t0;
        train_time += dt;
        total_steps += done_steps;
        done_steps += i0; /* the means below are over the whole epoch */
        if (done_steps == 0)
            done_steps = 1; /* only the means below divide by it */
        if (e == 0)
            r->step_high_epoch1 = eo_arena_high(&ctx.step);
        double acc, te = now();
        if ((s = evaluate(&ctx, &m, &test, dist, &acc, err, errlen)) != EO_OK)
            goto done;
        te = now() - te;
        h.x[h.n] = e + 1;
        h.loss[h.n] = sum / (double)done_steps;
        h.acc[h.n++] = 100.0 * acc;
        r->test_accuracy = acc;
        r->last_loss = sum / (double)done_steps;
        r->images_per_second = (double)seen / dt;
        if (out) {
            char extra[96];
            snprintf(extra, sizeof extra, "test acc %.2f%%, eval %.1f s", 100.0 * acc, te);
            if (!c->quiet)
                eo_progress_finish(&pr, extra);
            else
                fprintf(out, "epoch %d/%d loss %.4f train %.1f s %s\n", e + 1, epochs,
                        sum / (double)done_steps, dt, extra);
        }
    }
    if (stopped)
        goto done; /* no evaluation, --save or --plot: the run continues with --resume */
    if (c->epochs == 0 &&
        (s = evaluate(&ctx, &m, &test, dist, &r->test_accuracy, err, errlen)) != EO_OK)
        goto done;
    if (c->epochs == 0 && out)
        fprintf(out, "test accuracy %.2f%%\n", 100.0 * r->test_accuracy);
    r->seconds_per_epoch = epochs ? train_time / epochs : 0;
    r->ms_per_step = total_steps ? 1000.0 * train_time / (double)total_steps : 0;
    r->persist_high = eo_arena_high(&ctx.persist);
    r->step_high = eo_arena_high(&ctx.step);
    r->skipped_steps = scaler.skipped;
    r->loss_scale = scaler.scale;
    if (out && scaler.enabled)
        fprintf(out, "loss scaling: %lld step%s skipped (inf/NaN gradients), scale %g at the end\n",
                (long long)scaler.skipped, scaler.skipped == 1 ? "" : "s", (double)scaler.scale);
    if (c->profile && out)
        eo_prof_print(&prof, out, c->threads);
    if (out)
        fprintf(out, "arenas: persistent %.1f MiB high-water, step %.1f MiB high-water (%.1f MiB "
                     "after the first step)\n",
                r->persist_high / 1048576.0, r->step_high / 1048576.0,
                r->step_high_after_first / 1048576.0);
    if (out && dist && dist->hook_calls && total_steps)
        fprintf(out, "all-reduce: %.2f ms per step (%.0f%% of the step), after %.2f ms waiting "
                     "for the slowest rank (%.0f%%), rank 0\n",
                1000.0 * dist->hook_seconds / (double)dist->hook_calls,
                100.0 * dist->hook_seconds / train_time,
                1000.0 * dist->hook_wait_seconds / (double)dist->hook_calls,
                100.0 * dist->hook_wait_seconds / train_time);
    if (root && c->save) {
        char acc[32], ep[16], seed[24];
        snprintf(acc, sizeof acc, "%.4f", r->test_accuracy);
        snprintf(ep, sizeof ep, "%d", epochs);
        snprintf(seed, sizeof seed, "%llu", (unsigned long long)c->seed);
        const char *keys[4] = { "model", "epochs", "seed", "test_accuracy" };
        const char *vals[4] = { eo_model_name(c->model), ep, seed, acc };
        s = eo_checkpoint_save(&ctx, &m.params, c->save, keys, vals, 4, err, errlen);
        if (s != EO_OK)
            goto done;
        if (out) fprintf(out, "saved %s\n", c->save);
    }
    /* After the checkpoint, so a plot that cannot be written costs no
     * trained weights; it still fails the run. */
    if (root && c->plot && h.n)
        s = write_plot(c, &h, train.n, out, err, errlen);
#undef CORE
done:
    if (s == EO_ERR_OOM && ctx_ready)
        eo_train_arena_hint(&ctx, err, errlen);
    eo_nccl_destroy(&nccl);
    if (!c->nccl)
        eo_nccl_unload(&nccl_api);
    eo_grad_accum_free(&plan.acc);
    if (attached)
        eo_cuda_detach(&ctx);
    if (log) {
        /* The last lines are still buffered: a full disk shows here. */
        eo_status cs = eo_file_close(log, c->log, s == EO_OK ? err : NULL, errlen);
        s = s == EO_OK ? cs : s;
    }
    eo_batcher_free(&bat);
    free(h.x);
    free(h.loss);
    free(h.acc);
    free(h.sx);
    free(h.sloss);
    free(xb);
    free(yb);
    free(pbuf);
    free(sbuf);
    if (pool)
        eo_pool_destroy(pool);
    eo_dataset_free(&train);
    eo_dataset_free(&test);
    return s;
}
