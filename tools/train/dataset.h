/* tools/train/dataset.h — an in-memory labelled data set for classification.
 *
 * One plain struct (features as bytes, labels as int32) is what the
 * batcher and the training tools pass around; where the examples came from
 * (Fashion-MNIST today, see mnist.h) does not leak past the loader.
 *
 * The features stay the bytes the file holds (a pixel is 1 byte, not the
 * 4 of a float): Fashion-MNIST's 60,000 training images are 47 MB so, 188
 * MB as floats. A batch is converted when it is drawn (eo_dataset_row_f32),
 * with the same arithmetic a whole-set conversion would use, so the floats
 * a model sees are bit for bit the same. */
#ifndef EO_TOOLS_DATASET_H
#define EO_TOOLS_DATASET_H

#include <stddef.h>
#include <stdint.h>
#include "alloc/status.h"

typedef struct eo_dataset {
    size_t n;       /* number of examples */
    size_t dim;     /* features per example (784 for 28x28 images) */
    int classes;    /* labels lie in [0, classes) */
    uint8_t *x;     /* n x dim bytes, row-major, malloc'd */
    int32_t *y;     /* n labels, malloc'd */
} eo_dataset;

/* Example i's features as floats in [0, 1]: dst[k] = (float)byte / 255.0f
 * (dst holds ds->dim floats). i must be below ds->n. */
void eo_dataset_row_f32(const eo_dataset *ds, size_t i, float *dst);

/* Keeps only the first n examples (for quick tests and smoke runs). An n
 * larger than ds->n keeps everything. EO_ERR_ARG for a NULL ds or n == 0.
 * (eo_mnist_load's `max` does the same without reading the rest.) */
eo_status eo_dataset_subset(eo_dataset *ds, size_t n, char *err, size_t errlen);

/* Frees both arrays and empties the struct; safe on an empty one. */
void eo_dataset_free(eo_dataset *ds);

#endif
