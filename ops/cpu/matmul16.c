/* ops/cpu/matmul16.c — eo_k_matmul16 on the CPU: bf16 / f16 operands,
 * products accumulated in f32, C in f32 or in the operands' dtype.
 *
 * How: one batch item at a time, the 16-bit operands are widened into
 * dense f32 matrices in the workspace (the SIMD row converters of half.c:
 * F16C for f16, integer lanes for bf16), and the f32 kernel (ops/cpu/
 * matmul.c) multiplies them with its own blocking, packing and threads.
 * Widening costs M·K + K·N conversions against 2·M·N·K flops, and the f32
 * kernel is untouched. A 16-bit C is formed in an f32 buffer (the old C
 * widened into it first when beta = 1) and rounded once at the end. So
 * the result is exactly the f32 matmul of the widened operands, rounded
 * once: what the core's generic fallback computes, without keeping f32
 * copies of the operands alive for the backward. op(A) and C are widened
 * a panel of rows at a time (panel_rows), so the workspace is about three
 * times B's f32 size whatever M is. (Converting inside the packing loops,
 * which would save the workspace, is planned.) */
#include "ops/kernels.h"
#include "ops/cpu/half.h"

static size_t align64(size_t b) { return (b + 63) / 64 * 64; }

/* Rows of C (and of op(A)) widened at a time: a panel about the size of B
 * (mb (K + N) ~ K N), at least 64 rows for the f32 kernel's blocking, so
 * the workspace no longer grows with M: an activation-sized operand
 * (M = batch x tokens) is widened a slice at a time, not whole. */
static int64_t panel_rows(int64_t M, int64_t N, int64_t K)
{
    int64_t mb = K + N > 0 ? K * N / (K + N) : M;
    mb = mb < 64 ? 64 : (mb + 15) / 16 * 16;
    return mb < M ? mb : M;
}

size_t eo_k_matmul16_ws(int64_t M, int64_t N, int64_t K, int nthreads)
{
    /* a panel of op(A) and of C and all of B in f32, then the f32 kernel's scratch */
    const int64_t mb = panel_rows(M, N, K);
    return align64((size_t)(mb * K) * 4) + align64((size_t)(K * N) * 4) +
           align64((size_t)(mb * N) * 4) + eo_k_matmul_ws(mb, N, K, nthreads) + 64;
}

/* dst[r*cols + c] = src[r*ld + c] widened, for a rows x cols matrix. */
static void widen(int dt, int64_t rows, int64_t cols, const uint16_t *src, int64_t ld, float *dst)
{
    for (int64_t r = 0; r < rows; r++)
        eo_half_to_f32(dt, cols, src + r * ld, dst + r * cols);
}

void eo_k_matmul16(int ta, int tb, int64_t batch, int64_t M, int64_t N, int64_t K, int in,
                   const void *A, int64_t lda, int64_t sa, const void *B, int64_t ldb, int64_t sb,
                   float beta, int out, void *C, int64_t ldc, int64_t sc, void *ws,
                   const eo_exec *ex)
{
    const int64_t mb = panel_rows(M, N, K);
    unsigned char *w = (unsigned char *)(((uintptr_t)ws + 63) / 64 * 64);
    float *a = (float *)(void *)w;
    float *b = (float *)(void *)(w + align64((size_t)(mb * K) * 4));
    float *c = (float *)(void *)((unsigned char *)b + align64((size_t)(K * N) * 4));
    void *kws = (unsigned char *)c + align64((size_t)(mb * N) * 4);
    /* stored shape of B: K x N or N x K */
    const int64_t br = tb ? N : K, bc = tb ? K : N;
    for (int64_t i = 0; i < batch; i++) {
        widen(in, br, bc, (const uint16_t *)B + i * sb, ldb, b);
        const uint16_t *Ai = (const uint16_t *)A + i * sa;
        for (int64_t m0 = 0; m0 < M; m0 += mb) {
            const int64_t m = M - m0 < mb ? M - m0 : mb;
            /* rows m0 .. m0+m of op(A): stored rows (ta = 0, m x K) or
             * stored columns (ta = 1, K x m) */
            if (ta)
                widen(in, K, m, Ai + m0, lda, a);
            else
                widen(in, m, K, Ai + m0 * lda, lda, a);
            const int64_t la = ta ? m : K;
            if (out == EO_K_F32) {
                eo_k_matmul(ta, tb, 1, m, N, K, a, la, 0, b, bc, 0, beta,
                            (float *)C + i * sc + m0 * ldc, ldc, 0, kws, ex);
                continue;
            }
            uint16_t *ci = (uint16_t *)C + i * sc + m0 * ldc;
            if (beta != 0.0f)
                widen(out, m, N, ci, ldc, c);
            eo_k_matmul(ta, tb, 1, m, N, K, a, la, 0, b, bc, 0, beta, c, N, 0, kws, ex);
            for (int64_t r = 0; r < m; r++)
                eo_f32_to_half(out, N, c + r * N, ci + r * ldc);
        }
    }
}
