/* tests/fuzz/fuzz_args.c — the command-line number parsers
 * (tools/cli/args.h): eo_arg_int, eo_arg_u64, eo_arg_float, eo_arg_arena_mb.
 *
 * The input is cut at NUL bytes into strings, each given to all three.
 * An accepted value must be what the whole string says (checked against
 * strtoll/strtoull/strtof, which must consume every byte) and inside the
 * documented range (int >= 0, u64 not negative, float finite, an arena
 * from 1 MiB to what MiB << 20 can hold in a size_t), and not
 * start with a blank (strto* skip those, which let " -1" through as
 * 2^64 - 1); a refused one must leave the output untouched. */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "tests/fuzz/fuzz.h"
#include "tools/cli/args.h"

static void one(const char *s)
{
    int blank = isspace((unsigned char)s[0]);
    int i = -7;
    if (eo_arg_int("--n", s, &i)) {
        char *end;
        errno = 0;
        long long ref = strtoll(s, &end, 10);
        EO_FUZZ_CHECK(end != s && *end == 0 && !errno && ref == i && i >= 0 && !blank,
                      "eo_arg_int accepted '%s' as %d", s, i);
    } else {
        EO_FUZZ_CHECK(i == -7, "eo_arg_int refused '%s' but wrote %d", s, i);
    }
    unsigned long long u = 12345;
    if (eo_arg_u64("--n", s, &u)) {
        char *end;
        errno = 0;
        unsigned long long ref = strtoull(s, &end, 10);
        EO_FUZZ_CHECK(end != s && *end == 0 && !errno && ref == u && !strchr(s, '-') && !blank,
                      "eo_arg_u64 accepted '%s' as %llu", s, u);
    } else {
        EO_FUZZ_CHECK(u == 12345, "eo_arg_u64 refused '%s' but wrote %llu", s, u);
    }
    size_t mb = 777;
    if (eo_arg_arena_mb("--step-mb", s, &mb)) {
        char *end;
        errno = 0;
        long long ref = strtoll(s, &end, 10);
        EO_FUZZ_CHECK(end != s && *end == 0 && !errno && ref >= 1 && (size_t)ref == mb &&
                          mb <= (SIZE_MAX >> 20) && !blank,
                      "eo_arg_arena_mb accepted '%s' as %zu", s, mb);
    } else {
        EO_FUZZ_CHECK(mb == 777, "eo_arg_arena_mb refused '%s' but wrote %zu", s, mb);
    }
    float f = -0.5f;
    if (eo_arg_float("--x", s, &f)) {
        char *end;
        float ref = strtof(s, &end);
        EO_FUZZ_CHECK(end != s && *end == 0 && isfinite(f) && !blank &&
                          memcmp(&ref, &f, sizeof f) == 0,
                      "eo_arg_float accepted '%s' as %g", s, (double)f);
    } else {
        EO_FUZZ_CHECK(memcmp(&f, &(float){-0.5f}, sizeof f) == 0,
                      "eo_arg_float refused '%s' but wrote %g", s, (double)f);
    }
}

int eo_fuzz_args(const uint8_t *data, size_t size)
{
    char *buf = malloc(size + 1);
    if (!buf)
        return 0;
    memcpy(buf, data, size);
    buf[size] = 0;
    eo_args_program("eo-fuzz");
    eo_fuzz_quiet_begin();
    for (size_t at = 0; at <= size; at += strlen(buf + at) + 1)
        one(buf + at);
    eo_fuzz_quiet_end();
    free(buf);
    return 0;
}

EO_FUZZ_ENTRY(args)
