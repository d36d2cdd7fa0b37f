/* ops/cpu/cross_entropy16.c — softmax cross-entropy over class indices on
 * bf16 / f16 logits, forward and backward (eo_k_cross_entropy16_fn,
 * eo_k_cross_entropy_backward16_fn, eo_k_rows_ws16_fn in ops/kernels.h).
 * logits, dlogits, loss and dloss are 16-bit (a bf16 loss from bf16
 * logits, as torch), targets i32, stats f32.
 *
 * Forward: blocks of rows (block16.h) widened into the worker's f32
 * buffer and run through the f32 kernel of cross_entropy.c, which writes
 * the rows' stats (M, L) straight into the f32 stats. The loss is then
 * reduced on the calling thread by the f32 kernel's own reduction
 * (eo_ce_loss, cross_entropy.h), reading each target logit widened, in
 * double and in row order, and rounded once to the 16-bit loss.
 *
 * Backward: blocks of rows of logits and dlogits widened, the f32
 * backward run on them, dlogits rounded once. The mean's scale dloss /
 * count is formed once over all rows, exactly as the f32 kernel forms it,
 * and handed to each block as a sum's scale, so a block's count does not
 * enter; reduction none widens the block's dloss values.
 *
 * So stats, loss and dlogits are bit for bit the f32 kernel's on the
 * widened values, rounded once, for any thread count. */
#include "ops/kernels.h"
#include "ops/cpu/block16.h"
#include "ops/cpu/cross_entropy.h"
#include "ops/cpu/grain.h"
#include "ops/cpu/half.h"

typedef struct ce16_job {
    int dt;
    int64_t rows, cols, R;
    const uint16_t *logits, *dloss;
    const int32_t *target;
    int32_t ignore;
    eo_ce_reduction reduction;
    const float *stats_in;
    float *stats;
    float scale; /* backward, mean or sum: dloss / count or dloss */
    uint16_t *dlogits;
    void *ws;
    size_t per;
} ce16_job;

/* A worker's slice: two blocks (logits, dlogits) and one value per row of
 * a block (the forward's per-row losses, the backward's dloss). */
static size_t per_worker(int64_t R, int64_t cols)
{
    return 2 * eo_block16_bytes(R * cols) + eo_block16_bytes(R);
}

size_t eo_k_cross_entropy_ws16(int64_t rows, int64_t cols, int nthreads)
{
    return eo_block16_ws(nthreads, per_worker(eo_block16_rows(rows, cols), cols));
}

static void ce16_forward(void *arg, int64_t b0, int64_t b1, int worker)
{
    const ce16_job *J = arg;
    unsigned char *s = eo_block16_slice(J->ws, J->per, worker);
    const size_t blk = eo_block16_bytes(J->R * J->cols);
    float *x = (float *)(void *)s, *loss = (float *)(void *)(s + 2 * blk);
    for (int64_t b = b0; b < b1; b++) {
        const int64_t r0 = b * J->R, n = J->rows - r0 < J->R ? J->rows - r0 : J->R;
        eo_half_to_f32(J->dt, n * J->cols, J->logits + r0 * J->cols, x);
        /* the rows' losses are formed again below, over all rows */
        eo_k_cross_entropy(n, J->cols, x, J->target + r0, J->ignore, EO_CE_NONE,
                           J->stats + 2 * r0, loss, NULL);
    }
}

static void ce16_backward(void *arg, int64_t b0, int64_t b1, int worker)
{
    const ce16_job *J = arg;
    unsigned char *s = eo_block16_slice(J->ws, J->per, worker);
    const size_t blk = eo_block16_bytes(J->R * J->cols);
    float *x = (float *)(void *)s, *dx = (float *)(void *)(s + blk);
    float *dl = (float *)(void *)(s + 2 * blk);
    for (int64_t b = b0; b < b1; b++) {
        const int64_t r0 = b * J->R, n = J->rows - r0 < J->R ? J->rows - r0 : J->R;
        const int64_t off = r0 * J->cols, len = n * J->cols;
        eo_half_to_f32(J->dt, len, J->logits + off, x);
        eo_half_to_f32(J->dt, len, J->dlogits + off, dx);
        eo_ce_reduction red = EO_CE_SUM;
        if (J->reduction == EO_CE_NONE) {
            red = EO_CE_NONE;
            eo_half_to_f32(J->dt, n, J->dloss + r0, dl);
        } else {
            dl[0] = J->scale;
        }
        eo_k_cross_entropy_backward(n, J->cols, x, J->target + r0, J->ignore, red,
                                    J->stats_in + 2 * r0, dl, dx, NULL);
        eo_f32_to_half(J->dt, len, dx, J->dlogits + off);
    }
}

static void ce16_run(ce16_job *J, eo_par_body body, const eo_exec *ex)
{
    if (J->rows <= 0)
        return;
    J->R = eo_block16_rows(J->rows, J->cols);
    J->per = per_worker(J->R, J->cols);
    eo_par_for(eo_par_if(eo_exec_par(ex), J->rows * J->cols), (J->rows + J->R - 1) / J->R, body,
               J);
}

void eo_k_cross_entropy16(int dt, int64_t rows, int64_t cols, const void *logits,
                          const int32_t *target, int32_t ignore_index, eo_ce_reduction reduction,
                          float *stats, void *loss, void *ws, const eo_exec *ex)
{
    ce16_job J = {0};
    J.dt = dt;
    J.rows = rows;
    J.cols = cols;
    J.logits = logits;
    J.target = target;
    J.ignore = ignore_index;
    J.reduction = reduction;
    J.stats = stats;
    J.ws = ws;
    ce16_run(&J, ce16_forward, ex);
    eo_ce_loss(dt, rows, cols, logits, target, ignore_index, reduction, stats, loss);
}

void eo_k_cross_entropy_backward16(int dt, int64_t rows, int64_t cols, const void *logits,
                                   const int32_t *target, int32_t ignore_index,
                                   eo_ce_reduction reduction, const float *stats,
                                   const void *dloss, void *dlogits, void *ws, const eo_exec *ex)
{
    int64_t count = 0;
    for (int64_t r = 0; r < rows; r++)
        count += target[r] != ignore_index;
    if (count == 0)
        return;
    ce16_job J = {0};
    J.dt = dt;
    J.rows = rows;
    J.cols = cols;
    J.logits = logits;
    J.dloss = dloss;
    J.target = target;
    J.ignore = ignore_index;
    J.reduction = reduction;
    J.stats_in = stats;
    J.dlogits = dlogits;
    J.ws = ws;
    /* the f32 kernel's scale, from the widened dloss[0] */
    const float d0 = eo_half_get(dt, ((const uint16_t *)dloss)[0]);
    J.scale = reduction == EO_CE_MEAN ? d0 / (float)count : d0;
    ce16_run(&J, ce16_backward, ex);
}
