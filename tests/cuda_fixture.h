/* tests/cuda_fixture.h — the device of the launcher-level CUDA suites
 * (cuda_kernels, cuda_tc, cuda16): one place for how a test opens it.
 *
 * By default the device is the PTX interpreter's driver double
 * (tools/ptxsim/driver.h), reset before each test, and closing checks that
 * the test freed every device allocation. With EO_TEST_CUDA=real in the
 * environment the same tests run on the machine's GPU through
 * libcuda.so.1 (loaded with dlopen) instead. */
#ifndef EO_TESTS_CUDA_FIXTURE_H
#define EO_TESTS_CUDA_FIXTURE_H

#include "ops/cuda/device.h"
#include "ops/kernels.h"

/* Open device 0 through *drv into *cu (a Check assertion fails the test if
 * it cannot), point ex->cuda at it (the launchers' device) and set
 * *real_gpu to whether it is the machine's GPU (EO_TEST_CUDA=real). */
void eo_test_dev_open(eo_cuda_driver *drv, eo_cuda *cu, eo_exec *ex, int *real_gpu);
/* Close it; on the interpreter, assert that no allocation is left. */
void eo_test_dev_close(eo_cuda_driver *drv, eo_cuda *cu, int real_gpu);

#endif
