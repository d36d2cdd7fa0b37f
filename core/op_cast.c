/* core/op_cast.c — eo_cast between f32, bf16 and f16, and the pieces every
 * op uses to work on 16-bit tensors.
 *
 * eo_cast is differentiable: its backward casts the gradient back to the
 * input's dtype and adds it there (gradients have their tensor's dtype,
 * as in PyTorch). Rounding is to nearest even, with NaN, infinities,
 * overflow and subnormals as ops/cpu/half.h describes.
 *
 * The generic 16-bit fallback. An op given bf16 or f16 inputs whose
 * backend has no native 16-bit kernel for it runs as three recorded steps:
 *   1. each 16-bit input is cast to an f32 temporary (eo_cast),
 *   2. the f32 op runs on those (the same public call, so the same checks,
 *      messages, kernels and backward rule),
 *   3. its f32 result is cast to the op's result dtype, rounded once.
 * Because every step is an op on the tape, the backward needs nothing
 * new: the 16-bit output's gradient is widened by step 3's rule, the f32
 * rule runs, and step 1's rule rounds each input's gradient into its
 * 16-bit dtype. So every op works on bf16 and f16 on every backend that
 * has a `cast` kernel, at the price of the f32 temporaries; a native slot
 * replaces the three steps where that pays (matmul first: core/
 * op_matmul.c). A native kernel and the fallback agree exactly where the
 * kernel reuses the f32 arithmetic on widened rows, and within a 16-bit
 * ulp where the order of its f32 operations differs (stated per kernel).
 *
 * Result dtypes, as PyTorch (torch.result_type for tensors of the same
 * rank category):
 *  - elementwise binary ops promote: equal dtypes keep theirs, any two
 *    different float dtypes (bf16 + f16, f32 + bf16, f32 + f16) give f32.
 *    (PyTorch lets a rank-0 tensor take the other operand's dtype; here
 *    every tensor counts the same.)
 *  - every other op needs its float inputs in one dtype (else
 *    EO_ERR_DTYPE, naming both), and its result has that dtype; integer
 *    inputs (targets, indices) are i32 as always, and an attention mask
 *    may be any float dtype (it is added in f32). */
#include "core/internal.h"

_Static_assert(EO_K_F32 == (int)EO_F32 && EO_K_I32 == (int)EO_I32 &&
                   EO_K_BF16 == (int)EO_BF16 && EO_K_F16 == (int)EO_F16,
               "ops/kernels.h dtype codes must equal eo_dtype");

int eo_is_float(eo_dtype dt)
{
    return dt == EO_F32 || dt == EO_BF16 || dt == EO_F16;
}

int eo_is_half(eo_dtype dt)
{
    return dt == EO_BF16 || dt == EO_F16;
}

EO_PUBLIC(cast, (eo_ctx *ctx, eo_tensor *x, eo_dtype dtype, eo_tensor **out), (ctx, x, dtype, out))
{
    if (!out)
        return eo_fail(ctx, EO_ERR_ARG, "cast: NULL output pointer");
    EO_CHECK(eo_expect_any(ctx, "cast", x));
    if (!eo_is_float(x->dtype) || !eo_is_float(dtype))
        return eo_fail(ctx, EO_ERR_DTYPE,
                       "cast: %T to %s: only f32, bf16 and f16 convert to each other", x,
                       (unsigned)dtype < EO_DTYPE_COUNT ? eo_dtype_name(dtype) : "an unknown dtype");
    if (x->dtype == dtype) { /* as torch's .to(): the tensor itself */
        *out = x;
        return EO_OK;
    }
    const eo_backend *be = eo_backend_of(ctx, x);
    EO_NEED_KERNEL(ctx, "cast", be, cast);
    eo_tensor *y;
    EO_CHECK(eo_new_out(ctx, x->device, dtype, x->rank, x->shape, &y));
    int64_t shape[4], sx[4], sy[4];
    eo_pad4(x, shape, sx);
    eo_pad4(y, shape, sy);
    be->cast(shape, (int)dtype, y->data, sy, (int)x->dtype, x->data, sx, 0, &ctx->exec);
    if (eo_needs_grad(ctx, &x, 1))
        EO_CHECK(eo_record(ctx, EO_OP_CAST, &x, 1, y, NULL));
    *out = y;
    return EO_OK;
}

eo_status eo_bwd_cast(eo_ctx *ctx, eo_node *n)
{
    eo_tensor *x = n->in[0], *g;
    if (!x->requires_grad)
        return EO_OK;
    EO_CHECK(eo_grad_of(ctx, x, &g));
    return eo_accumulate_any(ctx, g, n->out->grad);
}

/* ---- copies and sums of any dtype ------------------------------------------ */

eo_status eo_copy_any(eo_ctx *ctx, const eo_tensor *dst, const eo_tensor *src)
{
    const eo_backend *be = eo_backend_of(ctx, dst);
    int64_t shape[4], sd[4], tmp[4], ss[4];
    eo_pad4(dst, shape, sd);
    eo_pad4(src, tmp, ss);
    if (eo_dtype_size(dst->dtype) == 4 && dst->dtype == src->dtype) {
        EO_NEED_KERNEL(ctx, ctx->op, be, copy32);
        be->copy32(shape, dst->data, sd, src->data, ss, &ctx->exec);
        return EO_OK;
    }
    EO_NEED_KERNEL(ctx, ctx->op, be, cast);
    be->cast(shape, (int)dst->dtype, dst->data, sd, (int)src->dtype, src->data, ss, 0,
             &ctx->exec);
    return EO_OK;
}

eo_status eo_accumulate_any(eo_ctx *ctx, const eo_tensor *dst, const eo_tensor *src)
{
    const eo_backend *be = eo_backend_of(ctx, dst);
    int64_t shape[4], sd[4], tmp[4], ss[4];
    eo_pad4(dst, shape, sd);
    eo_pad4(src, tmp, ss);
    if (dst->dtype == EO_F32 && src->dtype == EO_F32) {
        EO_NEED_KERNEL(ctx, "accumulate", be, accumulate);
        be->accumulate(shape, dst->data, sd, src->data, ss, &ctx->exec);
        return EO_OK;
    }
    EO_NEED_KERNEL(ctx, "accumulate", be, cast);
    be->cast(shape, (int)dst->dtype, dst->data, sd, (int)src->dtype, src->data, ss, 1,
             &ctx->exec);
    return EO_OK;
}

eo_status eo_fill_any(eo_ctx *ctx, eo_tensor *x, float value)
{
    const eo_backend *be = eo_backend_of(ctx, x);
    int64_t n = eo_numel(x);
    if (x->dtype == EO_F32) {
        EO_NEED_KERNEL(ctx, ctx->op, be, fill);
        be->fill(n, x->data, value, &ctx->exec);
        return EO_OK;
    }
    if (be->fill16) {
        be->fill16(n, (int)x->dtype, x->data, value, &ctx->exec);
        return EO_OK;
    }
    /* No 16-bit fill: fill an f32 temporary and cast it (rounded once). */
    EO_NEED_KERNEL(ctx, ctx->op, be, fill);
    EO_NEED_KERNEL(ctx, ctx->op, be, cast);
    eo_lent tmp;
    EO_CHECK(eo_lend(ctx, x->device, (size_t)n * sizeof(float), &tmp));
    be->fill(n, tmp.p, value, &ctx->exec);
    int64_t shape[4] = {1, 1, 1, n}, st[4] = {0, 0, 0, 1};
    be->cast(shape, (int)x->dtype, x->data, st, EO_K_F32, tmp.p, st, 0, &ctx->exec);
    eo_give_back(&tmp);
    return EO_OK;
}

/* ---- f32 scratch for f32 kernels on 16-bit tensors ------------------------------ */

eo_status eo_lend_f32(eo_ctx *ctx, const eo_tensor *like, const eo_tensor *src, eo_lent *l)
{
    const eo_backend *be = eo_backend_of(ctx, like);
    EO_NEED_KERNEL(ctx, ctx->op, be, cast);
    EO_NEED_KERNEL(ctx, ctx->op, be, zero);
    const int64_t n = eo_numel(like);
    EO_CHECK(eo_lend(ctx, like->device, (size_t)n * sizeof(float), l));
    if (!src)
        return be->zero(ctx, l->p, (size_t)n * sizeof(float));
    int64_t shape[4] = { 1, 1, 1, n }, st[4] = { 0, 0, 0, 1 };
    be->cast(shape, EO_K_F32, l->p, st, (int)src->dtype, src->data, st, 0, &ctx->exec);
    return EO_OK;
}

eo_status eo_add_f32_into(eo_ctx *ctx, const eo_tensor *dst, const void *f32, int accumulate)
{
    const eo_backend *be = eo_backend_of(ctx, dst);
    EO_NEED_KERNEL(ctx, ctx->op, be, cast);
    int64_t shape[4] = { 1, 1, 1, eo_numel(dst) }, st[4] = { 0, 0, 0, 1 };
    be->cast(shape, (int)dst->dtype, dst->data, st, EO_K_F32, f32, st, accumulate, &ctx->exec);
    return EO_OK;
}

/* ---- the fallback ------------------------------------------------------------- */

eo_status eo_half_plan(eo_ctx *ctx, const char *op, eo_tensor *const *in, int n, int promote,
                       eo_half_route *r)
{
    r->any16 = 0;
    r->dt = EO_F32;
    const eo_tensor *first = NULL;
    for (int i = 0; i < n; i++) {
        const eo_tensor *t = in[i];
        if (!t || !eo_is_float(t->dtype))
            continue;
        r->any16 |= eo_is_half(t->dtype);
        if (!first) {
            first = t;
            r->dt = t->dtype;
        } else if (t->dtype != first->dtype) {
            if (!promote)
                return eo_fail(ctx, EO_ERR_DTYPE,
                               "%s: inputs %T and %T differ in dtype (cast one with eo_cast)", op,
                               first, t);
            r->dt = EO_F32; /* PyTorch: two different float dtypes promote to f32 */
        }
    }
    return EO_OK;
}

eo_status eo_half_widen(eo_ctx *ctx, eo_tensor **in, int n)
{
    for (int i = 0; i < n; i++)
        if (in[i] && eo_is_half(in[i]->dtype))
            EO_CHECK(eo_cast(ctx, in[i], EO_F32, &in[i]));
    return EO_OK;
}

eo_status eo_half_narrow(eo_ctx *ctx, const eo_half_route *r, eo_tensor **out)
{
    if (r->dt == EO_F32 || !*out)
        return EO_OK;
    return eo_cast(ctx, *out, r->dt, out);
}
