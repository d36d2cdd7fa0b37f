/* core/backend_cuda.c — the CUDA backend: the same kernel table as the
 * CPU, filled with the launchers of ops/cuda/<family>.c (one per PTX
 * module), and the two device arenas.
 *
 * Each device arena is one cuMemAlloc block managed by the ordinary arena
 * code of alloc/ (it only does address arithmetic, so it never touches
 * device memory). Launches are asynchronous and kernels return nothing:
 * a failed launch is recorded in the eo_cuda state and surfaces, as a
 * status with the driver's message, at the next synchronising call —
 * a copy to or from the host, or eo_cuda_sync — exactly where the real
 * driver reports a kernel's fault. */
#include "core/internal.h"
#include "ops/cuda/device.h"
#include "ops/cuda/launch.h" /* the launch limits */

static eo_cuda *state(eo_ctx *ctx) { return (eo_cuda *)ctx->exec.cuda; }

/* Surface a launch error recorded since the last check. */
static eo_status pending(eo_ctx *ctx, const char *what)
{
    char msg[200];
    eo_status s = eo_cuda_take_error(state(ctx), msg, sizeof msg);
    if (s != EO_OK)
        return eo_fail(ctx, s, "cuda: %s: an earlier kernel failed: %s", what, msg);
    return EO_OK;
}

static eo_status cuda_upload(eo_ctx *ctx, void *dst, const void *src, size_t bytes)
{
    EO_CHECK(pending(ctx, "upload"));
    eo_status s = eo_cuda_h2d(state(ctx), (eo_cu_deviceptr)(uintptr_t)dst, src, bytes);
    return s == EO_OK ? EO_OK : eo_fail(ctx, s, "cuda: upload of %zu bytes: %s", bytes, state(ctx)->msg);
}

static eo_status cuda_download(eo_ctx *ctx, void *dst, const void *src, size_t bytes)
{
    EO_CHECK(pending(ctx, "download"));
    eo_status s = eo_cuda_d2h(state(ctx), dst, (eo_cu_deviceptr)(uintptr_t)src, bytes);
    if (s != EO_OK)
        return eo_fail(ctx, s, "cuda: download of %zu bytes: %s", bytes, state(ctx)->msg);
    /* a bad token id or class target found on the device by the kernels
     * the copy waited for */
    return pending(ctx, "download");
}

static eo_status cuda_zero(eo_ctx *ctx, void *dst, size_t bytes)
{
    /* Every tensor's storage is a whole number of 4-byte words (core/
     * tensor.c rounds a 2-byte tensor of odd length up), so the last
     * partial word of a bf16 or f16 tensor is its own to clear. */
    return eo_cuda_memset32(state(ctx), (eo_cu_deviceptr)(uintptr_t)dst, 0, (bytes + 3) / 4);
}

static eo_status cuda_sync(eo_ctx *ctx)
{
    EO_CHECK(pending(ctx, "sync"));
    eo_status s = eo_cuda_sync(state(ctx));
    return s == EO_OK ? EO_OK : eo_fail(ctx, s, "cuda: sync: %s", state(ctx)->msg);
}

const eo_backend eo_backend_cuda = {
    .name = "cuda",
    .device = EO_CUDA,
    .limits = { .attention_max_d = EO_CU_ATTN_MAX_D, .attention_max_bh = EO_CU_ATTN_MAX_BH,
                .attention_max_tq = EO_CU_ATTN_MAX_TQ,
                .cross_entropy16_max_rows = EO_CU_CE16_MAX_ROWS },
    .upload = cuda_upload,
    .download = cuda_download,
    .zero = cuda_zero,
    .sync = cuda_sync,
    .copy32 = eo_cuda_k_copy32,
    .accumulate = eo_cuda_k_accumulate,
    .fill = eo_cuda_k_fill,
    .binary = eo_cuda_k_binary,
    .binary_backward = eo_cuda_k_binary_backward,
    .unary = eo_cuda_k_unary,
    .unary_backward = eo_cuda_k_unary_backward,
    .matmul = eo_cuda_k_matmul,
    .matmul_ws = eo_cuda_k_matmul_ws,
    .reduce = eo_cuda_k_reduce,
    .reduce_backward = eo_cuda_k_reduce_backward,
    .sumsq = eo_cuda_k_sumsq,
    .logsumexp = eo_cuda_k_logsumexp,
    .logsumexp_backward = eo_cuda_k_logsumexp_backward,
    .softmax = eo_cuda_k_softmax,
    .softmax_backward = eo_cuda_k_softmax_backward,
    .cross_entropy = eo_cuda_k_cross_entropy,
    .cross_entropy_backward = eo_cuda_k_cross_entropy_backward,
    .layernorm = eo_cuda_k_layernorm,
    .layernorm_backward = eo_cuda_k_layernorm_backward,
    .layernorm_backward_ws = eo_cuda_k_layernorm_backward_ws,
    .embedding = eo_cuda_k_embedding,
    .embedding_backward = eo_cuda_k_embedding_backward,
    .check_ids = eo_cuda_k_check_ids,
    .dropout = eo_cuda_k_dropout,
    .dropout_backward = eo_cuda_k_dropout_backward,
    .im2col = eo_cuda_k_im2col,
    .col2im = eo_cuda_k_col2im,
    .maxpool2d = eo_cuda_k_maxpool2d,
    .maxpool2d_backward = eo_cuda_k_maxpool2d_backward,
    .attention = eo_cuda_k_attention,
    .attention_backward = eo_cuda_k_attention_backward,
    .attention_ws = eo_cuda_k_attention_ws,
    .sgd = eo_cuda_k_sgd,
    .adamw = eo_cuda_k_adamw,
    .unscale_check = eo_cuda_k_unscale_check,
    .cast = eo_cuda_k_cast,
    /* 16-bit storage (ptx/matmul_tc.ptx, ptx/<family>16.ptx): every 16-bit
     * slot is native. The row kernels' *_ws16 stay NULL: they use the
     * device's own scratch (ops/cuda/launch.h), not a ws from the core. */
    .fill16 = eo_cuda_k_fill16,
    .matmul16 = eo_cuda_k_matmul16,
    .binary16 = eo_cuda_k_binary16,
    .binary_backward16 = eo_cuda_k_binary_backward16,
    .unary16 = eo_cuda_k_unary16,
    .unary_backward16 = eo_cuda_k_unary_backward16,
    .softmax16 = eo_cuda_k_softmax16,
    .softmax_backward16 = eo_cuda_k_softmax_backward16,
    .layernorm16 = eo_cuda_k_layernorm16,
    .layernorm_backward16 = eo_cuda_k_layernorm_backward16,
    .cross_entropy16 = eo_cuda_k_cross_entropy16,
    .cross_entropy_backward16 = eo_cuda_k_cross_entropy_backward16,
    .embedding16 = eo_cuda_k_embedding16,
    .embedding_backward16 = eo_cuda_k_embedding_backward16,
    .sgd16 = eo_cuda_k_sgd16,
    .adamw16 = eo_cuda_k_adamw16,
    .attention16 = eo_cuda_k_attention16,
    .attention16_backward = eo_cuda_k_attention16_backward,
};

EO_PUBLIC(cuda_attach, (eo_ctx *ctx, const struct eo_cuda_driver *drv, int device,
                       size_t persist_bytes, size_t step_bytes),
          (ctx, drv, device, persist_bytes, step_bytes))
{
    if (ctx->exec.cuda)
        return eo_fail(ctx, EO_ERR_STATE, "cuda_attach: a CUDA device is already attached");
    /* The driver table and the backend state live in the persistent arena. */
    eo_cuda_driver *table;
    eo_cuda *cu;
    EO_CHECK(eo_host_alloc(ctx, EO_PERSIST, sizeof *table, (void **)&table));
    EO_CHECK(eo_host_alloc(ctx, EO_PERSIST, sizeof *cu, (void **)&cu));
    if (drv) {
        *table = *drv;
    } else {
        eo_status s = eo_cuda_driver_load(table, ctx->err, sizeof ctx->err);
        if (s != EO_OK)
            return eo_refail(ctx, s, NULL, NULL); /* its reason is in ctx->err */
    }
    eo_status s = eo_cuda_open(cu, table, device, ctx->err, sizeof ctx->err);
    if (s != EO_OK)
        return eo_refail(ctx, s, NULL, NULL);
    eo_cu_deviceptr p0 = 0, p1 = 0;
    s = eo_cuda_alloc_block(cu, persist_bytes, &p0);
    if (s == EO_OK)
        s = eo_cuda_alloc_block(cu, step_bytes, &p1);
    if (s != EO_OK) {
        if (p0)
            eo_cuda_free_block(cu, p0);
        eo_fail(ctx, s, "cuda_attach: cannot allocate %zu + %zu bytes on %s: %s", persist_bytes,
                step_bytes, cu->name, cu->msg);
        eo_cuda_close(cu);
        return s;
    }
    eo_arena_init(&ctx->dev_persist, (void *)(uintptr_t)p0, persist_bytes, "cuda persistent");
    eo_arena_init(&ctx->dev_step, (void *)(uintptr_t)p1, step_bytes, "cuda step");
    ctx->exec.cuda = cu;
    ctx->backend[EO_CUDA] = &eo_backend_cuda;
    ctx->cuda_attach++; /* a new attach: tensors of any earlier one are stale */
    return EO_OK;
}

void eo_cuda_detach(eo_ctx *ctx)
{
    eo_cuda *cu = ctx ? state(ctx) : NULL;
    if (!cu)
        return;
    eo_cuda_free_block(cu, (eo_cu_deviceptr)ctx->dev_persist.base);
    eo_cuda_free_block(cu, (eo_cu_deviceptr)ctx->dev_step.base);
    eo_cuda_close(cu);
    ctx->exec.cuda = NULL;
    ctx->backend[EO_CUDA] = NULL;
    ctx->cuda_attach++; /* every CUDA tensor made so far is stale (eo_expect_live) */
}

const char *eo_cuda_device_name(const eo_ctx *ctx)
{
    return ctx && ctx->exec.cuda ? ((const eo_cuda *)ctx->exec.cuda)->name : "";
}
