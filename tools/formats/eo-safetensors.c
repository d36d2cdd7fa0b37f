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
 * Exit status 0 on success, 1 on any error (the message names the file). */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
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

int main(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[1], "ls") == 0)
        return list(argv[2], 0);
    if (argc == 3 && strcmp(argv[1], "dump") == 0)
        return list(argv[2], 1);
    if (argc == 3 && strcmp(argv[1], "sample") == 0)
        return sample(argv[2]);
    fprintf(stderr, "usage: eo-safetensors ls|dump|sample FILE\n");
    return 1;
}
