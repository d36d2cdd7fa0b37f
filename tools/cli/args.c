/* tools/cli/args.c — see args.h. */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include "tools/cli/args.h"

static const char *program = "eo";

void eo_args_program(const char *name) { program = name; }

static int bad(const char *opt, const char *v, const char *what)
{
    fprintf(stderr, "%s: %s: '%s' is not %s\n", program, opt, v, what);
    return 0;
}

/* strtol and friends skip leading blanks, so " -1" would reach
 * strtoull as a negative number it silently wraps (found by
 * tests/fuzz/fuzz_args.c); a value is the whole string or nothing. */
static int blank_first(const char *v) { return isspace((unsigned char)v[0]); }

int eo_arg_int(const char *opt, const char *v, int *out)
{
    char *end;
    if (blank_first(v))
        return bad(opt, v, "a whole number >= 0");
    errno = 0;
    long x = strtol(v, &end, 10);
    if (end == v || *end || errno || x < 0 || x > INT_MAX)
        return bad(opt, v, "a whole number >= 0");
    *out = (int)x;
    return 1;
}

int eo_arg_u64(const char *opt, const char *v, unsigned long long *out)
{
    char *end;
    errno = 0;
    if (*v == '-' || blank_first(v))
        return bad(opt, v, "a whole number >= 0");
    unsigned long long x = strtoull(v, &end, 10);
    if (end == v || *end || errno)
        return bad(opt, v, "a whole number >= 0");
    *out = x;
    return 1;
}

int eo_arg_float(const char *opt, const char *v, float *out)
{
    char *end;
    if (blank_first(v))
        return bad(opt, v, "a finite number");
    errno = 0;
    float x = strtof(v, &end);
    if (end == v || *end || errno || !isfinite(x))
        return bad(opt, v, "a finite number");
    *out = x;
    return 1;
}
