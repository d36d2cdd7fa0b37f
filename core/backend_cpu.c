/* core/backend_cpu.c — the CPU backend: host memory and the kernels of ops/.
 *
 * "Device" memory is host memory here, so moving data is memcpy and there
 * is never anything to wait for. */
#include <string.h>
#include "core/backend.h"

static eo_status cpu_copy(eo_ctx *ctx, void *dst, const void *src, size_t bytes)
{
    (void)ctx;
    if (bytes)
        memcpy(dst, src, bytes);
    return EO_OK;
}

static eo_status cpu_zero(eo_ctx *ctx, void *dst, size_t bytes)
{
    eo_k_zero(dst, bytes, &ctx->exec);
    return EO_OK;
}

static eo_status cpu_sync(eo_ctx *ctx)
{
    (void)ctx;
    return EO_OK;
}

const eo_backend eo_backend_cpu = {
    .name = "cpu",
    .device = EO_CPU,
    .upload = cpu_copy,
    .download = cpu_copy,
    .zero = cpu_zero,
    .sync = cpu_sync,
    .copy32 = eo_k_copy32,
    .accumulate = eo_k_accumulate,
    .fill = eo_k_fill,
    .binary = eo_k_binary,
    .binary_backward = eo_k_binary_backward,
    .unary = eo_k_unary,
    .unary_backward = eo_k_unary_backward,
    .unary_backward_set = eo_k_unary_backward_set,
    .matmul = eo_k_matmul,
    .matmul_ws = eo_k_matmul_ws,
    .reduce = eo_k_reduce,
    .reduce_backward = eo_k_reduce_backward,
    .sumsq = eo_k_sumsq,
    .logsumexp = eo_k_logsumexp,
    .logsumexp_backward = eo_k_logsumexp_backward,
    .softmax = eo_k_softmax,
    .softmax_ws = eo_k_softmax_ws,
    .softmax_backward = eo_k_softmax_backward,
    .softmax_backward_set = eo_k_softmax_backward_set,
    .cross_entropy = eo_k_cross_entropy,
    .cross_entropy_backward = eo_k_cross_entropy_backward,
    .layernorm = eo_k_layernorm,
    .layernorm_backward = eo_k_layernorm_backward,
    .layernorm_backward_ws = eo_k_layernorm_backward_ws,
    .embedding = eo_k_embedding,
    .embedding_backward = eo_k_embedding_backward,
    .dropout = eo_k_dropout,
    .dropout_backward = eo_k_dropout_backward,
    .im2col = eo_k_im2col,
    .col2im = eo_k_col2im,
    .maxpool2d = eo_k_maxpool2d,
    .maxpool2d_backward = eo_k_maxpool2d_backward,
    .maxpool2d_backward_set = eo_k_maxpool2d_backward_set,
    .relu_maxpool2d = eo_k_relu_maxpool2d,
    .relu_maxpool2d_backward = eo_k_relu_maxpool2d_backward,
    .relu_maxpool2d_backward_set = eo_k_relu_maxpool2d_backward_set,
    .conv2d = eo_k_conv2d,
    .conv2d_backward = eo_k_conv2d_backward,
    .conv2d_ws = eo_k_conv2d_ws,
    .attention = eo_k_attention,
    .attention_backward = eo_k_attention_backward,
    .attention_ws = eo_k_attention_ws,
    .sgd = eo_k_sgd,
    .adamw = eo_k_adamw,
    .unscale_check = eo_k_unscale_check,
    .cast = eo_k_cast,
    .fill16 = eo_k_fill16,
    .matmul16 = eo_k_matmul16,
    .matmul16_ws = eo_k_matmul16_ws,
    .unary16 = eo_k_unary16,
    .unary_backward16 = eo_k_unary_backward16,
    .binary16 = eo_k_binary16,
    .binary_backward16 = eo_k_binary_backward16,
    .softmax16 = eo_k_softmax16,
    .softmax_backward16 = eo_k_softmax_backward16,
    .softmax_ws16 = eo_k_softmax_ws16,
    .layernorm16 = eo_k_layernorm16,
    .layernorm_backward16 = eo_k_layernorm_backward16,
    .layernorm_ws16 = eo_k_layernorm_ws16,
    .cross_entropy16 = eo_k_cross_entropy16,
    .cross_entropy_backward16 = eo_k_cross_entropy_backward16,
    .cross_entropy_ws16 = eo_k_cross_entropy_ws16,
    .embedding16 = eo_k_embedding16,
    .embedding_backward16 = eo_k_embedding_backward16,
    .sgd16 = eo_k_sgd16,
    .adamw16 = eo_k_adamw16,
    .conv2d_backward16 = eo_k_conv2d_backward16,
    .conv2d_ws16 = eo_k_conv2d_ws16,
};
