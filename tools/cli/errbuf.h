/* tools/cli/errbuf.h — filling the caller's error buffer.
 *
 * Every failing tools call writes a human-readable message into a
 * caller-provided (err, errlen) buffer and returns a status. This one
 * helper does both in a single statement, so error paths stay one line
 * and a NULL or zero-length buffer is always safe. */
#ifndef EO_TOOLS_ERRBUF_H
#define EO_TOOLS_ERRBUF_H

#include <stddef.h>
#include "alloc/status.h"

#if defined(__GNUC__) || defined(__clang__)
#define EO_PRINTF_LIKE(fmt, args) __attribute__((format(printf, fmt, args)))
#else
#define EO_PRINTF_LIKE(fmt, args)
#endif

/* Formats the message into err (truncated to errlen, always
 * NUL-terminated when errlen > 0) and returns s unchanged. */
eo_status eo_errf(char *err, size_t errlen, eo_status s, const char *fmt, ...)
    EO_PRINTF_LIKE(4, 5);

#endif
