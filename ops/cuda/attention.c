/* ops/cuda/attention.c — CUDA launchers for fused scaled dot-product attention, forward and backward:
 * the host side of ptx/attention.ptx (FlashAttention-2 style), behind the kernel types of
 * ops/kernels.h.
 *
 * Forward: for D <= 64 (eo_attn_fwd32 / eo_attn_fwd64, register-blocked) one
 * 64-thread block per (tile of 64 queries, head); for 64 < D <= 128
 * (eo_attn_fwd) one 128-thread block per (tile of 32 queries, head).
 * Backward: two kernels in sequence on the stream, for a slice of heads at
 * a time: a dq kernel writes delta_i = dout_i . out_i into the backend's
 * scratch work buffer and accumulates dq; a dkv kernel reads delta and
 * accumulates dk and dv (and dmask). Without a mask and for D <= 64 they
 * are the register-blocked eo_attn_bwd_dq32/64 and eo_attn_bwd_dkv32/64,
 * one 32-thread block per (tile of 32 queries or keys, head); otherwise
 * eo_attn_bwd_dq and eo_attn_bwd_dkv, one 64-thread block per (tile of 16
 * queries or keys, head), which also give dmask. The
 * scratch buffer holds WORK_BYTES / 4 floats, so heads go in slices of at
 * most that many query rows.
 * Each launcher checks that every size fits the PTX's 32-bit indexing
 * (else the failure is recorded in the device state and the launch is
 * skipped) and passes its arguments in the order of ops/cuda/kernels.def. */
#include "ops/cuda/launch.h"

enum { FWD_ROWS = 32, BLOCKED_ROWS = 64, BLOCKED_THREADS = 64, BWD_ROWS = 16, BWD_BLOCKED = 32 };

static int attn_sizes(eo_cuda *cu, const char *who, int64_t B, int64_t H, int64_t Tq, int64_t Tk,
                      int64_t D, int causal, const int64_t *ms, uint32_t v[5], int32_t m[4])
{
    int64_t in[5] = {B, H, Tq, Tk, D};
    for (int i = 0; i < 5; i++) {
        if (!eo_cuda_fits(cu, who, in[i]))
            return 0;
        v[i] = (uint32_t)in[i];
    }
    /* The core refuses these at the call (eo_backend.limits); this stays
     * for a caller of the launcher itself. */
    if (D > EO_CU_ATTN_MAX_D || B * H > EO_CU_ATTN_MAX_BH || (causal && Tq > Tk) ||
        Tq > (int64_t)EO_CU_ATTN_MAX_TQ) {
        eo_cuda_fail_text(cu, EO_ERR_UNSUPPORTED, who,
                          ": the CUDA kernel needs D <= 128, B*H <= 65535, Tq <= 2^20 and "
                          "Tq <= Tk when causal",
                          NULL);
        return 0;
    }
    /* rows are padded up to a whole tile before they are masked */
    if (!eo_cuda_fits(cu, who, B * H * (Tq + BLOCKED_ROWS) * D) ||
        !eo_cuda_fits(cu, who, B * H * (Tk + BLOCKED_ROWS) * D))
        return 0;
    int64_t reach = 0;
    for (int i = 0; i < 4; i++) {
        int64_t s = ms ? ms[i] : 0, a = s < 0 ? -s : s;
        if (!eo_cuda_fits(cu, who, a))
            return 0;
        m[i] = (int32_t)s;
        reach += a * (in[i] > 0 ? in[i] - 1 : 0); /* axes b, h, i, j: extents B, H, Tq, Tk */
        if (!eo_cuda_fits(cu, who, reach))
            return 0;
    }
    return 1;
}

void eo_cuda_k_attention(int64_t B, int64_t H, int64_t Tq, int64_t Tk, int64_t D, const float *q,
                         const float *k, const float *v, const float *mask, const int64_t ms[4],
                         int causal, float scale, float *out, float *lse, void *ws,
                         const eo_exec *ex)
{
    (void)ws;
    eo_cuda *cu = eo_cuda_ready(ex);
    uint32_t s[5];
    int32_t m[4];
    if (!cu || !attn_sizes(cu, "attention", B, H, Tq, Tk, D, causal, mask ? ms : NULL, s, m) ||
        B * H * Tq == 0)
        return;
    uint32_t c = causal != 0;
    uint64_t pq = eo_cuda_dp(q), pk = eo_cuda_dp(k), pv = eo_cuda_dp(v), pm = eo_cuda_dp(mask),
             po = eo_cuda_dp(out), pl = eo_cuda_dp(lse);
    if (D <= 64) { /* the register-blocked kernels: 64 queries, 64 threads per block */
        unsigned gx = (unsigned)((Tq + BLOCKED_ROWS - 1) / BLOCKED_ROWS);
        LAUNCH(cu, D <= 32 ? EO_CUK_ATTN_FWD32 : EO_CUK_ATTN_FWD64, gx, (unsigned)(B * H), 1,
               BLOCKED_THREADS, 1, &s[0], &s[1], &s[2], &s[3], &s[4], &pq, &pk, &pv, &pm, &m[0],
               &m[1], &m[2], &m[3], &c, &scale, &po, &pl);
        return;
    }
    unsigned gx = (unsigned)((Tq + FWD_ROWS - 1) / FWD_ROWS);
    LAUNCH(cu, EO_CUK_ATTN_FWD, gx, (unsigned)(B * H), 1, 4 * FWD_ROWS, 1, &s[0], &s[1], &s[2],
           &s[3], &s[4], &pq, &pk, &pv, &pm, &m[0], &m[1], &m[2], &m[3], &c, &scale, &po, &pl);
}

void eo_cuda_k_attention_backward(int64_t B, int64_t H, int64_t Tq, int64_t Tk, int64_t D,
                                  const float *q, const float *k, const float *v,
                                  const float *mask, const int64_t ms[4], int causal, float scale,
                                  const float *out, const float *lse, const float *dout, float *dq,
                                  float *dk, float *dv, float *dmask, const int64_t dms[4],
                                  void *ws, const eo_exec *ex)
{
    (void)ws;
    eo_cuda *cu = eo_cuda_ready(ex);
    uint32_t s[5];
    int32_t m[4], dm[4];
    if (!cu ||
        !attn_sizes(cu, "attention_backward", B, H, Tq, Tk, D, causal, mask ? ms : NULL, s, m) ||
        !attn_sizes(cu, "attention_backward", B, H, Tq, Tk, D, causal, dmask ? dms : NULL, s,
                    dm) ||
        B * H * Tq == 0 || (!dq && !dk && !dv && !dmask))
        return;
    uint32_t c = causal != 0;
    uint64_t pq = eo_cuda_dp(q), pk = eo_cuda_dp(k), pv = eo_cuda_dp(v), pm = eo_cuda_dp(mask),
             po = eo_cuda_dp(out), pl = eo_cuda_dp(lse);
    uint64_t pdo = eo_cuda_dp(dout), pdq = eo_cuda_dp(dq), pdk = eo_cuda_dp(dk),
             pdv = eo_cuda_dp(dv), pdm = eo_cuda_dp(dmask), pdelta = cu->scratch + SCRATCH_WORK;
    /* Without a mask, D <= 64 takes the register-blocked kernels (one warp
     * per 32 queries / keys, tiles of 64 on the other side). */
    int blocked = !mask && !dmask && D <= 64;
    eo_cuda_kernel kdq = !blocked ? EO_CUK_ATTN_BWD_DQ
                         : D <= 32 ? EO_CUK_ATTN_BWD_DQ32
                                   : EO_CUK_ATTN_BWD_DQ64;
    eo_cuda_kernel kkv = !blocked ? EO_CUK_ATTN_BWD_DKV
                         : D <= 32 ? EO_CUK_ATTN_BWD_DKV32
                                   : EO_CUK_ATTN_BWD_DKV64;
    int64_t rows = blocked ? BWD_BLOCKED : BWD_ROWS; /* rows of a block's own tile */
    unsigned threads = blocked ? BWD_BLOCKED : 4 * BWD_ROWS;
    unsigned gq = (unsigned)((Tq + rows - 1) / rows), gk = (unsigned)((Tk + rows - 1) / rows);
    /* delta for a slice of heads must fit the scratch work buffer */
    int64_t per = (int64_t)WORK_BYTES / 4 / Tq, nbh = B * H;
    for (int64_t bh0 = 0; bh0 < nbh; bh0 += per) {
        uint32_t b0 = (uint32_t)bh0;
        unsigned n = (unsigned)(nbh - bh0 < per ? nbh - bh0 : per);
        LAUNCH(cu, kdq, gq, n, 1, threads, 1, &s[0], &s[1], &s[2], &s[3],
               &s[4], &b0, &pq, &pk, &pv, &pm, &m[0], &m[1], &m[2], &m[3], &c, &scale, &po, &pl,
               &pdo, &pdelta, &pdq);
        if (Tk > 0 && (dk || dv || dmask))
            LAUNCH(cu, kkv, gk, n, 1, threads, 1, &s[0], &s[1], &s[2],
                   &s[3], &s[4], &b0, &pq, &pk, &pv, &pm, &m[0], &m[1], &m[2], &m[3], &c, &scale,
                   &pl, &pdo, &pdelta, &pdk, &pdv, &pdm, &dm[0], &dm[1], &dm[2], &dm[3]);
    }
}

size_t eo_cuda_k_attention_ws(int64_t Tq, int64_t Tk, int64_t D, int nthreads)
{
    (void)Tq, (void)Tk, (void)D, (void)nthreads;
    return 0;
}

/* The 16-bit forward and backward on the tensor cores (ptx/attention_tc.ptx,
 * generated by tools/build/gen-attention-tc.py). The forward: one 128-thread
 * block per (64 queries, head). The backward: the same two-kernel split as the FP32
 * path above (delta through the scratch work buffer, heads in slices that
 * fit it), 128-thread blocks of 64 queries (dq) or 64 keys (dkv). It takes
 * only what its kernels run -- D a multiple of 8 up to 64 (16-byte rows of
 * 16-bit values for cp.async and ldmatrix), no mask, 16-byte aligned
 * pointers -- and returns 0 otherwise, before launching anything, so the
 * core can fall back to the f32 kernels. */
enum { TC_ROWS = 64, TC_THREADS = 128 };

/* What the tensor-core kernels run (ops/kernels.h, eo_k_attention16*). */
static int tc_takes(int64_t D, int dt, int causal, int64_t Tq, int64_t Tk, const void *const *p,
                    size_t np)
{
    if (D <= 0 || D > 64 || D % 8 != 0 || (causal && Tq > Tk) ||
        (dt != EO_K_BF16 && dt != EO_K_F16))
        return 0;
    for (size_t i = 0; i < np; i++)
        if ((uintptr_t)p[i] % 16 != 0)
            return 0;
    return 1;
}

int eo_cuda_k_attention16(int64_t B, int64_t H, int64_t Tq, int64_t Tk, int64_t D, int dt,
                          const void *q, const void *k, const void *v, int causal, float scale,
                          float *out, float *lse, const eo_exec *ex)
{
    const void *ptrs[] = {q, k, v, out, lse};
    if (!tc_takes(D, dt, causal, Tq, Tk, ptrs, sizeof ptrs / sizeof ptrs[0]))
        return 0;
    eo_cuda *cu = eo_cuda_ready(ex);
    uint32_t s[5];
    int32_t m[4];
    if (!cu || !attn_sizes(cu, "attention16", B, H, Tq, Tk, D, causal, NULL, s, m) ||
        B * H * Tq == 0)
        return 1; /* a failure is recorded in the device state */
    const int bf = dt == EO_K_BF16, d32 = D <= 32;
    eo_cuda_kernel kf = bf ? (d32 ? EO_CUK_ATTN16_FWD32_BF16 : EO_CUK_ATTN16_FWD64_BF16)
                           : (d32 ? EO_CUK_ATTN16_FWD32_F16 : EO_CUK_ATTN16_FWD64_F16);
    uint32_t c = causal != 0, b0 = 0;
    uint64_t pq = eo_cuda_dp(q), pk = eo_cuda_dp(k), pv = eo_cuda_dp(v), po = eo_cuda_dp(out),
             pl = eo_cuda_dp(lse);
    LAUNCH(cu, kf, (unsigned)((Tq + TC_ROWS - 1) / TC_ROWS), (unsigned)(B * H), 1, TC_THREADS, 1,
           &s[2], &s[3], &s[4], &b0, &pq, &pk, &pv, &c, &scale, &po, &pl);
    return 1;
}

int eo_cuda_k_attention16_backward(int64_t B, int64_t H, int64_t Tq, int64_t Tk, int64_t D,
                                   int dt, const void *q, const void *k, const void *v,
                                   int causal, float scale, const float *out, const float *lse,
                                   const void *dout16, const float *dout32, float *dq, float *dk,
                                   float *dv, const eo_exec *ex)
{
    const void *ptrs[] = {q, k, v, out, lse, dout16, dout32, dq, dk, dv};
    if (!tc_takes(D, dt, causal, Tq, Tk, ptrs, sizeof ptrs / sizeof ptrs[0]))
        return 0;
    eo_cuda *cu = eo_cuda_ready(ex);
    uint32_t s[5];
    int32_t m[4];
    if (!cu || !attn_sizes(cu, "attention16_backward", B, H, Tq, Tk, D, causal, NULL, s, m))
        return 1; /* the failure is recorded in the device state */
    if (B * H * Tq == 0 || (!dq && !dk && !dv))
        return 1;
    const int bf = dt == EO_K_BF16, d32 = D <= 32;
    eo_cuda_kernel kdq = bf ? (d32 ? EO_CUK_ATTN16_BWD_DQ32_BF16 : EO_CUK_ATTN16_BWD_DQ64_BF16)
                            : (d32 ? EO_CUK_ATTN16_BWD_DQ32_F16 : EO_CUK_ATTN16_BWD_DQ64_F16);
    eo_cuda_kernel kkv = bf ? (d32 ? EO_CUK_ATTN16_BWD_DKV32_BF16 : EO_CUK_ATTN16_BWD_DKV64_BF16)
                            : (d32 ? EO_CUK_ATTN16_BWD_DKV32_F16 : EO_CUK_ATTN16_BWD_DKV64_F16);
    uint32_t c = causal != 0;
    uint64_t pq = eo_cuda_dp(q), pk = eo_cuda_dp(k), pv = eo_cuda_dp(v), po = eo_cuda_dp(out),
             pl = eo_cuda_dp(lse), pdo = eo_cuda_dp(dout16), pdo32 = eo_cuda_dp(dout32),
             pdq = eo_cuda_dp(dq), pdk = eo_cuda_dp(dk), pdv = eo_cuda_dp(dv),
             pdelta = cu->scratch + SCRATCH_WORK;
    unsigned gq = (unsigned)((Tq + TC_ROWS - 1) / TC_ROWS), gk = (unsigned)((Tk + TC_ROWS - 1) / TC_ROWS);
    int64_t per = (int64_t)WORK_BYTES / 4 / Tq, nbh = B * H;
    for (int64_t bh0 = 0; bh0 < nbh; bh0 += per) {
        uint32_t b0 = (uint32_t)bh0;
        unsigned n = (unsigned)(nbh - bh0 < per ? nbh - bh0 : per);
        LAUNCH(cu, kdq, gq, n, 1, TC_THREADS, 1, &s[2], &s[3], &s[4], &b0, &pq, &pk, &pv, &c,
               &scale, &po, &pdo32, &pl, &pdo, &pdelta, &pdq);
        if (Tk > 0 && (dk || dv))
            LAUNCH(cu, kkv, gk, n, 1, TC_THREADS, 1, &s[2], &s[3], &s[4], &b0, &pq, &pk, &pv,
                   &c, &scale, &pl, &pdo, &pdelta, &pdk, &pdv);
    }
    return 1;
}
