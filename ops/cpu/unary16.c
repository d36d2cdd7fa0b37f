/* ops/cpu/unary16.c — the elementwise activations on bf16 / f16 storage
 * (eo_k_unary16_fn, eo_k_unary_backward16_fn in ops/kernels.h).
 *
 * Blocks of BLOCK elements go through f32 buffers on the stack: widened
 * (half.c's SIMD converters), run through the f32 kernel of ops/cpu/
 * unary.c, rounded once. The backward recomputes the f32 forward output
 * from x rather than reading the stored 16-bit y: tanh' = 1 - y^2 and
 * sigmoid' = y (1 - y) lose most of their digits from a y rounded to 8
 * bits near 1 (tanh(3) = 0.995 is 0.99609375 in bf16, and 1 - y^2 is then
 * off by a fifth). So forward and backward are exactly the f32 kernels'
 * on the widened values, each result rounded once: what the core's f32
 * fallback computes, without f32 copies of the activations. */
#include "ops/kernels.h"
#include "ops/cpu/grain.h"
#include "ops/cpu/half.h"

#define BLOCK 512

typedef struct un16_job {
    eo_unop op;
    int dt;
    int64_t n;
    const uint16_t *x, *dy;
    uint16_t *y, *dx;
    float alpha;
} un16_job;

static void un16_fwd(void *arg, int64_t begin, int64_t end, int worker)
{
    const un16_job *J = arg;
    float a[BLOCK], b[BLOCK];
    (void)worker;
    for (int64_t blk = begin; blk < end; blk++) {
        const int64_t i = blk * BLOCK, len = J->n - i < BLOCK ? J->n - i : BLOCK;
        eo_half_to_f32(J->dt, len, J->x + i, a);
        eo_k_unary(J->op, len, a, b, J->alpha, NULL);
        eo_f32_to_half(J->dt, len, b, J->y + i);
    }
}

static void un16_bwd(void *arg, int64_t begin, int64_t end, int worker)
{
    const un16_job *J = arg;
    float x[BLOCK], y[BLOCK], dy[BLOCK], dx[BLOCK];
    (void)worker;
    for (int64_t blk = begin; blk < end; blk++) {
        const int64_t i = blk * BLOCK, len = J->n - i < BLOCK ? J->n - i : BLOCK;
        eo_half_to_f32(J->dt, len, J->x + i, x);
        eo_k_unary(J->op, len, x, y, J->alpha, NULL); /* the f32 output, not the rounded one */
        eo_half_to_f32(J->dt, len, J->dy + i, dy);
        eo_half_to_f32(J->dt, len, J->dx + i, dx);
        eo_k_unary_backward(J->op, len, x, y, dy, dx, J->alpha, NULL);
        eo_f32_to_half(J->dt, len, dx, J->dx + i);
    }
}

void eo_k_unary16(eo_unop op, int dt, int64_t n, const void *x, void *y, float alpha,
                  const eo_exec *ex)
{
    un16_job J = {op, dt, n, x, NULL, y, NULL, alpha};
    eo_par_for(eo_par_if(eo_exec_par(ex), n), (n + BLOCK - 1) / BLOCK, un16_fwd, &J);
}

void eo_k_unary_backward16(eo_unop op, int dt, int64_t n, const void *x, const void *y,
                           const void *dy, void *dx, float alpha, const eo_exec *ex)
{
    (void)y; /* recomputed in f32 from x (see above) */
    un16_job J = {op, dt, n, x, dy, NULL, dx, alpha};
    eo_par_for(eo_par_if(eo_exec_par(ex), n), (n + BLOCK - 1) / BLOCK, un16_bwd, &J);
}
