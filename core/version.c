/* core/version.c — eo_version(): the library's version as a string.
 *
 * Built from the macros in core/everyo.h, so the number has one source;
 * a program compares it with the EO_VERSION_* it was compiled against to
 * catch a header/library mismatch (the shared library's soname already
 * refuses a different MAJOR). */
#include "core/everyo.h"

#define EO_STR_(x) #x
#define EO_STR(x) EO_STR_(x)

const char *eo_version(void)
{
    return EO_STR(EO_VERSION_MAJOR) "." EO_STR(EO_VERSION_MINOR) "." EO_STR(EO_VERSION_PATCH);
}
