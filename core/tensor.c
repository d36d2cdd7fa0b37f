/* core/tensor.c — making tensors, moving their data, and the checks every
 * op shares.
 *
 * A tensor's metadata (this struct) always lives in host memory, in the
 * arena of its lifetime; its data lives on its device — the same arena for
 * CPU tensors, the matching device arena for CUDA tensors. */
#include <string.h>
#include "core/internal.h"

size_t eo_dtype_size(eo_dtype dt)
{
    switch (dt) {
    case EO_F32: case EO_I32: return 4;
    case EO_BF16: case EO_F16: return 2;
    default: return 0;
    }
}

int64_t eo_numel(const eo_tensor *t)
{
    /* Every tensor was checked when made (tensor_meta): no wrap here. */
    int64_t n = 1;
    if (!t)
        return 0;
    for (int i = 0; i < t->rank; i++)
        n *= t->shape[i];
    return n;
}

int eo_shape_numel(int rank, const int64_t *shape, int64_t *n)
{
    int64_t p = 1;
    for (int i = 0; i < rank; i++)
        if (shape[i] < 0 || eo_mul_overflows(p, shape[i], &p))
            return 1;
    *n = p;
    return 0;
}

int eo_shape_extent_overflows(int rank, const int64_t *shape, size_t elem)
{
    int64_t p = 1;
    size_t bytes;
    for (int i = 0; i < rank; i++)
        if (eo_mul_overflows(p, shape[i] > 0 ? shape[i] : 1, &p))
            return 1;
    return eo_bytes_overflow(p, elem, &bytes);
}

/* Every shape that reaches here has passed eo_shape_extent_overflows (a
 * new tensor, a reshape), so s never wraps, zero sizes included. */
void eo_contiguous_strides(int rank, const int64_t *shape, int64_t *stride)
{
    int64_t s = 1;
    for (int i = rank - 1; i >= 0; i--) {
        stride[i] = s;
        s *= shape[i];
    }
}

int eo_is_contiguous(const eo_tensor *t)
{
    int64_t s = 1;
    if (!t)
        return 0;
    for (int i = t->rank - 1; i >= 0; i--) {
        if (t->shape[i] != 1 && t->stride[i] != s)
            return 0;
        s *= t->shape[i];
    }
    return 1;
}

void eo_pad4(const eo_tensor *t, int64_t shape[4], int64_t stride[4])
{
    int lead = 4 - t->rank;
    for (int i = 0; i < 4; i++) {
        shape[i] = i < lead ? 1 : t->shape[i - lead];
        stride[i] = i < lead ? 0 : t->stride[i - lead];
    }
}

int eo_axis(int axis, int rank)
{
    if (axis < 0)
        axis += rank;
    return (axis >= 0 && axis < rank) ? axis : -1;
}

const eo_backend *eo_backend_of(eo_ctx *ctx, const eo_tensor *t)
{
    return ctx->backend[t->device];
}

static eo_arena *data_arena(eo_ctx *ctx, eo_lifetime life, eo_device dev)
{
    if (dev == EO_CPU)
        return life == EO_PERSIST ? &ctx->persist : &ctx->step;
    return life == EO_PERSIST ? &ctx->dev_persist : &ctx->dev_step;
}

static eo_status arena_take(eo_ctx *ctx, eo_arena *a, size_t bytes, void **out)
{
    eo_status s = eo_arena_alloc(a, bytes, EO_ARENA_ALIGN, out);
    if (s == EO_ERR_OOM) /* eo_fail puts the caller's op first */
        return eo_fail(ctx, s, "arena '%s': need %zu bytes, %zu free of %zu", a->name,
                       a->fail_need, a->fail_free, a->cap);
    return s;
}

eo_status eo_host_alloc(eo_ctx *ctx, eo_lifetime life, size_t bytes, void **out)
{
    return arena_take(ctx, life == EO_PERSIST ? &ctx->persist : &ctx->step, bytes, out);
}

eo_status eo_scratch(eo_ctx *ctx, eo_device dev, size_t bytes, void **out)
{
    return arena_take(ctx, data_arena(ctx, EO_STEP, dev), bytes, out);
}

eo_status eo_lend(eo_ctx *ctx, eo_device dev, size_t bytes, eo_lent *l)
{
    l->ar = data_arena(ctx, EO_STEP, dev);
    l->mark = eo_arena_mark_get(l->ar);
    l->p = NULL;
    return arena_take(ctx, l->ar, bytes, &l->p);
}

void eo_give_back(const eo_lent *l)
{
    eo_arena_rewind(l->ar, l->mark);
}

/* "[2x3]" for a shape that has no tensor yet (messages only). */
static const char *shape_text(char *buf, size_t cap, int rank, const int64_t *shape)
{
    size_t n = eo_format(buf, cap, "[");
    for (int i = 0; i < rank && n < cap; i++)
        n += eo_format(buf + n, cap - n, i ? "x%lld" : "%lld", (long long)shape[i]);
    if (n < cap)
        eo_format(buf + n, cap - n, "]");
    return buf;
}

/* Validate a shape and make the metadata struct (no data yet). Every
 * tensor is made here (views copy a checked one), so every tensor's
 * element count fits int64 and its bytes fit PTRDIFF_MAX: nothing that
 * multiplies a tensor's sizes later can wrap. The messages name no op
 * of their own: eo_fail puts the caller's first. */
static eo_status tensor_meta(eo_ctx *ctx, eo_lifetime life, eo_device device, eo_dtype dtype,
                             int rank, const int64_t *shape, eo_tensor **out)
{
    if (!out || (rank > 0 && !shape))
        return eo_fail(ctx, EO_ERR_ARG, "NULL %s", out ? "shape" : "output pointer");
    *out = NULL;
    if (rank < 0 || rank > EO_MAX_RANK)
        return eo_fail(ctx, EO_ERR_AXIS, "rank %d outside 0..%d", rank, EO_MAX_RANK);
    if ((unsigned)device >= EO_DEVICE_COUNT)
        return eo_fail(ctx, EO_ERR_DEVICE, "unknown device %d (EO_CPU or EO_CUDA)", (int)device);
    if (!ctx->backend[device])
        return eo_fail(ctx, EO_ERR_DEVICE, "device %s is not open%s", eo_device_name(device),
                       device == EO_CUDA ? " (eo_cuda_attach opens it)" : "");
    if (eo_dtype_size(dtype) == 0)
        return eo_fail(ctx, EO_ERR_DTYPE, "unknown dtype %d (EO_F32, EO_I32, EO_BF16 or EO_F16)",
                       (int)dtype);
    char text[96];
    for (int i = 0; i < rank; i++)
        if (shape[i] < 0)
            return eo_fail(ctx, EO_ERR_SHAPE, "negative size %lld on axis %d of %s",
                           (long long)shape[i], i, shape_text(text, sizeof text, rank, shape));
    int64_t n;
    size_t bytes;
    if (eo_shape_numel(rank, shape, &n) || eo_bytes_overflow(n, eo_dtype_size(dtype), &bytes))
        return eo_fail(ctx, EO_ERR_SHAPE,
                       "a %s %s tensor is too large: more than %zu bytes",
                       shape_text(text, sizeof text, rank, shape), eo_dtype_name(dtype),
                       (size_t)PTRDIFF_MAX);
    if (eo_shape_extent_overflows(rank, shape, eo_dtype_size(dtype)))
        return eo_fail(ctx, EO_ERR_SHAPE,
                       "a %s %s tensor is empty, but its strides would pass %zu bytes "
                       "(sizes multiplied with each 0 taken as 1)",
                       shape_text(text, sizeof text, rank, shape), eo_dtype_name(dtype),
                       (size_t)PTRDIFF_MAX);
    if (life != EO_STEP && life != EO_PERSIST)
        return eo_fail(ctx, EO_ERR_ARG, "lifetime %d is neither EO_STEP nor EO_PERSIST", (int)life);
    eo_tensor *t;
    EO_CHECK(eo_host_alloc(ctx, life, sizeof *t, (void **)&t));
    eo_tensor zero = {0};
    *t = zero;
    t->dtype = dtype;
    t->device = device;
    t->attach = device == EO_CUDA ? ctx->cuda_attach : 0; /* see eo_expect_live */
    t->rank = rank;
    t->lifetime = (uint8_t)life;
    for (int i = 0; i < rank; i++)
        t->shape[i] = shape[i];
    eo_contiguous_strides(rank, t->shape, t->stride);
    *out = t;
    return EO_OK;
}

/* The allocation behind eo_tensor_new and eo_new_out; an out-of-memory
 * message names ctx->op, the op that asked. */
static eo_status tensor_new(eo_ctx *ctx, eo_lifetime life, eo_device device, eo_dtype dtype,
                            int rank, const int64_t *shape, eo_tensor **out)
{
    eo_tensor *t;
    /* tensor_meta sees only the local &t, so the caller's `out` is checked
     * here: a NULL out must be EO_ERR_ARG, not a store through NULL. */
    if (!out)
        return eo_fail(ctx, EO_ERR_ARG, "NULL output pointer");
    EO_CHECK(tensor_meta(ctx, life, device, dtype, rank, shape, &t));
    /* Storage is a whole number of 4-byte words (a bf16 or f16 tensor of
     * odd length gets 2 bytes more), so a backend may clear it in words:
     * the CUDA driver's memset is 32-bit. bytes <= PTRDIFF_MAX: no wrap. */
    size_t bytes = ((size_t)eo_numel(t) * eo_dtype_size(dtype) + 3) & ~(size_t)3;
    EO_CHECK(arena_take(ctx, data_arena(ctx, life, device), bytes, &t->data));
    *out = t;
    return EO_OK;
}

EO_PUBLIC(tensor_new, (eo_ctx *ctx, eo_lifetime life, eo_device device, eo_dtype dtype,
                      int rank, const int64_t *shape, eo_tensor **out),
          (ctx, life, device, dtype, rank, shape, out))
{
    return tensor_new(ctx, life, device, dtype, rank, shape, out);
}

eo_status eo_new_zeros(eo_ctx *ctx, eo_lifetime life, eo_device device, eo_dtype dtype, int rank,
                       const int64_t *shape, eo_tensor **out)
{
    EO_CHECK(tensor_new(ctx, life, device, dtype, rank, shape, out));
    return ctx->backend[device]->zero(ctx, (*out)->data,
                                      (size_t)eo_numel(*out) * eo_dtype_size(dtype));
}

EO_PUBLIC(tensor_zeros, (eo_ctx *ctx, eo_lifetime life, eo_device device, eo_dtype dtype,
                        int rank, const int64_t *shape, eo_tensor **out),
          (ctx, life, device, dtype, rank, shape, out))
{
    return eo_new_zeros(ctx, life, device, dtype, rank, shape, out);
}

EO_PUBLIC(tensor_wrap, (eo_ctx *ctx, eo_dtype dtype, int rank, const int64_t *shape, void *data,
                       eo_tensor **out),
          (ctx, dtype, rank, shape, data, out))
{
    if (!data)
        return eo_fail(ctx, EO_ERR_ARG, "tensor_wrap: NULL data");
    EO_CHECK(tensor_meta(ctx, EO_STEP, EO_CPU, dtype, rank, shape, out));
    (*out)->data = data;
    return EO_OK;
}

eo_status eo_new_out(eo_ctx *ctx, eo_device dev, eo_dtype dt, int rank, const int64_t *shape,
                     eo_tensor **out)
{
    return tensor_new(ctx, EO_STEP, dev, dt, rank, shape, out);
}

EO_PUBLIC(set_requires_grad, (eo_ctx *ctx, eo_tensor *t, int on), (ctx, t, on))
{
    EO_CHECK(eo_expect_any(ctx, "set_requires_grad", t));
    if (!eo_is_float(t->dtype))
        return eo_fail(ctx, EO_ERR_DTYPE, "set_requires_grad: %T: only f32, bf16 and f16 tensors "
                                          "have gradients", t);
    if (t->node)
        return eo_fail(ctx, EO_ERR_STATE, "set_requires_grad: %T is an op's output, not a leaf "
                                          "(its mode comes from its inputs)", t);
    if (on)
        EO_CHECK(eo_expect_writable(ctx, "set_requires_grad", t));
    t->requires_grad = on ? 1 : 0;
    return EO_OK;
}

EO_PUBLIC(param_new, (eo_ctx *ctx, eo_device device, const char *name, int rank,
                     const int64_t *shape, eo_tensor **out),
          (ctx, device, name, rank, shape, out))
{
    eo_tensor *t, *g;
    if (!out)
        return eo_fail(ctx, EO_ERR_ARG, "param_new: NULL output pointer");
    EO_CHECK(eo_new_zeros(ctx, EO_PERSIST, device, EO_F32, rank, shape, &t));
    EO_CHECK(eo_new_zeros(ctx, EO_PERSIST, device, EO_F32, rank, shape, &g));
    t->requires_grad = 1;
    t->grad = g;
    t->name = name;
    *out = t;
    return EO_OK;
}

int eo_in_step_arena(const eo_ctx *ctx, const void *p)
{
    uintptr_t a = (uintptr_t)p;
    return a >= ctx->step.base && a - ctx->step.base < ctx->step.cap;
}

int eo_is_rewound(const eo_ctx *ctx, const void *p, size_t bytes)
{
    if (!eo_in_step_arena(ctx, p))
        return 0;
    size_t off = (size_t)((uintptr_t)p - ctx->step.base), used = ctx->step.used;
    return off > used || bytes > used - off;
}

eo_status eo_expect_live(eo_ctx *ctx, const char *op, const eo_tensor *t)
{
    if (!t)
        return EO_OK;
    /* A CUDA tensor of an attach that has ended: its data was freed with
     * the device arenas, and after a new attach the same addresses may be
     * someone else's. Asked before the backend, so a detached context says
     * STATE (a stale handle), not DEVICE (never attached). */
    if (t->device == EO_CUDA && t->attach != ctx->cuda_attach)
        return eo_fail(ctx, EO_ERR_STATE, "%s: %T is a CUDA tensor of an earlier eo_cuda_attach "
                                          "(the device was detached since): its device memory "
                                          "is gone", op, t);
    if ((unsigned)t->device >= EO_DEVICE_COUNT)
        return eo_fail(ctx, EO_ERR_DEVICE, "%s: a tensor on unknown device %d", op,
                       (int)t->device);
    if (!ctx->backend[t->device])
        return eo_fail(ctx, EO_ERR_DEVICE, "%s: %T is on device %s, which is not open", op, t,
                       eo_device_name(t->device));
    return EO_OK;
}

eo_status eo_expect_any(eo_ctx *ctx, const char *op, const eo_tensor *t)
{
    if (!ctx)
        return EO_ERR_ARG;
    if (!t)
        return eo_fail(ctx, EO_ERR_ARG, "%s: NULL tensor", op);
    /* A handle made after the mark an eo_rewind went back to: its header is
     * past the step arena's top, free to be handed out again. (One the
     * next step has already written over cannot be told from a live one.) */
    if (eo_is_rewound(ctx, t, sizeof *t))
        return eo_fail(ctx, EO_ERR_STATE, "%s: a tensor made after the mark the step arena was "
                                          "rewound to (eo_rewind): its handle is no longer valid",
                       op);
    /* Only a tensor changed by hand gets here with these: refuse it before
     * anything reads its shape or its backend. */
    if (t->rank < 0 || t->rank > EO_MAX_RANK)
        return eo_fail(ctx, EO_ERR_AXIS, "%s: a tensor of rank %d (ranks are 0..%d)", op,
                       t->rank, EO_MAX_RANK);
    if ((unsigned)t->device >= EO_DEVICE_COUNT)
        return eo_fail(ctx, EO_ERR_DEVICE, "%s: a tensor on unknown device %d", op,
                       (int)t->device);
    EO_CHECK(eo_expect_live(ctx, op, t)); /* stale (STATE) before not open (DEVICE) */
    if (eo_dtype_size(t->dtype) == 0)
        return eo_fail(ctx, EO_ERR_DTYPE, "%s: a tensor of unknown dtype %d", op, (int)t->dtype);
    int64_t n;
    if (eo_shape_numel(t->rank, t->shape, &n) ||
        eo_shape_extent_overflows(t->rank, t->shape, eo_dtype_size(t->dtype)))
        return eo_fail(ctx, EO_ERR_SHAPE, "%s: a tensor of rank %d with a negative or too large "
                                          "size (not made by eo_tensor_new?)", op, t->rank);
    if (!t->data && t->readonly)
        return eo_fail(ctx, EO_ERR_STATE, "%s: %s %T has no data (a borrowed parameter: bind "
                                          "an image with eo_weights_bind first)", op,
                       t->name ? t->name : "tensor", t);
    if (!t->data && n > 0)
        return eo_fail(ctx, EO_ERR_STATE, "%s: %T has no data (a tensor not made by "
                                          "eo_tensor_new or eo_tensor_wrap?)", op, t);
    return EO_OK;
}

eo_status eo_expect(eo_ctx *ctx, const char *op, const eo_tensor *t, eo_dtype dt)
{
    EO_CHECK(eo_expect_any(ctx, op, t));
    if (t->dtype != dt)
        return eo_fail(ctx, EO_ERR_DTYPE, "%s: expected %s, got %T", op, eo_dtype_name(dt), t);
    return EO_OK;
}

eo_status eo_same_device(eo_ctx *ctx, const char *op, const eo_tensor *a, const eo_tensor *b)
{
    if (a->device != b->device)
        return eo_fail(ctx, EO_ERR_DEVICE, "%s: inputs on different devices: %T and %T", op, a,
                       b);
    return EO_OK;
}

eo_status eo_unsupported(eo_ctx *ctx, const char *op, const eo_backend *be)
{
    return eo_fail(ctx, EO_ERR_UNSUPPORTED, "%s: not supported by the %s backend", op,
                   be ? be->name : "missing");
}

/* ---- moving data --------------------------------------------------------- */

static eo_status need_contiguous(eo_ctx *ctx, const char *op, const eo_tensor *x)
{
    EO_CHECK(eo_expect_any(ctx, op, x));
    if (!eo_is_contiguous(x))
        return eo_fail(ctx, EO_ERR_ARG, "%s: tensor %T is not contiguous (use eo_contiguous)",
                       op, x);
    return EO_OK;
}

EO_PUBLIC(read, (eo_ctx *ctx, const eo_tensor *x, void *dst, size_t bytes), (ctx, x, dst, bytes))
{
    EO_CHECK(need_contiguous(ctx, "read", x));
    size_t have = (size_t)eo_numel(x) * eo_dtype_size(x->dtype);
    if (!dst)
        return eo_fail(ctx, EO_ERR_ARG, "read: NULL destination (dst) for %T", x);
    if (bytes != have)
        return eo_fail(ctx, EO_ERR_ARG, "read: %T holds %zu bytes, asked for %zu", x, have,
                       bytes);
    return ctx->backend[x->device]->download(ctx, dst, x->data, bytes);
}

EO_PUBLIC(write, (eo_ctx *ctx, eo_tensor *x, const void *src, size_t bytes), (ctx, x, src, bytes))
{
    EO_CHECK(need_contiguous(ctx, "write", x));
    EO_CHECK(eo_expect_writable(ctx, "write", x));
    size_t have = (size_t)eo_numel(x) * eo_dtype_size(x->dtype);
    if (!src)
        return eo_fail(ctx, EO_ERR_ARG, "write: NULL source (src) for %T", x);
    if (bytes != have)
        return eo_fail(ctx, EO_ERR_ARG, "write: %T holds %zu bytes, given %zu", x, have, bytes);
    return ctx->backend[x->device]->upload(ctx, x->data, src, bytes);
}

EO_PUBLIC(fill, (eo_ctx *ctx, eo_tensor *x, float value), (ctx, x, value))
{
    if (x && x->readonly && !x->data)
        return EO_OK; /* a borrowed parameter: its values will come from an image */
    EO_CHECK(need_contiguous(ctx, "fill", x));
    if (!eo_is_float(x->dtype))
        return eo_fail(ctx, EO_ERR_DTYPE, "fill: expected f32, bf16 or f16, got %T", x);
    EO_CHECK(eo_expect_writable(ctx, "fill", x));
    return eo_fill_any(ctx, x, value);
}

EO_PUBLIC(to_device, (eo_ctx *ctx, const eo_tensor *x, eo_device device, eo_lifetime life,
                     eo_tensor **out),
          (ctx, x, device, life, out))
{
    EO_CHECK(need_contiguous(ctx, "to_device", x));
    if (!out)
        return eo_fail(ctx, EO_ERR_ARG, "to_device: NULL output pointer");
    eo_tensor *y;
    EO_CHECK(eo_tensor_new(ctx, life, device, x->dtype, x->rank, x->shape, &y));
    size_t bytes = (size_t)eo_numel(x) * eo_dtype_size(x->dtype);
    if (x->device == EO_CPU && device == EO_CPU)
        memcpy(y->data, x->data, bytes);
    else if (x->device == EO_CPU)
        EO_CHECK(ctx->backend[device]->upload(ctx, y->data, x->data, bytes));
    else if (device == EO_CPU)
        EO_CHECK(ctx->backend[x->device]->download(ctx, y->data, x->data, bytes));
    else
        return eo_fail(ctx, EO_ERR_UNSUPPORTED, "to_device: device to device copy");
    y->name = x->name;
    *out = y;
    return EO_OK;
}

EO_PUBLIC(to_host, (eo_ctx *ctx, const eo_tensor *x, eo_lifetime life, eo_tensor **out),
          (ctx, x, life, out))
{
    return eo_to_device(ctx, x, EO_CPU, life, out);
}
