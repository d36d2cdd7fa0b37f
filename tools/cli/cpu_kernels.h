/* tools/cli/cpu_kernels.h — calling the CPU kernels by name runs the
 * variant the context would choose (EO_CPU applied).
 *
 * The kernel suites and the benchmarks call eo_k_matmul & co. directly,
 * without a context. Each name is the baseline variant's symbol (the
 * others are eo_k_matmul_avx2, ... — the Makefile's "CPU kernel
 * variants"), so without this header a test would only ever exercise the
 * baseline kernels and a benchmark would time them. Included after
 * ops/kernels.h (it includes it), it turns each name of the CPU table
 * into that slot of eo_tool_cpu_kernels()'s table; run with EO_CPU=base,
 * avx2 or avx512 the same test or benchmark covers each variant.
 * eo_mm_run & co. (ops/cpu/matmul.h) and the row conversions
 * eo_half_to_f32 / eo_f32_to_half (ops/cpu/half.h) are redirected
 * likewise. */
#ifndef EO_TOOLS_CPU_KERNELS_H
#define EO_TOOLS_CPU_KERNELS_H

#include "core/backend.h"
#include "ops/cpu/half.h"
#include "ops/cpu/matmul.h"
#include "tools/cli/cpu.h"

#define EO_TOOL_K (*eo_tool_cpu_kernels())
#define eo_k_copy32 (EO_TOOL_K.copy32)
#define eo_k_accumulate (EO_TOOL_K.accumulate)
#define eo_k_fill (EO_TOOL_K.fill)
#define eo_k_binary (EO_TOOL_K.binary)
#define eo_k_binary_backward (EO_TOOL_K.binary_backward)
#define eo_k_unary (EO_TOOL_K.unary)
#define eo_k_unary_backward (EO_TOOL_K.unary_backward)
#define eo_k_unary_backward_set (EO_TOOL_K.unary_backward_set)
#define eo_k_matmul (EO_TOOL_K.matmul)
#define eo_k_matmul_ws (EO_TOOL_K.matmul_ws)
#define eo_k_reduce (EO_TOOL_K.reduce)
#define eo_k_reduce_backward (EO_TOOL_K.reduce_backward)
#define eo_k_sumsq (EO_TOOL_K.sumsq)
#define eo_k_logsumexp (EO_TOOL_K.logsumexp)
#define eo_k_logsumexp_backward (EO_TOOL_K.logsumexp_backward)
#define eo_k_softmax (EO_TOOL_K.softmax)
#define eo_k_softmax_ws (EO_TOOL_K.softmax_ws)
#define eo_k_softmax_backward (EO_TOOL_K.softmax_backward)
#define eo_k_softmax_backward_set (EO_TOOL_K.softmax_backward_set)
#define eo_k_cross_entropy (EO_TOOL_K.cross_entropy)
#define eo_k_cross_entropy_backward (EO_TOOL_K.cross_entropy_backward)
#define eo_k_layernorm (EO_TOOL_K.layernorm)
#define eo_k_layernorm_backward (EO_TOOL_K.layernorm_backward)
#define eo_k_layernorm_backward_ws (EO_TOOL_K.layernorm_backward_ws)
#define eo_k_embedding (EO_TOOL_K.embedding)
#define eo_k_embedding_backward (EO_TOOL_K.embedding_backward)
#define eo_k_dropout (EO_TOOL_K.dropout)
#define eo_k_dropout_backward (EO_TOOL_K.dropout_backward)
#define eo_k_im2col (EO_TOOL_K.im2col)
#define eo_k_col2im (EO_TOOL_K.col2im)
#define eo_k_maxpool2d (EO_TOOL_K.maxpool2d)
#define eo_k_maxpool2d_backward (EO_TOOL_K.maxpool2d_backward)
#define eo_k_maxpool2d_backward_set (EO_TOOL_K.maxpool2d_backward_set)
#define eo_k_relu_maxpool2d (EO_TOOL_K.relu_maxpool2d)
#define eo_k_relu_maxpool2d_backward (EO_TOOL_K.relu_maxpool2d_backward)
#define eo_k_relu_maxpool2d_backward_set (EO_TOOL_K.relu_maxpool2d_backward_set)
#define eo_k_conv2d (EO_TOOL_K.conv2d)
#define eo_k_conv2d_backward (EO_TOOL_K.conv2d_backward)
#define eo_k_conv2d_ws (EO_TOOL_K.conv2d_ws)
#define eo_k_attention (EO_TOOL_K.attention)
#define eo_k_attention_backward (EO_TOOL_K.attention_backward)
#define eo_k_attention_ws (EO_TOOL_K.attention_ws)
#define eo_k_sgd (EO_TOOL_K.sgd)
#define eo_k_adamw (EO_TOOL_K.adamw)
#define eo_k_unscale_check (EO_TOOL_K.unscale_check)
#define eo_k_cast (EO_TOOL_K.cast)
#define eo_k_fill16 (EO_TOOL_K.fill16)
#define eo_k_matmul16 (EO_TOOL_K.matmul16)
#define eo_k_matmul16_ws (EO_TOOL_K.matmul16_ws)
#define eo_k_unary16 (EO_TOOL_K.unary16)
#define eo_k_unary_backward16 (EO_TOOL_K.unary_backward16)
#define eo_k_binary16 (EO_TOOL_K.binary16)
#define eo_k_binary_backward16 (EO_TOOL_K.binary_backward16)
#define eo_k_softmax16 (EO_TOOL_K.softmax16)
#define eo_k_softmax_backward16 (EO_TOOL_K.softmax_backward16)
#define eo_k_softmax_ws16 (EO_TOOL_K.softmax_ws16)
#define eo_k_layernorm16 (EO_TOOL_K.layernorm16)
#define eo_k_layernorm_backward16 (EO_TOOL_K.layernorm_backward16)
#define eo_k_layernorm_ws16 (EO_TOOL_K.layernorm_ws16)
#define eo_k_cross_entropy16 (EO_TOOL_K.cross_entropy16)
#define eo_k_cross_entropy_backward16 (EO_TOOL_K.cross_entropy_backward16)
#define eo_k_cross_entropy_ws16 (EO_TOOL_K.cross_entropy_ws16)
#define eo_k_embedding16 (EO_TOOL_K.embedding16)
#define eo_k_embedding_backward16 (EO_TOOL_K.embedding_backward16)
#define eo_k_sgd16 (EO_TOOL_K.sgd16)
#define eo_k_adamw16 (EO_TOOL_K.adamw16)
#define eo_k_conv2d_backward16 (EO_TOOL_K.conv2d_backward16)
#define eo_k_conv2d_ws16 (EO_TOOL_K.conv2d_ws16)

/* The matmul's explicit paths, of the same variant. */
void eo_tool_mm_run(eo_mm_path path, int ta, int tb, int64_t batch, int64_t M, int64_t N,
                    int64_t K, const float *A, int64_t lda, int64_t sa, const float *B,
                    int64_t ldb, int64_t sb, float beta, float *C, int64_t ldc, int64_t sc,
                    void *ws, const eo_par *par);
void eo_tool_mm_run16(eo_mm_path path, int ta, int tb, int64_t batch, int64_t M, int64_t N,
                      int64_t K, int in, const void *A, int64_t lda, int64_t sa, const void *B,
                      int64_t ldb, int64_t sb, float beta, int out, void *C, int64_t ldc,
                      int64_t sc, void *ws, const eo_par *par);
int eo_tool_mm_simd_compiled(void);
void eo_tool_half_to_f32(int dt, int64_t n, const uint16_t *src, float *dst);
void eo_tool_f32_to_half(int dt, int64_t n, const float *src, uint16_t *dst);
#define eo_mm_run eo_tool_mm_run
#define eo_half_to_f32 eo_tool_half_to_f32
#define eo_f32_to_half eo_tool_f32_to_half
#define eo_mm_run16 eo_tool_mm_run16
#define eo_mm_simd_compiled eo_tool_mm_simd_compiled

#endif
