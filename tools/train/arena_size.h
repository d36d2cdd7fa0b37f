/* tools/train/arena_size.h — arenas sized from the model, not a fixed default.
 *
 * A fixed 64 MiB persistent arena refused a 768-wide 12-layer GPT (about
 * 1.3 GiB) and a 10.7 M-parameter checkpoint eo-train itself had saved.
 * The library measures (core/everyo.h, "sizing the arenas"): run the work
 * once in a context with room to spare, read what each arena needed
 * (eo_measure), then give the real context exactly that. The room to
 * spare costs nothing here: malloc'd memory that is never touched is never
 * backed by pages, so the measuring buffers start at a generous guess and
 * double only if even that was too small. */
#ifndef EO_TOOLS_ARENA_SIZE_H
#define EO_TOOLS_ARENA_SIZE_H

#include <stddef.h>
#include "core/everyo.h"

/* What the measured run does in a fresh context (built with the same
 * thread hook as the real one): build the model, its optimizer, and one
 * step as the real program runs it. Returns a library status. */
typedef eo_status (*eo_measure_run)(eo_ctx *ctx, void *arg);

/* Runs run(ctx, arg) in a throwaway context with host buffers of
 * persist_guess and step_guess bytes, doubled (up to four times) while it
 * fails with EO_ERR_OOM; *out receives eo_measure's figures. EO_OK, or the
 * run's status with its message in err ("measuring the arenas: ..."),
 * EO_ERR_OOM when even the largest buffers were too small or could not be
 * allocated. */
eo_status eo_arena_measure(size_t persist_guess, size_t step_guess, eo_par par,
                           eo_measure_run run, void *arg, eo_arena_needs *out, char *err,
                           size_t errlen);

/* The machine's physical memory in bytes (SIZE_MAX / 4 when the system
 * does not say): the most a measured arena may be, so a model that
 * cannot fit is refused before anything is allocated. */
size_t eo_memory_bytes(void);

/* The bytes to give an arena whose measured need is `need`: the need, the
 * alignment slack of a malloc'd buffer (EO_ARENA_SLACK) and a margin of
 * 1/8 plus 1 MiB for what the measured step does not run (validation
 * batches, loading a checkpoint, a last partial batch). */
size_t eo_arena_with_margin(size_t need);

/* The bytes to give a CUDA device arena when the host one is `host`
 * bytes: `host` when the size came from an option, else twice the
 * measured figure, because the measuring run is on the CPU and the CUDA
 * ops may take scratch the CPU ones do not (unmeasured here: no device is
 * needed to size the arenas). */
size_t eo_arena_device(size_t host, int from_option);

#endif
