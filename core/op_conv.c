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
 * transpose are ordinary ops with their ordinary backward. */
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

EO_PUBLIC(conv2d, (eo_ctx *ctx, eo_tensor *x, eo_tensor *w, eo_tensor *bias, int pad,
                  int stride, eo_tensor **out),
          (ctx, x, w, bias, pad, stride, out))
{
    if (!out)
        return eo_fail(ctx, EO_ERR_ARG, "conv2d: NULL output pointer");
    eo_tensor *h[3] = { x, w, bias }; /* bf16 / f16: through f32 (core/op_cast.c) */
    EO_HALF_FALLBACK(ctx, "conv2d", h, 3, 0, out, eo_conv2d(ctx, h[0], h[1], h[2], pad, stride, out));
    EO_CHECK(eo_expect(ctx, "conv2d", x, EO_F32));
    EO_CHECK(eo_expect(ctx, "conv2d", w, EO_F32));
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
        EO_CHECK(eo_expect(ctx, "conv2d", bias, EO_F32));
        if (bias->rank != 1 || bias->shape[0] != Co)
            return eo_fail(ctx, EO_ERR_SHAPE, "conv2d: bias must be [%lld], got %T",
                           (long long)Co, bias);
    }
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

EO_PUBLIC(maxpool2d, (eo_ctx *ctx, eo_tensor *x, int k, eo_tensor **out), (ctx, x, k, out))
{
    if (!out)
        return eo_fail(ctx, EO_ERR_ARG, "maxpool2d: NULL output pointer");
    eo_tensor *h[1] = { x }; /* bf16 / f16: through f32 (core/op_cast.c) */
    EO_HALF_FALLBACK(ctx, "maxpool2d", h, 1, 0, out, eo_maxpool2d(ctx, h[0], k, out));
    EO_CHECK(eo_expect(ctx, "maxpool2d", x, EO_F32));
    if (k < 1)
        return eo_fail(ctx, EO_ERR_ARG, "maxpool2d: kernel size k must be >= 1, got %d", k);
    if (x->rank != 4 || x->shape[2] < k || x->shape[3] < k)
        return eo_fail(ctx, EO_ERR_SHAPE,
                       "maxpool2d: expected x [N, C, H, W] with H, W >= k = %d, got %T", k, x);
    /* The argmax is an i32 index into an H×W plane. */
    int64_t plane;
    if (eo_mul_overflows(x->shape[2], x->shape[3], &plane) || plane > INT32_MAX)
        return eo_fail(ctx, EO_ERR_SHAPE,
                       "maxpool2d: planes of %T have more than %d pixels (argmax is i32)", x,
                       (int)INT32_MAX);
    EO_CHECK(eo_contiguous(ctx, x, &x));
    const eo_backend *be = eo_backend_of(ctx, x);
    EO_NEED_KERNEL(ctx, "maxpool2d", be, maxpool2d);
    int64_t P = x->shape[0] * x->shape[1], H = x->shape[2], W = x->shape[3];
    int64_t shape[4] = { x->shape[0], x->shape[1], H / k, W / k };
    eo_tensor *y, *arg;
    EO_CHECK(eo_new_out(ctx, x->device, EO_F32, 4, shape, &y));
    EO_CHECK(eo_new_out(ctx, x->device, EO_I32, 4, shape, &arg));
    be->maxpool2d(P, H, W, k, x->data, y->data, arg->data, &ctx->exec);
    if (eo_needs_grad(ctx, &x, 1)) {
        eo_node *nd;
        EO_CHECK(eo_record(ctx, EO_OP_MAXPOOL2D, &x, 1, y, &nd));
        nd->saved[0] = arg;
        nd->p.pool.k = k;
    }
    *out = y;
    return EO_OK;
}

eo_status eo_bwd_maxpool2d(eo_ctx *ctx, eo_node *n)
{
    eo_tensor *x = n->in[0], *g;
    if (!x->requires_grad)
        return EO_OK;
    const eo_backend *be = eo_backend_of(ctx, x);
    EO_NEED_KERNEL(ctx, "maxpool2d", be, maxpool2d_backward);
    EO_CHECK(eo_grad_of(ctx, x, &g));
    be->maxpool2d_backward(x->shape[0] * x->shape[1], x->shape[2], x->shape[3], n->p.pool.k,
                           n->out->grad->data, n->saved[0]->data, g->data, &ctx->exec);
    return EO_OK;
}
