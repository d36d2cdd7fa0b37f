/* ops/cuda/cast.c — the CUDA launcher of eo_k_cast (ptx/cast.ptx): the
 * strided 4-D convert / copy / accumulate between f32, bf16 and f16, and
 * the 2- and 4-byte bit copy. One 4-D kernel serves every layout; the
 * sizes are checked against the PTX's 32-bit indexing as for copy32. */
#include "ops/cuda/launch.h"

void eo_cuda_k_cast(const int64_t shape[4], int dd, void *dst, const int64_t sd[4], int sdt,
                    const void *src, const int64_t ss[4], int accumulate, const eo_exec *ex)
{
    eo_cuda *cu = eo_cuda_ready(ex);
    shape4 sh;
    strides4 a, b;
    if (!cu || !eo_cuda_shape4(cu, "cast", shape, &sh) || sh.total == 0)
        return;
    /* Contiguous conversions and 2-byte copies: the flat kernels of
     * ptx/elementwise16.ptx, 16 bytes a thread (ops/cuda/elementwise16.c). */
    if (!accumulate && eo_cuda_contiguous(shape, sd) && eo_cuda_contiguous(shape, ss) &&
        eo_cuda_cast_flat(dd, dst, sdt, src, sh.total, ex))
        return;
    if (!eo_cuda_strides4(cu, "cast", shape, sd, &a) || !eo_cuda_strides4(cu, "cast", shape, ss, &b))
        return;
    uint64_t d = eo_cuda_dp(dst), s = eo_cuda_dp(src);
    uint32_t udd = (uint32_t)dd, usd = (uint32_t)sdt, acc = accumulate ? 1u : 0u;
    LAUNCH(cu, EO_CUK_CAST_4D, eo_cuda_grid(sh.total), 1, 1, BLOCK, 1, N4(sh), &d, S4(a), &s,
           S4(b), &udd, &usd, &acc);
}
