/* tests/cuda_abi.c — checks ops/cuda/driver.h against the CUDA toolkit's
 * own cuda.h: every table member's signature, the stand-in types' sizes
 * and every constant's value.
 *
 * Why a separate, normally empty file: the library must build without any
 * CUDA header, so this check cannot be part of the normal build. `make
 * ptx-check` compiles it with -DEO_CHECK_CUDA_ABI and the toolkit's include
 * folder when the toolkit is installed. It maps the header's stand-in
 * types onto cuda.h's real types (EO_CUDA_ABI_TYPES) and assigns each
 * toolkit function to the table member of the same name; with -Werror,
 * any difference in a parameter or return type fails the compile.
 * cuda.h renames versioned entry points with macros (cuMemAlloc ->
 * cuMemAlloc_v2, cuEventElapsedTime -> cuEventElapsedTime_v2, ...); the
 * same macros rename the members here, so each member is checked against
 * the ABI version the loader asks cuGetProcAddress for. */
#ifdef EO_CHECK_CUDA_ABI
#include <cuda.h>

#define EO_CUDA_ABI_TYPES
typedef CUresult eo_cu_result;
typedef CUdevice eo_cu_device;
typedef CUdeviceptr eo_cu_deviceptr;
typedef CUcontext eo_cu_context;
typedef CUmodule eo_cu_module;
typedef CUfunction eo_cu_function;
typedef CUevent eo_cu_event;
typedef CUstream eo_cu_stream;
typedef CUdevice_attribute eo_cu_device_attribute;
typedef CUfunction_attribute eo_cu_function_attribute;
typedef CUjit_option eo_cu_jit_option;
#include "ops/cuda/driver.h"

/* The stand-ins used in the normal build have the same sizes. */
_Static_assert(sizeof(CUresult) == sizeof(int), "CUresult");
_Static_assert(sizeof(CUdevice) == sizeof(int), "CUdevice");
_Static_assert(sizeof(CUdeviceptr) == sizeof(uint64_t), "CUdeviceptr");
_Static_assert(sizeof(CUdevice_attribute) == sizeof(int), "CUdevice_attribute");
_Static_assert(sizeof(CUfunction_attribute) == sizeof(int), "CUfunction_attribute");
_Static_assert(sizeof(CUjit_option) == sizeof(int), "CUjit_option");

#define SAME(ours, theirs) _Static_assert((int)(ours) == (int)(theirs), #ours)
SAME(EO_CUDA_SUCCESS, CUDA_SUCCESS);
SAME(EO_CUDA_ERROR_INVALID_VALUE, CUDA_ERROR_INVALID_VALUE);
SAME(EO_CUDA_ERROR_OUT_OF_MEMORY, CUDA_ERROR_OUT_OF_MEMORY);
SAME(EO_CUDA_ERROR_NOT_INITIALIZED, CUDA_ERROR_NOT_INITIALIZED);
SAME(EO_CUDA_ERROR_NO_DEVICE, CUDA_ERROR_NO_DEVICE);
SAME(EO_CUDA_ERROR_INVALID_DEVICE, CUDA_ERROR_INVALID_DEVICE);
SAME(EO_CUDA_ERROR_INVALID_IMAGE, CUDA_ERROR_INVALID_IMAGE);
SAME(EO_CUDA_ERROR_INVALID_CONTEXT, CUDA_ERROR_INVALID_CONTEXT);
SAME(EO_CUDA_ERROR_NO_BINARY_FOR_GPU, CUDA_ERROR_NO_BINARY_FOR_GPU);
SAME(EO_CUDA_ERROR_INVALID_PTX, CUDA_ERROR_INVALID_PTX);
SAME(EO_CUDA_ERROR_UNSUPPORTED_PTX_VERSION, CUDA_ERROR_UNSUPPORTED_PTX_VERSION);
SAME(EO_CUDA_ERROR_INVALID_HANDLE, CUDA_ERROR_INVALID_HANDLE);
SAME(EO_CUDA_ERROR_NOT_FOUND, CUDA_ERROR_NOT_FOUND);
SAME(EO_CUDA_ERROR_ILLEGAL_ADDRESS, CUDA_ERROR_ILLEGAL_ADDRESS);
SAME(EO_CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES, CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES);
SAME(EO_CUDA_ERROR_LAUNCH_FAILED, CUDA_ERROR_LAUNCH_FAILED);
SAME(EO_CUDA_ERROR_NOT_SUPPORTED, CUDA_ERROR_NOT_SUPPORTED);
SAME(EO_CUDA_ERROR_UNKNOWN, CUDA_ERROR_UNKNOWN);
SAME(EO_CU_JIT_INFO_LOG_BUFFER, CU_JIT_INFO_LOG_BUFFER);
SAME(EO_CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES, CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES);
SAME(EO_CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER);
SAME(EO_CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES);
SAME(EO_CU_JIT_LOG_VERBOSE, CU_JIT_LOG_VERBOSE);
SAME(EO_CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
SAME(EO_CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X, CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X);
SAME(EO_CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y, CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y);
SAME(EO_CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK,
     CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK);
SAME(EO_CU_DEVICE_ATTRIBUTE_WARP_SIZE, CU_DEVICE_ATTRIBUTE_WARP_SIZE);
SAME(EO_CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
SAME(EO_CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR,
     CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
SAME(EO_CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR,
     CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
SAME(EO_CU_STREAM_NON_BLOCKING, CU_STREAM_NON_BLOCKING);
SAME(EO_CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
SAME(EO_CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES);
SAME(EO_CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES);
SAME(EO_CU_FUNC_ATTRIBUTE_NUM_REGS, CU_FUNC_ATTRIBUTE_NUM_REGS);

/* Each assignment type-checks one member against the toolkit's prototype. */
void eo_cuda_abi_check(eo_cuda_driver *d);
void eo_cuda_abi_check(eo_cuda_driver *d)
{
    d->cuInit = cuInit;
    d->cuDriverGetVersion = cuDriverGetVersion;
    d->cuDeviceGet = cuDeviceGet;
    d->cuDeviceGetCount = cuDeviceGetCount;
    d->cuDeviceGetAttribute = cuDeviceGetAttribute;
    d->cuDeviceGetName = cuDeviceGetName;
    d->cuDeviceTotalMem = cuDeviceTotalMem;
    d->cuDevicePrimaryCtxRetain = cuDevicePrimaryCtxRetain;
    d->cuDevicePrimaryCtxRelease = cuDevicePrimaryCtxRelease;
    d->cuCtxSetCurrent = cuCtxSetCurrent;
    d->cuCtxSynchronize = cuCtxSynchronize;
    d->cuStreamCreate = cuStreamCreate;
    d->cuStreamDestroy = cuStreamDestroy;
    d->cuStreamSynchronize = cuStreamSynchronize;
    d->cuModuleLoadDataEx = cuModuleLoadDataEx;
    d->cuModuleUnload = cuModuleUnload;
    d->cuModuleGetFunction = cuModuleGetFunction;
    d->cuFuncGetParamInfo = cuFuncGetParamInfo;
    d->cuFuncGetAttribute = cuFuncGetAttribute;
    d->cuLaunchKernel = cuLaunchKernel;
    d->cuMemAlloc = cuMemAlloc;
    d->cuMemFree = cuMemFree;
    d->cuMemcpyHtoD = cuMemcpyHtoD;
    d->cuMemcpyDtoH = cuMemcpyDtoH;
    d->cuMemcpyDtoD = cuMemcpyDtoD;
    d->cuMemsetD32 = cuMemsetD32;
    d->cuMemcpyHtoDAsync = cuMemcpyHtoDAsync;
    d->cuMemcpyDtoHAsync = cuMemcpyDtoHAsync;
    d->cuMemcpyDtoDAsync = cuMemcpyDtoDAsync;
    d->cuMemsetD32Async = cuMemsetD32Async;
    d->cuEventCreate = cuEventCreate;
    d->cuEventRecord = cuEventRecord;
    d->cuEventSynchronize = cuEventSynchronize;
    d->cuEventElapsedTime = cuEventElapsedTime;
    d->cuEventDestroy = cuEventDestroy;
    d->cuGetErrorName = cuGetErrorName;
    d->cuGetErrorString = cuGetErrorString;
}
#else
/* Normal builds: nothing here (ISO C wants at least one declaration). */
typedef int eo_cuda_abi_check_unused;
#endif
