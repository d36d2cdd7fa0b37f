/* ops/cpu/matmul.h — the inside of the CPU matmul, opened up for tests and
 * the benchmark.
 *
 * eo_k_matmul (ops/kernels.h) always takes the fastest path the compiler
 * was allowed to build. A test must also be able to run the portable path
 * on a machine that has the fast one, or that path would only ever be
 * exercised on hardware nobody tests on; eo_mm_run selects the path
 * explicitly for that. Nothing outside ops/, tests/ and tools/ should need
 * this header. */
#ifndef EO_OPS_MATMUL_H
#define EO_OPS_MATMUL_H

#include <stddef.h>
#include <stdint.h>
#include "ops/parallel.h"

/* The register tile: every micro-kernel call produces EO_MM_MR rows by
 * EO_MM_NR columns of C. 6x16 fills 12 of the 16 AVX2 registers with
 * accumulators and leaves room for two B vectors and one broadcast A
 * value; both paths use it so they share the packing code. */
#define EO_MM_MR 6
#define EO_MM_NR 16

typedef enum eo_mm_path {
    EO_MM_BEST,     /* what eo_k_matmul uses */
    EO_MM_PORTABLE, /* plain C packing and micro-kernel */
    EO_MM_SIMD      /* AVX2 + FMA; same as PORTABLE when not compiled in */
} eo_mm_path;

/* 1 when the AVX2 + FMA path was compiled in (-mavx2 -mfma or a -march
 * that implies them). */
int eo_mm_simd_compiled(void);

/* eo_k_matmul with the path chosen. Same arguments and workspace. */
void eo_mm_run(eo_mm_path path, int ta, int tb, int64_t batch, int64_t M, int64_t N, int64_t K,
               const float *A, int64_t lda, int64_t sa, const float *B, int64_t ldb, int64_t sb,
               float beta, float *C, int64_t ldc, int64_t sc, void *ws, const eo_par *par);

/* The 16-bit matmul (eo_k_matmul16, ops/kernels.h) with the path chosen:
 * A and B of element type `in` (EO_K_BF16 or EO_K_F16; EO_K_F32 runs the
 * f32 kernel), C of type `out` (EO_K_F32 or `in`); leading dimensions and
 * batch strides in elements. The operands are widened exactly to f32 as
 * the packing copies them into its blocks, so the workspace
 * (eo_k_matmul16_ws) is the f32 kernel's packing buffers plus, per
 * thread, an f32 tile of C of at most 72 x 128 values (a 16-bit C is
 * summed there, then rounded once) — bounded whatever the shapes. The
 * result is bit-identical to widening A, B (and, with beta = 1, C) to
 * f32, running the f32 kernel, and rounding C once. */
void eo_mm_run16(eo_mm_path path, int ta, int tb, int64_t batch, int64_t M, int64_t N,
                 int64_t K, int in, const void *A, int64_t lda, int64_t sa, const void *B,
                 int64_t ldb, int64_t sb, float beta, int out, void *C, int64_t ldc, int64_t sc,
                 void *ws, const eo_par *par);

/* A micro-kernel: acc[i][j] = sum over k < kc of a[k*MR + i] * b[k*NR + j]
 * (a and b are packed slivers, b 32-byte aligned), then
 * C[i*ldc + j] = acc (accumulate == 0: C is not read) or C + acc. */
typedef void eo_mm_micro_fn(int64_t kc, const float *a, int64_t rsa, int64_t csa,
                            const float *b, float *c, int64_t ldc, int accumulate);
eo_mm_micro_fn eo_mm_micro_portable;

#endif
