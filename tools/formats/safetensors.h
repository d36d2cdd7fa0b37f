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
 * Reading is the library's parser (core/safetensors.h: eo_st_image_parse,
 * strict, bounded, freestanding) over the file read into memory, with
 * the workspace it asks for from malloc: there is one parser, and the
 * checks are its checks (known dtype, shape x element size == byte
 * range, range inside the data, no overlap, no gap, no duplicate name).
 * The caller then checks the names and shapes it needs and only then
 * copies into its own tensors, so a bad file can never leave a model
 * half-loaded.
 *
 * Byte order: the data is little-endian in the file whatever the host;
 * the reader hands out the file's bytes (eo_weights_bind converts them),
 * and the writer stores little-endian bytes on any host (swapping each
 * element on a big-endian one, alloc/byteorder.h). */
#ifndef EO_TOOLS_SAFETENSORS_H
#define EO_TOOLS_SAFETENSORS_H

#include <stddef.h>
#include <stdint.h>
#include "alloc/status.h"
#include "core/safetensors.h" /* the dtypes, eo_st_tensor, eo_st_meta and the parser */

/* Installed as part of libeveryo-io (everyo-io.pc): C and C++ callers. */
#ifdef __cplusplus
extern "C" {
#endif

typedef struct eo_st_file {
    eo_st_tensor *tensors; /* in header order */
    size_t count;
    eo_st_meta *meta;      /* the "__metadata__" pairs, in header order */
    size_t nmeta;
    const unsigned char *data; /* start of the data area */
    size_t data_size;
    /* storage behind the pointers above */
    unsigned char *buf;        /* the file, when eo_st_read loaded it */
    char *strings;             /* the parser's workspace: names, keys, values, tables */
    size_t size;               /* bytes of the image (buf or the caller's) */
    const void *image;         /* its first byte */
} eo_st_file;

/* Reads and validates a whole file. On failure *f is empty and err names
 * the file and the problem (with the header byte offset for JSON errors).
 * Statuses: EO_ERR_ARG, EO_ERR_IO (cannot open or read; also a path that
 * is not a regular file, such as a directory, or one too large for this
 * process to hold), EO_ERR_FORMAT (also a data area whose CRC-32 is not
 * the EO_ST_CHECKSUM_KEY value: "PATH: corrupt: the tensor data's CRC-32
 * is ..., the header says ..."), EO_ERR_OOM. Release with eo_st_close. */
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

/* The metadata key of the data checksum: 8 lowercase hex digits, the
 * CRC-32 (the zlib / IEEE 802.3 one: Python's zlib.crc32) of the whole
 * data area as stored, i.e. every tensor's little-endian bytes in file
 * order. eo_st_write always stores it (replacing a caller's pair of that
 * key, which could only describe other bytes); eo_st_read and eo_st_parse
 * verify it when present and refuse a mismatch (EO_ERR_FORMAT), so a
 * bit-flipped or half-written file is never loaded. Files without it
 * (PyTorch's, older EveryO ones) load as before. The header itself is
 * not covered: the strict parser is its check. */
#define EO_ST_CHECKSUM_KEY "everyo.crc32"

/* crc continued over n bytes of data (start with 0): zlib's crc32. */
uint32_t eo_st_crc32(uint32_t crc, const void *data, size_t n);

/* Writes n tensors in the given order (data in host order; stored
 * little-endian) with contiguous offsets, the header
 * padded with spaces to a multiple of 8 bytes as the reference writer does
 * (so the data area starts 8-aligned), and the optional metadata pairs.
 * The metadata gets EO_ST_CHECKSUM_KEY. The file replaces `path`
 * atomically and durably (tools/formats/durable.h: "PATH.tmp" in the same
 * directory, fsync, rename, directory fsync), so a crash, a full disk or
 * an I/O error mid-write never leaves a half-written file under `path`:
 * on failure the previous file is intact and the message names the step
 * ("PATH: fsync failed: Input/output error (the previous file is kept)").
 * Refuses (EO_ERR_ARG) empty, duplicate, non-UTF-8 or "__metadata__"
 * names, unknown dtypes, rank > EO_ST_MAX_RANK, NULL data for non-empty
 * tensors and duplicate metadata keys. EO_ERR_IO if writing fails.
 * BF16 and F16 tensors are written as given (2 bytes an element; see
 * eo_f32_to_bf16 / eo_f32_to_f16 of ops/cpu/half.h to make them from floats). */
eo_status eo_st_write(const char *path, const eo_st_tensor *t, size_t n, const eo_st_meta *meta,
                      size_t nmeta, char *err, size_t errlen);

/* Writing BF16/F16 from floats rounds with eo_f32_to_bf16 / eo_f32_to_f16
 * (ops/cpu/half.h): nearest even, as PyTorch's .to(torch.bfloat16) / .half(). */

#ifdef __cplusplus
}
#endif

#endif
