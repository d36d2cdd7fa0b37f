/* ops/cuda/driver.c — finds the CUDA driver at run time and fills the
 * entry-point table declared in ops/cuda/driver.h.
 *
 * Why dlopen and not linking: a binary linked against libcuda refuses to
 * start on a machine without a GPU driver. Opening "libcuda.so.1" at run
 * time lets one build run everywhere and report "no CUDA driver" as an
 * ordinary status. The name carries the ".1" on purpose: plain
 * "libcuda.so" is often the toolkit's link-time stub, whose functions
 * all fail.
 *
 * Why cuGetProcAddress: several entry points exist in more than one ABI
 * version (cuMemAlloc took a 32-bit size before CUDA 3.2 and exports
 * cuMemAlloc_v2 since; cuCtxSynchronize gained a context argument in CUDA
 * 13). Asking cuGetProcAddress for a symbol "as of CUDA version V" returns
 * the newest ABI not newer than V, so each table slot is pinned to the
 * signature declared for it, whatever the installed driver's age. Drivers
 * older than CUDA 11.3 lack cuGetProcAddress; then the exported versioned
 * names are looked up with dlsym instead (cuMemAlloc_v2, ...).
 *
 * Built with EO_FREESTANDING (the library's libc-free check) there is no
 * dlopen: loading reports EO_ERR_NO_DEVICE. */
#include <string.h>
#include "ops/cuda/driver.h"
#include "ops/cuda/msg.h"

#ifndef EO_FREESTANDING
#include <dlfcn.h>
#endif

/* One table slot: the symbol as cuGetProcAddress knows it, the ABI version
 * requested, the exported names to try with dlsym (most specific first),
 * where it goes in the struct, and whether loading fails without it. */
typedef struct slot {
    const char *name;
    int version;
    const char *exported[2];
    size_t offset;
    int optional;
} slot;

#ifndef EO_FREESTANDING
#define SLOT(field, ver, ex1, ex2, opt) \
    {#field, ver, {ex1, ex2}, offsetof(eo_cuda_driver, field), opt}

/* Versions are those of the PFN_<name>_v<version> types in the toolkit's
 * cudaTypedefs.h that match the signatures in ops/cuda/driver.h. */
static const slot slots[] = {
    SLOT(cuInit, 2000, "cuInit", NULL, 0),
    SLOT(cuDriverGetVersion, 2020, "cuDriverGetVersion", NULL, 0),
    SLOT(cuDeviceGet, 2000, "cuDeviceGet", NULL, 0),
    SLOT(cuDeviceGetCount, 2000, "cuDeviceGetCount", NULL, 0),
    SLOT(cuDeviceGetAttribute, 2000, "cuDeviceGetAttribute", NULL, 0),
    SLOT(cuDeviceGetName, 2000, "cuDeviceGetName", NULL, 0),
    SLOT(cuDeviceTotalMem, 3020, "cuDeviceTotalMem_v2", NULL, 0),
    SLOT(cuDevicePrimaryCtxRetain, 7000, "cuDevicePrimaryCtxRetain", NULL, 0),
    /* _v2 (11.0) and the original have the same signature. */
    SLOT(cuDevicePrimaryCtxRelease, 11000, "cuDevicePrimaryCtxRelease_v2",
         "cuDevicePrimaryCtxRelease", 0),
    SLOT(cuCtxSetCurrent, 4000, "cuCtxSetCurrent", NULL, 0),
    /* 2000, not 13000: the CUDA 13 ABI takes a context argument. The
     * exported plain name is the argument-less one. */
    SLOT(cuCtxSynchronize, 2000, "cuCtxSynchronize", NULL, 0),
    SLOT(cuStreamCreate, 2000, "cuStreamCreate", NULL, 0),
    SLOT(cuStreamDestroy, 4000, "cuStreamDestroy_v2", NULL, 0),
    SLOT(cuStreamSynchronize, 2000, "cuStreamSynchronize", NULL, 0),
    SLOT(cuModuleLoadDataEx, 2010, "cuModuleLoadDataEx", NULL, 0),
    SLOT(cuModuleUnload, 2000, "cuModuleUnload", NULL, 0),
    SLOT(cuModuleGetFunction, 2000, "cuModuleGetFunction", NULL, 0),
    SLOT(cuFuncGetParamInfo, 12040, "cuFuncGetParamInfo", NULL, 1),
    SLOT(cuFuncGetAttribute, 2020, "cuFuncGetAttribute", NULL, 0),
    SLOT(cuLaunchKernel, 4000, "cuLaunchKernel", NULL, 0),
    SLOT(cuMemAlloc, 3020, "cuMemAlloc_v2", NULL, 0),
    SLOT(cuMemFree, 3020, "cuMemFree_v2", NULL, 0),
    SLOT(cuMemcpyHtoD, 3020, "cuMemcpyHtoD_v2", NULL, 0),
    SLOT(cuMemcpyDtoH, 3020, "cuMemcpyDtoH_v2", NULL, 0),
    SLOT(cuMemcpyDtoD, 3020, "cuMemcpyDtoD_v2", NULL, 0),
    SLOT(cuMemsetD32, 3020, "cuMemsetD32_v2", NULL, 0),
    SLOT(cuMemcpyHtoDAsync, 3020, "cuMemcpyHtoDAsync_v2", NULL, 0),
    SLOT(cuMemcpyDtoHAsync, 3020, "cuMemcpyDtoHAsync_v2", NULL, 0),
    SLOT(cuMemcpyDtoDAsync, 3020, "cuMemcpyDtoDAsync_v2", NULL, 0),
    /* The async memsets never changed ABI: no _v2 export. */
    SLOT(cuMemsetD32Async, 3020, "cuMemsetD32Async", NULL, 0),
    SLOT(cuEventCreate, 2000, "cuEventCreate", NULL, 0),
    SLOT(cuEventRecord, 2000, "cuEventRecord", NULL, 0),
    SLOT(cuEventSynchronize, 2000, "cuEventSynchronize", NULL, 0),
    /* _v2 (12.8) keeps the signature; older drivers give the original. */
    SLOT(cuEventElapsedTime, 12080, "cuEventElapsedTime_v2", "cuEventElapsedTime", 0),
    SLOT(cuEventDestroy, 4000, "cuEventDestroy_v2", NULL, 0),
    SLOT(cuGetErrorName, 6000, "cuGetErrorName", NULL, 0),
    SLOT(cuGetErrorString, 6000, "cuGetErrorString", NULL, 0),
};

/* cuGetProcAddress in its two ABIs: _v2 (CUDA 12.0) adds a result code
 * saying whether the symbol or just the version was missing. */
typedef eo_cu_result (*proc_v2_fn)(const char *sym, void **pfn, int version, uint64_t flags,
                                   int *found);
typedef eo_cu_result (*proc_v1_fn)(const char *sym, void **pfn, int version, uint64_t flags);
typedef void (*any_fn)(void);

/* dlsym returns an object pointer; ISO C has no conversion from it to a
 * function pointer, so copy the representation (identical on every
 * platform dlopen exists on). */
static any_fn sym_fn(void *lib, const char *name)
{
    void *p = dlsym(lib, name);
    any_fn f = NULL;
    if (p)
        memcpy(&f, &p, sizeof f);
    return f;
}

static any_fn obj_to_fn(void *p)
{
    any_fn f = NULL;
    memcpy(&f, &p, sizeof f);
    return f;
}
#endif

eo_status eo_cuda_driver_load(eo_cuda_driver *d, char *err, size_t errlen)
{
    eo_cuda_msg m = eo_cuda_msg_start(err, errlen);
    if (!d) {
        eo_cuda_msg_put(&m, "eo_cuda_driver_load: NULL table");
        return EO_ERR_ARG;
    }
    memset(d, 0, sizeof *d);
#ifdef EO_FREESTANDING
    eo_cuda_msg_put(&m, "no CUDA driver: built freestanding (EO_FREESTANDING), no dlopen");
    return EO_ERR_NO_DEVICE;
#else
    void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        eo_cuda_msg_put(&m, "no CUDA driver: libcuda.so.1 not found");
        return EO_ERR_NO_DEVICE;
    }
    proc_v2_fn proc2 = NULL;
    proc_v1_fn proc1 = NULL;
    any_fn f = sym_fn(lib, "cuGetProcAddress_v2");
    if (f)
        proc2 = (proc_v2_fn)f;
    else if ((f = sym_fn(lib, "cuGetProcAddress")) != NULL)
        proc1 = (proc_v1_fn)f;

    for (size_t i = 0; i < sizeof slots / sizeof slots[0]; i++) {
        const slot *s = &slots[i];
        any_fn fn = NULL;
        void *p = NULL;
        int found = 0;
        /* flags 0 = CU_GET_PROC_ADDRESS_DEFAULT. */
        if (proc2 && proc2(s->name, &p, s->version, 0, &found) == EO_CUDA_SUCCESS && p)
            fn = obj_to_fn(p);
        else if (proc1 && proc1(s->name, &p, s->version, 0) == EO_CUDA_SUCCESS && p)
            fn = obj_to_fn(p);
        for (int k = 0; k < 2 && !fn && s->exported[k]; k++)
            fn = sym_fn(lib, s->exported[k]);
        if (!fn && !s->optional) {
            eo_cuda_msg_put(&m, "CUDA driver too old or broken: no entry point ");
            eo_cuda_msg_put(&m, s->name);
            eo_cuda_msg_put(&m, " (ABI ");
            eo_cuda_msg_int(&m, s->version);
            eo_cuda_msg_put(&m, ")");
            dlclose(lib);
            memset(d, 0, sizeof *d);
            return EO_ERR_CUDA;
        }
        memcpy((char *)d + s->offset, &fn, sizeof fn);
    }
    d->lib = lib;
    return EO_OK;
#endif
}

void eo_cuda_driver_unload(eo_cuda_driver *d)
{
    if (!d)
        return;
#ifndef EO_FREESTANDING
    if (d->lib)
        dlclose(d->lib);
#endif
    memset(d, 0, sizeof *d);
}

char *eo_cuda_result_text(const eo_cuda_driver *d, eo_cu_result r, char *buf, size_t buflen)
{
    eo_cuda_msg m = eo_cuda_msg_start(buf, buflen);
    const char *name = NULL, *text = NULL;
    if (d && d->cuGetErrorName && d->cuGetErrorName(r, &name) != EO_CUDA_SUCCESS)
        name = NULL;
    if (d && d->cuGetErrorString && d->cuGetErrorString(r, &text) != EO_CUDA_SUCCESS)
        text = NULL;
    if (name) {
        eo_cuda_msg_put(&m, name);
    } else {
        eo_cuda_msg_put(&m, "CUresult ");
        eo_cuda_msg_int(&m, r);
    }
    if (text) {
        eo_cuda_msg_put(&m, ": ");
        eo_cuda_msg_put(&m, text);
    }
    return buf;
}
