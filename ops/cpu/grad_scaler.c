/* ops/cpu/grad_scaler.c — the inf/NaN check and unscale of dynamic loss
 * scaling (eo_k_unscale_check, ops/kernels.h), for gradients in host
 * memory.
 *
 * One pass: each element is tested and then multiplied by 1/scale. The
 * test is written as "|g| < inf", which is false for +-inf and for NaN
 * (every ordered comparison with NaN is false), so no isfinite() and no
 * libm call is needed. A bitwise OR of the test results keeps the loop free
 * of branches; the flag is stored once at the end. */
#include <math.h> /* INFINITY (a constant, no libm call) */
#include "ops/kernels.h"

void eo_k_unscale_check(int64_t n, float *g, float inv_scale, float *found, const eo_exec *ex)
{
    (void)ex; /* one pass over the gradient: memory-bound, one thread suffices */
    int bad = 0;
    for (int64_t i = 0; i < n; i++) {
        float v = g[i];
        float a = v < 0 ? -v : v;
        bad |= !(a < INFINITY);
        g[i] = v * inv_scale;
    }
    if (bad)
        *found = 1.0f;
}
