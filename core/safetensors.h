/* core/safetensors.h — safetensors images in memory: parse one from a
 * caller's buffer and bind its tensors to a model's parameters.
 *
 * The format (https://huggingface.co/docs/safetensors, "Format";
 * the reference parser is the `safetensors` crate):
 *
 *   8 bytes    N, the header length, little-endian u64
 *   N bytes    JSON: {"name": {"dtype": "F32", "shape": [2, 3],
 *                              "data_offsets": [begin, end]}, ...,
 *                     "__metadata__": {"key": "value", ...}}   (optional)
 *   the rest   raw little-endian tensor data; offsets count from here
 *
 * This is the one parser: the library uses it for weights compiled into
 * a program or mapped from flash (eo_weights_bind), and tools/formats/
 * reads files with it. It runs freestanding — no allocation (the caller
 * lends a workspace, eo_st_workspace_bytes), no stdio, no byte-order
 * assumption (the length is read byte by byte; data is used in place
 * only on a little-endian host, else converted).
 *
 * Parsing is strict, like the reference implementation: header length at
 * most EO_ST_MAX_HEADER and inside the image; the JSON walked with a
 * bounded scanner (core/json.h) that names the byte where it stopped
 * making sense; every entry with a known dtype, shape x element size ==
 * its byte range, and the ranges tiling the data area exactly (sorted by
 * offset each begins where the previous ends, the last ends at the end
 * of the image: no overlap, no gap, no trailing bytes); no duplicate
 * name. Nothing past `size` is read, ever. */
#ifndef EO_SAFETENSORS_H
#define EO_SAFETENSORS_H

#include <stddef.h>
#include <stdint.h>
#include "alloc/status.h"
#include "core/nn.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum eo_st_dtype {
    EO_ST_BOOL, EO_ST_U8, EO_ST_I8, EO_ST_F8_E5M2, EO_ST_F8_E4M3,
    EO_ST_I16, EO_ST_U16, EO_ST_F16, EO_ST_BF16,
    EO_ST_I32, EO_ST_U32, EO_ST_F32,
    EO_ST_I64, EO_ST_U64, EO_ST_F64,
    EO_ST_DTYPE_COUNT
} eo_st_dtype;

/* The format's name ("F32", "BF16", "F16"); NULL for a value out of range. */
const char *eo_st_dtype_name(eo_st_dtype t);
/* Bytes per element (F32 4, BF16 and F16 2); 0 for a value out of range. */
size_t eo_st_dtype_size(eo_st_dtype t);

/* Rank 0 (a scalar, shape []) is allowed; more than this is refused. */
#define EO_ST_MAX_RANK 8
/* Like the reference implementation, refuse headers past 100 MB: a
 * corrupt length must not make us parse without bound. */
#define EO_ST_MAX_HEADER ((uint64_t)100000000)

/* One tensor. The parser fills every field; `data` points into the image
 * and may be unaligned for files from other writers (copy it out with
 * memcpy unless eo_weights_bind checked it). A writer (tools/formats/)
 * reads name, dtype, rank, shape and data only. */
typedef struct eo_st_tensor {
    const char *name;
    eo_st_dtype dtype;
    int rank;
    uint64_t shape[EO_ST_MAX_RANK];
    const void *data;
    size_t nbytes;
    uint64_t begin, end; /* data_offsets: the byte range in the data area */
    size_t index;        /* position in the header, 0-based */
} eo_st_tensor;

typedef struct eo_st_meta {
    const char *key;
    const char *value;
} eo_st_meta;

/* A parsed image. Everything points into the image or the workspace;
 * both must stay alive and unchanged while it is used. */
typedef struct eo_st_image {
    const eo_st_tensor *tensors; /* in header order */
    size_t count;
    const eo_st_meta *meta;      /* the "__metadata__" pairs, in header order */
    size_t nmeta;
    const unsigned char *data;   /* the data area (inside the image) */
    size_t data_size;
    size_t header_bytes;         /* N */
} eo_st_image;

/* Workspace bytes eo_st_image_parse needs for this image: the decoded
 * strings (at most N + 1 bytes) and the tensor and metadata tables for
 * the most entries N header bytes can hold, plus alignment — a bound
 * from the header length alone, so it is known before parsing (about
 * 6 N; an MLP's header of 300 bytes needs 2 KB). 0 when the image is
 * shorter than 8 bytes or N is out of range (eo_st_image_parse then says
 * why). Never wraps: the sum is checked. */
size_t eo_st_workspace_bytes(const void *image, size_t size);

/* Parse and validate the image at image[0..size) (see the rules above).
 * `label` names it in messages (NULL: "(buffer)"). On success *out
 * describes it; on failure *out is empty and err (when not NULL) says
 * which field at which header byte, or which tensor and offsets, is
 * wrong ("model.bin: header JSON at byte 41 (file offset 49): tensor "w":
 * unknown dtype "F31" ...", "...: tensors "a" [0, 8] and "b" [4, 12]
 * overlap"). Statuses: EO_ERR_ARG (NULL image with size > 0, NULL out,
 * workspace NULL or smaller than eo_st_workspace_bytes), EO_ERR_FORMAT.
 * Needs no context: tools call it for files, eo_weights_bind for a
 * model. */
eo_status eo_st_image_parse(const void *image, size_t size, void *work, size_t work_bytes,
                            const char *label, eo_st_image *out, char *err, size_t errlen);

/* The tensor called name, or NULL. */
const eo_st_tensor *eo_st_image_find(const eo_st_image *im, const char *name);
/* The metadata value for key, or NULL. */
const char *eo_st_image_meta(const eo_st_image *im, const char *key);

/* ---- binding an image to a model's parameters ---------------------------- */

/* Copy into the parameters' own storage (works on any device). */
#define EO_BIND_COPY 0
/* Let an F32 parameter on the CPU use the image's bytes where they lie —
 * no copy: its data pointer points into the caller's buffer, which may
 * be read-only (flash) and must outlive the model. Taken only where the
 * file's dtype is F32, the data is 4-byte aligned (safetensors writers,
 * ours included, pad the header so the data area starts 8-aligned in
 * the file: an image at an aligned address qualifies) and the host is
 * little-endian; any other tensor is copied (and converted) as with
 * EO_BIND_COPY. Such a parameter is read-only: eo_write, eo_fill,
 * eo_copy_ into it, eo_init_param and an optimizer over it return
 * EO_ERR_STATE (inference only). */
#define EO_BIND_IN_PLACE 1

/* Give every parameter of ps the values of the image's tensor of the same
 * name (checkpoint keys: "0.weight", ...), all or nothing: the image is
 * parsed and every parameter checked — its name present, its shape equal,
 * the dtype usable — before one byte is changed, so on any failure no
 * parameter is modified. Dtypes: F32 into f32 parameters as is; BF16 and
 * F16 into f32 parameters widened exactly (every 16-bit value is an f32);
 * BF16 into bf16 and F16 into f16 parameters as is; anything else is
 * refused (EO_ERR_DTYPE, naming both). A little-endian image on a
 * big-endian host is byte-swapped while copying. Tensors of the image
 * that no parameter asks for are ignored (an optimizer's state, say).
 * The parse workspace is borrowed from the step arena for the call.
 * Statuses: EO_ERR_ARG (NULL ps or image, unknown flags), EO_ERR_FORMAT
 * (the image is malformed: see eo_st_image_parse), EO_ERR_SHAPE
 * ("weights_bind: '0.weight': the model has [256x784 f32], the image has
 * [784x256] F32"), the missing name listed against the image's names
 * (EO_ERR_ARG: "weights_bind: no tensor '2.bias' in the image (the model
 * needs it); the image has 3: 0.weight 0.bias 2.weight"), EO_ERR_DTYPE,
 * EO_ERR_STATE (a read-only or borrowed parameter the image cannot be
 * used in place for: it has no storage to copy into), EO_ERR_OOM (step
 * arena too small for the workspace: about 6 x the header's bytes). */
eo_status eo_weights_bind(eo_ctx *ctx, const eo_params *ps, const void *image, size_t size,
                          int flags);

/* 1 when t's data is a caller's read-only buffer (bound in place), or
 * t is a borrowed parameter not bound yet (data NULL). */
int eo_tensor_is_readonly(const eo_tensor *t);

#ifdef __cplusplus
}
#endif

#endif
