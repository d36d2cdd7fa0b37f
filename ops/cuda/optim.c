/* ops/cuda/optim.c — CUDA launchers for SGD and AdamW updates in place:
 * the host side of ptx/optim.ptx, behind the kernel types of ops/kernels.h.
 *
 * One thread per parameter element.
 * Each launcher checks that every size fits the PTX's 32-bit indexing
 * (else the failure is recorded in the device state and the launch is
 * skipped) and passes its arguments in the order of ops/cuda/kernels.def. */
#include "ops/cuda/launch.h"

/* ---- optimizers ---------------------------------------------------------------------------- */
void eo_cuda_k_sgd(int64_t n, float *w, const float *g, float *v, float lr, float momentum,
                   float dampening, float wd, int nesterov, const eo_exec *ex)
{
    eo_cuda *cu = eo_cuda_ready(ex);
    if (!cu || !eo_cuda_fits(cu, "sgd", n) || n == 0)
        return;
    uint32_t nn = (uint32_t)n, nest = nesterov != 0;
    uint64_t pw = eo_cuda_dp(w), pg = eo_cuda_dp(g), pv = eo_cuda_dp(v);
    LAUNCH(cu, EO_CUK_SGD, eo_cuda_grid_v4(cu, n), 1, 1, BLOCK, 1, &nn, &pw, &pg, &pv, &lr, &momentum,
           &dampening, &wd, &nest);
}

/* b^e for an integer e >= 0 by repeated squaring (no libm pow needed). */
static double pow_int(double b, int64_t e)
{
    double r = 1.0;
    for (; e > 0; e >>= 1, b *= b)
        if (e & 1)
            r *= b;
    return r;
}

void eo_cuda_k_adamw(int64_t n, float *w, const float *g, float *m, float *v, float lr,
                     float beta1, float beta2, float eps, float wd, int64_t step,
                     const eo_exec *ex)
{
    eo_cuda *cu = eo_cuda_ready(ex);
    if (!cu || !eo_cuda_fits(cu, "adamw", n) || n == 0)
        return;
    uint32_t nn = (uint32_t)n;
    uint64_t pw = eo_cuda_dp(w), pg = eo_cuda_dp(g), pm = eo_cuda_dp(m), pv = eo_cuda_dp(v);
    /* Bias corrections 1 - beta^t, in double as Python computes them. */
    float bc1 = (float)(1.0 - pow_int(beta1, step));
    float bc2 = (float)(1.0 - pow_int(beta2, step));
    LAUNCH(cu, EO_CUK_ADAMW, eo_cuda_grid_v4(cu, n), 1, 1, BLOCK, 1, &nn, &pw, &pg, &pm, &pv, &lr, &beta1,
           &beta2, &eps, &wd, &bc1, &bc2);
}
