/* tools/formats/safetensors.h — reading and writing the safetensors format.
 *
 * safetensors is the checkpoint format of the PyTorch/Hugging Face world,
 * so speaking it lets EveryO exchange weights with reference scripts:
 *
 *   8 bytes    N, the header length, little-endian u64
 *   N bytes    JSON: {"name": {"dtype": "F32", "shape": [2, 3],
 *                              "data_offsets": [begin, end]}, ...,
 *                     "__metadata__": {"key": "value", ...}}   (optional)
 *   the rest   raw little-endian tensor data; offsets count from here
 *
 * Reading is strict (see safetensors_read.c): the whole header is parsed,
 * every entry is checked (known dtype, shape x element size == byte range,
 * range inside the data, no overlap, no gap, no duplicate name) before
 * anything is returned, and nothing outside *f is touched. The caller then
 * checks the names and shapes it needs and only then copies into its own
 * tensors, so a bad file can never leave a model half-loaded.
 *
 * Both directions assume a little-endian host (every machine EveryO
 * targets); on a big-endian one they return EO_ERR_UNSUPPORTED. */
#ifndef EO_TOOLS_SAFETENSORS_H
#define EO_TOOLS_SAFETENSORS_H

#include <stddef.h>
#include <stdint.h>
#include "alloc/status.h"

typedef enum eo_st_dtype {
    EO_ST_BOOL, EO_ST_U8, EO_ST_I8, EO_ST_F8_E5M2, EO_ST_F8_E4M3,
    EO_ST_I16, EO_ST_U16, EO_ST_F16, EO_ST_BF16,
    EO_ST_I32, EO_ST_U32, EO_ST_F32,
    EO_ST_I64, EO_ST_U64, EO_ST_F64,
    EO_ST_DTYPE_COUNT
} eo_st_dtype;

/* The format's name ("F32"); NULL for a value out of range. */
const char *eo_st_dtype_name(eo_st_dtype t);
/* Bytes per element; 0 for a value out of range. */
size_t eo_st_dtype_size(eo_st_dtype t);

/* Rank 0 (a scalar, shape []) is allowed; more than this is refused. */
#define EO_ST_MAX_RANK 8
/* Like the reference implementation, refuse headers past 100 MB: a
 * corrupt length must not make us parse or allocate without bound. */
#define EO_ST_MAX_HEADER ((uint64_t)100000000)

/* One tensor. The reader fills every field; `data` points into the loaded
 * file and may be unaligned for files from other writers, so copy it out
 * with memcpy. The writer reads name, dtype, rank, shape and data (nbytes
 * is ignored there: it follows from the shape). */
typedef struct eo_st_tensor {
    const char *name;
    eo_st_dtype dtype;
    int rank;
    uint64_t shape[EO_ST_MAX_RANK];
    const void *data;
    size_t nbytes;
} eo_st_tensor;

typedef struct eo_st_meta {
    const char *key;
    const char *value;
} eo_st_meta;

typedef struct eo_st_file {
    eo_st_tensor *tensors; /* in header order */
    size_t count;
    eo_st_meta *meta;      /* the "__metadata__" pairs, in header order */
    size_t nmeta;
    const unsigned char *data; /* start of the data area */
    size_t data_size;
    /* storage behind the pointers above */
    unsigned char *buf;        /* the file, when eo_st_read loaded it */
    char *strings;             /* decoded names, keys and values */
} eo_st_file;

/* Reads and validates a whole file. On failure *f is empty and err names
 * the file and the problem (with the header byte offset for JSON errors).
 * Statuses: EO_ERR_ARG, EO_ERR_IO, EO_ERR_FORMAT, EO_ERR_OOM,
 * EO_ERR_UNSUPPORTED (big-endian host). Release with eo_st_close. */
eo_status eo_st_read(const char *path, eo_st_file *f, char *err, size_t errlen);

/* The same checks on a file already in memory; `label` names it in
 * messages. The tensors' data pointers point into buf, which the caller
 * keeps alive and unchanged until eo_st_close. */
eo_status eo_st_parse(const void *buf, size_t size, const char *label, eo_st_file *f, char *err,
                      size_t errlen);

/* The tensor called name, or NULL. */
const eo_st_tensor *eo_st_find(const eo_st_file *f, const char *name);

/* The metadata value for key, or NULL. */
const char *eo_st_meta_get(const eo_st_file *f, const char *key);

/* Frees what the reader allocated and empties *f; safe on an empty one. */
void eo_st_close(eo_st_file *f);

/* Writes n tensors in the given order with contiguous offsets, the header
 * padded with spaces to a multiple of 8 bytes as the reference writer does
 * (so the data area starts 8-aligned), and the optional metadata pairs.
 * The file is written under a temporary name and renamed into place, so a
 * crash mid-write never leaves a half-written file under `path`.
 * Refuses (EO_ERR_ARG) empty, duplicate, non-UTF-8 or "__metadata__"
 * names, unknown dtypes, rank > EO_ST_MAX_RANK, NULL data for non-empty
 * tensors and duplicate metadata keys. EO_ERR_IO if writing fails. */
eo_status eo_st_write(const char *path, const eo_st_tensor *t, size_t n, const eo_st_meta *meta,
                      size_t nmeta, char *err, size_t errlen);

#endif
