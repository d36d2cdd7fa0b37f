/* ops/cpu/grain.h — how much work is worth handing to the thread hook.
 *
 * Waking the pool's workers and waiting for the last one costs a few
 * microseconds (tools/threads/pool.c). A kernel over fewer than ~32K elements is
 * done in about that time on one core, so splitting it would only make it
 * slower; such calls run on the caller. The same threshold for every
 * kernel keeps the choice predictable. */
#ifndef EO_GRAIN_H
#define EO_GRAIN_H

#include <stddef.h>
#include <stdint.h>
#include "ops/parallel.h"

#define EO_PAR_GRAIN 32768

/* par itself when `work` elements justify threads, else NULL. */
static inline const eo_par *eo_par_if(const eo_par *par, int64_t work)
{
    return work >= EO_PAR_GRAIN ? par : NULL;
}

#endif
