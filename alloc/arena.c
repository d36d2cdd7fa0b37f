/* alloc/arena.c — see arena.h. Address arithmetic only; never touches
 * the memory it manages. */
#include "alloc/arena.h"
#include "alloc/checked.h"

eo_status eo_arena_init(eo_arena *a, void *buf, size_t cap, const char *name)
{
    if (!a || (!buf && cap))
        return EO_ERR_ARG;
    a->base = (uintptr_t)buf;
    a->cap = cap;
    a->used = 0;
    a->high = 0;
    a->name = name ? name : "arena";
    a->fail_need = 0;
    a->fail_free = 0;
    return EO_OK;
}

eo_status eo_arena_alloc(eo_arena *a, size_t bytes, size_t align, void **out)
{
    if (!out)
        return EO_ERR_ARG;
    *out = NULL;
    if (!a)
        return EO_ERR_ARG;
    if (align == 0)
        align = EO_ARENA_ALIGN;
    if (align & (align - 1))
        return EO_ERR_ARG;

    /* Align the absolute address, not the offset: the buffer itself may
     * start anywhere. */
    uintptr_t here = a->base + a->used;
    size_t pad = (size_t)((align - (here & (align - 1))) & (align - 1));
    size_t left = a->cap - a->used;
    /* Written as two comparisons so that a huge `bytes` cannot wrap. */
    if (pad > left || bytes > left - pad) {
        if (eo_size_add_overflows(bytes, pad, &a->fail_need))
            a->fail_need = SIZE_MAX;
        a->fail_free = left;
        return EO_ERR_OOM;
    }
    a->used += pad + bytes;
    if (a->used > a->high)
        a->high = a->used;
    *out = (void *)(here + pad);
    return EO_OK;
}

eo_arena_mark eo_arena_mark_get(const eo_arena *a) { return a ? a->used : 0; }

void eo_arena_rewind(eo_arena *a, eo_arena_mark m)
{
    if (a && m < a->used)
        a->used = m;
}

void eo_arena_reset(eo_arena *a)
{
    if (a)
        a->used = 0;
}

void eo_arena_high_reset(eo_arena *a)
{
    if (a)
        a->high = a->used;
}

size_t eo_arena_used(const eo_arena *a) { return a ? a->used : 0; }
size_t eo_arena_high(const eo_arena *a) { return a ? a->high : 0; }
size_t eo_arena_remaining(const eo_arena *a) { return a ? a->cap - a->used : 0; }
