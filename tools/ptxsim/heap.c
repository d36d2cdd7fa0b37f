/* tools/ptxsim/heap.c — the interpreter's device memory.
 *
 * Every allocation is a host malloc, but what the caller (and the kernel)
 * sees is a fake device address handed out from EO_PX_GLOBAL_BASE upward.
 * The table from device ranges to host buffers is what makes the checks
 * possible: an access is legal only if it falls entirely inside one live
 * allocation. Addresses are never reused after a free, so a kernel that
 * keeps a stale pointer faults instead of reading someone else's data,
 * and consecutive allocations are separated by a gap of unmapped
 * addresses so that running off the end of one cannot land in the next.
 *
 * The table is kept sorted by address (allocations only ever append at
 * the top), so a lookup is a binary search. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "alloc/checked.h"
#include "tools/ptxsim/ptxsim.h"

/* Start addresses are 256-byte aligned, like cuMemAlloc's, and each
 * allocation is followed by at least this many unmapped bytes. */
#define PX_ALIGN 256u
#define PX_GAP 4096u

typedef struct px_alloc {
    uint64_t base;
    size_t size;
    unsigned char *host;
    int live;
} px_alloc;

struct eo_px_heap {
    px_alloc *a;
    size_t n, cap, live;
    uint64_t next, limit; /* addresses handed out lie in [base, limit) */
};

eo_px_heap *eo_px_heap_new_at(uint64_t base)
{
    if (base < EO_PX_GLOBAL_BASE || base % PX_ALIGN)
        return NULL;
    eo_px_heap *h = calloc(1, sizeof *h);
    if (h) {
        h->next = base;
        h->limit = base + EO_PX_DEVICE_SPAN;
    }
    return h;
}

eo_px_heap *eo_px_heap_new(void) { return eo_px_heap_new_at(EO_PX_GLOBAL_BASE); }

void eo_px_heap_free(eo_px_heap *h)
{
    if (!h)
        return;
    for (size_t i = 0; i < h->n; i++)
        free(h->a[i].host);
    free(h->a);
    free(h);
}

eo_status eo_px_heap_alloc(eo_px_heap *h, size_t n, uint64_t *dev)
{
    if (!h || !dev)
        return EO_ERR_ARG;
    *dev = 0;
#if SIZE_MAX > 0xffffffffu /* a 32-bit size_t cannot ask for more than 2^40 */
    if (n > ((size_t)1 << 40))
        return EO_ERR_OOM;
#endif
    if (h->n == h->cap) {
        size_t nc;
        px_alloc *q = eo_grow_overflows(h->cap, h->n + 1, 64, sizeof *q, &nc)
                          ? NULL
                          : realloc(h->a, nc * sizeof *q);
        if (!q)
            return EO_ERR_OOM;
        h->a = q;
        h->cap = nc;
    }
    /* Fresh device memory holds garbage on a GPU. Here it holds all-ones
     * bytes (a NaN as f32, -1 as an integer), so a kernel or launcher
     * that reads memory nobody wrote (a "+=" into a gradient nobody
     * zeroed) gives visibly wrong results instead of passing by luck on
     * zeros. */
    /* The device's address range is used up (only a 32-bit host's 256 MiB
     * range can be): refused, never handed out past the end, where it
     * would not fit the host's pointers. */
    const uint64_t step = ((uint64_t)n + PX_GAP + PX_ALIGN - 1) / PX_ALIGN * PX_ALIGN;
    if (step > h->limit - h->next)
        return EO_ERR_OOM;
    unsigned char *host = malloc(n ? n : 1);
    if (!host)
        return EO_ERR_OOM;
    memset(host, 0xff, n ? n : 1);
    px_alloc *a = &h->a[h->n++];
    a->base = h->next;
    a->size = n;
    a->host = host;
    a->live = 1;
    h->live++;
    h->next += step;
    *dev = a->base;
    return EO_OK;
}

/* The allocation with the greatest base <= dev, live or not; NULL if
 * dev is below every allocation. */
static px_alloc *find(const eo_px_heap *h, uint64_t dev)
{
    size_t lo = 0, hi = h->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (h->a[mid].base <= dev)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo ? &h->a[lo - 1] : NULL;
}

eo_status eo_px_heap_release(eo_px_heap *h, uint64_t dev)
{
    if (!h)
        return EO_ERR_ARG;
    px_alloc *a = find(h, dev);
    if (!a || a->base != dev || !a->live)
        return EO_ERR_ARG;
    free(a->host);
    a->host = NULL;
    a->live = 0;
    h->live--;
    return EO_OK;
}

void *eo_px_heap_span(const eo_px_heap *h, uint64_t dev, size_t n)
{
    if (!h)
        return NULL;
    const px_alloc *a = find(h, dev);
    if (!a || !a->live || dev - a->base > a->size || n > a->size - (dev - a->base))
        return NULL;
    return a->host + (dev - a->base);
}

int eo_px_heap_extent(const eo_px_heap *h, uint64_t dev, uint64_t *base, size_t *size)
{
    const px_alloc *a = h ? find(h, dev) : NULL;
    if (!a || !a->live || dev - a->base >= a->size)
        return 0;
    *base = a->base;
    *size = a->size;
    return 1;
}

size_t eo_px_heap_live_count(const eo_px_heap *h) { return h ? h->live : 0; }

const char *eo_px_heap_explain(const eo_px_heap *h, uint64_t dev, size_t n, char *buf,
                               size_t cap)
{
    if (eo_px_heap_span(h, dev, n))
        return NULL;
    const px_alloc *a = h ? find(h, dev) : NULL;
    if (!a || dev - a->base >= a->size + PX_GAP) {
        /* Far from anything: a host pointer, a garbage value, or an
         * offset computed with the wrong stride. */
        const px_alloc *after = NULL;
        if (h && h->n && (!a || a != &h->a[h->n - 1]))
            after = a ? a + 1 : &h->a[0];
        if (dev < EO_PX_GLOBAL_BASE)
            snprintf(buf, cap, "address 0x%llx is not a device address (below the device range)",
                     (unsigned long long)dev);
        else if (a && after)
            snprintf(buf, cap, "address 0x%llx is %llu bytes past the end of the %zu-byte allocation "
                     "at 0x%llx, in no allocation",
                     (unsigned long long)dev, (unsigned long long)(dev - a->base - a->size), a->size,
                     (unsigned long long)a->base);
        else
            snprintf(buf, cap, "address 0x%llx is in no allocation", (unsigned long long)dev);
    } else if (!a->live) {
        snprintf(buf, cap, "address 0x%llx is in the freed %zu-byte allocation at 0x%llx",
                 (unsigned long long)dev, a->size, (unsigned long long)a->base);
    } else {
        uint64_t end = dev + n, aend = a->base + a->size;
        snprintf(buf, cap, "%zu-byte access at 0x%llx is %llu byte(s) past the end of the %zu-byte "
                 "allocation at 0x%llx (offset %llu)",
                 n, (unsigned long long)dev, (unsigned long long)(end - aend), a->size,
                 (unsigned long long)a->base, (unsigned long long)(dev - a->base));
    }
    return buf;
}
