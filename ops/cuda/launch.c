/* ops/cuda/launch.c — the launch step and the size checks every CUDA
 * launcher shares (see launch.h). */
#include "alloc/text.h"
#include "ops/cuda/launch.h"

#define I32_MAX ((int64_t)2147483647)

eo_cuda *eo_cuda_ready(const eo_exec *ex)
{
    eo_cuda *cu = ex ? ex->cuda : NULL;
    if (!cu || !cu->is_open || cu->error != EO_OK)
        return NULL;
    /* This thread may have last used another device (or none). */
    return eo_cuda_enter(cu) == EO_OK ? cu : NULL;
}

void eo_cuda_launch(eo_cuda *cu, eo_cuda_kernel k, unsigned gx, unsigned gy, unsigned gz,
                    unsigned bx, unsigned by, void **params, size_t nparams)
{
    if (nparams != eo_text_len(eo_cuda_kernel_params(k))) {
        eo_cuda_fail_text(cu, EO_ERR_ARG, "launcher passes the wrong number of arguments to ",
                          eo_cuda_kernel_entry(k), NULL);
        return;
    }
    eo_cu_result r = cu->drv->cuLaunchKernel(cu->fn[k], gx, gy, gz, bx, by, 1, 0, cu->stream,
                                             params, NULL);
    if (r != EO_CUDA_SUCCESS) {
        char text[256];
        eo_cuda_msg m = eo_cuda_fail_begin(cu, EO_ERR_CUDA);
        eo_cuda_msg_put(&m, "cuLaunchKernel(");
        eo_cuda_msg_put(&m, eo_cuda_kernel_entry(k));
        eo_cuda_msg_put(&m, "): ");
        eo_cuda_msg_put(&m, eo_cuda_result_text(cu->drv, r, text, sizeof text));
    }
}

int eo_cuda_fits(eo_cuda *cu, const char *who, int64_t v)
{
    if (v >= 0 && v <= I32_MAX)
        return 1;
    eo_cuda_msg m = eo_cuda_fail_begin(cu, v < 0 ? EO_ERR_ARG : EO_ERR_UNSUPPORTED);
    eo_cuda_msg_put(&m, who);
    eo_cuda_msg_put(&m, ": size ");
    eo_cuda_msg_int(&m, v);
    eo_cuda_msg_put(&m, v < 0 ? " is negative" : " exceeds 2^31-1, the limit of the CUDA kernels");
    return 0;
}

int eo_cuda_shape4(eo_cuda *cu, const char *who, const int64_t shape[4], shape4 *out)
{
    out->total = 1;
    for (int k = 0; k < 4; k++) {
        if (!eo_cuda_fits(cu, who, shape[k]))
            return 0;
        out->n[k] = (uint32_t)shape[k];
        out->total *= shape[k];
        if (!eo_cuda_fits(cu, who, out->total))
            return 0;
    }
    return 1;
}

int eo_cuda_strides4(eo_cuda *cu, const char *who, const int64_t shape[4], const int64_t *s,
                     strides4 *out)
{
    int64_t reach = 0;
    for (int k = 0; k < 4; k++) {
        int64_t v = s ? s[k] : 0, a = v < 0 ? -v : v;
        if (!eo_cuda_fits(cu, who, a))
            return 0;
        out->s[k] = (int32_t)v;
        reach += (shape[k] > 0 ? shape[k] - 1 : 0) * a;
        if (!eo_cuda_fits(cu, who, reach))
            return 0;
    }
    return 1;
}

int eo_cuda_contiguous(const int64_t shape[4], const int64_t s[4])
{
    int64_t want = 1;
    for (int k = 3; k >= 0; k--) {
        if (shape[k] != 1 && s[k] != want)
            return 0;
        want *= shape[k];
    }
    return 1;
}
