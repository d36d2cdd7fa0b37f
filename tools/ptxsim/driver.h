/* tools/ptxsim/driver.h — a CUDA driver-API double backed by the PTX
 * interpreter, so the CUDA backend's host code (module loading, launches,
 * streams, copies, error handling, several devices, several threads) runs
 * in tests on a machine with no GPU.
 *
 * eo_ptxsim_driver() fills the same eo_cuda_driver table that the real
 * libcuda fills (ops/cuda/driver.h); code under test cannot tell the
 * difference except through the functions below. The fake devices:
 *   - there is one by default, up to EO_PTXSIM_MAX_DEVICES with
 *     eo_ptxsim_driver_set_devices(); each has its own memory (its own
 *     address range, so a pointer of one device used on another is an
 *     illegal address), modules, events, streams, primary context and
 *     fault state: a fault on one leaves the others working;
 *   - the current context is per host thread, as in the driver: a thread
 *     that never called cuCtxSetCurrent has none (CUDA_ERROR_INVALID_CONTEXT),
 *     and a handle (module, function, event, stream) of another device's
 *     context is CUDA_ERROR_INVALID_HANDLE;
 *   - each reports compute capability 8.0, 108 SMs, warp size 32, 1024
 *     threads per block, 48 KiB shared memory per block;
 *   - streams: the legacy NULL stream and the streams cuStreamCreate
 *     made in the current context are accepted; any other handle is
 *     CUDA_ERROR_INVALID_HANDLE. Work runs to completion inside the call
 *     that queues it (cuLaunchKernel, cuMemcpy*Async, cuMemsetD32Async):
 *     every stream is then trivially in order, an allowed schedule;
 *   - a kernel's fault is reported the way the GPU does: the launch
 *     returns success, work queued after it on that device is dropped,
 *     the error surfaces at the next synchronising call (cuCtxSynchronize,
 *     cuStreamSynchronize, the synchronous cuMemcpy*, cuMemsetD32,
 *     cuEventSynchronize, cuMemFree), and from then on that device's
 *     context is poisoned: every call in it returns that error until its
 *     primary context is released (which, as on a GPU, frees everything
 *     of that device);
 *   - out-of-bounds accesses give CUDA_ERROR_ILLEGAL_ADDRESS (700),
 *     misaligned ones CUDA_ERROR_MISALIGNED_ADDRESS (716), a step-limit
 *     overrun CUDA_ERROR_LAUNCH_TIMEOUT (702); the faults only an
 *     interpreter can see (races, divergent barriers or shuffles,
 *     uninitialised registers) give CUDA_ERROR_LAUNCH_FAILED (719);
 *     eo_ptxsim_inject_fault() makes the next launch on a device fault
 *     without running, for tests of the error paths;
 *   - hands out memory filled with all-ones bytes (NaN as f32), as
 *     garbage stands in for the GPU's, so reading unwritten memory shows;
 *   - times events with a fake clock that only moves forward.
 *
 * Threads: the double keeps its state in one process-wide object, as the
 * driver does, behind one mutex. Every entry point takes it for its whole
 * duration, kernel execution included, so calls from several host threads
 * are safe and simply run one at a time: the simplest correct locking,
 * and enough, since the tests check what the library does with several
 * threads, not how fast the double is. The functions below take it too. */
#ifndef EO_PTXSIM_DRIVER_H
#define EO_PTXSIM_DRIVER_H

#include "ops/cuda/driver.h"
#include "tools/ptxsim/ptxsim.h"

#define EO_PTXSIM_MAX_DEVICES 8

/* Fill *d. Does not touch the fake devices' state (call
 * eo_ptxsim_driver_reset() for fresh ones). d->lib is NULL. */
void eo_ptxsim_driver(eo_cuda_driver *d);

/* Back to one fresh, uninitialised device: frees all device memory,
 * modules, streams and events of every device, forgets faults and cuInit.
 * Call at the end of a test to leave nothing allocated. */
void eo_ptxsim_driver_reset(void);

/* Simulate n devices (1..EO_PTXSIM_MAX_DEVICES; cuDeviceGetCount reports
 * n). Returns EO_ERR_ARG for n out of range, EO_ERR_STATE while any
 * primary context is retained (the count of a machine does not change
 * under a running program); call it after eo_ptxsim_driver_reset(). */
eo_status eo_ptxsim_driver_set_devices(int n);

/* The next kernel launched on `device` does not run: it faults with
 * `kind` (as the interpreter would report it; the CUresult follows from
 * the kind as above), surfacing at that device's next synchronising
 * call. EO_PX_FAULT_NONE cancels a pending injection. Returns
 * EO_ERR_ARG for a device out of range. */
eo_status eo_ptxsim_inject_fault(int device, eo_px_fault_kind kind);

/* The most recent kernel fault on any device (kind EO_PX_FAULT_NONE if
 * none since the last reset), with kernel, block, thread, PTX line and a
 * message. */
const eo_px_fault *eo_ptxsim_last_fault(void);

/* Live device allocations over all devices (for leak checks in tests). */
size_t eo_ptxsim_live_allocations(void);

/* Host bytes behind [dev, dev+n) of whichever fake device owns that
 * address, or NULL: lets a test look at device memory without going
 * through cuMemcpyDtoH. */
void *eo_ptxsim_device_bytes(uint64_t dev, size_t n);

/* Warp-instruction limit per launch, all devices (0: the interpreter's
 * default). */
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
