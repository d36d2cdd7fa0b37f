/* ops/cuda/device.c — the CUDA device state: opens a device through the
 * driver table (context, stream, PTX modules, function handles), keeps
 * the first-error slot, and moves device memory. The launchers behind
 * the signatures of ops/kernels.h are ops/cuda/<family>.c, one per PTX
 * module, sharing the launch step of ops/cuda/launch.c.
 *
 * Why it is shaped like this (see ops/cuda/device.h for the contract):
 *  - every driver call goes through the eo_cuda_driver table, so the same
 *    code runs on a GPU and on the PTX interpreter used by the tests;
 *  - the device's primary context is made current on the calling thread
 *    at every entry (eo_cuda_enter), and all work goes on the stream the
 *    device state owns, so nothing depends on which thread opened it or
 *    on what another context did last;
 *  - the PTX modules are JIT-compiled once at open and every function
 *    handle is cached by kernel id, so a launch is one table lookup and
 *    one cuLaunchKernel with a `void *params[]` array;
 *  - the list of kernels and their parameter lists lives once, in
 *    ops/cuda/kernels.def; at open each function's parameter sizes are
 *    compared with that list (cuFuncGetParamInfo, when the driver has
 *    it), and each launch checks it passes that many arguments;
 *  - launchers compute the grid from the sizes: grid-stride kernels get
 *    min(ceil(work / 256), 65535) blocks of 256 threads, row kernels one
 *    256-thread block per row, matmul 64x64 tiles (see each PTX header).
 * No malloc, no printf: messages go into the eo_cuda's buffer. */
#include <string.h>
#include "alloc/text.h"
#include "ops/cuda/device.h"
#include "ops/cuda/launch.h"
#include "ops/cuda/ptx.h"

typedef struct kinfo {
    const char *module, *entry, *params;
} kinfo;

static const kinfo kernels[EO_CUK_COUNT] = {
#define EO_CUDA_KERNEL(id, module, entry, params) {module, entry, params},
#include "ops/cuda/kernels.def"
#undef EO_CUDA_KERNEL
};


const char *eo_cuda_kernel_module(eo_cuda_kernel k)
{
    return (unsigned)k < EO_CUK_COUNT ? kernels[k].module : NULL;
}
const char *eo_cuda_kernel_entry(eo_cuda_kernel k)
{
    return (unsigned)k < EO_CUK_COUNT ? kernels[k].entry : NULL;
}
const char *eo_cuda_kernel_params(eo_cuda_kernel k)
{
    return (unsigned)k < EO_CUK_COUNT ? kernels[k].params : NULL;
}



/* ---- recording failures ----------------------------------------------------
 * Only the first failure is kept: later ones are usually its consequences.
 * fail_begin returns a writer into cu->msg, or one that discards. */
eo_cuda_msg eo_cuda_fail_begin(eo_cuda *cu, eo_status s)
{
    if (cu->error != EO_OK)
        return eo_cuda_msg_start(NULL, 0);
    cu->error = s;
    return eo_cuda_msg_start(cu->msg, sizeof cu->msg);
}

static eo_status fail_cu(eo_cuda *cu, eo_status s, eo_cu_result r, const char *call,
                         const char *what)
{
    eo_cuda_msg m = eo_cuda_fail_begin(cu, s);
    char text[256];
    eo_cuda_msg_put(&m, call);
    if (what) {
        eo_cuda_msg_put(&m, "(");
        eo_cuda_msg_put(&m, what);
        eo_cuda_msg_put(&m, ")");
    }
    eo_cuda_msg_put(&m, ": ");
    eo_cuda_msg_put(&m, eo_cuda_result_text(cu->drv, r, text, sizeof text));
    return s;
}

eo_status eo_cuda_fail_text(eo_cuda *cu, eo_status s, const char *a, const char *b,
                           const char *c)
{
    eo_cuda_msg m = eo_cuda_fail_begin(cu, s);
    eo_cuda_msg_put(&m, a);
    if (b)
        eo_cuda_msg_put(&m, b);
    if (c)
        eo_cuda_msg_put(&m, c);
    return s;
}

eo_status eo_cuda_take_error(eo_cuda *cu, char *msg, size_t msglen)
{
    eo_cuda_msg m = eo_cuda_msg_start(msg, msglen);
    if (!cu)
        return EO_OK;
    eo_status s = cu->error;
    if (s != EO_OK)
        eo_cuda_msg_put(&m, cu->msg);
    cu->error = EO_OK;
    cu->msg[0] = '\0';
    return s;
}

/* ---- open / close ----------------------------------------------------------- */
static void release(eo_cuda *cu)
{
    const eo_cuda_driver *d = cu->drv;
    /* Everything below acts on the current context: make it ours (the
     * results are ignored: releasing must go on whatever failed). */
    if (cu->ctx && d->cuCtxSetCurrent)
        d->cuCtxSetCurrent(cu->ctx);
    if (cu->stream) {
        if (d->cuStreamSynchronize)
            d->cuStreamSynchronize(cu->stream);
        if (d->cuStreamDestroy)
            d->cuStreamDestroy(cu->stream);
    }
    cu->stream = NULL;
    if (cu->scratch && d->cuMemFree)
        d->cuMemFree(cu->scratch);
    cu->scratch = 0;
    for (int i = 0; i < cu->nmodules; i++)
        if (cu->modules[i] && d->cuModuleUnload)
            d->cuModuleUnload(cu->modules[i]);
    memset(cu->modules, 0, sizeof cu->modules);
    memset(cu->fn, 0, sizeof cu->fn);
    cu->nmodules = 0;
    if (cu->ctx && d->cuDevicePrimaryCtxRelease)
        d->cuDevicePrimaryCtxRelease(cu->dev);
    cu->ctx = NULL;
    cu->is_open = 0;
}

/* The entry points the backend cannot work without. */
static eo_status check_table(eo_cuda *cu)
{
    const eo_cuda_driver *d = cu->drv;
    const struct {
        const char *name;
        int present;
    } need[] = {
        {"cuInit", d->cuInit != NULL},
        {"cuDeviceGetCount", d->cuDeviceGetCount != NULL},
        {"cuDeviceGet", d->cuDeviceGet != NULL},
        {"cuDeviceGetAttribute", d->cuDeviceGetAttribute != NULL},
        {"cuDevicePrimaryCtxRetain", d->cuDevicePrimaryCtxRetain != NULL},
        {"cuDevicePrimaryCtxRelease", d->cuDevicePrimaryCtxRelease != NULL},
        {"cuCtxSetCurrent", d->cuCtxSetCurrent != NULL},
        {"cuStreamCreate", d->cuStreamCreate != NULL},
        {"cuStreamDestroy", d->cuStreamDestroy != NULL},
        {"cuStreamSynchronize", d->cuStreamSynchronize != NULL},
        {"cuModuleLoadDataEx", d->cuModuleLoadDataEx != NULL},
        {"cuModuleUnload", d->cuModuleUnload != NULL},
        {"cuModuleGetFunction", d->cuModuleGetFunction != NULL},
        {"cuLaunchKernel", d->cuLaunchKernel != NULL},
        {"cuMemAlloc", d->cuMemAlloc != NULL},
        {"cuMemFree", d->cuMemFree != NULL},
        {"cuMemcpyHtoDAsync", d->cuMemcpyHtoDAsync != NULL},
        {"cuMemcpyDtoHAsync", d->cuMemcpyDtoHAsync != NULL},
        {"cuMemcpyDtoDAsync", d->cuMemcpyDtoDAsync != NULL},
        {"cuMemsetD32Async", d->cuMemsetD32Async != NULL},
    };
    for (size_t i = 0; i < sizeof need / sizeof need[0]; i++)
        if (!need[i].present)
            return eo_cuda_fail_text(cu, EO_ERR_ARG, "CUDA driver table lacks ", need[i].name, NULL);
    return EO_OK;
}

/* JIT one PTX module; on failure the JIT's error log joins the message. */
static eo_status load_module(eo_cuda *cu, const eo_ptx_module *pm, eo_cu_module *out)
{
    char elog[2048], ilog[512];
    elog[0] = ilog[0] = '\0';
    eo_cu_jit_option opts[4] = {EO_CU_JIT_ERROR_LOG_BUFFER, EO_CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
                   EO_CU_JIT_INFO_LOG_BUFFER, EO_CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES};
    /* Sizes travel as pointer-sized integers, as the driver API defines. */
    void *vals[4] = {elog, (void *)(uintptr_t)sizeof elog, ilog, (void *)(uintptr_t)sizeof ilog};
    eo_cu_result r = cu->drv->cuModuleLoadDataEx(out, pm->text, 4, opts, vals);
    if (r == EO_CUDA_SUCCESS)
        return EO_OK;
    elog[sizeof elog - 1] = ilog[sizeof ilog - 1] = '\0';
    fail_cu(cu, EO_ERR_CUDA, r, "cuModuleLoadDataEx", pm->name);
    eo_cuda_msg m = eo_cuda_msg_start(NULL, 0);
    if (cu->error == EO_ERR_CUDA) { /* append to the message just written */
        m.buf = cu->msg;
        m.cap = sizeof cu->msg;
        m.len = eo_text_len(cu->msg);
    }
    if (elog[0]) {
        eo_cuda_msg_put(&m, "; JIT error log: ");
        eo_cuda_msg_put(&m, elog);
    }
    if (ilog[0]) {
        eo_cuda_msg_put(&m, "; JIT info log: ");
        eo_cuda_msg_put(&m, ilog);
    }
    return EO_ERR_CUDA;
}

/* Compare the kernel's parameter sizes with ops/cuda/kernels.def. */
static eo_status check_params(eo_cuda *cu, eo_cuda_kernel k)
{
    const eo_cuda_driver *d = cu->drv;
    if (!d->cuFuncGetParamInfo)
        return EO_OK; /* drivers before CUDA 12.4: the per-launch count check remains */
    const char *p = kernels[k].params;
    size_t n = eo_text_len(p), off = 0, size = 0;
    for (size_t i = 0; i < n; i++) {
        eo_cu_result r = d->cuFuncGetParamInfo(cu->fn[k], i, &off, &size);
        size_t want = (p[i] == 'p' || p[i] == 'l') ? 8 : 4;
        if (r != EO_CUDA_SUCCESS)
            return fail_cu(cu, EO_ERR_CUDA, r, "cuFuncGetParamInfo", kernels[k].entry);
        if (size != want) {
            eo_cuda_msg m = eo_cuda_fail_begin(cu, EO_ERR_CUDA);
            eo_cuda_msg_put(&m, "kernel ");
            eo_cuda_msg_put(&m, kernels[k].entry);
            eo_cuda_msg_put(&m, ": parameter ");
            eo_cuda_msg_int(&m, (int64_t)i);
            eo_cuda_msg_put(&m, " has ");
            eo_cuda_msg_int(&m, (int64_t)size);
            eo_cuda_msg_put(&m, " bytes in the PTX, the launcher passes ");
            eo_cuda_msg_int(&m, (int64_t)want);
            return EO_ERR_CUDA;
        }
    }
    if (d->cuFuncGetParamInfo(cu->fn[k], n, &off, &size) == EO_CUDA_SUCCESS)
        return eo_cuda_fail_text(cu, EO_ERR_CUDA, "kernel ", kernels[k].entry,
                         ": the PTX has more parameters than the launcher passes");
    return EO_OK;
}

static eo_status open_steps(eo_cuda *cu, int device)
{
    const eo_cuda_driver *d = cu->drv;
    eo_status s = check_table(cu);
    if (s != EO_OK)
        return s;
    eo_cu_result r = d->cuInit(0);
    if (r == EO_CUDA_ERROR_NO_DEVICE)
        return fail_cu(cu, EO_ERR_NO_DEVICE, r, "no CUDA device: cuInit", NULL);
    if (r != EO_CUDA_SUCCESS)
        return fail_cu(cu, EO_ERR_CUDA, r, "cuInit", NULL);
    int count = 0;
    if ((r = d->cuDeviceGetCount(&count)) != EO_CUDA_SUCCESS)
        return fail_cu(cu, EO_ERR_CUDA, r, "cuDeviceGetCount", NULL);
    if (count <= 0)
        return eo_cuda_fail_text(cu, EO_ERR_NO_DEVICE, "no CUDA device: the driver reports none", NULL,
                         NULL);
    if (device < 0 || device >= count) {
        eo_cuda_msg m = eo_cuda_fail_begin(cu, EO_ERR_DEVICE);
        eo_cuda_msg_put(&m, "CUDA device ");
        eo_cuda_msg_int(&m, device);
        eo_cuda_msg_put(&m, " requested, ");
        eo_cuda_msg_int(&m, count);
        eo_cuda_msg_put(&m, " present");
        return EO_ERR_DEVICE;
    }
    if ((r = d->cuDeviceGet(&cu->dev, device)) != EO_CUDA_SUCCESS)
        return fail_cu(cu, EO_ERR_CUDA, r, "cuDeviceGet", NULL);
    if (!d->cuDeviceGetName || d->cuDeviceGetName(cu->name, (int)sizeof cu->name, cu->dev))
        memcpy(cu->name, "unnamed CUDA device", sizeof "unnamed CUDA device");
    cu->name[sizeof cu->name - 1] = '\0';
    if (d->cuDeviceTotalMem && d->cuDeviceTotalMem(&cu->total_mem, cu->dev))
        cu->total_mem = 0;
    if ((r = d->cuDeviceGetAttribute(&cu->cc_major,
                                     EO_CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, cu->dev)) ||
        (r = d->cuDeviceGetAttribute(&cu->cc_minor,
                                     EO_CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, cu->dev)) ||
        (r = d->cuDeviceGetAttribute(&cu->sm_count, EO_CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT,
                                     cu->dev)))
        return fail_cu(cu, EO_ERR_CUDA, r, "cuDeviceGetAttribute", NULL);
    /* The PTX says `.target sm_80`: the JIT compiles it for any device of
     * compute capability 8.0 or newer, and for none older. */
    if (cu->cc_major < 8) {
        eo_cuda_msg m = eo_cuda_fail_begin(cu, EO_ERR_UNSUPPORTED);
        eo_cuda_msg_put(&m, "CUDA device ");
        eo_cuda_msg_int(&m, device);
        eo_cuda_msg_put(&m, " (");
        eo_cuda_msg_put(&m, cu->name);
        eo_cuda_msg_put(&m, ") has compute capability ");
        eo_cuda_msg_int(&m, cu->cc_major);
        eo_cuda_msg_put(&m, ".");
        eo_cuda_msg_int(&m, cu->cc_minor);
        eo_cuda_msg_put(&m, "; EveryO's PTX targets sm_80 and needs 8.0 or newer");
        return EO_ERR_UNSUPPORTED;
    }
    if ((r = d->cuDevicePrimaryCtxRetain(&cu->ctx, cu->dev)) != EO_CUDA_SUCCESS) {
        cu->ctx = NULL;
        return fail_cu(cu, EO_ERR_CUDA, r, "cuDevicePrimaryCtxRetain", NULL);
    }
    if ((r = d->cuCtxSetCurrent(cu->ctx)) != EO_CUDA_SUCCESS)
        return fail_cu(cu, EO_ERR_CUDA, r, "cuCtxSetCurrent", NULL);
    if ((r = d->cuStreamCreate(&cu->stream, EO_CU_STREAM_NON_BLOCKING)) != EO_CUDA_SUCCESS) {
        cu->stream = NULL;
        return fail_cu(cu, EO_ERR_CUDA, r, "cuStreamCreate", NULL);
    }

    int nmod = eo_ptx_count();
    if (nmod > EO_CUDA_MAX_MODULES)
        return eo_cuda_fail_text(cu, EO_ERR_ARG, "more PTX modules than EO_CUDA_MAX_MODULES", NULL,
                         NULL);
    for (int i = 0; i < nmod; i++) {
        if ((s = load_module(cu, eo_ptx_get(i), &cu->modules[i])) != EO_OK)
            return s;
        cu->nmodules = i + 1;
    }
    for (int k = 0; k < EO_CUK_COUNT; k++) {
        int mi = -1;
        for (int i = 0; i < nmod && mi < 0; i++)
            if (eo_text_eq(eo_ptx_get(i)->name, kernels[k].module))
                mi = i;
        if (mi < 0)
            return eo_cuda_fail_text(cu, EO_ERR_CUDA, "PTX module not embedded: ", kernels[k].module,
                             NULL);
        r = d->cuModuleGetFunction(&cu->fn[k], cu->modules[mi], kernels[k].entry);
        if (r != EO_CUDA_SUCCESS)
            return fail_cu(cu, EO_ERR_CUDA, r, "cuModuleGetFunction", kernels[k].entry);
        if ((s = check_params(cu, (eo_cuda_kernel)k)) != EO_OK)
            return s;
    }
    if ((r = d->cuMemAlloc(&cu->scratch, EO_CU_SCRATCH_BYTES)) != EO_CUDA_SUCCESS) {
        cu->scratch = 0;
        return fail_cu(cu, EO_ERR_CUDA, r, "cuMemAlloc", "scratch");
    }
    /* the id-check slots start "nothing found" (all ones) */
    r = d->cuMemsetD32Async(cu->scratch + EO_CU_SCRATCH_CHECK, 0xffffffffu,
                            EO_CU_CHECK_SLOTS * EO_CU_CHECK_SLOT_BYTES / 4, cu->stream);
    if (r != EO_CUDA_SUCCESS)
        return fail_cu(cu, EO_ERR_CUDA, r, "cuMemsetD32Async", "scratch");
    /* the counts of finished blocks start at 0: cross-entropy's
     * (eo_ce_fwd) and the column strips' (eo_binary_bwd_colpart, eo_layernorm_bwd_wb_part) */
    r = d->cuMemsetD32Async(cu->scratch + EO_CU_SCRATCH_CE_DONE, 0, 1, cu->stream);
    if (r == EO_CUDA_SUCCESS)
        r = d->cuMemsetD32Async(cu->scratch + EO_CU_SCRATCH_COLDONE, 0, EO_CU_COLDONE_STRIPS,
                                cu->stream);
    if (r != EO_CUDA_SUCCESS)
        return fail_cu(cu, EO_ERR_CUDA, r, "cuMemsetD32Async", "scratch");
    return EO_OK;
}

eo_status eo_cuda_open(eo_cuda *cu, const eo_cuda_driver *drv, int device, char *err,
                       size_t errlen)
{
    eo_cuda_msg m = eo_cuda_msg_start(err, errlen);
    if (!cu || !drv) {
        eo_cuda_msg_put(&m, "eo_cuda_open: NULL argument");
        return EO_ERR_ARG;
    }
    memset(cu, 0, sizeof *cu);
    cu->drv = drv;
    cu->ordinal = device;
    eo_status s = open_steps(cu, device);
    if (s != EO_OK) {
        eo_cuda_msg_put(&m, cu->msg);
        release(cu);
        return s;
    }
    cu->is_open = 1;
    return EO_OK;
}

void eo_cuda_close(eo_cuda *cu)
{
    if (!cu || !cu->drv)
        return;
    release(cu);
}

eo_status eo_cuda_enter(eo_cuda *cu)
{
    if (!cu || !cu->is_open)
        return EO_ERR_STATE;
    eo_cu_result r = cu->drv->cuCtxSetCurrent(cu->ctx);
    return r ? fail_cu(cu, EO_ERR_CUDA, r, "cuCtxSetCurrent", cu->name) : EO_OK;
}

/* Wait for the stream; name the call that queued the work waited for. */
static eo_status wait_stream(eo_cuda *cu, const char *after)
{
    eo_cu_result r = cu->drv->cuStreamSynchronize(cu->stream);
    return r ? fail_cu(cu, EO_ERR_CUDA, r, "cuStreamSynchronize", after) : EO_OK;
}

eo_status eo_cuda_sync(eo_cuda *cu)
{
    if (!cu || !cu->is_open)
        return EO_ERR_STATE;
    if (eo_cuda_enter(cu) == EO_OK && wait_stream(cu, NULL) == EO_OK && cu->ids_checked)
        eo_cuda_check_report(cu); /* a bad token id or class target, found on the device */
    return cu->error;
}

/* ---- device memory ------------------------------------------------------------ */
eo_status eo_cuda_alloc_block(eo_cuda *cu, size_t bytes, eo_cu_deviceptr *out)
{
    if (!cu || !cu->is_open || !out)
        return EO_ERR_ARG;
    *out = 0;
    eo_status s = eo_cuda_enter(cu);
    if (s != EO_OK)
        return s;
    eo_cu_result r = cu->drv->cuMemAlloc(out, bytes ? bytes : 1);
    if (r == EO_CUDA_ERROR_OUT_OF_MEMORY) {
        *out = 0;
        return fail_cu(cu, EO_ERR_OOM, r, "cuMemAlloc", "device arena block");
    }
    if (r != EO_CUDA_SUCCESS) {
        *out = 0;
        return fail_cu(cu, EO_ERR_CUDA, r, "cuMemAlloc", "device arena block");
    }
    return EO_OK;
}

void eo_cuda_free_block(eo_cuda *cu, eo_cu_deviceptr p)
{
    if (cu && cu->is_open && p) {
        cu->drv->cuCtxSetCurrent(cu->ctx); /* freeing goes on whatever failed */
        cu->drv->cuMemFree(p);
    }
}

/* A host<->device copy was queued (result r): wait for it, so the host
 * buffer may be reused (upload) or read (download) on return. */
static eo_status queued_then_waited(eo_cuda *cu, eo_cu_result r, const char *call)
{
    return r ? fail_cu(cu, EO_ERR_CUDA, r, call, NULL) : wait_stream(cu, call);
}

eo_status eo_cuda_h2d(eo_cuda *cu, eo_cu_deviceptr dst, const void *src, size_t bytes)
{
    if (!cu || !cu->is_open)
        return EO_ERR_ARG;
    eo_status s = eo_cuda_enter(cu);
    if (s != EO_OK || !bytes)
        return s;
    return queued_then_waited(cu, cu->drv->cuMemcpyHtoDAsync(dst, src, bytes, cu->stream),
                              "cuMemcpyHtoDAsync");
}

eo_status eo_cuda_d2h(eo_cuda *cu, void *dst, eo_cu_deviceptr src, size_t bytes)
{
    if (!cu || !cu->is_open)
        return EO_ERR_ARG;
    eo_status s = eo_cuda_enter(cu);
    if (s != EO_OK || !bytes)
        return s;
    s = queued_then_waited(cu, cu->drv->cuMemcpyDtoHAsync(dst, src, bytes, cu->stream),
                           "cuMemcpyDtoHAsync");
    if (s != EO_OK)
        return s;
    /* The copy waited for the kernels before it, so their id checks are
     * in: a bad id is recorded like a launch failure (the copy itself is
     * good) and surfaces at the caller's next check of the state. */
    if (cu->ids_checked)
        eo_cuda_check_report(cu);
    return EO_OK;
}

eo_status eo_cuda_d2d(eo_cuda *cu, eo_cu_deviceptr dst, eo_cu_deviceptr src, size_t bytes)
{
    if (!cu || !cu->is_open)
        return EO_ERR_ARG;
    eo_status s = eo_cuda_enter(cu);
    if (s != EO_OK || !bytes)
        return s;
    eo_cu_result r = cu->drv->cuMemcpyDtoDAsync(dst, src, bytes, cu->stream);
    return r ? fail_cu(cu, EO_ERR_CUDA, r, "cuMemcpyDtoDAsync", NULL) : EO_OK;
}

eo_status eo_cuda_memset32(eo_cuda *cu, eo_cu_deviceptr dst, uint32_t value, size_t count)
{
    if (!cu || !cu->is_open)
        return EO_ERR_ARG;
    eo_status s = eo_cuda_enter(cu);
    if (s != EO_OK || !count)
        return s;
    eo_cu_result r = cu->drv->cuMemsetD32Async(dst, value, count, cu->stream);
    return r ? fail_cu(cu, EO_ERR_CUDA, r, "cuMemsetD32Async", NULL) : EO_OK;
}
