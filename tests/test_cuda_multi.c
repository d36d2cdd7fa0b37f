/* tests/test_cuda_multi.c — several contexts, several devices, several
 * host threads: the CUDA backend keeps them apart.
 *
 * The bug this suite exists for: two contexts each attached to a device;
 * after one detached, the other's ops returned EO_OK with NaN outputs,
 * because the launchers found their device through one global pointer.
 * Now every kernel receives its context's execution handle (ops/exec.h),
 * and every entry into a device makes that device's context current on
 * the calling thread. These tests check the consequences, on the PTX
 * interpreter's driver double with two simulated devices (always the
 * interpreter: a machine with one GPU could not run them):
 *   - two contexts on two devices (and two on one device), their ops
 *     interleaved launch by launch, give bit-identical results to each
 *     run alone;
 *   - detaching one leaves the other correct;
 *   - a kernel fault, or a size the PTX cannot index, is a status (from
 *     the op or the next copy), never EO_OK with garbage, and the other
 *     device carries on;
 *   - two contexts driven by two host threads at once give the results
 *     each gives alone.
 * The work is a small MLP's forward, backward and AdamW step with
 * cross-entropy, plus a matmul and a softmax, read back each step. */
#include <check.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/everyo.h"
#include "core/nn.h"
#include "core/safetensors.h"
#include "core/transformer.h"
#include "ops/cuda/driver.h"
#include "tests/gradcheck.h"
#include "tools/ptxsim/driver.h"
#include "tools/formats/checkpoint.h"
#include "tests/tmpdir.h"

static eo_cuda_driver D;

/* A fresh double with two devices. */
static void two_devices(void)
{
    eo_ptxsim_driver_reset();
    ck_assert_int_eq(eo_ptxsim_driver_set_devices(2), EO_OK);
    eo_ptxsim_driver(&D);
}

enum { STEPS = 3, STAGES = 4, OUT_CAP = 4096 };

/* One context's work, in stages, so that two jobs can be interleaved
 * between launches (only the last stage reads anything back). */
typedef struct job {
    eo_ctx *ctx;
    int device;
    unsigned seed;
    eo_params ps;
    eo_module l[2];
    eo_optimizer opt;
    int step;
    eo_mark mark;
    eo_tensor *x, *y, *h, *loss, *mm, *sm;
    float out[OUT_CAP]; /* everything read back, in order */
    size_t nout;
    eo_status status;   /* the first failure, EO_OK if none */
    char err[512];      /* its message */
} job;

static eo_status to_cuda(job *j, eo_tensor *t, eo_tensor **out)
{
    return eo_to_device(j->ctx, t, EO_CUDA, EO_STEP, out);
}

static void job_open(job *j, int device, unsigned seed)
{
    memset(j, 0, sizeof *j);
    j->device = device;
    j->seed = seed;
    j->ctx = eo_test_ctx(4, 16);
    eo_status s = eo_cuda_attach(j->ctx, &D, device, 4u << 20, 16u << 20);
    ck_assert_msg(s == EO_OK, "cuda_attach(device %d): %s", device, eo_last_error(j->ctx));
    eo_ctx *c = j->ctx;
    eo_seed(c, seed);
    ck_assert_int_eq(eo_params_init(c, &j->ps, 4), EO_OK);
    ck_assert_int_eq(eo_linear_init(c, &j->ps, EO_CUDA, "0", 12, 16, 1, EO_INIT_KAIMING_UNIFORM, &j->l[0]), EO_OK);
    ck_assert_int_eq(eo_linear_init(c, &j->ps, EO_CUDA, "2", 16, 5, 1, EO_INIT_KAIMING_UNIFORM, &j->l[1]), EO_OK);
    ck_assert_int_eq(eo_adamw_init(c, &j->opt, &j->ps, 1e-2f, 0.9f, 0.999f, 1e-8f, 0.01f), EO_OK);
}

static void job_close(job *j)
{
    eo_cuda_detach(j->ctx);
    eo_test_ctx_free(j->ctx);
    j->ctx = NULL;
}

/* Read a device tensor's floats onto the end of j->out. */
static eo_status keep(job *j, const eo_tensor *t)
{
    size_t n = (size_t)eo_numel(t);
    ck_assert_uint_le(j->nout + n, OUT_CAP);
    eo_status s = eo_read(j->ctx, t, j->out + j->nout, n * 4);
    if (s == EO_OK)
        j->nout += n;
    return s;
}

/* Run one stage of the current step; the first failure is kept in the
 * job (its later stages then do nothing) and returned. */
static eo_status job_stage(job *j, int stage)
{
    if (j->status != EO_OK)
        return j->status;
    eo_ctx *c = j->ctx;
    eo_status s = EO_OK;
    unsigned seed = j->seed * 100u + (unsigned)j->step * 10u;
    switch (stage) {
    case 0: { /* inputs, forward */
        int64_t sx[2] = { 7, 12 }, sy[1] = { 7 };
        int32_t labels[7];
        for (int i = 0; i < 7; i++)
            labels[i] = (int32_t)((seed / 10 + (unsigned)i * 3u) % 5u);
        j->mark = eo_mark_get(c);
        eo_tensor *y;
        s = to_cuda(j, eo_test_rand(c, 2, sx, 0, 1, seed + 1, 0), &j->x);
        if (s == EO_OK) s = eo_tensor_wrap(c, EO_I32, 1, sy, labels, &y);
        if (s == EO_OK) s = to_cuda(j, y, &j->y);
        if (s == EO_OK) s = eo_params_zero_grad(c, &j->ps);
        if (s == EO_OK) s = eo_module_forward(c, &j->l[0], j->x, &j->h);
        if (s == EO_OK) s = eo_relu(c, j->h, &j->h);
        if (s == EO_OK) s = eo_module_forward(c, &j->l[1], j->h, &j->h);
        break;
    }
    case 1: /* loss, backward */
        s = eo_cross_entropy(c, j->h, j->y, -100, &j->loss);
        if (s == EO_OK) s = eo_backward(c, j->loss);
        break;
    case 2: { /* the update, and two ops on their own */
        int64_t sa[2] = { 5, 33 }, sb[2] = { 17, 33 };
        eo_tensor *a = NULL, *b = NULL;
        s = eo_optimizer_step(c, &j->opt);
        if (s == EO_OK) s = to_cuda(j, eo_test_rand(c, 2, sa, -1.5f, 1.5f, seed + 2, 0), &a);
        if (s == EO_OK) s = to_cuda(j, eo_test_rand(c, 2, sb, -1, 1, seed + 3, 0), &b);
        if (s == EO_OK) s = eo_matmul(c, a, b, 0, 1, &j->mm);
        if (s == EO_OK) s = eo_softmax(c, a, &j->sm);
        break;
    }
    default: /* read everything back */
        s = keep(j, j->loss);
        if (s == EO_OK) s = keep(j, j->mm);
        if (s == EO_OK) s = keep(j, j->sm);
        for (int i = 0; s == EO_OK && i < j->ps.count; i++)
            s = keep(j, j->ps.items[i]);
        if (s == EO_OK) {
            eo_rewind(c, j->mark);
            j->step++;
        }
        break;
    }
    if (s != EO_OK) {
        j->status = s;
        snprintf(j->err, sizeof j->err, "%s", eo_last_error(c));
    }
    return s;
}

static void job_steps(job *j, int steps)
{
    for (int k = 0; k < steps; k++)
        for (int st = 0; st < STAGES; st++)
            ck_assert_msg(job_stage(j, st) == EO_OK, "device %d, step %d, stage %d: %s", j->device,
                          j->step, st, j->err);
}

/* Two jobs, stage by stage: A's launches, then B's, then A's ... */
static void interleave(job *a, job *b, int steps)
{
    for (int k = 0; k < steps; k++)
        for (int st = 0; st < STAGES; st++) {
            ck_assert_msg(job_stage(a, st) == EO_OK, "A: %s", a->err);
            ck_assert_msg(job_stage(b, st) == EO_OK, "B: %s", b->err);
        }
}

/* The reference: one job alone on its device for `steps` steps. */
static void alone(job *out, int device, unsigned seed, int steps)
{
    job_open(out, device, seed);
    job_steps(out, steps);
    job_close(out);
}

/* Bit-identical, and finite (an all-NaN pair would compare unequal
 * anyway, but say so plainly). */
static void expect_same(const char *what, const job *got, const job *want)
{
    ck_assert_msg(got->nout == want->nout, "%s: %zu values read, %zu alone", what, got->nout,
                  want->nout);
    for (size_t i = 0; i < want->nout; i++) {
        ck_assert_msg(got->out[i] == got->out[i], "%s: value %zu is NaN", what, i);
        ck_assert_msg(memcmp(&got->out[i], &want->out[i], 4) == 0,
                      "%s: value %zu is %.9g, %.9g alone", what, i, got->out[i], want->out[i]);
    }
}

/* Heap-allocated: a job holds 16 KiB of results. */
static job *new_job(void)
{
    job *j = calloc(1, sizeof *j);
    ck_assert_ptr_nonnull(j);
    return j;
}

/* ---- two contexts, interleaved ---------------------------------------------------- */

START_TEST(interleaved_contexts_match_each_alone)
{
    /* _i = 1: two devices; _i = 0: both contexts on device 0 (they share
     * its primary context, as two contexts on one GPU do). */
    int dev_b = _i ? 1 : 0;
    job *ra = new_job(), *rb = new_job(), *a = new_job(), *b = new_job();
    two_devices();
    alone(ra, 0, 1, STEPS);
    alone(rb, dev_b, 2, STEPS);
    job_open(a, 0, 1);
    job_open(b, dev_b, 2);
    interleave(a, b, STEPS);
    expect_same("A interleaved", a, ra);
    expect_same("B interleaved", b, rb);
    job_close(b);
    job_close(a);
    ck_assert_uint_eq(eo_ptxsim_live_allocations(), 0);
    free(ra), free(rb), free(a), free(b);
    eo_ptxsim_driver_reset();
}
END_TEST

START_TEST(detaching_one_leaves_the_other_correct)
{
    int dev_b = _i ? 1 : 0;
    job *rb = new_job(), *a = new_job(), *b = new_job(), *c = new_job();
    two_devices();
    alone(rb, dev_b, 2, 2 * STEPS + 1);
    job_open(a, 0, 1);
    job_open(b, dev_b, 2);
    interleave(a, b, STEPS);
    job_close(a); /* opened before B: its close must not disturb B */
    job_steps(b, STEPS);
    /* The other order: the context that goes was attached after B. */
    job_open(c, 0, 3);
    job_steps(c, 1);
    job_close(c);
    job_steps(b, 1);
    expect_same("B after the others detached", b, rb);
    job_close(b);
    ck_assert_uint_eq(eo_ptxsim_live_allocations(), 0);
    free(rb), free(a), free(b), free(c);
    eo_ptxsim_driver_reset();
}
END_TEST

/* ---- failures are statuses ------------------------------------------------------------ */

START_TEST(kernel_fault_is_a_status_and_the_other_device_carries_on)
{
    job *ra = new_job(), *rb = new_job(), *a = new_job(), *b = new_job();
    two_devices();
    alone(ra, 0, 1, 2 * STEPS);
    alone(rb, 1, 2, STEPS);
    job_open(a, 0, 1);
    job_open(b, 1, 2);
    interleave(a, b, 1);
    /* B's next kernel faults (as an out-of-bounds load would): the launch
     * itself succeeds, as on a GPU, so the fault must come back from the
     * next copy to the host, not as EO_OK with whatever memory held. */
    ck_assert_int_eq(eo_ptxsim_inject_fault(1, EO_PX_FAULT_GLOBAL_OOB), EO_OK);
    eo_status sb = EO_OK;
    for (int st = 0; st < STAGES; st++) {
        ck_assert_msg(job_stage(a, st) == EO_OK, "A: %s", a->err);
        sb = job_stage(b, st);
    }
    ck_assert_int_eq(sb, EO_ERR_CUDA);
    ck_assert_msg(strstr(b->err, "CUDA_ERROR_ILLEGAL_ADDRESS") != NULL, "%s", b->err);
    ck_assert_uint_eq(b->nout, rb->nout / STEPS); /* nothing of the failed step was kept */
    ck_assert_msg(strstr(eo_ptxsim_last_fault()->msg, "injected") != NULL, "%s",
                  eo_ptxsim_last_fault()->msg);
    /* The device stays poisoned: a second read fails as well. */
    float v;
    ck_assert_int_ne(eo_read(b->ctx, b->ps.items[0], &v, 4), EO_OK);
    /* A carries on, bit for bit as alone. */
    job_steps(a, 2 * STEPS - 2);
    expect_same("A beside a faulted device", a, ra);
    /* Detaching B releases its device; a new context there works again. */
    job_close(b);
    job *b2 = new_job();
    job_open(b2, 1, 2);
    job_steps(b2, STEPS);
    expect_same("B again after the fault", b2, rb);
    job_close(b2);
    job_close(a);
    ck_assert_uint_eq(eo_ptxsim_live_allocations(), 0);
    free(ra), free(rb), free(a), free(b), free(b2);
    eo_ptxsim_driver_reset();
}
END_TEST

/* A size the kernel cannot take (attention's needs D <= 128): the launch
 * never happens, the failure comes back with its reason -- from the call
 * itself, the backend's limits being checked there (core/backend.h) --
 * and the context is usable afterwards (nothing on the device went
 * wrong). */
START_TEST(refused_launch_is_a_status)
{
    job *ra = new_job(), *a = new_job();
    two_devices();
    alone(ra, 1, 1, 1);
    job_open(a, 1, 1);
    eo_ctx *c = a->ctx;
    eo_mark m = eo_mark_get(c);
    int64_t sq[4] = { 1, 1, 3, 300 };
    eo_tensor *q = NULL, *o = NULL;
    ck_assert_int_eq(to_cuda(a, eo_test_rand(c, 4, sq, -1, 1, 5, 0), &q), EO_OK);
    eo_status s1 = eo_attention_fused(c, q, q, q, NULL, 0, 0.05f, &o);
    eo_status s2 = EO_OK;
    if (s1 == EO_OK) {
        static float v[3 * 300];
        s2 = eo_read(c, o, v, sizeof v);
    }
    ck_assert_msg(s1 != EO_OK || s2 != EO_OK, "attention with D = 300 returned EO_OK");
    ck_assert_msg((s1 != EO_OK ? s1 : s2) == EO_ERR_UNSUPPORTED, "status %d (op %d): %s", s1 != EO_OK ? s1 : s2, s1, eo_last_error(c));
    ck_assert_msg(s1 == EO_ERR_UNSUPPORTED, "refused only at the sync: %s", eo_last_error(c));
    ck_assert_msg(strstr(eo_last_error(c), "limit of 128") != NULL, "%s", eo_last_error(c));
    eo_rewind(c, m);
    job_steps(a, 1);
    expect_same("after a refused launch", a, ra);
    job_close(a);
    free(ra), free(a);
    eo_ptxsim_driver_reset();
}
END_TEST

/* ---- two host threads ------------------------------------------------------------------ */

static void *run_job(void *arg)
{
    job *j = arg;
    /* Opened on the main thread: this thread has no current context until
     * the backend makes one current, as every entry must. */
    for (int k = 0; k < STEPS && j->status == EO_OK; k++)
        for (int st = 0; st < STAGES; st++)
            if (job_stage(j, st) != EO_OK)
                break;
    return NULL;
}

START_TEST(two_threads_match_sequential)
{
    job *ra = new_job(), *rb = new_job(), *a = new_job(), *b = new_job();
    two_devices();
    alone(ra, 0, 1, STEPS);
    alone(rb, 1, 2, STEPS);
    job_open(a, 0, 1);
    job_open(b, 1, 2);
    pthread_t ta, tb;
    ck_assert_int_eq(pthread_create(&ta, NULL, run_job, a), 0);
    ck_assert_int_eq(pthread_create(&tb, NULL, run_job, b), 0);
    ck_assert_int_eq(pthread_join(ta, NULL), 0);
    ck_assert_int_eq(pthread_join(tb, NULL), 0);
    ck_assert_msg(a->status == EO_OK, "thread A: %s", a->err);
    ck_assert_msg(b->status == EO_OK, "thread B: %s", b->err);
    expect_same("A on its own thread", a, ra);
    expect_same("B on its own thread", b, rb);
    job_close(a);
    job_close(b);
    ck_assert_uint_eq(eo_ptxsim_live_allocations(), 0);
    free(ra), free(rb), free(a), free(b);
    eo_ptxsim_driver_reset();
}
END_TEST

/* ---- the double itself ------------------------------------------------------------------ */

/* What the tests above rely on: a stream or a module of one device is
 * not accepted on another, a thread without a current context is
 * refused, and a pointer of one device is not memory of the other. */
START_TEST(double_keeps_devices_apart)
{
    two_devices();
    eo_cu_context c0, c1;
    eo_cu_stream s0, s1;
    eo_cu_deviceptr p0, p1;
    int n = 0;
    ck_assert_int_eq(D.cuInit(0), 0);
    ck_assert_int_eq(D.cuDeviceGetCount(&n), 0);
    ck_assert_int_eq(n, 2);
    ck_assert_int_eq(eo_ptxsim_driver_set_devices(9), EO_ERR_ARG);
    ck_assert_int_eq(D.cuDevicePrimaryCtxRetain(&c0, 0), 0);
    ck_assert_int_eq(eo_ptxsim_driver_set_devices(1), EO_ERR_STATE); /* a context is live */
    ck_assert_int_eq(D.cuDevicePrimaryCtxRetain(&c1, 1), 0);
    ck_assert_ptr_ne(c0, c1);
    ck_assert_int_eq(D.cuMemAlloc(&p0, 64), EO_CUDA_ERROR_INVALID_CONTEXT); /* none current */
    ck_assert_int_eq(D.cuCtxSetCurrent(c0), 0);
    ck_assert_int_eq(D.cuStreamCreate(&s0, EO_CU_STREAM_NON_BLOCKING), 0);
    ck_assert_int_eq(D.cuMemAlloc(&p0, 64), 0);
    ck_assert_int_eq(D.cuCtxSetCurrent(c1), 0);
    ck_assert_int_eq(D.cuStreamCreate(&s1, 0), 0);
    ck_assert_int_eq(D.cuMemAlloc(&p1, 64), 0);
    ck_assert_uint_ne(p0, p1);
    char host[64] = { 0 };
    /* In device 1's context: device 0's stream and memory are foreign. */
    ck_assert_int_eq(D.cuStreamSynchronize(s0), EO_CUDA_ERROR_INVALID_HANDLE);
    ck_assert_int_eq(D.cuMemcpyHtoDAsync(p1, host, 64, s0), EO_CUDA_ERROR_INVALID_HANDLE);
    ck_assert_int_eq(D.cuMemcpyHtoDAsync(p0, host, 64, s1), EO_CUDA_ERROR_INVALID_VALUE);
    ck_assert_int_eq(D.cuMemcpyHtoDAsync(p1, host, 64, s1), 0);
    ck_assert_int_eq(D.cuStreamSynchronize(s1), 0);
    ck_assert_int_eq(D.cuStreamSynchronize((eo_cu_stream)host), EO_CUDA_ERROR_INVALID_HANDLE);
    ck_assert_ptr_nonnull(eo_ptxsim_device_bytes(p0, 64)); /* found on device 0 */
    ck_assert_int_eq(eo_ptxsim_inject_fault(2, EO_PX_FAULT_GLOBAL_OOB), EO_ERR_ARG);
    ck_assert_int_eq(D.cuStreamDestroy(s1), 0);
    ck_assert_int_eq(D.cuStreamDestroy(s1), EO_CUDA_ERROR_INVALID_HANDLE);
    ck_assert_int_eq(D.cuMemFree(p1), 0);
    ck_assert_int_eq(D.cuCtxSetCurrent(c0), 0);
    ck_assert_int_eq(D.cuStreamDestroy(s0), 0);
    ck_assert_int_eq(D.cuMemFree(p0), 0);
    ck_assert_int_eq(D.cuDevicePrimaryCtxRelease(0), 0);
    ck_assert_int_eq(D.cuDevicePrimaryCtxRelease(1), 0);
    ck_assert_int_eq(D.cuCtxSetCurrent(c1), EO_CUDA_ERROR_INVALID_CONTEXT); /* released */
    ck_assert_uint_eq(eo_ptxsim_live_allocations(), 0);
    eo_ptxsim_driver_reset();
}
END_TEST

/* A grad_sync hook that only counts its calls: after a detach it must
 * not be handed the freed device buffers. */
static eo_status counting_allreduce(void *user, const eo_grad_buffer *bufs, int n, char *msg,
                                    size_t msglen)
{
    (void)bufs; (void)n; (void)msg; (void)msglen;
    ++*(int *)user;
    return EO_OK;
}

/* `call` returned EO_ERR_STATE and a message that names `fn` and the
 * ended attach. */
static void expect_stale(eo_ctx *ctx, const char *what, eo_status s, const char *fn)
{
    ck_assert_msg(s == EO_ERR_STATE, "%s: status %d, want EO_ERR_STATE (%s)", what, (int)s,
                  eo_last_error(ctx));
    ck_assert_msg(strstr(eo_last_error(ctx), fn) &&
                      strstr(eo_last_error(ctx), "earlier eo_cuda_attach"),
                  "%s: message '%s' should name %s and the ended attach", what,
                  eo_last_error(ctx), fn);
}

/* Issue 26 item 8: after eo_cuda_detach, and after a detach and a new
 * attach, every entry point handed a CUDA tensor (or a parameter list
 * holding one) of the ended attach refuses it with EO_ERR_STATE: the
 * optimizer, zero_grad, clipping, the scaler and refresh_low used to
 * dereference the NULL backend, the all-reduce handed freed buffers to
 * its hook with EO_OK, and an op after re-attach read other memory with
 * EO_OK. Tensors of the new attach work. */
START_TEST(stale_cuda_tensors_are_refused)
{
    two_devices();
    job j;
    job_open(&j, 0, 7);
    eo_ctx *c = j.ctx;
    int hook_calls = 0;
    eo_grad_sync hook = { counting_allreduce, &hook_calls };
    eo_ctx_set_grad_sync(c, hook);
    int64_t sx[2] = { 3, 12 };
    eo_tensor *hx = eo_test_rand(c, 2, sx, -1, 1, 5, 0), *x, *h, *loss;
    ck_assert_int_eq(to_cuda(&j, hx, &x), EO_OK);
    ck_assert_int_eq(eo_module_forward(c, &j.l[0], x, &h), EO_OK);
    ck_assert_int_eq(eo_sum_all(c, h, &loss), EO_OK);
    eo_grad_scaler sc;
    ck_assert_int_eq(eo_grad_scaler_init(c, &sc, 1), EO_OK);
    eo_gpt_config gc = { .vocab = 5, .context = 4, .d_model = 4, .heads = 1, .layers = 1 };
    eo_gpt g;
    eo_gpt_cache kv;
    ck_assert_int_eq(eo_gpt_build(c, EO_CUDA, &gc, &g), EO_OK);
    ck_assert_int_eq(eo_gpt_cache_init(c, &g, 1, &kv), EO_OK);
    int64_t one[2] = { 1, 1 };
    eo_tensor *ids;
    ck_assert_int_eq(eo_tensor_zeros(c, EO_PERSIST, EO_CPU, EO_I32, 2, one, &ids), EO_OK);
    /* a checkpoint of the live parameters, to load into the stale ones */
    ck_assert_ptr_nonnull(eo_tmpdir_make());
    char path[512], err[512];
    snprintf(path, sizeof path, "%s", eo_tmpdir_path("stale.safetensors"));
    ck_assert_msg(eo_checkpoint_save(c, &j.ps, path, NULL, NULL, 0, err, sizeof err) == EO_OK,
                  "%s", err);
    for (int round = 0; round < 2; round++) {
        eo_cuda_detach(c);
        if (round == 1) { /* a new attach: the old tensors stay stale */
            eo_status s = eo_cuda_attach(c, &D, 0, 4u << 20, 16u << 20);
            ck_assert_msg(s == EO_OK, "re-attach: %s", eo_last_error(c));
        }
        float buf[36], norm;
        eo_tensor *y;
        expect_stale(c, "optimizer_step", eo_optimizer_step(c, &j.opt), "optimizer_step");
        expect_stale(c, "zero_grad", eo_params_zero_grad(c, &j.ps), "params_zero_grad");
        expect_stale(c, "clip", eo_clip_grad_norm(c, &j.ps, 1.0f, &norm), "clip_grad_norm");
        expect_stale(c, "unscale", eo_grad_scaler_unscale(c, &sc, &j.ps), "grad_scaler_unscale");
        int stepped = 1;
        expect_stale(c, "scaler step", eo_grad_scaler_step(c, &sc, &j.opt, &stepped),
                     "grad_scaler_step");
        ck_assert_int_eq(stepped, 0);
        expect_stale(c, "refresh_low", eo_params_refresh_low(c, &j.ps), "params_refresh_low");
        expect_stale(c, "enable_low", eo_params_enable_low(c, &j.ps, EO_BF16),
                     "params_enable_low");
        expect_stale(c, "allreduce", eo_grad_allreduce(c, &j.ps), "grad_allreduce");
        ck_assert_int_eq(hook_calls, 0);
        expect_stale(c, "weights_bind", eo_weights_bind(c, &j.ps, NULL, 0, EO_BIND_COPY),
                     "weights_bind");
        ck_assert_int_eq(eo_checkpoint_save(c, &j.ps, path, NULL, NULL, 0, err, sizeof err),
                         EO_ERR_STATE);
        ck_assert_msg(strstr(err, "earlier eo_cuda_attach"), "checkpoint_save: %s", err);
        ck_assert_int_eq(eo_checkpoint_load(c, &j.ps, path, err, sizeof err), EO_ERR_STATE);
        ck_assert_msg(strstr(err, "earlier eo_cuda_attach"),
                      "checkpoint_load: %s", err);
        expect_stale(c, "read", eo_read(c, x, buf, sizeof buf), "read");
        expect_stale(c, "write", eo_write(c, x, buf, sizeof buf), "write");
        expect_stale(c, "to_host", eo_to_host(c, x, EO_STEP, &y), "to_host");
        expect_stale(c, "relu", eo_relu(c, x, &y), "relu");
        expect_stale(c, "add", eo_add(c, hx, x, &y), "add");
        expect_stale(c, "backward", eo_backward(c, loss), "backward");
        expect_stale(c, "cached forward", eo_gpt_forward_cached(c, &g, &kv, ids, &y),
                     "gpt_forward_cached");
        expect_stale(c, "gpt_forward", eo_gpt_forward(c, &g, ids, &y), "gpt_forward");
        if (round == 0) { /* no device: a new CUDA tensor says so */
            ck_assert_int_eq(eo_tensor_new(c, EO_STEP, EO_CUDA, EO_F32, 2, sx, &y),
                             EO_ERR_DEVICE);
            continue;
        }
        /* The new attach's tensors work, and read what was written. */
        eo_tensor *x2, *r;
        ck_assert_int_eq(to_cuda(&j, hx, &x2), EO_OK);
        ck_assert_int_eq(eo_relu(c, x2, &r), EO_OK);
        ck_assert_int_eq(eo_read(c, r, buf, sizeof buf), EO_OK);
        const float *hv = hx->data;
        for (int i = 0; i < 36; i++)
            ck_assert_float_eq(buf[i], hv[i] > 0 ? hv[i] : 0.0f);
    }
    job_close(&j);
}
END_TEST

Suite *eo_suite_cuda_multi(void)
{
    Suite *s = suite_create("cuda_multi");
    TCase *tc = tcase_create("cuda_multi");
    tcase_set_timeout(tc, 300);
    tcase_add_test(tc, double_keeps_devices_apart);
    tcase_add_loop_test(tc, interleaved_contexts_match_each_alone, 0, 2);
    tcase_add_loop_test(tc, detaching_one_leaves_the_other_correct, 0, 2);
    tcase_add_test(tc, kernel_fault_is_a_status_and_the_other_device_carries_on);
    tcase_add_test(tc, refused_launch_is_a_status);
    tcase_add_test(tc, two_threads_match_sequential);
    tcase_add_test(tc, stale_cuda_tensors_are_refused);
    suite_add_tcase(s, tc);
    return s;
}
