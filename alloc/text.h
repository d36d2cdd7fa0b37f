/* alloc/text.h — the few string loops the freestanding library needs.
 *
 * The library may call no libc beyond memcpy/memset/memmove and libm, so
 * strlen and strcmp are out; parameter names and kernel names still need
 * measuring and comparing. They live here, at the bottom, beside the
 * status codes, so core/ and ops/ share one copy. */
#ifndef EO_TEXT_H
#define EO_TEXT_H

#include <stddef.h>

/* Names are short; the bound (1 MiB) only keeps an optimising compiler
 * from turning this loop back into a call to strlen. */
static inline size_t eo_text_len(const char *s)
{
    size_t n = 0;
    while (n < ((size_t)1 << 20) && s[n])
        n++;
    return n;
}

/* 1 when the two NUL-terminated strings are equal. */
static inline int eo_text_eq(const char *a, const char *b)
{
    while (*a && *a == *b)
        a++, b++;
    return *a == *b;
}

/* 1 when s begins with prefix. */
static inline int eo_text_starts(const char *s, const char *prefix)
{
    while (*prefix && *s == *prefix)
        s++, prefix++;
    return !*prefix;
}

#endif
