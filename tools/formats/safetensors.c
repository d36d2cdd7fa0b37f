/* tools/formats/safetensors.c — what the reader and writer share: the dtype table
 * and lookups on a loaded file (see safetensors.h). */
#include <stdlib.h>
#include <string.h>
#include "tools/formats/safetensors.h"

static const struct {
    const char *name;
    size_t size;
} dtypes[EO_ST_DTYPE_COUNT] = {
    [EO_ST_BOOL] = {"BOOL", 1},     [EO_ST_U8] = {"U8", 1},
    [EO_ST_I8] = {"I8", 1},         [EO_ST_F8_E5M2] = {"F8_E5M2", 1},
    [EO_ST_F8_E4M3] = {"F8_E4M3", 1}, [EO_ST_I16] = {"I16", 2},
    [EO_ST_U16] = {"U16", 2},       [EO_ST_F16] = {"F16", 2},
    [EO_ST_BF16] = {"BF16", 2},     [EO_ST_I32] = {"I32", 4},
    [EO_ST_U32] = {"U32", 4},       [EO_ST_F32] = {"F32", 4},
    [EO_ST_I64] = {"I64", 8},       [EO_ST_U64] = {"U64", 8},
    [EO_ST_F64] = {"F64", 8},
};

const char *eo_st_dtype_name(eo_st_dtype t)
{
    return (unsigned)t < EO_ST_DTYPE_COUNT ? dtypes[t].name : NULL;
}

size_t eo_st_dtype_size(eo_st_dtype t)
{
    return (unsigned)t < EO_ST_DTYPE_COUNT ? dtypes[t].size : 0;
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
    free(f->tensors);
    free(f->meta);
    free(f->buf);
    free(f->strings);
    memset(f, 0, sizeof *f);
}
