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
/* Set every gradient to zero (call before each step's backward).
 * EO_ERR_STATE in inference mode (eo_ctx_set_inference in core/everyo.h). */
eo_status eo_params_zero_grad(eo_ctx *ctx, const eo_params *ps);
/* Make every parameter of ps trainable: one made in inference mode (no
 * gradient) gets its gradient now, zeroed, in the persistent arena
 * (as many bytes again as its values), and requires_grad is set on all;
 * parameters that have a gradient keep it. This is how a model loaded for
 * generation is fine-tuned: eo_ctx_set_inference(ctx, 0), then this, then
 * an optimizer. EO_ERR_ARG for NULL (the list or an entry); EO_ERR_STATE
 * in inference mode, for a parameter past a rewind or a read-only
 * borrowed one (nothing changes then); EO_ERR_OOM when the persistent
 * arena is full (nothing changes either). */
eo_status eo_params_enable_grad(eo_ctx *ctx, const eo_params *ps);
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
/* The layers in order, x -> y. A ReLU layer directly followed by a max
 * pool layer runs as one eo_relu_maxpool2d: the same values and
 * gradients as the two layers, without the ReLU's output in memory. */
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
    const eo_params *params; /* the optimizer's own copy of the init's list */
    float lr;            /* set per step by a schedule, or left constant */
    float momentum;      /* SGD */
    float dampening;     /* SGD */
    int nesterov;        /* SGD */
    float beta1, beta2, eps; /* AdamW */
    float weight_decay;
    /* Weight decay only for parameters of rank >= decay_min_rank; the
     * others are updated with decay 0. Every init sets 0 (all decayed, as
     * torch.optim with one parameter group); set 2 after the init for
     * the GPT recipe of nanoGPT's configure_optimizers (decay on matmul
     * weights and embeddings, none on biases and LayerNorm gains and
     * biases — "p.dim() >= 2"). Negative values act as 0. */
    int decay_min_rank;
    int64_t step;        /* updates done so far */
    eo_tensor **m, **v;  /* state per parameter (persistent), NULL if unused */
    /* ZeRO-1 (eo_adamw_init_shard): this optimizer owns only elements
     * [shard_begin, shard_begin + shard_count) of the parameters
     * flattened in list order; sharded 0: all of them. */
    int sharded;
    int64_t shard_begin, shard_count;
} eo_optimizer;

/* Every optimizer's init and eo_optimizer_step return EO_ERR_STATE in
 * inference mode (eo_ctx_set_inference, core/everyo.h); an init also for
 * a parameter without a gradient (one made in inference mode: give it
 * one with eo_params_enable_grad), naming it. */

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
 * failed init leaves an optimizer whose step returns EO_ERR_STATE.
 * Ownership: every init copies the list ps (the tensor pointers, not the
 * tensors) into the persistent arena with the state, and o->params
 * points at that copy. The caller's eo_params may go out of scope after
 * the init; a parameter added to it afterwards is not stepped (it has no
 * state here), as torch.optim steps only the parameters it was given:
 * make the optimizer once the model is built. The tensors themselves must
 * outlive the optimizer (they are the model's). */

/* Update every parameter from its gradient, then count the step.
 * EO_ERR_ARG when o->lr (set by a schedule) is not finite and >= 0. */
eo_status eo_optimizer_step(eo_ctx *ctx, eo_optimizer *o);

/* Sum the gradients of ps across ranks through the context's all-reduce
 * hook (eo_ctx_set_grad_sync in core/everyo.h), in ps's order. Without a
 * hook it does nothing. It runs by itself, once, in the first
 * eo_clip_grad_norm or eo_optimizer_step after a backward (so clipping
 * sees the global norm, and every training loop gets it); call it
 * yourself only to look at the summed gradients earlier. Statuses: the
 * hook's, with its message (the library terminates the hook's text at
 * its msg_len - 1'th byte, whatever the hook wrote). */
eo_status eo_grad_allreduce(eo_ctx *ctx, const eo_params *ps);

/* Scale all gradients so their global L2 norm is at most max_norm (as
 * torch.nn.utils.clip_grad_norm_: factor max_norm / (norm + 1e-6) when
 * norm > max_norm). *norm_out receives the norm before clipping (may be
 * NULL). EO_ERR_ARG for max_norm <= 0 or NaN (+inf: no clipping).
 * A NaN or inf norm is returned with EO_OK, as torch's default
 * error_if_nonfinite=False does (the step a grad scaler skips has one;
 * the gradients are multiplied as torch does: by 0 for an inf norm, by
 * NaN for a NaN one). eo_clip_grad_norm_ex with error_if_nonfinite 1
 * returns EO_ERR_NUMERIC there instead, gradients unchanged. */
eo_status eo_clip_grad_norm(eo_ctx *ctx, const eo_params *ps, float max_norm, float *norm_out);
eo_status eo_clip_grad_norm_ex(eo_ctx *ctx, const eo_params *ps, float max_norm,
                               int error_if_nonfinite, float *norm_out);

/* ---- mixed precision: master weights ------------------------------------------------
 * Micikevicius et al., "Mixed Precision Training" (ICLR 2018), sec. 3.1:
 * every parameter keeps its f32 value (the master), its f32 gradient and
 * f32 optimizer state; the forward reads a 16-bit copy. Here the copy is
 * p->low (core/everyo.h), a tensor of the parameter's shape in the
 * persistent arena of its device, made once by eo_params_enable_low and
 * rewritten from the master by every eo_optimizer_step right after the
 * parameter's update (in the same pass when the backend's optimizer
 * kernel can write it, else by one cast), so it is rounded once per
 * step, not at every use. Ops under autocast (eo_ctx_set_autocast) read
 * the copy instead of casting the master; the tape records a cast from
 * the master, so the gradient lands in the master's f32 gradient. Cost:
 * 2 bytes per parameter on top of f32's 16 (weight, gradient, AdamW's m
 * and v).
 *
 * Give every parameter of ps a working copy of dtype (EO_BF16 or
 * EO_F16), filled from its master; a parameter that already has one of
 * that dtype keeps it. EO_ERR_ARG for another dtype, EO_ERR_DTYPE for a
 * parameter that is not f32, EO_ERR_OOM (no parameter then has a new
 * copy). */
eo_status eo_params_enable_low(eo_ctx *ctx, const eo_params *ps, eo_dtype dtype);
/* Rewrite every working copy from its master: after writing masters
 * yourself (loading a checkpoint, gathering ZeRO shards). The optimizer
 * step does it by itself. */
eo_status eo_params_refresh_low(eo_ctx *ctx, const eo_params *ps);

/* ---- dynamic loss scaling (f16 training) ------------------------------------------
 * Gradients of an f16 model underflow to zero below 2^-24 (and lose bits
 * below 2^-14), so the loss is multiplied by a scale S before the
 * backward and every gradient is divided by S before the update
 * (Micikevicius et al., "Mixed Precision Training", ICLR 2018, sec. 3.2).
 * S adapts: when any gradient is inf or NaN the step is skipped and S
 * halves; after `growth_interval` steps in a row without one, S doubles.
 * The semantics are PyTorch's torch.amp.GradScaler (torch.cuda.amp in
 * 1.13) with its defaults, checked against it (tests/test_grad_scaler.c):
 *
 *   eo_grad_scaler_scale_loss(ctx, &sc, loss, &scaled);  // scaler.scale(loss)
 *   eo_backward(ctx, scaled);                            // .backward()
 *   eo_grad_scaler_unscale(ctx, &sc, &params);           // scaler.unscale_(opt)
 *   eo_clip_grad_norm(ctx, &params, 1.0f, NULL);         //   optional: clip unscaled
 *   eo_grad_scaler_step(ctx, &sc, &opt, &stepped);       // scaler.step(opt)
 *   eo_grad_scaler_update(ctx, &sc);                     // scaler.update()
 *
 * bf16 has f32's exponent range, so its gradients neither underflow nor
 * overflow where f32's would not: bf16 (and f32) training needs no
 * scaler. Initialise it with enabled 0 there and the same loop runs
 * unchanged: scale_loss returns the loss itself, unscale does nothing,
 * step is eo_optimizer_step and update does nothing (as GradScaler(
 * enabled=False)). The check runs on the device that holds the
 * gradients (the backend's unscale_check kernel) and brings home one
 * float per step. Parameters' gradients must be f32 (they are: a
 * parameter is its f32 master, see "master weights" above). */
typedef struct eo_grad_scaler {
    int enabled;
    float scale;             /* S, starts at init_scale */
    float growth_factor;     /* S *= this after growth_interval good steps (2) */
    float backoff_factor;    /* S *= this on a step with inf/NaN (0.5) */
    int64_t growth_interval; /* 2000 */
    int64_t growth_tracker;  /* good steps in a row since S last changed */
    int64_t skipped;         /* steps skipped so far, for reports */
    int stage;               /* 0 ready, 1 unscaled, 2 stepped (GradScaler's OptState),
                                3 the optimizer's step failed after unscaling */
    int found_inf;           /* this step's gradients held an inf or NaN */
} eo_grad_scaler;

/* A scaler with torch.amp.GradScaler's defaults: init_scale 2^16, growth
 * factor 2, backoff 0.5, growth interval 2000. enabled 0: a pass-through
 * (bf16, f32). */
eo_status eo_grad_scaler_init(eo_ctx *ctx, eo_grad_scaler *sc, int enabled);
/* The same with every setting: init_scale finite and > 0, growth_factor
 * > 1 and finite, backoff_factor in (0, 1), growth_interval >= 1, else
 * EO_ERR_ARG (GradScaler asserts the two factors). */
eo_status eo_grad_scaler_init_ex(eo_ctx *ctx, eo_grad_scaler *sc, int enabled, float init_scale,
                                 float growth_factor, float backoff_factor,
                                 int64_t growth_interval);
/* *out = loss * S (eo_scale: differentiable, so the backward of *out
 * gives S times every gradient). loss is a scalar (numel 1), f32, else
 * EO_ERR_SHAPE / EO_ERR_DTYPE. Disabled: *out = loss. */
eo_status eo_grad_scaler_scale_loss(eo_ctx *ctx, const eo_grad_scaler *sc, eo_tensor *loss,
                                    eo_tensor **out);
/* Unscale and check, in one pass per gradient on its device: each
 * parameter's gradient (f32) is multiplied by 1/S (the reciprocal taken
 * in double, as GradScaler) and sc->found_inf set when any element was
 * inf or NaN before that. Data-parallel: the gradients are summed across
 * ranks first (eo_grad_allreduce), so every rank finds the same. Once per
 * step: EO_ERR_STATE when called again before eo_grad_scaler_update, or
 * after eo_grad_scaler_step (GradScaler raises RuntimeError there too). */
eo_status eo_grad_scaler_unscale(eo_ctx *ctx, eo_grad_scaler *sc, const eo_params *ps);
/* Unscale (unless done this step), then eo_optimizer_step(ctx, o) only
 * when no inf/NaN was found; *stepped (may be NULL) is 1 when the update
 * ran, 0 when it was skipped (the parameters, the optimizer state and
 * o->step are then untouched, as torch leaves them). EO_ERR_STATE when
 * called again after a step that ran or was skipped. When the optimizer's
 * step fails, its status is returned and the scaler is not marked as
 * stepped (GradScaler's stage stays UNSCALED): the call may be retried,
 * without unscaling again; an eo_grad_scaler_update with no successful
 * retry counts no step (neither growth nor backoff). Disabled:
 * eo_optimizer_step, *stepped 1. */
eo_status eo_grad_scaler_step(eo_ctx *ctx, eo_grad_scaler *sc, eo_optimizer *o, int *stepped);
/* End the step: found inf/NaN -> S *= backoff_factor, tracker 0; else
 * tracker + 1, and when it reaches growth_interval S *= growth_factor
 * (kept only if the product is finite) and tracker 0 — exactly
 * torch._amp_update_scale_. EO_ERR_STATE when no unscale or step ran
 * this step (GradScaler: "No inf checks were recorded"). */
eo_status eo_grad_scaler_update(eo_ctx *ctx, eo_grad_scaler *sc);

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
 *   t = (step - warmup) / (total - warmup) clamped to [0, 1].
 * STEP multiplies by gamma once per step_size steps, in order, stopping
 * early once the rate no longer changes (0, inf, a settled denormal) with
 * the bits the full walk gives; a walk still moving after 65536 factors
 * (gamma near 1) finishes with gamma^k by squaring in double — the same
 * rate to within float rounding, not always the same last bit — so any
 * step costs at most ~65700 multiplications.
 * It has no status, so it never fails and never overflows: NULL gives 0;
 * an unknown kind gives base; STEP with step_size <= 0 or step < 0 gives
 * base; COSINE reads a step < 0 as 0, a warmup < 0 as 0 and a total below
 * warmup as warmup (no decay: min from the end of warm-up on). Validate a
 * schedule once with eo_lr_schedule_check before using it. */
float eo_lr_at(const eo_lr_schedule *s, int64_t step);

/* EO_OK when s is a meaningful schedule; EO_ERR_ARG, with a message naming
 * the field, its value and the rule, for NULL, an unknown kind, base not
 * finite and >= 0, and by kind — STEP: gamma not finite and >= 0 or
 * step_size <= 0; COSINE: min not finite and >= 0, or not
 * 0 <= warmup <= total. CONSTANT reads only base. */
eo_status eo_lr_schedule_check(eo_ctx *ctx, const eo_lr_schedule *s);

#ifdef __cplusplus
}
#endif

#endif
