/* tests/test_dist.c — data-parallel training (tools/dist/).
 *
 *  - the library's hook: called once per step, after the backward and
 *    before clipping and the update, over the gradients in parameter
 *    order; its failure is the step's failure; no hook, no change;
 *  - MPI: `mpirun -np 2 eo-train` against one process running the same
 *    two slices in turn (--micro-batches 2), for every model: the per-step
 *    losses and the saved weights must be identical byte for byte. The
 *    MPI case says why it skipped when mpirun is missing (`make test`
 *    installs Open MPI as root);
 *  - NCCL: the CUDA hook on the PTX interpreter with an NCCL double. The
 *    interpreter's driver double holds one device, so the two ranks are
 *    two contexts on that device, driven one after the other in one
 *    process (the double completes an all-reduce when the last rank has
 *    queued it, as NCCL's kernels would wait for it). */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "core/nn.h"
#include "tests/gradcheck.h"
#include "tests/tmpdir.h"
#include "tools/dist/accum.h"
#include "tools/dist/nccl.h"
#include "tools/ptxsim/driver.h"

/* ---- the hook, with a fake second rank ----------------------------------- */

typedef struct {
    int calls, n;
    float first_grad; /* gradient 0's element 0 when the hook ran */
    eo_status fail;
} fake_world;

/* Pretend a second rank had exactly the same gradients: the sum doubles. */
static eo_status fake_sum(void *user, const eo_grad_buffer *b, int n, char *msg, size_t msglen)
{
    fake_world *w = user;
    w->calls++;
    w->n = n;
    if (w->fail != EO_OK) {
        snprintf(msg, msglen, "link down");
        return w->fail;
    }
    w->first_grad = ((float *)b[0].data)[0];
    for (int i = 0; i < n; i++) {
        ck_assert_int_eq(b[i].device, EO_CPU);
        ck_assert_int_eq(b[i].dtype, EO_F32);
        for (int64_t k = 0; k < b[i].count; k++)
            ((float *)b[i].data)[k] *= 2.0f;
    }
    return EO_OK;
}

/* A 5-4-3 network and one step of SGD (lr 0.5) on 6 rows; returns its
 * weights after the step in w (20 + 4 + 12 + 3 floats). */
static void one_step(fake_world *world, int clip, float *w, eo_status *st, char *msg)
{
    eo_ctx *ctx = eo_test_ctx(4, 16);
    eo_seed(ctx, 3);
    eo_params ps;
    eo_module l1, l2;
    ck_assert_int_eq(eo_params_init(ctx, &ps, 4), EO_OK);
    ck_assert_int_eq(eo_linear_init(ctx, &ps, EO_CPU, "0", 5, 4, 1, EO_INIT_KAIMING_UNIFORM, &l1), EO_OK);
    ck_assert_int_eq(eo_linear_init(ctx, &ps, EO_CPU, "1", 4, 3, 1, EO_INIT_KAIMING_UNIFORM, &l2), EO_OK);
    if (world) {
        eo_grad_sync h = { fake_sum, world };
        eo_ctx_set_grad_sync(ctx, h);
    }
    eo_optimizer opt;
    ck_assert_int_eq(eo_sgd_init(ctx, &opt, &ps, 0.5f, 0, 0, 0), EO_OK);
    int64_t sx[2] = { 6, 5 };
    eo_tensor *x = eo_test_rand(ctx, 2, sx, -1, 1, 11, 0), *h, *y, *t, *L;
    int32_t labels[6] = { 0, 1, 2, 2, 1, 0 };
    int64_t sy[1] = { 6 };
    ck_assert_int_eq(eo_tensor_wrap(ctx, EO_I32, 1, sy, labels, &t), EO_OK);
    ck_assert_int_eq(eo_module_forward(ctx, &l1, x, &h), EO_OK);
    ck_assert_int_eq(eo_relu(ctx, h, &h), EO_OK);
    ck_assert_int_eq(eo_module_forward(ctx, &l2, h, &y), EO_OK);
    ck_assert_int_eq(eo_cross_entropy(ctx, y, t, -100, &L), EO_OK);
    ck_assert_int_eq(eo_backward(ctx, L), EO_OK);
    if (world)
        ck_assert_int_eq(world->calls, 0); /* not in the backward */
    *st = EO_OK;
    if (clip)
        *st = eo_clip_grad_norm(ctx, &ps, 1e6f, NULL);
    if (*st == EO_OK)
        *st = eo_optimizer_step(ctx, &opt);
    snprintf(msg, 256, "%s", eo_last_error(ctx));
    size_t at = 0;
    for (int i = 0; i < ps.count; i++) {
        ck_assert_int_eq(eo_read(ctx, ps.items[i], w + at, (size_t)eo_numel(ps.items[i]) * 4), EO_OK);
        at += (size_t)eo_numel(ps.items[i]);
    }
    eo_test_ctx_free(ctx);
}

START_TEST(hook_runs_once_before_the_update_and_its_failure_is_the_steps)
{
    float w0[39], w1[39], w2[39];
    char msg[256];
    eo_status st;
    one_step(NULL, 0, w0, &st, msg); /* no hook */
    ck_assert_int_eq(st, EO_OK);
    fake_world world = { 0, 0, 0, EO_OK };
    one_step(&world, 1, w1, &st, msg); /* clipping triggers it, the step does not again */
    ck_assert_int_eq(st, EO_OK);
    ck_assert_int_eq(world.calls, 1);
    ck_assert_int_eq(world.n, 4); /* every parameter, once */
    ck_assert(world.first_grad != 0.0f); /* it saw the backward's gradients */
    fake_world world2 = { 0, 0, 0, EO_OK };
    one_step(&world2, 0, w2, &st, msg); /* no clipping: the optimizer step triggers it */
    ck_assert_int_eq(world2.calls, 1);
    ck_assert(memcmp(w1, w2, sizeof w1) == 0);
    /* Doubled gradients moved the weights, and differently from one rank. */
    ck_assert(memcmp(w0, w1, sizeof w0) != 0);

    fake_world broken = { 0, 0, 0, EO_ERR_IO };
    one_step(&broken, 0, w2, &st, msg);
    ck_assert_int_eq(st, EO_ERR_IO);
    ck_assert_msg(strstr(msg, "grad_allreduce: link down") != NULL, "message: %s", msg);
}
END_TEST

/* ---- MPI: two ranks against one process --------------------------------- */

static char bindir[512];
/* make test runs the suite from the repository's root. */
#define SUPPRESSIONS "tools/dist/lsan-openmpi.supp"

static int have_mpi(void)
{
    if (system("command -v mpirun >/dev/null 2>&1") != 0) {
        fprintf(stderr, "test_dist: SKIPPED the 2-rank MPI runs: mpirun not found (Debian: "
                        "apt-get install openmpi-bin libopenmpi-dev; `make test` installs "
                        "them when run as root)\n");
        return 0;
    }
    ssize_t n = readlink("/proc/self/exe", bindir, sizeof bindir - 1);
    ck_assert(n > 0);
    bindir[n] = 0;
    char *slash = strrchr(bindir, '/');
    ck_assert(slash != NULL);
    *slash = 0;
    return 1;
}

static char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    ck_assert_msg(f != NULL, "%s was not written", path);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = malloc((size_t)n + 1);
    ck_assert(fread(b, 1, (size_t)n, f) == (size_t)n);
    fclose(f);
    b[n] = 0;
    *len = (size_t)n;
    return b;
}

static void same_file(const char *a, const char *b)
{
    size_t na, nb;
    char *x = slurp(a, &na), *y = slurp(b, &nb);
    ck_assert_msg(na == nb && memcmp(x, y, na) == 0, "%s and %s differ", a, b);
    free(x);
    free(y);
}

static void run(const char *cmd)
{
    int rc = system(cmd);
    ck_assert_msg(rc == 0, "failed (%d): %s", rc, cmd);
}

/* eo-train ARGS under mpirun -np 2 and alone with --micro-batches 2. */
static void two_ranks_match_one_process(const char *args)
{
    ck_assert(eo_tmpdir_make() != NULL);
    char a_log[600], a_st[600], b_log[600], b_st[600], out[600], cmd[4096];
    snprintf(a_log, sizeof a_log, "%s", eo_tmpdir_path("mpi.csv"));
    snprintf(a_st, sizeof a_st, "%s", eo_tmpdir_path("mpi.safetensors"));
    snprintf(b_log, sizeof b_log, "%s", eo_tmpdir_path("one.csv"));
    snprintf(b_st, sizeof b_st, "%s", eo_tmpdir_path("one.safetensors"));
    snprintf(out, sizeof out, "%s", eo_tmpdir_path("out.txt"));
    /* As root (CI), Open MPI wants to be told; --oversubscribe: 2 ranks
     * may exceed the cores a container reports. Under SANITIZE=1 the ranks
     * get LeakSanitizer's suppressions for Open MPI's own allocations
     * (tools/dist/lsan-openmpi.supp says why); harmless otherwise. */
    snprintf(cmd, sizeof cmd,
             "ASAN_OPTIONS=\"${ASAN_OPTIONS:+$ASAN_OPTIONS:}fast_unwind_on_malloc=0\" "
             "LSAN_OPTIONS=\"${LSAN_OPTIONS:+$LSAN_OPTIONS:}suppressions=%s:print_suppressions=0\" "
             "mpirun --allow-run-as-root --oversubscribe -x ASAN_OPTIONS -x LSAN_OPTIONS -np 2 "
             "%s/eo-train %s --threads 1 --quiet --log %s --save %s > %s 2>&1 || "
             "{ cat %s; exit 1; }",
             SUPPRESSIONS, bindir, args, a_log, a_st, out, out);
    run(cmd);
    snprintf(cmd, sizeof cmd,
             "%s/eo-train %s --threads 1 --quiet --micro-batches 2 --log %s --save %s > %s "
             "2>&1 || { cat %s; exit 1; }",
             bindir, args, b_log, b_st, out, out);
    run(cmd);
    same_file(a_log, b_log);
    same_file(a_st, b_st);
    eo_tmpdir_remove();
}

/* A small IDX data set in the Fashion-MNIST layout (so a rank does not
 * decode 60,000 images to train on a few): 96 training and 1,000 test
 * images, each class a brighter band of rows. Returns the directory. */
static const char *tiny_mnist(char *dir, size_t cap)
{
    snprintf(dir, cap, "/tmp/eo-test-idx-XXXXXX");
    ck_assert(mkdtemp(dir) != NULL);
    const char *split[2] = { "train", "t10k" };
    const int count[2] = { 96, 1000 };
    for (int k = 0; k < 2; k++) {
        int n = count[k];
        unsigned char *img = malloc(16 + (size_t)n * 784), *lab = malloc(8 + (size_t)n);
        const unsigned char ih[16] = { 0, 0, 8, 3, (unsigned char)(n >> 24), (unsigned char)(n >> 16),
                                       (unsigned char)(n >> 8), (unsigned char)n, 0, 0, 0, 28, 0, 0, 0, 28 };
        const unsigned char lh[8] = { 0, 0, 8, 1, (unsigned char)(n >> 24), (unsigned char)(n >> 16),
                                      (unsigned char)(n >> 8), (unsigned char)n };
        memcpy(img, ih, 16);
        memcpy(lab, lh, 8);
        for (int i = 0; i < n; i++) {
            int c = (i * 7 + k) % 10;
            lab[8 + i] = (unsigned char)c;
            for (int p = 0; p < 784; p++)
                img[16 + (size_t)i * 784 + p] =
                    (unsigned char)((p / 28) / 3 == c ? 200 : (p * 31 + i * 17) % 90);
        }
        char path[700];
        snprintf(path, sizeof path, "%s/%s-images-idx3-ubyte", dir, split[k]);
        FILE *f = fopen(path, "wb");
        ck_assert(f && fwrite(img, 1, 16 + (size_t)n * 784, f) == 16 + (size_t)n * 784);
        fclose(f);
        snprintf(path, sizeof path, "%s/%s-labels-idx1-ubyte", dir, split[k]);
        f = fopen(path, "wb");
        ck_assert(f && fwrite(lab, 1, 8 + (size_t)n, f) == 8 + (size_t)n);
        fclose(f);
        free(img);
        free(lab);
    }
    return dir;
}

static void remove_tiny_mnist(const char *dir)
{
    char cmd[700];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    ck_assert_int_eq(system(cmd), 0);
}

/* eo-train on the tiny data set: 1,000 test images are two evaluation
 * batches, one per rank. */
static void image_model(const char *args)
{
    char dir[64], all[1024];
    tiny_mnist(dir, sizeof dir);
    snprintf(all, sizeof all, "--data %s --plot /dev/null %s", dir, args);
    two_ranks_match_one_process(all);
    remove_tiny_mnist(dir);
}

START_TEST(mpi_two_ranks_equal_one_process_mlp)
{
    if (!have_mpi())
        return;
    /* 96 images in batches of 45, 2 epochs: 2 full ones (slices of 22
     * and 23) and one of 6 each epoch: unequal shares weigh right. */
    image_model("--batch 45 --epochs 2");
}
END_TEST

START_TEST(mpi_two_ranks_equal_one_process_cnn_vit)
{
    if (!have_mpi())
        return;
    /* 100 test images: one evaluation batch, rank 1 adds nothing (a
     * CNN's batch of 500 would touch 450 MB of im2col). */
    image_model("--model cnn --batch 16 --steps 2 --epochs 1 --test-subset 100");
    image_model("--model vit --batch 16 --steps 2 --epochs 1 --test-subset 100");
}
END_TEST

START_TEST(mpi_two_ranks_equal_one_process_gpt)
{
    if (!have_mpi())
        return;
    static char text[6000];
    for (size_t i = 0; i + 1 < sizeof text; i++)
        text[i] = "the quick brown fox jumps over the lazy dog.\n"[(i * 7 + i / 13) % 45];
    /* Outside the helper's scratch directory, which it makes afresh. */
    char keep[] = "/tmp/eo-test-text-XXXXXX", args[900];
    int fd = mkstemp(keep);
    ck_assert(fd >= 0);
    ck_assert(write(fd, text, sizeof text - 1) == (ssize_t)(sizeof text - 1));
    close(fd);
    /* 9 windows a step: slices of 4 and 5. */
    snprintf(args, sizeof args,
             "--model gpt --text %s --steps 4 --context 16 --d-model 32 --heads 2 --layers 1 "
             "--batch 9 --val-windows 40 --eval-every 2 --plot /dev/null", keep);
    two_ranks_match_one_process(args);
    unlink(keep);
}
END_TEST

/* ---- NCCL double: ranks in one process, on the interpreter's device ------ */

enum { DBL_RANKS = 4, DBL_OPS = 64 };
struct eo_nccl_comm_st { int rank; };
static struct {
    int nranks, groups;
    struct eo_nccl_comm_st comm[DBL_RANKS];
    struct { uint64_t buf; size_t count; } op[DBL_RANKS][DBL_OPS];
    int queued[DBL_RANKS], done;
    int allreduces;
} dbl;

/* Every all-reduce that all ranks have queued: sum in rank order, on the
 * fake device's memory, the result to every rank. */
static void dbl_progress(void)
{
    for (;;) {
        for (int r = 0; r < dbl.nranks; r++)
            if (dbl.queued[r] <= dbl.done)
                return;
        int k = dbl.done++;
        size_t n = dbl.op[0][k].count;
        float *acc = malloc(n * sizeof *acc);
        for (int r = 0; r < dbl.nranks; r++) {
            ck_assert_uint_eq(dbl.op[r][k].count, n);
            const float *src = eo_ptxsim_device_bytes(dbl.op[r][k].buf, n * sizeof *acc);
            ck_assert(src != NULL);
            for (size_t i = 0; i < n; i++)
                acc[i] = r == 0 ? src[i] : acc[i] + src[i];
        }
        for (int r = 0; r < dbl.nranks; r++)
            memcpy(eo_ptxsim_device_bytes(dbl.op[r][k].buf, n * sizeof *acc), acc, n * sizeof *acc);
        free(acc);
    }
}

static int dbl_get_id(eo_nccl_id *id)
{
    memset(id, 0, sizeof *id);
    memcpy(id->internal, "nccl-double", 11);
    return 0;
}

static int dbl_init(eo_nccl_comm *c, int nranks, eo_nccl_id id, int rank)
{
    if (memcmp(id.internal, "nccl-double", 11) != 0 || nranks > DBL_RANKS || rank >= nranks)
        return 4; /* ncclInvalidArgument */
    dbl.nranks = nranks;
    dbl.comm[rank].rank = rank;
    *c = &dbl.comm[rank];
    return 0;
}

static int dbl_allreduce(const void *send, void *recv, size_t count, int type, int op,
                         eo_nccl_comm c, eo_nccl_stream stream)
{
    (void)stream;
    if (send != recv || type != EO_NCCL_FLOAT32 || op != EO_NCCL_SUM || dbl.groups != 1)
        return 4;
    int r = c->rank;
    ck_assert_int_lt(dbl.queued[r], DBL_OPS);
    dbl.op[r][dbl.queued[r]].buf = (uint64_t)(uintptr_t)recv;
    dbl.op[r][dbl.queued[r]++].count = count;
    dbl.allreduces++;
    return 0;
}

static int dbl_group_start(void) { dbl.groups++; return 0; }
static int dbl_group_end(void)
{
    if (--dbl.groups == 0)
        dbl_progress();
    return 0;
}
static int dbl_destroy(eo_nccl_comm c) { (void)c; return 0; }
static const char *dbl_error(int r) { return r == 4 ? "invalid argument (double)" : "double"; }

static const eo_nccl_api dbl_api = { NULL, dbl_get_id, dbl_init, dbl_allreduce, dbl_group_start,
                                     dbl_group_end, dbl_destroy, dbl_error };

/* One replica: a 12-8-3 network on the device. */
typedef struct {
    eo_ctx *ctx;
    eo_params ps;
    eo_module l1, l2;
    eo_optimizer opt;
} replica;

static void replica_make(replica *m, const eo_cuda_driver *drv)
{
    m->ctx = eo_test_ctx(4, 16);
    ck_assert_msg(eo_cuda_attach(m->ctx, drv, 0, 4u << 20, 16u << 20) == EO_OK, "%s",
                  eo_last_error(m->ctx));
    eo_seed(m->ctx, 5);
    ck_assert_int_eq(eo_params_init(m->ctx, &m->ps, 4), EO_OK);
    ck_assert_int_eq(eo_linear_init(m->ctx, &m->ps, EO_CUDA, "0", 12, 8, 1, EO_INIT_KAIMING_UNIFORM, &m->l1), EO_OK);
    ck_assert_int_eq(eo_linear_init(m->ctx, &m->ps, EO_CUDA, "1", 8, 3, 1, EO_INIT_KAIMING_UNIFORM, &m->l2), EO_OK);
    ck_assert_int_eq(eo_adamw_init(m->ctx, &m->opt, &m->ps, 0.01f, 0.9f, 0.999f, 1e-8f, 0), EO_OK);
}

/* Forward and backward of rows [b0, b0 + n) of 8, loss weighted n / 8. */
static void replica_backward(replica *m, const float *x, const int32_t *y, int64_t b0, int64_t n)
{
    eo_ctx *ctx = m->ctx;
    eo_tensor *xh, *yh, *xd, *yd, *h, *o, *L, *Ls;
    int64_t sx[2] = { n, 12 }, sy[1] = { n };
    ck_assert_int_eq(eo_params_zero_grad(ctx, &m->ps), EO_OK);
    ck_assert_int_eq(eo_tensor_wrap(ctx, EO_F32, 2, sx, (void *)(x + b0 * 12), &xh), EO_OK);
    ck_assert_int_eq(eo_tensor_wrap(ctx, EO_I32, 1, sy, (void *)(y + b0), &yh), EO_OK);
    ck_assert_int_eq(eo_to_device(ctx, xh, EO_CUDA, EO_STEP, &xd), EO_OK);
    ck_assert_int_eq(eo_to_device(ctx, yh, EO_CUDA, EO_STEP, &yd), EO_OK);
    ck_assert_int_eq(eo_module_forward(ctx, &m->l1, xd, &h), EO_OK);
    ck_assert_int_eq(eo_relu(ctx, h, &h), EO_OK);
    ck_assert_int_eq(eo_module_forward(ctx, &m->l2, h, &o), EO_OK);
    ck_assert_int_eq(eo_cross_entropy(ctx, o, yd, -100, &L), EO_OK);
    ck_assert_int_eq(eo_scale(ctx, L, (float)n / 8.0f, &Ls), EO_OK);
    ck_assert_int_eq(eo_backward(ctx, Ls), EO_OK);
}

static void replica_weights(replica *m, float *w, size_t cap)
{
    size_t at = 0;
    for (int i = 0; i < m->ps.count; i++) {
        size_t c = (size_t)eo_numel(m->ps.items[i]);
        ck_assert(at + c <= cap);
        ck_assert_msg(eo_read(m->ctx, m->ps.items[i], w + at, c * 4) == EO_OK, "%s", eo_last_error(m->ctx));
        at += c;
    }
}

static void replica_free(replica *m)
{
    eo_cuda_detach(m->ctx);
    eo_test_ctx_free(m->ctx);
}

START_TEST(nccl_hook_two_ranks_on_the_interpreter_equal_one_process)
{
    if (!EO_HAVE_CUDA) {
        printf("dist: the NCCL case skipped: this build has no CUDA backend (CUDA=0)\n");
        return;
    }
    enum { STEPS = 3, NW = 12 * 8 + 8 + 8 * 3 + 3 };
    float x[STEPS][8 * 12];
    int32_t y[STEPS][8];
    for (int s = 0; s < STEPS; s++)
        for (int i = 0; i < 8 * 12; i++) {
            x[s][i] = (float)((i * 37 + s * 11) % 17) / 8.0f - 1.0f;
            if (i < 8)
                y[s][i] = (i * 5 + s) % 3;
        }
    eo_cuda_driver D;
    eo_ptxsim_driver_reset();
    eo_ptxsim_driver(&D);
    memset(&dbl, 0, sizeof dbl);

    /* Two ranks: rows 0-3 and 4-7 (plus 3 and 5 to try unequal shares). */
    replica r[2];
    eo_nccl comm[2];
    eo_nccl_id id;
    char err[256];
    ck_assert_int_eq(dbl_api.ncclGetUniqueId(&id), 0);
    for (int k = 0; k < 2; k++) {
        replica_make(&r[k], &D);
        ck_assert_msg(eo_nccl_init(&comm[k], &dbl_api, &id, 2, k, NULL, err, sizeof err) == EO_OK, "%s", err);
        eo_ctx_set_grad_sync(r[k].ctx, eo_nccl_grad_sync(&comm[k]));
    }
    const int64_t cut[STEPS] = { 4, 3, 5 };
    for (int s = 0; s < STEPS; s++) {
        /* Each rank queues its all-reduce after its backward; the last
         * one's completes them; then the updates. */
        for (int k = 0; k < 2; k++) {
            replica_backward(&r[k], x[s], y[s], k ? cut[s] : 0, k ? 8 - cut[s] : cut[s]);
            ck_assert_msg(eo_grad_allreduce(r[k].ctx, &r[k].ps) == EO_OK, "%s", eo_last_error(r[k].ctx));
        }
        for (int k = 0; k < 2; k++)
            ck_assert_msg(eo_optimizer_step(r[k].ctx, &r[k].opt) == EO_OK, "%s", eo_last_error(r[k].ctx));
    }
    ck_assert_int_eq(dbl.allreduces, STEPS * 2 * 4); /* one per gradient, rank and step */
    float w0[NW], w1[NW], w[NW];
    replica_weights(&r[0], w0, NW);
    replica_weights(&r[1], w1, NW);
    ck_assert_msg(memcmp(w0, w1, sizeof w0) == 0, "the replicas drifted apart");
    for (int k = 0; k < 2; k++) {
        eo_nccl_destroy(&comm[k]);
        replica_free(&r[k]);
    }

    /* One process, the same two slices in turn, gradients added in order. */
    replica one;
    replica_make(&one, &D);
    eo_grad_accum acc = {0};
    for (int s = 0; s < STEPS; s++) {
        for (int k = 0; k < 2; k++) {
            replica_backward(&one, x[s], y[s], k ? cut[s] : 0, k ? 8 - cut[s] : cut[s]);
            ck_assert_msg(eo_grad_accum_add(&acc, one.ctx, &one.ps, k, err, sizeof err) == EO_OK, "%s", err);
        }
        ck_assert_msg(eo_grad_accum_store(&acc, one.ctx, &one.ps, err, sizeof err) == EO_OK, "%s", err);
        ck_assert_int_eq(eo_optimizer_step(one.ctx, &one.opt), EO_OK);
    }
    replica_weights(&one, w, NW);
    ck_assert_msg(memcmp(w, w0, sizeof w) == 0, "2 ranks differ from one process");
    eo_grad_accum_free(&acc);

    /* Host gradients are not NCCL's: a clear status, not a crash. */
    eo_grad_buffer hb = { w, 4, EO_F32, EO_CPU };
    eo_nccl c1;
    ck_assert_int_eq(eo_nccl_init(&c1, &dbl_api, &id, 1, 0, NULL, err, sizeof err), EO_OK);
    eo_grad_sync h = eo_nccl_grad_sync(&c1);
    ck_assert_int_eq(h.allreduce(h.user, &hb, 1, err, sizeof err), EO_ERR_DEVICE);
    eo_nccl_destroy(&c1);
    replica_free(&one);
    ck_assert_uint_eq(eo_ptxsim_live_allocations(), 0);
    eo_ptxsim_driver_reset();
}
END_TEST

Suite *eo_suite_dist(void)
{
    Suite *s = suite_create("dist");
    TCase *tc = tcase_create("dist");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, hook_runs_once_before_the_update_and_its_failure_is_the_steps);
    tcase_add_test(tc, nccl_hook_two_ranks_on_the_interpreter_equal_one_process);
    tcase_add_test(tc, mpi_two_ranks_equal_one_process_mlp);
    tcase_add_test(tc, mpi_two_ranks_equal_one_process_cnn_vit);
    tcase_add_test(tc, mpi_two_ranks_equal_one_process_gpt);
    suite_add_tcase(s, tc);
    return s;
}
