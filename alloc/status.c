/* alloc/status.c — names for the status codes (see status.h). */
#include "alloc/status.h"

const char *eo_status_name(eo_status s)
{
    static const char *const names[EO_STATUS_COUNT] = {
        [EO_OK] = "EO_OK",
        [EO_ERR_ARG] = "EO_ERR_ARG",
        [EO_ERR_SHAPE] = "EO_ERR_SHAPE",
        [EO_ERR_AXIS] = "EO_ERR_AXIS",
        [EO_ERR_DTYPE] = "EO_ERR_DTYPE",
        [EO_ERR_DEVICE] = "EO_ERR_DEVICE",
        [EO_ERR_OOM] = "EO_ERR_OOM",
        [EO_ERR_UNSUPPORTED] = "EO_ERR_UNSUPPORTED",
        [EO_ERR_STATE] = "EO_ERR_STATE",
        [EO_ERR_NUMERIC] = "EO_ERR_NUMERIC",
        [EO_ERR_IO] = "EO_ERR_IO",
        [EO_ERR_FORMAT] = "EO_ERR_FORMAT",
        [EO_ERR_CUDA] = "EO_ERR_CUDA",
        [EO_ERR_NO_DEVICE] = "EO_ERR_NO_DEVICE",
    };
    if ((unsigned)s >= EO_STATUS_COUNT)
        return "EO_ERR_UNKNOWN";
    return names[s];
}
