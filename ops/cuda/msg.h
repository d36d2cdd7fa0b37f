/* ops/cuda/msg.h — a bounded string builder for the CUDA files' messages.
 *
 * Why here: the library may not call printf or malloc, yet a failed
 * driver call must leave a readable message ("cuModuleLoadDataEx(softmax):
 * CUDA_ERROR_INVALID_PTX: ... ptxas log ...") in a buffer the caller owns.
 * These few static helpers append text and integers to such a buffer,
 * always keeping it NUL-terminated and silently truncating at its end.
 * Private to ops/cuda/ (the core has its own formatter, core/format.c). */
#ifndef EO_CUDA_MSG_H
#define EO_CUDA_MSG_H

#include <stddef.h>
#include <stdint.h>

typedef struct eo_cuda_msg {
    char *buf;  /* may be NULL (then nothing is written) */
    size_t cap; /* bytes at buf, terminator included */
    size_t len; /* characters written so far (< cap when cap > 0) */
} eo_cuda_msg;

/* Start writing at the beginning of buf (emptying it). */
static inline eo_cuda_msg eo_cuda_msg_start(char *buf, size_t cap)
{
    eo_cuda_msg m = {buf, buf ? cap : 0, 0};
    if (m.cap)
        buf[0] = '\0';
    return m;
}

/* Append at most n characters of s (stopping early at a NUL). */
static inline void eo_cuda_msg_putn(eo_cuda_msg *m, const char *s, size_t n)
{
    if (!s)
        s = "(null)";
    for (size_t i = 0; i < n && s[i] && m->len + 1 < m->cap; i++)
        m->buf[m->len++] = s[i];
    if (m->cap)
        m->buf[m->len] = '\0';
}

static inline void eo_cuda_msg_put(eo_cuda_msg *m, const char *s)
{
    eo_cuda_msg_putn(m, s, (size_t)-1);
}

/* Append a signed decimal integer. */
static inline void eo_cuda_msg_int(eo_cuda_msg *m, int64_t v)
{
    char tmp[24];
    int n = 0;
    /* Work with the magnitude as unsigned so INT64_MIN does not overflow. */
    uint64_t u = v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v;
    do {
        tmp[n++] = (char)('0' + (int)(u % 10));
        u /= 10;
    } while (u);
    if (v < 0)
        tmp[n++] = '-';
    char out[24];
    for (int i = 0; i < n; i++)
        out[i] = tmp[n - 1 - i];
    eo_cuda_msg_putn(m, out, (size_t)n);
}

#endif
