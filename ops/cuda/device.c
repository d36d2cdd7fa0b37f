/* ops/cuda/device.c — opens a CUDA device through the driver table and
 * launches the hand-written PTX kernels of ptx/ behind the signatures of
 * ops/kernels.h.
 *
 * Why it is shaped like this (see ops/cuda/device.h for the contract):
 *  - every driver call goes through the eo_cuda_driver table, so the same
 *    code runs on a GPU and on the PTX interpreter used by the tests;
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
#include "ops/cuda/msg.h"
#include "ops/cuda/ptx.h"

typedef struct kinfo {
    const char *module, *entry, *params;
} kinfo;

static const kinfo kernels[EO_CUK_COUNT] = {
#define EO_CUDA_KERNEL(id, module, entry, params) {module, entry, params},
#include "ops/cuda/kernels.def"
#undef EO_CUDA_KERNEL
};

/* The launchers' device: the one documented global (see the header). */
static eo_cuda *current;

/* Scratch, one device allocation made at open:
 *   [0, 256)           one float: cross-entropy's backward scale;
 *   [256, 8448)        up to 1024 double partial sums for eo_sumsq_part;
 *   [8448, +4 MiB)     the work buffer for two-stage sums
 *                      (eo_layernorm_bwd_wb_part, eo_reduce_*part). */
enum { BLOCK = 256, MAX_GRID = 65535, SCRATCH_CE = 0, SCRATCH_SUMSQ = 256, SUMSQ_PARTS = 1024,
       SCRATCH_WORK = SCRATCH_SUMSQ + SUMSQ_PARTS * 8, WORK_BYTES = 4 << 20,
       SCRATCH_BYTES = SCRATCH_WORK + WORK_BYTES };
#define I32_MAX ((int64_t)2147483647)

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

void eo_cuda_make_current(eo_cuda *cu)
{
    current = cu;
}
eo_cuda *eo_cuda_current(void)
{
    return current;
}


/* ---- recording failures ----------------------------------------------------
 * Only the first failure is kept: later ones are usually its consequences.
 * fail_begin returns a writer into cu->msg, or one that discards. */
static eo_cuda_msg fail_begin(eo_cuda *cu, eo_status s)
{
    if (cu->error != EO_OK)
        return eo_cuda_msg_start(NULL, 0);
    cu->error = s;
    return eo_cuda_msg_start(cu->msg, sizeof cu->msg);
}

static eo_status fail_cu(eo_cuda *cu, eo_status s, eo_cu_result r, const char *call,
                         const char *what)
{
    eo_cuda_msg m = fail_begin(cu, s);
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

static eo_status fail_text(eo_cuda *cu, eo_status s, const char *a, const char *b,
                           const char *c)
{
    eo_cuda_msg m = fail_begin(cu, s);
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
        {"cuCtxSynchronize", d->cuCtxSynchronize != NULL},
        {"cuModuleLoadDataEx", d->cuModuleLoadDataEx != NULL},
        {"cuModuleUnload", d->cuModuleUnload != NULL},
        {"cuModuleGetFunction", d->cuModuleGetFunction != NULL},
        {"cuLaunchKernel", d->cuLaunchKernel != NULL},
        {"cuMemAlloc", d->cuMemAlloc != NULL},
        {"cuMemFree", d->cuMemFree != NULL},
        {"cuMemcpyHtoD", d->cuMemcpyHtoD != NULL},
        {"cuMemcpyDtoH", d->cuMemcpyDtoH != NULL},
        {"cuMemcpyDtoD", d->cuMemcpyDtoD != NULL},
        {"cuMemsetD32", d->cuMemsetD32 != NULL},
    };
    for (size_t i = 0; i < sizeof need / sizeof need[0]; i++)
        if (!need[i].present)
            return fail_text(cu, EO_ERR_ARG, "CUDA driver table lacks ", need[i].name, NULL);
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

/* Compare the kernel's parameter sizes with cuda_kernels.def. */
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
            eo_cuda_msg m = fail_begin(cu, EO_ERR_CUDA);
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
        return fail_text(cu, EO_ERR_CUDA, "kernel ", kernels[k].entry,
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
        return fail_text(cu, EO_ERR_NO_DEVICE, "no CUDA device: the driver reports none", NULL,
                         NULL);
    if (device < 0 || device >= count) {
        eo_cuda_msg m = fail_begin(cu, EO_ERR_DEVICE);
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
        eo_cuda_msg m = fail_begin(cu, EO_ERR_UNSUPPORTED);
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

    int nmod = eo_ptx_count();
    if (nmod > EO_CUDA_MAX_MODULES)
        return fail_text(cu, EO_ERR_ARG, "more PTX modules than EO_CUDA_MAX_MODULES", NULL,
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
            return fail_text(cu, EO_ERR_CUDA, "PTX module not embedded: ", kernels[k].module,
                             NULL);
        r = d->cuModuleGetFunction(&cu->fn[k], cu->modules[mi], kernels[k].entry);
        if (r != EO_CUDA_SUCCESS)
            return fail_cu(cu, EO_ERR_CUDA, r, "cuModuleGetFunction", kernels[k].entry);
        if ((s = check_params(cu, (eo_cuda_kernel)k)) != EO_OK)
            return s;
    }
    if ((r = d->cuMemAlloc(&cu->scratch, SCRATCH_BYTES)) != EO_CUDA_SUCCESS) {
        cu->scratch = 0;
        return fail_cu(cu, EO_ERR_CUDA, r, "cuMemAlloc", "scratch");
    }
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
    current = cu;
    return EO_OK;
}

void eo_cuda_close(eo_cuda *cu)
{
    if (!cu || !cu->drv)
        return;
    release(cu);
    if (current == cu)
        current = NULL;
}

eo_status eo_cuda_sync(eo_cuda *cu)
{
    if (!cu || !cu->is_open)
        return EO_ERR_STATE;
    eo_cu_result r = cu->drv->cuCtxSynchronize();
    if (r != EO_CUDA_SUCCESS)
        fail_cu(cu, EO_ERR_CUDA, r, "cuCtxSynchronize", NULL);
    return cu->error;
}

/* ---- device memory ------------------------------------------------------------ */
eo_status eo_cuda_alloc_block(eo_cuda *cu, size_t bytes, eo_cu_deviceptr *out)
{
    if (!cu || !cu->is_open || !out)
        return EO_ERR_ARG;
    *out = 0;
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
    if (cu && cu->is_open && p)
        cu->drv->cuMemFree(p);
}

eo_status eo_cuda_h2d(eo_cuda *cu, eo_cu_deviceptr dst, const void *src, size_t bytes)
{
    if (!cu || !cu->is_open)
        return EO_ERR_ARG;
    eo_cu_result r = bytes ? cu->drv->cuMemcpyHtoD(dst, src, bytes) : EO_CUDA_SUCCESS;
    return r ? fail_cu(cu, EO_ERR_CUDA, r, "cuMemcpyHtoD", NULL) : EO_OK;
}

eo_status eo_cuda_d2h(eo_cuda *cu, void *dst, eo_cu_deviceptr src, size_t bytes)
{
    if (!cu || !cu->is_open)
        return EO_ERR_ARG;
    eo_cu_result r = bytes ? cu->drv->cuMemcpyDtoH(dst, src, bytes) : EO_CUDA_SUCCESS;
    return r ? fail_cu(cu, EO_ERR_CUDA, r, "cuMemcpyDtoH", NULL) : EO_OK;
}

eo_status eo_cuda_d2d(eo_cuda *cu, eo_cu_deviceptr dst, eo_cu_deviceptr src, size_t bytes)
{
    if (!cu || !cu->is_open)
        return EO_ERR_ARG;
    eo_cu_result r = bytes ? cu->drv->cuMemcpyDtoD(dst, src, bytes) : EO_CUDA_SUCCESS;
    return r ? fail_cu(cu, EO_ERR_CUDA, r, "cuMemcpyDtoD", NULL) : EO_OK;
}

eo_status eo_cuda_memset32(eo_cuda *cu, eo_cu_deviceptr dst, uint32_t value, size_t count)
{
    if (!cu || !cu->is_open)
        return EO_ERR_ARG;
    eo_cu_result r = count ? cu->drv->cuMemsetD32(dst, value, count) : EO_CUDA_SUCCESS;
    return r ? fail_cu(cu, EO_ERR_CUDA, r, "cuMemsetD32", NULL) : EO_OK;
}

/* ---- launching ------------------------------------------------------------------ */

/* The device to launch on, or NULL when there is none or a failure is
 * pending (then the launch is skipped: its inputs may be wrong). */
static eo_cuda *ready(void)
{
    eo_cuda *cu = current;
    return (cu && cu->is_open && cu->error == EO_OK) ? cu : NULL;
}

static void launch(eo_cuda *cu, eo_cuda_kernel k, unsigned gx, unsigned gy, unsigned gz,
                   unsigned bx, unsigned by, void **params, size_t nparams)
{
    if (nparams != eo_text_len(kernels[k].params)) {
        fail_text(cu, EO_ERR_ARG, "launcher passes the wrong number of arguments to ",
                  kernels[k].entry, NULL);
        return;
    }
    eo_cu_result r = cu->drv->cuLaunchKernel(cu->fn[k], gx, gy, gz, bx, by, 1, 0, NULL, params,
                                             NULL);
    if (r != EO_CUDA_SUCCESS)
        fail_cu(cu, EO_ERR_CUDA, r, "cuLaunchKernel", kernels[k].entry);
}

#define LAUNCH(cu, k, gx, gy, gz, bx, by, ...)                                  \
    do {                                                                        \
        void *launch_params_[] = {__VA_ARGS__};                                 \
        launch(cu, k, gx, gy, gz, bx, by, launch_params_,                       \
               sizeof launch_params_ / sizeof launch_params_[0]);               \
    } while (0)

/* A device address as the kernels receive it (.u64). */
static uint64_t dp(const void *p)
{
    return (uint64_t)(uintptr_t)p;
}

/* Blocks for a grid-stride kernel over `work` items. */
static unsigned grid_for(int64_t work)
{
    int64_t g = (work + BLOCK - 1) / BLOCK;
    return g > MAX_GRID ? MAX_GRID : (unsigned)g;
}

/* Sizes the PTX indexes with 32-bit integers must lie in [0, 2^31). */
static int fits(eo_cuda *cu, const char *who, int64_t v)
{
    if (v >= 0 && v <= I32_MAX)
        return 1;
    eo_cuda_msg m = fail_begin(cu, v < 0 ? EO_ERR_ARG : EO_ERR_UNSUPPORTED);
    eo_cuda_msg_put(&m, who);
    eo_cuda_msg_put(&m, ": size ");
    eo_cuda_msg_int(&m, v);
    eo_cuda_msg_put(&m, v < 0 ? " is negative" : " exceeds 2^31-1, the limit of the CUDA kernels");
    return 0;
}

/* ---- 4-D strided operands ---------------------------------------------------------- */
typedef struct shape4 {
    uint32_t n[4];
    int64_t total;
} shape4;
typedef struct strides4 {
    int32_t s[4];
} strides4;

static int get_shape(eo_cuda *cu, const char *who, const int64_t shape[4], shape4 *out)
{
    out->total = 1;
    for (int k = 0; k < 4; k++) {
        if (!fits(cu, who, shape[k]))
            return 0;
        out->n[k] = (uint32_t)shape[k];
        out->total *= shape[k];
        if (!fits(cu, who, out->total))
            return 0;
    }
    return 1;
}

/* Strides as s32, checking every reachable offset fits (s == NULL: zeros). */
static int get_strides(eo_cuda *cu, const char *who, const int64_t shape[4], const int64_t *s,
                       strides4 *out)
{
    int64_t reach = 0;
    for (int k = 0; k < 4; k++) {
        int64_t v = s ? s[k] : 0, a = v < 0 ? -v : v;
        if (!fits(cu, who, a))
            return 0;
        out->s[k] = (int32_t)v;
        reach += (shape[k] > 0 ? shape[k] - 1 : 0) * a;
        if (!fits(cu, who, reach))
            return 0;
    }
    return 1;
}

/* Row-major contiguous over `shape` (size-1 axes may have any stride)? */
static int contiguous(const int64_t shape[4], const int64_t s[4])
{
    int64_t want = 1;
    for (int k = 3; k >= 0; k--) {
        if (shape[k] != 1 && s[k] != want)
            return 0;
        want *= shape[k];
    }
    return 1;
}

#define N4(sh) &(sh).n[0], &(sh).n[1], &(sh).n[2], &(sh).n[3]
#define S4(st) &(st).s[0], &(st).s[1], &(st).s[2], &(st).s[3]

void eo_cuda_k_copy32(const int64_t shape[4], void *dst, const int64_t sd[4], const void *src,
                      const int64_t ss[4])
{
    eo_cuda *cu = ready();
    shape4 sh;
    strides4 a, b;
    if (!cu || !get_shape(cu, "copy32", shape, &sh) || sh.total == 0)
        return;
    uint64_t d = dp(dst), s = dp(src);
    if (contiguous(shape, sd) && contiguous(shape, ss)) {
        uint32_t n = (uint32_t)sh.total;
        LAUNCH(cu, EO_CUK_COPY32_FLAT, grid_for(sh.total), 1, 1, BLOCK, 1, &d, &s, &n);
        return;
    }
    if (!get_strides(cu, "copy32", shape, sd, &a) || !get_strides(cu, "copy32", shape, ss, &b))
        return;
    LAUNCH(cu, EO_CUK_COPY32_4D, grid_for(sh.total), 1, 1, BLOCK, 1, N4(sh), &d, S4(a), &s,
           S4(b));
}

void eo_cuda_k_accumulate(const int64_t shape[4], float *dst, const int64_t sd[4],
                          const float *src, const int64_t ss[4])
{
    eo_cuda *cu = ready();
    shape4 sh;
    strides4 a, b;
    if (!cu || !get_shape(cu, "accumulate", shape, &sh) || sh.total == 0)
        return;
    uint64_t d = dp(dst), s = dp(src);
    if (contiguous(shape, sd) && contiguous(shape, ss)) {
        uint32_t n = (uint32_t)sh.total;
        LAUNCH(cu, EO_CUK_ACCUMULATE_FLAT, grid_for(sh.total), 1, 1, BLOCK, 1, &d, &s, &n);
        return;
    }
    if (!get_strides(cu, "accumulate", shape, sd, &a) ||
        !get_strides(cu, "accumulate", shape, ss, &b))
        return;
    LAUNCH(cu, EO_CUK_ACCUMULATE_4D, grid_for(sh.total), 1, 1, BLOCK, 1, N4(sh), &d, S4(a), &s,
           S4(b));
}

void eo_cuda_k_fill(int64_t n, float *x, float value)
{
    eo_cuda *cu = ready();
    if (!cu || !fits(cu, "fill", n) || n == 0)
        return;
    uint64_t p = dp(x);
    uint32_t nn = (uint32_t)n;
    LAUNCH(cu, EO_CUK_FILL, grid_for(n), 1, 1, BLOCK, 1, &p, &nn, &value);
}

void eo_cuda_k_binary(eo_binop op, const int64_t shape[4], float *out, const int64_t so[4],
                      const float *a, const int64_t sa[4], const float *b, const int64_t sb[4])
{
    eo_cuda *cu = ready();
    shape4 sh;
    strides4 t_o, t_a, t_b;
    if (!cu || !get_shape(cu, "binary", shape, &sh) || sh.total == 0)
        return;
    if (!get_strides(cu, "binary", shape, so, &t_o) ||
        !get_strides(cu, "binary", shape, sa, &t_a) ||
        !get_strides(cu, "binary", shape, sb, &t_b))
        return;
    uint32_t o = (uint32_t)op;
    uint64_t po = dp(out), pa = dp(a), pb = dp(b);
    LAUNCH(cu, EO_CUK_BINARY_4D, grid_for(sh.total), 1, 1, BLOCK, 1, &o, N4(sh), &po, S4(t_o),
           &pa, S4(t_a), &pb, S4(t_b));
}

void eo_cuda_k_binary_backward(eo_binop op, const int64_t shape[4], const float *dout,
                               const int64_t sdo[4], const float *a, const int64_t sa[4],
                               const float *b, const int64_t sb[4], float *da,
                               const int64_t sda[4], float *db, const int64_t sdb[4])
{
    eo_cuda *cu = ready();
    shape4 sh;
    strides4 t_do, t_a, t_b, t_da, t_db;
    if (!cu || !get_shape(cu, "binary_backward", shape, &sh) || sh.total == 0 || (!da && !db))
        return;
    /* Inputs that are not read (add/sub, absent gradients) count as stride 0. */
    if (!get_strides(cu, "binary_backward", shape, sdo, &t_do) ||
        !get_strides(cu, "binary_backward", shape, a ? sa : NULL, &t_a) ||
        !get_strides(cu, "binary_backward", shape, b ? sb : NULL, &t_b) ||
        !get_strides(cu, "binary_backward", shape, da ? sda : NULL, &t_da) ||
        !get_strides(cu, "binary_backward", shape, db ? sdb : NULL, &t_db))
        return;
    uint32_t o = (uint32_t)op;
    uint64_t pdo = dp(dout), pa = dp(a), pb = dp(b), pda = dp(da), pdb = dp(db);
    LAUNCH(cu, EO_CUK_BINARY_BWD_4D, grid_for(sh.total), 1, 1, BLOCK, 1, &o, N4(sh), &pdo,
           S4(t_do), &pa, S4(t_a), &pb, S4(t_b), &pda, S4(t_da), &pdb, S4(t_db));
}

void eo_cuda_k_unary(eo_unop op, int64_t n, const float *x, float *y, float alpha,
                     const eo_par *par)
{
    (void)par;
    eo_cuda *cu = ready();
    if (!cu || !fits(cu, "unary", n) || n == 0)
        return;
    uint32_t o = (uint32_t)op, nn = (uint32_t)n;
    uint64_t px = dp(x), py = dp(y);
    LAUNCH(cu, EO_CUK_UNARY, grid_for(n), 1, 1, BLOCK, 1, &o, &nn, &px, &py, &alpha);
}

void eo_cuda_k_unary_backward(eo_unop op, int64_t n, const float *x, const float *y,
                              const float *dy, float *dx, float alpha, const eo_par *par)
{
    (void)par;
    eo_cuda *cu = ready();
    if (!cu || !fits(cu, "unary_backward", n) || n == 0)
        return;
    uint32_t o = (uint32_t)op, nn = (uint32_t)n;
    uint64_t px = dp(x), py = dp(y), pdy = dp(dy), pdx = dp(dx);
    LAUNCH(cu, EO_CUK_UNARY_BWD, grid_for(n), 1, 1, BLOCK, 1, &o, &nn, &px, &py, &pdy, &pdx,
           &alpha);
}

/* ---- matmul ------------------------------------------------------------------------- */
void eo_cuda_k_matmul(int ta, int tb, int64_t batch, int64_t M, int64_t N, int64_t K,
                      const float *A, int64_t lda, int64_t sa, const float *B, int64_t ldb,
                      int64_t sb, float beta, float *C, int64_t ldc, int64_t sc, void *ws,
                      const eo_par *par)
{
    (void)ws;
    (void)par;
    eo_cuda *cu = ready();
    if (!cu || batch <= 0 || M <= 0 || N <= 0)
        return;
    /* Every in-matrix offset is an s32 in the PTX. */
    if (!fits(cu, "matmul", M) || !fits(cu, "matmul", N) || !fits(cu, "matmul", K) ||
        !fits(cu, "matmul", lda) || !fits(cu, "matmul", ldb) || !fits(cu, "matmul", ldc) ||
        !fits(cu, "matmul", (ta ? K : M) * lda) || !fits(cu, "matmul", (tb ? N : K) * ldb) ||
        !fits(cu, "matmul", M * ldc))
        return;
    int64_t gy = (M + 63) / 64, gx = (N + 63) / 64;
    if (gy > MAX_GRID) { /* grid.y counts 64-row tiles */
        fail_text(cu, EO_ERR_UNSUPPORTED, "matmul: M above 65535*64 rows", NULL, NULL);
        return;
    }
    uint32_t m = (uint32_t)M, n = (uint32_t)N, k = (uint32_t)K;
    int32_t am = ta ? 1 : (int32_t)lda, ak = ta ? (int32_t)lda : 1;
    int32_t bk = tb ? 1 : (int32_t)ldb, bn = tb ? (int32_t)ldb : 1, lc = (int32_t)ldc;
    /* grid.z is at most 65535: larger batches go in slices. */
    for (int64_t b0 = 0; b0 < batch; b0 += MAX_GRID) {
        int64_t nb = batch - b0 < MAX_GRID ? batch - b0 : MAX_GRID;
        uint64_t pa = dp(A) + (uint64_t)(b0 * sa) * 4u;
        uint64_t pb = dp(B) + (uint64_t)(b0 * sb) * 4u;
        uint64_t pc = dp(C) + (uint64_t)(b0 * sc) * 4u;
        LAUNCH(cu, EO_CUK_MATMUL, (unsigned)gx, (unsigned)gy, (unsigned)nb, 16, 16, &m, &n, &k,
               &pa, &am, &ak, &sa, &pb, &bk, &bn, &sb, &beta, &pc, &lc, &sc);
    }
}

size_t eo_cuda_k_matmul_ws(int64_t M, int64_t N, int64_t K, int nthreads)
{
    (void)M, (void)N, (void)K, (void)nthreads;
    return 0;
}

/* ---- reductions --------------------------------------------------------------------- */
/* Sums and means with few outputs and a long reduced axis: cut the axis
 * into R chunks reduced in parallel, then add each output's chunks in
 * order (see reduce.ptx). R depends only on the sizes. Returns 0 when the
 * one-pass kernels are the better choice. */
static int reduce_two_stage(eo_cuda *cu, uint32_t op, int64_t outer, int64_t n, int64_t inner,
                            uint64_t px, uint64_t py)
{
    int64_t outputs = outer * inner, R;
    if (inner == 1)  /* a block per chunk of a row: chunks of at least 4096 */
        R = outer < 512 && n >= 8192 ? n / 4096 : 1;
    else             /* a thread per (output, chunk): chunks of at least 64 */
        R = outputs < 16384 && n >= 128 ? n / 64 : 1;
    int64_t fit = WORK_BYTES / (outputs * 8), cap = inner == 1 ? 1024 : 256;
    R = R > cap ? cap : R;
    R = R > fit ? fit : R;
    if (R < 2)
        return 0;
    uint32_t chunk = (uint32_t)((n + R - 1) / R), nr = (uint32_t)((n + chunk - 1) / chunk);
    uint32_t a = (uint32_t)outer, b = (uint32_t)n, c = (uint32_t)inner, tot = (uint32_t)outputs;
    uint64_t pwork = cu->scratch + SCRATCH_WORK;
    if (inner == 1)
        LAUNCH(cu, EO_CUK_REDUCE_ROWS_PART, nr, a, 1, BLOCK, 1, &a, &b, &chunk, &px, &pwork);
    else
        LAUNCH(cu, EO_CUK_REDUCE_PART, (unsigned)((outputs + BLOCK - 1) / BLOCK), nr, 1, BLOCK, 1,
               &a, &b, &c, &chunk, &px, &pwork);
    LAUNCH(cu, EO_CUK_REDUCE_FINAL, grid_for(outputs), 1, 1, BLOCK, 1, &op, &tot, &nr, &b, &pwork,
           &py);
    return 1;
}

void eo_cuda_k_reduce(eo_redop op, int64_t outer, int64_t n, int64_t inner, const float *x,
                      float *y, int32_t *argmax, const eo_par *par)
{
    (void)par;
    eo_cuda *cu = ready();
    if (!cu || !fits(cu, "reduce", outer) || !fits(cu, "reduce", n) ||
        !fits(cu, "reduce", inner) || !fits(cu, "reduce", outer * inner) ||
        !fits(cu, "reduce", outer * n * inner) || outer * inner == 0 || n == 0)
        return;
    uint32_t o = (uint32_t)op, a = (uint32_t)outer, b = (uint32_t)n, c = (uint32_t)inner;
    uint64_t px = dp(x), py = dp(y), pam = dp(argmax);
    if (op != EO_RED_MAX && reduce_two_stage(cu, o, outer, n, inner, px, py))
        return;
    if (inner == 1 && n >= 64) { /* long rows: a block per row, not a thread */
        LAUNCH(cu, EO_CUK_REDUCE_ROWS, a, 1, 1, BLOCK, 1, &o, &a, &b, &px, &py, &pam);
        return;
    }
    LAUNCH(cu, EO_CUK_REDUCE, grid_for(outer * inner), 1, 1, BLOCK, 1, &o, &a, &b, &c, &px, &py,
           &pam);
}

void eo_cuda_k_reduce_backward(eo_redop op, int64_t outer, int64_t n, int64_t inner,
                               const float *dy, const int32_t *argmax, float *dx,
                               const eo_par *par)
{
    (void)par;
    eo_cuda *cu = ready();
    if (!cu || !fits(cu, "reduce_backward", outer) || !fits(cu, "reduce_backward", n) ||
        !fits(cu, "reduce_backward", inner) || !fits(cu, "reduce_backward", outer * n * inner) ||
        outer * n * inner == 0)
        return;
    uint32_t o = (uint32_t)op, a = (uint32_t)outer, b = (uint32_t)n, c = (uint32_t)inner;
    uint64_t pdy = dp(dy), pam = dp(argmax), pdx = dp(dx);
    LAUNCH(cu, EO_CUK_REDUCE_BWD, grid_for(outer * n * inner), 1, 1, BLOCK, 1, &o, &a, &b, &c,
           &pdy, &pam, &pdx);
}

void eo_cuda_k_sumsq(int64_t n, const float *x, float *out)
{
    eo_cuda *cu = ready();
    if (!cu || !fits(cu, "sumsq", n))
        return;
    /* Blocks of 256 threads, about 16 elements per thread, at most
     * SUMSQ_PARTS blocks: a function of n only, so results repeat. */
    int64_t g = (n + 4095) / 4096;
    uint32_t nn = (uint32_t)n, parts = (uint32_t)(g < 1 ? 1 : g > SUMSQ_PARTS ? SUMSQ_PARTS : g);
    uint64_t px = dp(x), po = dp(out), pp = cu->scratch + SCRATCH_SUMSQ;
    LAUNCH(cu, EO_CUK_SUMSQ_PART, parts, 1, 1, BLOCK, 1, &nn, &px, &pp);
    LAUNCH(cu, EO_CUK_SUMSQ_FINAL, 1, 1, 1, BLOCK, 1, &parts, &pp, &po);
}

/* ---- row kernels: one 256-thread block per row ---------------------------------------- */
void eo_cuda_k_softmax(int log, int64_t rows, int64_t cols, const float *x, float *y, void *ws,
                       const eo_par *par)
{
    (void)ws, (void)par; /* one block per row keeps its exps in registers */
    eo_cuda *cu = ready();
    if (!cu || !fits(cu, "softmax", rows) || !fits(cu, "softmax", cols) || rows == 0 ||
        cols == 0)
        return;
    uint32_t l = log != 0, r = (uint32_t)rows, c = (uint32_t)cols;
    uint64_t px = dp(x), py = dp(y);
    LAUNCH(cu, EO_CUK_SOFTMAX, r, 1, 1, BLOCK, 1, &l, &r, &c, &px, &py);
}

void eo_cuda_k_softmax_backward(int log, int64_t rows, int64_t cols, const float *y,
                                const float *dy, float *dx, const eo_par *par)
{
    (void)par;
    eo_cuda *cu = ready();
    if (!cu || !fits(cu, "softmax_backward", rows) || !fits(cu, "softmax_backward", cols) ||
        rows == 0 || cols == 0)
        return;
    uint32_t l = log != 0, r = (uint32_t)rows, c = (uint32_t)cols;
    uint64_t py = dp(y), pdy = dp(dy), pdx = dp(dx);
    LAUNCH(cu, EO_CUK_SOFTMAX_BWD, r, 1, 1, BLOCK, 1, &l, &r, &c, &py, &pdy, &pdx);
}

void eo_cuda_k_cross_entropy(int64_t rows, int64_t cols, const float *logits,
                             const int32_t *target, int32_t ignore_index, float *lse,
                             float *loss, const eo_par *par)
{
    (void)par;
    eo_cuda *cu = ready();
    if (!cu || !fits(cu, "cross_entropy", rows) || !fits(cu, "cross_entropy", cols) || cols == 0)
        return;
    uint32_t r = (uint32_t)rows, c = (uint32_t)cols;
    uint64_t px = dp(logits), pt = dp(target), pl = dp(lse), ploss = dp(loss);
    if (rows > 0)
        LAUNCH(cu, EO_CUK_CE_LSE, r, 1, 1, BLOCK, 1, &r, &c, &px, &pl);
    /* Always launched: with no rows it writes loss = 0. */
    LAUNCH(cu, EO_CUK_CE_LOSS, 1, 1, 1, BLOCK, 1, &r, &c, &px, &pt, &ignore_index, &pl, &ploss);
}

void eo_cuda_k_cross_entropy_backward(int64_t rows, int64_t cols, const float *logits,
                                      const int32_t *target, int32_t ignore_index,
                                      const float *lse, const float *dloss, float *dlogits,
                                      const eo_par *par)
{
    (void)par;
    eo_cuda *cu = ready();
    if (!cu || !fits(cu, "cross_entropy_backward", rows * cols) || rows == 0 || cols == 0)
        return;
    uint32_t r = (uint32_t)rows, c = (uint32_t)cols;
    uint64_t px = dp(logits), pt = dp(target), pl = dp(lse), pdl = dp(dloss), pdx = dp(dlogits);
    uint64_t ps = cu->scratch + SCRATCH_CE; /* scale = dloss / count, computed on the device */
    LAUNCH(cu, EO_CUK_CE_SCALE, 1, 1, 1, BLOCK, 1, &r, &pt, &ignore_index, &pdl, &ps);
    LAUNCH(cu, EO_CUK_CE_BWD, grid_for(rows * cols), 1, 1, BLOCK, 1, &r, &c, &px, &pt,
           &ignore_index, &pl, &ps, &pdx);
}

void eo_cuda_k_layernorm(int64_t rows, int64_t cols, const float *x, const float *w,
                         const float *b, float eps, float *y, float *mean, float *rstd,
                         const eo_par *par)
{
    (void)par;
    eo_cuda *cu = ready();
    if (!cu || !fits(cu, "layernorm", rows) || !fits(cu, "layernorm", cols) || rows == 0 ||
        cols == 0)
        return;
    uint32_t r = (uint32_t)rows, c = (uint32_t)cols;
    uint64_t px = dp(x), pw = dp(w), pb = dp(b), py = dp(y), pm = dp(mean), ps = dp(rstd);
    LAUNCH(cu, EO_CUK_LAYERNORM, r, 1, 1, BLOCK, 1, &r, &c, &px, &pw, &pb, &eps, &py, &pm, &ps);
}

void eo_cuda_k_layernorm_backward(int64_t rows, int64_t cols, const float *x, const float *w,
                                  const float *mean, const float *rstd, const float *dy,
                                  float *dx, float *dw, float *db, void *ws, const eo_par *par)
{
    (void)ws;
    (void)par;
    eo_cuda *cu = ready();
    if (!cu || !fits(cu, "layernorm_backward", rows) || !fits(cu, "layernorm_backward", cols) ||
        rows == 0 || cols == 0)
        return;
    uint32_t r = (uint32_t)rows, c = (uint32_t)cols;
    uint64_t px = dp(x), pw = dp(w), pm = dp(mean), ps = dp(rstd), pdy = dp(dy);
    uint64_t pdx = dp(dx), pdw = dp(dw), pdb = dp(db);
    if (dx)
        LAUNCH(cu, EO_CUK_LAYERNORM_BWD_DX, r, 1, 1, BLOCK, 1, &r, &c, &px, &pw, &pm, &ps, &pdy,
               &pdx);
    if (!dw && !db)
        return;
    /* dw, db are column sums over all rows. With many rows, cut the rows
     * into R chunks (about 128 rows each, at most 64, as the work buffer
     * allows) summed by separate blocks, then add the chunks in order. R
     * depends only on the sizes, so the result repeats exactly. */
    int64_t R = (rows + 127) / 128, fit = WORK_BYTES / (cols * 8);
    R = R > 64 ? 64 : R;
    R = R > fit ? fit : R;
    if (R < 2) {
        LAUNCH(cu, EO_CUK_LAYERNORM_BWD_WB, grid_for(cols), 1, 1, BLOCK, 1, &r, &c, &px, &pm, &ps,
               &pdy, &pdw, &pdb);
        return;
    }
    uint32_t chunk = (uint32_t)((rows + R - 1) / R), nr = (uint32_t)((rows + chunk - 1) / chunk);
    uint64_t pwork = cu->scratch + SCRATCH_WORK;
    LAUNCH(cu, EO_CUK_LAYERNORM_BWD_WB_PART, (unsigned)((cols + BLOCK - 1) / BLOCK), nr, 1, BLOCK,
           1, &r, &c, &chunk, &px, &pm, &ps, &pdy, &pwork);
    LAUNCH(cu, EO_CUK_LAYERNORM_BWD_WB_SUM, grid_for(cols), 1, 1, BLOCK, 1, &nr, &c, &pwork, &pdw,
           &pdb);
}

size_t eo_cuda_k_layernorm_backward_ws(int64_t rows, int64_t cols, int nthreads)
{
    (void)rows, (void)cols, (void)nthreads;
    return 0;
}

/* ---- embedding, dropout --------------------------------------------------------------- */
void eo_cuda_k_embedding(int64_t n, int64_t dim, const float *table, const int32_t *idx,
                         float *out, const eo_par *par)
{
    (void)par;
    eo_cuda *cu = ready();
    if (!cu || !fits(cu, "embedding", n) || !fits(cu, "embedding", dim) ||
        !fits(cu, "embedding", n * dim) || n * dim == 0)
        return;
    uint32_t a = (uint32_t)n, b = (uint32_t)dim;
    uint64_t pt = dp(table), pi = dp(idx), po = dp(out);
    LAUNCH(cu, EO_CUK_EMBEDDING, grid_for(n * dim), 1, 1, BLOCK, 1, &a, &b, &pt, &pi, &po);
}

void eo_cuda_k_embedding_backward(int64_t n, int64_t dim, const int32_t *idx, const float *dout,
                                  float *dtable, const eo_par *par)
{
    (void)par;
    eo_cuda *cu = ready();
    if (!cu || !fits(cu, "embedding_backward", n) || !fits(cu, "embedding_backward", dim) ||
        !fits(cu, "embedding_backward", n * dim) || n * dim == 0)
        return;
    uint32_t a = (uint32_t)n, b = (uint32_t)dim;
    uint64_t pi = dp(idx), pd = dp(dout), pt = dp(dtable);
    LAUNCH(cu, EO_CUK_EMBEDDING_BWD, grid_for(n * dim), 1, 1, BLOCK, 1, &a, &b, &pi, &pd, &pt);
}

void eo_cuda_k_dropout(int64_t n, const float *x, float *y, float p, uint64_t seed,
                       const eo_par *par)
{
    (void)par;
    eo_cuda *cu = ready();
    if (!cu || !fits(cu, "dropout", n) || n == 0)
        return;
    uint32_t nn = (uint32_t)n;
    uint64_t px = dp(x), py = dp(y);
    LAUNCH(cu, EO_CUK_DROPOUT, grid_for(n), 1, 1, BLOCK, 1, &nn, &px, &py, &p, &seed);
}

void eo_cuda_k_dropout_backward(int64_t n, const float *dy, float *dx, float p, uint64_t seed,
                                const eo_par *par)
{
    (void)par;
    eo_cuda *cu = ready();
    if (!cu || !fits(cu, "dropout_backward", n) || n == 0)
        return;
    uint32_t nn = (uint32_t)n;
    uint64_t pdy = dp(dy), pdx = dp(dx);
    LAUNCH(cu, EO_CUK_DROPOUT_BWD, grid_for(n), 1, 1, BLOCK, 1, &nn, &pdy, &pdx, &p, &seed);
}

/* ---- convolution helpers ---------------------------------------------------------------- */
static int conv_sizes(eo_cuda *cu, const char *who, int64_t N, int64_t C, int64_t H, int64_t W,
                      int64_t kh, int64_t kw, int64_t pad, int64_t stride, uint32_t v[10],
                      int64_t *total)
{
    if (stride <= 0 || kh <= 0 || kw <= 0)
        return fits(cu, who, -1);
    int64_t OH = (H + 2 * pad - kh) / stride + 1, OW = (W + 2 * pad - kw) / stride + 1;
    int64_t in[10] = {N, C, H, W, kh, kw, pad, stride, OH, OW};
    for (int i = 0; i < 10; i++) {
        if (!fits(cu, who, in[i]))
            return 0;
        v[i] = (uint32_t)in[i];
    }
    *total = C * kh * kw * N * OH * OW;
    return fits(cu, who, N * C * H * W) && fits(cu, who, N * OH * OW) &&
           fits(cu, who, C * kh * kw) && fits(cu, who, *total);
}

void eo_cuda_k_im2col(int64_t N, int64_t C, int64_t H, int64_t W, int64_t kh, int64_t kw,
                      int64_t pad, int64_t stride, const float *x, float *cols, const eo_par *par)
{
    (void)par;
    eo_cuda *cu = ready();
    uint32_t v[10];
    int64_t total = 0;
    if (!cu || !conv_sizes(cu, "im2col", N, C, H, W, kh, kw, pad, stride, v, &total) ||
        total == 0)
        return;
    uint64_t px = dp(x), pc = dp(cols);
    LAUNCH(cu, EO_CUK_IM2COL, grid_for(total), 1, 1, BLOCK, 1, &v[0], &v[1], &v[2], &v[3], &v[4],
           &v[5], &v[6], &v[7], &v[8], &v[9], &px, &pc);
}

void eo_cuda_k_col2im(int64_t N, int64_t C, int64_t H, int64_t W, int64_t kh, int64_t kw,
                      int64_t pad, int64_t stride, const float *dcols, float *dx,
                      const eo_par *par)
{
    (void)par;
    eo_cuda *cu = ready();
    uint32_t v[10];
    int64_t total = 0;
    if (!cu || !conv_sizes(cu, "col2im", N, C, H, W, kh, kw, pad, stride, v, &total) ||
        total == 0)
        return;
    uint64_t pc = dp(dcols), px = dp(dx);
    LAUNCH(cu, EO_CUK_COL2IM, grid_for(total), 1, 1, BLOCK, 1, &v[0], &v[1], &v[2], &v[3], &v[4],
           &v[5], &v[6], &v[7], &v[8], &v[9], &pc, &px);
}

static int pool_sizes(eo_cuda *cu, const char *who, int64_t P, int64_t H, int64_t W, int64_t k,
                      uint32_t v[6], int64_t *total)
{
    if (k <= 0)
        return fits(cu, who, -1);
    int64_t in[6] = {P, H, W, k, H / k, W / k};
    for (int i = 0; i < 6; i++) {
        if (!fits(cu, who, in[i]))
            return 0;
        v[i] = (uint32_t)in[i];
    }
    *total = P * (H / k) * (W / k);
    return fits(cu, who, H * W) && fits(cu, who, *total);
}

void eo_cuda_k_maxpool2d(int64_t P, int64_t H, int64_t W, int64_t k, const float *x, float *y,
                         int32_t *arg, const eo_par *par)
{
    (void)par;
    eo_cuda *cu = ready();
    uint32_t v[6];
    int64_t total = 0;
    if (!cu || !pool_sizes(cu, "maxpool2d", P, H, W, k, v, &total) || total == 0)
        return;
    uint64_t px = dp(x), py = dp(y), pa = dp(arg);
    LAUNCH(cu, EO_CUK_MAXPOOL, grid_for(total), 1, 1, BLOCK, 1, &v[0], &v[1], &v[2], &v[3], &v[4],
           &v[5], &px, &py, &pa);
}

void eo_cuda_k_maxpool2d_backward(int64_t P, int64_t H, int64_t W, int64_t k, const float *dy,
                                  const int32_t *arg, float *dx, const eo_par *par)
{
    (void)par;
    eo_cuda *cu = ready();
    uint32_t v[6];
    int64_t total = 0;
    if (!cu || !pool_sizes(cu, "maxpool2d_backward", P, H, W, k, v, &total) || total == 0)
        return;
    uint64_t pdy = dp(dy), pa = dp(arg), pdx = dp(dx);
    LAUNCH(cu, EO_CUK_MAXPOOL_BWD, grid_for(total), 1, 1, BLOCK, 1, &v[0], &v[1], &v[2], &v[3],
           &v[4], &v[5], &pdy, &pa, &pdx);
}

/* ---- attention: one block per (query, head) ---------------------------------------------- */
static int attn_sizes(eo_cuda *cu, const char *who, int64_t B, int64_t H, int64_t Tq, int64_t Tk,
                      int64_t D, int causal, const int64_t *ms, uint32_t v[5], int32_t m[4])
{
    int64_t in[5] = {B, H, Tq, Tk, D};
    for (int i = 0; i < 5; i++) {
        if (!fits(cu, who, in[i]))
            return 0;
        v[i] = (uint32_t)in[i];
    }
    if (D > 256 || B * H > MAX_GRID || (causal && Tq != Tk)) {
        fail_text(cu, EO_ERR_UNSUPPORTED, who,
                  ": the CUDA kernel needs D <= 256, B*H <= 65535 and Tq == Tk when causal",
                  NULL);
        return 0;
    }
    if (!fits(cu, who, B * H * Tq * D) || !fits(cu, who, B * H * Tk * D))
        return 0;
    int64_t reach = 0;
    for (int i = 0; i < 4; i++) {
        int64_t s = ms ? ms[i] : 0, a = s < 0 ? -s : s;
        if (!fits(cu, who, a))
            return 0;
        m[i] = (int32_t)s;
        reach += a * (in[i] > 0 ? in[i] - 1 : 0); /* axes b, h, i, j: extents B, H, Tq, Tk */
        if (!fits(cu, who, reach))
            return 0;
    }
    return 1;
}

void eo_cuda_k_attention(int64_t B, int64_t H, int64_t Tq, int64_t Tk, int64_t D, const float *q,
                         const float *k, const float *v, const float *mask, const int64_t ms[4],
                         int causal, float scale, float *out, float *lse, void *ws,
                         const eo_par *par)
{
    (void)ws, (void)par;
    eo_cuda *cu = ready();
    uint32_t s[5];
    int32_t m[4];
    if (!cu || !attn_sizes(cu, "attention", B, H, Tq, Tk, D, causal, mask ? ms : NULL, s, m) ||
        B * H * Tq == 0)
        return;
    uint32_t c = causal != 0;
    uint64_t pq = dp(q), pk = dp(k), pv = dp(v), pm = dp(mask), po = dp(out), pl = dp(lse);
    LAUNCH(cu, EO_CUK_ATTN_FWD, s[2], (unsigned)(B * H), 1, BLOCK, 1, &s[0], &s[1], &s[2], &s[3],
           &s[4], &pq, &pk, &pv, &pm, &m[0], &m[1], &m[2], &m[3], &c, &scale, &po, &pl);
}

void eo_cuda_k_attention_backward(int64_t B, int64_t H, int64_t Tq, int64_t Tk, int64_t D,
                                  const float *q, const float *k, const float *v,
                                  const float *mask, const int64_t ms[4], int causal, float scale,
                                  const float *out, const float *lse, const float *dout, float *dq,
                                  float *dk, float *dv, float *dmask, const int64_t dms[4],
                                  void *ws, const eo_par *par)
{
    (void)ws, (void)par;
    eo_cuda *cu = ready();
    uint32_t s[5];
    int32_t m[4], dm[4];
    if (!cu ||
        !attn_sizes(cu, "attention_backward", B, H, Tq, Tk, D, causal, mask ? ms : NULL, s, m) ||
        !attn_sizes(cu, "attention_backward", B, H, Tq, Tk, D, causal, dmask ? dms : NULL, s,
                    dm) ||
        B * H * Tq == 0 || (!dq && !dk && !dv && !dmask))
        return;
    uint32_t c = causal != 0;
    uint64_t pq = dp(q), pk = dp(k), pv = dp(v), pm = dp(mask), po = dp(out), pl = dp(lse);
    uint64_t pdo = dp(dout), pdq = dp(dq), pdk = dp(dk), pdv = dp(dv), pdm = dp(dmask);
    LAUNCH(cu, EO_CUK_ATTN_BWD, s[2], (unsigned)(B * H), 1, BLOCK, 1, &s[0], &s[1], &s[2], &s[3],
           &s[4], &pq, &pk, &pv, &pm, &m[0], &m[1], &m[2], &m[3], &c, &scale, &po, &pl, &pdo,
           &pdq, &pdk, &pdv, &pdm, &dm[0], &dm[1], &dm[2], &dm[3]);
}

size_t eo_cuda_k_attention_ws(int64_t Tq, int64_t Tk, int64_t D, int nthreads)
{
    (void)Tq, (void)Tk, (void)D, (void)nthreads;
    return 0;
}

/* ---- optimizers ---------------------------------------------------------------------------- */
void eo_cuda_k_sgd(int64_t n, float *w, const float *g, float *v, float lr, float momentum,
                   float wd, int nesterov, const eo_par *par)
{
    (void)par;
    eo_cuda *cu = ready();
    if (!cu || !fits(cu, "sgd", n) || n == 0)
        return;
    uint32_t nn = (uint32_t)n, nest = nesterov != 0;
    uint64_t pw = dp(w), pg = dp(g), pv = dp(v);
    LAUNCH(cu, EO_CUK_SGD, grid_for(n), 1, 1, BLOCK, 1, &nn, &pw, &pg, &pv, &lr, &momentum, &wd,
           &nest);
}

/* b^e for an integer e >= 0 by repeated squaring (no libm pow needed). */
static double pow_int(double b, int64_t e)
{
    double r = 1.0;
    for (; e > 0; e >>= 1, b *= b)
        if (e & 1)
            r *= b;
    return r;
}

void eo_cuda_k_adamw(int64_t n, float *w, const float *g, float *m, float *v, float lr,
                     float beta1, float beta2, float eps, float wd, int64_t step,
                     const eo_par *par)
{
    (void)par;
    eo_cuda *cu = ready();
    if (!cu || !fits(cu, "adamw", n) || n == 0)
        return;
    uint32_t nn = (uint32_t)n;
    uint64_t pw = dp(w), pg = dp(g), pm = dp(m), pv = dp(v);
    /* Bias corrections 1 - beta^t, in double as Python computes them. */
    float bc1 = (float)(1.0 - pow_int(beta1, step));
    float bc2 = (float)(1.0 - pow_int(beta2, step));
    LAUNCH(cu, EO_CUK_ADAMW, grid_for(n), 1, 1, BLOCK, 1, &nn, &pw, &pg, &pm, &pv, &lr, &beta1,
           &beta2, &eps, &wd, &bc1, &bc2);
}
