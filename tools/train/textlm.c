/* tools/train/textlm.c — see textlm.h. One training step is the same shape as
 * the classifier's (tools/train/trainer.c): mark the step arena, forward, loss,
 * backward, update, rewind, so the arena stops growing after step 1. Data-
 * parallel the same way too: every rank draws the same windows, trains
 * on its slice of them, and the gradients are summed (tools/dist/). */
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "alloc/checked.h"
#include "core/nn.h"
#include "tools/formats/checkpoint.h"
#include "tools/formats/gpt2.h"
#include "tools/formats/train_state.h"
#include "tools/cli/cpu.h"
#include "tools/cli/errbuf.h"
#include "tools/cli/files.h"
#include "tools/train/trainer.h"
#include "tools/train/arena_size.h"
#include "tools/train/gpt_limits.h"
#include "tools/dist/accum.h"
#include "tools/dist/dist.h"
#include "tools/train/pcg32.h"
#include "tools/train/precision.h"
#include "tools/train/profile.h"
#include "tools/train/resume.h"
#include "tools/train/progress.h"
#include "tools/train/svgplot.h"
#include "tools/threads/pool.h"
#include "tools/train/textlm.h"
#include "tools/train/tokens.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Clean `n` bytes in place (see textlm.h); returns the new length. */
static size_t clean(char *s, size_t n)
{
    size_t o = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '\t')
            c = ' ';
        if (c >= 'A' && c <= 'Z')
            c = (unsigned char)(c - 'A' + 'a');
        if (c == '\n' || (c >= 32 && c < 127))
            s[o++] = (char)c;
    }
    return o;
}

/* Append the whole of `path` to *buf (grown with realloc). The shared
 * reader refuses a FIFO or device (/dev/zero would never end) and stops
 * the corpus at EO_TEXT_MAX_BYTES in all. */
static eo_status append_file(const char *path, char **buf, size_t *len, size_t *cap, char *err,
                             size_t errlen)
{
    char *b;
    size_t n;
    eo_status s = eo_file_read_all(path, "text", EO_TEXT_MAX_BYTES - *len, &b, &n, err, errlen);
    if (s != EO_OK)
        return s;
    if (*cap - *len <= n) { /* one byte more: an empty corpus is a buffer too */
        size_t nc;
        char *nb = eo_grow_overflows(*cap, *len + n + 1, 65536, 1, &nc) ? NULL : realloc(*buf, nc);
        if (!nb) {
            free(b);
            snprintf(err, errlen, "%s: out of memory", path);
            return EO_ERR_OOM;
        }
        *buf = nb;
        *cap = nc;
    }
    if (n)
        memcpy(*buf + *len, b, n);
    *len += n;
    free(b);
    return EO_OK;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

eo_status eo_text_load_fortunes(const char *dir, char **text, size_t *len, char *err,
                                size_t errlen)
{
    DIR *d = opendir(dir);
    if (!d) {
        snprintf(err, errlen, "%s: cannot open the corpus directory (apt-get install fortunes, "
                              "or pass --text FILE)", dir);
        return EO_ERR_IO;
    }
    char **names = NULL;
    size_t n = 0, cap = 0;
    eo_status s = EO_OK;
    struct dirent *e;
    char path[4096];
    while ((e = readdir(d)) && s == EO_OK) {
        size_t l = strlen(e->d_name);
        struct stat st;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        /* lstat: the *.u8 links point at files already in the list. */
        if ((l >= 4 && strcmp(e->d_name + l - 4, ".dat") == 0) || lstat(path, &st) != 0 ||
            !S_ISREG(st.st_mode))
            continue;
        if (n == cap) {
            size_t nc;
            char **nn = eo_grow_overflows(cap, n + 1, 64, sizeof *names, &nc)
                            ? NULL
                            : realloc(names, nc * sizeof *names);
            if (!nn) { s = EO_ERR_OOM; break; }
            names = nn;
            cap = nc;
        }
        if (!(names[n] = strdup(e->d_name))) { s = EO_ERR_OOM; break; }
        n++;
    }
    closedir(d);
    if (s != EO_OK)
        snprintf(err, errlen, "%s: out of memory listing files", dir);
    qsort(names, n, sizeof *names, by_name);
    char *buf = NULL;
    size_t blen = 0, bcap = 0;
    for (size_t i = 0; i < n && s == EO_OK; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        s = append_file(path, &buf, &blen, &bcap, err, errlen);
    }
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(names);
    if (s == EO_OK && n == 0) {
        snprintf(err, errlen, "%s: no fortune files", dir);
        s = EO_ERR_IO;
    }
    if (s != EO_OK) {
        free(buf);
        return s;
    }
    *len = clean(buf, blen);
    *text = buf;
    return EO_OK;
}

eo_status eo_text_load_file(const char *path, char **text, size_t *len, char *err, size_t errlen)
{
    char *buf = NULL;
    size_t blen = 0, bcap = 0;
    eo_status s = append_file(path, &buf, &blen, &bcap, err, errlen);
    if (s != EO_OK) {
        free(buf);
        return s;
    }
    *len = clean(buf, blen);
    *text = buf;
    return EO_OK;
}

void eo_vocab_build(eo_vocab *v, const char *text, size_t len)
{
    int seen[256] = {0};
    for (size_t i = 0; i < len; i++)
        seen[(unsigned char)text[i]] = 1;
    v->size = 0;
    for (int c = 0; c < 256; c++) {
        v->id[c] = -1;
        if (seen[c] && c != 0) {
            v->id[c] = (int16_t)v->size;
            v->chars[v->size++] = (char)c;
        }
    }
    v->chars[v->size] = 0;
}

int eo_vocab_from_chars(eo_vocab *v, const char *chars)
{
    v->size = 0;
    for (int c = 0; c < 256; c++)
        v->id[c] = -1;
    for (; *chars && v->size < 256; chars++) {
        unsigned char c = (unsigned char)*chars;
        if (v->id[c] >= 0)
            return -1;
        v->id[c] = (int16_t)v->size;
        v->chars[v->size++] = (char)c;
    }
    v->chars[v->size] = 0;
    return 0;
}

size_t eo_val_window_start(size_t n, int64_t T, int K, int k)
{
    size_t span = n > (size_t)T + 1 ? n - (size_t)T - 1 : 0;
    return (size_t)k * (span / (size_t)K);
}

void eo_lm_defaults(eo_lm_config *c)
{
    memset(c, 0, sizeof *c);
    c->fortunes = EO_FORTUNES_DIR;
    c->steps = 1000;
    c->context = 64;
    c->d_model = 128;
    c->heads = 4;
    c->layers = 4;
    c->batch = 32;
    c->lr = 1e-3f;
    c->weight_decay = 0.01f;
    c->seed = 1;
    c->threads = 2;
    c->eval_every = 100;
    c->val_windows = 512;
    c->persist_mb = 0; /* measured: tools/train/arena_size.h */
    c->step_mb = 0;
}

#define TRY(x) do { eo_status s_ = (x); if (s_ != EO_OK) return s_; } while (0)

/* Token ids from host memory as a tensor on the model's device: a view of
 * the host buffer on the CPU, a copy in the step arena on CUDA. */
static eo_status ids_tensor(eo_ctx *ctx, const eo_gpt *m, int64_t rows, int64_t T, int32_t *ids,
                            eo_tensor **out)
{
    int64_t sh[2] = { rows, T };
    eo_device dev = m->params.items[0]->device;
    TRY(eo_tensor_wrap(ctx, EO_I32, 2, sh, ids, out));
    return dev == EO_CPU ? EO_OK : eo_to_device(ctx, *out, dev, EO_STEP, out);
}

/* Mean loss of the validation windows, no tape, batch rows at a time. */
/* Batch j of windows goes to rank j mod size; the sums are added in rank
 * order. */
static eo_status validate(eo_ctx *ctx, const eo_gpt *m, const int32_t *val, size_t nval, int K,
                          int batch, int32_t *ib, int32_t *tb, eo_dist *dist, double *out,
                          char *err, size_t errlen)
{
    const int64_t T = m->cfg.context;
    int was_grad = eo_set_grad(ctx, 0), was_train = eo_set_training(ctx, 0);
    int rank = dist ? dist->rank : 0, size = dist ? dist->size : 1;
    double sum = 0;
    eo_status s = EO_OK;
    for (int k0 = rank * batch; k0 < K && s == EO_OK; k0 += size * batch) {
        int rows = K - k0 < batch ? K - k0 : batch;
        for (int r = 0; r < rows; r++) {
            size_t st = eo_val_window_start(nval, T, K, k0 + r);
            memcpy(ib + (size_t)r * T, val + st, (size_t)T * sizeof *ib);
            memcpy(tb + (size_t)r * T, val + st + 1, (size_t)T * sizeof *tb);
        }
        eo_mark mk = eo_mark_get(ctx);
        eo_tensor *x, *y, *L;
        float l = 0;
        s = ids_tensor(ctx, m, rows, T, ib, &x);
        if (s == EO_OK) s = ids_tensor(ctx, m, rows, T, tb, &y);
        if (s == EO_OK) s = eo_gpt_loss(ctx, m, x, y, NULL, &L);
        if (s == EO_OK) s = eo_read(ctx, L, &l, sizeof l);
        sum += (double)l * rows;
        eo_rewind(ctx, mk);
    }
    eo_set_grad(ctx, was_grad);
    eo_set_training(ctx, was_train);
    if (s != EO_OK)
        return eo_errf(err, errlen, s, "%s", eo_last_error(ctx));
    s = eo_dist_sum(dist, &sum, 1, err, errlen);
    *out = sum / K;
    return s;
}

static eo_status train_step(eo_ctx *ctx, const eo_gpt *m, eo_optimizer *opt,
                            eo_grad_scaler *sc, int32_t *ib, int32_t *tb, int rows, float clip,
                            float *loss)
{
    eo_tensor *x, *y, *L;
    TRY(ids_tensor(ctx, m, rows, m->cfg.context, ib, &x));
    TRY(ids_tensor(ctx, m, rows, m->cfg.context, tb, &y));
    TRY(eo_params_zero_grad(ctx, &m->params));
    TRY(eo_gpt_loss(ctx, m, x, y, NULL, &L));
    TRY(eo_precision_step(ctx, sc, &m->params, opt, L, clip, NULL));
    return eo_read(ctx, L, loss, sizeof *loss);
}

/* The data-parallel step (see trainer.c's train_step_split): slice
 * rank * micro + j of size * micro, each slice's loss weighted by its
 * share, gradients added in slice order and summed across ranks. */
static eo_status train_step_split(eo_ctx *ctx, const eo_gpt *m, eo_optimizer *opt,
                                  eo_grad_scaler *sc, eo_dist *dist, size_t micro,
                                  eo_grad_accum *acc,
                                  int32_t *ib, int32_t *tb, int rows, float clip, double *loss,
                                  char *err, size_t errlen)
{
#define CHECKED(x) do { eo_status s_ = (x); if (s_ != EO_OK) return eo_errf(err, errlen, s_, "%s", eo_last_error(ctx)); } while (0)
    const int64_t T = m->cfg.context;
    size_t rank = dist ? (size_t)dist->rank : 0, parts = (dist ? (size_t)dist->size : 1) * micro;
    double part = 0;
    for (size_t j = 0; j < micro; j++) {
        size_t b0, n;
        eo_dist_slice((size_t)rows, parts, rank * micro + j, &b0, &n);
        CHECKED(eo_params_zero_grad(ctx, &m->params));
        if (n > 0) {
            eo_tensor *x, *y, *L, *Ls;
            int64_t sh[2] = { (int64_t)n, T };
            float l = 0;
            CHECKED(eo_tensor_wrap(ctx, EO_I32, 2, sh, ib + b0 * (size_t)T, &x));
            CHECKED(eo_tensor_wrap(ctx, EO_I32, 2, sh, tb + b0 * (size_t)T, &y));
            CHECKED(eo_gpt_loss(ctx, m, x, y, NULL, &L));
            CHECKED(eo_scale(ctx, L, (float)n / (float)rows, &Ls));
            eo_tensor *Lb; /* Ls times the loss scale (f16) */
            CHECKED(eo_grad_scaler_scale_loss(ctx, sc, Ls, &Lb));
            CHECKED(eo_backward(ctx, Lb));
            CHECKED(eo_read(ctx, Ls, &l, sizeof l));
            part += (double)l;
        }
        if (micro > 1) {
            eo_status s = eo_grad_accum_add(acc, ctx, &m->params, (int)j, err, errlen);
            if (s != EO_OK)
                return s;
        }
    }
    if (micro > 1) {
        eo_status s = eo_grad_accum_store(acc, ctx, &m->params, err, errlen);
        if (s != EO_OK)
            return s;
    }
    CHECKED(eo_grad_allreduce(ctx, &m->params));
    CHECKED(eo_precision_finish(ctx, sc, &m->params, opt, clip, NULL));
    *loss = part;
    return eo_dist_sum(dist, loss, 1, err, errlen);
#undef CHECKED
}

/* "step 300/1000 [======>      ] loss 2.3101  val 2.3504  5012 tok/s  61.2 s  ETA 142 s".
 * On a terminal (width > 0) the line never wraps (a wrapped line would
 * leave a copy of itself at every redraw): the bar shrinks, then goes,
 * then the speed, the ETA and the double spaces, as the image models'
 * bar does (progress.c); the step, the losses and the time with its unit
 * stay, and only a terminal too narrow for those cuts the line. */
static void progress(FILE *out, int tty, int width, int step, int steps, double loss, double val,
                     double tok_s, double el, int final)
{
    char line[256];
    for (int level = 0; level < 4; level++) {
        /* level 0: everything; 1: no tok/s; 2: no ETA; 3: single spaces */
        const char *sp = level < 3 ? "  " : " ";
        char v[32] = "", rate[32] = "", eta[32] = "", tail[160];
        if (val >= 0)
            snprintf(v, sizeof v, "%sval %.4f", sp, val);
        if (level < 1)
            snprintf(rate, sizeof rate, "%s%.0f tok/s", sp, tok_s);
        if (level < 2 && !final && step > 0 && step < steps)
            snprintf(eta, sizeof eta, "%sETA %.0f s", sp, el / step * (steps - step));
        snprintf(tail, sizeof tail, "loss %.4f%s%s%s%.1f s%s", loss, v, rate, sp, el, eta);
        char head[40];
        snprintf(head, sizeof head, "step %d/%d", step, steps);
        int bw = 24;
        if (width > 0) {
            int room = width - 1 - (int)(strlen(head) + 3 + strlen(tail));
            bw = room < 6 || level > 0 ? 0 : room < 24 ? room : 24;
        }
        if (bw > 0) {
            char bar[25];
            int w = (int)((double)bw * step / (steps ? steps : 1));
            for (int i = 0; i < bw; i++)
                bar[i] = i < w ? '=' : i == w ? '>' : ' ';
            bar[bw] = 0;
            snprintf(line, sizeof line, "%s [%s] %s", head, bar, tail);
        } else { /* no bar: "step 300/1000  loss ..." */
            snprintf(line, sizeof line, "%s%s%s", head, sp, tail);
        }
        if (width <= 0 || strlen(line) <= (size_t)width - 1)
            break;
    }
    if (width > 0 && strlen(line) > (size_t)width - 1)
        line[width - 1] = 0;
    fprintf(out, "%s%s%*s%s", tty ? "\r" : "", line,
            tty && width > 0 ? (int)(width - 1 - strlen(line)) : 0, "", final || !tty ? "\n" : "");
    fflush(out);
}

/* The loss curves: every step's training loss (bucketed to about a
 * thousand points) and the validation loss where it was measured. */
static eo_status write_plot(const eo_lm_config *c, const eo_lm_result *r, const double *sx,
                            const double *sy, size_t sn, const double *vx, const double *vy,
                            size_t vn, FILE *out, char *err, size_t errlen)
{
    char title[128], sub[256];
    eo_plot_series ls[2] = { { "train loss", "#93c5fd", sx, sy, sn },
                             { "validation loss", "#dc2626", vx, vy, vn } };
    const char *unit = c->tokens ? "token" : "char";
    char ylabel[48];
    snprintf(ylabel, sizeof ylabel, "cross-entropy (nats/%s)", unit);
    eo_plot_panel pn = { ylabel, ls, 2 };
    snprintf(title, sizeof title, "EveryO %s: validation loss %.3f nats/%s",
             c->tokens ? "GPT on tokens" : "char-GPT", r->val_loss, unit);
    snprintf(sub, sizeof sub, "context %lld, d_model %lld, %lld heads, %lld layers, vocabulary %d; "
             "AdamW lr %g, batch %d, %d steps, seed %llu", (long long)c->context,
             (long long)c->d_model, (long long)c->heads, (long long)c->layers, r->vocab,
             (double)c->lr, c->batch, c->steps, (unsigned long long)c->seed);
    eo_plot p = { title, "step", &pn, 1, 0, 0, sub };
    eo_status s = eo_svg_plot(c->plot, &p, err, errlen);
    if (s == EO_OK && out)
        fprintf(out, "plot: %s\n", c->plot);
    return s;
}

/* The measuring run for the arenas (tools/train/arena_size.h): what
 * eo_lm_train_run does before its first step, then that step, on the CPU.
 * The token ids are zeros (id 0 is in every vocabulary); the arenas'
 * figures do not depend on the values. */
typedef struct lm_measure {
    const eo_lm_config *c;
    const eo_gpt_config *gc;
    int32_t *ib, *tb;
} lm_measure;

static eo_status lm_measure_run(eo_ctx *ctx, void *arg)
{
    const lm_measure *a = arg;
    eo_gpt m;
    eo_optimizer opt;
    eo_grad_scaler sc;
    float loss;
    eo_seed(ctx, a->c->seed);
    TRY(eo_gpt_build(ctx, EO_CPU, a->gc, &m));
    eo_gpt_set_fused(&m, a->c->fused);
    TRY(eo_adamw_init(ctx, &opt, &m.params, a->c->lr, 0.9f, 0.999f, 1e-8f, a->c->weight_decay));
    opt.decay_min_rank = a->c->tokens ? 2 : 0;
    TRY(eo_precision_setup(ctx, &m.params, a->c->precision, &sc));
    eo_mark mk = eo_mark_get(ctx);
    eo_status s = train_step(ctx, &m, &opt, &sc, a->ib, a->tb, a->c->batch, a->c->clip, &loss);
    eo_rewind(ctx, mk);
    return s;
}

/* Token data: the train shard, then the validation one (or the last 10%
 * of the train shard) in one array, as the text's ids are. */
static eo_status load_token_splits(const eo_lm_config *c, int32_t **tok, size_t *ntrain,
                                   size_t *nval, char *err, size_t errlen)
{
    int32_t *a, *b;
    size_t na, nb;
    eo_status s = eo_tokens_load(c->tokens, c->vocab, &a, &na, err, errlen);
    if (s != EO_OK)
        return s;
    if (!c->val_tokens) {
        *tok = a;
        *nval = na / 10;
        *ntrain = na - *nval;
        return EO_OK;
    }
    if ((s = eo_tokens_load(c->val_tokens, c->vocab, &b, &nb, err, errlen)) != EO_OK) {
        free(a);
        return s;
    }
    int32_t *t = realloc(a, (na + nb ? na + nb : 1) * sizeof *t);
    if (!t) {
        free(a);
        free(b);
        return eo_errf(err, errlen, EO_ERR_OOM, "out of memory for %zu + %zu tokens", na, nb);
    }
    memcpy(t + na, b, nb * sizeof *t);
    free(b);
    *tok = t;
    *ntrain = na;
    *nval = nb;
    return EO_OK;
}

/* The settings a resumed run must share with the one that saved the
 * state (as trainer.c's): everything that changes its numbers. */
static void lm_settings(const eo_lm_config *c, const eo_gpt_config *gc, size_t ntrain,
                        eo_ts_kv *kv)
{
    memset(kv, 0, sizeof *kv);
    eo_ts_set(kv, "setting.model", "gpt");
    eo_ts_set(kv, "setting.data", "%s", c->tokens ? "tokens" : "characters");
    eo_ts_set(kv, "setting.train_size", "%zu", ntrain);
    eo_ts_set(kv, "setting.vocab", "%lld", (long long)gc->vocab);
    eo_ts_set(kv, "setting.context", "%lld", (long long)gc->context);
    eo_ts_set(kv, "setting.d_model", "%lld", (long long)gc->d_model);
    eo_ts_set(kv, "setting.heads", "%lld", (long long)gc->heads);
    eo_ts_set(kv, "setting.layers", "%lld", (long long)gc->layers);
    eo_ts_set(kv, "setting.tied", "%d", c->tied);
    eo_ts_set(kv, "setting.fused", "%d", c->fused);
    eo_ts_set(kv, "setting.precision", "%s", eo_precision_name(c->precision));
    eo_ts_set(kv, "setting.device", "%s", c->cuda ? "cuda" : "cpu");
    eo_ts_set(kv, "setting.batch", "%d", c->batch);
    eo_ts_set(kv, "setting.steps", "%d", c->steps);
    eo_ts_set_decimal(kv, "setting.lr", c->lr);
    eo_ts_set_decimal(kv, "setting.weight_decay", c->weight_decay);
    eo_ts_set(kv, "setting.schedule", "%s", c->cosine ? "cosine" : "constant");
    eo_ts_set(kv, "setting.warmup", "%d", c->warmup);
    eo_ts_set_decimal(kv, "setting.min_lr", c->min_lr);
    eo_ts_set_decimal(kv, "setting.clip", c->clip);
    eo_ts_set_u64(kv, "setting.seed", c->seed);
    eo_ts_set(kv, "setting.threads", "%d", c->threads);
    eo_ts_set(kv, "setting.micro_batches", "%d", c->micro_batches > 1 ? c->micro_batches : 1);
}

eo_status eo_lm_train_run(const eo_lm_config *c, eo_lm_result *r, FILE *out, char *err,
                          size_t errlen)
{
    memset(r, 0, sizeof *r);
    double *sx = NULL, *sy = NULL, *vx = NULL, *vy = NULL; /* --plot's curves */
    char *text = NULL;
    size_t len = 0, ntrain = 0, nval = 0;
    int32_t *tok = NULL;
    const int64_t T = c->context;
    const char *unit = c->tokens ? "token" : "char";
    eo_vocab voc;
    eo_status s;
    if (c->tokens) {
        if ((s = load_token_splits(c, &tok, &ntrain, &nval, err, errlen)) != EO_OK)
            return s;
        len = ntrain + nval;
        voc.size = c->vocab;
        voc.chars[0] = 0;
    } else {
        s = c->text ? eo_text_load_file(c->text, &text, &len, err, errlen)
                    : eo_text_load_fortunes(c->fortunes ? c->fortunes : EO_FORTUNES_DIR, &text,
                                            &len, err, errlen);
        if (s != EO_OK)
            return s;
        ntrain = len * 9 / 10;
        nval = len - ntrain;
    }
    if (ntrain < (size_t)T + 2 || nval < (size_t)T + 2 || c->val_windows < 1 || c->batch < 1) {
        if (c->tokens)
            snprintf(err, errlen, "%s: %zu training and %zu validation tokens%s are too few for "
                     "context %lld (windows of %lld + 1 tokens)", c->tokens, ntrain, nval,
                     c->val_tokens ? "" : " (the last 10%)", (long long)T, (long long)T);
        else
            snprintf(err, errlen, "text of %zu characters is too short for context %lld", len,
                     (long long)T);
        free(text);
        free(tok);
        return EO_ERR_ARG;
    }
    eo_token_loader loader = {0};
    if (c->tokens && (s = eo_token_loader_init(&loader, tok, ntrain, c->batch, T, err,
                                               errlen)) != EO_OK) {
        free(tok);
        return s;
    }
    if (c->tokens && c->load) {
        /* --load brings a character vocabulary; token ids would need the
         * checkpoint's vocabulary size checked against c->vocab. */
        free(tok);
        return eo_errf(err, errlen, EO_ERR_ARG, "%s: continuing training on token data "
                       "(--load with --tokens) is not supported yet", c->load);
    }
    if (!c->tokens)
        eo_vocab_build(&voc, text, len);
    eo_st_file lf = {0};
    eo_gpt2_info linfo;
    if (c->load) { /* the checkpoint's vocabulary; the text must fit in it */
        s = eo_st_read(c->load, &lf, err, errlen);
        if (s == EO_OK)
            s = eo_gpt2_inspect(&lf, c->load, c->heads, &linfo, err, errlen);
        const char *chars = eo_st_meta_get(&lf, "vocab");
        if (s == EO_OK && (!chars || eo_vocab_from_chars(&voc, chars) != 0)) {
            snprintf(err, errlen, "%s: no character vocabulary (metadata vocab)", c->load);
            s = EO_ERR_FORMAT;
        }
        for (size_t i = 0; i < len && s == EO_OK; i++)
            if (voc.id[(unsigned char)text[i]] < 0) {
                snprintf(err, errlen, "the text's character 0x%02x is not in %s's vocabulary",
                         (unsigned char)text[i], c->load);
                s = EO_ERR_ARG;
            }
        if (s != EO_OK) {
            eo_st_close(&lf);
            free(text);
            return s;
        }
    }
    if (!c->tokens)
        tok = malloc(len * sizeof *tok);
    int32_t *ib = malloc((size_t)c->batch * (size_t)T * sizeof *ib);
    int32_t *tb = calloc((size_t)c->batch * (size_t)T, sizeof *tb);
    eo_pool *pool = c->threads > 1 ? eo_pool_create(c->threads) : NULL;
    /* The arenas: --persist-mb / --step-mb when given, else measured by
     * running the model's build and one step (tools/train/arena_size.h). */
    size_t pbytes = c->persist_mb << 20, sbytes = c->step_mb << 20;
    eo_gpt_config gc = { voc.size, T, c->d_model, c->heads, c->layers, c->tied != 0 };
    if (c->load)
        gc.tied = linfo.cfg.tied;
    eo_lr_schedule sched = { EO_LR_COSINE, c->lr, c->min_lr, 0, 0, c->warmup, c->steps };
    eo_arena_needs need = {0};
    if ((!pbytes || !sbytes) && ib && tb) {
        memset(ib, 0, (size_t)c->batch * (size_t)T * sizeof *ib);
        lm_measure mm = { c, &gc, ib, tb };
        eo_gpt_sizes gs = { T, c->d_model, c->heads, c->layers, voc.size, c->batch, 1 };
        size_t pg, sg;
        eo_gpt_arena_guess(&gs, &pg, &sg);
        s = eo_arena_measure(pg, sg, pool ? eo_pool_par(pool) : (eo_par){0}, lm_measure_run, &mm,
                             &need, err, errlen);
        if (s != EO_OK) {
            if (pool)
                eo_pool_destroy(pool);
            free(tok);
            free(ib);
            free(tb);
            free(text);
            return s;
        }
        pbytes = pbytes ? pbytes : eo_arena_with_margin(need.persist);
        sbytes = sbytes ? sbytes : eo_arena_with_margin(need.step);
    }
    void *pbuf = malloc(pbytes ? pbytes : 1), *sbuf = malloc(sbytes ? sbytes : 1);
    FILE *log = NULL;
    eo_ctx ctx;
    static eo_prof prof; /* --profile; static: it is a few KiB */
    eo_gpt m;
    eo_optimizer opt;
    eo_grad_scaler scaler;
    eo_dist *dist = c->dist && c->dist->size > 1 ? c->dist : NULL;
    size_t micro = c->micro_batches > 1 ? (size_t)c->micro_batches : 1;
    int split = dist || micro > 1;
    eo_grad_accum acc = {0};
    if (!eo_dist_root(dist))
        out = NULL; /* rank 0 alone prints and writes files */
    int attached = 0, ctx_ready = 0;
    if (!tok || !ib || !tb || !pbuf || !sbuf) {
        snprintf(err, errlen, "out of memory (arenas %zu + %zu MiB)", pbytes >> 20, sbytes >> 20);
        s = EO_ERR_OOM;
        goto done;
    }
    for (size_t i = 0; i < len && !c->tokens; i++)
        tok[i] = voc.id[(unsigned char)text[i]];
    const int32_t *val = tok + ntrain;
    r->vocab = voc.size;
    r->train_chars = ntrain;
    r->val_chars = nval;

    eo_ctx_init(&ctx, pbuf, pbytes, sbuf, sbytes);
    if (out && (need.persist || need.step))
        fprintf(out, "arenas: persistent %.1f MiB%s, step %.1f MiB%s (measured: the model, AdamW "
                     "and one step of batch %d, plus 1/8 and 1 MiB)\n", pbytes / 1048576.0,
                c->persist_mb ? " (--persist-mb)" : "", sbytes / 1048576.0,
                c->step_mb ? " (--step-mb)" : "", c->batch);
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
         * eo_arena_device): parameters, gradients,
         * AdamW state and activations all stay on the GPU; only token ids
         * go up and the loss comes down. */
        CORE(eo_cuda_attach(&ctx, c->cuda_driver, 0, eo_arena_device(pbytes, c->persist_mb != 0),
                            eo_arena_device(sbytes, c->step_mb != 0)));
        attached = 1;
        if (out)
            fprintf(out, "device: %s\n", eo_cuda_device_name(&ctx));
    }
    CORE(eo_gpt_build(&ctx, c->cuda ? EO_CUDA : EO_CPU, &gc, &m));
    if (c->load) { /* shapes checked against the model just built */
        s = eo_gpt2_load(&ctx, &m, &lf, &linfo, c->load, err, errlen);
        eo_st_close(&lf);
        if (s != EO_OK)
            goto done;
        if (out)
            fprintf(out, "loaded %s\n", c->load);
    }
    eo_gpt_set_fused(&m, c->fused);
    if (dist)
        eo_ctx_set_grad_sync(&ctx, eo_dist_grad_sync(dist));
    CORE(eo_adamw_init(&ctx, &opt, &m.params, c->lr, 0.9f, 0.999f, 1e-8f, c->weight_decay));
    /* Token data trains as nanoGPT and llm.c do: no decay on biases and
     * LayerNorm parameters. The character GPT keeps its recipe. */
    opt.decay_min_rank = c->tokens ? 2 : 0;
    if (c->cosine && c->steps > 0) /* steps 0: validation only, no rate */
        CORE(eo_lr_schedule_check(&ctx, &sched));
    CORE(eo_precision_setup(&ctx, &m.params, c->precision, &scaler));
    r->params = eo_params_numel(&m.params);
    eo_pcg32 rng;
    eo_pcg32_seed(&rng, c->seed, 0x74657874); /* "text": its own stream */
    int start = 0, stopped = 0;  /* steps done before this process (--resume) */
    double resumed_val = NAN, resumed_train = 0; /* the last validation before it */
    double run_sum = 0;
    int run_n = 0;
    eo_ts_kv settings, saved;
    lm_settings(c, &gc, ntrain, &settings);
    if (dist && (c->checkpoint || c->resume)) {
        s = eo_errf(err, errlen, EO_ERR_ARG, "--checkpoint and --resume work in one process "
                    "only for now, not across %d MPI ranks", dist->size);
        goto done;
    }
    if (c->resume) {
        int64_t st = 0, gt = 0, sk = 0, rn = 0;
        uint64_t rs = 0, ri = 0, ds = 0, di = 0, pos = 0, sb = 0, vb = 0, tb2 = 0;
        s = eo_train_state_load(&ctx, &m.params, &opt, c->resume, &settings, &saved, err, errlen);
        if (s != EO_OK)
            goto done;
        if (!eo_ts_get_i64(&saved, "train.step", &st) ||
            !eo_ts_get_u64(&saved, "rng.ctx.state", &rs) || !eo_ts_get_u64(&saved, "rng.ctx.inc", &ri) ||
            !eo_ts_get_u64(&saved, "rng.data.state", &ds) ||
            !eo_ts_get_u64(&saved, "rng.data.inc", &di) ||
            !eo_ts_get_u64(&saved, "data.position", &pos) ||
            !eo_ts_get_u64(&saved, "train.loss_sum", &sb) ||
            !eo_ts_get_i64(&saved, "train.loss_count", &rn) ||
            !eo_ts_get_u64(&saved, "train.val_loss", &vb) ||
            !eo_ts_get_u64(&saved, "train.last_train_loss", &tb2) ||
            !eo_ts_get_f32(&saved, "scaler.scale", &scaler.scale) ||
            !eo_ts_get_i64(&saved, "scaler.growth_tracker", &gt) ||
            !eo_ts_get_i64(&saved, "scaler.skipped", &sk) || st < 0 || st > c->steps ||
            (c->tokens && pos > loader.n) || rn < 0 || rn > st) {
            s = eo_errf(err, errlen, EO_ERR_FORMAT, "%s: the training position (train.*, "
                        "rng.*, data.*, scaler.*) is missing or out of range", c->resume);
            goto done;
        }
        start = (int)st;
        ctx.rng_state = rs;
        ctx.rng_inc = ri;
        rng.state = ds;
        rng.inc = di;
        loader.pos = (size_t)pos;
        memcpy(&run_sum, &sb, sizeof run_sum);
        run_n = (int)rn;
        memcpy(&resumed_val, &vb, sizeof resumed_val);
        memcpy(&resumed_train, &tb2, sizeof resumed_train);
        scaler.growth_tracker = gt;
        scaler.skipped = sk;
        if (out)
            fprintf(out, "resumed %s at step %d\n", c->resume, start);
        if (eo_dist_root(dist) && c->log &&
            (s = eo_resume_log_open(c->log, "step,train_loss,val_loss", start, &log, err,
                                    errlen)) != EO_OK)
            goto done;
    } else if (eo_dist_root(dist) && c->log &&
               (s = eo_file_create(c->log, &log, err, errlen)) != EO_OK)
        goto done;
    /* Find out now, not after the run, that --save or --plot points
     * somewhere unwritable, or at a link or device. */
    const char *outputs[2] = { c->save, c->plot };
    for (int k = 0; k < 2 && eo_dist_root(dist); k++)
        if (outputs[k] && (s = eo_file_probe_target(outputs[k], err, errlen)) != EO_OK)
            goto done;
    if (log && !c->resume)
        fprintf(log, "step,train_loss,val_loss\n");
    if (out)
        fprintf(out, "model gpt: %lld parameters; vocabulary %d, train %zu / validation %zu "
                     "%ss; context %lld, d_model %lld, %lld heads, %lld layers; batch %d, "
                     "AdamW lr %g wd %g%s, %d thread%s, seed %llu%s, precision %s\n",
                (long long)r->params, voc.size, ntrain, nval, unit, (long long)T,
                (long long)c->d_model, (long long)c->heads, (long long)c->layers, c->batch,
                (double)c->lr, (double)c->weight_decay, c->tokens ? " (2-D weights)" : "",
                c->threads, c->threads == 1 ? "" : "s",
                (unsigned long long)c->seed, c->fused ? ", fused attention" : "",
                eo_precision_name(c->precision));
    if (out && c->cosine)
        fprintf(out, "learning rate: linear warm-up over %d steps to %g, then cosine to %g at "
                     "step %d\n", c->warmup, (double)c->lr, (double)c->min_lr, c->steps);
    if (out && c->clip > 0)
        fprintf(out, "gradient norm clipped to %g\n", (double)c->clip);
    if (out && split)
        fprintf(out, "data-parallel: %d rank%s x %zu micro-batch%s per step; gradients summed "
                     "in rank order\n", dist ? dist->size : 1, dist ? "s (MPI)" : "", micro,
                micro > 1 ? "es" : "");

    int tty = out && isatty(fileno(out));
    int width = tty ? eo_progress_columns(out) : 0;
    double t_train = 0, t_start = now(), last_draw = 0;
    r->val_loss = resumed_val;
    r->train_loss = resumed_train;
    /* Curves for --plot: bucket means of the train loss, every validation. */
    size_t every = (size_t)c->steps / 1000 + 1, sn = 0, vn = 0, in_bucket = 0;
    double bucket = 0;
    if (c->plot) {
        sx = calloc((size_t)c->steps / every + 2, sizeof *sx);
        sy = calloc((size_t)c->steps / every + 2, sizeof *sy);
        vx = calloc((size_t)c->steps + 1, sizeof *vx);
        vy = calloc((size_t)c->steps + 1, sizeof *vy);
    }
    for (int step = start + 1; step <= c->steps && !stopped; step++) {
        if (c->tokens)
            eo_token_loader_next(&loader, ib, tb);
        for (int b = 0; b < c->batch && !c->tokens; b++) {
            size_t st = eo_pcg32_below(&rng, (uint32_t)(ntrain - (size_t)T));
            memcpy(ib + (size_t)b * T, tok + st, (size_t)T * sizeof *ib);
            memcpy(tb + (size_t)b * T, tok + st + 1, (size_t)T * sizeof *tb);
        }
        if (c->cosine)
            opt.lr = eo_lr_at(&sched, step - 1);
        double t0 = now();
        if (c->profile && step > 1) /* the first step faults pages in */
            eo_prof_begin(&prof);
        eo_mark mk = eo_mark_get(&ctx);
        float loss = 0;
        if (split) {
            double dl = 0;
            s = train_step_split(&ctx, &m, &opt, &scaler, dist, micro, &acc, ib, tb, c->batch,
                                 c->clip, &dl, err, errlen);
            if (s != EO_OK)
                goto done;
            loss = (float)dl;
        } else {
            CORE(train_step(&ctx, &m, &opt, &scaler, ib, tb, c->batch, c->clip, &loss));
        }
        eo_rewind(&ctx, mk);
        if (c->profile && step > 1)
            eo_prof_end(&prof);
        t_train += now() - t0;
        if (!isfinite(loss)) {
            snprintf(err, errlen, "loss became %f at step %d: lower --lr?", (double)loss, step);
            s = EO_ERR_NUMERIC;
            goto done;
        }
        run_sum += loss;
        run_n++;
        if (sx && sy && (bucket += loss, ++in_bucket == every || step == c->steps)) {
            sx[sn] = step;
            sy[sn++] = bucket / (double)in_bucket;
            bucket = 0;
            in_bucket = 0;
        }
        int eval = step == c->steps || (c->eval_every > 0 && step % c->eval_every == 0);
        double v = -1;
        if (eval) {
            if ((s = validate(&ctx, &m, val, nval, c->val_windows, c->batch, ib, tb, dist, &v,
                              err, errlen)) != EO_OK)
                goto done;
            r->val_loss = v;
            if (vx && vy) {
                vx[vn] = step;
                vy[vn++] = v;
            }
        }
        if (log && (fprintf(log, eval ? "%d,%.6f,%.6f\n" : "%d,%.6f,\n", step, (double)loss,
                            v) < 0 || ferror(log))) {
            s = eo_errf(err, errlen, EO_ERR_IO, "%s: write failed at step %d: %s", c->log, step,
                        strerror(errno));
            goto done;
        }
        double el = now() - t_start;
        double tok_s = (double)step * c->batch * T / (t_train > 0 ? t_train : 1);
        if (out && !c->quiet && (eval || (tty && el - last_draw > 0.1))) {
            progress(out, tty, width, step, c->steps, eval ? run_sum / run_n : (double)loss, v, tok_s,
                     el, eval);
            last_draw = el;
        }
        if (eval) {
            r->train_loss = run_sum / run_n;
            run_sum = 0;
            run_n = 0;
        }
        stopped = c->stop_after > 0 && step >= c->stop_after;
        if (c->checkpoint &&
            ((c->checkpoint_every > 0 && step % c->checkpoint_every == 0) || stopped)) {
            /* The log first, so it holds every step the state counts
             * (resume.h cuts it there). */
            if (log && (fflush(log) != 0 || fsync(fileno(log)) != 0)) {
                s = eo_errf(err, errlen, EO_ERR_IO, "%s: flushing before the checkpoint: %s",
                            c->log, strerror(errno));
                goto done;
            }
            eo_ts_kv kv = settings;
            uint64_t sb;
            memcpy(&sb, &run_sum, sizeof sb);
            eo_ts_set(&kv, "train.step", "%d", step);
            eo_ts_set_u64(&kv, "rng.ctx.state", ctx.rng_state);
            eo_ts_set_u64(&kv, "rng.ctx.inc", ctx.rng_inc);
            eo_ts_set_u64(&kv, "rng.data.state", rng.state);
            eo_ts_set_u64(&kv, "rng.data.inc", rng.inc);
            eo_ts_set_u64(&kv, "data.position", loader.pos);
            eo_ts_set(&kv, "train.loss_sum", "0x%016llx", (unsigned long long)sb);
            eo_ts_set(&kv, "train.loss_count", "%d", run_n);
            /* the last validation, for --save's metadata when the run is
             * resumed at its very end */
            uint64_t vb, tb2;
            memcpy(&vb, &r->val_loss, sizeof vb);
            memcpy(&tb2, &r->train_loss, sizeof tb2);
            eo_ts_set(&kv, "train.val_loss", "0x%016llx", (unsigned long long)vb);
            eo_ts_set(&kv, "train.last_train_loss", "0x%016llx", (unsigned long long)tb2);
            eo_ts_set_f32(&kv, "scaler.scale", scaler.scale);
            eo_ts_set_i64(&kv, "scaler.growth_tracker", scaler.growth_tracker);
            eo_ts_set_i64(&kv, "scaler.skipped", scaler.skipped);
            s = eo_train_state_save(&ctx, &m.params, &opt, c->checkpoint, &kv, err, errlen);
            if (s != EO_OK)
                goto done;
        }
        if (stopped && out)
            fprintf(out, "stopped after step %d (--stop-after)%s%s\n", step,
                    c->checkpoint ? "; state in " : "", c->checkpoint ? c->checkpoint : "");
    }
    if (stopped)
        goto done; /* no final validation, --save or --plot: the run continues with --resume */
    if (c->steps == 0) {
        if ((s = validate(&ctx, &m, val, nval, c->val_windows, c->batch, ib, tb, dist,
                          &r->val_loss, err, errlen)) != EO_OK)
            goto done;
    }
    r->ms_per_step = c->steps ? 1000.0 * t_train / c->steps : 0;
    if (c->profile && out)
        eo_prof_print(&prof, out, c->threads);
    {
        const eo_arena *ps = c->cuda ? &ctx.dev_persist : &ctx.persist;
        const eo_arena *st = c->cuda ? &ctx.dev_step : &ctx.step;
        r->step_high = eo_arena_high(st);
        r->skipped_steps = scaler.skipped;
        if (out)
            fprintf(out, "validation loss %.4f nats/%s (%d windows), %.1f ms/step, arenas: "
                         "persistent %.1f MiB, step %.1f MiB high-water%s\n",
                    r->val_loss, unit, c->val_windows, r->ms_per_step, eo_arena_high(ps) / 1048576.0,
                    eo_arena_high(st) / 1048576.0, c->cuda ? " (device)" : "");
        if (out && scaler.enabled)
            fprintf(out, "loss scaling: %lld step%s skipped (inf/NaN gradients), scale %g at the "
                         "end\n", (long long)scaler.skipped, scaler.skipped == 1 ? "" : "s",
                    (double)scaler.scale);
    }
    if (eo_dist_root(dist) && c->save) {
        char sctx[24], sd[24], sh[24], sl[24], sst[24], sseed[24], sval[32];
        snprintf(sctx, sizeof sctx, "%lld", (long long)T);
        snprintf(sd, sizeof sd, "%lld", (long long)c->d_model);
        snprintf(sh, sizeof sh, "%lld", (long long)c->heads);
        snprintf(sl, sizeof sl, "%lld", (long long)c->layers);
        snprintf(sst, sizeof sst, "%d", c->steps);
        snprintf(sseed, sizeof sseed, "%llu", (unsigned long long)c->seed);
        snprintf(sval, sizeof sval, "%.4f", r->val_loss);
        const char *keys[9 + EO_GPT2_META_MAX] = { "model", "vocab", "context", "d_model",
                                                   "heads", "layers", "steps", "seed",
                                                   "val_loss" };
        const char *vals[9 + EO_GPT2_META_MAX] = { "gpt", voc.chars, sctx, sd, sh, sl, sst,
                                                   sseed, sval };
        size_t k0 = 9;
        if (c->tokens) { /* no character list ("vocab" would make eo-sample read one):
                            GPT2Config's vocab_size below says the size */
            keys[1] = keys[8];
            vals[1] = vals[8];
            k0 = 8;
        }
        /* and the architecture in GPT2Config's words (tools/formats/gpt2.h) */
        eo_gpt2_meta_buf mb;
        size_t nm = k0 + eo_gpt2_meta(&m.cfg, EO_GPT2_EVERYO, &mb, keys + k0, vals + k0);
        s = eo_checkpoint_save(&ctx, &m.params, c->save, keys, vals, nm, err, errlen);
        if (s != EO_OK)
            goto done;
        if (out)
            fprintf(out, "saved %s\n", c->save);
    }
    /* After the checkpoint, so a plot that cannot be written costs no
     * trained weights; it still fails the run. */
    if (eo_dist_root(dist) && c->plot && sx && sy && vx && vy && sn)
        s = write_plot(c, r, sx, sy, sn, vx, vy, vn, out, err, errlen);
#undef CORE
done:
    eo_st_close(&lf); /* --load's file, if a failure came before it was used */
    if (s == EO_ERR_OOM && ctx_ready)
        eo_train_arena_hint(&ctx, err, errlen);
    eo_grad_accum_free(&acc);
    if (attached)
        eo_cuda_detach(&ctx);
    if (log) {
        /* The last lines are still buffered: a full disk shows here. */
        eo_status cs = eo_file_close(log, c->log, s == EO_OK ? err : NULL, errlen);
        s = s == EO_OK ? cs : s;
    }
    if (pool)
        eo_pool_destroy(pool);
    free(pbuf);
    free(sbuf);
    free(sx);
    free(sy);
    free(vx);
    free(vy);
    free(ib);
    free(tb);
    free(tok);
    free(text);
    return s;
}
