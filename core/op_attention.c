/* core/op_attention.c — scaled dot-product attention: the masks, the
 * composed reference and the fused op.
 *
 * Masks are additive: a float added to the attention scores before the
 * softmax, 0 where a key may be seen and -inf where it may not. Adding is
 * what lets any number of masks (causal, padding, a learned bias) combine
 * by broadcasting, with no boolean dtype. A query row whose keys are all
 * -inf has no probability mass; the softmax kernel (and the fused kernel)
 * gives that row zeros and a zero gradient instead of 0/0 = NaN.
 *
 * eo_attention is built only from differentiable primitives
 *   s = q · kᵀ (matmul with tb = 1: the transposed view costs no copy),
 *   s = scale * s, s = s + mask (broadcast), p = softmax(s), out = p · v,
 * so it needs nothing of its own in autograd and serves as the reference.
 * Its price is the [B, H, Tq, Tk] score and probability matrices, kept
 * for the backward: quadratic in the sequence length.
 *
 * eo_attention_fused computes the same function in one op whose kernel
 * (ops/cpu/attention.c) never stores those matrices; it keeps only the output
 * and one log-sum-exp per query row. */
#include <math.h>
#include "alloc/text.h"
#include "core/internal.h"

/* A mask built on the host, moved to `dev` when that is not the CPU. */
static eo_status place(eo_ctx *ctx, eo_device dev, eo_tensor *h, eo_tensor **out)
{
    if (dev == EO_CPU) {
        *out = h;
        return EO_OK;
    }
    return eo_to_device(ctx, h, dev, EO_STEP, out);
}

/* The additive causal mask, filled on the host; uploaded when `dev` is
 * not the CPU (the host copy stays in the step arena until the rewind). */
EO_PUBLIC(causal_mask, (eo_ctx *ctx, eo_device dev, int64_t T, eo_tensor **out), (ctx, dev, T, out))
{
    if (!out)
        return eo_fail(ctx, EO_ERR_ARG, "causal_mask: NULL output pointer");
    if (T < 0)
        return eo_fail(ctx, EO_ERR_ARG, "causal_mask: T = %lld < 0", (long long)T);
    int64_t shape[2] = { T, T };
    eo_tensor *h;
    EO_CHECK(eo_new_out(ctx, EO_CPU, EO_F32, 2, shape, &h));
    float *m = h->data;
    for (int64_t i = 0; i < T; i++)
        for (int64_t j = 0; j < T; j++)
            m[i * T + j] = j <= i ? 0.0f : -INFINITY;
    return place(ctx, dev, h, out);
}

EO_PUBLIC(padding_mask, (eo_ctx *ctx, eo_device dev, int64_t B, int64_t T, const uint8_t *valid,
                        eo_tensor **out),
          (ctx, dev, B, T, valid, out))
{
    if (!out || !valid)
        return eo_fail(ctx, EO_ERR_ARG, "padding_mask: NULL %s", !out ? "output pointer" : "valid");
    if (B < 0 || T < 0)
        return eo_fail(ctx, EO_ERR_ARG, "padding_mask: B = %lld, T = %lld: both must be >= 0",
                       (long long)B, (long long)T);
    int64_t shape[4] = { B, 1, 1, T };
    eo_tensor *h;
    EO_CHECK(eo_new_out(ctx, EO_CPU, EO_F32, 4, shape, &h));
    float *m = h->data;
    for (int64_t i = 0; i < B * T; i++)
        m[i] = valid[i] ? 0.0f : -INFINITY;
    return place(ctx, dev, h, out);
}

/* Shapes shared by both forms: q [B,H,Tq,D], k and v [B,H,Tk,D], the mask
 * broadcastable to [B,H,Tq,Tk] (never widening it), Tq == Tk if causal. */
static eo_status check_attention(eo_ctx *ctx, const char *op, eo_tensor *q, eo_tensor *k,
                                 eo_tensor *v, eo_tensor *mask, int causal, float scale,
                                 eo_tensor **out)
{
    if (!out)
        return eo_fail(ctx, EO_ERR_ARG, "%s: NULL output pointer", op);
    EO_NONNULL(ctx, op, q);
    EO_NONNULL(ctx, op, k);
    EO_NONNULL(ctx, op, v);
    EO_CHECK(eo_expect_any(ctx, op, q));
    const eo_dtype dt = eo_is_half(q->dtype) ? q->dtype : EO_F32; /* 16-bit: composed only */
    EO_CHECK(eo_expect(ctx, op, q, dt));
    EO_CHECK(eo_expect(ctx, op, k, dt));
    EO_CHECK(eo_expect(ctx, op, v, dt));
    EO_CHECK(eo_same_device(ctx, op, q, k));
    EO_CHECK(eo_same_device(ctx, op, q, v));
    if (!(scale == scale) || scale - scale != 0.0f)
        return eo_fail(ctx, EO_ERR_ARG, "%s: scale must be finite, got %f", op, (double)scale);
    if (q->rank != 4 || k->rank != 4 || v->rank != 4)
        return eo_fail(ctx, EO_ERR_SHAPE,
                       "%s: expected q [B,H,Tq,D], k and v [B,H,Tk,D], got %T, %T, %T", op, q,
                       k, v);
    for (int i = 0; i < 4; i++)
        if (k->shape[i] != v->shape[i] || (i != 2 && q->shape[i] != k->shape[i]))
            return eo_fail(ctx, EO_ERR_SHAPE,
                           "%s: expected q [B,H,Tq,D], k and v [B,H,Tk,D], got %T, %T, %T",
                           op, q, k, v);
    /* The fused kernels align the diagonal bottom-right (Tq <= Tk, the
     * queries are the last positions: a KV cache); the composed form's
     * mask is the square one. */
    int fused = eo_text_eq(op, "attention_fused");
    if (causal && (fused ? q->shape[2] > k->shape[2] : q->shape[2] != k->shape[2]))
        return eo_fail(ctx, EO_ERR_SHAPE, "%s: causal needs Tq %s Tk, got q %T and k %T", op,
                       fused ? "<=" : "==", q, k);
    if (mask) {
        EO_CHECK(eo_expect(ctx, op, mask, EO_F32));
        EO_CHECK(eo_same_device(ctx, op, q, mask));
        const int64_t want[4] = { q->shape[0], q->shape[1], q->shape[2], k->shape[2] };
        int64_t ms[4], mst[4];
        eo_pad4(mask, ms, mst);
        for (int i = 0; i < 4; i++)
            if (ms[i] != 1 && ms[i] != want[i])
                return eo_fail(ctx, EO_ERR_SHAPE,
                               "%s: mask %T does not broadcast to the scores [%lldx%lldx%lldx%lld]",
                               op, mask, (long long)want[0], (long long)want[1],
                               (long long)want[2], (long long)want[3]);
    }
    return EO_OK;
}

EO_PUBLIC(attention, (eo_ctx *ctx, eo_tensor *q, eo_tensor *k, eo_tensor *v, eo_tensor *mask,
                     int causal, float scale, eo_tensor **out),
          (ctx, q, k, v, mask, causal, scale, out))
{
    /* The additive mask may have any float dtype: it is added in f32, or
     * in q's 16-bit dtype on the 16-bit route below. */
    if (mask && eo_is_half(mask->dtype))
        EO_CHECK(eo_cast(ctx, mask, EO_F32, &mask));
    eo_tensor *h[3] = { q, k, v };
    EO_AUTOCAST(ctx, EO_AUTOCAST_LOW, h, 3,
                eo_attention(ctx, h[0], h[1], h[2], mask, causal, scale, out));
    /* q, k, v of one 16-bit dtype on a backend with the 16-bit matmul:
     * the composition runs in that dtype (below); else through f32. */
    EO_CHECK(eo_expect_any(ctx, "attention", q));
    const eo_dtype dt = q->dtype;
    const int native16 = eo_is_half(dt) && k && v && k->dtype == dt && v->dtype == dt &&
                         eo_backend_of(ctx, q)->matmul16;
    if (!native16)
        EO_HALF_FALLBACK(ctx, "attention", h, 3, 0, out,
                         eo_attention(ctx, h[0], h[1], h[2], mask, causal, scale, out));
    EO_CHECK(check_attention(ctx, "attention", q, k, v, mask, causal, scale, out));
    eo_tensor *s, *p;
    if (native16) {
        /* 16-bit: every step keeps q's dtype, each op doing its own math in
         * f32 (matmul accumulates, softmax works on widened rows), so the
         * scores and probabilities are stored at half the bytes. The scale
         * goes on q first, as PyTorch's math attention does for half: the
         * scores' range is then the scaled one, where f16's 65504 holds
         * (q.k itself may pass it: a head dimension of 256 with q, k ~ 20).
         * The masks are cast to dt: 0 and -inf are exact, and a large
         * negative f32 value becomes -inf in f16, which softmax treats
         * alike (a fully masked row gives zeros). */
        eo_tensor *qs;
        EO_CHECK(eo_scale(ctx, q, scale, &qs));
        EO_CHECK(eo_matmul(ctx, qs, k, 0, 1, &s));
    } else {
        EO_CHECK(eo_matmul(ctx, q, k, 0, 1, &s));
        EO_CHECK(eo_scale(ctx, s, scale, &s));
    }
    if (causal) {
        eo_tensor *cm;
        EO_CHECK(eo_causal_mask(ctx, q->device, q->shape[2], &cm));
        if (native16)
            EO_CHECK(eo_cast(ctx, cm, dt, &cm));
        EO_CHECK(eo_add(ctx, s, cm, &s));
    }
    if (mask) {
        if (native16)
            EO_CHECK(eo_cast(ctx, mask, dt, &mask));
        EO_CHECK(eo_add(ctx, s, mask, &s));
    }
    EO_CHECK(eo_softmax(ctx, s, &p));
    return eo_matmul(ctx, p, v, 0, 0, out);
}

/* 4-D strides of the mask (or its gradient) over the scores [B,H,Tq,Tk]:
 * 0 on the axes where it has size 1 and so is broadcast. */
static void mask_strides(const eo_tensor *m, int64_t st[4])
{
    int64_t ms[4];
    eo_pad4(m, ms, st);
    for (int i = 0; i < 4; i++)
        if (ms[i] == 1)
            st[i] = 0;
}

static eo_status attention_fused_f32(eo_ctx *ctx, eo_tensor *q, eo_tensor *k, eo_tensor *v,
                                     eo_tensor *mask, int causal, float scale, eo_dtype half,
                                     eo_tensor **out);

EO_PUBLIC(attention_fused, (eo_ctx *ctx, eo_tensor *q, eo_tensor *k, eo_tensor *v,
                           eo_tensor *mask, int causal, float scale, eo_tensor **out),
          (ctx, q, k, v, mask, causal, scale, out))
{
    /* bf16 / f16: through f32 (core/op_cast.c: the widening casts are on
     * the tape, the output is cast back); the additive mask may have any
     * float dtype and is added in f32. q, k and v of one 16-bit dtype are
     * passed on as `half`: their widened values are exact 16-bit values,
     * so a backend with the 16-bit kernels runs both directions on 16-bit
     * copies of them (the tensor cores on CUDA), attn.half on the node. */
    if (mask && eo_is_half(mask->dtype))
        EO_CHECK(eo_cast(ctx, mask, EO_F32, &mask));
    eo_tensor *h[3] = { q, k, v };
    EO_AUTOCAST(ctx, EO_AUTOCAST_LOW, h, 3,
                eo_attention_fused(ctx, h[0], h[1], h[2], mask, causal, scale, out));
    if (!out)
        return eo_fail(ctx, EO_ERR_ARG, "attention_fused: NULL output pointer");
    eo_half_route hr;
    EO_CHECK(eo_half_plan(ctx, "attention_fused", h, 3, 0, &hr));
    if (hr.any16) {
        const eo_dtype dt = q->dtype;
        const eo_dtype half = eo_is_half(dt) && k && v && k->dtype == dt && v->dtype == dt
                                  ? dt : EO_F32;
        EO_CHECK(eo_half_widen(ctx, h, 3));
        EO_CHECK(attention_fused_f32(ctx, h[0], h[1], h[2], mask, causal, scale, half, out));
        return eo_half_narrow(ctx, &hr, out);
    }
    return attention_fused_f32(ctx, q, k, v, mask, causal, scale, EO_F32, out);
}

/* dst (1-D, 16-bit, numel q + k + v) = q, k, v rounded to dst's dtype, one
 * after the other: three contiguous casts into views of dst. */
static eo_status pack16(eo_ctx *ctx, eo_tensor *dst, eo_tensor *q, eo_tensor *k, eo_tensor *v)
{
    eo_tensor *src[3] = { q, k, v };
    int64_t at = 0;
    for (int i = 0; i < 3; i++) {
        eo_tensor part = *dst;
        part.rank = 1;
        part.shape[0] = eo_numel(src[i]);
        part.stride[0] = 1;
        part.data = (char *)dst->data + 2 * at;
        eo_tensor flat = *src[i];
        flat.rank = 1;
        flat.shape[0] = part.shape[0];
        flat.stride[0] = 1;
        EO_CHECK(eo_copy_any(ctx, &part, &flat));
        at += part.shape[0];
    }
    return EO_OK;
}

/* The backend's kernel limits (core/backend.h), refused here at the call
 * rather than by the launch, whose failure would only surface at the
 * next sync. */
static eo_status within_limits(eo_ctx *ctx, const eo_backend *be, const eo_tensor *q,
                               const eo_tensor *k)
{
    const eo_backend_limits *l = &be->limits;
    const int64_t B = q->shape[0], H = q->shape[1], Tq = q->shape[2], D = q->shape[3];
    if (l->attention_max_d && D > l->attention_max_d)
        return eo_fail(ctx, EO_ERR_UNSUPPORTED, "attention_fused: head dim D = %lld (q %T, k %T) "
                       "is above the %s kernel's limit of %lld; eo_attention (composed) takes "
                       "any D", (long long)D, q, k, be->name, (long long)l->attention_max_d);
    if (l->attention_max_bh && B * H > l->attention_max_bh) /* B*H <= numel: no wrap */
        return eo_fail(ctx, EO_ERR_UNSUPPORTED, "attention_fused: B*H = %lld*%lld (q %T) is "
                       "above the %s kernel's limit of %lld heads in all",
                       (long long)B, (long long)H, q, be->name, (long long)l->attention_max_bh);
    if (l->attention_max_tq && Tq > l->attention_max_tq)
        return eo_fail(ctx, EO_ERR_UNSUPPORTED, "attention_fused: Tq = %lld query rows (q %T) "
                       "is above the %s kernel's limit of %lld", (long long)Tq, q, be->name,
                       (long long)l->attention_max_tq);
    return EO_OK;
}

/* The fused op on f32 q, k, v; half: their 16-bit dtype when they are
 * widened 16-bit tensors, else EO_F32. */
static eo_status attention_fused_f32(eo_ctx *ctx, eo_tensor *q, eo_tensor *k, eo_tensor *v,
                                     eo_tensor *mask, int causal, float scale, eo_dtype half,
                                     eo_tensor **out)
{
    EO_CHECK(check_attention(ctx, "attention_fused", q, k, v, mask, causal, scale, out));
    const eo_backend *be = eo_backend_of(ctx, q);
    EO_NEED_KERNEL(ctx, "attention_fused", be, attention);
    EO_CHECK(within_limits(ctx, be, q, k));
    /* The kernel reads q, k, v as packed heads; a head-split view
     * ([B,T,H,D] transposed) is copied here, and the copy's own tape
     * node routes the gradient back to the view. The mask keeps its
     * strides: broadcasting it costs nothing. */
    EO_CHECK(eo_contiguous(ctx, q, &q));
    EO_CHECK(eo_contiguous(ctx, k, &k));
    EO_CHECK(eo_contiguous(ctx, v, &v));
    const int64_t B = q->shape[0], H = q->shape[1], Tq = q->shape[2], Tk = k->shape[2];
    const int64_t D = q->shape[3];
    int64_t ms[4] = { 0, 0, 0, 0 };
    if (mask)
        mask_strides(mask, ms);
    eo_tensor *o, *lse;
    EO_CHECK(eo_new_out(ctx, q->device, EO_F32, 4, q->shape, &o));
    EO_CHECK(eo_new_out(ctx, q->device, EO_F32, 3, q->shape, &lse));
    /* Widened 16-bit q, k, v, no mask, a backend with the 16-bit kernels
     * and a head size they run (D a multiple of 8 up to 64, ops/kernels.h):
     * q, k, v go back to 16 bits (exact: they are widened 16-bit values),
     * packed in one tensor that the backward reuses (saved[1]), and the
     * forward runs on the tensor cores. Else, or when the kernel declines,
     * the f32 kernel. */
    eo_tensor *h16 = NULL;
    int done = 0;
    if (half != EO_F32 && !mask && be->attention16 && D % 8 == 0 && D <= 64) {
        const int64_t nq = eo_numel(q), nk = eo_numel(k), n = nq + 2 * nk;
        EO_CHECK(eo_new_out(ctx, q->device, half, 1, &n, &h16));
        EO_CHECK(pack16(ctx, h16, q, k, v));
        char *b = h16->data;
        done = be->attention16(B, H, Tq, Tk, D, (int)half, b, b + 2 * nq, b + 2 * (nq + nk),
                               causal, scale, o->data, lse->data, &ctx->exec);
    }
    if (!done) {
        size_t bytes = be->attention_ws ? be->attention_ws(Tq, Tk, D, eo_par_threads(&ctx->exec.par)) : 0;
        eo_lent ws; /* the tiles live for this call only */
        EO_CHECK(eo_lend(ctx, q->device, bytes, &ws));
        be->attention(B, H, Tq, Tk, D, q->data, k->data, v->data, mask ? mask->data : NULL, ms,
                      causal, scale, o->data, lse->data, ws.p, &ctx->exec);
        eo_give_back(&ws);
    }
    eo_tensor *in[4] = { q, k, v, mask };
    if (eo_needs_grad(ctx, in, 4)) {
        eo_node *nd;
        EO_CHECK(eo_record(ctx, EO_OP_ATTENTION, in, 4, o, &nd));
        nd->saved[0] = lse; /* [B,H,Tq]: all the backward keeps of the softmax */
        nd->saved[1] = h16; /* 16-bit q, k, v packed (or NULL) */
        nd->p.attn.causal = causal;
        nd->p.attn.scale = scale;
        nd->p.attn.half = half;
    }
    *out = o;
    return EO_OK;
}

eo_status eo_bwd_attention(eo_ctx *ctx, eo_node *n)
{
    eo_tensor *q = n->in[0], *k = n->in[1], *v = n->in[2], *mask = n->in[3], *o = n->out;
    eo_tensor *gq = NULL, *gk = NULL, *gv = NULL, *gm = NULL;
    const eo_backend *be = eo_backend_of(ctx, q);
    EO_NEED_KERNEL(ctx, "attention_fused", be, attention_backward);
    if (q->requires_grad) EO_CHECK(eo_grad_of(ctx, q, &gq));
    if (k->requires_grad) EO_CHECK(eo_grad_of(ctx, k, &gk));
    if (v->requires_grad) EO_CHECK(eo_grad_of(ctx, v, &gv));
    if (mask && mask->requires_grad) EO_CHECK(eo_grad_of(ctx, mask, &gm));
    const int64_t B = q->shape[0], H = q->shape[1], Tq = q->shape[2], Tk = k->shape[2];
    const int64_t D = q->shape[3];
    int64_t ms[4] = { 0, 0, 0, 0 }, gms[4] = { 0, 0, 0, 0 };
    if (mask)
        mask_strides(mask, ms);
    if (gm)
        mask_strides(gm, gms);
    /* Widened 16-bit inputs, no mask, a backend with the 16-bit backward:
     * the forward's 16-bit q, k, v (or copies made now: exact), a 16-bit
     * copy of dout (rounded, as the gradient reaching a 16-bit attention is
     * in PyTorch's autocast), and
     * the tensor-core kernels (ptx/attention_tc.ptx). D must be a multiple
     * of 8 up to 64 (their rule, ops/kernels.h); they may still decline
     * (unaligned data), and the f32 kernel then runs as for any other. */
    if (n->p.attn.half != EO_F32 && !mask && be->attention16_backward && (gq || gk || gv) &&
        D % 8 == 0 && D <= 64) {
        eo_tensor *h16 = n->saved[1], *d16;
        if (!h16) { /* the forward ran the f32 kernel */
            const int64_t nq = eo_numel(q), nk = eo_numel(k), all = nq + 2 * nk;
            EO_CHECK(eo_new_out(ctx, q->device, n->p.attn.half, 1, &all, &h16));
            EO_CHECK(pack16(ctx, h16, q, k, v));
        }
        EO_CHECK(eo_new_out(ctx, q->device, n->p.attn.half, 4, o->grad->shape, &d16));
        EO_CHECK(eo_copy_any(ctx, d16, o->grad));
        const char *b = h16->data;
        const size_t nq = (size_t)eo_numel(q), nk = (size_t)eo_numel(k);
        if (be->attention16_backward(B, H, Tq, Tk, D, (int)n->p.attn.half, b, b + 2 * nq,
                                     b + 2 * (nq + nk), n->p.attn.causal,
                                     n->p.attn.scale, o->data, n->saved[0]->data, d16->data,
                                     o->grad->data, gq ? gq->data : NULL, gk ? gk->data : NULL,
                                     gv ? gv->data : NULL, &ctx->exec))
            return EO_OK;
    }
    size_t bytes = be->attention_ws ? be->attention_ws(Tq, Tk, D, eo_par_threads(&ctx->exec.par)) : 0;
    eo_lent ws;
    EO_CHECK(eo_lend(ctx, q->device, bytes, &ws));
    be->attention_backward(B, H, Tq, Tk, D, q->data, k->data, v->data,
                           mask ? mask->data : NULL, ms, n->p.attn.causal, n->p.attn.scale,
                           o->data, n->saved[0]->data, o->grad->data, gq ? gq->data : NULL,
                           gk ? gk->data : NULL, gv ? gv->data : NULL, gm ? gm->data : NULL,
                           gms, ws.p, &ctx->exec);
    eo_give_back(&ws);
    return EO_OK;
}
