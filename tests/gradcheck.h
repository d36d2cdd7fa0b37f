/* tests/gradcheck.h — the one finite-difference gradient checker every op
 * test uses.
 *
 * For a function out = f(inputs) it forms the scalar L = sum(out ⊙ R)
 * with a fixed random R (so every output element matters, with a
 * different weight), runs EveryO's backward for dL/dinput, then compares
 * each element with the central difference
 *     (L(x + h) - L(x - h)) / 2h,
 * where both L values are accumulated in double precision. */
#ifndef EO_TEST_GRADCHECK_H
#define EO_TEST_GRADCHECK_H

#include <stddef.h>
#include "core/everyo.h"

/* Build the op under test from its inputs. `user` is passed through. */
typedef eo_status (*eo_test_fn)(eo_ctx *ctx, eo_tensor *const *in, void *user, eo_tensor **out);

typedef struct eo_gradcheck_opts {
    double h;     /* step; default 1e-2 */
    double rtol;  /* default 1e-2 */
    double atol;  /* default 1e-3 */
} eo_gradcheck_opts;

/* Check the gradient of every input that requires grad. Inputs must be
 * contiguous CPU F32 tensors created before the call (their data is
 * perturbed and restored). Returns 1 when all elements agree; otherwise 0
 * with the first disagreement described in msg. opts may be NULL. */
int eo_gradcheck(eo_ctx *ctx, eo_test_fn f, eo_tensor *const *in, int n_in, void *user,
                 const eo_gradcheck_opts *opts, char *msg, size_t msglen);

/* A test context with generous arenas (malloc'd; free with eo_test_ctx_free). */
eo_ctx *eo_test_ctx(size_t persist_mb, size_t step_mb);
void eo_test_ctx_free(eo_ctx *ctx);

/* The same with CUDA attached (4 MiB persistent, 16 MiB step on the
 * device): the PTX interpreter behind the driver-API double, or with
 * EO_TEST_CUDA=real the machine's GPU through libcuda.so.1. Fails the
 * test if the attach fails. Free with eo_test_cuda_ctx_free. */
eo_ctx *eo_test_cuda_ctx(size_t persist_mb, size_t step_mb);
void eo_test_cuda_ctx_free(eo_ctx *ctx);

/* 1 when the 16-bit device kernels cannot be emulated here, after
 * printing why once per test: the PTX interpreter on a big-endian host.
 * PTX packs two 16-bit values in one 32-bit register with the element at
 * the lower address in the low half, which is the memory order of a
 * little-endian device; the interpreter keeps device memory in the
 * host's byte order (so that what the host uploads reads back as the
 * host wrote it), and on a big-endian host a 32-bit access to two halves
 * sees them the other way round. No big-endian host drives an NVIDIA GPU;
 * the f32 kernels, whose accesses all have their element's width, run
 * there as elsewhere. With EO_TEST_CUDA=real: 0. */
int eo_test_skip_16bit_device(const char *test);

/* A step-arena CPU tensor of the given shape with values uniform in
 * [lo, hi) from a fixed per-call seed; requires_grad as given. */
eo_tensor *eo_test_rand(eo_ctx *ctx, int rank, const int64_t *shape, float lo, float hi,
                        unsigned seed, int requires_grad);

#endif
