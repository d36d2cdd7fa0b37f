/* alloc/arena.h — bump ("arena") allocator over memory the caller owns.
 *
 * An arena hands out aligned slices of one buffer by moving an offset
 * forward. Freeing is wholesale: eo_arena_rewind() moves the offset back
 * to an earlier mark. That is exactly the lifetime of a training step
 * (everything made during the step dies at its end), so steady-state
 * training never asks the operating system for memory.
 *
 * The arena never dereferences its buffer: it only does address
 * arithmetic. The same code therefore manages device memory, where the
 * "buffer" is a CUDA device address the host cannot touch.
 *
 * Nothing here knows about tensors, and nothing here calls malloc. */
#ifndef EO_ARENA_H
#define EO_ARENA_H

#include <stddef.h>
#include <stdint.h>
#include "alloc/status.h"

#ifdef __cplusplus
extern "C" {
#endif

#define EO_ARENA_ALIGN 64 /* default alignment: one cache line, one AVX-512 vector */

typedef struct eo_arena {
    uintptr_t base;     /* first byte of the buffer (host or device address) */
    size_t cap;         /* buffer size in bytes */
    size_t used;        /* bytes handed out, padding included */
    size_t high;        /* high-water mark of `used` since init */
    const char *name;   /* for messages: "persistent", "step", ... */
    /* The most recent failed request, for the caller's error message. */
    size_t fail_need;   /* bytes asked for (payload + alignment padding) */
    size_t fail_free;   /* bytes that were left */
} eo_arena;

/* A position to come back to; see eo_arena_mark/eo_arena_rewind. */
typedef size_t eo_arena_mark;

/* Manage `cap` bytes at `buf` (not touched, may be a device address).
 * `name` must outlive the arena. Returns EO_ERR_ARG if a or buf is NULL
 * (buf may be NULL only when cap is 0, for a measuring arena). */
eo_status eo_arena_init(eo_arena *a, void *buf, size_t cap, const char *name);

/* Reserve `bytes` aligned to `align` (a power of two; 0 means
 * EO_ARENA_ALIGN) and store the address in *out. The memory is not
 * cleared. Zero bytes gives a valid, unique-enough aligned pointer.
 * Returns EO_ERR_ARG (NULL out, align not a power of two) or EO_ERR_OOM;
 * on EO_ERR_OOM, *out is NULL, a->fail_need/fail_free say why, and the
 * arena is unchanged and still usable. */
eo_status eo_arena_alloc(eo_arena *a, size_t bytes, size_t align, void **out);

/* Current position, for a later rewind. */
eo_arena_mark eo_arena_mark_get(const eo_arena *a);

/* Free everything allocated since `m` (a no-op if m is not earlier). */
void eo_arena_rewind(eo_arena *a, eo_arena_mark m);

/* Free everything. The high-water mark is kept. */
void eo_arena_reset(eo_arena *a);

/* Restart the high-water mark at the bytes in use now, so the peak of
 * what follows can be measured (core's eo_measure_begin). */
void eo_arena_high_reset(eo_arena *a);

size_t eo_arena_used(const eo_arena *a);      /* bytes in use now */
size_t eo_arena_high(const eo_arena *a);      /* most bytes ever in use */
size_t eo_arena_remaining(const eo_arena *a); /* bytes left (before padding) */

#ifdef __cplusplus
}
#endif

#endif
