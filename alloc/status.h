/* alloc/status.h — the status codes every EveryO call returns.
 *
 * They live at the bottom layer because everything above (the arena, the
 * core, the kernels' host wrappers, the tools) speaks the same vocabulary.
 * A status says *what kind* of failure happened; the human-readable detail
 * (op name, shapes, byte counts) is in the context's last-error message,
 * see eo_last_error() in core/everyo.h. */
#ifndef EO_STATUS_H
#define EO_STATUS_H

#ifdef __cplusplus
extern "C" {
#endif

typedef enum eo_status {
    EO_OK = 0,
    EO_ERR_ARG,         /* NULL pointer or invalid argument value */
    EO_ERR_SHAPE,       /* shapes do not fit together */
    EO_ERR_AXIS,        /* axis or rank out of range */
    EO_ERR_DTYPE,       /* wrong element type for this op */
    EO_ERR_DEVICE,      /* tensors on different devices, or no such device */
    EO_ERR_OOM,         /* an arena could not satisfy a request */
    EO_ERR_UNSUPPORTED, /* no kernel for this (backend, dtype, op) */
    EO_ERR_STATE,       /* call not valid now (e.g. backward of a non-scalar) */
    EO_ERR_NUMERIC,     /* a NaN or Inf where a finite value was required */
    EO_ERR_IO,          /* tools only: a file could not be read or written */
    EO_ERR_FORMAT,      /* tools only: a file's contents are malformed */
    EO_ERR_CUDA,        /* the CUDA driver reported an error */
    EO_ERR_NO_DEVICE,   /* no CUDA driver or no CUDA device on this machine */
    EO_STATUS_COUNT
} eo_status;

/* A short stable name for a status ("EO_ERR_SHAPE"); never NULL. */
const char *eo_status_name(eo_status s);

#ifdef __cplusplus
}
#endif

#endif
