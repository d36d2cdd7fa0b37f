/* core/autocast.c — the mixed-precision policy (eo_ctx_set_autocast,
 * core/everyo.h) and the 16-bit working copies of parameters that it
 * reads (eo_params_enable_low, core/nn.h).
 *
 * The policy, op by op, with autocast set to dt (bf16 or f16):
 *  - matmul (nn's Linear with its bias), conv2d, attention (composed and
 *    fused), embedding: inputs cast to dt (a parameter read through its
 *    working copy), result dt, products accumulated in f32 inside;
 *  - softmax, log_softmax, layernorm: a 16-bit input keeps its dtype (x
 *    not of dt is cast to dt; layernorm's w and b join it through their
 *    working copies); the kernel reads 16 bits, does every sum, max,
 *    mean and variance in f32 and rounds the result once; an f32 input
 *    stays f32 throughout;
 *  - cross-entropy: the loss is f32 (the grad scaler multiplies it, the
 *    report reads it). bf16 logits are read by the 16-bit kernel and its
 *    bf16 loss ([1], or [N] without reduction) is widened; f16 logits are
 *    widened instead, because the loss's gradient is the loss scale
 *    (2^16 to start), past f16's 65504, and the slot's loss and loss
 *    gradient have the logits' dtype;
 *  - reductions (sum, mean, max, sum_all, logsumexp) and exp, log: 16-bit
 *    inputs cast to f32, result f32 (statistics and losses);
 *  - binary elementwise ops: an operand of dt meeting an f32 one (a bias,
 *    a position table, a parameter's view) casts the f32 one to dt, a
 *    parameter through its working copy; otherwise PyTorch's promotion;
 *  - everything else follows its inputs.
 * Each op on a list applies it itself, at the top of its body
 * (EO_AUTOCAST, core/internal.h): it casts its tensor arguments and runs
 * itself on them with autocast off, so what it is built from is not cast
 * again. A model needs no change to train in bf16 or f16
 * (Micikevicius et al., "Mixed Precision Training", ICLR 2018, sec. 3:
 * f32 master weights, 16-bit activations and gradients, f32 for
 * reductions).
 *
 * Where this departs from PyTorch's autocast (torch.autocast docs, "CUDA
 * Ops that can autocast to float16 / to float32"): PyTorch puts softmax,
 * log_softmax and layer_norm on its f32 list (their outputs are f32),
 * leaves embedding off the lists (an f32 table gives f32 rows) and
 * promotes a 16-bit + f32 sum to f32. Each of those widens an activation
 * that the next matmul casts back: the residual stream of a transformer,
 * every normalised row and every attention probability would be stored
 * in f32, and the step arena grew instead of halving. Keeping activations
 * 16-bit with f32 arithmetic inside the normalisation is how Megatron-LM
 * trains in bf16 (activations, residual stream included, in bf16;
 * layernorm and softmax compute in f32 internally), and the native row
 * kernels are built for it (ops/kernels.h, "16-bit storage": read 16
 * bits, compute in f32, round once). The loss and the statistics stay
 * f32, as in PyTorch.
 *
 * Master weights: a parameter stays an f32 tensor (the master) with an
 * f32 gradient and f32 optimizer state. eo_params_enable_low gives it a
 * 16-bit copy in the persistent arena of its device (p->low); the
 * optimizer rewrites that copy after each update (core/optimizer.c), so
 * the copy is made once per step however many times the forward reads
 * the parameter. When an op under autocast meets such a parameter it
 * does not cast: it records a cast node from the master to a view of the
 * copy (no data moves), whose backward (eo_bwd_cast) adds the 16-bit
 * gradient, widened to f32, into the master's f32 gradient. The view
 * names its master in ->low, so that a matmul can add the weight's
 * gradient into the master's f32 gradient directly (eo_bwd_matmul):
 * then the copy gets no gradient and the cast node is skipped. */
#include "core/internal.h"
#include "core/nn.h"

EO_PUBLIC(ctx_set_autocast, (eo_ctx *ctx, eo_dtype dtype), (ctx, dtype))
{
    if ((unsigned)dtype >= EO_DTYPE_COUNT)
        return eo_fail(ctx, EO_ERR_ARG, "ctx_set_autocast: unknown dtype %d; expected f32 (off), "
                       "bf16 or f16", (int)dtype);
    if (dtype != EO_F32 && dtype != EO_BF16 && dtype != EO_F16)
        return eo_fail(ctx, EO_ERR_ARG, "ctx_set_autocast: dtype %s is not f32 (off), bf16 or "
                       "f16", eo_dtype_name(dtype));
    ctx->autocast = dtype;
    return EO_OK;
}

/* The parameter p read through its working copy: a step-arena header
 * over p->low's data, on the tape as cast(p). */
static eo_status low_copy(eo_ctx *ctx, eo_tensor *p, eo_tensor **out)
{
    eo_tensor *y;
    EO_CHECK(eo_host_alloc(ctx, EO_STEP, sizeof *y, (void **)&y));
    eo_tensor z = {0};
    *y = z;
    y->data = p->low->data;
    y->dtype = p->low->dtype;
    y->device = p->low->device;
    y->attach = p->low->attach;
    y->rank = p->low->rank;
    for (int i = 0; i < y->rank; i++) {
        y->shape[i] = p->low->shape[i];
        y->stride[i] = p->low->stride[i];
    }
    y->lifetime = EO_PERSIST; /* of its data: the copy outlives the step */
    y->low = p; /* a working copy names its master (eo_bwd_matmul writes there) */
    if (eo_needs_grad(ctx, &p, 1))
        EO_CHECK(eo_record(ctx, EO_OP_CAST, &p, 1, y, NULL));
    *out = y;
    return EO_OK;
}

eo_status eo_autocast_low(eo_ctx *ctx, eo_tensor **x)
{
    eo_tensor *t = *x;
    if (ctx->autocast == EO_F32 || !t || !eo_is_float(t->dtype) || t->dtype == ctx->autocast)
        return EO_OK;
    if (t->low && t->low->dtype == ctx->autocast) {
        EO_CHECK(eo_expect_live(ctx, ctx->op, t));
        EO_CHECK(eo_expect_live(ctx, ctx->op, t->low));
        return low_copy(ctx, t, x);
    }
    return eo_cast(ctx, t, ctx->autocast, x);
}

eo_status eo_autocast_f32(eo_ctx *ctx, eo_tensor **x)
{
    eo_tensor *t = *x;
    if (ctx->autocast == EO_F32 || !t || !eo_is_half(t->dtype))
        return EO_OK;
    return eo_cast(ctx, t, EO_F32, x);
}

eo_status eo_autocast_cast(eo_ctx *ctx, eo_autocast_list list, eo_tensor **arr, int n)
{
    for (int i = 0; i < n; i++)
        EO_CHECK(list == EO_AUTOCAST_LOW ? eo_autocast_low(ctx, &arr[i])
                                         : eo_autocast_f32(ctx, &arr[i]));
    return EO_OK;
}

/* ---- working copies ------------------------------------------------------------ */

/* p->low = p rounded to its dtype, by the backend's cast kernel. */
static eo_status refresh_one(eo_ctx *ctx, eo_tensor *p)
{
    const eo_backend *be = eo_backend_of(ctx, p);
    EO_NEED_KERNEL(ctx, ctx->op, be, cast);
    int64_t shape[4], sp[4], sl[4];
    eo_pad4(p, shape, sp);
    eo_pad4(p->low, shape, sl);
    be->cast(shape, (int)p->low->dtype, p->low->data, sl, (int)p->dtype, p->data, sp, 0,
             &ctx->exec);
    return EO_OK;
}

EO_PUBLIC(params_enable_low, (eo_ctx *ctx, const eo_params *ps, eo_dtype dtype), (ctx, ps, dtype))
{
    if (!ps)
        return eo_fail(ctx, EO_ERR_ARG, "params_enable_low: NULL parameter list");
    if ((unsigned)dtype >= EO_DTYPE_COUNT)
        return eo_fail(ctx, EO_ERR_ARG, "params_enable_low: unknown dtype %d; expected bf16 or f16",
                       (int)dtype);
    if (dtype != EO_BF16 && dtype != EO_F16)
        return eo_fail(ctx, EO_ERR_ARG, "params_enable_low: dtype %s is not bf16 or f16",
                       eo_dtype_name(dtype));
    EO_CHECK(eo_expect_params(ctx, "params_enable_low", ps));
    /* Every copy is made before any is linked, so a failure (out of
     * persistent memory) leaves no parameter pointing at given-back
     * memory: eo_leave rewinds the arena. */
    eo_lent l; /* the list of copies, host scratch given back below (or by eo_leave) */
    EO_CHECK(eo_lend(ctx, EO_CPU, sizeof(eo_tensor *) * (size_t)(ps->count + 1), &l));
    eo_tensor **made = l.p;
    for (int i = 0; i < ps->count; i++) {
        eo_tensor *p = ps->items[i];
        if (p->dtype != EO_F32)
            return eo_fail(ctx, EO_ERR_DTYPE, "params_enable_low: %s is %T; masters are f32",
                           p->name ? p->name : "a parameter", p);
        made[i] = p->low && p->low->dtype == dtype ? p->low : NULL;
        if (!made[i])
            EO_CHECK(eo_tensor_new(ctx, EO_PERSIST, p->device, dtype, p->rank, p->shape,
                                   &made[i]));
    }
    for (int i = 0; i < ps->count; i++)
        ps->items[i]->low = made[i];
    eo_give_back(&l);
    return eo_params_refresh_low(ctx, ps);
}

EO_PUBLIC(params_refresh_low, (eo_ctx *ctx, const eo_params *ps), (ctx, ps))
{
    if (!ps)
        return eo_fail(ctx, EO_ERR_ARG, "params_refresh_low: NULL parameter list");
    EO_CHECK(eo_expect_params(ctx, "params_refresh_low", ps));
    for (int i = 0; i < ps->count; i++)
        if (ps->items[i]->low)
            EO_CHECK(refresh_one(ctx, ps->items[i]));
    return EO_OK;
}

eo_status eo_params_refresh_low_one(eo_ctx *ctx, eo_tensor *p)
{
    return p->low ? refresh_one(ctx, p) : EO_OK;
}
