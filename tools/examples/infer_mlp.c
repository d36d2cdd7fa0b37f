/* tools/examples/infer_mlp.c — classify Fashion-MNIST test images with the
 * MLP that `eo-train --save mlp.safetensors` wrote, the way a small device
 * would: the checkpoint is compiled in as it is (mlp_image.h, made by
 * `eo-safetensors c-image mlp.safetensors`: const data, flash on a
 * device), the library parses it and the model reads its weights there,
 * in place; every buffer is static, sized to what eo_sequential_plan
 * measured (printed on every run), and nothing is allocated; only reading
 * the images uses the C library (zlib, as the dataset is gzipped).
 *
 *   infer_mlp [DIR [N]]   the first N (1000) images of DIR's t10k files;
 *                         prints the arenas' needs, the accuracy and the
 *                         first predictions */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#include <everyo/nn.h>
#include <everyo/safetensors.h>
#include "mlp_image.h" /* eo_image: the safetensors file */

#define MAX_IMAGES 10000
#define BATCH 100

/* What eo_sequential_plan reports for this model and batch (the first
 * line the program prints: 976 and 469,312 bytes with the AVX2 kernels),
 * rounded up for other CPUs' kernels. The weights stay in eo_image, so
 * the persistent arena holds the tensors' metadata only. */
#define PERSIST_BYTES (2 << 10)
#define STEP_BYTES (512 << 10)
static _Alignas(64) unsigned char persist[PERSIST_BYTES], step[STEP_BYTES];
static unsigned char pixels[MAX_IMAGES][784], labels[MAX_IMAGES];
static float batch[BATCH][784];

/* The first n records of an IDX file (header of `header` bytes). */
static int read_idx(const char *dir, const char *name, unsigned header, void *dst, unsigned bytes)
{
    char path[512];
    unsigned char head[16];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    gzFile f = gzopen(path, "rb");
    int ok = f && gzread(f, head, header) == (int)header && gzread(f, dst, bytes) == (int)bytes;
    if (f)
        gzclose(f);
    if (!ok)
        fprintf(stderr, "infer_mlp: cannot read %u bytes of %s\n", bytes, path);
    return ok;
}

int main(int argc, char **argv)
{
    const char *dir = argc > 1 ? argv[1] : "/usr/share/datasets/fashion-mnist";
    char *end = NULL;
    long n = argc > 2 ? strtol(argv[2], &end, 10) : 1000;
    if ((end && *end) || n < BATCH || n > MAX_IMAGES || n % BATCH) {
        fprintf(stderr, "infer_mlp: N must be a multiple of %d up to %d\n", BATCH, MAX_IMAGES);
        return 2;
    }
    if (!read_idx(dir, "t10k-images-idx3-ubyte.gz", 16, pixels, (unsigned)n * 784) ||
        !read_idx(dir, "t10k-labels-idx1-ubyte.gz", 8, labels, (unsigned)n))
        return 1;

    /* The model eo-train builds for --model mlp: 784-256-ReLU-10, its
     * parameters named "0.weight", "0.bias", "2.weight", "2.bias". */
    eo_ctx ctx;
    eo_params ps;
    eo_sequential net;
    eo_module l1, l2;
    eo_status s = eo_ctx_init(&ctx, persist, sizeof persist, step, sizeof step);
    if (s == EO_OK) s = eo_params_init_borrowed(&ctx, &ps, 4); /* weights: eo_image's */
    if (s == EO_OK) s = eo_linear_init(&ctx, &ps, EO_CPU, "0", 784, 256, 1, EO_INIT_KAIMING_UNIFORM, &l1);
    if (s == EO_OK) s = eo_linear_init(&ctx, &ps, EO_CPU, "2", 256, 10, 1, EO_INIT_KAIMING_UNIFORM, &l2);
    if (s == EO_OK) s = eo_sequential_init(&ctx, &net, 3);
    if (s == EO_OK) s = eo_sequential_add(&ctx, &net, l1);
    if (s == EO_OK) s = eo_sequential_add(&ctx, &net, eo_relu_module());
    if (s == EO_OK) s = eo_sequential_add(&ctx, &net, l2);
    /* Every parameter points at the tensor of its name in the image; a
     * missing name or another shape means the image belongs to another
     * model, and the message says which and what it holds. */
    if (s == EO_OK) s = eo_weights_bind(&ctx, &ps, eo_image, sizeof eo_image, EO_BIND_IN_PLACE);
    if (s == EO_OK) { /* what the buffers must hold: one batch, as below */
        eo_arena_needs need;
        eo_tensor *x;
        const int64_t shape[2] = {BATCH, 784};
        eo_mark m = eo_mark_get(&ctx);
        s = eo_tensor_wrap(&ctx, EO_F32, 2, shape, batch, &x);
        if (s == EO_OK) s = eo_sequential_plan(&ctx, &net, &ps, x, NULL, &need);
        eo_rewind(&ctx, m);
        if (s == EO_OK)
            printf("arenas: persistent needs %zu of %zu bytes, step %zu of %zu (weights in place: %zu bytes of image)\n",
                   need.persist, sizeof persist, need.step, sizeof step, sizeof eo_image);
    }
    if (s != EO_OK) {
        fprintf(stderr, "infer_mlp: %s\n", eo_last_error(&ctx));
        return 1;
    }
    eo_set_grad(&ctx, 0);     /* inference: no tape */
    eo_set_training(&ctx, 0);

    long correct = 0;
    for (long b = 0; b < n; b += BATCH) {
        for (int i = 0; i < BATCH; i++)
            for (int p = 0; p < 784; p++)
                batch[i][p] = (float)pixels[b + i][p] / 255.0f; /* as eo-train scales them */
        eo_mark m = eo_mark_get(&ctx);
        eo_tensor *x, *logits;
        float out[BATCH][10];
        const int64_t shape[2] = {BATCH, 784};
        s = eo_tensor_wrap(&ctx, EO_F32, 2, shape, batch, &x);
        if (s == EO_OK) s = eo_sequential_forward(&ctx, &net, x, &logits);
        if (s == EO_OK) s = eo_read(&ctx, logits, out, sizeof out);
        eo_rewind(&ctx, m);
        if (s != EO_OK) {
            fprintf(stderr, "infer_mlp: %s\n", eo_last_error(&ctx));
            return 1;
        }
        for (int i = 0; i < BATCH; i++) {
            int best = 0;
            for (int c = 1; c < 10; c++)
                if (out[i][c] > out[i][best])
                    best = c;
            correct += best == labels[b + i];
            if (b + i < 10)
                printf("image %ld: class %d (label %d)\n", b + i, best, labels[b + i]);
        }
    }
    printf("accuracy %.2f%% on %ld test images\n", 100.0 * (double)correct / (double)n, n);
    return 0;
}
