/* tools/train/mnist.c — the (Fashion-)MNIST loader (see mnist.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "tools/cli/errbuf.h"
#include "tools/cli/files.h"
#include "tools/formats/idx.h"
#include "tools/train/mnist.h"

/* Prefers NAME.gz (how the data sets are distributed) and falls back to
 * the plain file, so an unpacked copy works too. */
static eo_status find_file(char *path, size_t len, const char *dir, const char *split,
                           const char *kind, char *err, size_t errlen)
{
    const char *sep = dir[0] && dir[strlen(dir) - 1] == '/' ? "" : "/";
    int w = snprintf(path, len, "%s%s%s-%s-ubyte.gz", dir, sep, split, kind);
    if (w < 0 || (size_t)w >= len)
        return eo_errf(err, errlen, EO_ERR_ARG, "%s: directory name too long", dir);
    /* A name that exists is checked with the shared opener: a FIFO in
     * the data folder is refused by name here, not waited on. */
    struct stat sb;
    for (int k = 0; k < 2; k++) {
        if (k)
            path[w - 3] = '\0'; /* drop ".gz" */
        if (stat(path, &sb) != 0)
            continue;
        FILE *f;
        eo_status st = eo_file_open_read(path, "IDX", &f, NULL, err, errlen);
        if (st == EO_OK)
            fclose(f);
        return st;
    }
    return eo_errf(err, errlen, EO_ERR_IO, "%s[.gz]: not found (looked for both names)", path);
}

static eo_status check_and_keep(eo_idx *img, const char *ipath, const eo_idx *lab,
                                   const char *lpath, eo_dataset *ds, char *err, size_t errlen)
{
    char shape[64];
    eo_idx_shape_str(img, shape, sizeof shape);
    if (img->rank != 3 || img->dims[1] != EO_MNIST_SIDE || img->dims[2] != EO_MNIST_SIDE)
        return eo_errf(err, errlen, EO_ERR_FORMAT,
                       "%s: expected images of shape Nx28x28, found %s", ipath, shape);
    eo_idx_shape_str(lab, shape, sizeof shape);
    if (lab->rank != 1)
        return eo_errf(err, errlen, EO_ERR_FORMAT, "%s: expected labels of shape N, found %s",
                       lpath, shape);
    if (lab->dims[0] != img->dims[0])
        return eo_errf(err, errlen, EO_ERR_FORMAT,
                       "%s: %lu labels, but %s holds %lu images: expected equal counts", lpath,
                       (unsigned long)lab->dims[0], ipath, (unsigned long)img->dims[0]);
    size_t n = img->dims[0];
    for (size_t i = 0; i < n; i++)
        if (lab->data[i] >= EO_MNIST_CLASSES)
            return eo_errf(err, errlen, EO_ERR_FORMAT,
                           "%s: label %u at index %zu is outside 0..%d", lpath, lab->data[i], i,
                           EO_MNIST_CLASSES - 1);
    ds->y = malloc(n * sizeof *ds->y);
    if (!ds->y)
        return eo_errf(err, errlen, EO_ERR_OOM, "%s: cannot allocate %zu labels", lpath, n);
    /* The pixels stay the decoded bytes: the data set takes the buffer. */
    ds->x = img->data;
    img->data = NULL;
    for (size_t i = 0; i < n; i++)
        ds->y[i] = lab->data[i];
    ds->n = n;
    ds->dim = EO_MNIST_DIM;
    ds->classes = EO_MNIST_CLASSES;
    return EO_OK;
}

eo_status eo_mnist_load(const char *dir, int train, size_t max, eo_dataset *ds, char *err,
                        size_t errlen)
{
    if (!dir || !ds)
        return eo_errf(err, errlen, EO_ERR_ARG, "eo_mnist_load: NULL %s", dir ? "ds" : "dir");
    memset(ds, 0, sizeof *ds);
    const char *split = train ? "train" : "t10k";
    char ipath[4096], lpath[4096];
    eo_idx img = {0}, lab = {0};
    eo_status st = find_file(ipath, sizeof ipath, dir, split, "images-idx3", err, errlen);
    if (st == EO_OK)
        st = find_file(lpath, sizeof lpath, dir, split, "labels-idx1", err, errlen);
    if (st == EO_OK)
        st = eo_idx_load_first(ipath, max, &img, err, errlen);
    if (st == EO_OK)
        st = eo_idx_load_first(lpath, max, &lab, err, errlen);
    if (st == EO_OK)
        st = check_and_keep(&img, ipath, &lab, lpath, ds, err, errlen);
    eo_idx_free(&img);
    eo_idx_free(&lab);
    if (st != EO_OK)
        eo_dataset_free(ds);
    return st;
}
