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
 *  - NCCL: the CUDA hook on the PTX interpreter with an NCCL double, as
 *    in production one rank per device: two simulated devices, each rank
 *    on its own host thread with its own context, the group's calls
 *    blocking until both ranks have joined; the sums are taken in the
 *    devices' memory on the stream each rank passed (the device state's).
 *    Once with a bare network, once through eo-train's own loop
 *    (tools/train/trainer.c, --device cuda) with a thread-level MPI
 *    double carrying NCCL's id and the losses. */
#include <check.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "core/nn.h"
#include "tests/gradcheck.h"
#include "tests/tmpdir.h"
#include "tools/dist/accum.h"
#include "ops/cuda/device.h"
#include "tools/dist/nccl.h"
#include "tools/ptxsim/driver.h"
#include "tools/train/trainer.h"

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
    /* A cross build runs under an emulator (tools/build/cross.sh): the
     * host's Open MPI is built for the host, so neither its mpirun nor its
     * libmpi can start or serve this build's eo-train. */
    if (getenv("EO_TEST_RUNNER")) {
        fprintf(stderr, "test_dist: SKIPPED the 2-rank MPI runs: a cross build under %s (the "
                        "host's Open MPI is for the host's architecture)\n",
                getenv("EO_TEST_RUNNER"));
        return 0;
    }
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
    char a_log[600], a_st[600], b_log[600], b_st[600], out[600], plot[600], cmd[4096];
    snprintf(a_log, sizeof a_log, "%s", eo_tmpdir_path("mpi.csv"));
    snprintf(a_st, sizeof a_st, "%s", eo_tmpdir_path("mpi.safetensors"));
    snprintf(b_log, sizeof b_log, "%s", eo_tmpdir_path("one.csv"));
    snprintf(b_st, sizeof b_st, "%s", eo_tmpdir_path("one.safetensors"));
    snprintf(out, sizeof out, "%s", eo_tmpdir_path("out.txt"));
    /* The plot is not compared; it goes to a scratch file (the programs
     * refuse to write over a device such as /dev/null). */
    snprintf(plot, sizeof plot, "%s", eo_tmpdir_path("plot.svg"));
    /* As root (CI), Open MPI wants to be told; --oversubscribe: 2 ranks
     * may exceed the cores a container reports. Under SANITIZE=1 the ranks
     * get LeakSanitizer's suppressions for Open MPI's own allocations
     * (tools/dist/lsan-openmpi.supp says why); harmless otherwise. */
    snprintf(cmd, sizeof cmd,
             "ASAN_OPTIONS=\"${ASAN_OPTIONS:+$ASAN_OPTIONS:}fast_unwind_on_malloc=0\" "
             "LSAN_OPTIONS=\"${LSAN_OPTIONS:+$LSAN_OPTIONS:}suppressions=%s:print_suppressions=0\" "
             "mpirun --allow-run-as-root --oversubscribe -x ASAN_OPTIONS -x LSAN_OPTIONS -np 2 "
             "%s/eo-train %s --threads 1 --quiet --plot %s --log %s --save %s > %s 2>&1 || "
             "{ cat %s; exit 1; }",
             SUPPRESSIONS, bindir, args, plot, a_log, a_st, out, out);
    run(cmd);
    snprintf(cmd, sizeof cmd,
             "%s/eo-train %s --threads 1 --quiet --micro-batches 2 --plot %s --log %s --save %s "
             "> %s 2>&1 || { cat %s; exit 1; }",
             bindir, args, plot, b_log, b_st, out, out);
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
    snprintf(all, sizeof all, "--data %s %s", dir, args);
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
    /* ZeRO-1 under mpirun: the same bits as one process (and so as the
     * plain two ranks). */
    image_model("--batch 45 --epochs 2 --zero 1");
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
             "--batch 9 --val-windows 40 --eval-every 2", keep);
    two_ranks_match_one_process(args);
    unlink(keep);
}
END_TEST

/* ---- NCCL double: one rank per host thread and simulated device --------- */

/* As in production, rank k owns device k: its own context (current on its
 * own host thread only), memory and stream. The NCCL calls of a group
 * block, as NCCL's do, until every rank has joined: the last rank to
 * reach ncclGroupEnd sums the queued all-reduces in rank order and wakes
 * the others. The double reads and writes the buffers in the devices'
 * memory (eo_ptxsim_device_bytes), never through the library's copies,
 * and checks that each all-reduce is queued on a stream of the calling
 * rank's own context. Running the reduction inside ncclGroupEnd is an
 * allowed schedule: the driver double completes every piece of work in
 * the call that queues it, so the stream's earlier kernels are done. */
enum { DBL_RANKS = 4, DBL_OPS = 256 };
struct eo_nccl_comm_st { int rank; };
static struct {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int nranks;
    struct eo_nccl_comm_st comm[DBL_RANKS];
    struct { uint64_t buf; size_t count; eo_nccl_stream stream; } op[DBL_RANKS][DBL_OPS];
    int queued[DBL_RANKS], done;
    int allreduces, bad_stream;
    eo_nccl_stream last_stream[DBL_RANKS];
} dbl = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, {{0}}, {{{0, 0, NULL}}}, {0}, 0, 0, 0, {NULL} };
static _Thread_local int dbl_depth; /* ncclGroupStart nesting, per rank (thread) */
static eo_cuda_driver D;            /* the interpreter's driver table, for every context */

static void dbl_reset(int nranks)
{
    pthread_mutex_lock(&dbl.mu);
    dbl.nranks = nranks;
    memset(dbl.op, 0, sizeof dbl.op);
    memset(dbl.queued, 0, sizeof dbl.queued);
    memset(dbl.last_stream, 0, sizeof dbl.last_stream);
    dbl.done = dbl.allreduces = dbl.bad_stream = 0;
    pthread_mutex_unlock(&dbl.mu);
}

/* Every all-reduce that all ranks have queued: sum in rank order, on the
 * devices' memory, the result to every rank. Called with dbl.mu held. */
static void dbl_progress(void)
{
    for (;;) {
        for (int r = 0; r < dbl.nranks; r++)
            if (dbl.queued[r] <= dbl.done)
                return;
        int k = dbl.done;
        size_t n = dbl.op[0][k].count;
        float *acc = malloc(n * sizeof *acc);
        for (int r = 0; r < dbl.nranks; r++) {
            const float *src = eo_ptxsim_device_bytes(dbl.op[r][k].buf, n * sizeof *acc);
            if (dbl.op[r][k].count != n || !src) {
                dbl.bad_stream++; /* counted as a failure; the test asserts none */
                continue;
            }
            for (size_t i = 0; i < n; i++)
                acc[i] = r == 0 ? src[i] : acc[i] + src[i];
        }
        for (int r = 0; r < dbl.nranks; r++) {
            float *dst = eo_ptxsim_device_bytes(dbl.op[r][k].buf, n * sizeof *acc);
            if (dst)
                memcpy(dst, acc, n * sizeof *acc);
        }
        free(acc);
        dbl.done++;
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
    if (memcmp(id.internal, "nccl-double", 11) != 0 || nranks > DBL_RANKS || rank >= nranks ||
        nranks != dbl.nranks)
        return 4; /* ncclInvalidArgument */
    dbl.comm[rank].rank = rank;
    *c = &dbl.comm[rank];
    return 0;
}

static int dbl_allreduce(const void *send, void *recv, size_t count, int type, int op,
                         eo_nccl_comm c, eo_nccl_stream stream)
{
    if (send != recv || type != EO_NCCL_FLOAT32 || op != EO_NCCL_SUM || dbl_depth != 1)
        return 4;
    /* The stream must be one of this thread's current context (the
     * rank's device): the driver double refuses another's, and the
     * legacy NULL stream is not the device state's. */
    if (!stream || D.cuStreamSynchronize((eo_cu_stream)stream) != EO_CUDA_SUCCESS)
        return 4;
    int r = c->rank;
    pthread_mutex_lock(&dbl.mu);
    int ok = dbl.queued[r] < DBL_OPS;
    if (ok) {
        dbl.op[r][dbl.queued[r]].buf = (uint64_t)(uintptr_t)recv;
        dbl.op[r][dbl.queued[r]].stream = stream;
        dbl.op[r][dbl.queued[r]++].count = count;
        dbl.last_stream[r] = stream;
        dbl.allreduces++;
    }
    pthread_mutex_unlock(&dbl.mu);
    return ok ? 0 : 4;
}

static int dbl_group_start(void) { dbl_depth++; return 0; }

/* The rank whose all-reduces complete everyone's, or a wait for it. The
 * caller's queued count says which all-reduces it is waiting for. */
static int dbl_group_end(void)
{
    if (--dbl_depth > 0)
        return 0;
    pthread_mutex_lock(&dbl.mu);
    int need = 0;
    for (int r = 0; r < dbl.nranks; r++)
        if (dbl.queued[r] > need)
            need = dbl.queued[r];
    dbl_progress();
    pthread_cond_broadcast(&dbl.cv);
    while (dbl.done < need)
        pthread_cond_wait(&dbl.cv, &dbl.mu);
    pthread_mutex_unlock(&dbl.mu);
    return 0;
}
static int dbl_destroy(eo_nccl_comm c) { (void)c; return 0; }
static const char *dbl_error(int r) { return r == 4 ? "invalid argument (double)" : "double"; }

static const eo_nccl_api dbl_api = { NULL, dbl_get_id, dbl_init, dbl_allreduce, dbl_group_start,
                                     dbl_group_end, dbl_destroy, dbl_error };

/* Run fn(arg + k * size) on `n` host threads, one per rank; join them. */
static void on_threads(int n, void *(*fn)(void *), void *arg, size_t size)
{
    pthread_t t[DBL_RANKS];
    for (int k = 0; k < n; k++)
        ck_assert_int_eq(pthread_create(&t[k], NULL, fn, (char *)arg + (size_t)k * size), 0);
    for (int k = 0; k < n; k++)
        ck_assert_int_eq(pthread_join(t[k], NULL), 0);
}

/* One replica: a 12-8-3 network on a device. */
typedef struct {
    eo_ctx *ctx;
    eo_params ps;
    eo_module l1, l2;
    eo_optimizer opt;
} replica;

/* The checks below run on the ranks' threads, where Check's assertions
 * must not be used: a failure is recorded with its line and the rank's
 * thread returns; the main thread asserts. */
#define RK(x) do { if (!(x)) { if (!rk->fail_line) rk->fail_line = __LINE__; \
    snprintf(rk->msg, sizeof rk->msg, "%s", rk->m.ctx ? eo_last_error(rk->m.ctx) : ""); return; } } while (0)

typedef struct {
    int rank, nranks, fail_line;
    char msg[256];
    replica m;
    eo_nccl comm;
    const eo_nccl_id *id;
    const float *x;  /* STEPS x 8 x 12 */
    const int32_t *y;
    const int64_t *cut;
    int steps;
    float w[12 * 8 + 8 + 8 * 3 + 3];
    eo_nccl_stream stream; /* the device state's own */
} nccl_rank;

static void replica_make(nccl_rank *rk, int device)
{
    replica *m = &rk->m;
    m->ctx = eo_test_ctx(4, 16);
    RK(eo_cuda_attach(m->ctx, &D, device, 4u << 20, 16u << 20) == EO_OK);
    eo_seed(m->ctx, 5);
    RK(eo_params_init(m->ctx, &m->ps, 4) == EO_OK);
    RK(eo_linear_init(m->ctx, &m->ps, EO_CUDA, "0", 12, 8, 1, EO_INIT_KAIMING_UNIFORM, &m->l1) == EO_OK);
    RK(eo_linear_init(m->ctx, &m->ps, EO_CUDA, "1", 8, 3, 1, EO_INIT_KAIMING_UNIFORM, &m->l2) == EO_OK);
    RK(eo_adamw_init(m->ctx, &m->opt, &m->ps, 0.01f, 0.9f, 0.999f, 1e-8f, 0) == EO_OK);
    rk->stream = (eo_nccl_stream)m->ctx->exec.cuda->stream;
}

/* Forward and backward of rows [b0, b0 + n) of 8, loss weighted n / 8. */
static void replica_backward(nccl_rank *rk, const float *x, const int32_t *y, int64_t b0, int64_t n)
{
    eo_ctx *ctx = rk->m.ctx;
    eo_tensor *xh, *yh, *xd, *yd, *h, *o, *L, *Ls;
    int64_t sx[2] = { n, 12 }, sy[1] = { n };
    RK(eo_params_zero_grad(ctx, &rk->m.ps) == EO_OK);
    RK(eo_tensor_wrap(ctx, EO_F32, 2, sx, (void *)(x + b0 * 12), &xh) == EO_OK);
    RK(eo_tensor_wrap(ctx, EO_I32, 1, sy, (void *)(y + b0), &yh) == EO_OK);
    RK(eo_to_device(ctx, xh, EO_CUDA, EO_STEP, &xd) == EO_OK);
    RK(eo_to_device(ctx, yh, EO_CUDA, EO_STEP, &yd) == EO_OK);
    RK(eo_module_forward(ctx, &rk->m.l1, xd, &h) == EO_OK);
    RK(eo_relu(ctx, h, &h) == EO_OK);
    RK(eo_module_forward(ctx, &rk->m.l2, h, &o) == EO_OK);
    RK(eo_cross_entropy(ctx, o, yd, -100, &L) == EO_OK);
    RK(eo_scale(ctx, L, (float)n / 8.0f, &Ls) == EO_OK);
    RK(eo_backward(ctx, Ls) == EO_OK);
}

static void replica_weights(nccl_rank *rk)
{
    size_t at = 0;
    for (int i = 0; i < rk->m.ps.count; i++) {
        size_t c = (size_t)eo_numel(rk->m.ps.items[i]);
        RK(at + c <= sizeof rk->w / sizeof rk->w[0]);
        RK(eo_read(rk->m.ctx, rk->m.ps.items[i], rk->w + at, c * 4) == EO_OK);
        at += c;
    }
}

static void replica_free(replica *m)
{
    if (!m->ctx)
        return;
    eo_cuda_detach(m->ctx);
    eo_test_ctx_free(m->ctx);
    m->ctx = NULL;
}

/* One rank's whole run, on its own thread and device: the slices of the
 * batch before cut (rank 0) or after it (rank 1). */
static void nccl_rank_body(nccl_rank *rk)
{
    char err[256];
    replica_make(rk, rk->rank);
    if (rk->fail_line)
        return;
    RK(eo_nccl_init(&rk->comm, &dbl_api, rk->id, rk->nranks, rk->rank, rk->stream, err,
                    sizeof err) == EO_OK);
    eo_ctx_set_grad_sync(rk->m.ctx, eo_nccl_grad_sync(&rk->comm));
    for (int s = 0; s < rk->steps; s++) {
        const float *x = rk->x + s * 8 * 12;
        const int32_t *y = rk->y + s * 8;
        int64_t cut = rk->cut[s];
        replica_backward(rk, x, y, rk->rank ? cut : 0, rk->rank ? 8 - cut : cut);
        if (rk->fail_line)
            return;
        /* Blocks in ncclGroupEnd until the other rank has joined. */
        RK(eo_grad_allreduce(rk->m.ctx, &rk->m.ps) == EO_OK);
        RK(eo_optimizer_step(rk->m.ctx, &rk->m.opt) == EO_OK);
    }
    replica_weights(rk);
}

static void *nccl_rank_main(void *arg)
{
    nccl_rank *rk = arg;
    nccl_rank_body(rk);
    /* A rank that failed leaves the others blocked in ncclGroupEnd: the
     * test's timeout reports it, with this rank's message on stderr. */
    if (rk->fail_line)
        fprintf(stderr, "rank %d failed at test_dist.c:%d: %s\n", rk->rank, rk->fail_line, rk->msg);
    eo_nccl_destroy(&rk->comm);
    replica_free(&rk->m);
    return NULL;
}

START_TEST(nccl_hook_two_ranks_on_two_devices_equal_one_process)
{
    if (!EO_HAVE_CUDA) {
        printf("dist: the NCCL case skipped: this build has no CUDA backend (CUDA=0)\n");
        return;
    }
    enum { STEPS = 3 };
    float x[STEPS][8 * 12];
    int32_t y[STEPS][8];
    for (int s = 0; s < STEPS; s++)
        for (int i = 0; i < 8 * 12; i++) {
            x[s][i] = (float)((i * 37 + s * 11) % 17) / 8.0f - 1.0f;
            if (i < 8)
                y[s][i] = (i * 5 + s) % 3;
        }
    eo_ptxsim_driver_reset();
    ck_assert_int_eq(eo_ptxsim_driver_set_devices(2), EO_OK);
    eo_ptxsim_driver(&D);
    dbl_reset(2);

    /* Two ranks: rows 0-3 and 4-7 (plus 3 and 5 to try unequal shares). */
    const int64_t cut[STEPS] = { 4, 3, 5 };
    eo_nccl_id id;
    ck_assert_int_eq(dbl_api.ncclGetUniqueId(&id), 0);
    static nccl_rank rk[2];
    memset(rk, 0, sizeof rk);
    for (int k = 0; k < 2; k++) {
        rk[k].rank = k;
        rk[k].nranks = 2;
        rk[k].id = &id;
        rk[k].x = &x[0][0];
        rk[k].y = &y[0][0];
        rk[k].cut = cut;
        rk[k].steps = STEPS;
    }
    on_threads(2, nccl_rank_main, rk, sizeof rk[0]);
    for (int k = 0; k < 2; k++)
        ck_assert_msg(rk[k].fail_line == 0, "rank %d failed at line %d: %s", k, rk[k].fail_line,
                      rk[k].msg);
    ck_assert_int_eq(dbl.bad_stream, 0);
    ck_assert_int_eq(dbl.allreduces, STEPS * 2 * 4); /* one per gradient, rank and step */
    for (int k = 0; k < 2; k++) /* on the device state's own stream */
        ck_assert(dbl.last_stream[k] == rk[k].stream && rk[k].stream != NULL);
    ck_assert(rk[0].stream != rk[1].stream);
    /* Each rank's buffers are its own (two devices, two address ranges). */
    for (int i = 0; i < 4; i++)
        ck_assert(dbl.op[0][i].buf != dbl.op[1][i].buf);
    ck_assert_msg(memcmp(rk[0].w, rk[1].w, sizeof rk[0].w) == 0, "the replicas drifted apart");

    /* One process on device 0, the same two slices in turn, gradients
     * added in order. */
    static nccl_rank one;
    memset(&one, 0, sizeof one);
    replica_make(&one, 0);
    ck_assert_msg(one.fail_line == 0, "line %d: %s", one.fail_line, one.msg);
    eo_grad_accum acc = {0};
    char err[256];
    for (int s = 0; s < STEPS; s++) {
        for (int k = 0; k < 2; k++) {
            replica_backward(&one, x[s], y[s], k ? cut[s] : 0, k ? 8 - cut[s] : cut[s]);
            ck_assert_msg(one.fail_line == 0, "line %d: %s", one.fail_line, one.msg);
            ck_assert_msg(eo_grad_accum_add(&acc, one.m.ctx, &one.m.ps, k, err, sizeof err) == EO_OK, "%s", err);
        }
        ck_assert_msg(eo_grad_accum_store(&acc, one.m.ctx, &one.m.ps, err, sizeof err) == EO_OK, "%s", err);
        ck_assert_int_eq(eo_optimizer_step(one.m.ctx, &one.m.opt), EO_OK);
    }
    replica_weights(&one);
    ck_assert_msg(one.fail_line == 0, "line %d: %s", one.fail_line, one.msg);
    ck_assert_msg(memcmp(one.w, rk[0].w, sizeof one.w) == 0, "2 ranks differ from one process");
    eo_grad_accum_free(&acc);

    /* Host gradients are not NCCL's: a clear status, not a crash. */
    dbl_reset(1);
    eo_grad_buffer hb = { one.w, 4, EO_F32, EO_CPU };
    eo_nccl c1;
    ck_assert_int_eq(eo_nccl_init(&c1, &dbl_api, &id, 1, 0, NULL, err, sizeof err), EO_OK);
    eo_grad_sync h = eo_nccl_grad_sync(&c1);
    ck_assert_int_eq(h.allreduce(h.user, &hb, 1, err, sizeof err), EO_ERR_DEVICE);
    eo_nccl_destroy(&c1);
    replica_free(&one.m);
    ck_assert_uint_eq(eo_ptxsim_live_allocations(), 0);
    eo_ptxsim_driver_reset();
}
END_TEST

/* ---- eo-train's CUDA + NCCL path, two ranks on two threads ------------- */

/* An MPI double for the few collectives eo_train_run uses around NCCL
 * (the unique id's broadcast, the losses' and counts' sums): the ranks
 * are host threads, the caller's rank is thread-local, and each
 * collective is two rendezvous (everyone has posted its buffer; everyone
 * has read the others'). */
static struct {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int n, arrived, gen;
    const void *src[DBL_RANKS];
    const int *cnt[DBL_RANKS], *off[DBL_RANKS];
} rv = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, 0, 0, {NULL}, {NULL}, {NULL} };
static _Thread_local int mpi_rank;
static char mpi_tag_double, mpi_tag_float, mpi_tag_byte; /* the type handles: their addresses */

static void rendezvous(void)
{
    pthread_mutex_lock(&rv.mu);
    int g = rv.gen;
    if (++rv.arrived == rv.n) {
        rv.arrived = 0;
        rv.gen++;
        pthread_cond_broadcast(&rv.cv);
    } else {
        while (g == rv.gen)
            pthread_cond_wait(&rv.cv, &rv.mu);
    }
    pthread_mutex_unlock(&rv.mu);
}

static size_t mpi_bytes(eo_mpi_type t)
{
    return t == &mpi_tag_double ? sizeof(double) : t == &mpi_tag_float ? sizeof(float) : 1;
}

static int mpi_barrier(eo_mpi_comm c) { (void)c; rendezvous(); return 0; }

static int mpi_bcast(void *buf, int count, eo_mpi_type t, int root, eo_mpi_comm c)
{
    (void)c;
    if (mpi_rank == root)
        rv.src[root] = buf;
    rendezvous();
    if (mpi_rank != root)
        memcpy(buf, rv.src[root], (size_t)count * mpi_bytes(t));
    rendezvous();
    return 0;
}

static int mpi_allgather(const void *sbuf, int scount, eo_mpi_type st, void *rbuf, int rcount,
                         eo_mpi_type rt, eo_mpi_comm c)
{
    (void)c;
    (void)rt;
    (void)rcount;
    size_t bytes = (size_t)scount * mpi_bytes(st);
    rv.src[mpi_rank] = sbuf;
    rendezvous();
    for (int r = 0; r < rv.n; r++)
        memcpy((char *)rbuf + (size_t)r * bytes, rv.src[r], bytes);
    rendezvous();
    return 0;
}

/* The two collectives of the rank-order sum and of ZeRO-1's
 * reduce-scatter and all-gather (tools/dist/dist.c). */
static int mpi_alltoallv(const void *sbuf, const int sc[], const int sd[], eo_mpi_type st,
                         void *rbuf, const int rc[], const int rd[], eo_mpi_type rt,
                         eo_mpi_comm c)
{
    (void)c;
    (void)rc;
    (void)rt;
    size_t e = mpi_bytes(st);
    rv.src[mpi_rank] = sbuf;
    rv.cnt[mpi_rank] = sc;
    rv.off[mpi_rank] = sd;
    rendezvous();
    for (int j = 0; j < rv.n; j++)
        memcpy((char *)rbuf + (size_t)rd[j] * e,
               (const char *)rv.src[j] + (size_t)rv.off[j][mpi_rank] * e,
               (size_t)rv.cnt[j][mpi_rank] * e);
    rendezvous();
    return 0;
}

static int mpi_allgatherv(const void *sbuf, int scount, eo_mpi_type st, void *rbuf,
                          const int rc[], const int rd[], eo_mpi_type rt, eo_mpi_comm c)
{
    (void)c;
    (void)rt;
    (void)scount;
    size_t e = mpi_bytes(st);
    rv.src[mpi_rank] = sbuf;
    rendezvous();
    for (int j = 0; j < rv.n; j++)
        memcpy((char *)rbuf + (size_t)rd[j] * e, rv.src[j], (size_t)rc[j] * e);
    rendezvous();
    return 0;
}

typedef struct {
    eo_train_config c;
    eo_train_result res;
    eo_dist d;
    int counts[4 * 2]; /* the world's collectives' counts (eo_dist_init mallocs them) */
    eo_status st;
    char err[512];
} train_rank;

static void *train_rank_main(void *arg)
{
    train_rank *t = arg;
    mpi_rank = t->d.rank;
    t->st = eo_train_run(&t->c, &t->res, NULL, t->err, sizeof t->err);
    return NULL;
}

/* eo_train_run(c) as two ranks on two host threads (rank k on device k
 * when c is on CUDA), rank 0 writing log and save; both must succeed. */
static void train_on_two_threads(train_rank *tr, const eo_train_config *c, const char *log,
                                 const char *save)
{
    rv.n = 2;
    memset(tr, 0, 2 * sizeof *tr);
    for (int k = 0; k < 2; k++) {
        tr[k].c = *c;
        tr[k].c.cuda_device = k;
        tr[k].c.dist = &tr[k].d;
        tr[k].c.log = log;
        tr[k].c.save = save;
        tr[k].d.rank = k;
        tr[k].d.size = 2;
        tr[k].d.ordered = 1;
        tr[k].d.counts = tr[k].counts;
        tr[k].d.mpi.Barrier = mpi_barrier;
        tr[k].d.mpi.Bcast = mpi_bcast;
        tr[k].d.mpi.Allgather = mpi_allgather;
        tr[k].d.mpi.Allgatherv = mpi_allgatherv;
        tr[k].d.mpi.Alltoallv = mpi_alltoallv;
        tr[k].d.mpi.type_double = &mpi_tag_double;
        tr[k].d.mpi.type_float = &mpi_tag_float;
        tr[k].d.mpi.type_byte = &mpi_tag_byte;
    }
    on_threads(2, train_rank_main, tr, sizeof tr[0]);
    for (int k = 0; k < 2; k++) {
        ck_assert_msg(tr[k].st == EO_OK, "rank %d: %s", k, tr[k].err);
        /* eo_dist_finalize's part for a world it did not make. */
        free(tr[k].d.flat);
        free(tr[k].d.recv);
    }
}

/* eo-train's loop (tools/train/trainer.c) with --device cuda on two
 * ranks: each opens its own simulated device, joins NCCL through the
 * (double) MPI broadcast of the id and passes the device state's stream;
 * the log and the checkpoint of rank 0 must equal one process's with
 * --micro-batches 2 on one device. */
START_TEST(train_cuda_nccl_two_ranks_equal_one_process)
{
    if (!EO_HAVE_CUDA) {
        printf("dist: the NCCL case skipped: this build has no CUDA backend (CUDA=0)\n");
        return;
    }
    char dir[64], path[4][700];
    tiny_mnist(dir, sizeof dir);
    const char *names[4] = { "ranks.csv", "ranks.safetensors", "one.csv", "one.safetensors" };
    for (int i = 0; i < 4; i++)
        snprintf(path[i], sizeof path[i], "%s/%s", dir, names[i]);
    eo_train_config c;
    eo_train_defaults(&c, EO_MODEL_MLP);
    c.data_dir = dir;
    c.epochs = 1;
    c.batch = 10; /* slices of 5 */
    c.max_steps = 1;
    c.threads = 1;
    c.test_subset = 2;
    c.quiet = 1;
    c.plot = NULL;
    c.persist_mb = 8;
    c.step_mb = 16;
    c.cuda = 1;
    c.cuda_driver = &D;
    c.nccl = &dbl_api;

    eo_ptxsim_driver_reset();
    ck_assert_int_eq(eo_ptxsim_driver_set_devices(2), EO_OK);
    eo_ptxsim_driver(&D);
    dbl_reset(2);
    static train_rank tr[2];
    train_on_two_threads(tr, &c, path[0], path[1]);
    ck_assert_int_eq(dbl.bad_stream, 0);
    ck_assert_int_gt(dbl.allreduces, 0);
    ck_assert(dbl.last_stream[0] != NULL && dbl.last_stream[1] != NULL &&
              dbl.last_stream[0] != dbl.last_stream[1]);
    ck_assert_uint_eq(eo_ptxsim_live_allocations(), 0);

    eo_ptxsim_driver_reset();
    eo_ptxsim_driver(&D);
    c.micro_batches = 2;
    c.log = path[2];
    c.save = path[3];
    eo_train_result res;
    char err[512];
    ck_assert_msg(eo_train_run(&c, &res, NULL, err, sizeof err) == EO_OK, "one process: %s", err);
    same_file(path[0], path[2]);
    same_file(path[1], path[3]);
    eo_ptxsim_driver_reset();
    remove_tiny_mnist(dir);
}
END_TEST

/* ZeRO-1 (eo-train --zero 1) on two ranks (host threads, the MPI double
 * above): the log and the weights equal plain data parallelism's bit for
 * bit, and each rank's persistent arena holds only its half of AdamW's m
 * and v. */
START_TEST(zero1_two_ranks_equal_plain_data_parallel_with_half_the_state)
{
    char dir[64], path[4][700];
    tiny_mnist(dir, sizeof dir);
    const char *names[4] = { "plain.csv", "plain.safetensors", "zero.csv", "zero.safetensors" };
    for (int i = 0; i < 4; i++)
        snprintf(path[i], sizeof path[i], "%s/%s", dir, names[i]);
    eo_train_config c;
    eo_train_defaults(&c, EO_MODEL_MLP);
    c.data_dir = dir;
    c.epochs = 2;
    c.batch = 45; /* slices of 22 and 23, and a last batch of 6 */
    c.threads = 1;
    c.test_subset = 100;
    c.quiet = 1;
    c.plot = NULL;
    c.persist_mb = 8;
    c.step_mb = 16;
    static train_rank plain[2], zero[2];
    train_on_two_threads(plain, &c, path[0], path[1]);
    c.zero = 1;
    train_on_two_threads(zero, &c, path[2], path[3]);
    same_file(path[0], path[2]);
    same_file(path[1], path[3]);
    /* m and v: 2 x 4 bytes per parameter element in all, half on each
     * rank (the shards differ by at most one element). */
    size_t n = 784 * 256 + 256 + 256 * 10 + 10;
    for (int k = 0; k < 2; k++) {
        size_t b0, cnt;
        eo_dist_shard(&zero[k].d, n, &b0, &cnt);
        ck_assert_uint_eq(cnt, n / 2);
        size_t saved = plain[k].res.persist_high - zero[k].res.persist_high;
        /* The other shard's state, give or take the state tensors'
         * headers and alignment (rank 1's shard touches 4 parameters,
         * rank 0's one). */
        ck_assert_uint_ge(saved + 4096, 8 * (n - cnt));
        ck_assert_uint_le(saved, 8 * (n - cnt) + 4096);
    }
    /* A shard must be a non-empty range inside the parameters. */
    eo_ctx *ctx = eo_test_ctx(1, 1);
    eo_params ps;
    eo_module l;
    eo_optimizer o;
    ck_assert_int_eq(eo_params_init(ctx, &ps, 2), EO_OK);
    ck_assert_int_eq(eo_linear_init(ctx, &ps, EO_CPU, "0", 3, 2, 1, EO_INIT_KAIMING_UNIFORM, &l), EO_OK);
    ck_assert_int_eq(eo_adamw_init_shard(ctx, &o, &ps, 0.1f, 0.9f, 0.999f, 1e-8f, 0, 7, 2), EO_ERR_ARG);
    ck_assert_int_eq(eo_adamw_init_shard(ctx, &o, &ps, 0.1f, 0.9f, 0.999f, 1e-8f, 0, 0, 0), EO_ERR_ARG);
    ck_assert_int_eq(eo_optimizer_step(ctx, &o), EO_ERR_STATE); /* a failed init */
    ck_assert_int_eq(eo_adamw_init_shard(ctx, &o, &ps, 0.1f, 0.9f, 0.999f, 1e-8f, 0, 5, 3), EO_OK);
    ck_assert(o.m[0] != NULL && eo_numel(o.m[0]) == 1 && eo_numel(o.m[1]) == 2);
    eo_test_ctx_free(ctx);
    /* No clipping, SGD or CUDA with --zero 1: a clear refusal. */
    c.clip = 1;
    eo_train_result r;
    char err[256];
    eo_dist one = {0};
    one.size = 2;
    c.dist = &one;
    ck_assert_int_eq(eo_train_run(&c, &r, NULL, err, sizeof err), EO_ERR_ARG);
    ck_assert_msg(strstr(err, "--zero 1") != NULL, "%s", err);
    remove_tiny_mnist(dir);
}
END_TEST

Suite *eo_suite_dist(void)
{
    Suite *s = suite_create("dist");
    TCase *tc = tcase_create("dist");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, hook_runs_once_before_the_update_and_its_failure_is_the_steps);
    tcase_add_test(tc, nccl_hook_two_ranks_on_two_devices_equal_one_process);
    tcase_add_test(tc, train_cuda_nccl_two_ranks_equal_one_process);
    tcase_add_test(tc, zero1_two_ranks_equal_plain_data_parallel_with_half_the_state);
    tcase_add_test(tc, mpi_two_ranks_equal_one_process_mlp);
    tcase_add_test(tc, mpi_two_ranks_equal_one_process_cnn_vit);
    tcase_add_test(tc, mpi_two_ranks_equal_one_process_gpt);
    suite_add_tcase(s, tc);
    return s;
}
