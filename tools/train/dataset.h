/* tools/train/dataset.h — an in-memory labelled data set for classification.
 *
 * One plain struct (features as float rows, labels as int32) is what the
 * batcher and the training tools pass around; where the examples came from
 * (Fashion-MNIST today, see mnist.h) does not leak past the loader. */
#ifndef EO_TOOLS_DATASET_H
#define EO_TOOLS_DATASET_H

#include <stddef.h>
#include <stdint.h>
#include "alloc/status.h"

typedef struct eo_dataset {
    size_t n;       /* number of examples */
    size_t dim;     /* features per example (784 for 28x28 images) */
    int classes;    /* labels lie in [0, classes) */
    float *x;       /* n x dim, row-major, malloc'd */
    int32_t *y;     /* n labels, malloc'd */
} eo_dataset;

/* Keeps only the first n examples (for quick tests and smoke runs). An n
 * larger than ds->n keeps everything. EO_ERR_ARG for a NULL ds or n == 0. */
eo_status eo_dataset_subset(eo_dataset *ds, size_t n, char *err, size_t errlen);

/* Frees both arrays and empties the struct; safe on an empty one. */
void eo_dataset_free(eo_dataset *ds);

#endif
