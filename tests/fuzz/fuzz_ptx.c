/* tests/fuzz/fuzz_ptx.c — the PTX interpreter (tools/ptxsim): parsing any
 * text, then running what loads under a step limit.
 *
 * The parser must refuse with EO_ERR_FORMAT / EO_ERR_UNSUPPORTED and a
 * "line N:" message, or hand back kernels the executor can trust. Each
 * kernel that loads is then launched with every 8-byte parameter a
 * pointer to its own 1 KiB buffer and every 4-byte one a small number,
 * so loops that count to a parameter end; the step limit ends the rest.
 * The launch shape (1-2 blocks of 1-96 x 1-2 threads, so partial warps
 * too) and the number come from a hash of the input, so they vary
 * between inputs yet each input replays the same. A fault is a fine outcome (most
 * random kernels do something wrong); crashing the interpreter, or a
 * fault it cannot describe, is not. */
#include <stdlib.h>
#include <string.h>
#include "tests/fuzz/fuzz.h"
#include "tools/ptxsim/ptxsim.h"

enum { BUF = 1024, MAX_KERNELS = 4, MAX_PARAM_BYTES = 4096 };

/* FNV-1a: any fixed mixing of the bytes will do. */
static uint32_t hash(const uint8_t *d, size_t n)
{
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < n; i++)
        h = (h ^ d[i]) * 16777619u;
    return h;
}

static void run_kernel(const eo_px_kernel *k, uint32_t h32)
{
    size_t bytes = eo_px_kernel_param_bytes(k);
    if (bytes > MAX_PARAM_BYTES)
        eo_fuzz_fail("kernel '%s' has %zu parameter bytes, past the parser's limit",
                     eo_px_kernel_name(k), bytes);
    unsigned char params[MAX_PARAM_BYTES] = {0};
    eo_px_heap *h = eo_px_heap_new();
    if (!h)
        return;
    for (int i = 0; i < eo_px_kernel_param_count(k); i++) {
        size_t off, size;
        const char *type;
        eo_px_kernel_param(k, i, &off, &size, &type);
        EO_FUZZ_CHECK(off <= bytes && size <= bytes - off, "parameter %d outside the buffer", i);
        if (size == 8) {
            uint64_t dev;
            if (eo_px_heap_alloc(h, BUF, &dev) == EO_OK)
                memcpy(params + off, &dev, 8);
        } else if (size == 4) {
            uint32_t v = 1 + (h32 >> 16) % 32;
            memcpy(params + off, &v, 4);
        }
    }
    eo_px_config c;
    memset(&c, 0, sizeof c);
    c.grid = (eo_px_dim){1 + (h32 >> 8) % 2, 1, 1};
    c.block = (eo_px_dim){1 + h32 % 96, 1 + (h32 >> 12) % 2, 1};
    c.dyn_shared = 256;
    c.params = params;
    c.params_size = bytes;
    c.step_limit = 4000;
    eo_px_fault f;
    memset(&f, 0, sizeof f);
    eo_status st = eo_px_run(k, h, &c, &f);
    if (st == EO_ERR_CUDA)
        EO_FUZZ_CHECK(f.kind > EO_PX_FAULT_NONE && f.kind < EO_PX_FAULT_COUNT && f.msg[0] &&
                          eo_fuzz_mentions(f.msg, eo_px_kernel_name(k)),
                      "fault %d without a description: '%s'", f.kind, f.msg);
    else
        EO_FUZZ_CHECK(st == EO_OK || st == EO_ERR_ARG, "eo_px_run gave status %d", st);
    eo_px_heap_free(h);
}

int eo_fuzz_ptx(const uint8_t *data, size_t size)
{
    char err[256] = "";
    eo_px_module *m = NULL;
    eo_status st = eo_px_module_load((const char *)data, size, &m, err, sizeof err);
    if (st != EO_OK) {
        EO_FUZZ_CHECK(st == EO_ERR_FORMAT || st == EO_ERR_UNSUPPORTED || st == EO_ERR_OOM,
                      "status %d: %s", st, err);
        EO_FUZZ_CHECK(m == NULL && strncmp(err, "line ", 5) == 0, "refusal without a line: %s",
                      err);
        return 0;
    }
    int n = eo_px_module_kernel_count(m);
    uint32_t h32 = hash(data, size);
    for (int i = 0; i < n && i < MAX_KERNELS; i++) {
        const eo_px_kernel *k = eo_px_module_kernel_at(m, i);
        EO_FUZZ_CHECK(k && eo_px_module_kernel(m, eo_px_kernel_name(k)) == k,
                      "kernel %d not found by its name", i);
        EO_FUZZ_CHECK(eo_px_kernel_static_shared(k) <= EO_PX_MAX_SHARED,
                      "kernel '%s' has %zu bytes of shared memory", eo_px_kernel_name(k),
                      eo_px_kernel_static_shared(k));
        run_kernel(k, h32);
    }
    eo_px_module_free(m);
    return 0;
}

EO_FUZZ_ENTRY(ptx)
