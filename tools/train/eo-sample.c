/* tools/train/eo-sample.c — generate text with a GPT trained by
 * `eo-train --model gpt --save FILE`:
 *
 *   eo-sample --load gpt.safetensors --prompt "the " --temperature 0.8 \
 *             --top-k 10 --length 300 --seed 7
 *
 * The checkpoint's metadata carries the vocabulary and the model's sizes,
 * so nothing else is needed. Each new character is drawn from the softmax
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
#include "tools/cli/cpu.h"
#include "tools/cli/args.h"
#include "tools/formats/checkpoint.h"
#include "tools/train/gpt_limits.h"
#include "tools/train/pcg32.h"
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

enum { O_SEED = 256, O_VERSION, O_DEVICE };
static const struct option opts[] = {
    {"load", required_argument, NULL, 'l'},   {"prompt", required_argument, NULL, 'p'},
    {"temperature", required_argument, NULL, 't'},
    {"top-k", required_argument, NULL, 'k'},  {"length", required_argument, NULL, 'n'},
    {"seed", required_argument, NULL, O_SEED}, {"help", no_argument, NULL, 'h'},
    {"version", no_argument, NULL, O_VERSION}, {"device", required_argument, NULL, O_DEVICE},
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
        float *tmp = malloc((size_t)V * sizeof *tmp);
        memcpy(tmp, logits, (size_t)V * sizeof *tmp);
        for (int j = 0; j < k; j++) { /* k rounds of selection: V is small */
            int m = j;
            for (int i = j + 1; i < V; i++)
                if (tmp[i] > tmp[m])
                    m = i;
            float t = tmp[j]; tmp[j] = tmp[m]; tmp[m] = t;
        }
        cut = tmp[k - 1];
        free(tmp);
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

int main(int argc, char **argv)
{
    eo_args_program("eo-sample");
    const char *load = NULL, *prompt = "\n";
    float temp = 1.0f;
    int topk = 0, length = 300;
    unsigned long long seed = 1;
    int cuda = 0;
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
    eo_gpt_config c;
    const char *model = eo_st_meta_get(&f, "model"), *chars = eo_st_meta_get(&f, "vocab");
    eo_vocab voc;
    if (model && strcmp(model, "gpt") != 0) {
        fprintf(stderr, "eo-sample: %s holds a '%s' model, not a GPT (eo-train --load %s --eval "
                        "evaluates it)\n", load, model, load);
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
    size_t pb = 64u << 20, sb = 256u << 20;
    eo_gpt_sizes sz = {c.context, c.d_model, c.heads, c.layers, c.vocab, 1, 0};
    if (!eo_gpt_sizes_check(&sz, pb, sb, 0, err, sizeof err)) {
        fprintf(stderr, "eo-sample: %s: %s\n", load, err);
        return 1;
    }

    /* The prompt, cleaned as the corpus was. */
    size_t plen = strlen(prompt), n = 0;
    int32_t *toks = malloc((plen + (size_t)length + 1) * sizeof *toks);
    char *pclean = malloc(plen + 1);
    memcpy(pclean, prompt, plen + 1);
    for (size_t i = 0; i < plen; i++) {
        unsigned char ch = (unsigned char)pclean[i];
        if (ch == '\t') ch = ' ';
        if (ch >= 'A' && ch <= 'Z') ch = (unsigned char)(ch - 'A' + 'a');
        if (voc.id[ch] < 0) {
            fprintf(stderr, "eo-sample: the prompt's character 0x%02x is not in the model's "
                            "vocabulary\n", ch);
            return 1;
        }
        pclean[i] = (char)ch;
        toks[n++] = voc.id[ch];
    }
    if (n == 0) {
        fprintf(stderr, "eo-sample: empty prompt\n");
        return 2;
    }

    void *p = malloc(pb), *s = malloc(sb);
    eo_ctx ctx;
    eo_gpt m;
    if (!p || !s || !toks || !pclean || eo_ctx_init(&ctx, p, pb, s, sb) != EO_OK) {
        fprintf(stderr, "eo-sample: out of memory\n");
        return 1;
    }
    char cpu_err[400];
    if (eo_tool_cpu_apply(&ctx, cpu_err, sizeof cpu_err) != EO_OK) {
        fprintf(stderr, "eo-sample: %s\n", cpu_err);
        return 2;
    }
    /* On CUDA the weights and activations live in device arenas as large
     * as the host ones; only token ids go up and one row of logits comes
     * down per character. */
    if (cuda && eo_cuda_attach(&ctx, NULL, 0, pb, sb) != EO_OK) {
        fprintf(stderr, "eo-sample: %s\n", eo_last_error(&ctx));
        return 1;
    }
    if (eo_gpt_build(&ctx, cuda ? EO_CUDA : EO_CPU, &c, &m) != EO_OK) {
        fprintf(stderr, "eo-sample: %s\n", eo_last_error(&ctx));
        return 1;
    }
    if (eo_checkpoint_load(&ctx, &m.params, load, err, sizeof err) != EO_OK) {
        fprintf(stderr, "eo-sample: %s\n", err);
        return 1;
    }
    eo_set_grad(&ctx, 0);
    eo_set_training(&ctx, 0);
    eo_gpt_set_fused(&m, 1);
    eo_gpt_cache cache;
    if (eo_gpt_cache_init(&ctx, &m, 1, &cache) != EO_OK) {
        fprintf(stderr, "eo-sample: %s\n", eo_last_error(&ctx));
        return 1;
    }
    eo_pcg32 rng;
    eo_pcg32_seed(&rng, seed, 0x73616d70); /* "samp" */
    float *last = malloc((size_t)c.vocab * sizeof *last);
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
            return 1;
        }
        int t = sample(last, (int)c.vocab, temp, topk, &rng);
        toks[n++] = t;
        feed = 1;
        putchar(voc.chars[t]);
        fflush(stdout);
    }
    putchar('\n');
    if (cuda)
        eo_cuda_detach(&ctx);
    free(last);
    free(toks);
    free(pclean);
    free(p);
    free(s);
    return 0;
}
