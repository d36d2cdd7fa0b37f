/* tools/train/dataset.c — a row as floats, subset and free for eo_dataset (see dataset.h). */
#include <stdlib.h>
#include <string.h>
#include "tools/train/dataset.h"
#include "tools/cli/errbuf.h"

void eo_dataset_row_f32(const eo_dataset *ds, size_t i, float *dst)
{
    const uint8_t *src = ds->x + i * ds->dim;
    for (size_t k = 0; k < ds->dim; k++)
        dst[k] = (float)src[k] / 255.0f;
}

eo_status eo_dataset_subset(eo_dataset *ds, size_t n, char *err, size_t errlen)
{
    if (!ds)
        return eo_errf(err, errlen, EO_ERR_ARG, "eo_dataset_subset: NULL data set");
    if (n == 0)
        return eo_errf(err, errlen, EO_ERR_ARG,
                       "eo_dataset_subset: asked for 0 examples, expected at least 1");
    if (n >= ds->n)
        return EO_OK;
    ds->n = n;
    /* Give the tail back; a failed shrink just keeps the larger block. */
    uint8_t *x = realloc(ds->x, n * ds->dim * sizeof *x);
    if (x)
        ds->x = x;
    int32_t *y = realloc(ds->y, n * sizeof *y);
    if (y)
        ds->y = y;
    return EO_OK;
}

void eo_dataset_free(eo_dataset *ds)
{
    if (!ds)
        return;
    free(ds->x);
    free(ds->y);
    memset(ds, 0, sizeof *ds);
}
