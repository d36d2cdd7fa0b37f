/* tools/train/eo-sample.c — generate text with a GPT trained by
 * `eo-train --model gpt --save FILE`:
 *
 *   eo-sample --load gpt.safetensors --prompt "the " --temperature 0.8 \
 *             --top-k 10 --length 300 --seed 7
 *
 * The checkpoint's metadata carries the vocabulary and the model's sizes,
 * so nothing else is needed. The file may also be in Hugging Face's GPT-2
 * layout (eo-safetensors convert-gpt2 keeps the metadata): it is loaded
 * through tools/formats/gpt2.h, which reads either. Each new character is drawn from the softmax
 * of the last position's logits divided by the temperature, restricted to
 * the k most likely characters when --top-k is given (temperature 0: the
 * most likely one).
 *
 * Generation keeps a key/value cache (eo_gpt_forward_cached): the prompt
 * is run once, then each new character costs one position's forward
 * against the cached keys, O(context), not a forward over the whole
 * window. Positions are absolute (learned), so when the cache is full it
 * is refilled from the last context/2 characters: the model always sees
 * between context/2 and context characters. */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/transformer.h"
#include "tools/cli/args.h"
#include "tools/train/arena_size.h"
#include "tools/train/gpt_limits.h"
#include "tools/train/pcg32.h"
#include "tools/formats/gpt2.h"
#include "tools/formats/safetensors.h"
#include "tools/train/textlm.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: eo-sample --load FILE [options]\n"
               "Continue a prompt with a character GPT trained by eo-train --model gpt --save FILE.\n"
               "\n"
               "  -l, --load FILE        the checkpoint (required)\n"
               "  -p, --prompt TEXT      text to continue (default: a newline)\n"
               "  -t, --temperature F    softmax temperature, 0 = greedy (1.0)\n"
               "  -k, --top-k K          sample among the K most likely characters (0: all)\n"
               "  -n, --length N         characters to generate (300)\n"
               "      --seed N           sampling seed (1)\n"
               "      --device cpu|cuda  where the model runs (cpu)\n"
               "      --persist-mb N     persistent arena (weights, key/value cache) in MiB\n"
               "                         (default: measured from the checkpoint's sizes)\n"
               "      --step-mb N        step arena (one forward) in MiB (default: measured)\n"
               "  -h, --help             this text\n"
               "      --version          the program's and the library's version\n");
}

/* A size from the checkpoint's metadata: digits only, no overflow. The
 * range is checked with the others in eo_gpt_sizes_check. */
static int meta_int(const eo_st_file *f, const char *key, int64_t *v)
{
    const char *s = eo_st_meta_get(f, key);
    char *end;
    if (!s || !isdigit((unsigned char)*s))
        return 0;
    errno = 0;
    long long x = strtoll(s, &end, 10);
    if (*end || errno)
        return 0;
    *v = x;
    return 1;
}

enum { O_SEED = 256, O_VERSION, O_DEVICE, O_PERSIST_MB, O_STEP_MB };
static const struct option opts[] = {
    {"load", required_argument, NULL, 'l'},   {"prompt", required_argument, NULL, 'p'},
    {"temperature", required_argument, NULL, 't'},
    {"top-k", required_argument, NULL, 'k'},  {"length", required_argument, NULL, 'n'},
    {"seed", required_argument, NULL, O_SEED}, {"help", no_argument, NULL, 'h'},
    {"version", no_argument, NULL, O_VERSION}, {"device", required_argument, NULL, O_DEVICE},
    {"persist-mb", required_argument, NULL, O_PERSIST_MB},
    {"step-mb", required_argument, NULL, O_STEP_MB},
    {NULL, 0, NULL, 0},
};

/* One draw from softmax(logits / temp) over the top k entries. */
static int sample(const float *logits, int V, float temp, int k, eo_pcg32 *rng)
{
    int best = 0;
    for (int i = 1; i < V; i++)
        if (logits[i] > logits[best])
            best = i;
    if (temp <= 0)
        return best;
    float cut = -INFINITY; /* the k-th largest logit */
    if (k > 0 && k < V) {
        float tmp[EO_GPT_MAX_VOCAB]; /* V <= 256: a checkpoint's vocabulary is bytes */
        memcpy(tmp, logits, (size_t)V * sizeof *tmp);
        for (int j = 0; j < k; j++) { /* k rounds of selection: V is small */
            int m = j;
            for (int i = j + 1; i < V; i++)
                if (tmp[i] > tmp[m])
                    m = i;
            float t = tmp[j]; tmp[j] = tmp[m]; tmp[m] = t;
        }
        cut = tmp[k - 1];
    }
    double z = 0, p[256];
    for (int i = 0; i < V; i++) {
        p[i] = logits[i] >= cut ? exp(((double)logits[i] - logits[best]) / temp) : 0.0;
        z += p[i];
    }
    double u = (double)eo_pcg32_next(rng) / 4294967296.0 * z, acc = 0;
    for (int i = 0; i < V; i++) {
        acc += p[i];
        if (u < acc)
            return i;
    }
    return best;
}

/* The measuring run (tools/train/arena_size.h): what main does before
 * generating, then the largest forward generation runs — a whole context
 * against an empty cache. The weights are the random ones of the build:
 * the arenas' figures do not depend on the values. */
static eo_status sample_measure_run(eo_ctx *ctx, void *arg)
{
    const eo_gpt_config *c = arg;
    eo_gpt m;
    eo_gpt_cache cache;
    eo_tensor *x, *lg;
    eo_status st = eo_gpt_build(ctx, EO_CPU, c, &m);
    if (st != EO_OK)
        return st;
    eo_set_grad(ctx, 0);
    eo_set_training(ctx, 0);
    eo_gpt_set_fused(&m, 1);
    if ((st = eo_gpt_cache_init(ctx, &m, 1, &cache)) != EO_OK)
        return st;
    int64_t sh[2] = { 1, c->context };
    eo_mark mk = eo_mark_get(ctx);
    st = eo_tensor_zeros(ctx, EO_STEP, EO_CPU, EO_I32, 2, sh, &x);
    if (st == EO_OK)
        st = eo_gpt_forward_cached(ctx, &m, &cache, x, &lg);
    eo_rewind(ctx, mk);
    return st;
}

int main(int argc, char **argv)
{
    eo_args_program("eo-sample");
    const char *load = NULL, *prompt = "\n";
    float temp = 1.0f;
    int topk = 0, length = 300;
    unsigned long long seed = 1;
    int cuda = 0;
    size_t persist_mb = 0, step_mb = 0; /* 0: measured */
    static const char *const devices[] = {"cpu", "cuda"};
    int o;
    while ((o = getopt_long(argc, argv, "l:p:t:k:n:h", opts, NULL)) != -1) {
        const char *v = optarg;
        int ok = 1;
        switch (o) {
        case 'h': usage(stdout); return 0;
        case O_VERSION: eo_args_version(stdout); return 0;
        case 'l': load = v; break;
        case 'p': prompt = v; break;
        case 't': ok = eo_arg_float("--temperature", v, &temp);
            if (ok && (temp < 0 || temp > 1e4f)) {
                fprintf(stderr, "eo-sample: --temperature: '%s' is not from 0 to 10000\n", v);
                return 2;
            }
            break;
        case 'k': ok = eo_arg_int_range("--top-k", v, 0, EO_GPT_MAX_VOCAB, &topk); break;
        case 'n': ok = eo_arg_int_range("--length", v, 0, 1 << 24, &length); break;
        case O_SEED: ok = eo_arg_u64("--seed", v, &seed); break;
        case O_DEVICE: ok = eo_arg_choice("--device", v, devices, 2, &cuda); break;
        case O_PERSIST_MB: ok = eo_arg_arena_mb("--persist-mb", v, &persist_mb); break;
        case O_STEP_MB: ok = eo_arg_arena_mb("--step-mb", v, &step_mb); break;
        default: return eo_args_try_help(); /* getopt_long named the problem */
        }
        if (!ok)
            return 2;
    }
    if (!eo_args_no_operands(argc, argv))
        return 2;
    if (!load) {
        fprintf(stderr, "eo-sample: --load FILE is required (a checkpoint of eo-train --model gpt)\n");
        return eo_args_try_help();
    }
    char err[512];
    eo_st_file f;
    if (eo_st_read(load, &f, err, sizeof err) != EO_OK) {
        fprintf(stderr, "eo-sample: %s\n", err);
        return 1;
    }
    eo_gpt_config c = {0}; /* untied: eo-train saves its own lm_head */
    const char *model = eo_st_meta_get(&f, "model"), *chars = eo_st_meta_get(&f, "vocab");
    eo_vocab voc;
    if (model && strcmp(model, "gpt") != 0) {
        fprintf(stderr, "eo-sample: %s holds a '%s' model, not a GPT (eo-train --load %s --eval "
                        "evaluates it)\n", load, model, load);
        eo_st_close(&f);
        return 1;
    }
    eo_gpt2_info g2;
    if (!model && eo_gpt2_inspect(&f, load, 0, &g2, err, sizeof err) == EO_OK) {
        /* A GPT-2 file of Hugging Face (or converted) without eo-train's
         * character vocabulary: its weights load (tools/formats/gpt2.h),
         * but its tokens are byte-level BPE ones this program cannot make. */
        fprintf(stderr, "eo-sample: %s holds a GPT-2 model (%s layout, n_layer %lld, n_embd %lld, "
                        "vocab %lld) without a character vocabulary; eo-sample speaks eo-train's "
                        "characters only, GPT-2's BPE tokenizer is not in EveryO yet (the weights "
                        "load in C with eo_gpt2_open; eo-safetensors convert-gpt2 converts them)\n",
                load, g2.layout == EO_GPT2_HF ? "Hugging Face" : "EveryO", (long long)g2.cfg.layers,
                (long long)g2.cfg.d_model, (long long)g2.cfg.vocab);
        eo_st_close(&f);
        return 1;
    }
    if (!model || strcmp(model, "gpt") != 0 || !chars || eo_vocab_from_chars(&voc, chars) != 0 ||
        !meta_int(&f, "context", &c.context) || !meta_int(&f, "d_model", &c.d_model) ||
        !meta_int(&f, "heads", &c.heads) || !meta_int(&f, "layers", &c.layers)) {
        fprintf(stderr, "eo-sample: %s: not a GPT checkpoint of eo-train (metadata model=gpt, "
                        "vocab, context, d_model, heads, layers)\n", load);
        eo_st_close(&f);
        return 1;
    }
    eo_st_close(&f);
    c.vocab = voc.size;
    eo_gpt_sizes sz = {c.context, c.d_model, c.heads, c.layers, c.vocab, 1, 0};
    size_t mem = eo_memory_bytes();
    if (!eo_gpt_sizes_check(&sz, persist_mb ? persist_mb << 20 : mem,
                            step_mb ? step_mb << 20 : mem, 0, err, sizeof err)) {
        fprintf(stderr, "eo-sample: %s: %s\n", load, err);
        return 1;
    }
    /* The arenas: --persist-mb / --step-mb when given, else measured by
     * building the model and its cache and running the largest forward
     * generation asks for (tools/train/arena_size.h). */
    size_t pb = persist_mb << 20, sb = step_mb << 20;
    eo_arena_needs need = {0};
    if (!pb || !sb) {
        size_t pg, sg;
        eo_gpt_arena_guess(&sz, &pg, &sg);
        if (eo_arena_measure(pg, sg, (eo_par){0}, sample_measure_run, &c,
                             &need, err, sizeof err) != EO_OK) {
            fprintf(stderr, "eo-sample: %s: %s\n", load, err);
            return 1;
        }
        pb = pb ? pb : eo_arena_with_margin(need.persist);
        sb = sb ? sb : eo_arena_with_margin(need.step);
        fprintf(stderr, "eo-sample: arenas: persistent %.1f MiB, step %.1f MiB (measured for "
                        "context %lld, d_model %lld, %lld layers, plus 1/8 and 1 MiB)\n",
                pb / 1048576.0, sb / 1048576.0, (long long)c.context, (long long)c.d_model,
                (long long)c.layers);
    }

    /* Everything from here on is freed at `out`, on every path. */
    int rc = 1, attached = 0;
    size_t plen = strlen(prompt), n = 0;
    int32_t *toks = malloc((plen + (size_t)length + 1) * sizeof *toks);
    char *pclean = malloc(plen + 1);
    float *last = malloc((size_t)c.vocab * sizeof *last);
    void *p = malloc(pb), *s = malloc(sb);
    eo_ctx ctx;
    eo_gpt m;
    if (!toks || !pclean || !last || !p || !s) {
        fprintf(stderr, "eo-sample: out of memory (arenas %zu + %zu MiB)\n", pb >> 20, sb >> 20);
        goto out;
    }
    /* The prompt, cleaned as the corpus was. */
    memcpy(pclean, prompt, plen + 1);
    for (size_t i = 0; i < plen; i++) {
        unsigned char ch = (unsigned char)pclean[i];
        if (ch == '\t') ch = ' ';
        if (ch >= 'A' && ch <= 'Z') ch = (unsigned char)(ch - 'A' + 'a');
        if (voc.id[ch] < 0) {
            fprintf(stderr, "eo-sample: the prompt's character 0x%02x is not in the model's "
                            "vocabulary\n", ch);
            goto out;
        }
        pclean[i] = (char)ch;
        toks[n++] = voc.id[ch];
    }
    if (n == 0) {
        fprintf(stderr, "eo-sample: empty prompt\n");
        rc = 2;
        goto out;
    }
    if (eo_ctx_init(&ctx, p, pb, s, sb) != EO_OK) {
        fprintf(stderr, "eo-sample: %s\n", eo_last_error(&ctx));
        goto out;
    }
    /* On CUDA the weights and activations live in device arenas (as large
     * as the host ones, twice a measured figure: eo_arena_device); only
     * token ids go up and one row of logits comes down per character. */
    if (cuda && eo_cuda_attach(&ctx, NULL, 0, eo_arena_device(pb, persist_mb != 0),
                               eo_arena_device(sb, step_mb != 0)) != EO_OK) {
        fprintf(stderr, "eo-sample: %s\n", eo_last_error(&ctx));
        goto out;
    }
    attached = cuda;
    /* Built from the file's shapes and loaded in either layout (eo-train's
     * own, or Hugging Face's after eo-safetensors convert-gpt2), tied head
     * or not; its sizes must be those the metadata gave above. */
    if (eo_gpt2_open(&ctx, cuda ? EO_CUDA : EO_CPU, load, c.heads, &m, NULL, err, sizeof err) !=
        EO_OK) {
        fprintf(stderr, "eo-sample: %s\n", err);
        goto out;
    }
    if (m.cfg.vocab != c.vocab || m.cfg.context != c.context || m.cfg.d_model != c.d_model ||
        m.cfg.layers != c.layers) {
        fprintf(stderr, "eo-sample: %s: the tensors hold vocab %lld, context %lld, d_model %lld, "
                        "%lld layers; the metadata says %lld, %lld, %lld, %lld\n", load,
                (long long)m.cfg.vocab, (long long)m.cfg.context, (long long)m.cfg.d_model,
                (long long)m.cfg.layers, (long long)c.vocab, (long long)c.context,
                (long long)c.d_model, (long long)c.layers);
        goto out;
    }
    eo_set_grad(&ctx, 0);
    eo_set_training(&ctx, 0);
    eo_gpt_set_fused(&m, 1);
    eo_gpt_cache cache;
    if (eo_gpt_cache_init(&ctx, &m, 1, &cache) != EO_OK) {
        fprintf(stderr, "eo-sample: %s\n", eo_last_error(&ctx));
        goto out;
    }
    eo_pcg32 rng;
    eo_pcg32_seed(&rng, seed, 0x73616d70); /* "samp" */
    fputs(pclean, stdout);
    fflush(stdout);
    /* feed: the tokens to run next, toks[n - feed .. n) */
    size_t feed = n < (size_t)c.context ? n : (size_t)c.context;
    for (int g = 0; g < length; g++) {
        if (cache.len + (int64_t)feed > c.context) { /* full: refill from the recent half */
            eo_gpt_cache_reset(&cache);
            feed = (size_t)(c.context / 2 > 0 ? c.context / 2 : 1);
        }
        eo_mark mk = eo_mark_get(&ctx);
        eo_tensor *x, *lg, *row;
        int64_t sh[2] = { 1, (int64_t)feed };
        eo_status st = eo_tensor_wrap(&ctx, EO_I32, 2, sh, toks + n - feed, &x);
        if (st == EO_OK && cuda) st = eo_to_device(&ctx, x, EO_CUDA, EO_STEP, &x);
        if (st == EO_OK) st = eo_gpt_forward_cached(&ctx, &m, &cache, x, &lg);
        if (st == EO_OK) st = eo_slice(&ctx, lg, 1, (int64_t)feed - 1, 1, &row);
        if (st == EO_OK) st = eo_contiguous(&ctx, row, &row);
        if (st == EO_OK) st = eo_read(&ctx, row, last, (size_t)c.vocab * sizeof *last);
        eo_rewind(&ctx, mk);
        if (st != EO_OK) {
            fprintf(stderr, "\neo-sample: %s\n", eo_last_error(&ctx));
            goto out;
        }
        int t = sample(last, (int)c.vocab, temp, topk, &rng);
        toks[n++] = t;
        feed = 1;
        putchar(voc.chars[t]);
        fflush(stdout);
    }
    putchar('\n');
    rc = 0;
out:
    if (attached)
        eo_cuda_detach(&ctx);
    free(last);
    free(toks);
    free(pclean);
    free(p);
    free(s);
    return rc;
}
