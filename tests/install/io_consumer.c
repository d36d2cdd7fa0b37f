/* tests/install/io_consumer.c — a C program that knows EveryO's host
 * companion (libeveryo-io) only as an installed package: <everyo/...>
 * headers and `pkg-config everyo-io`. It uses what a user of the library
 * would otherwise write by hand: the thread pool as the eo_par hook, the
 * safetensors checkpoint writer and reader, and the IDX reader (on a file
 * it writes itself). Usage: io_consumer SCRATCH-FOLDER. */
#include <stdio.h>
#include <string.h>
#include <everyo/everyo.h>
#include <everyo/nn.h>
#include <everyo/checkpoint.h>
#include <everyo/idx.h>
#include <everyo/pool.h>
#include <everyo/safetensors_file.h>

static unsigned char persist[1 << 20], step[1 << 22];

/* The pool's hook, wrapped to count the calls the library makes through it. */
static eo_par pool_hook;
static int hook_calls;
static void counting_run(void *user, eo_par_body body, void *arg, int64_t n)
{
    hook_calls++;
    pool_hook.run(user, body, arg, n);
}

static int fail(const char *what, const char *msg)
{
    fprintf(stderr, "io consumer: %s: %s\n", what, msg);
    return 1;
}

/* The pool runs a 128x128 matmul; the result must equal the one-thread one. */
static int check_pool(eo_ctx *ctx)
{
    eo_pool *pool = eo_pool_create(2);
    if (!pool)
        return fail("eo_pool_create", "NULL");
    pool_hook = eo_pool_par(pool);
    eo_par hook = pool_hook;
    hook.run = counting_run;
    static float a[128 * 128], one[128 * 128], two[128 * 128];
    for (int i = 0; i < 128 * 128; i++)
        a[i] = (float)((i * 7) % 13) - 6.0f;
    const int64_t shape[2] = {128, 128};
    eo_tensor *x, *y;
    int rc = 0;
    eo_mark m = eo_mark_get(ctx);
    for (int pass = 0; pass < 2 && !rc; pass++) {
        eo_par none = {0, 0, 1};
        eo_ctx_set_parallel(ctx, pass ? hook : none);
        if (eo_tensor_new(ctx, EO_STEP, EO_CPU, EO_F32, 2, shape, &x) != EO_OK ||
            eo_write(ctx, x, a, sizeof a) != EO_OK || eo_matmul(ctx, x, x, 0, 1, &y) != EO_OK ||
            eo_read(ctx, y, pass ? two : one, sizeof one) != EO_OK)
            rc = fail("matmul", eo_last_error(ctx));
        eo_rewind(ctx, m);
    }
    eo_par none = {0, 0, 1};
    eo_ctx_set_parallel(ctx, none);
    if (!rc && eo_pool_threads(pool) != 2)
        rc = fail("eo_pool_threads", "not 2");
    if (!rc && hook_calls == 0)
        rc = fail("eo_pool_par", "the library never called the pool's hook");
    if (!rc && memcmp(one, two, sizeof one) != 0)
        rc = fail("eo_pool_par", "two threads gave another matmul than one");
    eo_pool_destroy(pool);
    return rc;
}

/* Save a parameter as BF16 with metadata, read the file back with the
 * safetensors reader, load it into the parameter after clearing it. */
static int check_checkpoint(eo_ctx *ctx, const char *dir)
{
    char path[1024], err[256];
    snprintf(path, sizeof path, "%s/w.safetensors", dir);
    eo_params ps;
    eo_tensor *w;
    const int64_t shape[2] = {2, 3};
    /* exact in bf16, so the round trip is exact */
    const float vals[6] = {1.5f, -2.0f, 0.25f, 3.0f, -0.125f, 96.0f};
    const float zero[6] = {0};
    float back[6];
    if (eo_params_init(ctx, &ps, 1) != EO_OK || eo_param_new(ctx, EO_CPU, "w", 2, shape, &w) != EO_OK ||
        eo_write(ctx, w, vals, sizeof vals) != EO_OK || eo_params_add(ctx, &ps, w) != EO_OK)
        return fail("parameter", eo_last_error(ctx));
    const char *keys[1] = {"model"}, *values[1] = {"install-test"};
    if (eo_checkpoint_save_as(ctx, &ps, path, EO_ST_BF16, keys, values, 1, err, sizeof err) != EO_OK)
        return fail("eo_checkpoint_save_as", err);
    eo_st_file f;
    if (eo_st_read(path, &f, err, sizeof err) != EO_OK)
        return fail("eo_st_read", err);
    const eo_st_tensor *t = eo_st_find(&f, "w");
    const char *model = eo_st_meta_get(&f, "model");
    int ok = t && t->dtype == EO_ST_BF16 && t->rank == 2 && t->shape[0] == 2 && t->shape[1] == 3 &&
             model && strcmp(model, "install-test") == 0;
    eo_st_close(&f);
    if (!ok)
        return fail("eo_st_read", "the file does not hold w as BF16 [2, 3] with its metadata");
    if (eo_write(ctx, w, zero, sizeof zero) != EO_OK)
        return fail("eo_write", eo_last_error(ctx));
    if (eo_checkpoint_load(ctx, &ps, path, err, sizeof err) != EO_OK)
        return fail("eo_checkpoint_load", err);
    if (eo_read(ctx, w, back, sizeof back) != EO_OK)
        return fail("eo_read", eo_last_error(ctx));
    if (memcmp(back, vals, sizeof vals) != 0)
        return fail("eo_checkpoint_load", "the values differ from those saved");
    return 0;
}

/* A 3x4 IDX file of unsigned bytes, written here, read back. */
static int check_idx(const char *dir)
{
    char path[1024], err[256];
    snprintf(path, sizeof path, "%s/x.idx", dir);
    const unsigned char file[] = {0, 0, 0x08, 2, 0, 0, 0, 3, 0, 0, 0, 4,
                                  1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
    FILE *fp = fopen(path, "wb");
    if (!fp || fwrite(file, 1, sizeof file, fp) != sizeof file || fclose(fp) != 0)
        return fail("writing", path);
    eo_idx x;
    if (eo_idx_load(path, &x, err, sizeof err) != EO_OK)
        return fail("eo_idx_load", err);
    char dims[64];
    eo_idx_shape_str(&x, dims, sizeof dims);
    int ok = x.rank == 2 && x.count == 12 && strcmp(dims, "3x4") == 0 && x.data[0] == 1 &&
             x.data[11] == 12;
    eo_idx_free(&x);
    return ok ? 0 : fail("eo_idx_load", "wrong shape or data");
}

int main(int argc, char **argv)
{
    if (argc != 2)
        return fail("usage", "io_consumer SCRATCH-FOLDER");
    eo_ctx ctx;
    if (eo_ctx_init(&ctx, persist, sizeof persist, step, sizeof step) != EO_OK)
        return fail("eo_ctx_init", eo_last_error(&ctx));
    if (check_pool(&ctx) || check_checkpoint(&ctx, argv[1]) || check_idx(argv[1]))
        return 1;
    printf("C io consumer: pool (%d hook calls), checkpoint BF16 round trip, IDX 3x4 OK\n", hook_calls);
    return 0;
}
