/* ops/cpu/block16.h — the per-worker f32 blocks of the 16-bit row kernels
 * (softmax16.c, layernorm16.c, cross_entropy16.c).
 *
 * A 16-bit row kernel hands whole blocks of rows to the thread hook. Each
 * worker widens its block into f32 buffers in its own slice of the
 * workspace, runs the f32 kernel on them (on its own thread: exec NULL)
 * and rounds the results once into the 16-bit output. A block is as many
 * rows as fill EO_BLOCK16_FLOATS floats (at least one row), so its buffers
 * stay in the L2 cache between widening, computing and rounding, and the
 * workspace is a few blocks per thread, never a tensor. Rows are
 * independent in these kernels, so how rows are grouped into blocks, and
 * blocks among threads, changes no result. Nothing outside ops/cpu/
 * includes this header. */
#ifndef EO_OPS_CPU_BLOCK16_H
#define EO_OPS_CPU_BLOCK16_H

#include <stddef.h>
#include <stdint.h>

#define EO_BLOCK16_FLOATS 8192

/* Rows per block for rows of `cols` values. */
static inline int64_t eo_block16_rows(int64_t rows, int64_t cols)
{
    int64_t r = cols > 0 ? EO_BLOCK16_FLOATS / cols : rows;
    if (r > rows)
        r = rows;
    return r > 0 ? r : 1;
}

/* Bytes of n floats, rounded up to whole 64-byte lines. */
static inline size_t eo_block16_bytes(int64_t n)
{
    return ((size_t)(n > 0 ? n : 0) * sizeof(float) + 63) / 64 * 64;
}

/* The workspace for `nthreads` workers of `per` bytes each (ws may be
 * unaligned: 64 bytes of slack). */
static inline size_t eo_block16_ws(int nthreads, size_t per)
{
    return (size_t)(nthreads > 1 ? nthreads : 1) * per + 64;
}

/* Worker w's slice, 64-byte aligned. */
static inline unsigned char *eo_block16_slice(void *ws, size_t per, int w)
{
    return (unsigned char *)(((uintptr_t)ws + 63) / 64 * 64) + (size_t)w * per;
}

#endif
