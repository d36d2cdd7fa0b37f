/* core/cuda_off.c — the CUDA entry points of a CPU-only build (make CUDA=0).
 *
 * Such a build leaves out ops/cuda/ and the embedded PTX (most of the
 * library's bytes), which is what a small or embedded target wants. The
 * public API stays the same so a program written for both still links:
 * attaching a device says plainly that this build cannot, and the other
 * two calls behave as with no device attached. The default build compiles
 * core/backend_cuda.c instead of this file. */
#include "core/internal.h"

eo_status eo_cuda_attach(eo_ctx *ctx, const struct eo_cuda_driver *drv, int device,
                         size_t persist_bytes, size_t step_bytes)
{
    (void)drv, (void)device, (void)persist_bytes, (void)step_bytes;
    if (!ctx)
        return EO_ERR_ARG;
    return eo_fail(ctx, EO_ERR_UNSUPPORTED,
                   "cuda_attach: this EveryO was built without CUDA (make CUDA=0)");
}

void eo_cuda_detach(eo_ctx *ctx) { (void)ctx; }

const char *eo_cuda_device_name(const eo_ctx *ctx)
{
    (void)ctx;
    return "";
}
