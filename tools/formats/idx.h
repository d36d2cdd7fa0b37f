/* tools/formats/idx.h — reading IDX files, the format MNIST and Fashion-MNIST ship in.
 *
 * An IDX file is: two zero bytes, an element-type byte, a rank byte, one
 * big-endian u32 per dimension, then the elements in row-major order. The
 * data sets are distributed gzip-compressed, so the reader accepts both
 * plain and .gz files (told apart by the gzip magic 1f 8b, not by the name).
 *
 * The reader is strict because a training run that silently used a short
 * or padded file would produce numbers nobody could trust: the header must
 * be well formed, the element type must be unsigned byte (the only type the
 * MNIST family uses), and the file must hold exactly as many bytes as the
 * header promises — a truncated file, trailing bytes or a damaged gzip
 * stream are all errors, never partial data. */
#ifndef EO_TOOLS_IDX_H
#define EO_TOOLS_IDX_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "alloc/status.h"

/* Installed as part of libeveryo-io (everyo-io.pc): C and C++ callers. */
#ifdef __cplusplus
extern "C" {
#endif

#define EO_IDX_MAX_RANK 4
/* No MNIST-like file comes near this; it keeps a corrupt header from
 * asking for an absurd allocation. */
#define EO_IDX_MAX_ELEMS ((size_t)1 << 31)

typedef struct eo_idx {
    int rank;                       /* 1..EO_IDX_MAX_RANK */
    uint32_t dims[EO_IDX_MAX_RANK]; /* dims[0] is the outermost (e.g. N) */
    size_t count;                   /* product of dims: number of elements */
    uint8_t *data;                  /* count bytes, malloc'd; eo_idx_free */
} eo_idx;

/* Loads a whole IDX file of unsigned bytes. On failure *out is left empty
 * (data NULL) and err names the file and what was expected vs found.
 * Statuses: EO_ERR_ARG (NULL argument), EO_ERR_IO (cannot open or read,
 * or the path is not a regular file: a directory, a FIFO, a device),
 * EO_ERR_FORMAT (bad header, wrong length, corrupt gzip), EO_ERR_OOM. */
eo_status eo_idx_load(const char *path, eo_idx *out, char *err, size_t errlen);

/* The same from an open, seekable stream at its start (a file, or memory
 * through fmemopen); `name` stands for the file in messages. The header's
 * declared size is checked against the data actually present before more
 * than that data is allocated, so a short file with an absurd header
 * costs nothing. The stream is not closed. */
eo_status eo_idx_read(FILE *f, const char *name, eo_idx *out, char *err, size_t errlen);

/* The first `max` records only (along dims[0]; max 0 or at least dims[0]
 * reads everything, exactly as eo_idx_read). The header is checked in
 * full, *out's dims[0] says how many records came back, and the bytes
 * past them are neither read nor checked: a training run on a subset
 * decodes and holds only that subset. A file too short for the records
 * asked for is EO_ERR_FORMAT as before. */
eo_status eo_idx_read_first(FILE *f, const char *name, size_t max, eo_idx *out, char *err,
                            size_t errlen);
/* eo_idx_load with the same limit. */
eo_status eo_idx_load_first(const char *path, size_t max, eo_idx *out, char *err, size_t errlen);

/* Writes the dimensions as "60000x28x28" into buf (always terminated);
 * an empty string for a NULL x or a rank outside 1..EO_IDX_MAX_RANK. */
void eo_idx_shape_str(const eo_idx *x, char *buf, size_t len);

/* Frees the data and empties the struct; safe on an empty one. */
void eo_idx_free(eo_idx *x);

#ifdef __cplusplus
}
#endif

#endif
