/* tests/gradcheck.c — see gradcheck.h. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <check.h>
#include "tests/gradcheck.h"
#include "tools/cli/cpu.h"
#include "tools/ptxsim/driver.h"

typedef struct { eo_ctx ctx; void *a, *b; } test_ctx;

eo_ctx *eo_test_ctx(size_t persist_mb, size_t step_mb)
{
    test_ctx *t = calloc(1, sizeof *t);
    t->a = malloc(persist_mb << 20);
    t->b = malloc(step_mb << 20);
    char err[400];
    if (eo_ctx_init(&t->ctx, t->a, persist_mb << 20, t->b, step_mb << 20) != EO_OK)
        abort();
    if (eo_tool_cpu_apply(&t->ctx, err, sizeof err) != EO_OK) { /* tests/main.c checked it */
        fprintf(stderr, "%s\n", err);
        abort();
    }
    return &t->ctx;
}

void eo_test_ctx_free(eo_ctx *ctx)
{
    test_ctx *t = (test_ctx *)ctx; /* ctx is the first member */
    free(t->a);
    free(t->b);
    free(t);
}

static eo_cuda_driver test_driver; /* must outlive the contexts that use it */

eo_ctx *eo_test_cuda_ctx(size_t persist_mb, size_t step_mb)
{
    eo_ctx *ctx = eo_test_ctx(persist_mb, step_mb);
    const char *mode = getenv("EO_TEST_CUDA");
    const eo_cuda_driver *drv = NULL; /* NULL: the real driver */
    if (!mode || strcmp(mode, "real") != 0) {
        eo_ptxsim_driver_reset();
        eo_ptxsim_driver(&test_driver);
        drv = &test_driver;
    }
    eo_status s = eo_cuda_attach(ctx, drv, 0, 4u << 20, 16u << 20);
    ck_assert_msg(s == EO_OK, "cuda_attach: %s", eo_last_error(ctx));
    return ctx;
}

int eo_test_skip_16bit_device(const char *test)
{
    const char *mode = getenv("EO_TEST_CUDA");
    const uint16_t one = 1;
    unsigned char first;
    memcpy(&first, &one, 1);
    if ((mode && strcmp(mode, "real") == 0) || first == 1)
        return 0;
    printf("%s: SKIPPED on this big-endian host: the PTX interpreter cannot emulate packed "
           "16-bit accesses here (tests/gradcheck.h)\n", test);
    return 1;
}

void eo_test_cuda_ctx_free(eo_ctx *ctx)
{
    eo_cuda_detach(ctx);
    eo_test_ctx_free(ctx);
}

eo_tensor *eo_test_rand(eo_ctx *ctx, int rank, const int64_t *shape, float lo, float hi,
                        unsigned seed, int requires_grad)
{
    eo_tensor *t;
    if (eo_tensor_new(ctx, EO_STEP, EO_CPU, EO_F32, rank, shape, &t) != EO_OK)
        return NULL;
    unsigned s = seed * 2654435761u + 12345u;
    float *p = t->data;
    for (int64_t i = 0; i < eo_numel(t); i++) {
        s = s * 1664525u + 1013904223u;
        p[i] = lo + (hi - lo) * (float)(s >> 8) / 16777216.0f;
    }
    t->requires_grad = (uint8_t)requires_grad;
    return t;
}

/* L = sum(out * R) in double, with grad mode off. */
static int loss_of(eo_ctx *ctx, eo_test_fn f, eo_tensor *const *in, void *user,
                   const float *R, double *L)
{
    eo_mark m = eo_mark_get(ctx);
    int was = eo_set_grad(ctx, 0);
    eo_tensor *out;
    eo_status s = f(ctx, in, user, &out);
    eo_set_grad(ctx, was);
    if (s != EO_OK) {
        eo_rewind(ctx, m);
        return 0;
    }
    eo_tensor *c = out;
    if (eo_contiguous(ctx, out, &c) != EO_OK) {
        eo_rewind(ctx, m);
        return 0;
    }
    const float *o = c->data;
    double acc = 0;
    for (int64_t i = 0; i < eo_numel(c); i++)
        acc += (double)o[i] * R[i];
    *L = acc;
    eo_rewind(ctx, m);
    return 1;
}

int eo_gradcheck(eo_ctx *ctx, eo_test_fn f, eo_tensor *const *in, int n_in, void *user,
                 const eo_gradcheck_opts *opts, char *msg, size_t msglen)
{
    eo_gradcheck_opts o = { 1e-2, 1e-2, 1e-3 };
    if (opts)
        o = *opts;
    msg[0] = '\0';

    /* Analytic gradients: forward with the tape, L = sum(out * R), backward. */
    eo_mark m = eo_mark_get(ctx);
    for (int i = 0; i < n_in; i++)
        if (in[i]->requires_grad)
            in[i]->grad = NULL;
    eo_tensor *out, *r, *prod, *L;
    if (f(ctx, in, user, &out) != EO_OK) {
        snprintf(msg, msglen, "forward failed: %s", eo_last_error(ctx));
        return 0;
    }
    int64_t n_out = eo_numel(out);
    float *R = malloc(sizeof(float) * (size_t)(n_out ? n_out : 1));
    unsigned s = 777;
    for (int64_t i = 0; i < n_out; i++) {
        s = s * 1664525u + 1013904223u;
        R[i] = 0.5f + (float)(s >> 8) / 16777216.0f; /* in [0.5, 1.5): no cancellation */
    }
    if (eo_tensor_wrap(ctx, EO_F32, out->rank, out->shape, R, &r) != EO_OK ||
        eo_mul(ctx, out, r, &prod) != EO_OK || eo_sum_all(ctx, prod, &L) != EO_OK ||
        eo_backward(ctx, L) != EO_OK) {
        snprintf(msg, msglen, "backward failed: %s", eo_last_error(ctx));
        free(R);
        return 0;
    }
    double *analytic[16] = {0};
    for (int i = 0; i < n_in; i++) {
        if (!in[i]->requires_grad)
            continue;
        int64_t n = eo_numel(in[i]);
        analytic[i] = malloc(sizeof(double) * (size_t)(n ? n : 1));
        const float *g = in[i]->grad ? in[i]->grad->data : NULL;
        for (int64_t j = 0; j < n; j++)
            analytic[i][j] = g ? g[j] : 0.0; /* no gradient buffer: nothing flowed */
        in[i]->grad = NULL;
    }
    eo_rewind(ctx, m);

    int ok = 1;
    for (int i = 0; i < n_in && ok; i++) {
        if (!analytic[i])
            continue;
        float *x = in[i]->data;
        for (int64_t j = 0; j < eo_numel(in[i]) && ok; j++) {
            float keep = x[j];
            double lp = 0, lm = 0;
            x[j] = (float)(keep + o.h);
            double hp = (double)x[j] - keep; /* the step actually taken in float */
            int okp = loss_of(ctx, f, in, user, R, &lp);
            x[j] = (float)(keep - o.h);
            double hm = keep - (double)x[j];
            int okm = loss_of(ctx, f, in, user, R, &lm);
            x[j] = keep;
            if (!okp || !okm) {
                snprintf(msg, msglen, "perturbed forward failed: %s", eo_last_error(ctx));
                ok = 0;
                break;
            }
            double numeric = (lp - lm) / (hp + hm), a = analytic[i][j];
            if (fabs(a - numeric) > o.atol + o.rtol * fabs(numeric)) {
                snprintf(msg, msglen,
                         "input %d element %lld: analytic %.6g vs finite difference %.6g", i,
                         (long long)j, a, numeric);
                ok = 0;
            }
        }
    }
    for (int i = 0; i < n_in; i++)
        free(analytic[i]);
    free(R);
    return ok;
}
