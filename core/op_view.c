/* core/op_view.c — reshape, permute/transpose, slice, contiguous, concat.
 *
 * A view is new metadata over the same data: a shape, strides and a start
 * offset. Views cost nothing, which is why attention can split heads with
 * reshape + transpose instead of copying.
 *
 * The backward of every view is the same idea: take the input's gradient
 * buffer (contiguous, the input's shape), apply the *same* view to it, and
 * add the output's gradient into that view. Each output element lands
 * exactly on the input element it was read from. */
#include "core/internal.h"

/* Apply view parameters `p` to `base`, giving `v` (metadata only). For a
 * reshape, `shape` is the new shape; for a slice, shape[axis] is the new
 * length. */
static void view_of(const eo_tensor *base, const eo_op_params *p, int rank,
                    const int64_t *shape, eo_tensor *v)
{
    *v = *base;
    v->grad = NULL;
    v->node = NULL;
    v->requires_grad = 0;
    v->name = NULL;
    /* A parameter's 16-bit working copy (autocast.c) has the parameter's
     * shape, not this view's: a view that kept it would be read as the
     * whole parameter (a transpose ignored, a slice at full length). The
     * view is cast on use instead, through its own shape and strides. */
    v->low = NULL;
    switch (p->view.kind) {
    case EO_VIEW_RESHAPE:
        v->rank = rank;
        for (int i = 0; i < rank; i++)
            v->shape[i] = shape[i];
        eo_contiguous_strides(rank, v->shape, v->stride);
        break;
    case EO_VIEW_PERMUTE:
        for (int i = 0; i < base->rank; i++) {
            v->shape[i] = base->shape[p->view.perm[i]];
            v->stride[i] = base->stride[p->view.perm[i]];
        }
        break;
    case EO_VIEW_SLICE:
        v->shape[p->view.axis] = shape[p->view.axis];
        v->data = (char *)base->data +
                  p->view.start * base->stride[p->view.axis] * (int64_t)eo_dtype_size(base->dtype);
        break;
    }
}

/* out += src elementwise, where out may be any strided view (of any
 * float dtype: views of bf16 and f16 tensors are views too). */
static eo_status accumulate_into(eo_ctx *ctx, const eo_tensor *dst, const eo_tensor *src)
{
    return eo_accumulate_any(ctx, dst, src);
}

static eo_status make_view(eo_ctx *ctx, eo_tensor *x, eo_op_params p, int rank,
                           const int64_t *shape, eo_tensor **out)
{
    eo_tensor *v;
    EO_CHECK(eo_host_alloc(ctx, EO_STEP, sizeof *v, (void **)&v));
    view_of(x, &p, rank, shape, v);
    v->lifetime = EO_STEP;
    if (eo_needs_grad(ctx, &x, 1)) {
        eo_node *n;
        EO_CHECK(eo_record(ctx, EO_OP_VIEW, &x, 1, v, &n));
        n->p = p;
    }
    *out = v;
    return EO_OK;
}

/* A chain of views (q = transpose(slice(reshape(qkv)))) would pass its
 * gradient down one buffer per link: a copy into the transposed view's
 * gradient, then an add of that into the slice of the next. While the
 * tensors in between have no gradient yet (nothing else has used them),
 * the chain is applied at once to the deepest one's gradient instead, and
 * the output's gradient added straight into it: a skipped tensor that is
 * used elsewhere later still gets its own gradient, and its view's rule
 * adds that in, so every contribution arrives. Returns 0 when the chain
 * is a single link or cannot be composed (a reshape of a view that is not
 * contiguous in the composed gradient), and the rule goes link by link. */
enum { VIEW_CHAIN_MAX = 8 };

static int chain_backward(eo_ctx *ctx, eo_node *n, eo_status *s)
{
    const eo_node *link[VIEW_CHAIN_MAX];
    int len = 0;
    eo_tensor *root = n->in[0];
    link[len++] = n;
    while (len < VIEW_CHAIN_MAX && !root->grad && root->node && root->node->op == EO_OP_VIEW &&
           root->node->in[0]->requires_grad) {
        link[len++] = root->node;
        root = root->node->in[0];
    }
    if (len == 1)
        return 0;
    eo_tensor *g, v, w;
    if (!root->grad) { /* only the layout matters here: zeros come below */
        eo_tensor probe = *root;
        eo_contiguous_strides(probe.rank, probe.shape, probe.stride);
        v = probe;
    } else {
        v = *root->grad;
    }
    for (int i = len - 1; i >= 0; i--) {
        if (link[i]->p.view.kind == EO_VIEW_RESHAPE && !eo_is_contiguous(&v))
            return 0;
        view_of(&v, &link[i]->p, link[i]->out->rank, link[i]->out->shape, &w);
        v = w;
    }
    *s = eo_grad_of(ctx, root, &g);
    if (*s != EO_OK)
        return 1;
    /* The same composition over the real buffer. */
    v = *g;
    for (int i = len - 1; i >= 0; i--) {
        view_of(&v, &link[i]->p, link[i]->out->rank, link[i]->out->shape, &w);
        v = w;
    }
    *s = accumulate_into(ctx, &v, n->out->grad);
    return 1;
}

eo_status eo_bwd_view(eo_ctx *ctx, eo_node *n)
{
    eo_tensor *x = n->in[0], *g, v;
    if (!x->requires_grad)
        return EO_OK;
    eo_status s;
    if (n->p.view.kind != EO_VIEW_RESHAPE && chain_backward(ctx, n, &s))
        return s;
    /* A reshape's gradient is the output's, read in the input's shape:
     * taken, not added (eo_grad_add). A permutation's fresh gradient is
     * written through the view: every element is hit once, so no zero
     * fill is needed. A slice's covers part of x and keeps zero + add. */
    if (n->p.view.kind == EO_VIEW_RESHAPE && eo_grad_passes(x, n->out->grad))
        return eo_grad_add(ctx, x, n->out->grad, 1);
    float beta = 1.0f; /* 0: a fresh gradient, written and not added to */
    if (n->p.view.kind == EO_VIEW_PERMUTE)
        EO_CHECK(eo_grad_for_write(ctx, x, &g, &beta));
    else
        EO_CHECK(eo_grad_of(ctx, x, &g));
    view_of(g, &n->p, n->out->rank, n->out->shape, &v);
    return beta == 0.0f ? eo_copy_any(ctx, &v, n->out->grad) : accumulate_into(ctx, &v, n->out->grad);
}

EO_PUBLIC(contiguous, (eo_ctx *ctx, eo_tensor *x, eo_tensor **out), (ctx, x, out))
{
    if (!out)
        return eo_fail(ctx, EO_ERR_ARG, "contiguous: NULL output pointer");
    EO_CHECK(eo_expect_any(ctx, "contiguous", x));
    if (eo_is_contiguous(x)) {
        *out = x;
        return EO_OK;
    }
    /* Elements of 2 bytes (bf16, f16) go through the cast kernel as a bit
     * copy; 4-byte ones (f32, i32) through copy32 (eo_copy_any). */
    eo_tensor *y;
    EO_CHECK(eo_new_out(ctx, x->device, x->dtype, x->rank, x->shape, &y));
    EO_CHECK(eo_copy_any(ctx, y, x));
    if (eo_needs_grad(ctx, &x, 1))
        EO_CHECK(eo_record(ctx, EO_OP_COPY, &x, 1, y, NULL));
    *out = y;
    return EO_OK;
}

/* The bytes [lo, hi) a view can touch: its strides are never negative
 * (views permute and slice; none reverses), so from data to data plus
 * the last element's offset. */
static void byte_span(const eo_tensor *t, uintptr_t *lo, uintptr_t *hi)
{
    const int64_t es = (int64_t)eo_dtype_size(t->dtype);
    int64_t last = 0;
    for (int i = 0; i < t->rank; i++) {
        if (t->shape[i] == 0) {
            *lo = *hi = (uintptr_t)t->data;
            return;
        }
        last += (t->shape[i] - 1) * t->stride[i]; /* within the base's extent: no wrap */
    }
    *lo = (uintptr_t)t->data;
    *hi = *lo + (uintptr_t)((last + 1) * es);
}

/* Whether dst and src share bytes, other than as the very same view
 * (a copy onto itself, which changes nothing). */
static int overlaps(const eo_tensor *dst, const eo_tensor *src)
{
    uintptr_t a0, a1, b0, b1;
    byte_span(dst, &a0, &a1);
    byte_span(src, &b0, &b1);
    if (a0 >= b1 || b0 >= a1)
        return 0;
    for (int i = 0; i < dst->rank; i++)
        if (dst->stride[i] != src->stride[i])
            return 1;
    return dst->data != src->data;
}

EO_PUBLIC(copy_into, (eo_ctx *ctx, eo_tensor *dst, eo_tensor *src), (ctx, dst, src))
{
    if (!dst || !src)
        return eo_fail(ctx, EO_ERR_ARG, "copy_into: NULL %s", !dst ? "destination (dst)" : "source (src)");
    EO_CHECK(eo_expect_any(ctx, "copy_into", dst));
    EO_CHECK(eo_expect_any(ctx, "copy_into", src));
    EO_CHECK(eo_same_device(ctx, "copy_into", dst, src));
    EO_CHECK(eo_expect_writable(ctx, "copy_into", dst));
    int same = dst->dtype == src->dtype && dst->rank == src->rank && dst->rank <= 4 &&
               eo_dtype_size(dst->dtype) != 0;
    for (int i = 0; same && i < dst->rank; i++)
        same = dst->shape[i] == src->shape[i];
    if (!same)
        return eo_fail(ctx, EO_ERR_SHAPE, "copy_into: %T and %T differ in shape or dtype", dst,
                       src);
    if (!overlaps(dst, src))
        return eo_copy_any(ctx, dst, src);
    /* Two views of one buffer that share bytes (a[:, 1:3] = a[:, 0:2]):
     * copied in place, the first rows written would be read again as
     * source. The source goes through a fresh copy first, so the result
     * is as if all of it had been read before anything was written. */
    eo_tensor *tmp;
    const eo_mark m = eo_mark_get(ctx);
    eo_status st = eo_new_out(ctx, src->device, src->dtype, src->rank, src->shape, &tmp);
    if (st == EO_OK)
        st = eo_copy_any(ctx, tmp, src);
    if (st == EO_OK)
        st = eo_copy_any(ctx, dst, tmp);
    eo_rewind(ctx, m); /* nothing was recorded: only the scratch goes */
    return st;
}

eo_status eo_bwd_copy(eo_ctx *ctx, eo_node *n)
{
    eo_tensor *g;
    if (!n->in[0]->requires_grad)
        return EO_OK;
    if (eo_grad_passes(n->in[0], n->out->grad)) /* taken, not added */
        return eo_grad_add(ctx, n->in[0], n->out->grad, 1);
    EO_CHECK(eo_grad_of(ctx, n->in[0], &g));
    return accumulate_into(ctx, g, n->out->grad);
}

EO_PUBLIC(reshape, (eo_ctx *ctx, eo_tensor *x, int rank, const int64_t *shape, eo_tensor **out),
          (ctx, x, rank, shape, out))
{
    if (!out || (rank > 0 && !shape))
        return eo_fail(ctx, EO_ERR_ARG, "reshape: NULL shape or output pointer");
    EO_CHECK(eo_expect_any(ctx, "reshape", x));
    if (rank < 0 || rank > EO_MAX_RANK)
        return eo_fail(ctx, EO_ERR_AXIS, "reshape: rank %d outside 0..%d", rank, EO_MAX_RANK);
    int64_t s[EO_MAX_RANK], known = 1;
    int infer = -1;
    for (int i = 0; i < rank; i++) {
        s[i] = shape[i];
        if (s[i] == -1 && infer < 0)
            infer = i;
        else if (s[i] < 0)
            return eo_fail(ctx, EO_ERR_SHAPE, "reshape: bad size %lld on axis %d",
                           (long long)s[i], i);
        else if (eo_mul_overflows(known, s[i], &known))
            return eo_fail(ctx, EO_ERR_SHAPE,
                           "reshape: the new shape's element count overflows at axis %d (%lld) "
                           "for %T",
                           i, (long long)s[i], x);
    }
    int64_t n = eo_numel(x);
    if (infer >= 0)
        s[infer] = known ? n / known : 0;
    int64_t total = known * (infer >= 0 ? s[infer] : 1); /* <= n when inferred: no wrap */
    if (total != n)
        return eo_fail(ctx, EO_ERR_SHAPE,
                       "reshape: %T has %lld elements, the new shape has %lld", x, (long long)n,
                       (long long)total);
    if (eo_shape_extent_overflows(rank, s, eo_dtype_size(x->dtype))) /* empty, huge sides */
        return eo_fail(ctx, EO_ERR_SHAPE,
                       "reshape: %T: the new shape's strides would pass %zu bytes (sizes "
                       "multiplied with each 0 taken as 1)", x, (size_t)PTRDIFF_MAX);
    EO_CHECK(eo_contiguous(ctx, x, &x));
    eo_op_params p = {0};
    p.view.kind = EO_VIEW_RESHAPE;
    return make_view(ctx, x, p, rank, s, out);
}

EO_PUBLIC(permute, (eo_ctx *ctx, eo_tensor *x, const int *perm, eo_tensor **out),
          (ctx, x, perm, out))
{
    if (!perm || !out)
        return eo_fail(ctx, EO_ERR_ARG, "permute: NULL %s", !perm ? "permutation" : "output pointer");
    EO_CHECK(eo_expect_any(ctx, "permute", x));
    eo_op_params p = {0};
    p.view.kind = EO_VIEW_PERMUTE;
    int seen = 0;
    for (int i = 0; i < x->rank; i++) {
        if (perm[i] < 0 || perm[i] >= x->rank || (seen >> perm[i]) & 1)
            return eo_fail(ctx, EO_ERR_AXIS, "permute: %T: entry %d (%d) is not a permutation",
                           x, i, perm[i]);
        seen |= 1 << perm[i];
        p.view.perm[i] = perm[i];
    }
    return make_view(ctx, x, p, x->rank, x->shape, out);
}

EO_PUBLIC(transpose, (eo_ctx *ctx, eo_tensor *x, int axis0, int axis1, eo_tensor **out),
          (ctx, x, axis0, axis1, out))
{
    if (!out)
        return eo_fail(ctx, EO_ERR_ARG, "transpose: NULL output pointer");
    EO_CHECK(eo_expect_any(ctx, "transpose", x));
    int a = eo_axis(axis0, x->rank), b = eo_axis(axis1, x->rank);
    if (a < 0 || b < 0)
        return eo_fail(ctx, EO_ERR_AXIS, "transpose: axes %d, %d out of range for %T", axis0,
                       axis1, x);
    int perm[EO_MAX_RANK];
    for (int i = 0; i < EO_MAX_RANK; i++)
        perm[i] = i;
    perm[a] = b;
    perm[b] = a;
    return eo_permute(ctx, x, perm, out);
}

EO_PUBLIC(slice, (eo_ctx *ctx, eo_tensor *x, int axis, int64_t start, int64_t len,
                 eo_tensor **out),
          (ctx, x, axis, start, len, out))
{
    if (!out)
        return eo_fail(ctx, EO_ERR_ARG, "slice: NULL output pointer");
    EO_CHECK(eo_expect_any(ctx, "slice", x));
    int a = eo_axis(axis, x->rank);
    if (a < 0)
        return eo_fail(ctx, EO_ERR_AXIS, "slice: axis %d out of range for %T", axis, x);
    /* len > size - start, not start + len > size: the sum can wrap. */
    if (start < 0 || len < 0 || start > x->shape[a] || len > x->shape[a] - start)
        return eo_fail(ctx, EO_ERR_SHAPE,
                       "slice: start %lld, length %lld do not fit in 0..%lld on axis %d of %T",
                       (long long)start, (long long)len, (long long)x->shape[a], a, x);
    eo_op_params p = {0};
    p.view.kind = EO_VIEW_SLICE;
    p.view.axis = a;
    p.view.start = start;
    int64_t shape[EO_MAX_RANK];
    for (int i = 0; i < x->rank; i++)
        shape[i] = x->shape[i];
    shape[a] = len;
    return make_view(ctx, x, p, x->rank, shape, out);
}

/* ---- concat: copy each input into its slice of the output ------------- */

EO_PUBLIC(concat, (eo_ctx *ctx, eo_tensor *const *xs, int n, int axis, eo_tensor **out),
          (ctx, xs, n, axis, out))
{
    if (!xs || !out)
        return eo_fail(ctx, EO_ERR_ARG, "concat: NULL %s", !xs ? "tensor array" : "output pointer");
    if (n < 1 || n > EO_NODE_MAX_IN)
        return eo_fail(ctx, EO_ERR_ARG, "concat: need 1..%d tensors, got %d", EO_NODE_MAX_IN, n);
    for (int i = 0; i < n; i++)
        EO_CHECK(eo_expect_any(ctx, "concat", xs[i]));
    const eo_tensor *x0 = xs[0];
    int a = eo_axis(axis, x0->rank);
    if (a < 0)
        return eo_fail(ctx, EO_ERR_AXIS, "concat: axis %d out of range for %T", axis, x0);
    int64_t shape[EO_MAX_RANK];
    for (int i = 0; i < x0->rank; i++)
        shape[i] = x0->shape[i];
    shape[a] = 0;
    for (int k = 0; k < n; k++) {
        const eo_tensor *x = xs[k];
        EO_CHECK(eo_same_device(ctx, "concat", x0, x));
        if (x->dtype != x0->dtype || x->rank != x0->rank)
            return eo_fail(ctx, EO_ERR_SHAPE, "concat: %T and %T differ in dtype or rank", x0, x);
        for (int i = 0; i < x0->rank; i++)
            if (i != a && x->shape[i] != x0->shape[i])
                return eo_fail(ctx, EO_ERR_SHAPE,
                               "concat: %T and %T differ on axis %d (joining along %d)", x0, x,
                               i, a);
        if (eo_add_overflows(shape[a], x->shape[a], &shape[a]))
            return eo_fail(ctx, EO_ERR_SHAPE, "concat: the joined size of axis %d overflows at %T",
                           a, x);
    }
    eo_tensor *y;
    EO_CHECK(eo_new_out(ctx, x0->device, x0->dtype, x0->rank, shape, &y));
    eo_op_params p = {0};
    p.view.kind = EO_VIEW_SLICE;
    p.view.axis = a;
    for (int k = 0; k < n; k++) {
        eo_tensor part;
        view_of(y, &p, y->rank, xs[k]->shape, &part);
        EO_CHECK(eo_copy_any(ctx, &part, xs[k]));
        p.view.start += xs[k]->shape[a];
    }
    if (eo_needs_grad(ctx, xs, n)) {
        eo_node *nd;
        EO_CHECK(eo_record(ctx, EO_OP_CONCAT, xs, n, y, &nd));
        nd->p.concat.axis = a;
    }
    *out = y;
    return EO_OK;
}

eo_status eo_bwd_concat(eo_ctx *ctx, eo_node *n)
{
    eo_op_params p = {0};
    p.view.kind = EO_VIEW_SLICE;
    p.view.axis = n->p.concat.axis;
    for (int k = 0; k < n->n_in; k++) {
        eo_tensor *x = n->in[k], *g, part;
        if (x->requires_grad) {
            EO_CHECK(eo_grad_of(ctx, x, &g));
            view_of(n->out->grad, &p, x->rank, x->shape, &part);
            EO_CHECK(accumulate_into(ctx, g, &part));
        }
        p.view.start += x->shape[p.view.axis];
    }
    return EO_OK;
}
