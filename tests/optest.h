/* tests/optest.h — small helpers shared by the op test files
 * (test_ops*.c): a per-test context, tensors with known values, plain
 * and non-contiguous, reading any strided tensor into doubles in logical
 * order, and comparison against a double-precision reference with a
 * message that names the case.
 *
 * Reference values live in a static pool of doubles that the fixture
 * resets before each test, so a test allocates freely and never leaks
 * (a failing check ends the forked test process mid-way). */
#ifndef EO_TEST_OPTEST_H
#define EO_TEST_OPTEST_H

#include <check.h>
#include <stddef.h>
#include <stdint.h>
#include "core/everyo.h"
#include "tests/gradcheck.h"

/* The context of the running test: made by ot_setup, freed by
 * ot_teardown (use both as a checked fixture). */
extern eo_ctx *ot_ctx;
void ot_setup(void);
void ot_teardown(void);

/* n doubles from the per-test pool (aborts the test when it runs out). */
double *ot_doubles(int64_t n);

/* "[2x3x4]" for a shape, in one of a few rotating static buffers. */
const char *ot_shape_str(int rank, const int64_t *shape);

/* A contiguous F32 step tensor, uniform in [lo, hi), fixed seed; no grad. */
eo_tensor *ot_rand(int rank, const int64_t *shape, float lo, float hi, unsigned seed);
/* The same kind of values, but seen through a non-contiguous view of a
 * larger buffer (reversed axes, a sliced-off margin): the logical shape is
 * `shape`, the strides are not the contiguous ones. Rank >= 2. */
eo_tensor *ot_rand_nc(int rank, const int64_t *shape, float lo, float hi, unsigned seed);
/* A contiguous F32 tensor holding `vals` (copied). */
eo_tensor *ot_f32(int rank, const int64_t *shape, const float *vals);
/* A contiguous I32 tensor holding `vals` (copied). */
eo_tensor *ot_i32(int rank, const int64_t *shape, const int32_t *vals);
/* Distinct values: a shuffled ladder lo, lo + step, ..., so max and
 * max-pool have no ties and no two values lie within 2h of each other. */
eo_tensor *ot_distinct(int rank, const int64_t *shape, float lo, float step, unsigned seed);

/* The elements of an F32 or I32 CPU tensor (any strides), as doubles in
 * logical row-major order. */
double *ot_get(const eo_tensor *t);

/* Fail unless t has this rank and shape. */
void ot_expect_shape(const char *what, const eo_tensor *t, int rank, const int64_t *shape);
/* Fail unless every element of `got` is within atol + rtol*|ref| of ref;
 * infinities must match exactly and a NaN is never close to anything. */
void ot_expect_close(const char *what, const eo_tensor *got, const double *ref, double rtol,
                     double atol);
/* Fail the test unless expr returns EO_OK; the message names the case. */
#define OT_OK(expr, what)                                                                  \
    do {                                                                                   \
        eo_status ot_s_ = (expr);                                                          \
        ck_assert_msg(ot_s_ == EO_OK, "%s: %s: %s", (what), eo_status_name(ot_s_),         \
                      eo_last_error(ot_ctx));                                              \
    } while (0)

/* Inside a function that returns eo_status: pass a failure on. */
#define OT_TRY(expr)                                                                       \
    do {                                                                                   \
        eo_status ot_s_ = (expr);                                                          \
        if (ot_s_ != EO_OK)                                                                \
            return ot_s_;                                                                  \
    } while (0)

/* eo_gradcheck, failing the test with `what` and the checker's message. */
void ot_gradcheck(const char *what, eo_test_fn f, eo_tensor *const *in, int n_in, void *user,
                  const eo_gradcheck_opts *opts);

#endif
