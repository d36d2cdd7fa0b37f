/* tools/train/arena_size.c — see arena_size.h. */
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>
#include "tools/cli/errbuf.h"
#include "tools/train/arena_size.h"

eo_status eo_arena_measure(size_t persist_guess, size_t step_guess, eo_par par,
                           eo_measure_run run, void *arg, eo_arena_needs *out, char *err,
                           size_t errlen)
{
    size_t pb = persist_guess, sb = step_guess;
    for (int tries = 0; tries < 5; tries++) {
        void *p = malloc(pb), *s = malloc(sb);
        if (!p || !s) {
            free(p);
            free(s);
            return eo_errf(err, errlen, EO_ERR_OOM,
                           "measuring the arenas: cannot allocate %zu + %zu MiB to measure in",
                           pb >> 20, sb >> 20);
        }
        eo_ctx ctx;
        eo_status st = eo_ctx_init(&ctx, p, pb, s, sb);
        if (st == EO_OK) {
            eo_ctx_set_parallel(&ctx, par);
            st = run(&ctx, arg);
        }
        if (st == EO_OK)
            *out = eo_measure(&ctx);
        else
            eo_errf(err, errlen, st, "measuring the arenas: %s", eo_last_error(&ctx));
        free(p);
        free(s);
        if (st != EO_ERR_OOM)
            return st;
        if (pb > SIZE_MAX / 2 || sb > SIZE_MAX / 2)
            break;
        pb *= 2;
        sb *= 2;
    }
    return eo_errf(err, errlen, EO_ERR_OOM,
                   "measuring the arenas: still out of memory with %zu + %zu MiB", pb >> 20,
                   sb >> 20);
}

size_t eo_arena_with_margin(size_t need)
{
    size_t extra = need / 8 + ((size_t)1 << 20) + EO_ARENA_SLACK;
    return need > SIZE_MAX - extra ? SIZE_MAX : need + extra;
}

size_t eo_memory_bytes(void)
{
#if defined(_SC_PHYS_PAGES) && defined(_SC_PAGESIZE)
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    if (pages > 0 && page > 0 && (uintmax_t)pages <= (SIZE_MAX / 4) / (uintmax_t)page)
        return (size_t)pages * (size_t)page;
#endif
    return SIZE_MAX / 4;
}

size_t eo_arena_device(size_t host, int from_option)
{
    return from_option || host > SIZE_MAX / 2 ? host : 2 * host;
}
