/* core/nn.h — layers, a parameter list, a sequential container, and the
 * optimizers that update parameters.
 *
 * Layers are plain structs that own parameter tensors (made once in the
 * persistent arena) and call ops in their forward. Nothing here touches a
 * kernel or the tape directly, so every layer runs on any backend and is
 * differentiated by the ops it calls. */
#ifndef EO_NN_H
#define EO_NN_H

#include "core/everyo.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- parameter list ------------------------------------------------------ */

/* The parameters of a model, in creation order (that order is also the
 * checkpoint order). The array lives in the persistent arena. */
typedef struct eo_params {
    eo_tensor **items;
    int count, cap;
    int borrowed;  /* made by eo_params_init_borrowed */
} eo_params;

/* Room for `cap` parameters. EO_ERR_OOM if the persistent arena is full. */
eo_status eo_params_init(eo_ctx *ctx, eo_params *ps, int cap);
/* The same for a model whose weights stay in a caller's image (flash,
 * a const array; core/safetensors.h): every parameter a layer adds to
 * this list is CPU, f32 and has no storage at all — no values, no
 * gradient — until eo_weights_bind(..., EO_BIND_IN_PLACE) points it into
 * the image, so the persistent arena holds only the tensors' metadata
 * (the 784-256-10 MLP: 1.6 KB instead of 1.6 MB). Initialising such a
 * parameter does nothing (eo_init_param, eo_fill: there is nothing to
 * fill, the values come from the image); an op on one not yet bound
 * returns EO_ERR_STATE; once bound it is read-only (inference only: zero
 * grad, clipping and optimizer steps return EO_ERR_STATE). A layer on a
 * device other than the CPU is refused (EO_ERR_DEVICE). */
eo_status eo_params_init_borrowed(eo_ctx *ctx, eo_params *ps, int cap);
/* Append. EO_ERR_STATE when full, EO_ERR_ARG when t is not a parameter. */
eo_status eo_params_add(eo_ctx *ctx, eo_params *ps, eo_tensor *t);
/* Set every gradient to zero (call before each step's backward). */
eo_status eo_params_zero_grad(eo_ctx *ctx, const eo_params *ps);
/* Total number of scalars. */
int64_t eo_params_numel(const eo_params *ps);
/* The parameter called `name`, or NULL. */
eo_tensor *eo_params_find(const eo_params *ps, const char *name);

/* Initialisation schemes. */
typedef enum eo_init {
    /* PyTorch's default for Linear and Conv2d: Kaiming-uniform with
     * a = sqrt(5) (He et al., "Delving Deep into Rectifiers", 2015), which
     * is U(-1/sqrt(fan_in), 1/sqrt(fan_in)); the bias uses the same bound. */
    EO_INIT_KAIMING_UNIFORM,
    /* Glorot & Bengio 2010: U(±sqrt(6 / (fan_in + fan_out))), bias 0. */
    EO_INIT_XAVIER_UNIFORM,
    /* N(0, 0.02²), bias 0 — GPT-2's scheme. */
    EO_INIT_NORMAL_002,
} eo_init;

/* Fill a parameter from the context's PCG32 generator:
 * uniform in [-bound, bound) or normal with std `bound` (normal != 0). */
eo_status eo_init_param(eo_ctx *ctx, eo_tensor *t, float bound, int normal);

/* A parameter named "<prefix>.<leaf>", initialised later by the caller.
 * The name is copied into the persistent arena. */
eo_status eo_param_named(eo_ctx *ctx, eo_params *ps, eo_device dev, const char *prefix,
                         const char *leaf, int rank, const int64_t *shape, eo_tensor **out);

/* ---- layers -------------------------------------------------------------------- */

typedef enum eo_module_kind {
    EO_MOD_LINEAR,    /* y = x · Wᵀ + b, W [out, in] (PyTorch's layout), b [out] */
    EO_MOD_RELU,
    EO_MOD_TANH,
    EO_MOD_GELU,      /* tanh approximation */
    EO_MOD_DROPOUT,   /* active only in training mode */
    EO_MOD_LAYERNORM, /* over the last axis, weight 1 and bias 0 at init */
    EO_MOD_CONV2D,    /* NCHW, W [Co, C, k, k], b [Co] */
    EO_MOD_MAXPOOL2D,
    EO_MOD_FLATTEN,   /* [N, ...] -> [N, prod(...)] */
} eo_module_kind;

typedef struct eo_module {
    eo_module_kind kind;
    eo_tensor *w, *b;   /* parameters, NULL when the layer has none */
    float p;            /* dropout probability */
    float eps;          /* layernorm epsilon */
    int pad, stride, k; /* conv2d padding and stride, pool size */
} eo_module;

/* Make layers. `prefix` names the parameters ("<prefix>.weight", ".bias");
 * they are appended to ps (may be NULL). dev is where the parameters live.
 * EO_ERR_ARG for a NULL module or prefix, sizes < 1, conv2d's k < 1,
 * pad < 0 or stride < 1, layernorm's eps not finite and > 0; EO_ERR_SHAPE
 * when a weight's size does not fit; EO_ERR_OOM. A failed init gives
 * back what it took (arena and list) and leaves *m without weights: a
 * forward through it returns EO_ERR_STATE. */
eo_status eo_linear_init(eo_ctx *ctx, eo_params *ps, eo_device dev, const char *prefix,
                         int64_t in, int64_t out, int bias, eo_init init, eo_module *m);
eo_status eo_conv2d_init(eo_ctx *ctx, eo_params *ps, eo_device dev, const char *prefix,
                         int64_t in_ch, int64_t out_ch, int k, int pad, int stride,
                         eo_module *m);
eo_status eo_layernorm_init(eo_ctx *ctx, eo_params *ps, eo_device dev, const char *prefix,
                            int64_t dim, float eps, eo_module *m);
/* Layers without parameters. */
eo_module eo_relu_module(void);
eo_module eo_gelu_module(void);
eo_module eo_tanh_module(void);
eo_module eo_dropout_module(float p);
eo_module eo_maxpool2d_module(int k);
eo_module eo_flatten_module(void);

/* Run one layer. Linear accepts [..., in] (any rank <= 4). Dropout draws
 * its seed from the context's generator, and is the identity when
 * ctx->training is 0 (its p must still be in [0, 1): EO_ERR_ARG). Messages
 * name the layer ("linear_forward: ..."); EO_ERR_STATE for a layer whose
 * init failed or never ran. */
eo_status eo_module_forward(eo_ctx *ctx, const eo_module *m, eo_tensor *x, eo_tensor **y);

/* A sequence of layers applied in order. A container (or a parameter
 * list) whose init failed refuses adds and forwards with EO_ERR_STATE. */
typedef struct eo_sequential {
    eo_module *mods;
    int count, cap;
} eo_sequential;

eo_status eo_sequential_init(eo_ctx *ctx, eo_sequential *s, int cap);
eo_status eo_sequential_add(eo_ctx *ctx, eo_sequential *s, eo_module m);
eo_status eo_sequential_forward(eo_ctx *ctx, const eo_sequential *s, eo_tensor *x,
                                eo_tensor **y);

/* The arena bytes net needs for one step on x, measured by running it
 * (see "sizing the arenas" in core/everyo.h): with target NULL an
 * inference forward (no tape, evaluation mode), otherwise a training step
 * as eo-train runs it — zero the gradients of ps, forward in training
 * mode, cross-entropy against target (int32 [N], ignore_index -100),
 * backward. The optimizer's update is not run: SGD and AdamW update in
 * place and take no step arena (their state is in the persistent figure
 * once they are made), so the model's weights are unchanged; its
 * gradients are left as the backward made them (zero them before
 * training) and the generator has moved where dropout draws. Afterwards
 * the step arena, the tape and the grad and training modes are as they
 * were. x and target are the caller's own (wrapped) tensors, made before
 * the call as its real step makes them, so the figure is exact:
 * out->step is the step arena's peak, out->persist what the persistent
 * arena holds; both include what the context needed before the call
 * (building and initialising the model borrows step memory), so they
 * size buffers for the whole program: build, then steps. Statuses: those of the ops run (EO_ERR_OOM when ctx's step
 * arena is too small to measure in); EO_ERR_ARG for a NULL argument. */
eo_status eo_sequential_plan(eo_ctx *ctx, const eo_sequential *net, const eo_params *ps,
                             eo_tensor *x, eo_tensor *target, eo_arena_needs *out);

/* Training mode (dropout on) or evaluation mode; returns the previous one. */
int eo_set_training(eo_ctx *ctx, int training);

/* ---- optimizers ------------------------------------------------------------------ */

typedef enum eo_optim_kind { EO_OPTIM_SGD, EO_OPTIM_ADAMW } eo_optim_kind;

typedef struct eo_optimizer {
    eo_optim_kind kind;
    const eo_params *params;
    float lr;            /* set per step by a schedule, or left constant */
    float momentum;      /* SGD */
    float dampening;     /* SGD */
    int nesterov;        /* SGD */
    float beta1, beta2, eps; /* AdamW */
    float weight_decay;
    int64_t step;        /* updates done so far */
    eo_tensor **m, **v;  /* state per parameter (persistent), NULL if unused */
    /* ZeRO-1 (eo_adamw_init_shard): this optimizer owns only elements
     * [shard_begin, shard_begin + shard_count) of the parameters
     * flattened in list order; sharded 0: all of them. */
    int sharded;
    int64_t shard_begin, shard_count;
} eo_optimizer;

/* SGD with momentum (and Nesterov) and L2 weight decay, as
 * torch.optim.SGD with dampening 0 (Sutskever et al. 2013 for Nesterov):
 * state `v` per parameter when momentum > 0. */
eo_status eo_sgd_init(eo_ctx *ctx, eo_optimizer *o, const eo_params *ps, float lr,
                      float momentum, float weight_decay, int nesterov);
/* The same with torch.optim.SGD's dampening (arguments in torch's order):
 * v = momentum v + (1 - dampening) d, except on the first step, where v
 * = d undamped, as torch starts its buffer. EO_ERR_ARG for dampening
 * outside [0, 1] or NaN, and for Nesterov with dampening != 0 (torch
 * refuses that pair too). */
eo_status eo_sgd_init_ex(eo_ctx *ctx, eo_optimizer *o, const eo_params *ps, float lr,
                         float momentum, float dampening, float weight_decay, int nesterov);
/* AdamW (Loshchilov & Hutter, ICLR 2019) with bias correction: state m
 * and v per parameter. Typical: beta1 0.9, beta2 0.999, eps 1e-8, wd 0.01. */
eo_status eo_adamw_init(eo_ctx *ctx, eo_optimizer *o, const eo_params *ps, float lr,
                        float beta1, float beta2, float eps, float weight_decay);
/* AdamW over one shard of the parameters, for ZeRO-1 data parallelism
 * (optimizer state sharded across ranks; Rajbhandari et al., "ZeRO",
 * SC 2020): the parameters are flattened in list order, and this
 * optimizer keeps m and v for elements [begin, begin + count) only — for
 * a parameter that overlaps the range, 1-D state of the overlap's length
 * (NULL for one that does not) — so each of N ranks holds about 1/N of
 * the state. eo_optimizer_step then updates only those elements, reading
 * only their gradients: the program sums just that range across ranks
 * (a reduce-scatter) before the step and gathers the updated weights
 * from every rank after it (tools/dist/dist.h does both with the same
 * rank-order sums as the full all-reduce, so the result is bit-identical
 * to plain data parallelism). The all-reduce hook (core/everyo.h) then
 * sums only this range too, so eo_clip_grad_norm would see a partly
 * local gradient: do not clip a sharded run. EO_ERR_ARG when the range
 * is empty or reaches past the parameters. */
eo_status eo_adamw_init_shard(eo_ctx *ctx, eo_optimizer *o, const eo_params *ps, float lr,
                              float beta1, float beta2, float eps, float weight_decay,
                              int64_t begin, int64_t count);
/* Hyper-parameters: lr, weight_decay and momentum finite and >= 0, betas
 * in [0, 1), eps finite and > 0 (a NaN fails every one): EO_ERR_ARG. A
 * failed init leaves an optimizer whose step returns EO_ERR_STATE. */

/* Update every parameter from its gradient, then count the step.
 * EO_ERR_ARG when o->lr (set by a schedule) is not finite and >= 0. */
eo_status eo_optimizer_step(eo_ctx *ctx, eo_optimizer *o);

/* Sum the gradients of ps across ranks through the context's all-reduce
 * hook (eo_ctx_set_grad_sync in core/everyo.h), in ps's order. Without a
 * hook it does nothing. It runs by itself, once, in the first
 * eo_clip_grad_norm or eo_optimizer_step after a backward (so clipping
 * sees the global norm, and every training loop gets it); call it
 * yourself only to look at the summed gradients earlier. Statuses: the
 * hook's, with its message. */
eo_status eo_grad_allreduce(eo_ctx *ctx, const eo_params *ps);

/* Scale all gradients so their global L2 norm is at most max_norm (as
 * torch.nn.utils.clip_grad_norm_: factor max_norm / (norm + 1e-6) when
 * norm > max_norm). *norm_out receives the norm before clipping (may be
 * NULL). EO_ERR_ARG for max_norm <= 0 or NaN (+inf: no clipping).
 * EO_ERR_NUMERIC when the norm is NaN or Inf: the gradients are left
 * unchanged and the step should be skipped. */
eo_status eo_clip_grad_norm(eo_ctx *ctx, const eo_params *ps, float max_norm, float *norm_out);

/* Learning-rate schedules: a pure function of the step number. */
typedef enum eo_lr_kind { EO_LR_CONSTANT, EO_LR_STEP, EO_LR_COSINE } eo_lr_kind;
typedef struct eo_lr_schedule {
    eo_lr_kind kind;
    float base;          /* peak learning rate */
    float min;           /* COSINE: final learning rate */
    float gamma;         /* STEP: factor every step_size steps */
    int64_t step_size;   /* STEP */
    int64_t warmup;      /* COSINE: linear warm-up steps from base/warmup to base */
    int64_t total;       /* COSINE: steps over which to decay to min */
} eo_lr_schedule;

/* The rate for 0-based `step`:
 *   CONSTANT: base;  STEP: base * gamma^floor(step / step_size);
 *   COSINE (Loshchilov & Hutter, SGDR, 2017, with linear warm-up as in
 *   Goyal et al. 2017): base * (step + 1) / warmup while step < warmup,
 *   then min + (base - min) * (1 + cos(pi * t)) / 2 with
 *   t = (step - warmup) / (total - warmup) clamped to [0, 1]. */
float eo_lr_at(const eo_lr_schedule *s, int64_t step);

#ifdef __cplusplus
}
#endif

#endif
