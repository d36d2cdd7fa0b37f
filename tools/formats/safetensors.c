/* tools/formats/safetensors.c — lookups on a loaded file and releasing it
 * (see safetensors.h); the f32 -> 16-bit roundings for writing BF16/F16
 * are the library's own (ops/cpu/half.h).
 * The dtype table is the library's (core/safetensors.c). */
#include <stdlib.h>
#include <string.h>
#include "tools/formats/safetensors.h"

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
