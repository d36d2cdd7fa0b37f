/* ops/cpu/optim16.c — SGD and AdamW for mixed precision: f32 master
 * weights and state, a gradient stored as f32, bf16 or f16 and scaled by
 * gscale (1 / the loss scale), and an optional 16-bit copy of the updated
 * weights written in the same pass (ops/kernels.h, eo_k_sgd16_fn /
 * eo_k_adamw16_fn).
 *
 * Blocks of BLOCK elements: the gradient block is widened and scaled into
 * an f32 buffer on the stack, the f32 kernel (ops/cpu/optim.c) updates
 * the block, and the new weights are rounded into w16. So every weight
 * and state value is bit-for-bit what the f32 kernel gives for the
 * gradient gscale * widen(g), the order PyTorch's AMP recipe uses (unscale,
 * then step). Blocks are independent and go to threads whole. */
#include "ops/kernels.h"
#include "ops/cpu/grain.h"
#include "ops/cpu/half.h"

#define BLOCK 1024

typedef struct opt16_job {
    int adam;
    int64_t n;
    float *w, *m, *v;
    int gdt, dt16;
    const void *g;
    void *w16;
    float gscale, lr, b1, b2, eps, wd, momentum, dampening;
    int nesterov;
    int64_t step;
} opt16_job;

static void opt16_body(void *arg, int64_t begin, int64_t end, int worker)
{
    const opt16_job *J = arg;
    float buf[BLOCK];
    (void)worker;
    for (int64_t blk = begin; blk < end; blk++) {
        const int64_t i = blk * BLOCK, len = J->n - i < BLOCK ? J->n - i : BLOCK;
        if (J->gdt == EO_K_F32) {
            const float *g = (const float *)J->g + i;
            for (int64_t j = 0; j < len; j++)
                buf[j] = g[j] * J->gscale;
        } else {
            eo_half_to_f32(J->gdt, len, (const uint16_t *)J->g + i, buf);
            for (int64_t j = 0; j < len; j++)
                buf[j] *= J->gscale;
        }
        if (J->adam)
            eo_k_adamw(len, J->w + i, buf, J->m + i, J->v + i, J->lr, J->b1, J->b2, J->eps, J->wd,
                       J->step, NULL);
        else
            eo_k_sgd(len, J->w + i, buf, J->v ? J->v + i : NULL, J->lr, J->momentum,
                     J->dampening, J->wd, J->nesterov, NULL);
        if (J->w16)
            eo_f32_to_half(J->dt16, len, J->w + i, (uint16_t *)J->w16 + i);
    }
}

static void run(const opt16_job *J, const eo_exec *ex)
{
    eo_par_for(eo_par_if(eo_exec_par(ex), J->n), (J->n + BLOCK - 1) / BLOCK, opt16_body,
               (void *)J);
}

void eo_k_sgd16(int64_t n, float *w, int gdt, const void *g, float gscale, float *v, float lr,
                float momentum, float dampening, float wd, int nesterov, int dt16, void *w16,
                const eo_exec *ex)
{
    opt16_job J = {0};
    J.n = n;
    J.w = w;
    J.v = v;
    J.gdt = gdt;
    J.g = g;
    J.gscale = gscale;
    J.lr = lr;
    J.momentum = momentum;
    J.dampening = dampening;
    J.wd = wd;
    J.nesterov = nesterov;
    J.dt16 = dt16;
    J.w16 = w16;
    run(&J, ex);
}

void eo_k_adamw16(int64_t n, float *w, int gdt, const void *g, float gscale, float *m, float *v,
                  float lr, float beta1, float beta2, float eps, float wd, int64_t step, int dt16,
                  void *w16, const eo_exec *ex)
{
    opt16_job J = {0};
    J.adam = 1;
    J.n = n;
    J.w = w;
    J.m = m;
    J.v = v;
    J.gdt = gdt;
    J.g = g;
    J.gscale = gscale;
    J.lr = lr;
    J.b1 = beta1;
    J.b2 = beta2;
    J.eps = eps;
    J.wd = wd;
    J.step = step;
    J.dt16 = dt16;
    J.w16 = w16;
    run(&J, ex);
}
