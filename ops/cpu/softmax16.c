/* ops/cpu/softmax16.c — softmax and log_softmax on bf16 / f16 storage,
 * forward and backward (eo_k_softmax16_fn, eo_k_softmax_backward16_fn,
 * eo_k_rows_ws16_fn in ops/kernels.h).
 *
 * Blocks of rows (block16.h) are widened into the worker's f32 buffers,
 * run through the f32 kernel of softmax.c with its own row workspace, and
 * rounded once. So each row's arithmetic is exactly the f32 kernel's —
 * the pipelined rows, the -inf and NaN rules — and the result is bit for
 * bit the f32 kernel's on the widened values, rounded to nearest even,
 * for any thread count. The backward reads the stored 16-bit y (as the
 * contract says); dx is widened, added to in f32, and rounded once. */
#include "ops/kernels.h"
#include "ops/cpu/block16.h"
#include "ops/cpu/grain.h"
#include "ops/cpu/half.h"

typedef struct sm16_job {
    int log, dt;
    int64_t rows, cols, R; /* R rows per block */
    const uint16_t *x, *y, *dy;
    uint16_t *out;
    void *ws;
    size_t per; /* bytes per worker */
} sm16_job;

/* A worker's slice: three blocks (forward x, y; backward y, dy, dx), then
 * the f32 forward's own scratch for one block on one thread. */
static size_t per_worker(int64_t R, int64_t cols)
{
    return 3 * eo_block16_bytes(R * cols) + (eo_k_softmax_ws(0, R, cols, 1) + 63) / 64 * 64;
}

size_t eo_k_softmax_ws16(int64_t rows, int64_t cols, int nthreads)
{
    return eo_block16_ws(nthreads, per_worker(eo_block16_rows(rows, cols), cols));
}

static void sm16_forward(void *arg, int64_t b0, int64_t b1, int worker)
{
    const sm16_job *J = arg;
    unsigned char *s = eo_block16_slice(J->ws, J->per, worker);
    const size_t blk = eo_block16_bytes(J->R * J->cols);
    float *x = (float *)(void *)s, *y = (float *)(void *)(s + blk);
    void *kws = s + 3 * blk;
    for (int64_t b = b0; b < b1; b++) {
        const int64_t r0 = b * J->R, n = J->rows - r0 < J->R ? J->rows - r0 : J->R;
        const int64_t off = r0 * J->cols, len = n * J->cols;
        eo_half_to_f32(J->dt, len, J->x + off, x);
        eo_k_softmax(J->log, n, J->cols, x, y, kws, NULL);
        eo_f32_to_half(J->dt, len, y, J->out + off);
    }
}

static void sm16_backward(void *arg, int64_t b0, int64_t b1, int worker)
{
    const sm16_job *J = arg;
    unsigned char *s = eo_block16_slice(J->ws, J->per, worker);
    const size_t blk = eo_block16_bytes(J->R * J->cols);
    float *y = (float *)(void *)s, *dy = (float *)(void *)(s + blk);
    float *dx = (float *)(void *)(s + 2 * blk);
    for (int64_t b = b0; b < b1; b++) {
        const int64_t r0 = b * J->R, n = J->rows - r0 < J->R ? J->rows - r0 : J->R;
        const int64_t off = r0 * J->cols, len = n * J->cols;
        eo_half_to_f32(J->dt, len, J->y + off, y);
        eo_half_to_f32(J->dt, len, J->dy + off, dy);
        eo_half_to_f32(J->dt, len, J->out + off, dx);
        eo_k_softmax_backward(J->log, n, J->cols, y, dy, dx, NULL);
        eo_f32_to_half(J->dt, len, dx, J->out + off);
    }
}

static void sm16_run(sm16_job *J, eo_par_body body, const eo_exec *ex)
{
    if (J->rows <= 0)
        return;
    J->R = eo_block16_rows(J->rows, J->cols);
    J->per = per_worker(J->R, J->cols);
    eo_par_for(eo_par_if(eo_exec_par(ex), J->rows * J->cols), (J->rows + J->R - 1) / J->R, body,
               J);
}

void eo_k_softmax16(int log, int dt, int64_t rows, int64_t cols, const void *x, void *y, void *ws,
                    const eo_exec *ex)
{
    sm16_job J = {log, dt, rows, cols, 0, x, NULL, NULL, y, ws, 0};
    sm16_run(&J, sm16_forward, ex);
}

void eo_k_softmax_backward16(int log, int dt, int64_t rows, int64_t cols, const void *y,
                             const void *dy, void *dx, void *ws, const eo_exec *ex)
{
    sm16_job J = {log, dt, rows, cols, 0, NULL, y, dy, dx, ws, 0};
    sm16_run(&J, sm16_backward, ex);
}
