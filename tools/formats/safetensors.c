/* tools/formats/safetensors.c — lookups on a loaded file and releasing it
 * (see safetensors.h); the f32 -> 16-bit roundings for writing BF16/F16
 * are the library's own (ops/cpu/half.h).
 * The dtype table is the library's (core/safetensors.c). */
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#include "tools/formats/safetensors.h"

uint32_t eo_st_crc32(uint32_t crc, const void *data, size_t n)
{
    /* zlib's crc32 takes a uInt length: a large tensor goes in pieces. */
    const unsigned char *p = data;
    uLong c = crc;
    while (n > 0) {
        uInt k = n > (size_t)(UINT_MAX / 2) ? (uInt)(UINT_MAX / 2) : (uInt)n;
        c = crc32(c, p, k);
        p += k;
        n -= k;
    }
    return (uint32_t)c;
}

const eo_st_tensor *eo_st_find(const eo_st_file *f, const char *name)
{
    if (!f || !name)
        return NULL;
    for (size_t i = 0; i < f->count; i++)
        if (strcmp(f->tensors[i].name, name) == 0)
            return &f->tensors[i];
    return NULL;
}

const char *eo_st_meta_get(const eo_st_file *f, const char *key)
{
    if (!f || !key)
        return NULL;
    for (size_t i = 0; i < f->nmeta; i++)
        if (strcmp(f->meta[i].key, key) == 0)
            return f->meta[i].value;
    return NULL;
}

void eo_st_close(eo_st_file *f)
{
    if (!f)
        return;
    free(f->buf);
    free(f->strings);
    memset(f, 0, sizeof *f);
}
