/* tools/cli/args.c — see args.h.
 *
 * strtoll and friends are lenient on purpose (they skip leading space,
 * take a sign, and strtoull turns "-1" into 2^64-1), so each parser
 * checks the first character itself before handing the rest over, then
 * insists that the conversion consumed everything and did not overflow. */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/everyo.h"
#include "tools/cli/args.h"
#include "tools/cli/files.h"

static const char *program = "eo";

void eo_args_program(const char *name)
{
    program = name;
    eo_close_stdout_at_exit(name);
}

static int bad(const char *opt, const char *v, const char *what)
{
    fprintf(stderr, "%s: %s: '%s' is not %s\n", program, opt, v, what);
    return 0;
}

/* Digits only after an optional '-' when negatives are allowed. */
static int plain_integer(const char *v, int allow_minus)
{
    const char *p = v + (allow_minus && *v == '-');
    return isdigit((unsigned char)*p) != 0;
}

int eo_arg_u64(const char *opt, const char *v, unsigned long long *out)
{
    char *end;
    if (!plain_integer(v, 0))
        return bad(opt, v, "a whole number >= 0");
    errno = 0;
    unsigned long long x = strtoull(v, &end, 10);
    if (*end || errno)
        return bad(opt, v, "a whole number >= 0 that fits 64 bits");
    *out = x;
    return 1;
}

int eo_arg_i64_range(const char *opt, const char *v, int64_t lo, int64_t hi, int64_t *out)
{
    char *end, what[96];
    snprintf(what, sizeof what, "a whole number from %" PRId64 " to %" PRId64, lo, hi);
    if (!plain_integer(v, lo < 0))
        return bad(opt, v, what);
    errno = 0;
    long long x = strtoll(v, &end, 10);
    if (*end || errno || x < lo || x > hi)
        return bad(opt, v, what);
    *out = (int64_t)x;
    return 1;
}

int eo_arg_int_range(const char *opt, const char *v, int lo, int hi, int *out)
{
    int64_t x;
    if (!eo_arg_i64_range(opt, v, lo, hi, &x))
        return 0;
    *out = (int)x;
    return 1;
}

int eo_arg_int(const char *opt, const char *v, int *out)
{
    char *end;
    if (!plain_integer(v, 0))
        return bad(opt, v, "a whole number >= 0");
    errno = 0;
    long long x = strtoll(v, &end, 10);
    if (*end || errno || x > INT_MAX)
        return bad(opt, v, "a whole number from 0 to 2147483647");
    *out = (int)x;
    return 1;
}

int eo_arg_arena_mb(const char *opt, const char *v, size_t *mb)
{
    /* MiB << 20 must fit size_t. */
    const int max = (SIZE_MAX >> 20) < (1u << 20) ? (int)(SIZE_MAX >> 20) : (1 << 20);
    int n;
    if (!eo_arg_int_range(opt, v, 1, max, &n))
        return 0;
    *mb = (size_t)n;
    return 1;
}

int eo_arg_float(const char *opt, const char *v, float *out)
{
    char *end;
    /* A number starts with a digit, a sign or a point; not with a space. */
    if (!(isdigit((unsigned char)*v) || *v == '-' || *v == '+' || *v == '.'))
        return bad(opt, v, "a finite number");
    errno = 0;
    float x = strtof(v, &end);
    if (end == v || *end || !isfinite(x))
        return bad(opt, v, "a finite number");
    /* ERANGE on underflow (1e-50) would give 0 or a denormal: refuse it
     * too rather than silently turn a learning rate into zero. */
    if (errno)
        return bad(opt, v, "a number a float can hold");
    *out = x;
    return 1;
}

int eo_arg_choice(const char *opt, const char *v, const char *const *names, int n, int *out)
{
    for (int i = 0; i < n; i++)
        if (strcmp(v, names[i]) == 0) {
            *out = i;
            return 1;
        }
    fprintf(stderr, "%s: %s: '%s' is not one of", program, opt, v);
    for (int i = 0; i < n; i++)
        fprintf(stderr, "%s %s", i ? "," : "", names[i]);
    fputc('\n', stderr);
    return 0;
}

void eo_args_version(FILE *f) { fprintf(f, "%s (EveryO %s)\n", program, eo_version()); }

int eo_args_try_help(void)
{
    fprintf(stderr, "Try '%s --help'.\n", program);
    return 2;
}

int eo_args_no_operands(int argc, char **argv)
{
    if (optind >= argc)
        return 1;
    fprintf(stderr, "%s: unexpected argument '%s'\n", program, argv[optind]);
    eo_args_try_help();
    return 0;
}

int eo_args_help_version(int argc, char **argv, void (*usage)(FILE *))
{
    static const struct option opts[] = {
        {"help", no_argument, NULL, 'h'}, {"version", no_argument, NULL, 'V'}, {NULL, 0, NULL, 0},
    };
    int o = getopt_long(argc, argv, "h", opts, NULL);
    if (o == -1)
        return -1;
    if (o == 'h')
        usage(stdout);
    else if (o == 'V')
        eo_args_version(stdout);
    else
        return eo_args_try_help(); /* getopt_long named the problem */
    return 0;
}
