/* ops/cuda/ptx.h — the hand-written PTX modules compiled into the library.
 *
 * The Makefile turns every ptx/<name>.ptx into a NUL-terminated character
 * array (tools/build/ptx-embed.awk); ops/cuda/ptx.c publishes them here so the
 * CUDA backend can hand them to cuModuleLoadDataEx and tests can inspect
 * them. Nothing here needs a GPU or a CUDA header. */
#ifndef EO_CUDA_PTX_H
#define EO_CUDA_PTX_H

#include <stddef.h>

typedef struct eo_ptx_module {
    const char *name; /* base name of the file: "softmax" for ptx/softmax.ptx */
    const char *text; /* the PTX source, NUL-terminated */
    size_t len;       /* strlen(text) */
} eo_ptx_module;

/* Number of modules and the i-th one (NULL when i is out of range). */
int eo_ptx_count(void);
const eo_ptx_module *eo_ptx_get(int i);
/* The module called `name`, or NULL. */
const eo_ptx_module *eo_ptx_find(const char *name);

#endif
