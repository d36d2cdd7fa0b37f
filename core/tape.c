/* core/tape.c — define-by-run autograd.
 *
 * Every op that has an input requiring grad (while grad mode is on)
 * appends a node to the tape: its op id, inputs, output and whatever the
 * backward needs. Nodes are allocated in the step arena in execution
 * order and each points to the one before, so the tape is a topological
 * order for free and backward is one loop from the end: no recursion, no
 * visited-set, no hashing.
 *
 * Gradients flow by accumulation (+=). A tensor used by two ops receives
 * both contributions simply because both backward rules add into the same
 * buffer; the buffer is zeroed once, when first needed. */
#include "core/internal.h"

const char *const eo_op_names[EO_OP_COUNT] = {
#define EO_OP(ID, name) [EO_OP_##ID] = #name,
#include "core/ops.def"
#undef EO_OP
};

typedef eo_status (*eo_bwd_fn)(eo_ctx *ctx, eo_node *n);
static const eo_bwd_fn backward_rules[EO_OP_COUNT] = {
#define EO_OP(ID, name) [EO_OP_##ID] = eo_bwd_##name,
#include "core/ops.def"
#undef EO_OP
};

int eo_needs_grad(const eo_ctx *ctx, eo_tensor *const *in, int n)
{
    if (!ctx->grad_enabled || ctx->inference)
        return 0;
    for (int i = 0; i < n; i++)
        if (in[i] && in[i]->requires_grad)
            return 1;
    return 0;
}

eo_status eo_record(eo_ctx *ctx, eo_op_id op, eo_tensor *const *in, int n, eo_tensor *out,
                    eo_node **node)
{
    eo_node *nd;
    if (n > EO_NODE_MAX_IN)
        return eo_fail(ctx, EO_ERR_ARG, "%s: %d inputs, at most %d", eo_op_names[op], n,
                       EO_NODE_MAX_IN);
    EO_CHECK(eo_host_alloc(ctx, EO_STEP, sizeof *nd, (void **)&nd));
    eo_node zero = {0};
    *nd = zero;
    nd->prev = ctx->tape;
    nd->serial = ++ctx->nodes_recorded;
    nd->op = op;
    nd->n_in = n;
    for (int i = 0; i < n; i++)
        nd->in[i] = in[i];
    nd->out = out;
    out->node = nd;
    out->requires_grad = 1;
    ctx->tape = nd;
    if (node)
        *node = nd;
    return EO_OK;
}

/* A gradient lives as long as its tensor. A leaf whose header is outside
 * the step arena (made with EO_PERSIST, as eo_param_new's parameters
 * are, though those come with their gradient) keeps its gradient across
 * eo_rewind, so the gradient is made in the persistent arena, once. In
 * the step arena it would dangle after the rewind, and the next backward
 * would add into whatever the next step had put there. Anything else --
 * an op's output, a tensor made with EO_STEP or eo_tensor_wrap -- has its
 * gradient in the step arena, made after the tensor itself. */
static int grad_outlives_step(const eo_ctx *ctx, const eo_tensor *t)
{
    return !t->node && !eo_in_step_arena(ctx, t);
}

/* A step gradient can still be rewound while its tensor stays: a leaf
 * made (eo_tensor_wrap, EO_STEP) before the step's mark, whose gradient
 * the backward made after it. eo_rewind must then drop the gradient, or
 * the next backward adds into memory the next step has handed out. Each
 * such leaf is noted here, in a list in the step arena allocated right
 * after the gradient (so the note is given back whenever the gradient
 * is), newest first; eo_tape_rewound walks the part given back. An op's
 * output needs no note: eo_backward starts every node's gradient from
 * nothing. On failure the leaf is left without the gradient. */
static eo_status note_step_grad(eo_ctx *ctx, eo_tensor *t)
{
    if (t->node || !eo_in_step_arena(ctx, t))
        return EO_OK;
    eo_leaf_grad *r;
    eo_status s = eo_host_alloc(ctx, EO_STEP, sizeof *r, (void **)&r);
    if (s != EO_OK) {
        t->grad = NULL;
        return s;
    }
    r->prev = ctx->leaf_grads;
    r->leaf = t;
    r->grad = t->grad;
    ctx->leaf_grads = r;
    return EO_OK;
}

void eo_tape_rewound(eo_ctx *ctx)
{
    /* Read just after the arena moved back: what lies past its top is
     * given back but not yet written over. */
    while (ctx->tape && eo_is_rewound(ctx, ctx->tape, sizeof *ctx->tape))
        ctx->tape = ctx->tape->prev;
    eo_leaf_grad *r = ctx->leaf_grads;
    while (r && eo_is_rewound(ctx, r, sizeof *r)) {
        eo_tensor *t = r->leaf;
        if (!eo_is_rewound(ctx, t, sizeof *t) && t->grad == r->grad)
            t->grad = NULL;
        r = r->prev;
    }
    ctx->leaf_grads = r;
}

eo_status eo_grad_of(eo_ctx *ctx, eo_tensor *t, eo_tensor **g)
{
    if (!t->grad) {
        int keep = grad_outlives_step(ctx, t);
        EO_CHECK(eo_new_zeros(ctx, keep ? EO_PERSIST : EO_STEP, t->device, t->dtype, t->rank,
                              t->shape, &t->grad));
        if (!keep)
            EO_CHECK(note_step_grad(ctx, t));
    }
    *g = t->grad;
    return EO_OK;
}

eo_status eo_grad_for_write(eo_ctx *ctx, eo_tensor *t, eo_tensor **g, float *beta)
{
    *beta = 1.0f;
    if (!t->grad && grad_outlives_step(ctx, t))
        return eo_grad_of(ctx, t, g); /* zeroed once, then added to as always */
    if (!t->grad) {
        EO_CHECK(eo_new_out(ctx, t->device, t->dtype, t->rank, t->shape, &t->grad));
        EO_CHECK(note_step_grad(ctx, t));
        *beta = 0.0f;
    }
    *g = t->grad;
    return EO_OK;
}

/* Gradients that pass through unchanged (a reshape, a contiguous copy, the
 * full-shape operands of add and sub) are where a step's memory traffic
 * goes if each one is zero-filled and then added to: three passes over an
 * activation-sized buffer for no arithmetic. The first gradient a tensor
 * receives can instead be *taken*: the tensor's gradient becomes a header
 * over the incoming buffer, in its own shape. PyTorch's autograd engine
 * does the same with the first gradient an input buffer receives.
 *
 * Why this is safe: src is the gradient of the node being run (n->out),
 * and the reverse walk never reads n->out->grad again once n's rule has
 * returned (every reader of it, n's consumers, ran before n). So the
 * buffer has one live owner at a time, as long as a rule hands it to at
 * most one input (`take` is 1 for at most one call per rule); the others
 * get a copy (fresh) or an add (existing). The intermediate tensor's
 * .grad keeps pointing at the buffer, and later contributions to the
 * taker change it: after backward, only the gradients of leaves (tensors
 * without a node: parameters, inputs) are defined, as in PyTorch. */
eo_status eo_grad_add(eo_ctx *ctx, eo_tensor *x, const eo_tensor *src, int take)
{
    eo_tensor v = *src; /* src read in x's shape, row-major (src is contiguous) */
    v.grad = NULL;
    v.node = NULL;
    v.rank = x->rank;
    for (int i = 0; i < x->rank; i++)
        v.shape[i] = x->shape[i];
    eo_contiguous_strides(v.rank, v.shape, v.stride);
    if (x->grad)
        return eo_accumulate_any(ctx, x->grad, &v);
    if (grad_outlives_step(ctx, x)) { /* a step buffer cannot be taken: copy it */
        eo_tensor *g;
        EO_CHECK(eo_grad_of(ctx, x, &g));
        return eo_accumulate_any(ctx, g, &v);
    }
    if (take) {
        eo_tensor *g;
        EO_CHECK(eo_host_alloc(ctx, EO_STEP, sizeof *g, (void **)&g));
        *g = v;
        g->requires_grad = 0;
        g->name = NULL;
        g->low = NULL;
        g->lifetime = EO_STEP;
        x->grad = g;
        return note_step_grad(ctx, x);
    }
    EO_CHECK(eo_new_out(ctx, x->device, x->dtype, x->rank, x->shape, &x->grad));
    EO_CHECK(note_step_grad(ctx, x));
    return eo_copy_any(ctx, x->grad, &v);
}

int eo_grad_passes(const eo_tensor *x, const eo_tensor *src)
{
    return x->dtype == src->dtype && x->device == src->device &&
           eo_numel(x) == eo_numel(src) && eo_is_contiguous(src);
}

eo_status eo_grad_for_set(eo_ctx *ctx, eo_tensor *t, int has_set, eo_tensor **g, int *set)
{
    float beta = 1.0f;
    *set = 0;
    if (!has_set)
        return eo_grad_of(ctx, t, g);
    EO_CHECK(eo_grad_for_write(ctx, t, g, &beta));
    *set = beta == 0.0f;
    return EO_OK;
}

/* Was t->grad made during the running call (and so about to be rewound)?
 * Gradient metadata lives in the host step arena, or for a leaf that
 * outlives the step in the persistent one (grad_outlives_step). */
static int grad_is_new(const eo_ctx *ctx, const eo_tensor *t)
{
    uintptr_t g = (uintptr_t)t->grad;
    uintptr_t step = ctx->step.base + ctx->entry.host, persist = ctx->persist.base + ctx->entry_persist;
    return t->grad && ((g >= step && g < ctx->step.base + ctx->step.cap) ||
                       (g >= persist && g < ctx->persist.base + ctx->persist.cap));
}

/* A backward that failed part-way gives its step memory back (eo_leave):
 * no tensor may keep a gradient buffer from it. Gradients made before the
 * call keep what was already added to them (zero them before the next
 * step, as always). */
static void drop_new_grads(eo_ctx *ctx, eo_tensor *loss)
{
    if (grad_is_new(ctx, loss))
        loss->grad = NULL;
    for (eo_node *n = loss->node; n; n = n->prev) {
        if (grad_is_new(ctx, n->out))
            n->out->grad = NULL;
        for (int i = 0; i < n->n_in; i++)
            if (n->in[i] && grad_is_new(ctx, n->in[i]))
                n->in[i]->grad = NULL;
    }
}

static eo_status backward_walk(eo_ctx *ctx, eo_tensor *loss, int retain_graph);

/* The body of both public calls: one call each, for messages and the
 * profiling hook. */
static eo_status backward_run(eo_ctx *ctx, eo_tensor *loss, int retain_graph)
{
    EO_CHECK(eo_refuse_inference(ctx));
    eo_status s = backward_walk(ctx, loss, retain_graph);
    if (s != EO_OK && loss && ctx->depth == 1)
        drop_new_grads(ctx, loss);
    return s;
}

EO_PUBLIC(backward_ex, (eo_ctx *ctx, eo_tensor *loss, int retain_graph), (ctx, loss, retain_graph))
{
    return backward_run(ctx, loss, retain_graph);
}

EO_PUBLIC(backward, (eo_ctx *ctx, eo_tensor *loss), (ctx, loss))
{
    return backward_run(ctx, loss, 0);
}

/* Which nodes the walk from loss would run: those whose output the loss
 * depends on (inputs are always older nodes, so one pass from the newest
 * sees every consumer of a node before the node). A superset of the rules
 * that run (one may skip an input), and found before anything is added,
 * so a refused walk changes no gradient. Returns a node an earlier
 * backward without retain_graph went through, or NULL. */
static const eo_node *mark_path(eo_node *top)
{
    for (eo_node *n = top; n; n = n->prev)
        n->on_path = 0;
    top->on_path = 1;
    const eo_node *spent = NULL;
    for (eo_node *n = top; n; n = n->prev) {
        if (!n->on_path)
            continue;
        if (n->spent && !spent)
            spent = n;
        for (int i = 0; i < n->n_in; i++)
            if (n->in[i] && n->in[i]->node)
                n->in[i]->node->on_path = 1;
    }
    return spent;
}

static eo_status backward_walk(eo_ctx *ctx, eo_tensor *loss, int retain_graph)
{
    EO_CHECK(eo_expect_any(ctx, "backward", loss));
    if (eo_numel(loss) != 1 || !eo_is_float(loss->dtype))
        return eo_fail(ctx, EO_ERR_STATE,
                       "backward: loss must be one f32, bf16 or f16 element, got %T", loss);
    if (!loss->requires_grad || !loss->node)
        return eo_fail(ctx, EO_ERR_STATE,
                       "backward: loss %T does not require grad (no parameter on its path, or "
                       "grad mode was off)",
                       loss);
    if (eo_is_rewound(ctx, loss->node, sizeof *loss->node))
        return eo_fail(ctx, EO_ERR_STATE, "backward: the tape that made loss %T was rewound "
                                          "(eo_rewind): run the forward again", loss);
    /* PyTorch frees a graph as its backward walks it; a second walk raises
     * unless the first kept it (retain_graph=True). Here nothing is freed,
     * but a second walk would add every leaf's gradient again: refused the
     * same way, before anything changes. */
    const eo_node *spent = mark_path(loss->node);
    if (spent)
        return eo_fail(ctx, EO_ERR_STATE, "backward: loss %T depends on %s output %T, which an "
                                          "earlier backward already went through (a second "
                                          "backward would add its gradients again): run the "
                                          "forward again, or keep the graph with "
                                          "eo_backward_ex(..., retain_graph 1) on the first one",
                       loss, eo_op_names[spent->op], spent->out);

    /* Intermediate gradients start from nothing on every call, so a second
     * backward over a retained tape only adds to the leaves again. */
    for (eo_node *n = loss->node; n; n = n->prev)
        n->out->grad = NULL;

    eo_tensor *g;
    EO_CHECK(eo_grad_of(ctx, loss, &g));
    EO_CHECK(eo_fill_any(ctx, g, 1.0f)); /* dL/dL = 1, in the loss's dtype */

    ctx->grads_pending = 1; /* the next optimizer step all-reduces first */
    int was = eo_set_grad(ctx, 0); /* backward records nothing */
    eo_status s = EO_OK;
    for (eo_node *n = loss->node; n && s == EO_OK; n = n->prev) {
        if (!n->out->grad) /* not on the loss's path */
            continue;
        if (ctx->profile.fn)
            ctx->profile.fn(ctx->profile.user, eo_op_names[n->op], EO_PROFILE_BACKWARD, 0,
                            ctx->depth + 1);
        s = backward_rules[n->op](ctx, n);
        if (ctx->profile.fn)
            ctx->profile.fn(ctx->profile.user, eo_op_names[n->op], EO_PROFILE_BACKWARD, 1,
                            ctx->depth + 1);
        if (s != EO_OK) /* say which rule: "backward: through matmul: arena ..." */
            eo_refail(ctx, s, "through", eo_op_names[n->op]);
    }
    eo_set_grad(ctx, was);
    if (s == EO_OK && !retain_graph)
        for (eo_node *n = loss->node; n; n = n->prev)
            n->spent |= n->on_path;
    return s;
}
