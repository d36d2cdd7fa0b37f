/* core/everyo.h — the public API of EveryO: context, tensors, ops with
 * autograd, attention, CUDA. Layers and optimizers are in core/nn.h, the
 * transformer models in core/transformer.h.
 *
 * Reading guide
 *  - Every fallible call returns eo_status (alloc/status.h). On failure
 *    eo_last_error(ctx) holds one line that starts with the call's name
 *    ("conv2d: ...", also when an op it is built from failed) and gives
 *    the shapes and what was expected, and the context stays usable: the
 *    arenas (step and persistent) and the tape are back where they were
 *    before the call, so nothing is half-written that a later call could
 *    trip on. A NULL ctx returns EO_ERR_ARG (with nowhere to put a
 *    message); calls that return no status do nothing for a NULL ctx.
 *  - Memory comes from two arenas the caller hands to eo_ctx_init():
 *      persistent — parameters, their gradients, optimizer state;
 *      step       — activations, saved values, the tape, scratch;
 *    the step arena is rewound after every training step (eo_rewind), so
 *    steady-state training allocates nothing. The library never calls
 *    malloc.
 *  - Ops allocate their output from the step arena and, when grad mode is
 *    on and an input requires grad, append a node to the tape. Backward
 *    walks the tape in reverse (it is already in topological order).
 *  - Shapes are written outermost first: a batch of N rows of C features
 *    is [N, C]. Ranks 0..4. Strides count elements; a stride of 0 marks a
 *    broadcast axis.
 *
 * Statuses common to every op below (not repeated on each):
 *   EO_ERR_ARG    a required pointer (ctx, an input, the output pointer)
 *                 is NULL or a value is out of range;
 *   EO_ERR_SHAPE  a size computed from the inputs (an element count, its
 *                 bytes, an output side) does not fit: no size wraps;
 *   EO_ERR_AXIS   an input's rank is outside 0..4 (a tensor changed by hand),
 *                 or an op over an axis (softmax, log_softmax, layernorm, the
 *                 reductions, matmul's last two) is given a scalar;
 *   EO_ERR_DTYPE  an input is not the dtype stated;
 *   EO_ERR_DEVICE inputs live on different devices;
 *   EO_ERR_OOM    the step arena is full (message: bytes needed and left);
 *   (NaN and ±inf data are not an error, except where an op says so:
 *   eo_log refuses a NaN like a non-positive element, EO_ERR_NUMERIC);
 *   EO_ERR_UNSUPPORTED the tensors' backend has no kernel for the op. */
#ifndef EVERYO_H
#define EVERYO_H

#include <stddef.h>
#include <stdint.h>
#include "alloc/arena.h"
#include "alloc/status.h"
#include "ops/exec.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The version of this header. The build reads these three lines for the
 * shared library's file name and soname (libeveryo.so.MAJOR), and
 * eo_version() returns the library's own "MAJOR.MINOR.PATCH", so a
 * program can check that the header it was compiled with and the library
 * it runs against agree. MAJOR changes when the ABI does. */
#define EO_VERSION_MAJOR 0
#define EO_VERSION_MINOR 1
#define EO_VERSION_PATCH 0
const char *eo_version(void);

#define EO_MAX_RANK 4

typedef enum eo_dtype { EO_F32, EO_I32, EO_BF16, EO_F16, EO_DTYPE_COUNT } eo_dtype;
typedef enum eo_device { EO_CPU, EO_CUDA, EO_DEVICE_COUNT } eo_device;
/* Which arena a new tensor's memory comes from. */
typedef enum eo_lifetime { EO_STEP, EO_PERSIST } eo_lifetime;

struct eo_node;
struct eo_backend;

/* A tensor is a view: a data pointer plus shape and strides. Several
 * tensors may view the same memory (reshape, permute, slice). Fields are
 * readable; create and change tensors only through the API. */
typedef struct eo_tensor {
    void *data;                    /* first element (host or device address) */
    eo_dtype dtype;
    eo_device device;
    int rank;                      /* 0..EO_MAX_RANK */
    int64_t shape[EO_MAX_RANK];
    int64_t stride[EO_MAX_RANK];   /* in elements */
    struct eo_tensor *grad;        /* dL/dthis, contiguous, same shape; NULL until needed.
                                      Defined after eo_backward for leaves (no node:
                                      parameters, inputs); an op's output may share its
                                      buffer with an input's (core/README.md) */
    struct eo_node *node;          /* the op that made it; NULL for a leaf */
    uint8_t requires_grad;
    uint8_t lifetime;              /* eo_lifetime of the data */
    uint8_t readonly;              /* 1: data is a caller's read-only buffer (weights bound in
                                      place, core/safetensors.h): nothing writes it */
    uint32_t attach;               /* EO_CUDA tensors: the context's attach number
                                      (eo_ctx.cuda_attach) when the data was carved; a
                                      different number means the device memory went
                                      with an eo_cuda_detach (EO_ERR_STATE). 0 on the CPU */
    const char *name;              /* parameters: the checkpoint key */
    struct eo_tensor *low;         /* parameters under mixed precision: the 16-bit
                                      working copy the forward reads (persistent,
                                      refreshed by each optimizer step); on the
                                      step header autocast makes of that copy:
                                      the f32 master; else NULL */
} eo_tensor;

/* ---- gradient all-reduce hook (data-parallel training) -------------------
 * The library links no MPI or NCCL (it is freestanding). A program that
 * trains one model replica per process installs this hook, and the
 * library calls it once per training step, after the backward and before
 * the gradients are first used (eo_clip_grad_norm, eo_optimizer_step, or
 * an explicit eo_grad_allreduce, core/nn.h). tools/dist/ fills it with
 * MPI (CPU tensors) or NCCL (CUDA tensors). With ZeRO-1 (optimizer
 * state sharded across ranks, eo_adamw_init_shard in core/nn.h) the
 * program's hook may sum only the range of the flattened gradients that
 * its rank's optimizer shard reads (a reduce-scatter), and gathers the
 * updated weights itself after eo_optimizer_step: the library only calls
 * the hook at the same point and updates the shard. */

/* One parameter's gradient, as the hook sees it: contiguous, in the
 * persistent arena, `count` elements of `dtype` (EO_F32 today) at `data`,
 * which is a host address for EO_CPU and a device address (CUdeviceptr
 * bits) for EO_CUDA. */
typedef struct eo_grad_buffer {
    void *data;
    int64_t count;
    eo_dtype dtype;
    eo_device device;
} eo_grad_buffer;

typedef struct eo_grad_sync {
    /* Replace every buffer, in place, by its element-wise SUM over all
     * ranks (not the mean: the caller weights each rank's loss by its
     * share of the global batch, rows_local / rows_global, which is right
     * for unequal slices too and exact when the share is a power of two).
     * bufs[0..n) are the parameters' gradients in the parameter list's
     * order, which is the same on every rank, so the k-th buffer of every
     * rank is the same tensor. Every rank's results must be identical
     * (bit for bit), or the replicas drift apart. Return EO_OK, or a
     * status with a one-line reason in msg (msglen bytes); the library
     * returns that status from the call that triggered the hook, its
     * message prefixed with "grad_allreduce: ". */
    eo_status (*allreduce)(void *user, const eo_grad_buffer *bufs, int n, char *msg,
                           size_t msglen);
    void *user;
} eo_grad_sync;

/* ---- profiling hook -----------------------------------------------------------
 * The library has no clock, so it cannot time itself; instead it tells a
 * host program when each piece of work begins and ends, and the program
 * reads its own clock (tools/train/ does, for eo-train --profile).
 *
 * fn(user, name, dir, end, depth) is called:
 *  - with dir EO_PROFILE_FORWARD at the start (end 0) and finish (end 1)
 *    of every public call, name being the call's name without the eo_
 *    prefix ("matmul", "conv2d", "gpt_forward", "adamw_step"); depth is
 *    1 for the caller's own call and larger for the calls it makes
 *    inside (gpt_forward at 1, the block_forward it runs at 2, ...);
 *  - with dir EO_PROFILE_BACKWARD around each backward rule that
 *    eo_backward runs, name being the op's name ("matmul", "softmax"),
 *    at depth eo_backward's depth + 1.
 * Begin and end pairs nest properly (an end always closes the latest open
 * begin, also when the call fails), so a program that wants each op's own
 * time subtracts the time of the pairs nested in it. name is a static
 * string. The hook must not call into the library with this context.
 * With fn NULL (the default) no call is made and nothing else changes. */
typedef enum eo_profile_dir { EO_PROFILE_FORWARD, EO_PROFILE_BACKWARD } eo_profile_dir;
typedef struct eo_profile_hook {
    void (*fn)(void *user, const char *name, eo_profile_dir dir, int end, int depth);
    void *user;
} eo_profile_hook;

/* ---- context ------------------------------------------------------------ */

/* A point in the step arenas and the tape (see eo_mark_get below). */
typedef struct eo_mark {
    eo_arena_mark host, dev;
    struct eo_node *tape;
    uint64_t tape_serial; /* which node tape was: an address can be reused */
} eo_mark;

typedef struct eo_ctx {
    eo_arena persist, step;        /* host arenas (metadata always; data for CPU tensors) */
    eo_arena dev_persist, dev_step;/* device arenas (data of CUDA tensors) */
    const struct eo_backend *backend[EO_DEVICE_COUNT];
    struct eo_node *tape;          /* last recorded node (nodes link backwards) */
    struct eo_leaf_grad *leaf_grads; /* step leaves' step gradients, newest first */
    uint64_t nodes_recorded;       /* tape nodes so far: each node's serial */
    int grad_enabled;              /* record the tape? */
    int training;                  /* nn mode: dropout active when 1 */
    eo_exec exec;                  /* passed to every kernel: the thread hook and,
                                      once attached, the CUDA device state */
    eo_grad_sync grad_sync;        /* all-reduce hook; allreduce NULL: one process */
    int grads_pending;             /* a backward ran since the last gradient all-reduce */
    eo_profile_hook profile;       /* begin/end of calls and rules; fn NULL: none */
    eo_dtype autocast;             /* mixed precision policy: EO_F32 off, EO_BF16, EO_F16 */
    uint32_t cuda_attach;          /* +1 at each eo_cuda_attach and eo_cuda_detach: odd
                                      while attached; CUDA tensors carry it (eo_tensor.attach) */
    uint64_t rng_state, rng_inc;   /* PCG32 */
    eo_status last_status;
    const char *op;                /* the public call running now, for messages */
    int depth;                     /* public calls running (1: the caller's own) */
    eo_mark entry;                 /* where the caller's call began: a failed */
    eo_arena_mark entry_persist, entry_dev_persist; /* call rewinds to here */
    char err[320];
} eo_ctx;

/* Set up a context over two caller-owned buffers (host memory). Grad mode
 * on, training mode on, no threads, PRNG seeded with 0.
 * Returns EO_ERR_ARG for a NULL ctx or buffer; with a ctx, a refused init
 * still leaves it zeroed, with eo_last_error saying which buffer was
 * NULL (every status but EO_OK leaves a terminated message there). */
eo_status eo_ctx_init(eo_ctx *ctx, void *persist_buf, size_t persist_bytes,
                      void *step_buf, size_t step_bytes);

/* ---- choosing the CPU kernels (small links) -------------- experimental ---
 * eo_ctx_init's CPU table points at every kernel, so a program that calls
 * it links all of them (convolution, attention, every backward, the
 * 16-bit kernels) whatever it runs. eo_ctx_init_kernels is eo_ctx_init
 * with a CPU table holding only the families of kernels the program
 * lists, TensorFlow Lite Micro's op resolver in EveryO's terms: linked
 * with per-function sections and --gc-sections (-ffunction-sections
 * -fdata-sections, -Wl,--gc-sections), a family nobody lists is left out
 * of the program (tools/embedded/infer_tiny.c: two Linear layers and a
 * ReLU, eo_cpu_kernels_elementwise and eo_cpu_kernels_matmul).
 *
 * The table lives in the persistent arena (a pointer per kernel slot:
 * 616 bytes on a 64-bit host today, 308 on a Cortex-M4). Always
 * in it: memory moves and zero fills, contiguous copies, fills and
 * gradient accumulation. An op whose kernel is not in the table returns
 * EO_ERR_UNSUPPORTED, its message naming the op and "cpu (kernels listed
 * to eo_ctx_init_kernels)"; nothing calls through an empty slot. The
 * CUDA backend (eo_cuda_attach) is unaffected.
 *
 *   static eo_cpu_kernels_fn *const fams[] = {eo_cpu_kernels_matmul,
 *                                             eo_cpu_kernels_elementwise};
 *   s = eo_ctx_init_kernels(&ctx, persist, sizeof persist, step, sizeof step,
 *                           fams, 2);
 *
 * Statuses: those of eo_ctx_init; EO_ERR_ARG for families NULL with count
 * > 0 or a NULL entry; EO_ERR_OOM when the persistent arena cannot hold
 * the table. Each family fills the slots of its ops; a *_backward family
 * the slots eo_backward needs for them:
 *   elementwise     add sub mul div maximum minimum scale relu gelu tanh
 *                   sigmoid exp log
 *   matmul          matmul (its backward is matmul too); a Linear layer
 *                   needs elementwise as well, for its bias
 *   reduce          sum mean max logsumexp; clip_grad_norm needs reduce
 *                   (its sum of squares) and elementwise (its scaling)
 *   softmax         softmax log_softmax
 *   cross_entropy   cross_entropy
 *   layernorm, embedding, attention (the fused attention)
 *   dropout         forward and backward
 *   conv            conv2d maxpool2d relu_maxpool2d, forward and backward
 *                   (the fused kernels are used only as a pair)
 *   optim           SGD, AdamW, the loss scaler's unscale
 *   half            bf16/f16: eo_cast and the native 16-bit kernels of
 *                   every family, forward and backward (without it a
 *                   16-bit tensor's op says EO_ERR_UNSUPPORTED)
 * A training step needs the *_backward families of its ops and optim; a
 * program with room for every kernel simply calls eo_ctx_init. */
typedef struct eo_backend eo_cpu_kernels; /* opaque: the table being filled */
typedef void eo_cpu_kernels_fn(eo_cpu_kernels *k);
eo_status eo_ctx_init_kernels(eo_ctx *ctx, void *persist_buf, size_t persist_bytes,
                              void *step_buf, size_t step_bytes,
                              eo_cpu_kernels_fn *const *families, size_t count);
void eo_cpu_kernels_elementwise(eo_cpu_kernels *k);
void eo_cpu_kernels_elementwise_backward(eo_cpu_kernels *k);
void eo_cpu_kernels_matmul(eo_cpu_kernels *k);
void eo_cpu_kernels_reduce(eo_cpu_kernels *k);
void eo_cpu_kernels_reduce_backward(eo_cpu_kernels *k);
void eo_cpu_kernels_softmax(eo_cpu_kernels *k);
void eo_cpu_kernels_softmax_backward(eo_cpu_kernels *k);
void eo_cpu_kernels_cross_entropy(eo_cpu_kernels *k);
void eo_cpu_kernels_cross_entropy_backward(eo_cpu_kernels *k);
void eo_cpu_kernels_layernorm(eo_cpu_kernels *k);
void eo_cpu_kernels_layernorm_backward(eo_cpu_kernels *k);
void eo_cpu_kernels_embedding(eo_cpu_kernels *k);
void eo_cpu_kernels_embedding_backward(eo_cpu_kernels *k);
void eo_cpu_kernels_dropout(eo_cpu_kernels *k);
void eo_cpu_kernels_conv(eo_cpu_kernels *k);
void eo_cpu_kernels_attention(eo_cpu_kernels *k);
void eo_cpu_kernels_attention_backward(eo_cpu_kernels *k);
void eo_cpu_kernels_optim(eo_cpu_kernels *k);
void eo_cpu_kernels_half(eo_cpu_kernels *k);

/* The message of the last failure ("" if none), always terminated once
 * eo_ctx_init has run on ctx (even when it refused). Never NULL. */
const char *eo_last_error(const eo_ctx *ctx);

/* ---- sizing the arenas ----------------------------------------------------------
 * How many bytes the two buffers must hold is measured, not guessed: run
 * the work once in a context with room to spare (on a development
 * machine), read what each arena needed, and give the real program
 * buffers of exactly that size. This is TensorFlow Lite Micro's
 * MicroInterpreter::arena_used_bytes() (run once in a generous arena,
 * then shrink it to what was used), here for both lifetimes: the
 * persistent figure is everything allocated since eo_ctx_init (the model,
 * its gradients, the optimizer's state), the step figure the highest the
 * step arena reached since eo_measure_begin (a forward, or a whole
 * training step; eo_sequential_plan in core/nn.h runs one for a model).
 *
 * The figures are exact for buffers whose address is a multiple of
 * EO_ARENA_ALIGN (64), as the measuring context's should be (static
 * buffers with _Alignas(64), aligned_alloc): every allocation is aligned
 * to its absolute address, so a buffer at another alignment may need up
 * to EO_ARENA_ALIGN - 1 bytes more (EO_ARENA_SLACK). A buffer smaller
 * than the figure fails with EO_ERR_OOM naming the arena, the bytes
 * asked for and the bytes left. */
typedef struct eo_arena_needs {
    size_t persist, step;         /* host arenas: bytes from the buffer's start */
    size_t dev_persist, dev_step; /* the CUDA device arenas (0 without a device) */
} eo_arena_needs;
#define EO_ARENA_SLACK (EO_ARENA_ALIGN - 1)

/* Restart the step arenas' high-water marks at what they hold now (and
 * the persistent ones' too), so eo_measure reports the peak of what
 * follows. Nothing else changes. */
void eo_measure_begin(eo_ctx *ctx);
/* The bytes each arena needed: its high-water mark since eo_ctx_init or
 * the last eo_measure_begin. All zero for a NULL ctx. */
eo_arena_needs eo_measure(const eo_ctx *ctx);

/* Install a threading hook (see ops/parallel.h); a zeroed eo_par means one thread. */
void eo_ctx_set_parallel(eo_ctx *ctx, eo_par par);
/* Install the gradient all-reduce hook (above); a zeroed eo_grad_sync
 * means one process, and then training is exactly as without it. */
void eo_ctx_set_grad_sync(eo_ctx *ctx, eo_grad_sync hook);

/* Install the profiling hook (above); a zeroed eo_profile_hook removes it. */
void eo_ctx_set_profile(eo_ctx *ctx, eo_profile_hook hook);

/* ---- autocast: the mixed-precision policy -----------------------------------
 * As torch.autocast(dtype=...) (PyTorch's "Automatic Mixed Precision"
 * docs, its CUDA op lists), per context instead of per thread. With
 * eo_ctx_set_autocast(ctx, EO_BF16) or EO_F16, ops called with f32 or
 * 16-bit tensors follow these rules (core/autocast.c; core/README.md has
 * the table):
 *  - lower precision: eo_matmul, eo_conv2d, eo_attention and
 *    eo_attention_fused (and so nn's Linear) cast their float inputs to
 *    the autocast dtype and compute with f32 accumulation; their output
 *    is that dtype. A parameter with a 16-bit working copy (p->low, see
 *    eo_params_enable_low in core/nn.h) is not cast: its copy is used, on
 *    the tape as a cast of the master, so its gradient reaches the f32
 *    master in f32;
 *  - eo_softmax, eo_log_softmax, eo_layernorm: a 16-bit input keeps its
 *    dtype (cast to the autocast dtype if it is the other one; layernorm's
 *    w and b join it through their working copies), computed in f32 inside
 *    and rounded once; an f32 input stays f32 (PyTorch returns f32 here;
 *    core/autocast.c says why this keeps activations 16-bit);
 *  - eo_embedding reads the table's working copy and returns the autocast
 *    dtype (not on PyTorch's lists);
 *  - eo_cross_entropy(_ex) returns an f32 loss;
 *  - f32: eo_logsumexp, eo_sum, eo_mean, eo_max, eo_sum_all, eo_exp,
 *    eo_log cast 16-bit inputs to f32 and return f32;
 *  - binary elementwise ops with one operand of the autocast dtype and
 *    one f32 cast the f32 one down (PyTorch promotes to f32);
 *  - everything else (views, dropout, pooling, unary ops) runs in its
 *    inputs' dtype, the widest one for two inputs (PyTorch's promotion).
 * EO_F32 (the default) turns it off: every op runs in its inputs' dtype.
 * Returns EO_ERR_ARG for another dtype (the setting is then unchanged). */
eo_status eo_ctx_set_autocast(eo_ctx *ctx, eo_dtype dtype);

/* Seed the context's generator: PCG32 (O'Neill, "PCG: A Family of Simple
 * Fast Space-Efficient Statistically Good Algorithms for Random Number
 * Generation", 2014), XSH-RR output, 64-bit state. */
void eo_seed(eo_ctx *ctx, uint64_t seed);
uint32_t eo_rand_u32(eo_ctx *ctx);
float eo_rand_uniform(eo_ctx *ctx);        /* [0, 1), 24 random bits */
float eo_rand_normal(eo_ctx *ctx);         /* N(0, 1), Box–Muller */

/* Grad mode: eo_set_grad(ctx, 0) records no tape (evaluation); returns the
 * previous setting so it can be restored. */
int eo_set_grad(eo_ctx *ctx, int enabled);

/* A point in the step arenas and the tape, and the way back to it. Use one
 * per training step: mark before the forward, rewind after the update.
 * Every tensor made after the mark (op outputs, EO_STEP tensors, their
 * gradients, the tape's nodes) is gone after the rewind: an op or
 * eo_backward handed one returns EO_ERR_STATE ("... rewound"), as long
 * as its memory has not been handed out again (a handle the next step has
 * already written over cannot be told from a live one: drop them). A leaf
 * made with EO_PERSIST that requires grad keeps its gradient across the
 * rewind: the first backward that reaches it makes the gradient in the
 * persistent arena (zeroed, then accumulated into, as in PyTorch). A leaf
 * in the step arena made before the mark (eo_tensor_wrap, EO_STEP, given
 * eo_set_requires_grad) stays, and a gradient made for it after the mark
 * is dropped (its .grad is NULL again).
 * Marks nest: rewind the innermost first. A rewind to an outer mark ends
 * every mark taken after it; such a stale mark returns EO_ERR_STATE and
 * changes nothing (the message says which part of the context had moved
 * below it). EO_ERR_ARG for a NULL ctx. The device part of a mark is not
 * checked while no device memory is attached. */
eo_mark eo_mark_get(const eo_ctx *ctx);
eo_status eo_rewind(eo_ctx *ctx, eo_mark m);

/* ---- CUDA ------------------------------------------------------------------
 * Attach a CUDA device to the context: open device `device` through a
 * driver table (drv, below), load the embedded PTX once, and carve two
 * device arenas from one cuMemAlloc block each. Afterwards tensors made with device EO_CUDA live there and
 * every op on them runs the PTX kernels. Kernel faults surface at the next
 * copy to or from the host (eo_read, eo_write, eo_to_device).
 * Returns EO_ERR_NO_DEVICE (no driver or no device, with the reason),
 * EO_ERR_CUDA (driver error, its name and text in the message),
 * EO_ERR_UNSUPPORTED (compute capability below 8.0), EO_ERR_STATE (already
 * attached), EO_ERR_OOM.
 *
 * drv: pass NULL, which loads the real driver (dlopen("libcuda.so.1")).
 * The table's type is deliberately opaque here, as eo_pool is in pool.h:
 * its layout is the driver ABI the library calls through, defined in the
 * build tree (ops/cuda/driver.h) and not installed, and a non-NULL table
 * is how the build tree's own tests and tools substitute a double for
 * the driver (the PTX interpreter's, tools/ptxsim/driver.h). */
struct eo_cuda_driver;
eo_status eo_cuda_attach(eo_ctx *ctx, const struct eo_cuda_driver *drv, int device,
                         size_t persist_bytes, size_t step_bytes);
/* Free the device arenas and release the device. Every EO_CUDA tensor
 * made before is stale from then on, also after a new eo_cuda_attach
 * (its memory is gone): every call that is handed one -- an op, eo_read,
 * eo_write, eo_to_device, eo_backward, the optimizer, clipping, the grad
 * scaler, eo_params_zero_grad / _refresh_low / _enable_low,
 * eo_grad_allreduce, eo_weights_bind, the KV cache -- returns EO_ERR_STATE
 * naming itself and the tensor, and changes nothing. (Each tensor
 * records the attach it was made under, eo_tensor.attach.) */
void eo_cuda_detach(eo_ctx *ctx);
/* The attached device's name ("" if none). */
const char *eo_cuda_device_name(const eo_ctx *ctx);

/* ---- tensors ------------------------------------------------------------- */

/* A new contiguous tensor, uninitialised, on `device`, with data from the
 * arena of `life`. shape may be NULL when rank is 0 (a scalar).
 * Returns EO_ERR_AXIS (rank outside 0..4), EO_ERR_SHAPE (a negative size,
 * or an element count or byte count that does not fit: the bytes must fit
 * in PTRDIFF_MAX, so on a 32-bit build a [32768, 32768] f32 tensor is
 * refused), EO_ERR_OOM (and nothing is taken from the arena),
 * EO_ERR_DEVICE (no such backend opened). */
eo_status eo_tensor_new(eo_ctx *ctx, eo_lifetime life, eo_device device, eo_dtype dtype,
                        int rank, const int64_t *shape, eo_tensor **out);
/* Same, filled with zeros. */
eo_status eo_tensor_zeros(eo_ctx *ctx, eo_lifetime life, eo_device device, eo_dtype dtype,
                          int rank, const int64_t *shape, eo_tensor **out);
/* A CPU tensor that views caller memory (not copied, not owned). */
eo_status eo_tensor_wrap(eo_ctx *ctx, eo_dtype dtype, int rank, const int64_t *shape,
                         void *data, eo_tensor **out);

int64_t eo_numel(const eo_tensor *t);
int eo_is_contiguous(const eo_tensor *t);
size_t eo_dtype_size(eo_dtype dt);
/* Names for messages: "f32", "i32", "bf16", "f16"; "cpu", "cuda"; "?"
 * for a value outside the enum. (Statuses: eo_status_name, status.h.) */
const char *eo_dtype_name(eo_dtype dt);
const char *eo_device_name(eo_device dev);

/* Mark a leaf as requiring grad (on != 0) or not, as PyTorch's
 * Tensor.requires_grad_(): ops on it are then recorded, and eo_backward
 * gives it a gradient (an EO_PERSIST leaf a persistent one, made by the
 * first backward that reaches it: see eo_rewind). Turning it off keeps
 * an existing gradient. EO_ERR_ARG for NULL; EO_ERR_DTYPE unless f32,
 * bf16 or f16; EO_ERR_STATE for an op's output (its mode comes from its
 * inputs, as in PyTorch, which allows this on leaves only), for a
 * read-only borrowed parameter, or for a handle past a rewind. */
eo_status eo_set_requires_grad(eo_ctx *ctx, eo_tensor *t, int on);

/* A parameter: a persistent F32 leaf that requires grad, with its
 * gradient (zeroed) allocated beside it in the persistent arena. `name`
 * must outlive the tensor (it becomes the checkpoint key). */
eo_status eo_param_new(eo_ctx *ctx, eo_device device, const char *name, int rank,
                       const int64_t *shape, eo_tensor **out);

/* Copy between devices; the only way data crosses. Returns a new tensor
 * in the step arena (or persistent, by `life`), contiguous. */
eo_status eo_to_device(eo_ctx *ctx, const eo_tensor *x, eo_device device, eo_lifetime life,
                       eo_tensor **out);
/* The same, to the CPU: eo_to_device(ctx, x, EO_CPU, life, out). */
eo_status eo_to_host(eo_ctx *ctx, const eo_tensor *x, eo_lifetime life, eo_tensor **out);
/* Copy a tensor's elements into host memory `dst` (numel * dtype size bytes). */
eo_status eo_read(eo_ctx *ctx, const eo_tensor *x, void *dst, size_t bytes);
/* Copy host memory into a contiguous tensor (numel * dtype size bytes). */
eo_status eo_write(eo_ctx *ctx, eo_tensor *x, const void *src, size_t bytes);
/* x[...] = value for a contiguous F32, BF16 or F16 tensor (rounded to
 * its dtype). */
eo_status eo_fill(eo_ctx *ctx, eo_tensor *x, float value);

/* ---- 16-bit dtypes (bf16, f16) -----------------------------------------------
 * Every op accepts bf16 and f16 tensors as well as f32 (storage in 16
 * bits, arithmetic in f32: every sum, mean and statistic runs in f32 and
 * a result is rounded once). Where the backend has no native 16-bit
 * kernel for an op, the op runs over f32 copies of its inputs and rounds
 * its result (core/op_cast.c: the rules, the result dtypes and what is
 * native). Elementwise binary ops promote as PyTorch (equal dtypes keep
 * theirs; two different float dtypes give f32); other ops need their
 * float inputs in one dtype (EO_ERR_DTYPE otherwise; an attention mask
 * may differ) and return it. Gradients have their tensor's dtype. */

/* x converted to `dtype` (f32, bf16 or f16), differentiable: the backward
 * casts the gradient back to x's dtype. Round-to-nearest-even; NaN stays
 * NaN (quiet, sign kept); ±inf stays; f16 overflows to ±inf from 65520
 * up, bf16 only where rounding reaches 2^128; subnormals are kept both
 * ways (ops/cpu/half.h has the details). x of the same dtype is returned
 * itself (no copy), as torch's .to(). Output contiguous, step arena.
 * EO_ERR_DTYPE for an i32 input or target. */
eo_status eo_cast(eo_ctx *ctx, eo_tensor *x, eo_dtype dtype, eo_tensor **out);

/* ---- views (differentiable; no copy when the layout allows) ------------- */

/* New shape with the same number of elements (one entry may be -1: inferred).
 * A view when x is contiguous, else a contiguous copy. Any dtype.
 * EO_ERR_SHAPE when the element counts differ (or the new shape's product
 * does not fit in int64), EO_ERR_AXIS for a rank outside 0..4. */
eo_status eo_reshape(eo_ctx *ctx, eo_tensor *x, int rank, const int64_t *shape, eo_tensor **out);
/* out axis i is x axis perm[i]. EO_ERR_AXIS for a bad permutation. */
eo_status eo_permute(eo_ctx *ctx, eo_tensor *x, const int *perm, eo_tensor **out);
/* Swap two axes (negative axes count from the end). */
eo_status eo_transpose(eo_ctx *ctx, eo_tensor *x, int axis0, int axis1, eo_tensor **out);
/* x[..., start:start+len, ...] along `axis`, any dtype. EO_ERR_SHAPE unless
 * 0 <= start <= size and 0 <= len <= size - start (so no start + len can
 * wrap), EO_ERR_AXIS for an axis out of range (a scalar has none). */
eo_status eo_slice(eo_ctx *ctx, eo_tensor *x, int axis, int64_t start, int64_t len,
                   eo_tensor **out);
/* A contiguous copy of x (x itself, not a copy, when already contiguous).
 * Any dtype and rank, a scalar included. */
eo_status eo_contiguous(eo_ctx *ctx, eo_tensor *x, eo_tensor **out);
/* dst = src, element by element, into existing storage: dst may be any
 * view (a slice of a cache), of src's shape, dtype (any) and device.
 * Not differentiable: nothing is recorded on the tape (a key/value
 * cache for generation, which runs without gradients). */
eo_status eo_copy_into(eo_ctx *ctx, eo_tensor *dst, eo_tensor *src);

/* ---- elementwise ---------------------------------------------------------- */

/* out = a op b, a and b f32, bf16 or f16 (EO_ERR_DTYPE for i32); the
 * result's dtype promotes as PyTorch: equal dtypes keep theirs, two
 * different ones give f32. NumPy broadcasting: shapes are aligned at the
 * right and each pair of sizes must be equal or one of them 1.
 * EO_ERR_SHAPE otherwise. The gradient of a broadcast input is summed
 * over the axes it was broadcast along. */
eo_status eo_add(eo_ctx *ctx, eo_tensor *a, eo_tensor *b, eo_tensor **out);
eo_status eo_sub(eo_ctx *ctx, eo_tensor *a, eo_tensor *b, eo_tensor **out);
eo_status eo_mul(eo_ctx *ctx, eo_tensor *a, eo_tensor *b, eo_tensor **out);
eo_status eo_div(eo_ctx *ctx, eo_tensor *a, eo_tensor *b, eo_tensor **out);
/* Elementwise max / min with the same broadcasting, as torch.maximum /
 * torch.minimum: NaN when either input is NaN (fmaxf would return the
 * other); a tie gives a, so maximum(-0, +0) is -0 and maximum(+0, -0)
 * is +0, as in PyTorch. Gradient as PyTorch's: dout goes to the selected
 * input, a tie (a == b) gives each input dout / 2, and a NaN on either
 * side gives both dout. */
eo_status eo_maximum(eo_ctx *ctx, eo_tensor *a, eo_tensor *b, eo_tensor **out);
eo_status eo_minimum(eo_ctx *ctx, eo_tensor *a, eo_tensor *b, eo_tensor **out);

/* out = s * x; x f32, bf16 or f16, out of x's dtype. */
eo_status eo_scale(eo_ctx *ctx, eo_tensor *x, float s, eo_tensor **out);
/* Elementwise activations, any shape; x f32, bf16 or f16 (EO_ERR_DTYPE
 * for i32), out of x's dtype (under autocast eo_exp and eo_log return
 * f32: eo_ctx_set_autocast). GELU is the tanh approximation
 * (Hendrycks & Gimpel 2016, as GPT-2); eo_gelu_erf the exact erf form.
 * As in PyTorch: ReLU's gradient passes where x is NaN (only x <= 0
 * gets 0); GELU of -inf is NaN (-inf * 0) and its gradient at ±inf NaN.
 * For finite x GELU gives the limits exactly: x far above 0 gives x and
 * gradient 1, far below gives -0 and gradient 0 (PyTorch's float32 tanh
 * form gives NaN gradients beyond 1e19).
 * eo_log of a non-positive element returns EO_ERR_NUMERIC (CPU). */
eo_status eo_relu(eo_ctx *ctx, eo_tensor *x, eo_tensor **out);
eo_status eo_gelu(eo_ctx *ctx, eo_tensor *x, eo_tensor **out);
eo_status eo_gelu_erf(eo_ctx *ctx, eo_tensor *x, eo_tensor **out);
eo_status eo_tanh(eo_ctx *ctx, eo_tensor *x, eo_tensor **out);
eo_status eo_sigmoid(eo_ctx *ctx, eo_tensor *x, eo_tensor **out);
eo_status eo_exp(eo_ctx *ctx, eo_tensor *x, eo_tensor **out);
eo_status eo_log(eo_ctx *ctx, eo_tensor *x, eo_tensor **out);

/* ---- matmul ------------------------------------------------------------- */

/* out = op(a) · op(b); a and b f32, bf16 or f16, both of one dtype
 * (EO_ERR_DTYPE otherwise), out of that dtype (16-bit: f32 sums, rounded
 * once; under autocast f32 inputs are cast down). op(a) is a or, with ta, a with its last two
 * axes swapped (no copy). op(a) is [..., M, K], op(b) is [..., K, N];
 * out is [..., M, N]. Batch axes (all but the last two, rank <= 4) are
 * broadcast: b may be 2-D (a weight shared by every batch entry).
 * EO_ERR_SHAPE when K differs or the batch axes do not broadcast. */
eo_status eo_matmul(eo_ctx *ctx, eo_tensor *a, eo_tensor *b, int ta, int tb, eo_tensor **out);

/* ---- reductions -------------------------------------------------------- */

/* Sum, mean or max over `axis` (negative counts from the end); keepdim
 * keeps it as size 1. x f32, bf16 or f16, out of x's dtype (16-bit: f32
 * sums, rounded once; under autocast f32), EO_ERR_DTYPE for i32; the same
 * for eo_logsumexp and eo_sum_all. The max's gradient goes to the first maximum. Max
 * propagates NaN and its gradient goes to the first NaN, as torch.max
 * (values, indices). EO_ERR_AXIS for an axis out of range. */
eo_status eo_sum(eo_ctx *ctx, eo_tensor *x, int axis, int keepdim, eo_tensor **out);
eo_status eo_mean(eo_ctx *ctx, eo_tensor *x, int axis, int keepdim, eo_tensor **out);
eo_status eo_max(eo_ctx *ctx, eo_tensor *x, int axis, int keepdim, eo_tensor **out);
/* log sum exp(x) over `axis`, as torch.logsumexp(x, axis, keepdim):
 * m + log sum exp(x - m) with m the max over the axis (taken as 0 when it
 * is ±inf), so huge values neither overflow nor lose their exps. An axis
 * of only -inf gives -inf, one holding +inf gives +inf, a NaN gives NaN.
 * Gradient: dx = dout * exp(x - out) = dout * softmax(x) along the axis;
 * where out = -inf it is 0 (PyTorch gives NaN there, as exp(-inf - -inf)).
 * EO_ERR_AXIS for an axis out of range; an empty axis gives -inf. */
eo_status eo_logsumexp(eo_ctx *ctx, eo_tensor *x, int axis, int keepdim, eo_tensor **out);
/* Sum of every element: a scalar (rank 0). A scalar input is fine. */
eo_status eo_sum_all(eo_ctx *ctx, eo_tensor *x, eo_tensor **out);

/* ---- softmax, losses, normalisation -------------------------------------- */

/* Over the last axis, x f32, bf16 or f16, out of x's dtype (statistics in
 * f32), max-subtracted, as torch.softmax / torch.log_softmax
 * (dim=-1). A row holding a NaN, or a +inf, is NaN throughout, as in
 * PyTorch. A row that is all -inf (e.g. a fully masked attention row)
 * gives 0 (softmax) or -inf (log_softmax) and a zero gradient, where
 * PyTorch gives NaN. An entry at -inf in a row that has mass gets
 * log_softmax's gradient dy there, as in PyTorch (its exp is 0). */
eo_status eo_softmax(eo_ctx *ctx, eo_tensor *x, eo_tensor **out);
eo_status eo_log_softmax(eo_ctx *ctx, eo_tensor *x, eo_tensor **out);

/* Mean cross-entropy of logits [N, C] (f32, bf16 or f16; the loss has
 * the logits' dtype, f32 under autocast; sums in f32) against class
 * indices target [N] (i32, EO_ERR_DTYPE otherwise) — rows whose target equals ignore_index are skipped;
 * with none left the loss is 0 (PyTorch's mean gives NaN there). Out: a
 * scalar. Row r's loss is (max_r - logits[r, t_r]) + log sum exp(logits[r]
 * - max_r), as torch.nn.functional.cross_entropy: the max and the log of
 * the sum are kept apart, so logits with a common offset of 1e4 ... 1e8
 * give the same loss and gradient as without it. A NaN logit (or +inf)
 * makes its row's loss NaN, and so the mean. EO_ERR_SHAPE for mismatched
 * N, EO_ERR_ARG for a target outside [0, C) other than ignore_index (CPU). */
eo_status eo_cross_entropy(eo_ctx *ctx, eo_tensor *logits, eo_tensor *target,
                           int32_t ignore_index, eo_tensor **out);

/* How a loss over rows is reduced: torch's reduction='mean', 'sum' or
 * 'none'. */
typedef enum eo_reduction { EO_REDUCTION_MEAN, EO_REDUCTION_SUM, EO_REDUCTION_NONE } eo_reduction;

/* eo_cross_entropy with PyTorch's `reduction` (torch.nn.functional.
 * cross_entropy(logits, target, ignore_index=, reduction=)): MEAN as
 * eo_cross_entropy; SUM the sum over kept rows (0 when none is kept, as
 * torch); NONE the per-row losses, out [N], with 0 for an ignored row (as
 * torch). EO_ERR_ARG for any other value. */
eo_status eo_cross_entropy_ex(eo_ctx *ctx, eo_tensor *logits, eo_tensor *target,
                              int32_t ignore_index, eo_reduction reduction, eo_tensor **out);

/* Layer normalisation over the last axis (Ba, Kiros & Hinton 2016):
 * y = (x - mean) / sqrt(var + eps) * w + b, var biased, computed around
 * the mean so rows like 1e4 + noise keep their precision (statistics in
 * f32). x f32, bf16 or f16, w and b [C] of x's dtype or NULL, y of x's
 * dtype (EO_ERR_DTYPE otherwise). EO_ERR_SHAPE when w or b is not [C]. */
eo_status eo_layernorm(eo_ctx *ctx, eo_tensor *x, eo_tensor *w, eo_tensor *b, float eps,
                       eo_tensor **out);

/* Rows of table [V, D] (f32, bf16 or f16; out has its dtype) picked by
 * idx (i32, any shape S; EO_ERR_DTYPE otherwise): out is [S..., D]. The backward adds each output row into its table row, so a
 * repeated index gets every contribution. EO_ERR_ARG for an index outside
 * [0, V) (CPU). */
eo_status eo_embedding(eo_ctx *ctx, eo_tensor *table, eo_tensor *idx, eo_tensor **out);

/* Inverted dropout, x f32, bf16 or f16, out of x's dtype: each element kept with probability 1 - p and scaled
 * by 1/(1-p); the mask is a pure function of (seed, index), see
 * ops/kernels.h. A dropped element is x * 0, as in PyTorch: a NaN or inf
 * there gives NaN, never a silent 0. p in [0, 1), else EO_ERR_ARG. */
eo_status eo_dropout(eo_ctx *ctx, eo_tensor *x, float p, uint64_t seed, eo_tensor **out);

/* Join n tensors (1 <= n <= 16) along `axis`; dtype, rank and all other
 * sizes must match, and the joined size must fit in int64 (EO_ERR_SHAPE);
 * EO_ERR_AXIS for an axis out of range. */
eo_status eo_concat(eo_ctx *ctx, eo_tensor *const *xs, int n, int axis, eo_tensor **out);

/* ---- convolution ------------------------------------------------------------ */

/* 2-D convolution (cross-correlation, as PyTorch), x [N, C, H, W],
 * w [Co, C, kh, kw], bias [Co] or NULL, all f32, bf16 or f16 of one dtype
 * (out of that dtype; EO_ERR_DTYPE otherwise), zero padding `pad`, stride
 * `stride`: out [N, Co, OH, OW], OH = (H + 2 pad - kh) / stride + 1.
 * Computed as im2col + matmul: on the CPU in one fused op, one image at a
 * time in a small workspace (no column matrix in memory); on other
 * backends composed from the im2col op and a matmul. EO_ERR_ARG for pad < 0 or stride < 1;
 * EO_ERR_SHAPE for other ranks (a scalar included), a kernel with an
 * empty side or larger than the padded input, or sizes whose im2col
 * matrix [C*kh*kw, N*OH*OW] does not fit (a huge pad). */
eo_status eo_conv2d(eo_ctx *ctx, eo_tensor *x, eo_tensor *w, eo_tensor *bias, int pad,
                    int stride, eo_tensor **out);
/* k×k max pooling with stride k: x [N, C, H, W] → [N, C, H/k, W/k]; x
 * f32, bf16 or f16, out of x's dtype.
 * Each window's value and gradient go to its first maximum, or to its
 * last NaN when it holds any (PyTorch's rule: take v if v > max or v is
 * NaN, in row-major order).
 * EO_ERR_ARG for k < 1; EO_ERR_SHAPE for another rank, H or W < k, or an
 * H×W plane of more than 2^31 - 1 pixels (the argmax is an i32 index). */
eo_status eo_maxpool2d(eo_ctx *ctx, eo_tensor *x, int k, eo_tensor **out);
/* eo_maxpool2d(eo_relu(x), k) in one op: x [N, C, H, W] f32, bf16 or
 * f16 → [N, C, H/k, W/k], the same values and gradients. On the CPU
 * with f32, one pass that never stores the ReLU's output (or, in the
 * backward, its gradient); elsewhere the two ops in turn. Statuses as
 * eo_maxpool2d. eo_sequential_forward uses it for a ReLU layer followed
 * by a max pool layer. */
eo_status eo_relu_maxpool2d(eo_ctx *ctx, eo_tensor *x, int k, eo_tensor **out);

/* ---- attention ---------------------------------------------------------------- */

/* An additive causal mask [T, T] (f32 always, step arena): 0 where key j <= query
 * i, -inf above the diagonal. Added to attention scores before softmax,
 * it stops a position from seeing later ones. EO_ERR_ARG for T < 0,
 * EO_ERR_SHAPE when T*T elements do not fit. */
eo_status eo_causal_mask(eo_ctx *ctx, eo_device dev, int64_t T, eo_tensor **out);

/* An additive padding mask [B, 1, 1, T] (f32 always): 0 for real tokens, -inf
 * where valid[b*T + t] == 0. Broadcasts over heads and query positions. */
eo_status eo_padding_mask(eo_ctx *ctx, eo_device dev, int64_t B, int64_t T,
                          const uint8_t *valid, eo_tensor **out);

/* Scaled dot-product attention (Vaswani et al., "Attention Is All You
 * Need", 2017), composed from differentiable primitives:
 *   out = softmax(q · kᵀ · scale + mask) · v
 * q [B, H, Tq, D], k and v [B, H, Tk, D] (any strides), f32, bf16 or f16 of
 * one dtype (out of that dtype); mask NULL or additive, of any float
 * dtype, broadcastable to [B, H, Tq, Tk]; causal != 0 adds the causal
 * mask (Tq == Tk). A query row whose keys are all masked gives zeros.
 * EO_ERR_SHAPE for other ranks (a scalar included) or sizes, or when the
 * score matrix [B, H, Tq, Tk] does not fit; EO_ERR_ARG for a non-finite
 * scale. */
eo_status eo_attention(eo_ctx *ctx, eo_tensor *q, eo_tensor *k, eo_tensor *v, eo_tensor *mask,
                       int causal, float scale, eo_tensor **out);

/* The same function as one fused op: tiled over keys with an online
 * softmax (Dao et al., "FlashAttention", 2022) so the [Tq, Tk] score
 * matrix is never stored; the backward recomputes scores tile by tile
 * from the saved per-row log-sum-exp. Matches eo_attention to float32
 * tolerance, NaN included: a NaN score (from q, k or the mask) among the
 * keys a query sees makes that query's output row and its gradients NaN,
 * as PyTorch's softmax(q kᵀ scale + mask) v does; keys hidden by `causal`
 * are never read (as a masked_fill, or torch's is_causal, hides them).
 * Causal here also allows Tq < Tk: the queries are then the last Tq
 * positions (key j hidden from query i when j > i + Tk - Tq), as when new
 * tokens attend to a cache of earlier keys. bf16 / f16 q, k, v (one dtype)
 * give an output of that dtype; on CUDA, without a mask and with D a
 * multiple of 8 up to 64, both directions then run on the tensor cores
 * with the probabilities and dS rounded to that dtype before their
 * products (f32 sums): 16-bit tolerance, not f32 (ptx/README.md).
 * Statuses as eo_attention, and EO_ERR_UNSUPPORTED, at the call, for
 * sizes the device's kernels cannot take -- on CUDA a head dim D above
 * 128, B*H above 65535 or Tq above 2^20 (the message names D, or B*H or
 * Tq, and the limit); eo_attention and the CPU take any size. */
eo_status eo_attention_fused(eo_ctx *ctx, eo_tensor *q, eo_tensor *k, eo_tensor *v,
                             eo_tensor *mask, int causal, float scale, eo_tensor **out);

/* ---- autograd ------------------------------------------------------------- */

/* Backpropagate from a scalar `loss` (numel 1): every tensor on the path
 * that requires grad receives dL/dtensor in its .grad, accumulated (+=)
 * into leaves (parameters) and written afresh into intermediate tensors.
 * Once per graph, as PyTorch's loss.backward(): a backward whose path
 * passes through a node an earlier eo_backward already went through (the
 * same loss again, or a loss built on one already backpropagated) returns
 * EO_ERR_STATE before any gradient changes, where PyTorch raises "Trying
 * to backward through the graph a second time". To walk a graph again,
 * keep it on the earlier call: eo_backward_ex(ctx, loss, 1), PyTorch's
 * retain_graph=True; the next walk then adds the leaves' gradients again
 * and nothing else (intermediate gradients start afresh). Two losses that
 * share no node each take one eo_backward (gradient accumulation over
 * micro-batches: one forward and one backward each).
 * Runs with grad mode off. EO_ERR_STATE also when loss is not a scalar,
 * does not require grad, or was made (or its tape recorded) after the
 * mark the step arena was rewound to (eo_rewind). A leaf made with
 * EO_PERSIST gets a persistent gradient the first time (see eo_rewind).
 * A backward that fails (EO_ERR_OOM) gives back its step memory and
 * leaves the graph walkable; leaves may keep part of this call's
 * gradient, so zero them before the next step (as every step does). The
 * message names the rule it was in: "backward: through matmul: ...". */
eo_status eo_backward(eo_ctx *ctx, eo_tensor *loss);
/* eo_backward with PyTorch's retain_graph: 1 leaves the graph walkable
 * again, 0 is eo_backward. Statuses as eo_backward. */
eo_status eo_backward_ex(eo_ctx *ctx, eo_tensor *loss, int retain_graph);

/* ---- parameters, layers, optimizers: core/nn.h; GPT and ViT: core/transformer.h */

#ifdef __cplusplus
}
#endif

#endif
