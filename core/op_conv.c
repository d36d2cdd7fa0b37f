/* core/op_conv.c — 2-D convolution and max pooling (NCHW).
 *
 * A convolution is a matrix product in disguise: lay every k×k input
 * patch of every image out as a column (im2col), and the convolution of
 * the whole batch becomes one wide product
 *     W[Co, C·k·k] · cols[C·k·k, N·OH·OW]  ->  [Co, N·OH·OW],
 * followed by a transpose to [N, Co, OH, OW]. One wide matmul keeps the
 * matmul kernel at full speed, where one small product per image would
 * not. So only im2col is a new differentiable op (its backward, col2im,
 * scatters gradients back onto the pixels); the product, the bias and the
 * transpose are ordinary ops with their ordinary backward.
 *
 * That composition is the fallback. A backend with the fused slots
 * (the CPU) runs the whole convolution as one op, CONV2D: its kernel
 * builds one image's columns at a time in a small workspace and writes
 * NCHW directly (ops/cpu/conv.c), so neither the column matrix nor the
 * transpose copy exists, and the backward is one rule for x, w and bias. */
#include "core/internal.h"

/* The sizes of a convolution, every product checked: the output side
 * OH = (H + 2 pad - kh) / stride + 1 (likewise OW), and the im2col matrix
 * [C*kh*kw, N*OH*OW]. A huge padding or a huge input must be refused
 * here, before any of these reaches an allocation or a kernel's loop. */
typedef struct conv_sizes { int64_t OH, OW, rows, cols; } conv_sizes;

static eo_status conv_sizes_of(eo_ctx *ctx, const eo_tensor *x, const eo_tensor *w, int pad,
                               int stride, conv_sizes *cs)
{
    int64_t N = x->shape[0], C = x->shape[1], H = x->shape[2], W = x->shape[3];
    int64_t kh = w->shape[2], kw = w->shape[3], pad2, Hp, Wp, P;
    if (kh < 1 || kw < 1)
        return eo_fail(ctx, EO_ERR_SHAPE, "conv2d: kernel %T has an empty side", w);
    if (eo_mul_overflows(2, pad, &pad2) || eo_add_overflows(H, pad2, &Hp) ||
        eo_add_overflows(W, pad2, &Wp))
        return eo_fail(ctx, EO_ERR_SHAPE, "conv2d: padded size of %T with pad %d overflows", x,
                       pad);
    if (Hp < kh || Wp < kw)
        return eo_fail(ctx, EO_ERR_SHAPE,
                       "conv2d: kernel %T larger than input %T padded by %d (%lldx%lld)", w, x,
                       pad, (long long)Hp, (long long)Wp);
    cs->OH = (Hp - kh) / stride + 1;
    cs->OW = (Wp - kw) / stride + 1;
    if (eo_mul_overflows(cs->OH, cs->OW, &P) || eo_mul_overflows(N, P, &cs->cols) ||
        eo_mul_overflows(C, kh, &cs->rows) || eo_mul_overflows(cs->rows, kw, &cs->rows))
        return eo_fail(ctx, EO_ERR_SHAPE,
                       "conv2d: x %T, w %T, pad %d, stride %d: the im2col matrix (%lldx%lld "
                       "outputs per image) is too large",
                       x, w, pad, stride, (long long)cs->OH, (long long)cs->OW);
    return EO_OK;
}

static eo_status im2col(eo_ctx *ctx, eo_tensor *x, const conv_sizes *cs, int64_t kh, int64_t kw,
                        int pad, int stride, eo_tensor **out)
{
    int64_t N = x->shape[0], C = x->shape[1], H = x->shape[2], W = x->shape[3];
    const eo_backend *be = eo_backend_of(ctx, x);
    EO_NEED_KERNEL(ctx, "conv2d", be, im2col);
    int64_t shape[2] = { cs->rows, cs->cols };
    eo_tensor *cols;
    EO_CHECK(eo_new_out(ctx, x->device, EO_F32, 2, shape, &cols));
    be->im2col(N, C, H, W, kh, kw, pad, stride, x->data, cols->data, &ctx->exec);
    if (eo_needs_grad(ctx, &x, 1)) {
        eo_node *nd;
        EO_CHECK(eo_record(ctx, EO_OP_IM2COL, &x, 1, cols, &nd));
        nd->p.conv.kh = kh;
        nd->p.conv.kw = kw;
        nd->p.conv.pad = pad;
        nd->p.conv.stride = stride;
    }
    *out = cols;
    return EO_OK;
}

eo_status eo_bwd_im2col(eo_ctx *ctx, eo_node *n)
{
    eo_tensor *x = n->in[0], *g;
    if (!x->requires_grad)
        return EO_OK;
    const eo_backend *be = eo_backend_of(ctx, x);
    EO_NEED_KERNEL(ctx, "conv2d", be, col2im);
    EO_CHECK(eo_grad_of(ctx, x, &g));
    be->col2im(x->shape[0], x->shape[1], x->shape[2], x->shape[3], n->p.conv.kh, n->p.conv.kw,
               n->p.conv.pad, n->p.conv.stride, n->out->grad->data, g->data, &ctx->exec);
    return EO_OK;
}

/* The fused path: one node, inputs x, w and bias (or NULL).
 *
 * On bf16 / f16 tensors the same f32 kernels run over f32 scratch lent
 * for the call: the inputs widened, the f32 result rounded once into the
 * 16-bit output (and, in the backward, the f32 gradients rounded once and
 * added into the 16-bit ones). That is exactly the fallback's arithmetic
 * (core/op_cast.c), but only the 16-bit tensors stay on the tape: the
 * f32 copies live for one call. A backend with the 16-bit backward slot
 * (the CPU's) converts inside the kernel, image by image, instead: dy is
 * the batch's largest tensor, and at the backward's peak a whole f32
 * copy of it would outweigh everything else the 16-bit step holds. */
static eo_status conv2d_fused(eo_ctx *ctx, const eo_backend *be, eo_tensor *x, eo_tensor *w,
                              eo_tensor *bias, int pad, int stride, const conv_sizes *cs,
                              eo_tensor **out)
{
    EO_CHECK(eo_contiguous(ctx, x, &x));
    EO_CHECK(eo_contiguous(ctx, w, &w));
    if (bias) {
        EO_CHECK(eo_same_device(ctx, "conv2d", x, bias));
        EO_CHECK(eo_contiguous(ctx, bias, &bias));
    }
    eo_conv_geom g = { x->shape[0], x->shape[1], x->shape[2], x->shape[3],
                       w->shape[0], w->shape[2], w->shape[3], pad, stride };
    int64_t shape[4] = { g.N, g.Co, cs->OH, cs->OW };
    eo_tensor *y;
    EO_CHECK(eo_new_out(ctx, x->device, x->dtype, 4, shape, &y));
    const size_t wsb = be->conv2d_ws(&g, eo_par_threads(&ctx->exec.par));
    if (eo_is_half(x->dtype)) { /* widened for the call */
        eo_lent lx, lw, lb = { 0 }, ly, ws;
        EO_CHECK(eo_lend_f32(ctx, x, x, &lx));
        eo_status st = eo_lend_f32(ctx, w, w, &lw);
        if (st == EO_OK && bias)
            st = eo_lend_f32(ctx, bias, bias, &lb);
        if (st == EO_OK)
            st = eo_lend_f32(ctx, y, NULL, &ly);
        if (st == EO_OK)
            st = eo_lend(ctx, x->device, wsb, &ws);
        if (st == EO_OK) {
            be->conv2d(&g, lx.p, lw.p, bias ? lb.p : NULL, ly.p, ws.p, &ctx->exec);
            st = eo_add_f32_into(ctx, y, ly.p, 0);
        }
        eo_give_back(&lx); /* and everything lent after it */
        EO_CHECK(st);
    } else {
        eo_lent ws;
        EO_CHECK(eo_lend(ctx, x->device, wsb, &ws));
        be->conv2d(&g, x->data, w->data, bias ? bias->data : NULL, y->data, ws.p, &ctx->exec);
        eo_give_back(&ws);
    }
    eo_tensor *in[3] = { x, w, bias };
    if (eo_needs_grad(ctx, in, 3)) {
        eo_node *nd;
        EO_CHECK(eo_record(ctx, EO_OP_CONV2D, in, 3, y, &nd));
        nd->p.conv.kh = g.kh;
        nd->p.conv.kw = g.kw;
        nd->p.conv.pad = pad;
        nd->p.conv.stride = stride;
    }
    *out = y;
    return EO_OK;
}

eo_status eo_bwd_conv2d(eo_ctx *ctx, eo_node *n)
{
    eo_tensor *x = n->in[0], *w = n->in[1], *b = n->in[2];
    eo_tensor *gx = NULL, *gw = NULL, *gb = NULL;
    const eo_backend *be = eo_backend_of(ctx, x);
    EO_NEED_KERNEL(ctx, "conv2d", be, conv2d_backward);
    if (x->requires_grad) EO_CHECK(eo_grad_of(ctx, x, &gx));
    if (w->requires_grad) EO_CHECK(eo_grad_of(ctx, w, &gw));
    if (b && b->requires_grad) EO_CHECK(eo_grad_of(ctx, b, &gb));
    eo_conv_geom g = { x->shape[0], x->shape[1], x->shape[2], x->shape[3],
                       w->shape[0], n->p.conv.kh, n->p.conv.kw, n->p.conv.pad,
                       n->p.conv.stride };
    eo_lent ws;
    const eo_tensor *dy = n->out->grad;
    if (eo_is_half(x->dtype) && be->conv2d_backward16 && be->conv2d_ws16 &&
        dy->dtype == x->dtype && (!gx || gx->dtype == x->dtype)) {
        /* The backend's 16-bit backward: x, dy and gx converted image by
         * image inside the kernel (no batch-sized f32 copy of dy, the
         * largest tensor here), only w and the f32 gw, gb lent. */
        eo_lent lw, lgw = { 0 }, lgb = { 0 };
        const size_t wsb = be->conv2d_ws16(&g, eo_par_threads(&ctx->exec.par));
        EO_CHECK(eo_lend_f32(ctx, w, w, &lw));
        eo_status st = EO_OK;
        if (gw)
            st = eo_lend_f32(ctx, w, NULL, &lgw);
        if (st == EO_OK && gb)
            st = eo_lend_f32(ctx, b, NULL, &lgb);
        if (st == EO_OK)
            st = eo_lend(ctx, x->device, wsb, &ws);
        if (st == EO_OK) {
            be->conv2d_backward16(&g, (int)x->dtype, x->data, lw.p, dy->data,
                                  gx ? gx->data : NULL, gw ? lgw.p : NULL, gb ? lgb.p : NULL,
                                  ws.p, &ctx->exec);
            if (gw)
                st = eo_add_f32_into(ctx, gw, lgw.p, 1);
            if (st == EO_OK && gb)
                st = eo_add_f32_into(ctx, gb, lgb.p, 1);
        }
        eo_give_back(&lw);
        return st;
    }
    const size_t wsb = be->conv2d_ws(&g, eo_par_threads(&ctx->exec.par));
    if (eo_is_half(x->dtype)) { /* f32 scratch: inputs, dy, and fresh f32 gradients */
        eo_lent lx, lw, ldy, lgx = { 0 }, lgw = { 0 }, lgb = { 0 };
        EO_CHECK(eo_lend_f32(ctx, x, x, &lx));
        eo_status st = eo_lend_f32(ctx, w, w, &lw);
        if (st == EO_OK)
            st = eo_lend_f32(ctx, n->out, n->out->grad, &ldy);
        if (st == EO_OK && gx)
            st = eo_lend_f32(ctx, x, NULL, &lgx);
        if (st == EO_OK && gw)
            st = eo_lend_f32(ctx, w, NULL, &lgw);
        if (st == EO_OK && gb)
            st = eo_lend_f32(ctx, b, NULL, &lgb);
        if (st == EO_OK)
            st = eo_lend(ctx, x->device, wsb, &ws);
        if (st == EO_OK) {
            be->conv2d_backward(&g, lx.p, lw.p, ldy.p, gx ? lgx.p : NULL, gw ? lgw.p : NULL,
                                gb ? lgb.p : NULL, ws.p, &ctx->exec);
            if (gx)
                st = eo_add_f32_into(ctx, gx, lgx.p, 1);
            if (st == EO_OK && gw)
                st = eo_add_f32_into(ctx, gw, lgw.p, 1);
            if (st == EO_OK && gb)
                st = eo_add_f32_into(ctx, gb, lgb.p, 1);
        }
        eo_give_back(&lx);
        return st;
    }
    EO_CHECK(eo_lend(ctx, x->device, wsb, &ws));
    be->conv2d_backward(&g, x->data, w->data, n->out->grad->data, gx ? gx->data : NULL,
                        gw ? gw->data : NULL, gb ? gb->data : NULL, ws.p, &ctx->exec);
    eo_give_back(&ws);
    return EO_OK;
}

EO_PUBLIC(conv2d, (eo_ctx *ctx, eo_tensor *x, eo_tensor *w, eo_tensor *bias, int pad,
                  int stride, eo_tensor **out),
          (ctx, x, w, bias, pad, stride, out))
{
    if (!out)
        return eo_fail(ctx, EO_ERR_ARG, "conv2d: NULL output pointer");
    EO_NONNULL(ctx, "conv2d", x);
    EO_NONNULL(ctx, "conv2d", w);
    eo_tensor *h[3] = { x, w, bias };
    EO_AUTOCAST(ctx, EO_AUTOCAST_LOW, h, 3, eo_conv2d(ctx, h[0], h[1], h[2], pad, stride, out));
    /* bf16 / f16: the fused f32 kernels over f32 scratch (conv2d_fused),
     * where the backend has them; else through f32 copies (core/op_cast.c). */
    EO_CHECK(eo_expect_any(ctx, "conv2d", x));
    const eo_backend *be = eo_backend_of(ctx, x);
    const eo_dtype dt = x->dtype;
    const int wide16 = eo_is_half(dt) && w && w->dtype == dt && (!bias || bias->dtype == dt) &&
                       be->conv2d && be->conv2d_backward && be->conv2d_ws;
    if (!wide16)
        EO_HALF_FALLBACK(ctx, "conv2d", h, 3, 0, out,
                         eo_conv2d(ctx, h[0], h[1], h[2], pad, stride, out));
    EO_CHECK(eo_expect(ctx, "conv2d", x, wide16 ? dt : EO_F32));
    EO_CHECK(eo_expect(ctx, "conv2d", w, wide16 ? dt : EO_F32));
    EO_CHECK(eo_same_device(ctx, "conv2d", x, w));
    if (x->rank != 4 || w->rank != 4 || w->shape[1] != x->shape[1])
        return eo_fail(ctx, EO_ERR_SHAPE,
                       "conv2d: expected x [N, C, H, W] and w [Co, C, kh, kw], got %T and %T",
                       x, w);
    if (pad < 0 || stride < 1)
        return eo_fail(ctx, EO_ERR_ARG, "conv2d: pad %d must be >= 0 and stride %d >= 1", pad,
                       stride);
    int64_t Co = w->shape[0], kh = w->shape[2], kw = w->shape[3];
    conv_sizes cs = { 0, 0, 0, 0 };
    EO_CHECK(conv_sizes_of(ctx, x, w, pad, stride, &cs));
    if (bias) {
        EO_CHECK(eo_expect(ctx, "conv2d", bias, wide16 ? dt : EO_F32));
        if (bias->rank != 1 || bias->shape[0] != Co)
            return eo_fail(ctx, EO_ERR_SHAPE, "conv2d: bias must be [%lld], got %T",
                           (long long)Co, bias);
    }
    if (be->conv2d && be->conv2d_backward && be->conv2d_ws)
        return conv2d_fused(ctx, be, x, w, bias, pad, stride, &cs, out);
    const int64_t OH = cs.OH, OW = cs.OW;
    eo_tensor *cols = NULL, *w2 = NULL, *y = NULL;
    EO_CHECK(eo_contiguous(ctx, x, &x));
    EO_CHECK(im2col(ctx, x, &cs, kh, kw, pad, stride, &cols));
    int64_t wshape[2] = { Co, w->shape[1] * kh * kw };
    EO_CHECK(eo_reshape(ctx, w, 2, wshape, &w2));
    EO_CHECK(eo_matmul(ctx, w2, cols, 0, 0, &y)); /* [Co, N*OH*OW] */
    if (bias) {
        eo_tensor *b2;
        int64_t bshape[2] = { Co, 1 };
        EO_CHECK(eo_reshape(ctx, bias, 2, bshape, &b2));
        EO_CHECK(eo_add(ctx, y, b2, &y));
    }
    /* [Co, N, P] -> [N, Co, P] (a view), then the copy that makes it NCHW. */
    int64_t s3[3] = { Co, x->shape[0], OH * OW }, oshape[4] = { x->shape[0], Co, OH, OW };
    EO_CHECK(eo_reshape(ctx, y, 3, s3, &y));
    EO_CHECK(eo_transpose(ctx, y, 0, 1, &y));
    return eo_reshape(ctx, y, 4, oshape, out);
}

/* ---- max pooling ------------------------------------------------------------ */

/* The checks both pools share: k, x's rank and size, the i32 argmax. */
static eo_status pool_check(eo_ctx *ctx, const char *op, const eo_tensor *x, int k)
{
    if (k < 1)
        return eo_fail(ctx, EO_ERR_ARG, "%s: kernel size k must be >= 1, got %d", op, k);
    if (x->rank != 4 || x->shape[2] < k || x->shape[3] < k)
        return eo_fail(ctx, EO_ERR_SHAPE,
                       "%s: expected x [N, C, H, W] with H, W >= k = %d, got %T", op, k, x);
    /* The argmax is an i32 index into an H×W plane. */
    int64_t plane;
    if (eo_mul_overflows(x->shape[2], x->shape[3], &plane) || plane > INT32_MAX)
        return eo_fail(ctx, EO_ERR_SHAPE,
                       "%s: planes of %T have more than %d pixels (argmax is i32)", op, x,
                       (int)INT32_MAX);
    return EO_OK;
}

EO_PUBLIC(maxpool2d, (eo_ctx *ctx, eo_tensor *x, int k, eo_tensor **out), (ctx, x, k, out))
{
    if (!out)
        return eo_fail(ctx, EO_ERR_ARG, "maxpool2d: NULL output pointer");
    /* bf16 / f16: the f32 kernels over f32 scratch, as conv2d_fused (the
     * maximum of widened values rounds back to itself: exact); else
     * through f32 copies (core/op_cast.c). */
    EO_CHECK(eo_expect_any(ctx, "maxpool2d", x));
    const eo_backend *be = eo_backend_of(ctx, x);
    const int wide16 = eo_is_half(x->dtype) && be->maxpool2d && be->maxpool2d_backward;
    eo_tensor *h[1] = { x };
    if (!wide16)
        EO_HALF_FALLBACK(ctx, "maxpool2d", h, 1, 0, out, eo_maxpool2d(ctx, h[0], k, out));
    EO_CHECK(eo_expect(ctx, "maxpool2d", x, wide16 ? x->dtype : EO_F32));
    EO_CHECK(pool_check(ctx, "maxpool2d", x, k));
    EO_CHECK(eo_contiguous(ctx, x, &x));
    EO_NEED_KERNEL(ctx, "maxpool2d", be, maxpool2d);
    int64_t P = x->shape[0] * x->shape[1], H = x->shape[2], W = x->shape[3];
    int64_t shape[4] = { x->shape[0], x->shape[1], H / k, W / k };
    eo_tensor *y, *arg;
    EO_CHECK(eo_new_out(ctx, x->device, x->dtype, 4, shape, &y));
    EO_CHECK(eo_new_out(ctx, x->device, EO_I32, 4, shape, &arg));
    if (wide16) {
        eo_lent lx, ly;
        EO_CHECK(eo_lend_f32(ctx, x, x, &lx));
        eo_status st = eo_lend_f32(ctx, y, NULL, &ly);
        if (st == EO_OK) {
            be->maxpool2d(P, H, W, k, lx.p, ly.p, arg->data, &ctx->exec);
            st = eo_add_f32_into(ctx, y, ly.p, 0);
        }
        eo_give_back(&lx);
        EO_CHECK(st);
    } else {
        be->maxpool2d(P, H, W, k, x->data, y->data, arg->data, &ctx->exec);
    }
    if (eo_needs_grad(ctx, &x, 1)) {
        eo_node *nd;
        EO_CHECK(eo_record(ctx, EO_OP_MAXPOOL2D, &x, 1, y, &nd));
        nd->saved[0] = arg;
        nd->p.pool.k = k;
    }
    *out = y;
    return EO_OK;
}

/* ReLU then max pooling, fused where the backend has the kernels (the
 * CPU): the ReLU's output and its gradient never exist; the backward
 * takes the ReLU's mask from the pooled output (y > 0). Elsewhere,
 * and for 16-bit x, the two ops run one after the other: the same
 * values either way (ops/cpu/conv.c). */
EO_PUBLIC(relu_maxpool2d, (eo_ctx *ctx, eo_tensor *x, int k, eo_tensor **out), (ctx, x, k, out))
{
    if (!out)
        return eo_fail(ctx, EO_ERR_ARG, "relu_maxpool2d: NULL output pointer");
    EO_CHECK(eo_expect_any(ctx, "relu_maxpool2d", x));
    if (!eo_is_half(x->dtype))
        EO_CHECK(eo_expect(ctx, "relu_maxpool2d", x, EO_F32));
    EO_CHECK(pool_check(ctx, "relu_maxpool2d", x, k));
    const eo_backend *be = eo_backend_of(ctx, x);
    if (x->dtype != EO_F32 || !be->relu_maxpool2d || !be->relu_maxpool2d_backward) {
        eo_tensor *r;
        EO_CHECK(eo_relu(ctx, x, &r));
        return eo_maxpool2d(ctx, r, k, out);
    }
    EO_CHECK(eo_contiguous(ctx, x, &x));
    int64_t P = x->shape[0] * x->shape[1], H = x->shape[2], W = x->shape[3];
    int64_t shape[4] = { x->shape[0], x->shape[1], H / k, W / k };
    eo_tensor *y, *arg;
    EO_CHECK(eo_new_out(ctx, x->device, EO_F32, 4, shape, &y));
    EO_CHECK(eo_new_out(ctx, x->device, EO_I32, 4, shape, &arg));
    be->relu_maxpool2d(P, H, W, k, x->data, y->data, arg->data, &ctx->exec);
    if (eo_needs_grad(ctx, &x, 1)) {
        eo_node *nd;
        EO_CHECK(eo_record(ctx, EO_OP_RELU_MAXPOOL2D, &x, 1, y, &nd));
        nd->saved[0] = arg;
        nd->p.pool.k = k;
    }
    *out = y;
    return EO_OK;
}

eo_status eo_bwd_relu_maxpool2d(eo_ctx *ctx, eo_node *n)
{
    eo_tensor *x = n->in[0], *g;
    if (!x->requires_grad)
        return EO_OK;
    const eo_backend *be = eo_backend_of(ctx, x);
    EO_NEED_KERNEL(ctx, "relu_maxpool2d", be, relu_maxpool2d_backward);
    int set;
    EO_CHECK(eo_grad_for_set(ctx, x, be->relu_maxpool2d_backward_set != NULL, &g, &set));
    (set ? be->relu_maxpool2d_backward_set : be->relu_maxpool2d_backward)(
        x->shape[0] * x->shape[1], x->shape[2], x->shape[3], n->p.pool.k, n->out->data,
        n->out->grad->data, n->saved[0]->data, g->data, &ctx->exec);
    return EO_OK;
}

eo_status eo_bwd_maxpool2d(eo_ctx *ctx, eo_node *n)
{
    eo_tensor *x = n->in[0], *g;
    if (!x->requires_grad)
        return EO_OK;
    const eo_backend *be = eo_backend_of(ctx, x);
    EO_NEED_KERNEL(ctx, "maxpool2d", be, maxpool2d_backward);
    if (eo_is_half(x->dtype)) {
        EO_CHECK(eo_grad_of(ctx, x, &g));
        /* f32 scratch, as the forward, but a slab of planes at a time:
         * planes are independent (arg indexes within its plane), so the
         * result is the same as for the whole batch at once, and the
         * scratch stays ~320 KiB instead of an f32 copy of x and of dy at
         * the backward's peak. */
        EO_NEED_KERNEL(ctx, "maxpool2d", be, cast);
        EO_NEED_KERNEL(ctx, "maxpool2d", be, zero);
        const eo_tensor *dy = n->out->grad;
        const int64_t P = x->shape[0] * x->shape[1], H = x->shape[2], W = x->shape[3];
        const int64_t k = n->p.pool.k, plane = H * W, oplane = (H / k) * (W / k);
        const int64_t slab = plane >= (1 << 16) ? 1 : (1 << 16) / plane;
        const size_t de = eo_dtype_size(dy->dtype), ge = eo_dtype_size(g->dtype);
        eo_lent ldy, lg;
        const int64_t p1 = slab < P ? slab : P;
        EO_CHECK(eo_lend(ctx, x->device, (size_t)(p1 * oplane) * sizeof(float), &ldy));
        eo_status st = eo_lend(ctx, x->device, (size_t)(p1 * plane) * sizeof(float), &lg);
        for (int64_t p0 = 0; st == EO_OK && p0 < P; p0 += slab) {
            const int64_t np = P - p0 < slab ? P - p0 : slab;
            int64_t sh_y[4] = { 1, 1, 1, np * oplane }, sh_x[4] = { 1, 1, 1, np * plane };
            const int64_t st1[4] = { 0, 0, 0, 1 };
            be->cast(sh_y, EO_K_F32, ldy.p, st1, (int)dy->dtype,
                     (const char *)dy->data + (size_t)(p0 * oplane) * de, st1, 0, &ctx->exec);
            st = be->zero(ctx, lg.p, (size_t)(np * plane) * sizeof(float));
            if (st != EO_OK)
                break;
            be->maxpool2d_backward(np, H, W, k, ldy.p,
                                   (const int32_t *)n->saved[0]->data + p0 * oplane, lg.p,
                                   &ctx->exec);
            be->cast(sh_x, (int)g->dtype, (char *)g->data + (size_t)(p0 * plane) * ge, st1,
                     EO_K_F32, lg.p, st1, 1, &ctx->exec);
        }
        eo_give_back(&ldy);
        return st;
    }
    int set;
    EO_CHECK(eo_grad_for_set(ctx, x, be->maxpool2d_backward_set != NULL, &g, &set));
    (set ? be->maxpool2d_backward_set : be->maxpool2d_backward)(
        x->shape[0] * x->shape[1], x->shape[2], x->shape[3], n->p.pool.k, n->out->grad->data,
        n->saved[0]->data, g->data, &ctx->exec);
    return EO_OK;
}
