/* tools/ptxsim/driver.h — a CUDA driver-API double backed by the PTX
 * interpreter, so the CUDA backend's host code (module loading, launches,
 * copies, error handling) runs in tests on a machine with no GPU.
 *
 * eo_ptxsim_driver() fills the same eo_cuda_driver table that the real
 * libcuda fills (ops/cuda/driver.h); code under test cannot tell the
 * difference except through the functions below. The fake device:
 *   - reports compute capability 8.0, 108 SMs, warp size 32, 1024 threads
 *     per block, 48 KiB shared memory per block;
 *   - runs each kernel to completion inside cuLaunchKernel (one stream,
 *     so this is an allowed schedule), but reports a kernel's fault the
 *     way the GPU does: the launch returns success, the error surfaces at
 *     the next synchronising call (cuCtxSynchronize, cuMemcpy*,
 *     cuMemsetD32, cuEventSynchronize, cuMemFree), and from then on the
 *     context is poisoned: every call returns that error until the primary
 *     context is released (which, as on a GPU, frees everything);
 *   - out-of-bounds accesses give CUDA_ERROR_ILLEGAL_ADDRESS (700),
 *     misaligned ones CUDA_ERROR_MISALIGNED_ADDRESS (716), a step-limit
 *     overrun CUDA_ERROR_LAUNCH_TIMEOUT (702); the faults only an
 *     interpreter can see (races, divergent barriers or shuffles,
 *     uninitialised registers) give CUDA_ERROR_LAUNCH_FAILED (719);
 *   - hands out memory filled with all-ones bytes (NaN as f32), as
 *     garbage stands in for the GPU's, so reading unwritten memory shows;
 *   - times events with a fake clock that only moves forward.
 *
 * The double keeps its state in one process-wide object, as the driver
 * does; it is not thread-safe. */
#ifndef EO_PTXSIM_DRIVER_H
#define EO_PTXSIM_DRIVER_H

#include "ops/cuda/driver.h"
#include "tools/ptxsim/ptxsim.h"

/* Fill *d. Does not touch the fake device's state (call
 * eo_ptxsim_driver_reset() for a fresh device). d->lib is NULL. */
void eo_ptxsim_driver(eo_cuda_driver *d);

/* Back to a fresh, uninitialised device: frees all device memory,
 * modules and events, forgets faults and cuInit. Call at the end of a
 * test to leave nothing allocated. */
void eo_ptxsim_driver_reset(void);

/* The most recent kernel fault (kind EO_PX_FAULT_NONE if none since the
 * last reset), with kernel, block, thread, PTX line and a message. */
const eo_px_fault *eo_ptxsim_last_fault(void);

/* Live device allocations (for leak checks in tests). */
size_t eo_ptxsim_live_allocations(void);

/* Host bytes behind [dev, dev+n) of the fake device, or NULL: lets a
 * test look at device memory without going through cuMemcpyDtoH. */
void *eo_ptxsim_device_bytes(uint64_t dev, size_t n);

/* Warp-instruction limit per launch (0: the interpreter's default). */
void eo_ptxsim_set_step_limit(uint64_t steps);

/* ---- performance counters (kept in tools/ptxsim/profile.c) ----------------
 * Every launch through the double is counted (eo_px_counters in
 * ptxsim.h). The double keeps the last launch's counters and, per kernel
 * name, the sum over launches since the last eo_ptxsim_counters_reset()
 * (eo_ptxsim_driver_reset leaves them alone, so a test can reset the
 * device and still read what ran). */
const eo_px_counters *eo_ptxsim_last_counters(void);
/* The i-th kernel launched since the last counters reset, in first-launch
 * order: 1 with its name and totals, 0 past the end. */
int eo_ptxsim_kernel_counters(int i, const char **name, eo_px_counters *out);
/* The totals of the kernel with this name: 1, or 0 if it has not run. */
int eo_ptxsim_counters_of(const char *name, eo_px_counters *out);
void eo_ptxsim_counters_reset(void);
/* Run only `blocks` blocks of each launch, spread over the grid (0: all):
 * for measuring counters at large shapes (eo_px_config.sample_blocks);
 * results are then incomplete. */
void eo_ptxsim_set_sample(unsigned blocks);
unsigned eo_ptxsim_sample(void);
/* Called by the launch path: add one launch's counters under its kernel. */
void eo_ptxsim_counters_record(const char *kernel, const eo_px_counters *c);

#endif
