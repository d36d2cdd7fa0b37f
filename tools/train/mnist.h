/* tools/train/mnist.h — loading (Fashion-)MNIST from its four IDX files.
 *
 * Both data sets use the same file names and layout, so one loader serves
 * both. It checks the files against each other (images N x 28 x 28, labels
 * N with values 0..9) because the IDX reader alone cannot know that the two
 * files of a split belong together. */
#ifndef EO_TOOLS_MNIST_H
#define EO_TOOLS_MNIST_H

#include "tools/train/dataset.h"

#define EO_MNIST_SIDE 28
#define EO_MNIST_DIM (EO_MNIST_SIDE * EO_MNIST_SIDE)
#define EO_MNIST_CLASSES 10

/* Loads the training split (train != 0: train-images-idx3-ubyte and
 * train-labels-idx1-ubyte) or the test split (t10k-...) from dir. Each
 * file is looked for as NAME.gz first, then as plain NAME. Pixels come back
 * as the file's bytes (eo_dataset_row_f32 scales a row to [0, 1]), labels
 * as int32. max > 0 loads only the first max examples (the rest of each
 * file is not decoded: --subset costs only what it uses); 0 loads all.
 * Statuses: EO_ERR_ARG, EO_ERR_IO (missing or unreadable file),
 * EO_ERR_FORMAT (bad file, wrong shape, N mismatch, label > 9), EO_ERR_OOM.
 * On failure *ds is left empty. */
eo_status eo_mnist_load(const char *dir, int train, size_t max, eo_dataset *ds, char *err,
                        size_t errlen);

#endif
