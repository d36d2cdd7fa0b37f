/* tests/test_checkpoint.c — model weights to and from safetensors:
 * round trip is bit-exact, and every bad file (cut short, header lying
 * about offsets, wrong dtype, wrong shape, missing tensor) is refused with
 * a message — leaving the model exactly as it was; saving survives
 * injected I/O faults and crashes at every step with the previous file
 * intact, and a flipped bit is refused by the data checksum. */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "tests/gradcheck.h"
#include "tests/tmpdir.h"
#include "tools/formats/checkpoint.h"
#include "tools/formats/durable.h"
#include "tools/train/models.h"
#include "tools/formats/safetensors.h"
#include "ops/cpu/half.h"

/* All parameter values, concatenated, for before/after comparison. */
static float *snapshot(const eo_params *ps, size_t *n)
{
    size_t total = 0;
    for (int i = 0; i < ps->count; i++)
        total += (size_t)eo_numel(ps->items[i]);
    float *out = malloc(total * sizeof(float)), *p = out;
    for (int i = 0; i < ps->count; i++) {
        size_t k = (size_t)eo_numel(ps->items[i]);
        memcpy(p, ps->items[i]->data, k * sizeof(float));
        p += k;
    }
    *n = total;
    return out;
}

static void rewrite_truncated(const char *src, const char *dst, long keep)
{
    FILE *f = fopen(src, "rb"), *g = fopen(dst, "wb");
    ck_assert_ptr_nonnull(f);
    ck_assert_ptr_nonnull(g);
    for (long i = 0; i < keep; i++) {
        int c = fgetc(f);
        if (c == EOF)
            break;
        fputc(c, g);
    }
    fclose(f);
    fclose(g);
}

START_TEST(round_trip_and_bad_files_leave_model_unchanged)
{
    char good[512], bad[512], err[512];
    ck_assert_ptr_nonnull(eo_tmpdir_make());
    snprintf(good, sizeof good, "%s", eo_tmpdir_path("mlp.safetensors"));
    snprintf(bad, sizeof bad, "%s", eo_tmpdir_path("bad.safetensors"));

    eo_ctx *ctx = eo_test_ctx(8, 8);
    eo_classifier a, b;
    eo_seed(ctx, 1);
    ck_assert_int_eq(eo_classifier_build(ctx, EO_MODEL_MLP, EO_CPU, &a), EO_OK);
    eo_seed(ctx, 2);
    ck_assert_int_eq(eo_classifier_build(ctx, EO_MODEL_MLP, EO_CPU, &b), EO_OK);
    ck_assert_int_eq(eo_checkpoint_save(ctx, &a.params, good, NULL, NULL, 0, err, sizeof err), EO_OK);

    size_t n, m;
    float *before = snapshot(&b.params, &n);
    /* Cut short: only part of the data area. */
    rewrite_truncated(good, bad, 4000);
    ck_assert_int_ne(eo_checkpoint_load(ctx, &b.params, bad, err, sizeof err), EO_OK);
    ck_assert_ptr_nonnull(strstr(err, "bad.safetensors"));
    /* Header length pointing past the end of the file. */
    rewrite_truncated(good, bad, 1L << 30);
    FILE *f = fopen(bad, "r+b");
    unsigned char big[8] = { 0xff, 0xff, 0xff, 0x0f, 0, 0, 0, 0 };
    fwrite(big, 1, 8, f);
    fclose(f);
    ck_assert_int_eq(eo_checkpoint_load(ctx, &b.params, bad, err, sizeof err), EO_ERR_FORMAT);
    /* Right names, one tensor with the wrong dtype or the wrong shape. */
    int32_t ints[10] = { 0 };
    float floats[12] = { 0 };
    for (int variant = 0; variant < 3; variant++) {
        eo_st_tensor t[4];
        for (int i = 0; i < 4; i++) {
            const eo_tensor *p = a.params.items[i];
            t[i].name = p->name;
            t[i].dtype = EO_ST_F32;
            t[i].rank = p->rank;
            for (int d = 0; d < p->rank; d++)
                t[i].shape[d] = (uint64_t)p->shape[d];
            t[i].data = p->data;
            t[i].nbytes = (size_t)eo_numel(p) * 4;
        }
        if (variant == 0) { /* "2.bias" stored as I32 */
            t[3].dtype = EO_ST_I32;
            t[3].data = ints;
        } else if (variant == 1) { /* "2.bias" with 12 entries instead of 10 */
            t[3].shape[0] = 12;
            t[3].data = floats;
            t[3].nbytes = sizeof floats;
        } else { /* "2.bias" missing */
            t[3].name = "2.something_else";
        }
        ck_assert_int_eq(eo_st_write(bad, t, 4, NULL, 0, err, sizeof err), EO_OK);
        ck_assert_int_eq(eo_checkpoint_load(ctx, &b.params, bad, err, sizeof err), EO_ERR_FORMAT);
        ck_assert_ptr_nonnull(strstr(err, "2.bias"));
    }
    float *after = snapshot(&b.params, &m);
    ck_assert_uint_eq(n, m);
    ck_assert_int_eq(memcmp(before, after, n * sizeof(float)), 0);

    /* The good file loads, bit for bit. */
    ck_assert_int_eq(eo_checkpoint_load(ctx, &b.params, good, err, sizeof err), EO_OK);
    float *loaded = snapshot(&b.params, &m), *orig = snapshot(&a.params, &n);
    ck_assert_int_eq(memcmp(loaded, orig, n * sizeof(float)), 0);
    free(before);
    free(after);
    free(loaded);
    free(orig);
    eo_test_ctx_free(ctx);
    eo_tmpdir_remove();
}
END_TEST

/* Mixed precision: a model with bf16 working copies saves its f32 masters
 * (bit for bit) and, loaded into another such model, refreshes that
 * model's copies; a model whose parameters are themselves bf16 saves
 * them as BF16 and loads them back bit for bit. */
START_TEST(masters_saved_and_working_copies_refreshed)
{
    char path[512], path16[512], err[512];
    ck_assert_ptr_nonnull(eo_tmpdir_make());
    snprintf(path, sizeof path, "%s", eo_tmpdir_path("amp.safetensors"));
    snprintf(path16, sizeof path16, "%s", eo_tmpdir_path("bf16.safetensors"));
    eo_ctx *ctx = eo_test_ctx(8, 8);
    eo_classifier a, b;
    eo_seed(ctx, 1);
    ck_assert_int_eq(eo_classifier_build(ctx, EO_MODEL_MLP, EO_CPU, &a), EO_OK);
    eo_seed(ctx, 2);
    ck_assert_int_eq(eo_classifier_build(ctx, EO_MODEL_MLP, EO_CPU, &b), EO_OK);
    ck_assert_int_eq(eo_params_enable_low(ctx, &a.params, EO_BF16), EO_OK);
    ck_assert_int_eq(eo_params_enable_low(ctx, &b.params, EO_BF16), EO_OK);
    ck_assert_int_eq(eo_checkpoint_save(ctx, &a.params, path, NULL, NULL, 0, err, sizeof err),
                     EO_OK);
    ck_assert_int_eq(eo_checkpoint_load(ctx, &b.params, path, err, sizeof err), EO_OK);
    size_t n, m;
    float *want = snapshot(&a.params, &n), *got = snapshot(&b.params, &m);
    ck_assert_int_eq(memcmp(want, got, n * sizeof(float)), 0); /* the f32 masters */
    for (int i = 0; i < b.params.count; i++) { /* b's copies now round a's masters */
        const eo_tensor *p = b.params.items[i];
        ck_assert_ptr_nonnull(p->low);
        const float *w = p->data;
        const uint16_t *h = p->low->data;
        for (int64_t k = 0; k < eo_numel(p); k++)
            ck_assert_uint_eq(h[k], eo_f32_to_bf16(w[k]));
    }
    /* bf16 parameters: saved as BF16, loaded back bit for bit */
    eo_params ps, qs;
    eo_tensor *w16, *v16;
    int64_t sh[2] = { 3, 5 };
    ck_assert_int_eq(eo_params_init(ctx, &ps, 1), EO_OK);
    ck_assert_int_eq(eo_params_init(ctx, &qs, 1), EO_OK);
    ck_assert_int_eq(eo_cast(ctx, eo_test_rand(ctx, 2, sh, -1, 1, 5, 0), EO_BF16, &w16), EO_OK);
    ck_assert_int_eq(eo_tensor_zeros(ctx, EO_STEP, EO_CPU, EO_BF16, 2, sh, &v16), EO_OK);
    w16->name = v16->name = "w";
    w16->requires_grad = v16->requires_grad = 1; /* parameters: with a gradient */
    ck_assert_int_eq(eo_tensor_zeros(ctx, EO_STEP, EO_CPU, EO_BF16, 2, sh, &w16->grad), EO_OK);
    ck_assert_int_eq(eo_tensor_zeros(ctx, EO_STEP, EO_CPU, EO_BF16, 2, sh, &v16->grad), EO_OK);
    ck_assert_int_eq(eo_params_add(ctx, &ps, w16), EO_OK);
    ck_assert_int_eq(eo_params_add(ctx, &qs, v16), EO_OK);
    ck_assert_int_eq(eo_checkpoint_save(ctx, &ps, path16, NULL, NULL, 0, err, sizeof err), EO_OK);
    eo_st_file f;
    ck_assert_int_eq(eo_st_read(path16, &f, err, sizeof err), EO_OK);
    ck_assert_uint_eq(f.count, 1);
    ck_assert_int_eq(f.tensors[0].dtype, EO_ST_BF16);
    eo_st_close(&f);
    ck_assert_int_eq(eo_checkpoint_load(ctx, &qs, path16, err, sizeof err), EO_OK);
    ck_assert_int_eq(memcmp(w16->data, v16->data, 15 * 2), 0);
    free(want);
    free(got);
    eo_test_ctx_free(ctx);
    eo_tmpdir_remove();
}
END_TEST

/* Bad arguments come back as statuses with a message, never a crash:
 * NULL keys or values with nmeta > 0 were dereferenced, a directory as
 * the file to load asked malloc for LLONG_MAX bytes, and a NULL err with
 * a length reached snprintf. */
START_TEST(bad_arguments_and_directories_are_refused)
{
    char err[512];
    const char *dir = eo_tmpdir_make();
    ck_assert_ptr_nonnull(dir);
    char path[512];
    snprintf(path, sizeof path, "%s", eo_tmpdir_path("m.safetensors"));
    eo_ctx *ctx = eo_test_ctx(8, 8);
    eo_classifier a;
    ck_assert_int_eq(eo_classifier_build(ctx, EO_MODEL_MLP, EO_CPU, &a), EO_OK);

    const char *keys[1] = { "k" }, *values[1] = { "v" };
    ck_assert_int_eq(eo_checkpoint_save(ctx, &a.params, path, NULL, NULL, 1, err, sizeof err),
                     EO_ERR_ARG);
    ck_assert_msg(strstr(err, "eo_checkpoint_save") && strstr(err, "NULL keys with 1 metadata"),
                  "%s", err);
    ck_assert_int_eq(eo_checkpoint_save(ctx, &a.params, path, keys, NULL, 1, err, sizeof err),
                     EO_ERR_ARG);
    ck_assert_ptr_nonnull(strstr(err, "NULL values"));
    ck_assert_int_eq(eo_checkpoint_save_as(ctx, &a.params, path, EO_ST_BF16, NULL, values, 2,
                                           NULL, 64),
                     EO_ERR_ARG);
    ck_assert_int_eq(eo_checkpoint_save(NULL, &a.params, path, NULL, NULL, 0, err, sizeof err),
                     EO_ERR_ARG);
    ck_assert_ptr_nonnull(strstr(err, "NULL context"));
    ck_assert_int_eq(eo_checkpoint_save(ctx, NULL, path, NULL, NULL, 0, err, sizeof err),
                     EO_ERR_ARG);
    ck_assert_int_eq(eo_checkpoint_save(ctx, &a.params, NULL, NULL, NULL, 0, err, sizeof err),
                     EO_ERR_ARG);
    ck_assert_int_eq(eo_checkpoint_save_as(ctx, &a.params, path, EO_ST_I32, NULL, NULL, 0, NULL,
                                           64),
                     EO_ERR_ARG);
    eo_params odd = a.params;
    odd.count = -1;
    ck_assert_int_eq(eo_checkpoint_save(ctx, &odd, path, NULL, NULL, 0, err, sizeof err),
                     EO_ERR_ARG);
    ck_assert_ptr_nonnull(strstr(err, "count -1"));
    ck_assert_int_eq(eo_checkpoint_load(ctx, &odd, path, err, sizeof err), EO_ERR_ARG);
    eo_tensor *items[2] = { a.params.items[0], NULL };
    odd.items = items;
    odd.count = 2;
    ck_assert_int_eq(eo_checkpoint_save(ctx, &odd, path, NULL, NULL, 0, err, sizeof err),
                     EO_ERR_ARG);
    ck_assert_ptr_nonnull(strstr(err, "parameter 1 of 2 is NULL"));
    ck_assert_ptr_null(fopen(path, "rb")); /* nothing refused was written */

    ck_assert_int_eq(eo_checkpoint_save(ctx, &a.params, path, keys, values, 1, err, sizeof err),
                     EO_OK);
    ck_assert_int_eq(eo_checkpoint_load(ctx, &a.params, dir, err, sizeof err), EO_ERR_IO);
    ck_assert_msg(strstr(err, dir) && strstr(err, "is a directory"), "%s", err);
    ck_assert_int_eq(eo_checkpoint_load(ctx, &a.params, dir, NULL, 32), EO_ERR_IO);
    ck_assert_int_eq(eo_checkpoint_load(NULL, &a.params, path, err, sizeof err), EO_ERR_ARG);
    ck_assert_int_eq(eo_checkpoint_load(ctx, NULL, path, err, sizeof err), EO_ERR_ARG);
    ck_assert_int_eq(eo_checkpoint_load(ctx, &a.params, NULL, err, sizeof err), EO_ERR_ARG);
    ck_assert_int_eq(eo_checkpoint_load(ctx, &a.params, path, err, sizeof err), EO_OK);
    eo_test_ctx_free(ctx);
    eo_tmpdir_remove();
}
END_TEST

/* Issue 30 item 2: checkpoints are replaced atomically and durably, and
 * carry a CRC-32 of their data. Faults are injected through the durable
 * writer's I/O table (tools/formats/durable.h): every call is counted; a
 * fault makes call number `at` (or every call of one kind) fail with an
 * errno, and a "crash" makes that call and every later one fail without
 * doing anything, so nothing after it — not even the cleanup — happens,
 * as when the process dies there. */
enum { OP_OPEN, OP_WRITE, OP_FSYNC, OP_CLOSE, OP_RENAME, OP_UNLINK };
static struct {
    int calls;        /* I/O calls so far */
    int at;           /* the call that fails (-1: none) */
    int op;           /* or: every call of this kind fails (-1: none) */
    int err;          /* with this errno */
    int crash;        /* from `at` on, nothing happens */
    size_t short_max; /* > 0: a write takes at most this many bytes */
} fault;

static int faulted(int op)
{
    int k = fault.calls++;
    if (fault.crash && fault.at >= 0 && k >= fault.at) {
        errno = EIO;
        return 1;
    }
    if (k == fault.at || op == fault.op) {
        errno = fault.err;
        return 1;
    }
    return 0;
}

static int f_open(const char *path, int flags, mode_t mode)
{
    return faulted(OP_OPEN) ? -1 : open(path, flags, mode);
}

static ssize_t f_write(int fd, const void *buf, size_t n)
{
    if (faulted(OP_WRITE))
        return -1;
    if (fault.short_max && n > fault.short_max)
        n = fault.short_max;
    return write(fd, buf, n);
}

/* Not the real fsync: what is tested is the order of the steps and what
 * a failure leaves behind, not the disk; a real fsync per save made the
 * test take many seconds on a busy machine. */
static int f_fsync(int fd)
{
    (void)fd;
    return faulted(OP_FSYNC) ? -1 : 0;
}


static int f_close(int fd)
{
    /* The descriptor goes either way (as close(2) on Linux): the test
     * must not leak it; only the answer is the fault. */
    int bad = faulted(OP_CLOSE);
    int r = close(fd);
    return bad ? -1 : r;
}

static int f_rename(const char *from, const char *to)
{
    return faulted(OP_RENAME) ? -1 : rename(from, to);
}

static int f_unlink(const char *path)
{
    return faulted(OP_UNLINK) ? -1 : unlink(path);
}

static const eo_durable_io faulty = {f_open, f_write, f_fsync, f_close, f_rename, f_unlink};

static void arm(int at, int op, int err, int crash, size_t short_max)
{
    fault.calls = 0;
    fault.at = at;
    fault.op = op;
    fault.err = err;
    fault.crash = crash;
    fault.short_max = short_max;
    eo_durable_set_io(&faulty);
}

/* A save through the table with no fault: fast, and counted. */
static eo_status quiet_save(eo_ctx *ctx, const eo_params *ps, const char *path, char *err,
                            size_t errlen)
{
    arm(-1, -1, 0, 0, 0);
    eo_status st = eo_checkpoint_save(ctx, ps, path, NULL, NULL, 0, err, errlen);
    eo_durable_set_io(NULL);
    return st;
}

static unsigned char *slurp(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *b = malloc(len > 0 ? (size_t)len : 1);
    *n = fread(b, 1, (size_t)len, f);
    fclose(f);
    return b;
}

static int same_file(const char *path, const unsigned char *want, size_t n)
{
    size_t m = 0;
    unsigned char *got = slurp(path, &m);
    int same = got && m == n && memcmp(got, want, n) == 0;
    free(got);
    return same;
}

/* The model's values equal those of `want`. */
static int same_values(const eo_params *got, const eo_params *want)
{
    size_t n, m;
    float *a = snapshot(got, &n), *b = snapshot(want, &m);
    int same = n == m && memcmp(a, b, n * sizeof(float)) == 0;
    free(a);
    free(b);
    return same;
}

START_TEST(faults_at_every_step_keep_the_previous_checkpoint)
{
    char path[512], tmp[520], err[1024];
    ck_assert_ptr_nonnull(eo_tmpdir_make());
    snprintf(path, sizeof path, "%s", eo_tmpdir_path("m.safetensors"));
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    eo_ctx *ctx = eo_test_ctx(8, 8);
    eo_classifier a, b, c;
    eo_seed(ctx, 1);
    ck_assert_int_eq(eo_classifier_build(ctx, EO_MODEL_MLP, EO_CPU, &a), EO_OK);
    eo_seed(ctx, 2);
    ck_assert_int_eq(eo_classifier_build(ctx, EO_MODEL_MLP, EO_CPU, &b), EO_OK);
    eo_seed(ctx, 3);
    ck_assert_int_eq(eo_classifier_build(ctx, EO_MODEL_MLP, EO_CPU, &c), EO_OK);

    /* The previous checkpoint (a), and the new one (b) as it would be. */
    size_t na, nb;
    ck_assert_int_eq(eo_checkpoint_save(ctx, &b.params, path, NULL, NULL, 0, err, sizeof err),
                     EO_OK);
    unsigned char *new_bytes = slurp(path, &nb);
    /* Short writes (of an odd size, about a sixth of the file) are
     * continued to the end. */
    size_t piece = nb / 6 | 1;
    arm(-1, -1, 0, 0, piece);
    ck_assert_msg(eo_checkpoint_save(ctx, &a.params, path, NULL, NULL, 0, err, sizeof err) ==
                      EO_OK, "%s", err);
    int ncalls = fault.calls;
    eo_durable_set_io(NULL);
    unsigned char *old_bytes = slurp(path, &na);
    ck_assert_ptr_nonnull(old_bytes);
    ck_assert_int_eq(eo_checkpoint_load(ctx, &c.params, path, err, sizeof err), EO_OK);
    ck_assert(same_values(&c.params, &a.params));
    arm(-1, -1, 0, 0, 0);
    ck_assert_int_eq(eo_checkpoint_save(ctx, &b.params, path, NULL, NULL, 0, err, sizeof err),
                     EO_OK);
    int plain_calls = fault.calls; /* open, writes, fsync, close, rename, dir open/fsync/close */
    eo_durable_set_io(NULL);
    ck_assert_int_ge(plain_calls, 8);
    ck_assert_int_gt(ncalls, plain_calls);

    /* Each fault before the rename: the save fails naming the file, the
     * step and the reason; the old file is there byte for byte and loads;
     * no temporary is left. */
    static const struct { int op, err, nth_write; const char *says; } cases[] = {
        {OP_OPEN, EACCES, 0, "cannot create"},
        {OP_WRITE, ENOSPC, 0, "write failed after 0 bytes: No space left on device"},
        {-1, ENOSPC, 2, "write failed"},       /* a later write: part of the file is out */
        {-1, EIO, 3, "Input/output error"},
        {OP_FSYNC, EIO, 0, "fsync failed: Input/output error"},
        {OP_CLOSE, EIO, 0, "close failed: Input/output error"},
        {OP_RENAME, EXDEV, 0, "rename failed"},
    };
    for (size_t k = 0; k < sizeof cases / sizeof *cases; k++) {
        ck_assert_int_eq(quiet_save(ctx, &a.params, path, err, sizeof err), EO_OK);
        /* nth_write: the call number of that write (open is call 0). */
        arm(cases[k].nth_write ? cases[k].nth_write : -1, cases[k].op, cases[k].err, 0,
            cases[k].nth_write ? piece : 0);
        eo_status st = eo_checkpoint_save(ctx, &b.params, path, NULL, NULL, 0, err, sizeof err);
        eo_durable_set_io(NULL);
        ck_assert_int_eq(st, EO_ERR_IO);
        ck_assert_msg(strstr(err, path) && strstr(err, cases[k].says), "case %zu: %s", k, err);
        ck_assert_msg(same_file(path, old_bytes, na), "case %zu: the old file changed", k);
        ck_assert_int_eq(access(tmp, F_OK), -1);
        ck_assert_int_eq(eo_checkpoint_load(ctx, &c.params, path, err, sizeof err), EO_OK);
        ck_assert(same_values(&c.params, &a.params));
    }

    /* The directory's fsync fails after the rename: reported, and the
     * new file is in place, complete. */
    arm(-1, -1, 0, 0, 0);
    fault.at = plain_calls - 2; /* the fsync of the directory */
    fault.err = EIO;
    ck_assert_int_eq(eo_checkpoint_save(ctx, &b.params, path, NULL, NULL, 0, err, sizeof err),
                     EO_ERR_IO);
    eo_durable_set_io(NULL);
    ck_assert_msg(strstr(err, "directory fsync failed"), "%s", err);
    ck_assert(same_file(path, new_bytes, nb));

    /* A crash at every call: the name holds the old file or the new one,
     * whole, never a mixture; a temporary left behind is either refused
     * (cut short) or complete; and the next save succeeds over it. */
    /* (The last call closes the directory: a crash there loses nothing,
     * and the save has succeeded.) */
    for (int at = 0; at < ncalls - 1; at++) {
        ck_assert_int_eq(quiet_save(ctx, &a.params, path, err, sizeof err), EO_OK);
        arm(at, -1, EIO, 1, piece);
        ck_assert_int_eq(eo_checkpoint_save(ctx, &b.params, path, NULL, NULL, 0, err,
                                            sizeof err), EO_ERR_IO);
        eo_durable_set_io(NULL);
        int old = same_file(path, old_bytes, na), young = same_file(path, new_bytes, nb);
        ck_assert_msg(old || young, "crash at call %d: %s is neither file", at, path);
        ck_assert_int_eq(eo_checkpoint_load(ctx, &c.params, path, err, sizeof err), EO_OK);
        ck_assert(same_values(&c.params, old ? &a.params : &b.params));
        if (access(tmp, F_OK) == 0 && !same_file(tmp, new_bytes, nb))
            ck_assert_msg(eo_checkpoint_load(ctx, &c.params, tmp, err, sizeof err) != EO_OK,
                          "crash at call %d: a partial temporary loaded", at);
        ck_assert_int_eq(quiet_save(ctx, &b.params, path, err, sizeof err), EO_OK);
        ck_assert(same_file(path, new_bytes, nb));
        ck_assert_int_eq(access(tmp, F_OK), -1);
    }
    free(old_bytes);
    free(new_bytes);
    eo_test_ctx_free(ctx);
    eo_tmpdir_remove();
}
END_TEST

/* The CRC-32 of the data is in every file written and checked on load: a
 * flipped bit anywhere in the data is refused naming the file, and the
 * model is left as it was. Files without it (PyTorch's) still load; a
 * caller's value for the key is replaced by the true one. */
START_TEST(checksum_refuses_flipped_bits)
{
    char path[512], bad[512], err[512];
    ck_assert_ptr_nonnull(eo_tmpdir_make());
    snprintf(path, sizeof path, "%s", eo_tmpdir_path("m.safetensors"));
    snprintf(bad, sizeof bad, "%s", eo_tmpdir_path("flipped.safetensors"));
    eo_ctx *ctx = eo_test_ctx(8, 8);
    eo_classifier a, c;
    eo_seed(ctx, 1);
    ck_assert_int_eq(eo_classifier_build(ctx, EO_MODEL_MLP, EO_CPU, &a), EO_OK);
    eo_seed(ctx, 3);
    ck_assert_int_eq(eo_classifier_build(ctx, EO_MODEL_MLP, EO_CPU, &c), EO_OK);
    const char *keys[1] = {EO_ST_CHECKSUM_KEY}, *values[1] = {"deadbeef"};
    ck_assert_int_eq(eo_checkpoint_save(ctx, &a.params, path, keys, values, 1, err, sizeof err),
                     EO_OK);
    eo_st_file f;
    ck_assert_int_eq(eo_st_read(path, &f, err, sizeof err), EO_OK);
    const char *v = eo_st_meta_get(&f, EO_ST_CHECKSUM_KEY);
    ck_assert_ptr_nonnull(v);
    char want[16];
    snprintf(want, sizeof want, "%08lx", (unsigned long)eo_st_crc32(0, f.data, f.data_size));
    ck_assert_str_eq(v, want);
    size_t data_at = (size_t)(f.data - (const unsigned char *)f.image), n;
    eo_st_close(&f);

    unsigned char *bytes = slurp(path, &n);
    size_t before_n;
    float *before = snapshot(&c.params, &before_n);
    /* A bit in the first, a middle and the last data byte, and a few
     * spread between. */
    for (size_t k = 0; k < 8; k++) {
        size_t at = data_at + (n - data_at - 1) * k / 7;
        bytes[at] ^= (unsigned char)(1u << k);
        ck_assert_ptr_nonnull(eo_tmpdir_file("flipped.safetensors", bytes, n));
        bytes[at] ^= (unsigned char)(1u << k);
        ck_assert_int_eq(eo_checkpoint_load(ctx, &c.params, bad, err, sizeof err),
                         EO_ERR_FORMAT);
        ck_assert_msg(strstr(err, "flipped.safetensors") && strstr(err, "corrupt") &&
                          strstr(err, "CRC-32"), "%s", err);
        ck_assert_int_eq(eo_st_read(bad, &f, err, sizeof err), EO_ERR_FORMAT);
    }
    size_t after_n;
    float *after = snapshot(&c.params, &after_n);
    ck_assert_int_eq(memcmp(before, after, before_n * sizeof(float)), 0);
    free(before);
    free(after);
    free(bytes);

    /* A checksum that is not 8 hex digits is corrupt too. */
    float x[2] = {1, 2};
    eo_st_tensor t = {.name = "x", .dtype = EO_ST_F32, .rank = 1, .shape = {2}, .data = x,
                      .nbytes = 8};
    ck_assert_int_eq(eo_st_write(bad, &t, 1, NULL, 0, err, sizeof err), EO_OK);
    bytes = slurp(bad, &n);
    static const char pair[] = "\"" EO_ST_CHECKSUM_KEY "\":\"";
    size_t at = 0;
    while (at + sizeof pair < n && memcmp(bytes + at, pair, sizeof pair - 1) != 0)
        at++;
    ck_assert_uint_lt(at + sizeof pair, n);
    bytes[at + sizeof pair - 1] = 'g'; /* the first hex digit */
    ck_assert_ptr_nonnull(eo_tmpdir_file("flipped.safetensors", bytes, n));
    ck_assert_int_eq(eo_st_read(bad, &f, err, sizeof err), EO_ERR_FORMAT);
    ck_assert_msg(strstr(err, "expected 8 hex digits"), "%s", err);
    free(bytes);

    /* Written by PyTorch, without the key: loads. */
    ck_assert_int_eq(eo_st_read("tests/fixtures/st16.safetensors", &f, err, sizeof err), EO_OK);
    ck_assert_ptr_null(eo_st_meta_get(&f, EO_ST_CHECKSUM_KEY));
    eo_st_close(&f);
    eo_test_ctx_free(ctx);
    eo_tmpdir_remove();
}
END_TEST

Suite *eo_suite_checkpoint(void)
{
    Suite *s = suite_create("checkpoint");
    TCase *tc = tcase_create("checkpoint");
    tcase_add_test(tc, round_trip_and_bad_files_leave_model_unchanged);
    tcase_add_test(tc, masters_saved_and_working_copies_refreshed);
    tcase_add_test(tc, bad_arguments_and_directories_are_refused);
    tcase_add_test(tc, faults_at_every_step_keep_the_previous_checkpoint);
    tcase_add_test(tc, checksum_refuses_flipped_bits);
    suite_add_tcase(s, tc);
    return s;
}
