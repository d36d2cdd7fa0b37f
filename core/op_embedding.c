/* core/op_embedding.c — embedding lookup and its scatter-add backward
 * (the kernels: ops/cpu/embedding.c, ops/cuda/embedding.c,
 * ptx/embedding.ptx). The indices are not differentiable. */
#include "core/internal.h"

EO_PUBLIC(embedding, (eo_ctx *ctx, eo_tensor *table, eo_tensor *idx, eo_tensor **out),
          (ctx, table, idx, out))
{
    if (!out)
        return eo_fail(ctx, EO_ERR_ARG, "embedding: NULL output pointer");
    EO_NONNULL(ctx, "embedding", table);
    EO_NONNULL(ctx, "embedding", idx);
    EO_CHECK(eo_expect_any(ctx, "embedding", table));
    eo_tensor *h[1] = { table };
    const eo_backend *be = eo_backend_of(ctx, table);
    /* Autocast (core/autocast.c): the looked-up rows are activations of
     * the autocast dtype. A table with the backend's 16-bit lookup is read
     * through its working copy (a bit copy of 2-byte rows); without one
     * the f32 rows are looked up and cast (only the rows, not the table). */
    if (ctx->autocast != EO_F32 && eo_is_float(table->dtype) && table->dtype != ctx->autocast) {
        if (be->embedding16)
            EO_AUTOCAST(ctx, EO_AUTOCAST_LOW, h, 1, eo_embedding(ctx, h[0], idx, out));
        const eo_dtype ac = ctx->autocast;
        ctx->autocast = EO_F32;
        eo_status s = eo_embedding(ctx, table, idx, out);
        ctx->autocast = ac;
        EO_CHECK(s);
        return eo_cast(ctx, *out, ac, out);
    }
    /* bf16 / f16: the backend's 16-bit lookup, else through an f32 copy
     * of the table (core/op_cast.c). The backward needs no 16-bit slot
     * (eo_bwd_embedding). */
    const eo_dtype dt = table->dtype;
    const int native16 = eo_is_half(dt) && be->embedding16;
    if (!native16)
        EO_HALF_FALLBACK(ctx, "embedding", h, 1, 0, out, eo_embedding(ctx, h[0], idx, out));
    EO_CHECK(eo_expect(ctx, "embedding", table, native16 ? dt : EO_F32));
    EO_CHECK(eo_expect(ctx, "embedding", idx, EO_I32));
    EO_CHECK(eo_same_device(ctx, "embedding", table, idx));
    if (table->rank != 2 || idx->rank > EO_MAX_RANK - 1)
        return eo_fail(ctx, EO_ERR_SHAPE,
                       "embedding: expected table [V, D] and indices of rank <= 3, got %T, %T",
                       table, idx);
    int64_t V = table->shape[0], D = table->shape[1], n = eo_numel(idx);
    /* Indices are checked before the table is copied, so a bad index
     * leaves no copy (and no tape node) behind. */
    EO_CHECK(eo_contiguous(ctx, idx, &idx));
    if (idx->device == EO_CPU) {
        const int32_t *ix = idx->data;
        for (int64_t i = 0; i < n; i++)
            if (ix[i] < 0 || ix[i] >= V)
                return eo_fail(ctx, EO_ERR_ARG,
                               "embedding: index %d at position %lld is outside [0, %lld)",
                               (int)ix[i], (long long)i, (long long)V);
    }
    EO_CHECK(eo_contiguous(ctx, table, &table)); /* in its own dtype */
    if (!native16)
        EO_NEED_KERNEL(ctx, "embedding", be, embedding);
    int64_t shape[EO_MAX_RANK];
    for (int i = 0; i < idx->rank; i++)
        shape[i] = idx->shape[i];
    shape[idx->rank] = D;
    eo_tensor *y;
    EO_CHECK(eo_new_out(ctx, table->device, dt, idx->rank + 1, shape, &y));
    const int32_t *ids = idx->data;
    if (idx->device != EO_CPU && be->check_ids) /* checked where they are */
        ids = be->check_ids(EO_IDS_INDEX, n, ids, V, 0, 0, &ctx->exec);
    if (native16)
        be->embedding16((int)dt, n, D, table->data, ids, y->data, &ctx->exec);
    else
        be->embedding(n, D, table->data, ids, y->data, &ctx->exec);
    eo_tensor *in[2] = { table, idx };
    if (eo_needs_grad(ctx, in, 1))
        EO_CHECK(eo_record(ctx, EO_OP_EMBEDDING, in, 2, y, NULL));
    *out = y;
    return EO_OK;
}

/* The backward of a 16-bit lookup sums each row's contributions in f32
 * and rounds the sum once into the table's gradient, as the fallback
 * through an f32 copy does; the 16-bit slot (embedding_backward16) is
 * not used: its contract rounds after every addition, which drifts from
 * that sum and loses a frequent row's small contributions outright (a
 * character that occurs 1000 times in a batch: each addition is below
 * half a bf16 ulp of the total long before the end). The f32 sums live
 * in scratch lent for the call: dout widened, and the [V, D] sums. */
static eo_status embedding_backward16(eo_ctx *ctx, eo_node *n, eo_tensor *g,
                                      const int32_t *ids)
{
    eo_tensor *table = n->in[0], *dy = n->out->grad;
    const eo_backend *be = eo_backend_of(ctx, table);
    EO_NEED_KERNEL(ctx, "embedding", be, embedding_backward);
    EO_NEED_KERNEL(ctx, "embedding", be, cast);
    EO_NEED_KERNEL(ctx, "embedding", be, zero);
    int64_t m = eo_numel(n->in[1]), V = table->shape[0], D = table->shape[1];
    eo_lent sums, wide;
    EO_CHECK(eo_lend(ctx, table->device, (size_t)(V * D) * sizeof(float), &sums));
    eo_status s = eo_lend(ctx, table->device, (size_t)(m * D) * sizeof(float), &wide);
    if (s != EO_OK) {
        eo_give_back(&sums);
        return s;
    }
    int64_t sh[4] = { 1, 1, m, D }, st[4] = { 0, 0, D, 1 };
    be->cast(sh, EO_K_F32, wide.p, st, (int)dy->dtype, dy->data, st, 0, &ctx->exec);
    s = be->zero(ctx, sums.p, (size_t)(V * D) * sizeof(float));
    if (s == EO_OK) {
        be->embedding_backward(m, D, ids, wide.p, sums.p, &ctx->exec);
        int64_t gs[4] = { 1, 1, V, D }, gt[4] = { 0, 0, D, 1 };
        be->cast(gs, (int)g->dtype, g->data, gt, EO_K_F32, sums.p, gt, 1, &ctx->exec);
    }
    eo_give_back(&wide); /* the later lent first: the arena rewinds in order */
    eo_give_back(&sums);
    return s;
}

eo_status eo_bwd_embedding(eo_ctx *ctx, eo_node *n)
{
    eo_tensor *table = n->in[0], *idx = n->in[1], *g;
    if (!table->requires_grad)
        return EO_OK;
    const eo_backend *be = eo_backend_of(ctx, table);
    if (!eo_is_half(table->dtype))
        EO_NEED_KERNEL(ctx, "embedding", be, embedding_backward);
    EO_CHECK(eo_grad_of(ctx, table, &g));
    const int32_t *ids = idx->data;
    if (idx->device != EO_CPU && be->check_ids)
        ids = be->check_ids(EO_IDS_INDEX, eo_numel(idx), ids, table->shape[0], 0, 0, &ctx->exec);
    if (eo_is_half(table->dtype)) /* recorded by the 16-bit lookup */
        return embedding_backward16(ctx, n, g, ids);
    be->embedding_backward(eo_numel(idx), table->shape[1], ids, n->out->grad->data, g->data,
                           &ctx->exec);
    return EO_OK;
}
