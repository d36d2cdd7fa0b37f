/* tools/formats/eo-safetensors.c — inspect safetensors files, and the C side of the
 * PyTorch interoperability check (tools/reference/safetensors_interop.py).
 *
 *   eo-safetensors ls FILE       one line per tensor: name, dtype, shape, bytes
 *   eo-safetensors dump FILE     the same plus every value (F32 as its bit
 *                                pattern in hex so comparisons are exact,
 *                                integer types in decimal) and the metadata
 *                                (backslash, newline and control bytes escaped)
 *   eo-safetensors sample FILE   write the fixed sample the interop script
 *                                expects to read back in Python
 *
 * Exit status 0 on success, 1 on any error (the message names the file),
 * 2 on a usage error. */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include "tools/cli/args.h"
#include "tools/formats/safetensors.h"

static void print_header(const eo_st_tensor *t)
{
    printf("%s %s [", t->name, eo_st_dtype_name(t->dtype));
    for (int d = 0; d < t->rank; d++)
        printf(d ? ",%" PRIu64 : "%" PRIu64, t->shape[d]);
    printf("] %zu", t->nbytes);
}

static void print_values(const eo_st_tensor *t)
{
    const unsigned char *p = t->data;
    size_t es = eo_st_dtype_size(t->dtype);
    for (size_t k = 0; k < t->nbytes / es; k++, p += es) {
        if (t->dtype == EO_ST_I32) {
            int32_t v;
            memcpy(&v, p, 4);
            printf(" %" PRId32, v);
        } else if (t->dtype == EO_ST_I64) {
            int64_t v;
            memcpy(&v, p, 8);
            printf(" %" PRId64, v);
        } else {
            /* Everything else as little-endian hex words: exact for floats. */
            printf(" 0x");
            for (size_t b = es; b > 0; b--)
                printf("%02x", p[b - 1]);
        }
    }
}

/* Metadata may hold any text; escape it so each pair stays on one line
 * and "key=value" splits unambiguously. */
static void print_escaped(const char *s, int is_key)
{
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '\\')
            printf("\\\\");
        else if (c == '\n')
            printf("\\n");
        else if (c < 0x20 || (is_key && c == '='))
            printf("\\x%02x", c);
        else
            putchar(c);
    }
}

static int list(const char *path, int values)
{
    char err[512];
    eo_st_file f;
    if (eo_st_read(path, &f, err, sizeof err) != EO_OK) {
        fprintf(stderr, "eo-safetensors: %s\n", err);
        return 1;
    }
    for (size_t m = 0; values && m < f.nmeta; m++)
    {
        printf("meta ");
        print_escaped(f.meta[m].key, 1);
        putchar('=');
        print_escaped(f.meta[m].value, 0);
        putchar('\n');
    }
    for (size_t k = 0; k < f.count; k++) {
        print_header(&f.tensors[k]);
        if (values) {
            printf(":");
            print_values(&f.tensors[k]);
        }
        printf("\n");
    }
    eo_st_close(&f);
    return 0;
}

/* The sample: awkward values (denormal, -0, extremes, a NaN payload) so a
 * reader that converts rather than copies would be caught. */
static int sample(const char *path)
{
    static const uint32_t wbits[6] = {0x3f000000u, 0xbfa00000u, 0x7f61b1e6u,
                                      0x00000001u, 0x80000000u, 0x7fc00001u};
    float w[6], b[3] = {1.0f, 2.0f, 3.0f}, s = 42.0f;
    memcpy(w, wbits, sizeof w);
    int32_t idx[4] = {0, -1, INT32_MAX, INT32_MIN};
    eo_st_tensor t[5] = {
        {.name = "layer.weight", .dtype = EO_ST_F32, .rank = 2, .shape = {2, 3}, .data = w},
        {.name = "layer.bias", .dtype = EO_ST_F32, .rank = 1, .shape = {3}, .data = b},
        {.name = "indices", .dtype = EO_ST_I32, .rank = 1, .shape = {4}, .data = idx},
        {.name = "scalar", .dtype = EO_ST_F32, .rank = 0, .data = &s},
        {.name = "empty", .dtype = EO_ST_F32, .rank = 2, .shape = {0, 3}, .data = NULL},
    };
    eo_st_meta meta[2] = {{"format", "pt"}, {"note", "written by \"eo-safetensors\" \xc3\xa9"}};
    char err[512];
    if (eo_st_write(path, t, 5, meta, 2, err, sizeof err) != EO_OK) {
        fprintf(stderr, "eo-safetensors: %s\n", err);
        return 1;
    }
    return 0;
}

static void usage(FILE *f)
{
    fprintf(f, "usage: eo-safetensors ls|dump|sample FILE\n"
               "Inspect a safetensors file, or write the PyTorch interop sample.\n"
               "\n"
               "  ls FILE       one line per tensor: name, dtype, shape, bytes\n"
               "  dump FILE     the same with the metadata and every value (F32 as exact hex\n"
               "                bit patterns, integers in decimal)\n"
               "  sample FILE   write the fixed sample tools/reference/safetensors_interop.py reads\n"
               "\n"
               "  -h, --help     this text\n"
               "      --version  the program's and the library's version\n");
}

int main(int argc, char **argv)
{
    eo_args_program("eo-safetensors");
    static const struct option opts[] = {
        {"help", no_argument, NULL, 'h'}, {"version", no_argument, NULL, 'V'}, {NULL, 0, NULL, 0},
    };
    int o;
    while ((o = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        if (o == 'h') {
            usage(stdout);
            return 0;
        }
        if (o == 'V') {
            eo_args_version(stdout);
            return 0;
        }
        return eo_args_try_help(); /* getopt_long named the problem */
    }
    static const char *const cmds[] = {"ls", "dump", "sample"};
    int cmd;
    if (argc - optind == 0) {
        fprintf(stderr, "eo-safetensors: no command (ls, dump or sample)\n");
        return eo_args_try_help();
    }
    if (!eo_arg_choice("command", argv[optind], cmds, 3, &cmd))
        return eo_args_try_help();
    if (argc - optind != 2) {
        fprintf(stderr, "eo-safetensors: %s takes one FILE, %d given\n", cmds[cmd], argc - optind - 1);
        return eo_args_try_help();
    }
    const char *path = argv[optind + 1];
    return cmd == 2 ? sample(path) : list(path, cmd == 1);
}
