/* core/cpu_kernels.c — a CPU kernel table holding only the kernels a
 * program names (eo_ctx_init_kernels, core/everyo.h).
 *
 * eo_ctx_init gives a context the full CPU table (core/backend_cpu.c),
 * and since that table points at every kernel, a program that calls
 * eo_ctx_init links every kernel, whatever it runs: on a Cortex-M4 the
 * forward of two Linear layers carried the convolution, attention and
 * every backward kernel with it. TensorFlow Lite Micro answers this with
 * an op resolver: the program registers the kernels it uses, and the
 * linker drops the rest. Here the program lists families of kernels
 * (one function per family, below); eo_ctx_init_kernels builds the table
 * in the persistent arena from that list, and each family function is
 * the only reference to its kernels, so with per-function sections and
 * --gc-sections a family nobody names is not linked.
 *
 * A slot a family does not fill stays NULL, and every op checks the slot
 * it is about to call (EO_NEED_KERNEL, core/internal.h): an op outside the
 * chosen families returns EO_ERR_UNSUPPORTED naming the op and the family
 * to add, never calls through NULL. */
#include <string.h>
#include "core/internal.h"

/* The memory operations of host memory. core/backend_cpu.c has the same
 * three for its full table; they are repeated here (three lines each)
 * rather than shared so that the full table's file stays the only one
 * that references every kernel. */
static eo_status mem_copy(eo_ctx *ctx, void *dst, const void *src, size_t bytes)
{
    (void)ctx;
    if (bytes)
        memcpy(dst, src, bytes);
    return EO_OK;
}

static eo_status mem_zero(eo_ctx *ctx, void *dst, size_t bytes)
{
    eo_k_zero(dst, bytes, &ctx->exec);
    return EO_OK;
}

static eo_status mem_sync(eo_ctx *ctx)
{
    (void)ctx;
    return EO_OK;
}

eo_status eo_ctx_init_kernels(eo_ctx *ctx, void *persist_buf, size_t persist_bytes,
                              void *step_buf, size_t step_bytes,
                              eo_cpu_kernels_fn *const *families, size_t count)
{
    EO_CHECK(eo_ctx_setup(ctx, persist_buf, persist_bytes, step_buf, step_bytes));
    if (count && !families)
        return eo_fail(ctx, EO_ERR_ARG, "ctx_init_kernels: families is NULL with count %zu", count);
    for (size_t i = 0; i < count; i++)
        if (!families[i])
            return eo_fail(ctx, EO_ERR_ARG, "ctx_init_kernels: families[%zu] is NULL", i);
    eo_backend *k;
    if (eo_host_alloc(ctx, EO_PERSIST, sizeof *k, (void **)&k) != EO_OK)
        return eo_fail(ctx, EO_ERR_OOM,
                       "ctx_init_kernels: the CPU kernel table needs %zu bytes of the persistent "
                       "arena, which holds %zu",
                       sizeof *k, persist_bytes);
    const eo_backend none = {0};
    *k = none;
    /* What every tensor needs whatever the ops: moving and zeroing memory,
     * contiguous copies (views, eo_read of a view), gradient accumulation
     * and fills. */
    k->name = "cpu (kernels listed to eo_ctx_init_kernels)";
    k->device = EO_CPU;
    k->upload = mem_copy;
    k->download = mem_copy;
    k->zero = mem_zero;
    k->sync = mem_sync;
    k->copy32 = eo_k_copy32;
    k->accumulate = eo_k_accumulate;
    k->fill = eo_k_fill;
    for (size_t i = 0; i < count; i++)
        families[i](k);
    ctx->backend[EO_CPU] = k;
    return EO_OK;
}

void eo_cpu_kernels_elementwise(eo_cpu_kernels *k)
{
    k->binary = eo_k_binary;
    k->unary = eo_k_unary;
}

void eo_cpu_kernels_elementwise_backward(eo_cpu_kernels *k)
{
    k->binary_backward = eo_k_binary_backward;
    k->unary_backward = eo_k_unary_backward;
    k->unary_backward_set = eo_k_unary_backward_set;
}

void eo_cpu_kernels_matmul(eo_cpu_kernels *k)
{
    k->matmul = eo_k_matmul; /* its backward is two more matmuls */
    k->matmul_ws = eo_k_matmul_ws;
}

void eo_cpu_kernels_reduce(eo_cpu_kernels *k)
{
    k->reduce = eo_k_reduce;
    k->logsumexp = eo_k_logsumexp;
    k->sumsq = eo_k_sumsq;
}

void eo_cpu_kernels_reduce_backward(eo_cpu_kernels *k)
{
    k->reduce_backward = eo_k_reduce_backward;
    k->logsumexp_backward = eo_k_logsumexp_backward;
}

void eo_cpu_kernels_softmax(eo_cpu_kernels *k)
{
    k->softmax = eo_k_softmax;
    k->softmax_ws = eo_k_softmax_ws;
}

void eo_cpu_kernels_softmax_backward(eo_cpu_kernels *k)
{
    k->softmax_backward = eo_k_softmax_backward;
    k->softmax_backward_set = eo_k_softmax_backward_set;
}

void eo_cpu_kernels_cross_entropy(eo_cpu_kernels *k)
{
    k->cross_entropy = eo_k_cross_entropy;
}

void eo_cpu_kernels_cross_entropy_backward(eo_cpu_kernels *k)
{
    k->cross_entropy_backward = eo_k_cross_entropy_backward;
}

void eo_cpu_kernels_layernorm(eo_cpu_kernels *k)
{
    k->layernorm = eo_k_layernorm;
}

void eo_cpu_kernels_layernorm_backward(eo_cpu_kernels *k)
{
    k->layernorm_backward = eo_k_layernorm_backward;
    k->layernorm_backward_ws = eo_k_layernorm_backward_ws;
}

void eo_cpu_kernels_embedding(eo_cpu_kernels *k)
{
    k->embedding = eo_k_embedding;
}

void eo_cpu_kernels_embedding_backward(eo_cpu_kernels *k)
{
    k->embedding_backward = eo_k_embedding_backward;
}

void eo_cpu_kernels_dropout(eo_cpu_kernels *k)
{
    k->dropout = eo_k_dropout;
    k->dropout_backward = eo_k_dropout_backward; /* an inference forward is a copy */
}

/* Forward and backward together: the fused convolution and the fused
 * ReLU + pool are chosen only where their backward is there too
 * (core/op_conv.c), so a forward-only family would run the composed
 * im2col + matmul path instead. */
void eo_cpu_kernels_conv(eo_cpu_kernels *k)
{
    k->im2col = eo_k_im2col;
    k->col2im = eo_k_col2im;
    k->maxpool2d = eo_k_maxpool2d;
    k->maxpool2d_backward = eo_k_maxpool2d_backward;
    k->maxpool2d_backward_set = eo_k_maxpool2d_backward_set;
    k->relu_maxpool2d = eo_k_relu_maxpool2d;
    k->relu_maxpool2d_backward = eo_k_relu_maxpool2d_backward;
    k->relu_maxpool2d_backward_set = eo_k_relu_maxpool2d_backward_set;
    k->conv2d = eo_k_conv2d;
    k->conv2d_backward = eo_k_conv2d_backward;
    k->conv2d_ws = eo_k_conv2d_ws;
}

void eo_cpu_kernels_attention(eo_cpu_kernels *k)
{
    k->attention = eo_k_attention;
    k->attention_ws = eo_k_attention_ws;
}

void eo_cpu_kernels_attention_backward(eo_cpu_kernels *k)
{
    k->attention_backward = eo_k_attention_backward;
}

void eo_cpu_kernels_optim(eo_cpu_kernels *k)
{
    k->sgd = eo_k_sgd;
    k->adamw = eo_k_adamw;
    k->unscale_check = eo_k_unscale_check;
}

/* bf16 / f16: cast is what any 16-bit tensor needs (the generic f32
 * fallback goes through it); the native slots only make the families
 * above faster and leaner on 16-bit tensors. */
void eo_cpu_kernels_half(eo_cpu_kernels *k)
{
    k->cast = eo_k_cast;
    k->fill16 = eo_k_fill16;
    k->matmul16 = eo_k_matmul16;
    k->matmul16_ws = eo_k_matmul16_ws;
    k->unary16 = eo_k_unary16;
    k->unary_backward16 = eo_k_unary_backward16;
    k->binary16 = eo_k_binary16;
    k->binary_backward16 = eo_k_binary_backward16;
    k->softmax16 = eo_k_softmax16;
    k->softmax_backward16 = eo_k_softmax_backward16;
    k->softmax_ws16 = eo_k_softmax_ws16;
    k->layernorm16 = eo_k_layernorm16;
    k->layernorm_backward16 = eo_k_layernorm_backward16;
    k->layernorm_ws16 = eo_k_layernorm_ws16;
    k->cross_entropy16 = eo_k_cross_entropy16;
    k->cross_entropy_backward16 = eo_k_cross_entropy_backward16;
    k->cross_entropy_ws16 = eo_k_cross_entropy_ws16;
    k->embedding16 = eo_k_embedding16;
    k->embedding_backward16 = eo_k_embedding_backward16;
    k->sgd16 = eo_k_sgd16;
    k->adamw16 = eo_k_adamw16;
    k->conv2d_backward16 = eo_k_conv2d_backward16;
    k->conv2d_ws16 = eo_k_conv2d_ws16;
}
