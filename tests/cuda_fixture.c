/* tests/cuda_fixture.c — see cuda_fixture.h. */
#include <check.h>
#include <stdlib.h>
#include <string.h>
#include "ops/cuda/device.h" /* named here: the Makefile leaves files that include
                              * ops/cuda/ out of a CUDA=0 build */
#include "tests/cuda_fixture.h"
#include "tools/ptxsim/driver.h"

void eo_test_dev_open(eo_cuda_driver *drv, eo_cuda *cu, eo_exec *ex, int *real_gpu)
{
    char err[2048] = "";
    const char *mode = getenv("EO_TEST_CUDA");
    *real_gpu = mode && strcmp(mode, "real") == 0;
    if (*real_gpu) {
        eo_status s = eo_cuda_driver_load(drv, err, sizeof err);
        ck_assert_msg(s == EO_OK, "EO_TEST_CUDA=real: %s", err);
    } else {
        eo_ptxsim_driver_reset();
        eo_ptxsim_driver(drv);
    }
    eo_status s = eo_cuda_open(cu, drv, 0, err, sizeof err);
    ck_assert_msg(s == EO_OK, "eo_cuda_open: %s", err);
    ex->cuda = cu;
}

void eo_test_dev_close(eo_cuda_driver *drv, eo_cuda *cu, int real_gpu)
{
    eo_cuda_close(cu);
    if (real_gpu) {
        eo_cuda_driver_unload(drv);
        return;
    }
    ck_assert_uint_eq(eo_ptxsim_live_allocations(), 0);
    eo_ptxsim_driver_reset();
}
