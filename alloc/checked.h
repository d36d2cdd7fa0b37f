/* alloc/checked.h — overflow-checked size arithmetic, the one place for it.
 *
 * Every size the library computes from caller values (an element count, a
 * byte count, a convolution's output side, a slice's end) goes through
 * these, so a product that would wrap is refused instead of allocating a
 * buffer that is too small. Each returns 1 when the exact result does not
 * fit its type (and leaves *r unchanged), else 0 with the result in *r.
 * Signed overflow is undefined behaviour in C, so the tests come before
 * the operation, never after it (CERT C INT32-C gives the same pattern). */
#ifndef EO_CHECKED_H
#define EO_CHECKED_H

#include <stddef.h>
#include <stdint.h>

static inline int eo_add_overflows(int64_t a, int64_t b, int64_t *r)
{
    if ((b > 0 && a > INT64_MAX - b) || (b < 0 && a < INT64_MIN - b))
        return 1;
    *r = a + b;
    return 0;
}

static inline int eo_mul_overflows(int64_t a, int64_t b, int64_t *r)
{
    if (a > 0 ? (b > 0 ? a > INT64_MAX / b : b < INT64_MIN / a)
              : (b > 0 ? a < INT64_MIN / b : (a != 0 && b < INT64_MAX / a)))
        return 1;
    *r = a * b;
    return 0;
}

static inline int eo_size_add_overflows(size_t a, size_t b, size_t *r)
{
    if (a > SIZE_MAX - b)
        return 1;
    *r = a + b;
    return 0;
}

static inline int eo_size_mul_overflows(size_t a, size_t b, size_t *r)
{
    if (b && a > SIZE_MAX / b)
        return 1;
    *r = a * b;
    return 0;
}

/* n elements of `elem` bytes each, for a buffer: 1 when n is negative or
 * the byte count exceeds PTRDIFF_MAX (the largest object whose byte
 * offsets are still representable; on a 32-bit build that is 2 GiB, so a
 * [32768, 32768] f32 tensor is refused instead of getting 0 bytes). */
static inline int eo_bytes_overflow(int64_t n, size_t elem, size_t *r)
{
    size_t b;
    if (n < 0 || (uint64_t)n > (uint64_t)SIZE_MAX || eo_size_mul_overflows((size_t)n, elem, &b) ||
        b > (size_t)PTRDIFF_MAX)
        return 1;
    *r = b;
    return 0;
}

/* The capacity a growing array (the tools' realloc buffers) moves to
 * when it must hold `need` elements of `elem` bytes: cap doubled (from
 * `first` when cap is 0) until it holds need, or need itself where
 * doubling would pass the largest count whose bytes fit in PTRDIFF_MAX
 * (or from 0).
 * 1 when need itself does not fit (the caller reports out of memory). */
static inline int eo_grow_overflows(size_t cap, size_t need, size_t first, size_t elem, size_t *r)
{
    const size_t limit = (size_t)PTRDIFF_MAX / (elem ? elem : 1);
    if (need > limit)
        return 1;
    size_t c = cap ? cap : first;
    while (c < need)
        c = c == 0 || c > limit / 2 ? need : c * 2;
    *r = c;
    return 0;
}

#endif
