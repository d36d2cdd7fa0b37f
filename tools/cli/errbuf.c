/* tools/cli/errbuf.c — see errbuf.h. Kept apart so every tool file shares
 * one definition instead of each carrying its own vsnprintf wrapper. */
#include <stdarg.h>
#include <stdio.h>
#include "tools/cli/errbuf.h"

eo_status eo_errf(char *err, size_t errlen, eo_status s, const char *fmt, ...)
{
    if (err && errlen > 0) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return s;
}
