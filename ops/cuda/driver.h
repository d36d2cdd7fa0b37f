/* ops/cuda/driver.h — the table of CUDA Driver API entry points EveryO uses.
 *
 * Why a table: every host-side CUDA call in the library goes through one
 * struct of function pointers. The real driver (libcuda.so.1, opened at
 * run time with dlopen) fills it in production; a PTX interpreter
 * (tools/ptxsim/) fills the same struct in tests, so every kernel can be
 * exercised on a machine with no GPU. Nothing else in the library links
 * against CUDA, and the library builds without any CUDA header.
 *
 * Why local types: we cannot include <cuda.h> (it may not be installed),
 * so the few types we need are declared here with the same ABI as the
 * real ones (checked against cuda.h by `make ptx-check`, which compiles
 * tests/cuda_abi.c against the toolkit's header when it is installed):
 *   CUresult            an enum           -> int
 *   CUdevice            int               -> int
 *   CUdeviceptr         unsigned long long-> uint64_t (same size and
 *                                            representation on LP64)
 *   CUcontext, CUmodule, CUfunction, CUevent, CUstream
 *                       pointers to opaque structs -> pointers to our own
 *                       incomplete structs (an implementation such as the
 *                       interpreter may define them; the loader never
 *                       looks inside)
 *   CUjit_option, CUdevice_attribute, CUfunction_attribute  enums -> int
 *                       (an enum has the size and calling convention of
 *                       int on every platform CUDA supports).
 *
 * Each member has exactly the signature of the driver ABI version named
 * in its comment (the loader asks cuGetProcAddress for that version, see
 * ops/cuda/driver.c); where the driver exports a versioned symbol (_v2) that
 * is the one meant. */
#ifndef EO_CUDA_DRIVER_H
#define EO_CUDA_DRIVER_H

#include <stddef.h>
#include <stdint.h>
#include "alloc/status.h"

/* ---- driver types (ABI-compatible stand-ins for cuda.h's) ---------------
 * tests/cuda_abi.c defines EO_CUDA_ABI_TYPES and maps these names onto
 * cuda.h's own types instead, so that assigning the toolkit's functions
 * to the table's members checks every signature. */
#ifndef EO_CUDA_ABI_TYPES
typedef int eo_cu_result;          /* CUresult */
typedef int eo_cu_device;          /* CUdevice */
typedef uint64_t eo_cu_deviceptr;  /* CUdeviceptr (64-bit device address) */
typedef struct eo_cu_context_st *eo_cu_context;   /* CUcontext */
typedef struct eo_cu_module_st *eo_cu_module;     /* CUmodule */
typedef struct eo_cu_function_st *eo_cu_function; /* CUfunction */
typedef struct eo_cu_event_st *eo_cu_event;       /* CUevent */
typedef struct eo_cu_stream_st *eo_cu_stream;     /* CUstream (NULL = default) */
typedef int eo_cu_device_attribute;   /* CUdevice_attribute */
typedef int eo_cu_function_attribute; /* CUfunction_attribute */
typedef int eo_cu_jit_option;         /* CUjit_option */
#endif

/* ---- the constants we use (values from cuda.h) ---------------------------- */
enum {
    EO_CUDA_SUCCESS = 0,
    EO_CUDA_ERROR_INVALID_VALUE = 1,
    EO_CUDA_ERROR_OUT_OF_MEMORY = 2,
    EO_CUDA_ERROR_NOT_INITIALIZED = 3,
    EO_CUDA_ERROR_NO_DEVICE = 100,
    EO_CUDA_ERROR_INVALID_DEVICE = 101,
    EO_CUDA_ERROR_INVALID_IMAGE = 200,
    EO_CUDA_ERROR_INVALID_CONTEXT = 201,
    EO_CUDA_ERROR_NO_BINARY_FOR_GPU = 209,
    EO_CUDA_ERROR_INVALID_PTX = 218,
    EO_CUDA_ERROR_UNSUPPORTED_PTX_VERSION = 222,
    EO_CUDA_ERROR_INVALID_HANDLE = 400,
    EO_CUDA_ERROR_NOT_FOUND = 500,
    EO_CUDA_ERROR_ILLEGAL_ADDRESS = 700,
    EO_CUDA_ERROR_LAUNCH_OUT_OF_RESOURCES = 701,
    EO_CUDA_ERROR_LAUNCH_FAILED = 719,
    EO_CUDA_ERROR_NOT_SUPPORTED = 801,
    EO_CUDA_ERROR_UNKNOWN = 999
};
/* CUjit_option values for cuModuleLoadDataEx. */
enum {
    EO_CU_JIT_INFO_LOG_BUFFER = 3,             /* char * */
    EO_CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES = 4,  /* in: capacity, out: bytes used */
    EO_CU_JIT_ERROR_LOG_BUFFER = 5,            /* char * */
    EO_CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES = 6, /* in: capacity, out: bytes used */
    EO_CU_JIT_LOG_VERBOSE = 12                 /* int, 1 = verbose */
};
/* CUdevice_attribute values for cuDeviceGetAttribute. */
enum {
    EO_CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK = 1,
    EO_CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X = 5,
    EO_CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y = 6,
    EO_CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK = 8,
    EO_CU_DEVICE_ATTRIBUTE_WARP_SIZE = 10,
    EO_CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT = 16,
    EO_CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75,
    EO_CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76
};
/* CUstream_flags for cuStreamCreate: the device's stream does not
 * synchronise with the legacy NULL stream (nothing of ours uses it). */
enum { EO_CU_STREAM_NON_BLOCKING = 1 };
/* CUfunction_attribute values for cuFuncGetAttribute. */
enum {
    EO_CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK = 0,
    EO_CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES = 1,
    EO_CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES = 3,
    EO_CU_FUNC_ATTRIBUTE_NUM_REGS = 4
};

/* ---- the table ---------------------------------------------------------------
 * Member names are the driver's un-suffixed names; the comment gives the
 * ABI version requested from cuGetProcAddress (CUDA version ×1000 + ×10
 * minor, e.g. 3020 = CUDA 3.2, the first _v2 ABI with 64-bit sizes) and
 * the exported symbol used when cuGetProcAddress is unavailable.
 * Every member except cuFuncGetParamInfo is required: the loader fails
 * if one is missing. cuFuncGetParamInfo (CUDA 12.4) may be NULL. */
typedef struct eo_cuda_driver {
    eo_cu_result (*cuInit)(unsigned flags);                               /* 2000 cuInit */
    eo_cu_result (*cuDriverGetVersion)(int *version);                     /* 2020 cuDriverGetVersion */
    eo_cu_result (*cuDeviceGet)(eo_cu_device *dev, int ordinal);          /* 2000 cuDeviceGet */
    eo_cu_result (*cuDeviceGetCount)(int *count);                         /* 2000 cuDeviceGetCount */
    eo_cu_result (*cuDeviceGetAttribute)(int *value, eo_cu_device_attribute attrib,
                                         eo_cu_device dev);               /* 2000 */
    eo_cu_result (*cuDeviceGetName)(char *name, int len, eo_cu_device dev);        /* 2000 */
    eo_cu_result (*cuDeviceTotalMem)(size_t *bytes, eo_cu_device dev);    /* 3020 cuDeviceTotalMem_v2 */
    eo_cu_result (*cuDevicePrimaryCtxRetain)(eo_cu_context *ctx, eo_cu_device dev); /* 7000 */
    eo_cu_result (*cuDevicePrimaryCtxRelease)(eo_cu_device dev); /* 11000 cuDevicePrimaryCtxRelease_v2 */
    eo_cu_result (*cuCtxSetCurrent)(eo_cu_context ctx);                   /* 4000 cuCtxSetCurrent */
    eo_cu_result (*cuCtxSynchronize)(void);               /* 2000 (not the 13000 form with a ctx) */
    eo_cu_result (*cuStreamCreate)(eo_cu_stream *stream, unsigned flags);  /* 2000 */
    eo_cu_result (*cuStreamDestroy)(eo_cu_stream stream);                /* 4000 cuStreamDestroy_v2 */
    eo_cu_result (*cuStreamSynchronize)(eo_cu_stream stream);            /* 2000 */
    eo_cu_result (*cuModuleLoadDataEx)(eo_cu_module *mod, const void *image, unsigned nopt,
                                       eo_cu_jit_option *options, void **values); /* 2010 */
    eo_cu_result (*cuModuleUnload)(eo_cu_module mod);                     /* 2000 */
    eo_cu_result (*cuModuleGetFunction)(eo_cu_function *fn, eo_cu_module mod,
                                        const char *name);                /* 2000 */
    eo_cu_result (*cuFuncGetParamInfo)(eo_cu_function fn, size_t index, size_t *offset,
                                       size_t *size);                     /* 12040, may be NULL */
    eo_cu_result (*cuFuncGetAttribute)(int *value, eo_cu_function_attribute attrib,
                                       eo_cu_function fn);                /* 2020 */
    eo_cu_result (*cuLaunchKernel)(eo_cu_function fn, unsigned gx, unsigned gy, unsigned gz,
                                   unsigned bx, unsigned by, unsigned bz, unsigned shared_bytes,
                                   eo_cu_stream stream, void **params, void **extra); /* 4000 */
    eo_cu_result (*cuMemAlloc)(eo_cu_deviceptr *dptr, size_t bytes);      /* 3020 cuMemAlloc_v2 */
    eo_cu_result (*cuMemFree)(eo_cu_deviceptr dptr);                      /* 3020 cuMemFree_v2 */
    eo_cu_result (*cuMemcpyHtoD)(eo_cu_deviceptr dst, const void *src, size_t bytes); /* 3020 _v2 */
    eo_cu_result (*cuMemcpyDtoH)(void *dst, eo_cu_deviceptr src, size_t bytes);       /* 3020 _v2 */
    eo_cu_result (*cuMemcpyDtoD)(eo_cu_deviceptr dst, eo_cu_deviceptr src,
                                 size_t bytes);                            /* 3020 _v2 */
    eo_cu_result (*cuMemsetD32)(eo_cu_deviceptr dst, unsigned value, size_t count); /* 3020 _v2 */
    eo_cu_result (*cuMemcpyHtoDAsync)(eo_cu_deviceptr dst, const void *src, size_t bytes,
                                      eo_cu_stream stream);                /* 3020 _v2 */
    eo_cu_result (*cuMemcpyDtoHAsync)(void *dst, eo_cu_deviceptr src, size_t bytes,
                                      eo_cu_stream stream);                /* 3020 _v2 */
    eo_cu_result (*cuMemcpyDtoDAsync)(eo_cu_deviceptr dst, eo_cu_deviceptr src, size_t bytes,
                                      eo_cu_stream stream);                /* 3020 _v2 */
    eo_cu_result (*cuMemsetD32Async)(eo_cu_deviceptr dst, unsigned value, size_t count,
                                     eo_cu_stream stream); /* 3020 cuMemsetD32Async (no _v2) */
    eo_cu_result (*cuEventCreate)(eo_cu_event *ev, unsigned flags);       /* 2000 */
    eo_cu_result (*cuEventRecord)(eo_cu_event ev, eo_cu_stream stream);   /* 2000 */
    eo_cu_result (*cuEventSynchronize)(eo_cu_event ev);                   /* 2000 */
    eo_cu_result (*cuEventElapsedTime)(float *ms, eo_cu_event start,
                                       eo_cu_event end); /* 12080 (_v2; same signature as 2000) */
    eo_cu_result (*cuEventDestroy)(eo_cu_event ev);                       /* 4000 cuEventDestroy_v2 */
    eo_cu_result (*cuGetErrorName)(eo_cu_result err, const char **str);   /* 6000 */
    eo_cu_result (*cuGetErrorString)(eo_cu_result err, const char **str); /* 6000 */
    void *lib; /* the dlopen handle (NULL for a table filled another way) */
} eo_cuda_driver;

/* Open libcuda.so.1 (the driver installed with the GPU, never the
 * toolkit's link stub) and fill *d. On failure *d is zeroed, err holds a
 * message and the status is:
 *   EO_ERR_NO_DEVICE  no driver ("no CUDA driver: libcuda.so.1 not found"),
 *                     or the library was built with EO_FREESTANDING;
 *   EO_ERR_CUDA       the driver lacks a required entry point.
 * err may be NULL (errlen 0). cuInit is NOT called here: eo_cuda_open does. */
eo_status eo_cuda_driver_load(eo_cuda_driver *d, char *err, size_t errlen);

/* dlclose the library (if lib is set) and zero *d. */
void eo_cuda_driver_unload(eo_cuda_driver *d);

/* Write "CUDA_ERROR_NAME: description" for r into buf (always
 * NUL-terminated when buflen > 0, truncated if needed) using the table's
 * cuGetErrorName/cuGetErrorString; falls back to "CUresult <n>" when the
 * table (or its entries) is NULL. Returns buf. */
char *eo_cuda_result_text(const eo_cuda_driver *d, eo_cu_result r, char *buf, size_t buflen);

#endif
