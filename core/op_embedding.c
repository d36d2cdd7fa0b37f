/* core/op_embedding.c — embedding lookup and its scatter-add backward
 * (the kernels: ops/cpu/embedding.c, ops/cuda/embedding.c,
 * ptx/embedding.ptx). The indices are not differentiable. */
#include "core/internal.h"

EO_PUBLIC(embedding, (eo_ctx *ctx, eo_tensor *table, eo_tensor *idx, eo_tensor **out),
          (ctx, table, idx, out))
{
    if (!out)
        return eo_fail(ctx, EO_ERR_ARG, "embedding: NULL output pointer");
    eo_tensor *h[1] = { table }; /* bf16 / f16: through f32 (core/op_cast.c) */
    EO_HALF_FALLBACK(ctx, "embedding", h, 1, 0, out, eo_embedding(ctx, h[0], idx, out));
    EO_CHECK(eo_expect(ctx, "embedding", table, EO_F32));
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
    EO_CHECK(eo_contiguous(ctx, table, &table));
    const eo_backend *be = eo_backend_of(ctx, table);
    EO_NEED_KERNEL(ctx, "embedding", be, embedding);
    int64_t shape[EO_MAX_RANK];
    for (int i = 0; i < idx->rank; i++)
        shape[i] = idx->shape[i];
    shape[idx->rank] = D;
    eo_tensor *y;
    EO_CHECK(eo_new_out(ctx, table->device, EO_F32, idx->rank + 1, shape, &y));
    const int32_t *ids = idx->data;
    if (idx->device != EO_CPU && be->check_ids) /* checked where they are */
        ids = be->check_ids(EO_IDS_INDEX, n, ids, V, 0, 0, &ctx->exec);
    be->embedding(n, D, table->data, ids, y->data, &ctx->exec);
    eo_tensor *in[2] = { table, idx };
    if (eo_needs_grad(ctx, in, 1))
        EO_CHECK(eo_record(ctx, EO_OP_EMBEDDING, in, 2, y, NULL));
    *out = y;
    return EO_OK;
}

eo_status eo_bwd_embedding(eo_ctx *ctx, eo_node *n)
{
    eo_tensor *table = n->in[0], *idx = n->in[1], *g;
    if (!table->requires_grad)
        return EO_OK;
    const eo_backend *be = eo_backend_of(ctx, table);
    EO_NEED_KERNEL(ctx, "embedding", be, embedding_backward);
    EO_CHECK(eo_grad_of(ctx, table, &g));
    const int32_t *ids = idx->data;
    if (idx->device != EO_CPU && be->check_ids)
        ids = be->check_ids(EO_IDS_INDEX, eo_numel(idx), ids, table->shape[0], 0, 0, &ctx->exec);
    be->embedding_backward(eo_numel(idx), table->shape[1], ids, n->out->grad->data, g->data,
                           &ctx->exec);
    return EO_OK;
}
