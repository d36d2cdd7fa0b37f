/* tools/train/eo-sample.c — generate text with a GPT:
 *
 *   eo-sample --load gpt.safetensors --prompt "the " --temperature 0.8 \
 *             --top-k 10 --length 300 --seed 7
 *   eo-sample --load gpt2/model.safetensors --tokenizer gpt2 \
 *             --prompt "Hello" --max-new-tokens 50 --temperature 0
 *
 * A character GPT of `eo-train --model gpt --save FILE` carries its
 * vocabulary and sizes in the metadata, so nothing else is needed. A
 * GPT-2 file (Hugging Face's layout or EveryO's, tied head or not, or
 * eo-train --tokens' checkpoint) is read through tools/formats/gpt2.h and
 * needs a byte-level BPE tokenizer (--tokenizer DIR with vocab.json and
 * merges.txt, --vocab F --merges F, or --tiktoken F; tools/text/): the
 * prompt is encoded with it and each new token's bytes are written as
 * they are (a token may end inside a UTF-8 character; the next completes
 * it). Sampling (temperature, top-k, top-p) and the loop are
 * tools/text/generate.h.
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
#include "tools/train/arena_size.h"
#include "tools/train/gpt_limits.h"
#include "tools/train/pcg32.h"
#include "tools/train/precision.h"
#include "tools/formats/gpt2.h"
#include "tools/formats/safetensors.h"
#include "tools/train/textlm.h"
#include "tools/text/bpe_files.h"
#include "tools/text/generate.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: eo-sample --load FILE [options]\n"
               "Continue a prompt with a character GPT of eo-train --model gpt --save FILE,\n"
               "or a GPT-2 checkpoint (Hugging Face's or EveryO's layout) and its tokenizer.\n"
               "\n"
               "  -l, --load FILE        the checkpoint (required)\n"
               "      --tokenizer DIR    GPT-2 BPE tokenizer: DIR/vocab.json and DIR/merges.txt\n"
               "      --vocab F --merges F   the same two files named one by one\n"
               "      --tiktoken F       a tiktoken rank file (gpt2.tiktoken) instead\n"
               "      --heads N          attention heads, when neither the file's metadata nor\n"
               "                         a config.json beside it says (default: d_model / 64)\n"
               "  -p, --prompt TEXT      text to continue (default: a newline)\n"
               "  -t, --temperature F    softmax temperature, 0 = greedy (1.0)\n"
               "  -k, --top-k K          sample among the K most likely tokens (0: all)\n"
               "      --top-p P          nucleus: the fewest most likely tokens whose\n"
               "                         probabilities sum to P or more (1: all)\n"
               "  -n, --length N, --max-new-tokens N   tokens to generate (300)\n"
               "      --seed N           sampling seed (1)\n"
               "      --precision P      f32, or bf16 / f16: the matmuls read 16-bit copies\n"
               "                         of the weights (kept beside the f32 ones: 1.5x the\n"
               "                         weights' memory) and the key/value cache is 16-bit\n"
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

enum { O_SEED = 256, O_VERSION, O_DEVICE, O_PERSIST_MB, O_STEP_MB, O_TOKENIZER, O_VOCAB,
       O_MERGES, O_TIKTOKEN, O_HEADS, O_TOP_P, O_PRECISION };
static const struct option opts[] = {
    {"load", required_argument, NULL, 'l'},   {"prompt", required_argument, NULL, 'p'},
    {"temperature", required_argument, NULL, 't'},
    {"top-k", required_argument, NULL, 'k'},  {"length", required_argument, NULL, 'n'},
    {"seed", required_argument, NULL, O_SEED}, {"help", no_argument, NULL, 'h'},
    {"version", no_argument, NULL, O_VERSION}, {"device", required_argument, NULL, O_DEVICE},
    {"persist-mb", required_argument, NULL, O_PERSIST_MB},
    {"step-mb", required_argument, NULL, O_STEP_MB},
    {"max-new-tokens", required_argument, NULL, 'n'},
    {"tokenizer", required_argument, NULL, O_TOKENIZER}, {"vocab", required_argument, NULL, O_VOCAB},
    {"merges", required_argument, NULL, O_MERGES}, {"tiktoken", required_argument, NULL, O_TIKTOKEN},
    {"heads", required_argument, NULL, O_HEADS}, {"top-p", required_argument, NULL, O_TOP_P},
    {"precision", required_argument, NULL, O_PRECISION},
    {NULL, 0, NULL, 0},
};

/* Where generated tokens go: characters, or a tokenizer's bytes. */
typedef struct out_sink {
    const eo_vocab *voc;
    const eo_bpe *bpe;
} out_sink;

static int emit_token(void *arg, int32_t t)
{
    const out_sink *o = arg;
    if (o->bpe) {
        size_t len;
        const unsigned char *b = eo_bpe_token(o->bpe, (uint32_t)t, &len);
        if (len)
            fwrite(b, 1, len, stdout);
    } else {
        putchar(o->voc->chars[t]);
    }
    fflush(stdout);
    return ferror(stdout) != 0;
}

/* The measuring run (tools/train/arena_size.h): what main does before
 * generating, then the largest forward generation runs — a whole context
 * against an empty cache. The weights are the random ones of the build:
 * the arenas' figures do not depend on the values. */
typedef struct measure_arg {
    const eo_gpt_config *c;
    int dtype; /* --precision: EO_F32, or the autocast dtype */
} measure_arg;

/* --precision bf16 / f16: autocast with a 16-bit working copy of every
 * weight (eo_params_enable_low), the f32 masters kept (what
 * eo_gpt2_load fills); the key/value cache is made afterwards, so it is
 * 16-bit too. */
static eo_status use_precision(eo_ctx *ctx, const eo_gpt *m, int dtype)
{
    if (dtype == EO_F32)
        return EO_OK;
    eo_status st = eo_ctx_set_autocast(ctx, (eo_dtype)dtype);
    return st == EO_OK ? eo_params_enable_low(ctx, &m->params, (eo_dtype)dtype) : st;
}

static eo_status sample_measure_run(eo_ctx *ctx, void *arg)
{
    const measure_arg *ma = arg;
    const eo_gpt_config *c = ma->c;
    eo_gpt m;
    eo_gpt_cache cache;
    eo_tensor *x, *lg;
    eo_ctx_set_inference(ctx, 1); /* as main: the weights alone, no tape */
    eo_status st = eo_gpt_build(ctx, EO_CPU, c, &m);
    if (st != EO_OK)
        return st;
    eo_set_grad(ctx, 0);
    eo_set_training(ctx, 0);
    eo_gpt_set_fused(&m, 1);
    if ((st = use_precision(ctx, &m, ma->dtype)) != EO_OK)
        return st;
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

/* The tokenizer the options name (none: *v stays empty). 1 read, 0
 * none asked for, -1 an error (printed). */
static int read_tokenizer(const char *dir, const char *vocab, const char *merges,
                          const char *tiktoken, eo_bpe_vocab *v)
{
    char err[512], vp[4096], mp[4096];
    eo_status st;
    if ((dir != NULL) + (vocab || merges) + (tiktoken != NULL) > 1) {
        fprintf(stderr, "eo-sample: give one of --tokenizer DIR, --vocab F --merges F, "
                        "--tiktoken F\n");
        return -1;
    }
    if (dir) {
        snprintf(vp, sizeof vp, "%s/vocab.json", dir);
        snprintf(mp, sizeof mp, "%s/merges.txt", dir);
        vocab = vp;
        merges = mp;
    }
    if ((vocab != NULL) != (merges != NULL)) {
        fprintf(stderr, "eo-sample: --vocab and --merges go together\n");
        return -1;
    }
    if (vocab)
        st = eo_bpe_read_hf(vocab, merges, v, err, sizeof err);
    else if (tiktoken)
        st = eo_bpe_read_tiktoken(tiktoken, v, err, sizeof err);
    else
        return 0;
    if (st != EO_OK) {
        fprintf(stderr, "eo-sample: %s\n", err);
        return -1;
    }
    return 1;
}

int main(int argc, char **argv)
{
    eo_args_program("eo-sample");
    const char *load = NULL, *prompt = "\n";
    const char *tok_dir = NULL, *tok_vocab = NULL, *tok_merges = NULL, *tok_tiktoken = NULL;
    eo_gen_opts go = { 1.0f, 0, 1.0f, 0 };
    int length = 300, heads = 0, precision = EO_F32;
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
        case 't': ok = eo_arg_float("--temperature", v, &go.temperature);
            if (ok && (go.temperature < 0 || go.temperature > 1e4f)) {
                fprintf(stderr, "eo-sample: --temperature: '%s' is not from 0 to 10000\n", v);
                return 2;
            }
            break;
        case O_TOP_P: ok = eo_arg_float("--top-p", v, &go.top_p);
            if (ok && !(go.top_p > 0 && go.top_p <= 1)) {
                fprintf(stderr, "eo-sample: --top-p: '%s' is not above 0 and at most 1\n", v);
                return 2;
            }
            break;
        case 'k': ok = eo_arg_int_range("--top-k", v, 0, 1 << 30, &go.top_k); break;
        case 'n': ok = eo_arg_int_range("--length", v, 0, 1 << 24, &length); break;
        case O_SEED: ok = eo_arg_u64("--seed", v, &seed); break;
        case O_DEVICE: ok = eo_arg_choice("--device", v, devices, 2, &cuda); break;
        case O_PERSIST_MB: ok = eo_arg_arena_mb("--persist-mb", v, &persist_mb); break;
        case O_STEP_MB: ok = eo_arg_arena_mb("--step-mb", v, &step_mb); break;
        case O_TOKENIZER: tok_dir = v; break;
        case O_VOCAB: tok_vocab = v; break;
        case O_MERGES: tok_merges = v; break;
        case O_TIKTOKEN: tok_tiktoken = v; break;
        case O_PRECISION:
            precision = eo_precision_parse(v);
            if (precision < 0) {
                fprintf(stderr, "eo-sample: --precision: '%s' is not f32, bf16 or f16\n", v);
                return 2;
            }
            break;
        case O_HEADS: ok = eo_arg_int_range("--heads", v, 1, 1 << 16, &heads); break;
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
    eo_bpe_vocab bv = {0};
    int have_bpe = read_tokenizer(tok_dir, tok_vocab, tok_merges, tok_tiktoken, &bv);
    if (have_bpe < 0)
        return 1;
    char err[512];
    eo_st_file f;
    if (eo_st_read(load, &f, err, sizeof err) != EO_OK) {
        fprintf(stderr, "eo-sample: %s\n", err);
        eo_bpe_vocab_free(&bv);
        return 1;
    }
    eo_gpt_config c = {0}; /* untied: eo-train saves its own lm_head */
    const char *model = eo_st_meta_get(&f, "model"), *chars = eo_st_meta_get(&f, "vocab");
    eo_vocab voc;
    if (model && strcmp(model, "gpt") != 0) {
        fprintf(stderr, "eo-sample: %s holds a '%s' model, not a GPT (eo-train --load %s --eval "
                        "evaluates it)\n", load, model, load);
        eo_st_close(&f);
        eo_bpe_vocab_free(&bv);
        return 1;
    }
    eo_gpt2_info g2;
    if (have_bpe || !chars) {
        /* Tokens: a GPT-2 file of Hugging Face, or EveryO's (eo-train
         * --tokens, eo-safetensors convert-gpt2), with a BPE tokenizer. */
        if (eo_gpt2_inspect(&f, load, heads, &g2, err, sizeof err) != EO_OK) {
            if (have_bpe)
                fprintf(stderr, "eo-sample: %s\n", err);
            else
                fprintf(stderr, "eo-sample: %s: not a GPT checkpoint of eo-train (metadata "
                                "model=gpt, vocab, context, d_model, heads, layers) nor a GPT-2 "
                                "file (%s)\n", load, err);
            eo_st_close(&f);
            eo_bpe_vocab_free(&bv);
            return 1;
        }
        eo_st_close(&f);
        if (!have_bpe) {
            fprintf(stderr, "eo-sample: %s holds a GPT-2 model (%s layout, n_layer %lld, n_embd "
                            "%lld, vocab %lld) without a character vocabulary: give its "
                            "tokenizer (--tokenizer DIR with vocab.json and merges.txt, --vocab F "
                            "--merges F, or --tiktoken F)\n",
                    load, g2.layout == EO_GPT2_HF ? "Hugging Face" : "EveryO",
                    (long long)g2.cfg.layers, (long long)g2.cfg.d_model, (long long)g2.cfg.vocab);
            return 1;
        }
        size_t tv = eo_bpe_vocab_size(bv.bpe);
        if ((int64_t)tv > g2.cfg.vocab) {
            fprintf(stderr, "eo-sample: the tokenizer has %zu tokens, the model of %s only %lld\n",
                    tv, load, (long long)g2.cfg.vocab);
            eo_bpe_vocab_free(&bv);
            return 1;
        }
        go.usable = (int64_t)tv; /* a padded vocabulary's extra rows are never drawn */
        c = g2.cfg;
        heads = (int)c.heads;
    } else {
        if (!model || !chars || eo_vocab_from_chars(&voc, chars) != 0 ||
            !meta_int(&f, "context", &c.context) || !meta_int(&f, "d_model", &c.d_model) ||
            !meta_int(&f, "heads", &c.heads) || !meta_int(&f, "layers", &c.layers)) {
            fprintf(stderr, "eo-sample: %s: not a GPT checkpoint of eo-train (metadata model=gpt, "
                            "vocab, context, d_model, heads, layers)\n", load);
            eo_st_close(&f);
            return 1;
        }
        eo_st_close(&f);
        c.vocab = voc.size;
        if (!heads)
            heads = (int)c.heads;
    }
    eo_gpt_sizes sz = {c.context, c.d_model, c.heads, c.layers, c.vocab, 1, 0};
    size_t mem = eo_memory_bytes();
    if (!eo_gpt_sizes_check_vocab(&sz, have_bpe ? EO_GPT_MAX_TOKEN_VOCAB : EO_GPT_MAX_VOCAB,
                                  persist_mb ? persist_mb << 20 : mem,
                                  step_mb ? step_mb << 20 : mem, 0, err, sizeof err)) {
        fprintf(stderr, "eo-sample: %s: %s\n", load, err);
        eo_bpe_vocab_free(&bv);
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
        if (eo_arena_measure(pg, sg, (eo_par){0}, sample_measure_run,
                             &(measure_arg){ &c, precision },
                             &need, err, sizeof err) != EO_OK) {
            fprintf(stderr, "eo-sample: %s: %s\n", load, err);
            eo_bpe_vocab_free(&bv);
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
    uint32_t *ids = have_bpe ? malloc((plen + 1) * sizeof *ids) : NULL;
    size_t wb = have_bpe ? eo_bpe_encode_work_bytes(plen) : 0;
    void *work = wb ? malloc(wb) : NULL;
    void *p = malloc(pb), *s = malloc(sb);
    eo_ctx ctx;
    eo_gpt m;
    if (!toks || !pclean || !p || !s || (have_bpe && (!ids || (wb && !work)))) {
        fprintf(stderr, "eo-sample: out of memory (arenas %zu + %zu MiB)\n", pb >> 20, sb >> 20);
        goto out;
    }
    memcpy(pclean, prompt, plen + 1);
    if (have_bpe) {
        /* The prompt's bytes as they are; GPT2Tokenizer's ids. */
        size_t cnt;
        if (eo_bpe_encode(bv.bpe, prompt, plen, work, wb, ids, plen + 1, &cnt, err, sizeof err) !=
            EO_OK) {
            fprintf(stderr, "eo-sample: %s\n", err);
            goto out;
        }
        for (size_t i = 0; i < cnt; i++)
            toks[n++] = (int32_t)ids[i];
    } else {
        /* The prompt, cleaned as the corpus was. */
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
    char cpu_err[400];
    if (eo_tool_cpu_apply(&ctx, cpu_err, sizeof cpu_err) != EO_OK) {
        fprintf(stderr, "eo-sample: %s\n", cpu_err);
        rc = 2;
        goto out;
    }
    /* On CUDA the weights and activations live in device arenas (as large
     * as the host ones, twice a measured figure: eo_arena_device); only
     * token ids go up and one row of logits comes down per token. */
    if (cuda && eo_cuda_attach(&ctx, NULL, 0, eo_arena_device(pb, persist_mb != 0),
                               eo_arena_device(sb, step_mb != 0)) != EO_OK) {
        fprintf(stderr, "eo-sample: %s\n", eo_last_error(&ctx));
        goto out;
    }
    attached = cuda;
    /* Built from the file's shapes and loaded in either layout (eo-train's
     * own, or Hugging Face's), tied head or not; its sizes must be those
     * found above. */
    eo_ctx_set_inference(&ctx, 1); /* weights without gradients, no tape */
    if (eo_gpt2_open(&ctx, cuda ? EO_CUDA : EO_CPU, load, heads, &m, NULL, err, sizeof err) !=
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
    if (use_precision(&ctx, &m, precision) != EO_OK ||
        eo_gpt_cache_init(&ctx, &m, 1, &cache) != EO_OK) {
        fprintf(stderr, "eo-sample: %s\n", eo_last_error(&ctx));
        goto out;
    }
    eo_pcg32 rng;
    eo_pcg32_seed(&rng, seed, 0x73616d70); /* "samp" */
    if (have_bpe)
        fwrite(prompt, 1, plen, stdout); /* decode(encode(prompt)) is the prompt */
    else
        fputs(pclean, stdout);
    fflush(stdout);
    out_sink sink = { have_bpe ? NULL : &voc, have_bpe ? bv.bpe : NULL };
    eo_status st = eo_gen_run(&ctx, &m, cuda ? EO_CUDA : EO_CPU, &cache, toks, n, length, &go,
                              &rng, emit_token, &sink, NULL);
    if (st != EO_OK) {
        fprintf(stderr, "\neo-sample: %s\n", st == EO_ERR_OOM ? "out of memory"
                                                              : eo_last_error(&ctx));
        goto out;
    }
    if (!have_bpe)
        putchar('\n');
    rc = fflush(stdout) == 0 && !ferror(stdout) ? 0 : 1;
out:
    if (attached)
        eo_cuda_detach(&ctx);
    free(toks);
    free(pclean);
    free(ids);
    free(work);
    free(p);
    free(s);
    eo_bpe_vocab_free(&bv);
    return rc;
}
