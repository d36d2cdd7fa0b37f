/* tools/train/resume.h — what both training loops share for
 * --checkpoint / --resume (experimental): the loss log continued where
 * the checkpoint was taken. The state file itself is
 * tools/formats/train_state.h. */
#ifndef EO_TOOLS_RESUME_H
#define EO_TOOLS_RESUME_H

#include <stdio.h>
#include "alloc/status.h"

/* Opens the per-step CSV log for a run resumed after `steps` steps. An
 * existing file keeps its header line and first `steps` data lines (one
 * per step, as both loops write them); the lines after them (steps a
 * killed run made after its last checkpoint) are cut off, and the
 * resumed steps are appended, so the log ends equal to an uninterrupted
 * run's. A missing file is created with `header` (the resumed steps
 * only). EO_ERR_IO with the file's name (also: fewer lines than steps,
 * i.e. not this run's log). */
eo_status eo_resume_log_open(const char *path, const char *header, long long steps, FILE **out,
                             char *err, size_t errlen);

#endif
