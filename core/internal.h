/* core/internal.h — what the op files in core/ share: the tape node,
 * op ids generated from ops.def, error reporting, allocation helpers.
 * Not part of the public API. */
#ifndef EO_INTERNAL_H
#define EO_INTERNAL_H

#include <stdarg.h>
#include "alloc/checked.h"
#include "core/everyo.h"
#include "core/backend.h"

/* Op ids, one per line of ops.def. */
typedef enum eo_op_id {
#define EO_OP(ID, name) EO_OP_##ID,
#include "core/ops.def"
#undef EO_OP
    EO_OP_COUNT
} eo_op_id;

extern const char *const eo_op_names[EO_OP_COUNT];

/* What a view op did, so its backward can do the same to the gradient. */
typedef enum { EO_VIEW_RESHAPE, EO_VIEW_PERMUTE, EO_VIEW_SLICE } eo_view_kind;

/* Op parameters: a small typed union, one member per op family. */
typedef union eo_op_params {
    struct { eo_view_kind kind; int perm[EO_MAX_RANK]; int axis; int64_t start; } view;
    struct { int axis; } concat;
    struct { float s; } scale;
    struct { int ta, tb; } matmul;
    struct { int axis; } reduce;
    struct { int32_t ignore_index; int reduction; /* eo_ce_reduction */ } ce;
    struct { float eps; } ln;
    struct { float p; uint64_t seed; } dropout;
    struct { int64_t kh, kw; int pad, stride; } conv;
    struct { int k; } pool;
    struct { int causal; float scale; eo_dtype half; } attn; /* half: 16-bit inputs, widened */
} eo_op_params;

#define EO_NODE_MAX_IN 16 /* concat takes up to 16 inputs */

/* One recorded op. Nodes live in the step arena and link to the previous
 * node, so the tape is already in execution (topological) order and
 * backward is a single reverse walk. */
typedef struct eo_node {
    struct eo_node *prev;
    eo_op_id op;
    int n_in;
    eo_tensor *in[EO_NODE_MAX_IN];
    eo_tensor *out;
    eo_tensor *saved[3];   /* values the backward needs (mean, rstd, argmax, ...) */
    eo_op_params p;
    uint64_t serial;       /* ctx->nodes_recorded when it was made: tells a mark's node
                              from a later one at the same address */
    uint8_t spent;         /* a backward without retain_graph went through it */
    uint8_t on_path;       /* scratch of eo_backward: the loss depends on it */
} eo_node;

/* Backward rules, one per op, named from ops.def. A rule reads
 * n->out->grad and adds into the .grad of each input that requires grad
 * (allocated on first use by eo_grad_of). */
#define EO_OP(ID, name) eo_status eo_bwd_##name(eo_ctx *ctx, eo_node *n);
#include "core/ops.def"
#undef EO_OP

/* ---- public calls ------------------------------------------------------------
 * Every public function that returns a status runs its body inside
 * eo_enter/eo_leave, written once by EO_PUBLIC (or EO_RUN where a family
 * of ops shares one body):
 *  - a NULL ctx returns EO_ERR_ARG: there is nowhere to put a message;
 *  - the caller's own call (depth 1) names itself in ctx->op, and ops it
 *    calls inside do not rename it, so every message of the call starts
 *    with the op the caller called ("conv2d: arena 'step': need ...",
 *    "conv2d: matmul: ..."), never an inner helper's name or a stale one;
 *  - when the caller's call fails, the step and persistent arenas (host
 *    and device) and the tape go back to where they were when it began:
 *    a failed call, however deep it failed, leaves nothing behind;
 *  - an installed profiling hook (ctx->profile) hears the call begin and
 *    end, at every depth.
 * EO_PUBLIC(name, (params), (args)) defines eo_<name>(params) and opens
 * the definition of its body, static name_body(params); the first
 * parameter must be `eo_ctx *ctx`. */
void eo_enter(eo_ctx *ctx, const char *op);
eo_status eo_leave(eo_ctx *ctx, const char *op, eo_status s); /* op: as given to eo_enter */
#define EO_RUN(ctx, op, call)                                                            \
    do {                                                                                 \
        if (!(ctx))                                                                      \
            return EO_ERR_ARG;                                                           \
        eo_enter((ctx), (op));                                                           \
        return eo_leave((ctx), (op), (call));                                            \
    } while (0)
#define EO_PUBLIC(name, params, args)                                                    \
    static eo_status name##_body params;                                                 \
    eo_status eo_##name params { EO_RUN(ctx, #name, name##_body args); }                 \
    static eo_status name##_body params

/* ---- errors --------------------------------------------------------------
 * eo_fail formats into ctx->err and returns `s`; the message is prefixed
 * with "<ctx->op>: " unless it already starts so. Formatting is our own
 * (the library has no printf): %s %d %u %ld %lld %llu %zu %f and %T, which
 * prints a tensor's shape and dtype as "[2x3 f32]" (NULL prints "NULL"). */
eo_status eo_fail(eo_ctx *ctx, eo_status s, const char *fmt, ...);
size_t eo_vformat(char *buf, size_t cap, const char *fmt, va_list ap);
size_t eo_format(char *buf, size_t cap, const char *fmt, ...);

/* EO_ERR_ARG naming the argument when pointer p is NULL: "add: NULL b"
 * (the parameter's name in the public header), so a NULL is never
 * reported as some other fault further on. */
#define EO_NONNULL(ctx, op, p)                                                           \
    do {                                                                                 \
        if (!(p))                                                                        \
            return eo_fail((ctx), EO_ERR_ARG, "%s: NULL %s", (op), #p);                  \
    } while (0)

/* Propagate a failing status. */
#define EO_CHECK(expr) do { eo_status eo_s_ = (expr); if (eo_s_ != EO_OK) return eo_s_; } while (0)

/* ---- helpers ------------------------------------------------------------- */
/* eo_ctx_init without the CPU kernel table (core/ctx.c): the caller sets
 * ctx->backend[EO_CPU] (eo_ctx_init, eo_ctx_init_kernels). */
eo_status eo_ctx_setup(eo_ctx *ctx, void *persist_buf, size_t persist_bytes, void *step_buf,
                       size_t step_bytes);
const eo_backend *eo_backend_of(eo_ctx *ctx, const eo_tensor *t);
/* Step-arena scratch on a device, kept until the step is rewound. */
eo_status eo_scratch(eo_ctx *ctx, eo_device dev, size_t bytes, void **out);
/* A kernel's workspace, lent for one call: eo_lend takes `bytes` of step
 * arena on dev (at l->p), eo_give_back rewinds that arena to where it was
 * before. On failure nothing was taken, and nothing is to be given back. */
typedef struct eo_lent {
    eo_arena *ar;
    eo_arena_mark mark;
    void *p;
} eo_lent;
eo_status eo_lend(eo_ctx *ctx, eo_device dev, size_t bytes, eo_lent *l);
void eo_give_back(const eo_lent *l);
/* Reserve host memory for a metadata struct from the step arena. */
eo_status eo_host_alloc(eo_ctx *ctx, eo_lifetime life, size_t bytes, void **out);

/* 1 when the `bytes` at p lie in the host step arena's buffer (handed out
 * or not). eo_is_rewound: they lie there at or past its top, so they were
 * given back by eo_rewind (or a failed call) -- a stale handle. */
int eo_in_step_arena(const eo_ctx *ctx, const void *p);
int eo_is_rewound(const eo_ctx *ctx, const void *p, size_t bytes);

/* Validate an op's inputs: non-NULL, not rewound, rank 0..4 and an open
 * device (any dtype), then also the dtype; and the same device as the
 * first. */
eo_status eo_expect_any(eo_ctx *ctx, const char *op, const eo_tensor *t);
/* The part of eo_expect_any that every call handed a tensor it will touch
 * on its device must ask, even where the rest does not apply (a borrowed
 * parameter, a gradient): t NULL passes; EO_ERR_STATE "<op>: ... earlier
 * eo_cuda_attach" for a CUDA tensor whose attach has ended
 * (eo_tensor.attach, eo_cuda_detach); EO_ERR_DEVICE for a device that is
 * not open. */
eo_status eo_expect_live(eo_ctx *ctx, const char *op, const eo_tensor *t);
/* eo_expect_live for every parameter of ps, its gradient and its
 * working copy (p->low), and EO_ERR_ARG for a NULL entry: what a call
 * that walks a parameter list asks before it touches any of them. */
struct eo_params;
eo_status eo_expect_params(eo_ctx *ctx, const char *op, const struct eo_params *ps);
eo_status eo_expect(eo_ctx *ctx, const char *op, const eo_tensor *t, eo_dtype dt);
eo_status eo_same_device(eo_ctx *ctx, const char *op, const eo_tensor *a, const eo_tensor *b);
/* A parameter without storage for a borrowed list (eo_params_init_borrowed):
 * CPU, f32, read-only, data NULL until eo_weights_bind points it into an
 * image (core/weights.c). */
eo_status eo_param_borrowed(eo_ctx *ctx, eo_device device, const char *name, int rank,
                            const int64_t *shape, eo_tensor **out);
/* EO_ERR_STATE "<op>: <tensor> uses read-only weights ..." when t's data
 * is a caller's read-only buffer (bound in place, core/weights.c). */
eo_status eo_expect_writable(eo_ctx *ctx, const char *op, const eo_tensor *t);
/* A kernel slot that is NULL means unsupported. */
eo_status eo_unsupported(eo_ctx *ctx, const char *op, const eo_backend *be);
#define EO_NEED_KERNEL(ctx, op, be, slot) \
    do { if (!(be)->slot) return eo_unsupported(ctx, op, be); } while (0)

/* A fresh output tensor like the given shape, F32, in the step arena on dev. */
eo_status eo_new_out(eo_ctx *ctx, eo_device dev, eo_dtype dt, int rank, const int64_t *shape,
                     eo_tensor **out);
/* eo_tensor_zeros for the core's own use (not a public call of its own). */
eo_status eo_new_zeros(eo_ctx *ctx, eo_lifetime life, eo_device device, eo_dtype dtype, int rank,
                       const int64_t *shape, eo_tensor **out);
/* The element count of a shape: 1 when a size is negative or the product
 * does not fit in int64 (see alloc/checked.h), else 0 with *n set. */
int eo_shape_numel(int rank, const int64_t *shape, int64_t *n);
/* 1 when a shape's extent, the product of its sizes with each 0 taken as
 * 1, times elem bytes, passes PTRDIFF_MAX: its contiguous strides, and a
 * view's byte offsets into it, could then wrap even though it holds no
 * element ([0, 2, 2^62] f32). 0 otherwise (sizes are known >= 0). */
int eo_shape_extent_overflows(int rank, const int64_t *shape, size_t elem);
/* Say where in the call a failure happened: the message becomes
 * "<op>: <what> <which>: <the rest>" ("backward: through matmul: ...",
 * "sequential_forward: layer 2: ..."); what NULL only puts "<op>: " in
 * front of a message written into ctx->err by a layer below. Returns s. */
eo_status eo_refail(eo_ctx *ctx, eo_status s, const char *what, const char *which);
/* Validate a caller's number: EO_ERR_ARG "<what> must be <rule>, got v"
 * unless ok (a NaN compares false, so `ok` written as a comparison
 * refuses it). */
eo_status eo_need(eo_ctx *ctx, int ok, const char *what, const char *rule, double v);
/* Contiguous strides for shape. */
void eo_contiguous_strides(int rank, const int64_t *shape, int64_t *stride);
/* Pad shape/strides to 4-D on the left (size 1, stride 0). */
void eo_pad4(const eo_tensor *t, int64_t shape[4], int64_t stride[4]);

/* Does this op need a tape node? (grad mode on and some input requires grad) */
int eo_needs_grad(const eo_ctx *ctx, eo_tensor *const *in, int n);
/* Append a node for `out` (marks out->requires_grad). */
eo_status eo_record(eo_ctx *ctx, eo_op_id op, eo_tensor *const *in, int n, eo_tensor *out,
                    eo_node **node);
/* A leaf in the step arena with a step gradient made after it
 * (core/tape.c); the context keeps a list of them, newest first. */
typedef struct eo_leaf_grad {
    struct eo_leaf_grad *prev;
    eo_tensor *leaf;
    const eo_tensor *grad;
} eo_leaf_grad;
/* After the step arena moved back (eo_rewind, a failed call): drop the
 * tape nodes and the leaves' step gradients it gave back. */
void eo_tape_rewound(eo_ctx *ctx);
/* The gradient buffer of t, zero-filled on first use (step arena unless
 * it was allocated with the parameter). */
eo_status eo_grad_of(eo_ctx *ctx, eo_tensor *t, eo_tensor **g);

/* Like eo_grad_of, for a rule whose kernel can overwrite instead of add
 * (matmul with beta = 0): a new buffer is left unzeroed and *beta is 0;
 * an existing one must be added to and *beta is 1. Saves a memset of
 * every fresh gradient the size of an activation. */
eo_status eo_grad_for_write(eo_ctx *ctx, eo_tensor *t, eo_tensor **g, float *beta);

/* x's gradient += src, for a gradient that passes through unchanged:
 * src (contiguous, x's element count, dtype and device; check with
 * eo_grad_passes) is read in x's shape, row-major. With take = 1 and no
 * gradient yet, x takes src's buffer instead of a zero fill and an add
 * (core/tape.c says why that is safe: at most one take per rule, src the
 * running node's output gradient). take = 0: a fresh gradient is a copy. */
eo_status eo_grad_add(eo_ctx *ctx, eo_tensor *x, const eo_tensor *src, int take);
int eo_grad_passes(const eo_tensor *x, const eo_tensor *src);

/* For a rule whose kernel has the add form and, where has_set (the
 * backend fills the slot), a _set form that writes a fresh gradient
 * (ops/kernels.h): *set = 1 when t's gradient was just made, unzeroed,
 * for the _set form to write; else it exists or was zero-filled, and the
 * add form runs. Saves the zero fill and the kernel's read of dx. */
eo_status eo_grad_for_set(eo_ctx *ctx, eo_tensor *t, int has_set, eo_tensor **g, int *set);

/* Normalise a possibly negative axis for rank r; -1 if out of range. */
int eo_axis(int axis, int rank);

/* ---- 16-bit dtypes (core/op_cast.c) -------------------------------------------- */
int eo_is_float(eo_dtype dt);  /* f32, bf16, f16 */
int eo_is_half(eo_dtype dt);   /* bf16, f16 */
/* dst = src element by element (dst any view of src's shape; dtypes may
 * differ among f32/bf16/f16, else equal): copy32 for 4-byte elements of
 * one dtype, the backend's cast kernel otherwise. */
eo_status eo_copy_any(eo_ctx *ctx, const eo_tensor *dst, const eo_tensor *src);
/* dst += src (dst a view; f32 accumulate kernel, or cast with accumulate
 * for 16-bit: added in f32, rounded once). */
eo_status eo_accumulate_any(eo_ctx *ctx, const eo_tensor *dst, const eo_tensor *src);
/* Contiguous x[...] = value in its dtype (f32, or 16-bit via fill16 or an
 * f32 temporary cast). */
eo_status eo_fill_any(eo_ctx *ctx, eo_tensor *x, float value);
/* f32 scratch for one call of an f32 kernel on 16-bit tensors (the
 * widened route of conv2d and maxpool2d, core/op_conv.c): eo_lend_f32
 * lends numel(like) floats on like's device, holding src widened (src
 * contiguous, of like's size) or zeros when src is NULL; eo_add_f32_into
 * stores (accumulate 0) or adds (1) such floats into the contiguous dst,
 * rounded once to dst's dtype.
 * Give back the first lent of a call to release all of them. */
eo_status eo_lend_f32(eo_ctx *ctx, const eo_tensor *like, const eo_tensor *src, eo_lent *l);
eo_status eo_add_f32_into(eo_ctx *ctx, const eo_tensor *dst, const void *f32, int accumulate);
/* The generic fallback: eo_half_plan looks at an op's inputs (NULL and
 * integer ones skipped): any16 says whether one is bf16/f16, dt is the
 * result dtype (promote: PyTorch's rule for elementwise binary ops; else
 * all float inputs must share one dtype, EO_ERR_DTYPE otherwise). With
 * any16 and no native kernel, the op calls eo_half_widen (casts each
 * 16-bit input to f32, on the tape), runs itself on those, and
 * eo_half_narrow casts its result to dt. */
typedef struct eo_half_route { int any16; eo_dtype dt; } eo_half_route;
eo_status eo_half_plan(eo_ctx *ctx, const char *op, eo_tensor *const *in, int n, int promote,
                       eo_half_route *r);
eo_status eo_half_widen(eo_ctx *ctx, eo_tensor **in, int n);
eo_status eo_half_narrow(eo_ctx *ctx, const eo_half_route *r, eo_tensor **out);

/* The fallback at the top of an op body, after its output pointer is
 * checked: with bf16/f16 among arr[0..n) (an array of eo_tensor *), widen
 * them in place, run `call` (the op itself on arr's now-f32 entries,
 * writing *out) and cast *out to the result dtype. */
#define EO_HALF_FALLBACK(ctx, op, arr, n, promote, out, call)                            \
    do {                                                                                 \
        eo_half_route hr_;                                                               \
        EO_CHECK(eo_half_plan((ctx), (op), (arr), (n), (promote), &hr_));                \
        if (hr_.any16) {                                                                 \
            EO_CHECK(eo_half_widen((ctx), (arr), (n)));                                  \
            EO_CHECK(call);                                                              \
            return eo_half_narrow((ctx), &hr_, (out));                                   \
        }                                                                                \
    } while (0)

/* Shared forward for the elementwise unary ops (one place for all seven). */
eo_status eo_unary_op(eo_ctx *ctx, eo_op_id id, eo_unop k, float alpha, eo_tensor *x,
                      eo_tensor **out);

/* ---- autocast (core/autocast.c) ------------------------------------------------
 * The policy of eo_ctx_set_autocast. eo_autocast_low: with autocast on, a
 * float *x not already in the autocast dtype is replaced by its cast (a
 * parameter with a working copy of that dtype by the copy, recorded as a
 * cast of the master). eo_autocast_f32: with autocast on, a 16-bit *x is
 * replaced by its f32 cast. Both leave NULL, integer tensors and autocast
 * off alone. */
eo_status eo_autocast_low(eo_ctx *ctx, eo_tensor **x);
eo_status eo_autocast_f32(eo_ctx *ctx, eo_tensor **x);
typedef enum { EO_AUTOCAST_LOW, EO_AUTOCAST_F32 } eo_autocast_list;
/* EO_AUTOCAST at the top of an op on an autocast list, after its output
 * pointer is checked: with autocast on, cast arr[0..n) (the op's tensor
 * arguments) by the list, then run `call` (the op itself on arr's
 * entries) with autocast off and return its status. Off inside: the op
 * is one autocast op as in PyTorch (the ops it is built from, and its
 * f32 fallback, run in the dtypes it was given instead of being cast
 * again — which would also recurse). */
eo_status eo_autocast_cast(eo_ctx *ctx, eo_autocast_list list, eo_tensor **arr, int n);
#define EO_AUTOCAST(ctx, list, arr, n, call)                                             \
    do {                                                                                 \
        if ((ctx)->autocast != EO_F32) {                                                 \
            eo_dtype ac_ = (ctx)->autocast;                                              \
            EO_CHECK(eo_autocast_cast((ctx), (list), (arr), (n)));                       \
            (ctx)->autocast = EO_F32;                                                    \
            eo_status ac_s_ = (call);                                                    \
            (ctx)->autocast = ac_;                                                       \
            return ac_s_;                                                                \
        }                                                                                \
    } while (0)
/* Rewrite p->low from the master p (nothing when p has no copy). */
eo_status eo_params_refresh_low_one(eo_ctx *ctx, eo_tensor *p);

#endif
