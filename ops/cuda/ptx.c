/* ops/cuda/ptx.c — the table of embedded PTX modules.
 *
 * ptx_embed.inc is generated into the build folder from the ptx/ files by the
 * Makefile (rule in its "CUDA / PTX" block, which also puts that folder
 * on this file's include path); it defines eo_ptx_table[] and
 * EO_PTX_COUNT. Keeping the PTX as separate .ptx files lets ptxas check
 * them and people read them with their comments. */
#include "ops/cuda/ptx.h"
#include "ptx_embed.inc"

int eo_ptx_count(void)
{
    return EO_PTX_COUNT;
}

const eo_ptx_module *eo_ptx_get(int i)
{
    return i >= 0 && i < EO_PTX_COUNT ? &eo_ptx_table[i] : NULL;
}

/* strcmp is not among the libc functions the library may use. */
static int same(const char *a, const char *b)
{
    while (*a && *a == *b)
        a++, b++;
    return *a == *b;
}

const eo_ptx_module *eo_ptx_find(const char *name)
{
    if (!name)
        return NULL;
    for (int i = 0; i < EO_PTX_COUNT; i++)
        if (same(eo_ptx_table[i].name, name))
            return &eo_ptx_table[i];
    return NULL;
}
