/* core/json.h — a small, strict JSON scanner for file headers (the
 * library's; tools/ uses the same one). Not part of the installed API.
 *
 * Headers read from a caller's buffer or a file (safetensors today,
 * core/safetensors.h) are untrusted input. Rather than build a document
 * tree, the reader walks the header with these primitives and checks the
 * expected structure as it goes, so every error can name the byte where
 * the header stopped making sense. Only what such headers need is
 * supported: objects, arrays, strings (all escapes, surrogate pairs,
 * UTF-8 checked) and non-negative integers. Anything else — fractions,
 * exponents, leading zeros, raw control characters, invalid UTF-8 — is an
 * error, never guessed at. Freestanding: no libc beyond memcpy, no
 * allocation (decoded strings go to a pool the caller gives), messages
 * through the library's own formatter (core/format.c). */
#ifndef EO_CORE_JSON_H
#define EO_CORE_JSON_H

#include <stddef.h>
#include <stdint.h>
#include "alloc/status.h"

typedef struct eo_json {
    const unsigned char *s; /* the text (not NUL-terminated) */
    size_t n, i;            /* length and cursor */
    const char *label;      /* file name for messages */
    size_t base;            /* file offset of s[0], for messages */
    char *pool;             /* decoded strings go here, NUL-terminated */
    size_t pool_used, pool_cap;
    char *err;
    size_t errlen;
} eo_json;

/* Sets up a scanner over s[0..n). pool must hold at least n + 1 bytes:
 * a decoded string plus its NUL is never longer than its quoted form. */
void eo_json_init(eo_json *j, const void *s, size_t n, const char *label, size_t base,
                  char *pool, size_t pool_cap, char *err, size_t errlen);

/* Writes "<label>: header JSON at byte B (file offset F): <message>" and
 * returns EO_ERR_FORMAT. The message is formatted by core/format.c's
 * eo_format (%s %d %u %zu %lld %llu). */
eo_status eo_json_fail(eo_json *j, const char *fmt, ...);

/* Skips JSON whitespace. */
void eo_json_ws(eo_json *j);

/* After whitespace, the next byte; -1 at the end of the text. */
int eo_json_peek(eo_json *j);

/* After whitespace, consumes c or fails naming what was found instead. */
eo_status eo_json_expect(eo_json *j, char c);

/* After whitespace, consumes one of the two closing/continuing bytes
 * (e.g. ',' or '}') and reports which in *which. */
eo_status eo_json_either(eo_json *j, char a, char b, char *which);

/* After whitespace, a string; *out points at its decoded, NUL-terminated
 * copy in the pool. "\u0000" is rejected because C strings cannot hold it. */
eo_status eo_json_string(eo_json *j, const char **out);

/* After whitespace, a non-negative integer that fits in 64 bits. */
eo_status eo_json_uint(eo_json *j, uint64_t *out);

/* Length of the valid UTF-8 sequence at s[0..n) (1..4), or 0 if the bytes
 * are not valid UTF-8 (overlong forms, surrogates and values past
 * U+10FFFF included). */
size_t eo_utf8_len(const unsigned char *s, size_t n);

/* 1 if the NUL-terminated string is valid UTF-8. */
int eo_utf8_valid(const char *s);

#endif
