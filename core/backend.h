/* core/backend.h — one table of kernels per device.
 *
 * The core never calls a kernel by name: it asks the backend of the
 * tensors' device for the slot it needs. A NULL slot means "this backend
 * cannot do that" and the op returns EO_ERR_UNSUPPORTED with the op and
 * backend named — never a crash. The CPU table (core/backend_cpu.c) points
 * at ops/; a CUDA table points at host functions that launch PTX. nn
 * layers and optimizers only ever call ops, so they run on any backend
 * unchanged. */
#ifndef EO_BACKEND_H
#define EO_BACKEND_H

#include "core/everyo.h"
#include "ops/kernels.h"

/* Sizes a backend's kernels cannot take, which the core checks when the
 * op is called (a kernel launch is asynchronous: a refusal there would
 * only surface at the next sync, with the op long returned). 0: no
 * limit. */
typedef struct eo_backend_limits {
    int64_t attention_max_d;     /* fused attention: head dim D */
    int64_t attention_max_bh;    /* fused attention: B * H */
    int64_t attention_max_tq;    /* fused attention: query rows Tq */
    int64_t cross_entropy16_max_rows; /* bf16 / f16 cross-entropy: rows N */
} eo_backend_limits;

typedef struct eo_backend {
    const char *name;
    eo_device device;
    eo_backend_limits limits;
    /* Memory movement for this device. Host pointers are CPU memory. */
    eo_status (*upload)(eo_ctx *ctx, void *dst, const void *host_src, size_t bytes);
    eo_status (*download)(eo_ctx *ctx, void *host_dst, const void *src, size_t bytes);
    eo_status (*zero)(eo_ctx *ctx, void *dst, size_t bytes);
    /* Wait for queued work; surfaces asynchronous errors as a status. */
    eo_status (*sync)(eo_ctx *ctx);

    eo_k_copy32_fn *copy32;
    eo_k_accumulate_fn *accumulate;
    eo_k_fill_fn *fill;
    eo_k_binary_fn *binary;
    eo_k_binary_backward_fn *binary_backward;
    eo_k_unary_fn *unary;
    eo_k_unary_backward_fn *unary_backward;
    eo_k_unary_backward_fn *unary_backward_set;     /* NULL: zero fill + unary_backward */
    eo_k_matmul_fn *matmul;
    eo_k_matmul_ws_fn *matmul_ws;
    eo_k_reduce_fn *reduce;
    eo_k_reduce_backward_fn *reduce_backward;
    eo_k_sumsq_fn *sumsq;
    eo_k_logsumexp_fn *logsumexp;
    eo_k_logsumexp_backward_fn *logsumexp_backward;
    eo_k_softmax_fn *softmax;
    eo_k_softmax_ws_fn *softmax_ws; /* NULL: no scratch */
    eo_k_softmax_backward_fn *softmax_backward;
    eo_k_softmax_backward_fn *softmax_backward_set; /* NULL: zero fill + softmax_backward */
    eo_k_cross_entropy_fn *cross_entropy;
    eo_k_cross_entropy_backward_fn *cross_entropy_backward;
    eo_k_layernorm_fn *layernorm;
    eo_k_layernorm_backward_fn *layernorm_backward;
    eo_k_layernorm_backward_ws_fn *layernorm_backward_ws;
    eo_k_embedding_fn *embedding;
    eo_k_embedding_backward_fn *embedding_backward;
    eo_k_check_ids_fn *check_ids; /* NULL where the core checks ids on the host */
    eo_k_dropout_fn *dropout;
    eo_k_dropout_backward_fn *dropout_backward;
    eo_k_im2col_fn *im2col;
    eo_k_col2im_fn *col2im;
    eo_k_maxpool2d_fn *maxpool2d;
    eo_k_maxpool2d_backward_fn *maxpool2d_backward;
    eo_k_maxpool2d_backward_fn *maxpool2d_backward_set; /* NULL: zero fill + maxpool2d_backward */
    /* NULL (all three): eo_relu_maxpool2d runs relu, then maxpool2d. */
    eo_k_maxpool2d_fn *relu_maxpool2d;
    eo_k_relu_maxpool2d_backward_fn *relu_maxpool2d_backward;
    eo_k_relu_maxpool2d_backward_fn *relu_maxpool2d_backward_set;
    eo_k_conv2d_fn *conv2d;                   /* NULL: composed from im2col */
    eo_k_conv2d_backward_fn *conv2d_backward;
    eo_k_conv2d_ws_fn *conv2d_ws;
    eo_k_attention_fn *attention;
    eo_k_attention_backward_fn *attention_backward;
    eo_k_attention_ws_fn *attention_ws;
    eo_k_sgd_fn *sgd;
    eo_k_adamw_fn *adamw;
    eo_k_unscale_check_fn *unscale_check; /* loss scaling: core/grad_scaler.c */

    /* ---- 16-bit storage (ops/kernels.h, "16-bit storage") -----------------
     * cast is what every bf16/f16 tensor needs: eo_cast, the contiguous
     * copy of 2-byte elements and the generic fallback (core/op_cast.c)
     * that runs any op over f32 copies. Every other slot may be NULL: the
     * op then takes that fallback, so it works on this backend either way
     * and a native kernel only changes the speed and the memory used
     * (tests hold both paths to the same results). */
    eo_k_cast_fn *cast;
    eo_k_fill16_fn *fill16;
    eo_k_matmul16_fn *matmul16;
    eo_k_matmul_ws_fn *matmul16_ws; /* NULL: no scratch */
    eo_k_binary16_fn *binary16;
    eo_k_binary_backward16_fn *binary_backward16;
    eo_k_unary16_fn *unary16;
    eo_k_unary_backward16_fn *unary_backward16;
    eo_k_softmax16_fn *softmax16;
    eo_k_softmax_backward16_fn *softmax_backward16;
    eo_k_rows_ws16_fn *softmax_ws16;       /* NULL: no scratch */
    eo_k_layernorm16_fn *layernorm16;
    eo_k_layernorm_backward16_fn *layernorm_backward16;
    eo_k_rows_ws16_fn *layernorm_ws16;     /* NULL: no scratch */
    eo_k_cross_entropy16_fn *cross_entropy16;
    eo_k_cross_entropy_backward16_fn *cross_entropy_backward16;
    eo_k_rows_ws16_fn *cross_entropy_ws16; /* NULL: no scratch */
    eo_k_embedding16_fn *embedding16;
    eo_k_embedding_backward16_fn *embedding_backward16;
    eo_k_sgd16_fn *sgd16;
    eo_k_adamw16_fn *adamw16;
    eo_k_conv2d_backward16_fn *conv2d_backward16; /* with conv2d_ws16 */
    eo_k_conv2d_ws_fn *conv2d_ws16;
    eo_k_attention16_fn *attention16;                   /* NULL: the f32 kernel */
    eo_k_attention16_backward_fn *attention16_backward; /* NULL: the f32 kernel */
} eo_backend;

extern const eo_backend eo_backend_cpu;
extern const eo_backend eo_backend_cuda;

#endif
