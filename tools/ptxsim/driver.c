/* tools/ptxsim/driver.c — the CUDA driver-API double (see
 * ptxsim_driver.h for what it promises).
 *
 * Why model the driver's error behaviour so closely (deferred faults,
 * poisoned context, validated handles): the CUDA backend's own error
 * handling is code too, and the only way to test it without a GPU is for
 * the double to fail the way the real driver fails. A backend that checks
 * cuLaunchKernel's status but never cuCtxSynchronize's would pass against
 * a double that reported faults at launch, and then lose the error on a
 * real GPU.
 *
 * Handles (contexts, modules, functions, events) point to structs defined
 * here; every handle passed in is looked up in this file's lists before
 * it is used, so a stale or foreign handle is CUDA_ERROR_INVALID_HANDLE
 * rather than a crash. */
#include <stdlib.h>
#include <string.h>
#include "tools/ptxsim/driver.h"

/* Result codes the double returns beyond those ops/cuda/driver.h names
 * (values from cuda.h). */
enum {
    CU_NOT_READY = 600,
    CU_LAUNCH_TIMEOUT = 702,
    CU_MISALIGNED_ADDRESS = 716
};

/* CU_LAUNCH_PARAM_* markers of cuLaunchKernel's `extra` array. */
#define LAUNCH_PARAM_END ((uintptr_t)0)
#define LAUNCH_PARAM_BUFFER_POINTER ((uintptr_t)1)
#define LAUNCH_PARAM_BUFFER_SIZE ((uintptr_t)2)

#define DEVICE_BYTES ((size_t)4 << 30) /* what cuDeviceTotalMem reports */

struct eo_cu_context_st {
    int unused;
};

struct eo_cu_function_st {
    struct eo_cu_module_st *mod;
    const eo_px_kernel *k;
};

struct eo_cu_module_st {
    eo_px_module *m;
    struct eo_cu_function_st *fns;
    int nfns;
};

struct eo_cu_event_st {
    double ms;
    int recorded;
};

static struct eo_cu_context_st the_ctx;

/* The fake device. Zero is the state before cuInit. */
static struct {
    int initialised;
    int retained;           /* primary context reference count */
    int current;            /* the primary context is current */
    eo_px_heap *heap;
    size_t bytes;           /* bytes allocated */
    eo_cu_module *modules;
    int nmodules, cap_modules;
    eo_cu_event *events;
    int nevents, cap_events;
    eo_px_fault fault;      /* the last kernel fault */
    eo_cu_result pending;   /* a fault not yet reported */
    eo_cu_result sticky;    /* reported: the context is poisoned */
    double clock_ms;
    uint64_t step_limit;
    /* Host-side bookkeeping of allocation sizes, for cuMemFree. */
    uint64_t *alloc_base;
    size_t *alloc_size;
    size_t nallocs, cap_allocs;
} dev;

/* ---- state checks ------------------------------------------------------------ */

/* Every call except the error-name ones starts here: the driver must be
 * initialised and the context not poisoned. */
static eo_cu_result check_alive(void)
{
    if (!dev.initialised)
        return EO_CUDA_ERROR_NOT_INITIALIZED;
    return dev.sticky;
}

/* Calls that work on the current context. */
static eo_cu_result check_ctx(void)
{
    eo_cu_result r = check_alive();
    if (r)
        return r;
    return dev.current && dev.retained ? EO_CUDA_SUCCESS : EO_CUDA_ERROR_INVALID_CONTEXT;
}

/* Synchronising calls: a fault from an earlier launch surfaces here and
 * poisons the context. */
static eo_cu_result sync_point(void)
{
    eo_cu_result r = check_ctx();
    if (r)
        return r;
    if (dev.pending) {
        dev.sticky = dev.pending;
        dev.pending = 0;
        return dev.sticky;
    }
    return EO_CUDA_SUCCESS;
}

static struct eo_cu_function_st *find_function(eo_cu_function f)
{
    for (int i = 0; i < dev.nmodules; i++)
        for (int j = 0; j < dev.modules[i]->nfns; j++)
            if (&dev.modules[i]->fns[j] == f)
                return f;
    return NULL;
}

static int find_module(eo_cu_module m)
{
    for (int i = 0; i < dev.nmodules; i++)
        if (dev.modules[i] == m)
            return i;
    return -1;
}

static int find_event(eo_cu_event e)
{
    for (int i = 0; i < dev.nevents; i++)
        if (dev.events[i] == e)
            return i;
    return -1;
}

static void free_module(eo_cu_module m)
{
    eo_px_module_free(m->m);
    free(m->fns);
    free(m);
}

void eo_ptxsim_driver_reset(void)
{
    for (int i = 0; i < dev.nmodules; i++)
        free_module(dev.modules[i]);
    for (int i = 0; i < dev.nevents; i++)
        free(dev.events[i]);
    free(dev.modules);
    free(dev.events);
    eo_px_heap_free(dev.heap);
    free(dev.alloc_base);
    free(dev.alloc_size);
    uint64_t limit = dev.step_limit;
    double clock = dev.clock_ms;
    memset(&dev, 0, sizeof dev);
    dev.step_limit = limit;
    dev.clock_ms = clock; /* time never goes backwards */
}

/* What releasing the last reference to the primary context does on a
 * GPU: everything in the context goes, including a sticky error. */
static void destroy_context(void)
{
    int init = dev.initialised;
    eo_ptxsim_driver_reset();
    dev.initialised = init;
}

const eo_px_fault *eo_ptxsim_last_fault(void) { return &dev.fault; }
size_t eo_ptxsim_live_allocations(void) { return eo_px_heap_live_count(dev.heap); }
void *eo_ptxsim_device_bytes(uint64_t d, size_t n) { return eo_px_heap_span(dev.heap, d, n); }
void eo_ptxsim_set_step_limit(uint64_t steps) { dev.step_limit = steps; }

/* ---- initialisation, device, context -------------------------------------------- */

static eo_cu_result sim_init(unsigned flags)
{
    if (flags)
        return EO_CUDA_ERROR_INVALID_VALUE;
    dev.initialised = 1;
    return EO_CUDA_SUCCESS;
}

static eo_cu_result sim_driver_version(int *v)
{
    if (!v)
        return EO_CUDA_ERROR_INVALID_VALUE;
    *v = 12080;
    return EO_CUDA_SUCCESS;
}

static eo_cu_result sim_device_get(eo_cu_device *d, int ordinal)
{
    eo_cu_result r = check_alive();
    if (r)
        return r;
    if (!d)
        return EO_CUDA_ERROR_INVALID_VALUE;
    if (ordinal != 0)
        return EO_CUDA_ERROR_INVALID_DEVICE;
    *d = 0;
    return EO_CUDA_SUCCESS;
}

static eo_cu_result sim_device_count(int *n)
{
    eo_cu_result r = check_alive();
    if (r)
        return r;
    if (!n)
        return EO_CUDA_ERROR_INVALID_VALUE;
    *n = 1;
    return EO_CUDA_SUCCESS;
}

static eo_cu_result sim_device_attribute(int *v, int attr, eo_cu_device d)
{
    eo_cu_result r = check_alive();
    if (r)
        return r;
    if (!v)
        return EO_CUDA_ERROR_INVALID_VALUE;
    if (d != 0)
        return EO_CUDA_ERROR_INVALID_DEVICE;
    switch (attr) {
    case EO_CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK: *v = EO_PX_MAX_THREADS; break;
    case EO_CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X: *v = 2147483647; break;
    case EO_CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y: *v = 65535; break;
    case EO_CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK: *v = (int)EO_PX_MAX_SHARED; break;
    case EO_CU_DEVICE_ATTRIBUTE_WARP_SIZE: *v = 32; break;
    case EO_CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: *v = 108; break;
    case EO_CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: *v = 8; break;
    case EO_CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: *v = 0; break;
    default: return EO_CUDA_ERROR_INVALID_VALUE;
    }
    return EO_CUDA_SUCCESS;
}

static eo_cu_result sim_device_name(char *name, int len, eo_cu_device d)
{
    eo_cu_result r = check_alive();
    if (r)
        return r;
    if (!name || len <= 0)
        return EO_CUDA_ERROR_INVALID_VALUE;
    if (d != 0)
        return EO_CUDA_ERROR_INVALID_DEVICE;
    snprintf(name, (size_t)len, "EveryO PTX interpreter (sm_80)");
    return EO_CUDA_SUCCESS;
}

static eo_cu_result sim_total_mem(size_t *bytes, eo_cu_device d)
{
    eo_cu_result r = check_alive();
    if (r)
        return r;
    if (!bytes)
        return EO_CUDA_ERROR_INVALID_VALUE;
    if (d != 0)
        return EO_CUDA_ERROR_INVALID_DEVICE;
    *bytes = DEVICE_BYTES;
    return EO_CUDA_SUCCESS;
}

static eo_cu_result sim_ctx_retain(eo_cu_context *ctx, eo_cu_device d)
{
    eo_cu_result r = check_alive();
    if (r)
        return r;
    if (!ctx)
        return EO_CUDA_ERROR_INVALID_VALUE;
    if (d != 0)
        return EO_CUDA_ERROR_INVALID_DEVICE;
    if (!dev.heap && !(dev.heap = eo_px_heap_new()))
        return EO_CUDA_ERROR_OUT_OF_MEMORY;
    dev.retained++;
    *ctx = &the_ctx;
    return EO_CUDA_SUCCESS;
}

/* Not gated by a sticky error: releasing is how a program recovers. */
static eo_cu_result sim_ctx_release(eo_cu_device d)
{
    if (!dev.initialised)
        return EO_CUDA_ERROR_NOT_INITIALIZED;
    if (d != 0)
        return EO_CUDA_ERROR_INVALID_DEVICE;
    if (dev.retained == 0)
        return EO_CUDA_ERROR_INVALID_CONTEXT;
    if (--dev.retained == 0)
        destroy_context();
    return EO_CUDA_SUCCESS;
}

static eo_cu_result sim_ctx_set_current(eo_cu_context ctx)
{
    eo_cu_result r = check_alive();
    if (r)
        return r;
    if (ctx && (ctx != &the_ctx || !dev.retained))
        return EO_CUDA_ERROR_INVALID_CONTEXT;
    dev.current = ctx != NULL;
    return EO_CUDA_SUCCESS;
}

static eo_cu_result sim_ctx_sync(void) { return sync_point(); }

/* ---- modules ------------------------------------------------------------------- */

/* Copy `text` into a JIT log buffer given through the options, and
 * report the bytes written as the driver does (in the value slot). */
static void write_log(unsigned nopt, const int *options, void **values, int buf_opt, int size_opt,
                      const char *text)
{
    char *buf = NULL;
    size_t cap = 0;
    int size_at = -1;
    for (unsigned i = 0; i < nopt; i++) {
        if (options[i] == buf_opt)
            buf = values[i];
        if (options[i] == size_opt) {
            cap = (size_t)(uintptr_t)values[i];
            size_at = (int)i;
        }
    }
    if (!buf || !cap)
        return;
    snprintf(buf, cap, "%s", text);
    size_t used = strlen(buf) + 1;
    values[size_at] = (void *)(uintptr_t)used;
}

static eo_cu_result sim_module_load(eo_cu_module *out, const void *image, unsigned nopt,
                                    int *options, void **values)
{
    eo_cu_result r = check_ctx();
    if (r)
        return r;
    if (!out || !image || (nopt && (!options || !values)))
        return EO_CUDA_ERROR_INVALID_VALUE;
    *out = NULL;
    const char *text = image;
    if (strncmp(text, "\x7f" "ELF", 4) == 0) {
        write_log(nopt, options, values, EO_CU_JIT_ERROR_LOG_BUFFER,
                  EO_CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
                  "ptxsim: a cubin/ELF image; the interpreter runs PTX text only");
        return EO_CUDA_ERROR_INVALID_IMAGE;
    }
    char err[512], log[600];
    eo_px_module *pm = NULL;
    eo_status st = eo_px_module_load(text, strlen(text), &pm, err, sizeof err);
    if (st != EO_OK) {
        snprintf(log, sizeof log, "ptxsim: %s", err);
        write_log(nopt, options, values, EO_CU_JIT_ERROR_LOG_BUFFER,
                  EO_CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES, log);
        return st == EO_ERR_OOM ? EO_CUDA_ERROR_OUT_OF_MEMORY : EO_CUDA_ERROR_INVALID_PTX;
    }
    eo_cu_module m = calloc(1, sizeof *m);
    int n = eo_px_module_kernel_count(pm);
    if (m)
        m->fns = calloc((size_t)(n ? n : 1), sizeof *m->fns);
    if (dev.nmodules == dev.cap_modules && m && m->fns) {
        int nc = dev.cap_modules ? dev.cap_modules * 2 : 8;
        eo_cu_module *q = realloc(dev.modules, (size_t)nc * sizeof *q);
        if (q) {
            dev.modules = q;
            dev.cap_modules = nc;
        }
    }
    if (!m || !m->fns || dev.nmodules == dev.cap_modules) {
        if (m)
            free(m->fns);
        free(m);
        eo_px_module_free(pm);
        return EO_CUDA_ERROR_OUT_OF_MEMORY;
    }
    m->m = pm;
    m->nfns = n;
    for (int i = 0; i < n; i++) {
        m->fns[i].mod = m;
        m->fns[i].k = eo_px_module_kernel_at(pm, i);
    }
    dev.modules[dev.nmodules++] = m;
    snprintf(log, sizeof log, "ptxsim: loaded %d kernel(s)", n);
    write_log(nopt, options, values, EO_CU_JIT_INFO_LOG_BUFFER,
              EO_CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES, log);
    write_log(nopt, options, values, EO_CU_JIT_ERROR_LOG_BUFFER,
              EO_CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES, "");
    *out = m;
    return EO_CUDA_SUCCESS;
}

static eo_cu_result sim_module_unload(eo_cu_module m)
{
    eo_cu_result r = check_ctx();
    if (r)
        return r;
    int i = find_module(m);
    if (i < 0)
        return EO_CUDA_ERROR_INVALID_HANDLE;
    free_module(m);
    dev.modules[i] = dev.modules[--dev.nmodules];
    return EO_CUDA_SUCCESS;
}

static eo_cu_result sim_module_function(eo_cu_function *fn, eo_cu_module m, const char *name)
{
    eo_cu_result r = check_ctx();
    if (r)
        return r;
    if (!fn || !name)
        return EO_CUDA_ERROR_INVALID_VALUE;
    if (find_module(m) < 0)
        return EO_CUDA_ERROR_INVALID_HANDLE;
    for (int i = 0; i < m->nfns; i++)
        if (strcmp(eo_px_kernel_name(m->fns[i].k), name) == 0) {
            *fn = &m->fns[i];
            return EO_CUDA_SUCCESS;
        }
    return EO_CUDA_ERROR_NOT_FOUND;
}

static eo_cu_result sim_param_info(eo_cu_function fn, size_t index, size_t *offset, size_t *size)
{
    eo_cu_result r = check_ctx();
    if (r)
        return r;
    if (!find_function(fn))
        return EO_CUDA_ERROR_INVALID_HANDLE;
    if (index >= (size_t)eo_px_kernel_param_count(fn->k))
        return EO_CUDA_ERROR_INVALID_VALUE;
    eo_px_kernel_param(fn->k, (int)index, offset, size, NULL);
    return EO_CUDA_SUCCESS;
}

static eo_cu_result sim_func_attribute(int *v, int attr, eo_cu_function fn)
{
    eo_cu_result r = check_ctx();
    if (r)
        return r;
    if (!v)
        return EO_CUDA_ERROR_INVALID_VALUE;
    if (!find_function(fn))
        return EO_CUDA_ERROR_INVALID_HANDLE;
    switch (attr) {
    case EO_CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK: *v = EO_PX_MAX_THREADS; break;
    case EO_CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES: *v = (int)eo_px_kernel_static_shared(fn->k); break;
    case EO_CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES: *v = 0; break;
    case EO_CU_FUNC_ATTRIBUTE_NUM_REGS: {
        /* PTX registers are virtual; a real allocation caps at 255. */
        int n = eo_px_kernel_nregs(fn->k);
        *v = n > 255 ? 255 : n;
        break;
    }
    default: return EO_CUDA_ERROR_INVALID_VALUE;
    }
    return EO_CUDA_SUCCESS;
}

/* ---- launch ---------------------------------------------------------------------- */

static eo_cu_result fault_result(eo_px_fault_kind k)
{
    switch (k) {
    case EO_PX_FAULT_GLOBAL_OOB: case EO_PX_FAULT_SHARED_OOB: case EO_PX_FAULT_PARAM_OOB:
        return EO_CUDA_ERROR_ILLEGAL_ADDRESS;
    case EO_PX_FAULT_MISALIGNED: return CU_MISALIGNED_ADDRESS;
    case EO_PX_FAULT_STEP_LIMIT: return CU_LAUNCH_TIMEOUT;
    default: return EO_CUDA_ERROR_LAUNCH_FAILED;
    }
}

/* Pack the parameters into one buffer laid out as the PTX declares. With
 * kernelParams the driver can only trust the kernel's sizes (it copies
 * that many bytes from each pointer); with `extra` the caller says the
 * buffer's size, and a mismatch is an error. */
static eo_cu_result pack_params(const eo_px_kernel *k, void **params, void **extra,
                                unsigned char *buf)
{
    int n = eo_px_kernel_param_count(k);
    size_t total = eo_px_kernel_param_bytes(k);
    if (params && extra)
        return EO_CUDA_ERROR_INVALID_VALUE;
    if (extra) {
        const void *ptr = NULL;
        const size_t *size = NULL;
        for (int i = 0; (uintptr_t)extra[i] != LAUNCH_PARAM_END; i += 2) {
            if (i > 16)
                return EO_CUDA_ERROR_INVALID_VALUE;
            if ((uintptr_t)extra[i] == LAUNCH_PARAM_BUFFER_POINTER)
                ptr = extra[i + 1];
            else if ((uintptr_t)extra[i] == LAUNCH_PARAM_BUFFER_SIZE)
                size = extra[i + 1];
            else
                return EO_CUDA_ERROR_INVALID_VALUE;
        }
        if (!ptr || !size || *size != total)
            return EO_CUDA_ERROR_INVALID_VALUE;
        memcpy(buf, ptr, total);
        return EO_CUDA_SUCCESS;
    }
    if (n && !params)
        return EO_CUDA_ERROR_INVALID_VALUE;
    for (int i = 0; i < n; i++) {
        size_t off, size;
        eo_px_kernel_param(k, i, &off, &size, NULL);
        if (!params[i])
            return EO_CUDA_ERROR_INVALID_VALUE;
        memcpy(buf + off, params[i], size);
    }
    return EO_CUDA_SUCCESS;
}

static eo_cu_result sim_launch(eo_cu_function fn, unsigned gx, unsigned gy, unsigned gz,
                               unsigned bx, unsigned by, unsigned bz, unsigned shared_bytes,
                               eo_cu_stream stream, void **params, void **extra)
{
    eo_cu_result r = check_ctx();
    if (r)
        return r;
    if (!find_function(fn))
        return EO_CUDA_ERROR_INVALID_HANDLE;
    if (stream)
        return EO_CUDA_ERROR_INVALID_HANDLE; /* only the default stream exists here */
    unsigned long long threads = (unsigned long long)bx * by * bz; /* may wrap: dims first */
    if (bx > EO_PX_MAX_THREADS || by > EO_PX_MAX_THREADS || bz > 64 ||
        !gx || !gy || !gz || !threads || threads > EO_PX_MAX_THREADS || gy > 65535 ||
        gz > 65535 || gx > 2147483647u)
        return EO_CUDA_ERROR_INVALID_VALUE;
    if (eo_px_kernel_static_shared(fn->k) + shared_bytes > EO_PX_MAX_SHARED)
        return EO_CUDA_ERROR_INVALID_VALUE;
    unsigned char buf[4096];
    memset(buf, 0, sizeof buf);
    r = pack_params(fn->k, params, extra, buf);
    if (r)
        return r;
    if (dev.pending)
        return EO_CUDA_SUCCESS; /* queued behind a kernel that faulted: never runs */
    eo_px_config c;
    memset(&c, 0, sizeof c);
    c.grid.x = gx;
    c.grid.y = gy;
    c.grid.z = gz;
    c.block.x = bx;
    c.block.y = by;
    c.block.z = bz;
    c.dyn_shared = shared_bytes;
    c.params = buf;
    c.params_size = eo_px_kernel_param_bytes(fn->k);
    c.step_limit = dev.step_limit;
    c.trace_block = c.trace_thread = -1;
    eo_px_fault f;
    eo_status st = eo_px_run(fn->k, dev.heap, &c, &f);
    dev.clock_ms += 0.01;
    if (st == EO_ERR_ARG)
        return EO_CUDA_ERROR_INVALID_VALUE;
    if (st == EO_ERR_OOM)
        return EO_CUDA_ERROR_OUT_OF_MEMORY;
    if (st != EO_OK) {
        dev.fault = f;
        dev.pending = fault_result(f.kind);
    }
    return EO_CUDA_SUCCESS;
}

/* ---- memory ------------------------------------------------------------------------ */

static eo_cu_result sim_mem_alloc(eo_cu_deviceptr *p, size_t bytes)
{
    eo_cu_result r = check_ctx();
    if (r)
        return r;
    if (!p || bytes == 0)
        return EO_CUDA_ERROR_INVALID_VALUE;
    if (bytes > DEVICE_BYTES - dev.bytes)
        return EO_CUDA_ERROR_OUT_OF_MEMORY;
    if (dev.nallocs == dev.cap_allocs) {
        size_t nc = dev.cap_allocs ? dev.cap_allocs * 2 : 64;
        uint64_t *b = realloc(dev.alloc_base, nc * sizeof *b);
        if (b)
            dev.alloc_base = b;
        size_t *s = realloc(dev.alloc_size, nc * sizeof *s);
        if (s)
            dev.alloc_size = s;
        if (!b || !s)
            return EO_CUDA_ERROR_OUT_OF_MEMORY;
        dev.cap_allocs = nc;
    }
    uint64_t d;
    if (eo_px_heap_alloc(dev.heap, bytes, &d) != EO_OK)
        return EO_CUDA_ERROR_OUT_OF_MEMORY;
    dev.alloc_base[dev.nallocs] = d;
    dev.alloc_size[dev.nallocs++] = bytes;
    dev.bytes += bytes;
    *p = d;
    return EO_CUDA_SUCCESS;
}

static eo_cu_result sim_mem_free(eo_cu_deviceptr p)
{
    eo_cu_result r = sync_point();
    if (r)
        return r;
    for (size_t i = 0; i < dev.nallocs; i++)
        if (dev.alloc_base[i] == p) {
            eo_px_heap_release(dev.heap, p);
            dev.bytes -= dev.alloc_size[i];
            dev.alloc_base[i] = dev.alloc_base[--dev.nallocs];
            dev.alloc_size[i] = dev.alloc_size[dev.nallocs];
            return EO_CUDA_SUCCESS;
        }
    return EO_CUDA_ERROR_INVALID_VALUE;
}

static eo_cu_result sim_htod(eo_cu_deviceptr dst, const void *src, size_t n)
{
    eo_cu_result r = sync_point();
    if (r)
        return r;
    void *d = eo_px_heap_span(dev.heap, dst, n);
    if (!d || (!src && n))
        return EO_CUDA_ERROR_INVALID_VALUE;
    if (n)
        memcpy(d, src, n);
    dev.clock_ms += (double)n * 1e-7;
    return EO_CUDA_SUCCESS;
}

static eo_cu_result sim_dtoh(void *dst, eo_cu_deviceptr src, size_t n)
{
    eo_cu_result r = sync_point();
    if (r)
        return r;
    const void *s = eo_px_heap_span(dev.heap, src, n);
    if (!s || (!dst && n))
        return EO_CUDA_ERROR_INVALID_VALUE;
    if (n)
        memcpy(dst, s, n);
    dev.clock_ms += (double)n * 1e-7;
    return EO_CUDA_SUCCESS;
}

static eo_cu_result sim_dtod(eo_cu_deviceptr dst, eo_cu_deviceptr src, size_t n)
{
    eo_cu_result r = sync_point();
    if (r)
        return r;
    void *d = eo_px_heap_span(dev.heap, dst, n);
    const void *s = eo_px_heap_span(dev.heap, src, n);
    if (!d || !s)
        return EO_CUDA_ERROR_INVALID_VALUE;
    if (n)
        memmove(d, s, n);
    return EO_CUDA_SUCCESS;
}

static eo_cu_result sim_memset32(eo_cu_deviceptr dst, unsigned value, size_t count)
{
    eo_cu_result r = sync_point();
    if (r)
        return r;
    if (dst % 4 || count > SIZE_MAX / 4)
        return EO_CUDA_ERROR_INVALID_VALUE;
    unsigned char *d = eo_px_heap_span(dev.heap, dst, count * 4);
    if (!d)
        return EO_CUDA_ERROR_INVALID_VALUE;
    uint32_t v = value;
    for (size_t i = 0; i < count; i++)
        memcpy(d + i * 4, &v, 4);
    return EO_CUDA_SUCCESS;
}

/* ---- events ------------------------------------------------------------------------- */

static eo_cu_result sim_event_create(eo_cu_event *ev, unsigned flags)
{
    eo_cu_result r = check_ctx();
    if (r)
        return r;
    (void)flags;
    if (!ev)
        return EO_CUDA_ERROR_INVALID_VALUE;
    if (dev.nevents == dev.cap_events) {
        int nc = dev.cap_events ? dev.cap_events * 2 : 8;
        eo_cu_event *q = realloc(dev.events, (size_t)nc * sizeof *q);
        if (!q)
            return EO_CUDA_ERROR_OUT_OF_MEMORY;
        dev.events = q;
        dev.cap_events = nc;
    }
    eo_cu_event e = calloc(1, sizeof *e);
    if (!e)
        return EO_CUDA_ERROR_OUT_OF_MEMORY;
    dev.events[dev.nevents++] = e;
    *ev = e;
    return EO_CUDA_SUCCESS;
}

static eo_cu_result sim_event_record(eo_cu_event ev, eo_cu_stream stream)
{
    eo_cu_result r = check_ctx();
    if (r)
        return r;
    if (find_event(ev) < 0 || stream)
        return EO_CUDA_ERROR_INVALID_HANDLE;
    dev.clock_ms += 0.001;
    ev->ms = dev.clock_ms;
    ev->recorded = 1;
    return EO_CUDA_SUCCESS;
}

static eo_cu_result sim_event_sync(eo_cu_event ev)
{
    eo_cu_result r = sync_point();
    if (r)
        return r;
    return find_event(ev) < 0 ? EO_CUDA_ERROR_INVALID_HANDLE : EO_CUDA_SUCCESS;
}

static eo_cu_result sim_event_elapsed(float *ms, eo_cu_event a, eo_cu_event b)
{
    eo_cu_result r = check_ctx();
    if (r)
        return r;
    if (!ms)
        return EO_CUDA_ERROR_INVALID_VALUE;
    if (find_event(a) < 0 || find_event(b) < 0)
        return EO_CUDA_ERROR_INVALID_HANDLE;
    if (!a->recorded || !b->recorded)
        return CU_NOT_READY;
    *ms = (float)(b->ms - a->ms);
    return EO_CUDA_SUCCESS;
}

static eo_cu_result sim_event_destroy(eo_cu_event ev)
{
    eo_cu_result r = check_ctx();
    if (r)
        return r;
    int i = find_event(ev);
    if (i < 0)
        return EO_CUDA_ERROR_INVALID_HANDLE;
    free(ev);
    dev.events[i] = dev.events[--dev.nevents];
    return EO_CUDA_SUCCESS;
}

/* ---- error names ---------------------------------------------------------------------- */

static const struct {
    int code;
    const char *name, *text;
} errors[] = {
    {EO_CUDA_SUCCESS, "CUDA_SUCCESS", "no error"},
    {EO_CUDA_ERROR_INVALID_VALUE, "CUDA_ERROR_INVALID_VALUE", "invalid argument"},
    {EO_CUDA_ERROR_OUT_OF_MEMORY, "CUDA_ERROR_OUT_OF_MEMORY", "out of memory"},
    {EO_CUDA_ERROR_NOT_INITIALIZED, "CUDA_ERROR_NOT_INITIALIZED", "initialization error"},
    {EO_CUDA_ERROR_NO_DEVICE, "CUDA_ERROR_NO_DEVICE", "no CUDA-capable device is detected"},
    {EO_CUDA_ERROR_INVALID_DEVICE, "CUDA_ERROR_INVALID_DEVICE", "invalid device ordinal"},
    {EO_CUDA_ERROR_INVALID_IMAGE, "CUDA_ERROR_INVALID_IMAGE", "device kernel image is invalid"},
    {EO_CUDA_ERROR_INVALID_CONTEXT, "CUDA_ERROR_INVALID_CONTEXT", "invalid device context"},
    {EO_CUDA_ERROR_INVALID_PTX, "CUDA_ERROR_INVALID_PTX", "a PTX JIT compilation failed"},
    {EO_CUDA_ERROR_INVALID_HANDLE, "CUDA_ERROR_INVALID_HANDLE", "invalid resource handle"},
    {EO_CUDA_ERROR_NOT_FOUND, "CUDA_ERROR_NOT_FOUND", "named symbol not found"},
    {CU_NOT_READY, "CUDA_ERROR_NOT_READY", "device not ready"},
    {EO_CUDA_ERROR_ILLEGAL_ADDRESS, "CUDA_ERROR_ILLEGAL_ADDRESS",
     "an illegal memory access was encountered"},
    {CU_LAUNCH_TIMEOUT, "CUDA_ERROR_LAUNCH_TIMEOUT", "the launch timed out and was terminated"},
    {CU_MISALIGNED_ADDRESS, "CUDA_ERROR_MISALIGNED_ADDRESS", "misaligned address"},
    {EO_CUDA_ERROR_LAUNCH_FAILED, "CUDA_ERROR_LAUNCH_FAILED", "unspecified launch failure"},
    {EO_CUDA_ERROR_NOT_SUPPORTED, "CUDA_ERROR_NOT_SUPPORTED", "operation not supported"},
    {EO_CUDA_ERROR_UNKNOWN, "CUDA_ERROR_UNKNOWN", "unknown error"},
};

static eo_cu_result lookup_error(eo_cu_result e, const char **str, int text)
{
    if (!str)
        return EO_CUDA_ERROR_INVALID_VALUE;
    for (size_t i = 0; i < sizeof errors / sizeof errors[0]; i++)
        if (errors[i].code == e) {
            *str = text ? errors[i].text : errors[i].name;
            return EO_CUDA_SUCCESS;
        }
    *str = NULL;
    return EO_CUDA_ERROR_INVALID_VALUE;
}

static eo_cu_result sim_error_name(eo_cu_result e, const char **s) { return lookup_error(e, s, 0); }
static eo_cu_result sim_error_string(eo_cu_result e, const char **s) { return lookup_error(e, s, 1); }

void eo_ptxsim_driver(eo_cuda_driver *d)
{
    memset(d, 0, sizeof *d);
    d->cuInit = sim_init;
    d->cuDriverGetVersion = sim_driver_version;
    d->cuDeviceGet = sim_device_get;
    d->cuDeviceGetCount = sim_device_count;
    d->cuDeviceGetAttribute = sim_device_attribute;
    d->cuDeviceGetName = sim_device_name;
    d->cuDeviceTotalMem = sim_total_mem;
    d->cuDevicePrimaryCtxRetain = sim_ctx_retain;
    d->cuDevicePrimaryCtxRelease = sim_ctx_release;
    d->cuCtxSetCurrent = sim_ctx_set_current;
    d->cuCtxSynchronize = sim_ctx_sync;
    d->cuModuleLoadDataEx = sim_module_load;
    d->cuModuleUnload = sim_module_unload;
    d->cuModuleGetFunction = sim_module_function;
    d->cuFuncGetParamInfo = sim_param_info;
    d->cuFuncGetAttribute = sim_func_attribute;
    d->cuLaunchKernel = sim_launch;
    d->cuMemAlloc = sim_mem_alloc;
    d->cuMemFree = sim_mem_free;
    d->cuMemcpyHtoD = sim_htod;
    d->cuMemcpyDtoH = sim_dtoh;
    d->cuMemcpyDtoD = sim_dtod;
    d->cuMemsetD32 = sim_memset32;
    d->cuEventCreate = sim_event_create;
    d->cuEventRecord = sim_event_record;
    d->cuEventSynchronize = sim_event_sync;
    d->cuEventElapsedTime = sim_event_elapsed;
    d->cuEventDestroy = sim_event_destroy;
    d->cuGetErrorName = sim_error_name;
    d->cuGetErrorString = sim_error_string;
    d->lib = NULL;
}
