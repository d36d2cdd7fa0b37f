/* core/op_matmul.c — (batched) matrix product and its backward.
 *
 * The kernel multiplies row-major matrices, each optionally read
 * transposed. So a transposed *view* (e.g. kᵀ in attention, made by
 * eo_transpose) costs no copy: its last two strides say it is column-
 * major, and we just flip the kernel's transpose flag for it.
 *
 * Backward, for C = op(A)·op(B) with dC = dL/dC:
 *   d op(A) = dC · op(B)ᵀ,   d op(B) = op(A)ᵀ · dC.
 * When the user asked for Aᵀ, the gradient buffer holds A's own layout,
 * so we store (d op(A))ᵀ = op(B) · dCᵀ instead; likewise for B. Every case
 * is one more call of the same kernel with flags flipped.
 *
 * A 2-D operand shared by a batch (a weight, batch stride 0) receives the
 * sum of the per-batch gradients. When the other operand's batch is
 * stored as one tall matrix we fold the batch into the inner dimension
 * and do it in a single call; otherwise one call per batch entry, adding. */
#include "core/internal.h"

/* One matmul operand as the kernel sees it. */
typedef struct {
    const void *p; /* f32, or bf16 / f16 for the 16-bit kernel */
    int64_t ld;  /* row stride of the stored matrix */
    int64_t bs;  /* batch stride (0: shared) */
    int t;       /* stored transposed relative to the logical matrix */
} mm_operand;

static mm_operand flip(mm_operand o)
{
    o.t = !o.t;
    return o;
}

/* Describe tensor x (logically transposed when `t`) as a kernel operand.
 * Fails with 0 when its layout has no unit stride in the last two axes or
 * its batch axes do not collapse to a single stride. */
static int describe(const eo_tensor *x, int t, mm_operand *o)
{
    int r = x->rank;
    int64_t rows = x->shape[r - 2], cols = x->shape[r - 1];
    int64_t s0 = x->stride[r - 2], s1 = x->stride[r - 1];
    o->p = x->data;
    if (s1 == 1 || cols == 1) {           /* row-major */
        o->ld = s0 > cols ? s0 : cols;
        o->t = t;
    } else if (s0 == 1 || rows == 1) {    /* column-major: a transposed view */
        o->ld = s1 > rows ? s1 : rows;
        o->t = !t;
    } else {
        return 0;
    }
    /* Batch axes: sizes > 1 must nest (outer stride = inner stride * size). */
    o->bs = 0;
    int64_t expect = -1;
    for (int i = r - 3; i >= 0; i--) {
        if (x->shape[i] == 1)
            continue;
        if (expect >= 0 && x->stride[i] != expect)
            return 0;
        if (expect < 0)
            o->bs = x->stride[i];
        expect = x->stride[i] * x->shape[i];
    }
    return 1;
}

/* C_b = X_b · Y_b (+ C_b when beta = 1) for b < batch; C batch stride sc.
 * A shared C (sc = 0) with batch > 1 is accumulated one entry at a time. */
/* One kernel call: the f32 kernel, or for bf16 / f16 operands (dt) the
 * 16-bit one with C of dtype odt: dt (rounded once per call), or f32 (a
 * master weight's gradient, eo_bwd_matmul). */
static void mm_call(const eo_backend *be, eo_ctx *ctx, eo_dtype dt, eo_dtype odt, int64_t batch,
                    int64_t M, int64_t N, int64_t K, mm_operand X, int64_t xoff, int64_t xbs,
                    mm_operand Y, int64_t yoff, int64_t ybs, float beta, void *C, int64_t ldc,
                    int64_t sc, void *ws)
{
    if (dt == EO_F32) {
        be->matmul(X.t, Y.t, batch, M, N, K, (const float *)X.p + xoff, X.ld, xbs,
                   (const float *)Y.p + yoff, Y.ld, ybs, beta, C, ldc, sc, ws, &ctx->exec);
        return;
    }
    be->matmul16(X.t, Y.t, batch, M, N, K, (int)dt, (const uint16_t *)X.p + xoff, X.ld, xbs,
                 (const uint16_t *)Y.p + yoff, Y.ld, ybs, beta, (int)odt, C, ldc, sc, ws,
                 &ctx->exec);
}

static eo_status mm(eo_ctx *ctx, const eo_backend *be, eo_dtype dt, eo_dtype odt, int64_t batch,
                    int64_t M, int64_t N, int64_t K, mm_operand X, mm_operand Y, void *C,
                    int64_t ldc, int64_t sc, float beta)
{
    eo_k_matmul_ws_fn *wsf = dt == EO_F32 ? be->matmul_ws : be->matmul16_ws;
    size_t bytes = wsf ? wsf(M, N, K, eo_par_threads(&ctx->exec.par)) : 0;
    eo_lent ws; /* the workspace lives for this call only */
    EO_CHECK(eo_lend(ctx, be->device, bytes, &ws));
    if (sc == 0 && batch > 1) {
        for (int64_t b = 0; b < batch; b++)
            mm_call(be, ctx, dt, odt, 1, M, N, K, X, b * X.bs, 0, Y, b * Y.bs, 0,
                    b ? 1.0f : beta, C, ldc, 0, ws.p);
    } else {
        mm_call(be, ctx, dt, odt, batch, M, N, K, X, 0, X.bs, Y, 0, Y.bs, beta, C, ldc, sc,
                ws.p);
    }
    eo_give_back(&ws);
    return EO_OK;
}

/* Product of the batch axes (all but the last two). */
static int64_t batch_of(const eo_tensor *x)
{
    int64_t b = 1;
    for (int i = 0; i < x->rank - 2; i++)
        b *= x->shape[i];
    return b;
}

/* Can the batch of a row-major operand be read as one tall matrix? */
static int stacks(mm_operand o, int64_t rows)
{
    return !o.t && o.bs == rows * o.ld;
}

EO_PUBLIC(matmul, (eo_ctx *ctx, eo_tensor *a, eo_tensor *b, int ta, int tb, eo_tensor **out),
          (ctx, a, b, ta, tb, out))
{
    if (!out)
        return eo_fail(ctx, EO_ERR_ARG, "matmul: NULL output pointer");
    EO_NONNULL(ctx, "matmul", a);
    EO_NONNULL(ctx, "matmul", b);
    eo_tensor *ac[2] = { a, b }; /* autocast: both to its 16-bit dtype */
    EO_AUTOCAST(ctx, EO_AUTOCAST_LOW, ac, 2, eo_matmul(ctx, ac[0], ac[1], ta, tb, out));
    /* bf16 / f16: the backend's 16-bit kernel (products summed in f32, C
     * in the operands' dtype), else through f32 (core/op_cast.c). */
    EO_CHECK(eo_expect_any(ctx, "matmul", a));
    EO_CHECK(eo_expect_any(ctx, "matmul", b));
    eo_tensor *h[2] = { a, b };
    eo_half_route hr;
    EO_CHECK(eo_half_plan(ctx, "matmul", h, 2, 0, &hr));
    const eo_dtype dt = hr.any16 ? hr.dt : EO_F32;
    if (hr.any16 && (!eo_backend_of(ctx, a)->matmul16 || a->device != b->device)) {
        EO_CHECK(eo_half_widen(ctx, h, 2));
        EO_CHECK(eo_matmul(ctx, h[0], h[1], ta, tb, out));
        return eo_half_narrow(ctx, &hr, out);
    }
    EO_CHECK(eo_expect(ctx, "matmul", a, dt));
    EO_CHECK(eo_expect(ctx, "matmul", b, dt));
    EO_CHECK(eo_same_device(ctx, "matmul", a, b));
    if (a->rank < 2 || b->rank < 2)
        return eo_fail(ctx, EO_ERR_AXIS, "matmul: operands need rank >= 2, got %T and %T", a, b);
    int ra = a->rank, rb = b->rank;
    int64_t M = ta ? a->shape[ra - 1] : a->shape[ra - 2];
    int64_t K = ta ? a->shape[ra - 2] : a->shape[ra - 1];
    int64_t Kb = tb ? b->shape[rb - 1] : b->shape[rb - 2];
    int64_t N = tb ? b->shape[rb - 2] : b->shape[rb - 1];
    if (K != Kb)
        return eo_fail(ctx, EO_ERR_SHAPE,
                       "matmul: inner sizes differ: %T%s · %T%s gives K = %lld vs %lld", a,
                       ta ? "ᵀ" : "", b, tb ? "ᵀ" : "", (long long)K, (long long)Kb);
    /* Batch axes: equal, or one operand 2-D (shared by the batch). */
    const eo_tensor *big = ra >= rb ? a : b;
    if (ra > 2 && rb > 2) {
        int same = ra == rb;
        for (int i = 0; same && i < ra - 2; i++)
            same = a->shape[i] == b->shape[i];
        if (!same)
            return eo_fail(ctx, EO_ERR_SHAPE,
                           "matmul: batch axes of %T and %T differ (they must match, or one "
                           "operand must be 2-D)",
                           a, b);
    }
    const eo_backend *be = eo_backend_of(ctx, a);
    EO_NEED_KERNEL(ctx, "matmul", be, matmul);

    mm_operand A, B;
    if (!describe(a, ta, &A)) {
        EO_CHECK(eo_contiguous(ctx, a, &a));
        describe(a, ta, &A);
    }
    if (!describe(b, tb, &B)) {
        EO_CHECK(eo_contiguous(ctx, b, &b));
        describe(b, tb, &B);
    }
    int64_t shape[EO_MAX_RANK];
    int rank = big->rank;
    for (int i = 0; i < rank - 2; i++)
        shape[i] = big->shape[i];
    shape[rank - 2] = M;
    shape[rank - 1] = N;
    eo_tensor *c;
    EO_CHECK(eo_new_out(ctx, a->device, dt, rank, shape, &c));
    int64_t batch = batch_of(big);
    if (batch > 1 && rb == 2 && stacks(A, M))   /* x[B,T,C] · W: one tall matmul */
        EO_CHECK(mm(ctx, be, dt, dt, 1, batch * M, N, K, A, B, c->data, N, 0, 0.0f));
    else
        EO_CHECK(mm(ctx, be, dt, dt, batch, M, N, K, A, B, c->data, N, M * N, 0.0f));

    eo_tensor *in[2] = { a, b };
    if (eo_needs_grad(ctx, in, 2)) {
        eo_node *n;
        EO_CHECK(eo_record(ctx, EO_OP_MATMUL, in, 2, c, &n));
        n->p.matmul.ta = ta;
        n->p.matmul.tb = tb;
    }
    *out = c;
    return EO_OK;
}

/* Where an operand's gradient goes. A parameter's 16-bit working copy
 * (its step header, core/autocast.c, names the f32 master in ->low)
 * sends it straight into the master's f32 gradient: the 16-bit kernel
 * writes C in f32 and adds (beta 1), so no 16-bit buffer of the weight's
 * size is made, rounded and widened again by the cast's backward (which
 * then finds no gradient on the copy and is skipped). Anything else gets
 * a gradient of its own dtype (eo_grad_for_write). *odt: C's dtype. */
static eo_status grad_target(eo_ctx *ctx, eo_tensor *t, eo_tensor **g, float *beta,
                             eo_dtype *odt)
{
    eo_tensor *master = t->low;
    if (eo_is_half(t->dtype) && master && master->dtype == EO_F32 && master->requires_grad &&
        master->device == t->device && !t->grad) {
        EO_CHECK(eo_grad_of(ctx, master, g));
        *beta = 1.0f;
        *odt = EO_F32;
        return EO_OK;
    }
    *odt = t->dtype;
    return eo_grad_for_write(ctx, t, g, beta);
}

eo_status eo_bwd_matmul(eo_ctx *ctx, eo_node *n)
{
    eo_tensor *a = n->in[0], *b = n->in[1], *c = n->out;
    int ta = n->p.matmul.ta, tb = n->p.matmul.tb;
    const eo_backend *be = eo_backend_of(ctx, c); /* c->dtype: f32, or 16-bit native */
    int rc = c->rank;
    int64_t M = c->shape[rc - 2], N = c->shape[rc - 1];
    int64_t K = ta ? a->shape[a->rank - 2] : a->shape[a->rank - 1];
    int64_t batch = batch_of(c);
    mm_operand A, B, dC = { c->grad->data, N, M * N, 0 };
    describe(a, ta, &A); /* the forward made both describable */
    describe(b, tb, &B);
    if (a->rank == 2) A.bs = 0;
    if (b->rank == 2) B.bs = 0;

    float beta;
    if (a->requires_grad) {
        eo_tensor *ga;
        eo_dtype oa;
        EO_CHECK(grad_target(ctx, a, &ga, &beta, &oa));
        int64_t sc = a->rank == 2 ? 0 : M * K;
        if (!ta) /* ga[M,K] = dC · op(B)ᵀ */
            EO_CHECK(mm(ctx, be, c->dtype, oa, batch, M, K, N, dC, flip(B), ga->data, K, sc, beta));
        else     /* ga[K,M] = op(B) · dCᵀ */
            EO_CHECK(mm(ctx, be, c->dtype, oa, batch, K, M, N, B, flip(dC), ga->data, M, sc, beta));
    }
    if (b->requires_grad) {
        eo_tensor *gb;
        eo_dtype ob;
        EO_CHECK(grad_target(ctx, b, &gb, &beta, &ob));
        int shared = b->rank == 2 && batch > 1;
        if (shared && stacks(A, M)) {
            /* Fold the batch into the inner dimension: one call. */
            mm_operand As = A, dCs = dC;
            As.bs = dCs.bs = 0;
            if (!tb) /* gb[K,N] = op(A)ᵀ · dC over all rows */
                EO_CHECK(mm(ctx, be, c->dtype, ob, 1, K, N, batch * M, flip(As), dCs, gb->data, N, 0, beta));
            else     /* gb[N,K] = dCᵀ · op(A) */
                EO_CHECK(mm(ctx, be, c->dtype, ob, 1, N, K, batch * M, flip(dCs), As, gb->data, K, 0, beta));
        } else {
            int64_t sc = shared ? 0 : K * N;
            if (!tb)
                EO_CHECK(mm(ctx, be, c->dtype, ob, batch, K, N, M, flip(A), dC, gb->data, N, sc, beta));
            else
                EO_CHECK(mm(ctx, be, c->dtype, ob, batch, N, K, M, flip(dC), A, gb->data, K, sc, beta));
        }
    }
    return EO_OK;
}
