/* ops/kernels.h — the contract every compute kernel follows.
 *
 * A kernel is a plain function over pointers, sizes and strides. It knows
 * nothing of tensors, the autograd tape, arenas or nn: a reader can study
 * one alone, and a benchmark can call it directly.
 *
 * Each kernel's type is a typedef (eo_k_*_fn). The CPU implementation is
 * declared with that typedef below; the backend table (core/backend.h)
 * holds one pointer of each type per device, and the CUDA backend fills
 * the same slots with host functions that launch PTX. Pointers are
 * therefore "addresses on the backend's device": host memory for the CPU,
 * device addresses for CUDA.
 *
 * Conventions (all kernels):
 *  - element type float32 unless the name says otherwise; indices int32;
 *  - sizes and strides are counts of elements, never bytes;
 *  - row-major: in [rows, cols] data the last index moves fastest;
 *  - "+=" outputs (all gradients) accumulate: the caller zeroes them once,
 *    which is what lets a tensor used twice receive both contributions;
 *  - kernels never fail: the core validates shapes and index ranges
 *    before calling, so a kernel has no status to return;
 *  - the last argument of every kernel is the execution handle `ex`
 *    (ops/exec.h): the thread hook for the CPU, the device state for CUDA;
 *    a CPU kernel accepts NULL (run on the calling thread); `ws` is
 *    caller-owned scratch of at least the size the matching *_ws function
 *    returns. */
#ifndef EO_KERNELS_H
#define EO_KERNELS_H

#include <stddef.h>
#include <stdint.h>
#include "ops/exec.h"

/* ---- strided 4-D layout ------------------------------------------------
 * Elementwise kernels walk a 4-D index space shape[0..3]; each operand
 * has its own strides. Lower-rank data is padded with leading size-1
 * axes. A stride of 0 repeats an element along that axis: that is how
 * broadcasting is expressed, with no copy. */

/* dst[i] = src[i] (bit copy of 4-byte elements; works for f32 and i32). */
typedef void eo_k_copy32_fn(const int64_t shape[4], void *dst, const int64_t sd[4],
                            const void *src, const int64_t ss[4], const eo_exec *ex);
/* dst[i] += src[i]. dst may have stride-0 axes: those sum over the axis
 * (this is how a broadcast input's gradient is reduced to its shape). */
typedef void eo_k_accumulate_fn(const int64_t shape[4], float *dst, const int64_t sd[4],
                                const float *src, const int64_t ss[4],
                                const eo_exec *ex);
/* x[0..n) = value. */
typedef void eo_k_fill_fn(int64_t n, float *x, float value, const eo_exec *ex);
/* bytes [0, n) of dst = 0: the zero fill of a new gradient or output, cut
 * among the threads when large (one core's stores do not fill the memory
 * bus on every machine). Any alignment. */
typedef void eo_k_zero_fn(void *dst, size_t n, const eo_exec *ex);

/* ---- elementwise binary with broadcasting ------------------------------
 * MAX, MIN: torch.maximum / torch.minimum: NaN if either input is NaN.
 * Their gradient is PyTorch's: the selected input gets dout, a tie (a ==
 * b) gives each dout / 2, and a NaN on either side gives both dout. */
typedef enum eo_binop {
    EO_BIN_ADD, EO_BIN_SUB, EO_BIN_MUL, EO_BIN_DIV, EO_BIN_MAX, EO_BIN_MIN, EO_BIN_COUNT
} eo_binop;

/* out[i] = a[i] op b[i] over `shape`; out has no stride-0 axes. */
typedef void eo_k_binary_fn(eo_binop op, const int64_t shape[4],
                            float *out, const int64_t so[4],
                            const float *a, const int64_t sa[4],
                            const float *b, const int64_t sb[4], const eo_exec *ex);
/* Given dout (= dL/dout) over `shape`, da += dout * d(out)/da and
 * db += dout * d(out)/db. da/db use stride 0 on the axes their input was
 * broadcast along, so the sum over that axis happens here. da or db may
 * be NULL (that input needs no gradient). a and b are the forward inputs
 * (needed by MUL and DIV). */
typedef void eo_k_binary_backward_fn(eo_binop op, const int64_t shape[4],
                                     const float *dout, const int64_t sdo[4],
                                     const float *a, const int64_t sa[4],
                                     const float *b, const int64_t sb[4],
                                     float *da, const int64_t sda[4],
                                     float *db, const int64_t sdb[4], const eo_exec *ex);

/* ---- elementwise unary (contiguous) ------------------------------------
 * GELU_TANH: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))  — the tanh
 *            approximation of Hendrycks & Gimpel, "Gaussian Error Linear
 *            Units" (2016), used by GPT-2;
 * GELU_ERF:  0.5 x (1 + erf(x / sqrt(2))), the exact form;
 * SCALE:     y = alpha * x;  LOG of x <= 0 gives -inf / NaN as in libm
 *            (the core checks the input domain). */
typedef enum eo_unop {
    EO_UN_RELU, EO_UN_GELU_TANH, EO_UN_GELU_ERF, EO_UN_TANH, EO_UN_SIGMOID,
    EO_UN_EXP, EO_UN_LOG, EO_UN_SCALE, EO_UN_COUNT
} eo_unop;

typedef void eo_k_unary_fn(eo_unop op, int64_t n, const float *x, float *y, float alpha,
                           const eo_exec *ex);
/* dx += dy * f'(x). x is the forward input, y the forward output (kernels
 * use whichever is cheaper: sigmoid and tanh and exp use y). */
typedef void eo_k_unary_backward_fn(eo_unop op, int64_t n, const float *x, const float *y,
                                    const float *dy, float *dx, float alpha,
                                    const eo_exec *ex);
/* The _set variants of a backward (eo_k_unary_backward_set,
 * eo_k_softmax_backward_set) write dx = +0 + term instead of dx += term:
 * the same values as the add into a zero-filled dx, without reading dx.
 * The core calls them for a gradient that does not exist yet, which
 * saves the zero fill and one of the kernel's read streams. */

/* ---- matmul --------------------------------------------------------------
 * For each b in [0, batch):
 *   C_b[M×N] = op(A_b) · op(B_b) + beta · C_b
 * op(A) = A stored M×K (ta = 0, row stride lda >= K)
 *       or Aᵀ with A stored K×M (ta = 1, lda >= M); likewise B (K×N / N×K).
 * A_b = A + b*sa (sa = 0 shares one A across the batch: a weight); same
 * for B and C. beta is 0 (C is only written; it may hold garbage) or 1
 * (accumulate: used by backward). */
typedef void eo_k_matmul_fn(int ta, int tb, int64_t batch, int64_t M, int64_t N, int64_t K,
                            const float *A, int64_t lda, int64_t sa,
                            const float *B, int64_t ldb, int64_t sb,
                            float beta, float *C, int64_t ldc, int64_t sc,
                            void *ws, const eo_exec *ex);
/* Scratch bytes eo_k_matmul needs for these sizes and thread count. */
typedef size_t eo_k_matmul_ws_fn(int64_t M, int64_t N, int64_t K, int nthreads);

/* ---- 16-bit matmul (tensor cores) ---------------------------------------
 * eo_k_matmul's contract with 16-bit inputs: A and B hold `in` values
 * (EO_BF16 or EO_F16, the same for both), the products are accumulated
 * in f32, and C holds `out` values: EO_F32, or `in` (rounded to nearest
 * even once, at the end; beta = 1 adds the old C in f32 first). Leading
 * dimensions and strides count elements. `in` and `out` are eo_dtype
 * values (core/everyo.h: EO_F32 0, EO_BF16 2, EO_F16 3; ops/ does not
 * include the core's header). Other dtype pairs record EO_ERR_UNSUPPORTED. */
typedef void eo_k_matmul16_fn(int ta, int tb, int64_t batch, int64_t M, int64_t N, int64_t K,
                              int in, const void *A, int64_t lda, int64_t sa,
                              const void *B, int64_t ldb, int64_t sb,
                              float beta, int out, void *C, int64_t ldc, int64_t sc,
                              void *ws, const eo_exec *ex);
/* ---- end of 16-bit matmul (tensor cores) ---- */

/* ---- reductions over one axis --------------------------------------------
 * x is contiguous [outer, n, inner]; y is [outer, inner].
 * MAX also writes, when argmax is not NULL, the index along n of the
 * first maximum (NaN compares as larger than anything, so it propagates). */
typedef enum eo_redop { EO_RED_SUM, EO_RED_MEAN, EO_RED_MAX, EO_RED_COUNT } eo_redop;

typedef void eo_k_reduce_fn(eo_redop op, int64_t outer, int64_t n, int64_t inner,
                            const float *x, float *y, int32_t *argmax, const eo_exec *ex);
/* dx += broadcast of dy (SUM), dy / n (MEAN), or dy at argmax (MAX). */
typedef void eo_k_reduce_backward_fn(eo_redop op, int64_t outer, int64_t n, int64_t inner,
                                     const float *dy, const int32_t *argmax, float *dx,
                                     const eo_exec *ex);
/* out[0] = sum of x[i]^2, accumulated in double (gradient clipping). */
typedef void eo_k_sumsq_fn(int64_t n, const float *x, float *out, const eo_exec *ex);
/* log-sum-exp over the same axis, torch.logsumexp's method: with m the max
 * over j of x[o, j, k] (NaN if any is NaN), and m' = m unless m is ±inf,
 * then 0,  L = log sum_j exp(x[o, j, k] - m'),  y[o, k] = m + L.
 * So a column of only -inf gives -inf, one holding +inf gives +inf, one
 * holding a NaN gives NaN, and n = 0 gives -inf. stats (NULL when no
 * backward follows) [outer, inner, 2] receives m' and L, kept apart as in
 * cross-entropy: at an offset of 1e8, y = m + L rounds L away. */
typedef void eo_k_logsumexp_fn(int64_t outer, int64_t n, int64_t inner, const float *x,
                               float *y, float *stats, const eo_exec *ex);
/* dx[o, j, k] += dy[o, k] * exp((x[o, j, k] - m') - L) (the softmax along
 * j) from the forward's stats; 0 where L = -inf (no mass, no gradient). */
typedef void eo_k_logsumexp_backward_fn(int64_t outer, int64_t n, int64_t inner, const float *x,
                                        const float *stats, const float *dy, float *dx,
                                        const eo_exec *ex);

/* ---- softmax / log_softmax over the last axis ----------------------------
 * Max-subtracted: y = exp(x - max) / sum exp(x - max), so logits of ±1e4
 * neither overflow nor underflow to NaN. A row whose entries are all -inf
 * (a fully masked attention row) has no probability mass: softmax gives 0
 * for every entry and log_softmax gives -inf; their gradients are 0. No
 * NaN is produced for finite or -inf inputs; a row holding a NaN (or a
 * +inf) is NaN throughout, as in PyTorch. log != 0 selects log_softmax.
 * ws: eo_k_softmax_ws bytes (0 is possible; then ws may be NULL), scratch
 * that need not be initialised: the CPU kernel keeps one row of exps per
 * worker there while the previous row is written out. */
typedef void eo_k_softmax_fn(int log, int64_t rows, int64_t cols, const float *x, float *y,
                             void *ws, const eo_exec *ex);
typedef size_t eo_k_softmax_ws_fn(int log, int64_t rows, int64_t cols, int nthreads);
/* From the forward output y:
 *   softmax:     dx += y * (dy - sum_j dy_j y_j)
 *   log_softmax: dx += dy - exp(y) * sum_j dy_j
 * so an entry at -inf in a row with mass gets dy (exp(-inf) = 0), as in
 * PyTorch; a row with no mass (y all -inf) gets 0. */
typedef void eo_k_softmax_backward_fn(int log, int64_t rows, int64_t cols, const float *y,
                                      const float *dy, float *dx, const eo_exec *ex);

/* ---- cross-entropy over class indices -------------------------------------
 * For each row r whose target[r] != ignore_index ("kept"):
 *   M_r = max_c logits[r, c],   L_r = log sum_c exp(logits[r, c] - M_r),
 *   loss_r = (M_r - logits[r, target[r]]) + L_r.
 * M_r and L_r are kept apart, never rounded into one log-sum-exp M_r + L_r:
 * at a common offset of 1e8 (float spacing 8) M_r + L_r is M_r, which
 * would lose L_r from the loss and the sum from the gradient. They are
 * saved for the backward in stats[2r] = M_r, stats[2r + 1] = L_r (any
 * values for ignored rows). reduction:
 *   EO_CE_MEAN  loss[0] = mean of loss_r over kept rows, 0 if there are none;
 *   EO_CE_SUM   loss[0] = sum of loss_r over kept rows, 0 if there are none;
 *   EO_CE_NONE  loss[r] = loss_r for each row, 0 for an ignored row.
 * A NaN logit makes its row's loss NaN (and a mean or sum NaN), as do a
 * +inf logit and a row of only -inf, as in PyTorch. Targets are in
 * [0, cols) or ignore_index. */
typedef enum eo_ce_reduction { EO_CE_MEAN, EO_CE_SUM, EO_CE_NONE } eo_ce_reduction;
typedef void eo_k_cross_entropy_fn(int64_t rows, int64_t cols, const float *logits,
                                   const int32_t *target, int32_t ignore_index,
                                   eo_ce_reduction reduction, float *stats, float *loss,
                                   const eo_exec *ex);
/* dlogits[r,c] += s_r * (softmax(logits)[r,c] - [c == target[r]]) for kept
 * rows, softmax = exp((logits - M_r) - L_r) from stats; s_r = dloss[0] /
 * count (MEAN, count = kept rows), dloss[0] (SUM) or dloss[r] (NONE).
 * Ignored rows get nothing. */
typedef void eo_k_cross_entropy_backward_fn(int64_t rows, int64_t cols, const float *logits,
                                            const int32_t *target, int32_t ignore_index,
                                            eo_ce_reduction reduction, const float *stats,
                                            const float *dloss, float *dlogits,
                                            const eo_exec *ex);

/* ---- layernorm over the last axis -------------------------------------------
 * Ba, Kiros & Hinton, "Layer Normalization" (2016):
 *   mean = (1/C) sum x,  var = (1/C) sum (x - mean)^2  (biased, as PyTorch),
 *   rstd = 1 / sqrt(var + eps),  y = (x - mean) * rstd * w + b.
 * The variance is taken around the mean (two passes, or Welford), never as
 * E[x^2] - E[x]^2, so a row like 1e4 + small noise keeps its digits and a
 * constant row gives y = b exactly. w and b may be NULL (no affine).
 * mean and rstd ([rows]) are saved for the backward. */
typedef void eo_k_layernorm_fn(int64_t rows, int64_t cols, const float *x, const float *w,
                               const float *b, float eps, float *y, float *mean, float *rstd,
                               const eo_exec *ex);
/* xhat = (x - mean) * rstd, g = dy * w:
 *   dx += rstd * (g - mean_c(g) - xhat * mean_c(g * xhat))
 *   dw += sum_rows dy * xhat,   db += sum_rows dy.
 * dx, dw, db may each be NULL. ws: eo_k_layernorm_backward_ws bytes. */
typedef void eo_k_layernorm_backward_fn(int64_t rows, int64_t cols, const float *x,
                                        const float *w, const float *mean, const float *rstd,
                                        const float *dy, float *dx, float *dw, float *db,
                                        void *ws, const eo_exec *ex);
typedef size_t eo_k_layernorm_backward_ws_fn(int64_t rows, int64_t cols, int nthreads);

/* ---- embedding -----------------------------------------------------------------
 * out[i, :] = table[idx[i], :] for i in [0, n); table is [vocab, dim]. */
typedef void eo_k_embedding_fn(int64_t n, int64_t dim, const float *table, const int32_t *idx,
                               float *out, const eo_exec *ex);
/* Integer ids in memory the host cannot read (a device): check that each
 * is in [0, limit), or equals `ignore` when has_ignore, before a kernel
 * indexes with it. Returns the ids that kernel should use: a copy in which
 * every bad id is replaced (by 0, or by `ignore` when has_ignore), so
 * that nothing is read or written outside a table; the first bad id is
 * reported as a status at the next synchronising call. kind names the
 * check in that report (EO_IDS_INDEX: embedding, EO_IDS_TARGET:
 * cross-entropy). The CPU needs none: the core reads the ids itself. */
enum { EO_IDS_INDEX = 0, EO_IDS_TARGET = 1 };
typedef const int32_t *eo_k_check_ids_fn(int kind, int64_t n, const int32_t *ids, int64_t limit,
                                         int has_ignore, int32_t ignore, const eo_exec *ex);
/* dtable[idx[i], :] += dout[i, :]; a repeated index receives every row. */
typedef void eo_k_embedding_backward_fn(int64_t n, int64_t dim, const int32_t *idx,
                                        const float *dout, float *dtable, const eo_exec *ex);

/* ---- dropout (inverted) --------------------------------------------------------
 * Element i is kept when u(seed, i) >= p, where u is a counter-based hash
 * (SplitMix64 finaliser of seed ^ i, top 24 bits / 2^24) — so the mask is
 * recomputed in the backward instead of stored, and does not depend on
 * the thread count. y = (x / (1 - p)) * (keep ? 1 : 0): a dropped NaN or
 * inf gives NaN, a dropped -3 gives -0, as PyTorch's x * mask; p in [0, 1). */
typedef void eo_k_dropout_fn(int64_t n, const float *x, float *y, float p, uint64_t seed,
                             const eo_exec *ex);
/* dx += (dy / (1 - p)) * (keep ? 1 : 0) with the same mask. */
typedef void eo_k_dropout_backward_fn(int64_t n, const float *dy, float *dx, float p,
                                      uint64_t seed, const eo_exec *ex);

/* ---- convolution helpers (NCHW) ----------------------------------------------
 * im2col: for N images x [N, C, H, W], cols [C*kh*kw, N*OH*OW] with
 * OH = (H + 2 pad - kh) / stride + 1 (likewise OW); row (c, i, j) holds
 * the input pixel under kernel tap (i, j) for each image and output
 * position (image n in columns [n*OH*OW, (n+1)*OH*OW)), 0 in the padding.
 * The whole batch's convolution is then ONE matmul W[Cout, C*kh*kw]·cols,
 * large enough to run the matmul kernel at full speed. */
typedef void eo_k_im2col_fn(int64_t N, int64_t C, int64_t H, int64_t W, int64_t kh,
                            int64_t kw, int64_t pad, int64_t stride, const float *x,
                            float *cols, const eo_exec *ex);
/* The adjoint: dx [N, C, H, W] += scatter of dcols (padding taps dropped). */
typedef void eo_k_col2im_fn(int64_t N, int64_t C, int64_t H, int64_t W, int64_t kh,
                            int64_t kw, int64_t pad, int64_t stride, const float *dcols,
                            float *dx, const eo_exec *ex);
/* Max pool k×k, stride k, no padding, over planes [P, H, W] (P = N*C):
 * y [P, H/k, W/k] (floor), arg = flat index in the plane of the max. */
typedef void eo_k_maxpool2d_fn(int64_t P, int64_t H, int64_t W, int64_t k, const float *x,
                               float *y, int32_t *arg, const eo_exec *ex);
/* dx[p, arg] += dy[p, o]. The _set form (eo_k_maxpool2d_backward_set)
 * writes every entry of dx: +0 + dy at each window's argmax, +0 elsewhere
 * (the windows do not overlap, so this equals the add into zeros). */
typedef void eo_k_maxpool2d_backward_fn(int64_t P, int64_t H, int64_t W, int64_t k,
                                        const float *dy, const int32_t *arg, float *dx,
                                        const eo_exec *ex);
/* ReLU then max pool in one pass (eo_k_relu_maxpool2d, the maxpool2d
 * signature): y and arg exactly as eo_k_maxpool2d over eo_k_unary(RELU,
 * x), without that intermediate in memory. The backward takes that y
 * [P, H/k, W/k] (where it is > 0 the ReLU passed the max) and gives
 * exactly the pool's backward followed by the ReLU's, into a fresh
 * (_set) or an existing dx [P, H, W]. */
typedef void eo_k_relu_maxpool2d_backward_fn(int64_t P, int64_t H, int64_t W, int64_t k,
                                             const float *y, const float *dy,
                                             const int32_t *arg, float *dx, const eo_exec *ex);

/* ---- fused 2-D convolution (NCHW) --------------------------------------------
 * The whole convolution in one kernel, no [C*kh*kw, N*OH*OW] matrix in
 * memory: y [N, Co, OH, OW] = x [N, C, H, W] (*) w [Co, C, kh, kw]
 * + bias[Co] (bias may be NULL), cross-correlation as PyTorch, sizes as
 * im2col's above. All operands contiguous. ws: eo_k_conv2d_ws bytes, for
 * either direction. A backend without these slots (NULL) gets the
 * composed im2col + matmul + bias path. */
typedef struct eo_conv_geom {
    int64_t N, C, H, W; /* input */
    int64_t Co, kh, kw; /* weight [Co, C, kh, kw] */
    int64_t pad, stride;
} eo_conv_geom;
typedef void eo_k_conv2d_fn(const eo_conv_geom *g, const float *x, const float *w,
                            const float *bias, float *y, void *ws, const eo_exec *ex);
/* From x, w and dy = dL/dy: dx, dw, db += their gradients; any may be
 * NULL. dw and db sum over the images in a fixed order for a given thread
 * count. */
typedef void eo_k_conv2d_backward_fn(const eo_conv_geom *g, const float *x, const float *w,
                                     const float *dy, float *dx, float *dw, float *db,
                                     void *ws, const eo_exec *ex);
typedef size_t eo_k_conv2d_ws_fn(const eo_conv_geom *g, int nthreads);

/* ---- optimizer updates (in place) ------------------------------------------------
 * SGD with momentum, dampening and weight decay, as PyTorch's
 * torch.optim.SGD: d = g + wd*w; v = momentum*v + (1 - dampening)*d;
 * d = nesterov ? d + momentum*v : v (or d itself when momentum = 0; v may
 * then be NULL); w -= lr * d. torch skips the dampening on a buffer's
 * first step (v = d): the caller passes dampening 0 then, with v zeroed. */
typedef void eo_k_sgd_fn(int64_t n, float *w, const float *g, float *v, float lr,
                         float momentum, float dampening, float wd, int nesterov,
                         const eo_exec *ex);
/* AdamW, Loshchilov & Hutter, "Decoupled Weight Decay Regularization"
 * (ICLR 2019), Algorithm 2, with Adam's bias correction (Kingma & Ba 2015):
 *   w -= lr * wd * w;  m = b1 m + (1-b1) g;  v = b2 v + (1-b2) g^2;
 *   w -= lr * (m / (1 - b1^t)) / (sqrt(v / (1 - b2^t)) + eps),
 * t = step >= 1. Same order of operations as torch.optim.AdamW. */
typedef void eo_k_adamw_fn(int64_t n, float *w, const float *g, float *m, float *v, float lr,
                           float beta1, float beta2, float eps, float wd, int64_t step,
                           const eo_exec *ex);

/* ---- loss scaling (dynamic, for f16 training) -------------------------------------
 * The check and unscale of PyTorch's GradScaler (torch.amp.GradScaler,
 * its _amp_foreach_non_finite_check_and_unscale_), for one gradient:
 *   if g[i] is inf or NaN: *found = 1.0f   (never cleared here: the caller
 *                                           zeroes it once per step);
 *   g[i] = g[i] * inv_scale                 (one rounded multiply; done to
 *                                           non-finite elements too).
 * The check reads the value before the multiply, as PyTorch's does, so an
 * element that is finite only after unscaling still counts as overflow.
 * found is one float on the kernel's device; the order in which threads
 * store 1.0f there does not matter. */
typedef void eo_k_unscale_check_fn(int64_t n, float *g, float inv_scale, float *found,
                                   const eo_exec *ex);
eo_k_unscale_check_fn eo_k_unscale_check; /* ops/cpu/grad_scaler.c */

/* ---- the CPU implementations ------------------------------------------------------ */
eo_k_copy32_fn eo_k_copy32;
eo_k_accumulate_fn eo_k_accumulate;
eo_k_fill_fn eo_k_fill;
eo_k_zero_fn eo_k_zero;
eo_k_binary_fn eo_k_binary;
eo_k_binary_backward_fn eo_k_binary_backward;
eo_k_unary_fn eo_k_unary;
eo_k_unary_backward_fn eo_k_unary_backward, eo_k_unary_backward_set;
eo_k_matmul_fn eo_k_matmul;
eo_k_matmul_ws_fn eo_k_matmul_ws;
eo_k_reduce_fn eo_k_reduce;
eo_k_reduce_backward_fn eo_k_reduce_backward;
eo_k_sumsq_fn eo_k_sumsq;
eo_k_logsumexp_fn eo_k_logsumexp;
eo_k_logsumexp_backward_fn eo_k_logsumexp_backward;
eo_k_softmax_fn eo_k_softmax;
eo_k_softmax_ws_fn eo_k_softmax_ws;
eo_k_softmax_backward_fn eo_k_softmax_backward, eo_k_softmax_backward_set;
eo_k_cross_entropy_fn eo_k_cross_entropy;
eo_k_cross_entropy_backward_fn eo_k_cross_entropy_backward;
eo_k_layernorm_fn eo_k_layernorm;
eo_k_layernorm_backward_fn eo_k_layernorm_backward;
eo_k_layernorm_backward_ws_fn eo_k_layernorm_backward_ws;
eo_k_embedding_fn eo_k_embedding;
eo_k_embedding_backward_fn eo_k_embedding_backward;
eo_k_dropout_fn eo_k_dropout;
eo_k_dropout_backward_fn eo_k_dropout_backward;
eo_k_im2col_fn eo_k_im2col;
eo_k_col2im_fn eo_k_col2im;
eo_k_maxpool2d_fn eo_k_maxpool2d;
eo_k_maxpool2d_backward_fn eo_k_maxpool2d_backward, eo_k_maxpool2d_backward_set;
eo_k_maxpool2d_fn eo_k_relu_maxpool2d;
eo_k_relu_maxpool2d_backward_fn eo_k_relu_maxpool2d_backward, eo_k_relu_maxpool2d_backward_set;
eo_k_conv2d_fn eo_k_conv2d;
eo_k_conv2d_backward_fn eo_k_conv2d_backward;
eo_k_conv2d_ws_fn eo_k_conv2d_ws;
eo_k_sgd_fn eo_k_sgd;
eo_k_adamw_fn eo_k_adamw;

/* The dropout keep-test, shared by the kernel, its backward and tests. */
static inline int eo_dropout_keep(uint64_t seed, int64_t i, float p)
{
    uint64_t z = seed ^ ((uint64_t)i * 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    return (float)(z >> 40) * (1.0f / 16777216.0f) >= p;
}

/* ---- attention (fused; ops/cpu/attention.c) ------------------------------------------
 * Scaled dot-product attention over B*H independent heads, all operands
 * contiguous: q, out [B, H, Tq, D]; k, v [B, H, Tk, D]; lse [B, H, Tq].
 *   s_ij = scale * q_i · k_j + mask(b, h, i, j)   (-inf above the diagonal
 *          when causal: key j is hidden from query i when j > i + Tk - Tq,
 *          Tq <= Tk; the queries are the last Tq positions, as when new
 *          tokens attend to a cache of earlier keys; Tq == Tk is the
 *          usual lower triangle),
 *   out_i = sum_j softmax_j(s_i) v_j,   lse_i = log sum_j exp(s_ij).
 * The mask is additive (0 to keep, -inf to hide) and optional (NULL); it
 * is read at mask[b*ms[0] + h*ms[1] + i*ms[2] + j*ms[3]], stride 0 on the
 * axes it is broadcast along. A row with every key at -inf gets out = 0
 * and lse = -inf. A NaN score among the keys a row sees (from q, k or the
 * mask) makes that row's out and lse NaN, and its gradients NaN, as the
 * composed softmax in PyTorch; keys hidden by `causal` are never read. The [Tq, Tk] scores are never stored: keys are visited
 * in tiles with an online softmax. ws: eo_k_attention_ws bytes, for
 * either direction. Results do not depend on the thread count. */
typedef void eo_k_attention_fn(int64_t B, int64_t H, int64_t Tq, int64_t Tk, int64_t D,
                               const float *q, const float *k, const float *v,
                               const float *mask, const int64_t ms[4], int causal, float scale,
                               float *out, float *lse, void *ws, const eo_exec *ex);
/* From the forward's inputs, out and lse, and dout = dL/dout:
 * dq, dk, dv += their gradients and dmask += dL/ds (stride 0 on a
 * broadcast axis sums over it; dms as ms). Any of dq, dk, dv, dmask may be
 * NULL. Fully masked rows contribute nothing. */
typedef void eo_k_attention_backward_fn(int64_t B, int64_t H, int64_t Tq, int64_t Tk, int64_t D,
                                        const float *q, const float *k, const float *v,
                                        const float *mask, const int64_t ms[4], int causal,
                                        float scale, const float *out, const float *lse,
                                        const float *dout, float *dq, float *dk, float *dv,
                                        float *dmask, const int64_t dms[4], void *ws,
                                        const eo_exec *ex);
typedef size_t eo_k_attention_ws_fn(int64_t Tq, int64_t Tk, int64_t D, int nthreads);
eo_k_attention_fn eo_k_attention;
eo_k_attention_backward_fn eo_k_attention_backward;
eo_k_attention_ws_fn eo_k_attention_ws;

/* ==== 16-bit storage: kernel slots beside the f32 ones ==========================
 * Design (../shared/DESIGN.md): one op, a kernel slot per dtype. These
 * kernels read and write bf16 or f16 storage (`dt`, one of the codes
 * below; the same for every 16-bit operand of a call) and do all their
 * arithmetic in f32: a value is widened when read, every sum runs in f32,
 * and a result is rounded to nearest even once, when stored (ops/cpu/
 * half.h gives the rounding rules). Statistics, losses' saved values and
 * integer targets stay f32 / i32 as in the f32 kernels. Gradients have
 * their tensor's dtype (PyTorch's rule), so "+=" outputs add in f32 and
 * round once per element per call. A backend that lacks a slot leaves it
 * NULL and the core falls back to the f32 kernel over f32 copies
 * (core/op_cast.c). Shapes, strides, NaN and ±inf rules, and the meaning
 * of every argument not described here are those of the f32 kernel of
 * the same name above. */
enum { EO_K_F32 = 0, EO_K_I32 = 1, EO_K_BF16 = 2, EO_K_F16 = 3 }; /* = eo_dtype */

/* Strided 4-D convert / copy: dst[i] = src[i] (accumulate 0) or
 * dst[i] += src[i] (accumulate 1), dst stored as dd, src as sdt, each of
 * f32, bf16, f16: read to f32, added in f32, rounded once to dd. With
 * dd == sdt and accumulate 0 it is a bit copy of 2- or 4-byte elements
 * (then i32 too: the contiguous copy of every dtype). dst has no stride-0
 * axis unless accumulate is 1 (then that axis is summed, in f32 within
 * the innermost axis on the CPU). */
typedef void eo_k_cast_fn(const int64_t shape[4], int dd, void *dst, const int64_t sd[4],
                          int sdt, const void *src, const int64_t ss[4], int accumulate,
                          const eo_exec *ex);
/* x[0..n) = value rounded to dt. */
typedef void eo_k_fill16_fn(int64_t n, int dt, void *x, float value, const eo_exec *ex);

/* eo_k_binary / eo_k_binary_backward with out, a, b, dout, da, db all dt.
 * The backward's sum over a broadcast axis (stride-0 da or db) is formed
 * in f32 and rounded once. */
typedef void eo_k_binary16_fn(eo_binop op, int dt, const int64_t shape[4], void *out,
                              const int64_t so[4], const void *a, const int64_t sa[4],
                              const void *b, const int64_t sb[4], const eo_exec *ex);
typedef void eo_k_binary_backward16_fn(eo_binop op, int dt, const int64_t shape[4],
                                       const void *dout, const int64_t sdo[4], const void *a,
                                       const int64_t sa[4], const void *b, const int64_t sb[4],
                                       void *da, const int64_t sda[4], void *db,
                                       const int64_t sdb[4], const eo_exec *ex);
/* eo_k_unary / eo_k_unary_backward with x, y, dy, dx all dt. */
typedef void eo_k_unary16_fn(eo_unop op, int dt, int64_t n, const void *x, void *y, float alpha,
                             const eo_exec *ex);
typedef void eo_k_unary_backward16_fn(eo_unop op, int dt, int64_t n, const void *x,
                                      const void *y, const void *dy, void *dx, float alpha,
                                      const eo_exec *ex);

/* Row kernels. ws: at least the bytes the matching *_ws16 function
 * returns for these sizes and thread count (one function per family,
 * covering forward and backward); it need not be initialised. */
typedef size_t eo_k_rows_ws16_fn(int64_t rows, int64_t cols, int nthreads);
/* eo_k_softmax / eo_k_softmax_backward with x, y, dy, dx all dt. */
typedef void eo_k_softmax16_fn(int log, int dt, int64_t rows, int64_t cols, const void *x,
                               void *y, void *ws, const eo_exec *ex);
typedef void eo_k_softmax_backward16_fn(int log, int dt, int64_t rows, int64_t cols,
                                        const void *y, const void *dy, void *dx, void *ws,
                                        const eo_exec *ex);
/* eo_k_layernorm / eo_k_layernorm_backward with x, w, b, y, dy, dx, dw, db
 * dt (w, b, dw, db may be NULL as there); mean and rstd f32. dw and db
 * are summed over all rows in f32 and rounded once. */
typedef void eo_k_layernorm16_fn(int dt, int64_t rows, int64_t cols, const void *x,
                                 const void *w, const void *b, float eps, void *y, float *mean,
                                 float *rstd, void *ws, const eo_exec *ex);
typedef void eo_k_layernorm_backward16_fn(int dt, int64_t rows, int64_t cols, const void *x,
                                          const void *w, const float *mean, const float *rstd,
                                          const void *dy, void *dx, void *dw, void *db,
                                          void *ws, const eo_exec *ex);
/* eo_k_cross_entropy / its backward with logits, dlogits, loss and dloss
 * dt (as torch: bf16 logits give a bf16 loss); target i32, stats f32. */
typedef void eo_k_cross_entropy16_fn(int dt, int64_t rows, int64_t cols, const void *logits,
                                     const int32_t *target, int32_t ignore_index,
                                     eo_ce_reduction reduction, float *stats, void *loss,
                                     void *ws, const eo_exec *ex);
typedef void eo_k_cross_entropy_backward16_fn(int dt, int64_t rows, int64_t cols,
                                              const void *logits, const int32_t *target,
                                              int32_t ignore_index, eo_ce_reduction reduction,
                                              const float *stats, const void *dloss,
                                              void *dlogits, void *ws, const eo_exec *ex);
/* eo_k_embedding / its backward with table, out, dout, dtable dt. Each
 * dtable row receives its contributions in index order, each rounded to
 * dt when added (as a 16-bit index_add in PyTorch). */
typedef void eo_k_embedding16_fn(int dt, int64_t n, int64_t dim, const void *table,
                                 const int32_t *idx, void *out, const eo_exec *ex);
typedef void eo_k_embedding_backward16_fn(int dt, int64_t n, int64_t dim, const int32_t *idx,
                                          const void *dout, void *dtable, const eo_exec *ex);

/* Optimizers for mixed precision (the f32 "master weights" recipe of
 * Micikevicius et al., "Mixed Precision Training", ICLR 2018): the update
 * of eo_k_sgd / eo_k_adamw on f32 weights w and f32 state, from a
 * gradient g stored as gdt (f32, bf16 or f16) and multiplied by gscale
 * first (1 / loss scale to unscale; 1 for none), in this order:
 * g' = gscale * g, then exactly the f32 kernel's arithmetic. When w16 is
 * not NULL it receives the updated weights rounded to dt16 (bf16 or
 * f16): the copy the 16-bit forward reads, written in the same pass. */
typedef void eo_k_sgd16_fn(int64_t n, float *w, int gdt, const void *g, float gscale, float *v,
                           float lr, float momentum, float dampening, float wd, int nesterov,
                           int dt16, void *w16, const eo_exec *ex);
typedef void eo_k_adamw16_fn(int64_t n, float *w, int gdt, const void *g, float gscale,
                             float *m, float *v, float lr, float beta1, float beta2, float eps,
                             float wd, int64_t step, int dt16, void *w16, const eo_exec *ex);

/* eo_k_conv2d_backward with x, dy and dx stored as dt (bf16 or f16), the
 * weight w and the gradients dw, db in f32 (w widened by the caller: it
 * is small; dw and db are summed in f32 as by the f32 kernel, +=). dx,
 * when not NULL, gets dx = round(dx + that image's f32 gradient) image by
 * image. Each image's x, dy and dx are widened into the worker's own f32
 * buffers, so the scratch (eo_k_conv2d_ws16: the f32 kernel's plus three
 * images' worth per worker) does not grow with the batch, and the results
 * equal, bit for bit, the f32 kernel run on the widened tensors with dx
 * rounded once. */
typedef void eo_k_conv2d_backward16_fn(const eo_conv_geom *g, int dt, const void *x,
                                       const float *w, const void *dy, void *dx, float *dw,
                                       float *db, void *ws, const eo_exec *ex);

/* The fused attention's forward for 16-bit q, k, v (dt) on tensor cores:
 * out and lse f32, as eo_k_attention's (no mask). The probabilities are
 * rounded to dt before P V (sums in f32), so out is the f32 kernel's to
 * about dt's precision. Returns 1 when it took the call, 0 (nothing done)
 * for the shapes eo_k_attention16_backward declines. */
typedef int eo_k_attention16_fn(int64_t B, int64_t H, int64_t Tq, int64_t Tk, int64_t D, int dt,
                                const void *q, const void *k, const void *v, int causal,
                                float scale, float *out, float *lse, const eo_exec *ex);
/* The fused attention's backward for 16-bit q, k, v (dt) on tensor cores
 * (no CPU implementation: the CPU keeps the f32 kernel over widened
 * copies). q, k, v and dout16 are 16-bit; out, lse, dout32 (dout in f32:
 * delta = dout32 . out is formed from it) and dq, dk, dv are f32, added to
 * (+=) as by eo_k_attention_backward. dout16 is dout32 rounded to dt: the
 * probabilities and dS are rounded to dt too before their products (the
 * products' sums are f32), so the result is the f32 kernel's to about dt's
 * precision, not bit for bit. No mask. Returns 1 when it took the call,
 * 0 when the shape is not one it runs (then nothing was done, and the
 * caller falls back to the f32 kernel): D % 8 != 0 or D > 64, causal with
 * Tq > Tk, or pointers not 16-byte aligned. */
typedef int eo_k_attention16_backward_fn(int64_t B, int64_t H, int64_t Tq, int64_t Tk,
                                         int64_t D, int dt, const void *q, const void *k,
                                         const void *v, int causal, float scale,
                                         const float *out, const float *lse,
                                         const void *dout16, const float *dout32, float *dq,
                                         float *dk, float *dv, const eo_exec *ex);

/* The CPU implementations of the 16-bit slots (ops/cpu/ *16.c; conv2d's
 * in ops/cpu/conv.c, beside the f32 one). */
eo_k_cast_fn eo_k_cast;
eo_k_fill16_fn eo_k_fill16;
eo_k_matmul16_fn eo_k_matmul16;
eo_k_matmul_ws_fn eo_k_matmul16_ws;
eo_k_unary16_fn eo_k_unary16;
eo_k_unary_backward16_fn eo_k_unary_backward16; /* y is recomputed from x in f32 */
eo_k_binary16_fn eo_k_binary16;
eo_k_binary_backward16_fn eo_k_binary_backward16;
eo_k_softmax16_fn eo_k_softmax16;
eo_k_softmax_backward16_fn eo_k_softmax_backward16;
eo_k_rows_ws16_fn eo_k_softmax_ws16;
eo_k_layernorm16_fn eo_k_layernorm16;
eo_k_layernorm_backward16_fn eo_k_layernorm_backward16; /* dw, db: as on one thread */
eo_k_rows_ws16_fn eo_k_layernorm_ws16;
eo_k_cross_entropy16_fn eo_k_cross_entropy16;
eo_k_cross_entropy_backward16_fn eo_k_cross_entropy_backward16;
eo_k_rows_ws16_fn eo_k_cross_entropy_ws16;
eo_k_embedding16_fn eo_k_embedding16;
eo_k_embedding_backward16_fn eo_k_embedding_backward16;
eo_k_sgd16_fn eo_k_sgd16;
eo_k_adamw16_fn eo_k_adamw16;
eo_k_conv2d_backward16_fn eo_k_conv2d_backward16;
eo_k_conv2d_ws_fn eo_k_conv2d_ws16;
/* ==== end of 16-bit storage ==== */

#endif
