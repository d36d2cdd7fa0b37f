/* tools/text/eo-tokenize.c — GPT-2's byte-level BPE from the command line
 * (core/tokenizer.h, files read by tools/text/bpe_files.h).
 *
 *   eo-tokenize (--vocab vocab.json --merges merges.txt | --tiktoken FILE)
 *               [--time] encode|decode|count [FILE]
 *
 *   encode   the text of FILE (default standard input), any bytes, as ids:
 *            decimal, one space between them, a newline at the end
 *   decode   ids (decimal, separated by white space) back to their bytes,
 *            exactly
 *   count    the number of tokens and bytes
 *   --time   also print, to standard error, the encoding's tokens/s
 *            (encode and count; the file read first, then timed alone)
 *
 * Exit status 0 on success, 1 on an error (the message names the file),
 * 2 on a usage error. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "tools/cli/args.h"
#include "tools/text/bpe_files.h"

static void usage(FILE *f)
{
    fprintf(f,
            "usage: eo-tokenize (--vocab vocab.json --merges merges.txt | --tiktoken FILE)\n"
            "                   [--time] encode|decode|count [FILE]\n"
            "GPT-2's byte-level BPE: encode text (any bytes) to ids, decode ids back to\n"
            "the exact bytes, or count tokens. FILE defaults to standard input.\n"
            "  --vocab FILE     Hugging Face vocab.json (with --merges)\n"
            "  --merges FILE    Hugging Face merges.txt\n"
            "  --tiktoken FILE  a tiktoken rank file (gpt2.tiktoken)\n"
            "  --time           print the encoding's tokens/s to standard error\n"
            "  -h, --help       this text\n"
            "      --version    the version\n");
}

static unsigned char *read_all(FILE *f, size_t *n)
{
    size_t cap = 1 << 16, len = 0;
    unsigned char *b = malloc(cap);
    while (b) {
        len += fread(b + len, 1, cap - len, f);
        if (len < cap)
            break;
        unsigned char *nb = realloc(b, cap *= 2);
        if (!nb)
            free(b);
        b = nb;
    }
    if (b && ferror(f)) {
        free(b);
        b = NULL;
    }
    *n = len;
    return b;
}

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

int main(int argc, char **argv)
{
    enum { O_VERSION = 256, O_VOCAB, O_MERGES, O_TIKTOKEN, O_TIME };
    static const struct option opts[] = {
        {"vocab", required_argument, 0, O_VOCAB},
        {"merges", required_argument, 0, O_MERGES},
        {"tiktoken", required_argument, 0, O_TIKTOKEN},
        {"time", no_argument, 0, O_TIME},
        {"help", no_argument, 0, 'h'},
        {"version", no_argument, 0, O_VERSION},
        {0, 0, 0, 0},
    };
    eo_args_program("eo-tokenize");
    const char *vocab = NULL, *merges = NULL, *tik = NULL;
    int timed = 0, o;
    while ((o = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (o) {
        case 'h': usage(stdout); return 0;
        case O_VERSION: eo_args_version(stdout); return 0;
        case O_VOCAB: vocab = optarg; break;
        case O_MERGES: merges = optarg; break;
        case O_TIKTOKEN: tik = optarg; break;
        case O_TIME: timed = 1; break;
        default: return eo_args_try_help();
        }
    }
    if (!tik == !(vocab || merges) || (!tik && !(vocab && merges))) {
        fprintf(stderr, "eo-tokenize: give --vocab and --merges, or --tiktoken\n");
        return eo_args_try_help();
    }
    static const char *const modes[] = {"encode", "decode", "count"};
    int mode;
    if (optind >= argc) {
        fprintf(stderr, "eo-tokenize: missing the command (encode, decode or count)\n");
        return eo_args_try_help();
    }
    if (!eo_arg_choice("command", argv[optind], modes, 3, &mode))
        return eo_args_try_help();
    const char *path = optind + 1 < argc ? argv[optind + 1] : NULL;
    if (optind + 2 < argc) {
        fprintf(stderr, "eo-tokenize: unexpected argument '%s'\n", argv[optind + 2]);
        return eo_args_try_help();
    }
    FILE *in = path ? fopen(path, "rb") : stdin;
    if (!in) {
        fprintf(stderr, "eo-tokenize: %s: %s\n", path, strerror(errno));
        return 1;
    }
    size_t n;
    unsigned char *text = read_all(in, &n);
    if (path)
        fclose(in);
    if (!text) {
        fprintf(stderr, "eo-tokenize: %s: cannot read\n", path ? path : "(standard input)");
        return 1;
    }
    char err[512];
    eo_bpe_vocab v;
    eo_status s = tik ? eo_bpe_read_tiktoken(tik, &v, err, sizeof err)
                      : eo_bpe_read_hf(vocab, merges, &v, err, sizeof err);
    if (s != EO_OK) {
        fprintf(stderr, "eo-tokenize: %s\n", err);
        free(text);
        return 1;
    }
    int rc = 0;
    if (mode == 1) {
        /* Ids in, bytes out. */
        uint32_t *ids = malloc((n / 2 + 1) * sizeof *ids);
        size_t k = 0;
        char *p = (char *)text, *end = p + n;
        while (ids && p < end) {
            while (p < end && strchr(" \t\r\n", *p))
                p++;
            if (p == end)
                break;
            unsigned long long id = 0;
            char *q = p;
            while (q < end && *q >= '0' && *q <= '9' && id <= UINT32_MAX)
                id = id * 10 + (unsigned)(*q++ - '0');
            if (q == p || id > UINT32_MAX || (q < end && !strchr(" \t\r\n", *q))) {
                fprintf(stderr, "eo-tokenize: %s: byte %zu: expected a decimal id\n",
                        path ? path : "(standard input)", (size_t)(p - (char *)text));
                rc = 1;
                break;
            }
            ids[k++] = (uint32_t)id;
            p = q;
        }
        size_t len;
        if (!rc && ids && (s = eo_bpe_decode(v.bpe, ids, k, NULL, 0, &len, err, sizeof err)) == EO_OK) {
            unsigned char *out = malloc(len + 1);
            eo_bpe_decode(v.bpe, ids, k, out, len, &len, err, sizeof err);
            fwrite(out, 1, len, stdout);
            free(out);
        } else if (!rc) {
            fprintf(stderr, "eo-tokenize: %s\n", ids ? err : "out of memory");
            rc = 1;
        }
        free(ids);
    } else {
        size_t wb = eo_bpe_encode_work_bytes(n);
        void *work = malloc(wb);
        uint32_t *ids = malloc((n + 1) * sizeof *ids);
        size_t k = 0;
        double t0 = now();
        s = work && ids ? eo_bpe_encode(v.bpe, text, n, work, wb, ids, n, &k, err, sizeof err) : EO_ERR_OOM;
        double dt = now() - t0;
        if (s != EO_OK) {
            fprintf(stderr, "eo-tokenize: %s\n", work && ids ? err : "out of memory");
            rc = 1;
        } else if (mode == 0) {
            for (size_t i = 0; i < k; i++)
                printf(i ? " %u" : "%u", ids[i]);
            printf("\n");
        } else {
            printf("%zu tokens, %zu bytes\n", k, n);
        }
        if (!rc && timed)
            fprintf(stderr, "eo-tokenize: %zu tokens in %.3f s: %.0f tokens/s, %.2f MB/s\n", k, dt,
                    dt > 0 ? (double)k / dt : 0.0, dt > 0 ? (double)n / dt / 1e6 : 0.0);
        free(work);
        free(ids);
    }
    if (fflush(stdout) != 0) {
        fprintf(stderr, "eo-tokenize: cannot write the output\n");
        rc = 1;
    }
    eo_bpe_vocab_free(&v);
    free(text);
    return rc;
}
