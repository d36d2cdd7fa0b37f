/* tools/embedded/infer_tiny.c — the inference example cut down for a
 * microcontroller: the 784-256-10 MLP that `make examples` trains (its
 * checkpoint compiled in whole by `eo-safetensors c-image`, mlp_image.h:
 * one aligned const array, in flash) classifies the first TINY_N
 * Fashion-MNIST test images, compiled in too (tiny_images.h, made by
 * tools/embedded/idx-to-c.sh). It runs unchanged on the host
 * (board_host.c) and on a Cortex-M4 (board_mps2.c); `make cortex-m4`
 * checks both print the same lines.
 *
 * Unlike tools/examples/infer_mlp.c it does not build nn modules (their
 * code and tables are more than this program needs): the library's
 * safetensors parser checks the image, and the layers are written out as
 * the ops a Linear is made of, x W^T + b, over the weights where they lie
 * in flash. The context gets only the CPU kernels those ops run
 * (eo_ctx_init_kernels), so the link leaves the others out. No libc: the
 * only output is board_puts. */
#include <stdint.h>
#include "core/everyo.h"
#include "core/safetensors.h"
#include "tools/embedded/board.h"
#include "mlp_image.h" /* eo_image: the safetensors file */
#include "tiny_images.h"

#define BATCH 10

/* All the RAM the library gets: tensor headers and activations of one
 * batch (BATCH x 256 floats, a few times over) and matmul's packing
 * workspace (about 40 KiB on an M-profile core, ops/cpu/matmul.c; a host
 * build blocks for its caches and needs more: TINY_STEP_BYTES). */
#ifndef TINY_STEP_BYTES
#define TINY_STEP_BYTES (96 << 10)
#endif
static unsigned char persist[4 << 10], step[TINY_STEP_BYTES];
static float batch[BATCH][784];

static char *put_uint(char *p, unsigned long v)
{
    char t[24];
    int n = 0;
    do
        t[n++] = (char)('0' + v % 10);
    while ((v /= 10) != 0);
    while (n)
        *p++ = t[--n];
    return p;
}

static char *put_str(char *p, const char *s)
{
    while (*s)
        *p++ = *s++;
    return p;
}

/* The parsed image (its tables point into st_work) and the parser's
 * workspace: eo_st_workspace_bytes asks about 6 bytes per header byte,
 * and this header is about 300 bytes. */
static eo_st_image st;
static _Alignas(8) unsigned char st_work[4 << 10];

/* The image's tensor called `name`, as a tensor over its const data:
 * with grad off and outputs in fresh memory, a forward never writes its
 * inputs, so casting const away here is safe. The data is used in place,
 * so it must be F32 and aligned for a float (c-image aligns the array
 * and the writer aligns each tensor); this is a little-endian program
 * (the board and the host it is compared with). */
static eo_status weight(eo_ctx *ctx, const char *name, eo_tensor **t)
{
    const eo_st_tensor *w = eo_st_image_find(&st, name);
    if (!w || w->dtype != EO_ST_F32 || w->rank < 1 || w->rank > 2 ||
        (uintptr_t)w->data % _Alignof(float) != 0)
        return EO_ERR_ARG;
    int64_t shape[2] = {(int64_t)w->shape[0], w->rank > 1 ? (int64_t)w->shape[1] : 1};
    return eo_tensor_wrap(ctx, EO_F32, w->rank, shape, (void *)(uintptr_t)w->data, t);
}

static eo_status linear(eo_ctx *ctx, eo_tensor *x, eo_tensor *w, eo_tensor *b, eo_tensor **y)
{
    eo_tensor *xw;
    eo_status s = eo_matmul(ctx, x, w, 0, 1, &xw);
    return s == EO_OK ? eo_add(ctx, xw, b, y) : s;
}

int eo_tiny_main(void)
{
    eo_ctx ctx;
    eo_tensor *w1, *b1, *w2, *b2;
    char line[96];
    char err[96] = "";
    eo_status s = eo_st_image_parse(eo_image, sizeof eo_image, st_work, sizeof st_work,
                                    "mlp_image.h", &st, err, sizeof err);
    if (s != EO_OK) {
        board_puts(err);
        return 1;
    }
    /* Only the kernels of matmul, add and relu: with --gc-sections the
     * link leaves every other kernel out (eo_ctx_init would link them all). */
    static eo_cpu_kernels_fn *const kernels[] = {eo_cpu_kernels_matmul, eo_cpu_kernels_elementwise};
    s = eo_ctx_init_kernels(&ctx, persist, sizeof persist, step, sizeof step, kernels,
                            sizeof kernels / sizeof kernels[0]);
    if (s == EO_OK) s = weight(&ctx, "0.weight", &w1);
    if (s == EO_OK) s = weight(&ctx, "0.bias", &b1);
    if (s == EO_OK) s = weight(&ctx, "2.weight", &w2);
    if (s == EO_OK) s = weight(&ctx, "2.bias", &b2);
    if (s != EO_OK) {
        board_puts(s == EO_ERR_ARG ? "infer_tiny: mlp_image.h lacks an F32 layer 0.weight, 0.bias, 2.weight or 2.bias" : eo_last_error(&ctx));
        return 1;
    }
    eo_set_grad(&ctx, 0);

    unsigned correct = 0;
    for (unsigned b0 = 0; b0 < TINY_N; b0 += BATCH) {
        for (unsigned i = 0; i < BATCH; i++)
            for (unsigned p = 0; p < 784; p++)
                batch[i][p] = (float)eo_images[(b0 + i) * 784 + p] / 255.0f; /* as eo-train scales them */
        eo_mark m = eo_mark_get(&ctx);
        eo_tensor *x, *h, *r, *logits;
        float out[BATCH][10];
        const int64_t shape[2] = {BATCH, 784};
        s = eo_tensor_wrap(&ctx, EO_F32, 2, shape, batch, &x);
        if (s == EO_OK) s = linear(&ctx, x, w1, b1, &h);
        if (s == EO_OK) s = eo_relu(&ctx, h, &r);
        if (s == EO_OK) s = linear(&ctx, r, w2, b2, &logits);
        if (s == EO_OK) s = eo_read(&ctx, logits, out, sizeof out);
        eo_rewind(&ctx, m);
        if (s != EO_OK) {
            board_puts(eo_last_error(&ctx));
            return 1;
        }
        for (unsigned i = 0; i < BATCH; i++) {
            unsigned best = 0;
            for (unsigned c = 1; c < 10; c++)
                if (out[i][c] > out[i][best])
                    best = c;
            correct += best == eo_labels[b0 + i];
            char *p = put_str(line, "image ");
            p = put_uint(p, b0 + i);
            p = put_str(p, ": class ");
            p = put_uint(p, best);
            p = put_str(p, " (label ");
            p = put_uint(p, eo_labels[b0 + i]);
            p = put_str(p, ")");
            *p = '\0';
            board_puts(line);
        }
    }
    char *p = put_str(line, "correct ");
    p = put_uint(p, correct);
    p = put_str(p, " of ");
    p = put_uint(p, TINY_N);
    *p = '\0';
    board_puts(line);
    p = put_str(line, "arena high-water: step ");
    p = put_uint(p, ctx.step.high);
    p = put_str(p, " bytes, persistent ");
    p = put_uint(p, ctx.persist.high);
    p = put_str(p, " bytes");
    *p = '\0';
    board_puts(line);
    return 0;
}
