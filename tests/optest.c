/* tests/optest.c — see optest.h. */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include "ops/cpu/half.h"
#include "tests/optest.h"

eo_ctx *ot_ctx;

/* 16 MiB of doubles: more than the largest reference any op test builds. */
#define POOL_DOUBLES (1 << 21)
static double pool[POOL_DOUBLES];
static int64_t pool_used;

void ot_setup(void)
{
    pool_used = 0;
    ot_ctx = eo_test_ctx(4, 64);
}

void ot_teardown(void)
{
    eo_test_ctx_free(ot_ctx);
    ot_ctx = NULL;
}

double *ot_doubles(int64_t n)
{
    ck_assert_msg(n >= 0 && pool_used + n <= POOL_DOUBLES, "optest: double pool exhausted");
    double *p = pool + pool_used;
    pool_used += n ? n : 1;
    return p;
}

const char *ot_shape_str(int rank, const int64_t *shape)
{
    static char buf[4][64];
    static int next;
    char *b = buf[next++ & 3];
    size_t len = 0;
    b[len++] = '[';
    for (int i = 0; i < rank; i++)
        len += (size_t)snprintf(b + len, sizeof buf[0] - len, i ? "x%lld" : "%lld",
                                (long long)shape[i]);
    snprintf(b + len, sizeof buf[0] - len, "]");
    return b;
}

static eo_tensor *new_tensor(eo_dtype dt, int rank, const int64_t *shape)
{
    eo_tensor *t = NULL;
    eo_status s = eo_tensor_new(ot_ctx, EO_STEP, EO_CPU, dt, rank, shape, &t);
    ck_assert_msg(s == EO_OK, "optest: tensor %s: %s", ot_shape_str(rank, shape),
                  eo_last_error(ot_ctx));
    return t;
}

eo_tensor *ot_rand(int rank, const int64_t *shape, float lo, float hi, unsigned seed)
{
    eo_tensor *t = eo_test_rand(ot_ctx, rank, shape, lo, hi, seed, 0);
    ck_assert_msg(t != NULL, "optest: rand %s: %s", ot_shape_str(rank, shape),
                  eo_last_error(ot_ctx));
    return t;
}

eo_tensor *ot_rand_nc(int rank, const int64_t *shape, float lo, float hi, unsigned seed)
{
    ck_assert_int_ge(rank, 2);
    /* Base is the reversed shape with two extra entries on its first axis
     * (the logical last axis); slice those off, then reverse the axes. */
    int64_t base_shape[EO_MAX_RANK];
    int perm[EO_MAX_RANK];
    for (int i = 0; i < rank; i++) {
        base_shape[i] = shape[rank - 1 - i];
        perm[i] = rank - 1 - i;
    }
    base_shape[0] += 2;
    eo_tensor *base = ot_rand(rank, base_shape, lo, hi, seed), *sl, *v;
    ck_assert_int_eq(eo_slice(ot_ctx, base, 0, 1, shape[rank - 1], &sl), EO_OK);
    ck_assert_int_eq(eo_permute(ot_ctx, sl, perm, &v), EO_OK);
    ot_expect_shape("optest: non-contiguous view", v, rank, shape);
    return v;
}

eo_tensor *ot_f32(int rank, const int64_t *shape, const float *vals)
{
    eo_tensor *t = new_tensor(EO_F32, rank, shape);
    if (eo_numel(t)) /* vals may be NULL for an empty tensor */
        memcpy(t->data, vals, sizeof(float) * (size_t)eo_numel(t));
    return t;
}

eo_tensor *ot_i32(int rank, const int64_t *shape, const int32_t *vals)
{
    eo_tensor *t = new_tensor(EO_I32, rank, shape);
    if (eo_numel(t))
        memcpy(t->data, vals, sizeof(int32_t) * (size_t)eo_numel(t));
    return t;
}

eo_tensor *ot_distinct(int rank, const int64_t *shape, float lo, float step, unsigned seed)
{
    eo_tensor *t = new_tensor(EO_F32, rank, shape);
    int64_t n = eo_numel(t);
    float *p = t->data;
    for (int64_t i = 0; i < n; i++)
        p[i] = lo + step * (float)i;
    unsigned s = seed * 2654435761u + 7u;
    for (int64_t i = n - 1; i > 0; i--) { /* Fisher–Yates */
        s = s * 1664525u + 1013904223u;
        int64_t j = (int64_t)((s >> 8) % (unsigned)(i + 1));
        float tmp = p[i];
        p[i] = p[j];
        p[j] = tmp;
    }
    return t;
}

double *ot_get(const eo_tensor *t)
{
    ck_assert(t->device == EO_CPU && (t->dtype == EO_F32 || t->dtype == EO_I32 ||
                                      t->dtype == EO_BF16 || t->dtype == EO_F16));
    int64_t n = eo_numel(t), idx[EO_MAX_RANK] = {0};
    double *d = ot_doubles(n);
    for (int64_t i = 0; i < n; i++) {
        int64_t off = 0;
        for (int k = 0; k < t->rank; k++)
            off += idx[k] * t->stride[k];
        if (t->dtype == EO_BF16 || t->dtype == EO_F16) /* 16-bit: widened exactly */
            d[i] = eo_half_get((int)t->dtype, ((const uint16_t *)t->data)[off]);
        else
            d[i] = t->dtype == EO_F32 ? (double)((const float *)t->data)[off]
                                      : (double)((const int32_t *)t->data)[off];
        for (int k = t->rank - 1; k >= 0; k--) { /* odometer */
            if (++idx[k] < t->shape[k])
                break;
            idx[k] = 0;
        }
    }
    return d;
}

void ot_expect_shape(const char *what, const eo_tensor *t, int rank, const int64_t *shape)
{
    int same = t->rank == rank;
    for (int i = 0; same && i < rank; i++)
        same = t->shape[i] == shape[i];
    ck_assert_msg(same, "%s: output shape %s, expected %s", what,
                  ot_shape_str(t->rank, t->shape), ot_shape_str(rank, shape));
}

void ot_expect_close(const char *what, const eo_tensor *got, const double *ref, double rtol,
                     double atol)
{
    const double *g = ot_get(got);
    for (int64_t i = 0; i < eo_numel(got); i++) {
        double a = g[i], r = ref[i];
        int ok;
        if (isinf(r) || isinf(a))
            ok = a == r;
        else
            ok = fabs(a - r) <= atol + rtol * fabs(r); /* false for NaN */
        ck_assert_msg(ok, "%s: element %lld of %s is %.9g, reference %.9g", what, (long long)i,
                      ot_shape_str(got->rank, got->shape), a, r);
    }
}

void ot_gradcheck(const char *what, eo_test_fn f, eo_tensor *const *in, int n_in, void *user,
                  const eo_gradcheck_opts *opts)
{
    char msg[256];
    /* Tighter than the checker's defaults: every op here is smooth at the
     * chosen inputs, the loss is summed in double, and the forward's float
     * rounding divided by 2h stays near 1e-5, so a backward that is off
     * by more than 0.1% is a bug, not noise. */
    static const eo_gradcheck_opts tight = { 1e-2, 1e-3, 1e-4 };
    int ok = eo_gradcheck(ot_ctx, f, in, n_in, user, opts ? opts : &tight, msg, sizeof msg);
    ck_assert_msg(ok, "gradcheck %s: %s", what, msg);
}
