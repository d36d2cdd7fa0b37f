/* tools/ptxsim/driver.c — the CUDA driver-API double (see
 * tools/ptxsim/driver.h for what it promises).
 *
 * Why model the driver's error behaviour so closely (deferred faults,
 * poisoned context, validated handles, a current context per thread):
 * the CUDA backend's own error handling is code too, and the only way to
 * test it without a GPU is for the double to fail the way the real
 * driver fails. A backend that checks cuLaunchKernel's status but never
 * the next synchronisation's would pass against a double that reported
 * faults at launch, and then lose the error on a real GPU; a backend that
 * forgets to make its context current before a call would pass against a
 * double with one global context, and then launch into another device.
 *
 * Handles (contexts, modules, functions, events, streams) point to
 * structs defined here; every handle passed in is looked up in the
 * current device's lists before it is used, so a stale or foreign handle
 * is CUDA_ERROR_INVALID_HANDLE rather than a crash.
 *
 * Locking: one mutex, taken by every entry point for its whole duration
 * (the LOCKED wrappers at the end of the file), so the functions that do
 * the work, named do_*, never see another thread. */
#include <pthread.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include "alloc/checked.h"
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

/* What cuDeviceTotalMem reports: 4 GiB, or 1 GiB where size_t is 32 bits
 * (device memory is host memory here, and 4 GiB does not even fit the
 * type: (size_t)4 << 30 would be 0 and refuse every allocation). */
#if SIZE_MAX > 0xffffffffu
#define DEVICE_BYTES ((size_t)4 << 30)
#else
#define DEVICE_BYTES ((size_t)1 << 30)
#endif
/* Device i hands out addresses from EO_PX_GLOBAL_BASE + i * DEVICE_SPAN:
 * 1 TiB apart, far more than a test ever allocates over a context (256
 * MiB on a 32-bit host, see ptxsim.h). */
#define DEVICE_SPAN EO_PX_DEVICE_SPAN

/* A primary context; which device it belongs to is its index in
 * `contexts` (they never move, so a thread's current context stays a
 * valid pointer whatever happens to the device). */
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

struct eo_cu_stream_st {
    unsigned flags;
};

/* The handles of one kind a context has given out (modules, events,
 * streams): looked up before any is used, so a foreign one is refused. */
typedef struct handles {
    void **at;
    int n, cap;
} handles;

/* One fake device. All zeros is a device whose primary context was never
 * retained (or was released: that frees everything, as on a GPU). */
typedef struct sim_device {
    int retained;           /* primary context reference count */
    eo_px_heap *heap;
    size_t bytes;           /* bytes allocated */
    handles modules, events, streams;
    eo_cu_result pending;   /* a fault not yet reported */
    eo_cu_result sticky;    /* reported: the context is poisoned */
    eo_px_fault_kind inject; /* the next launch faults with this */
    /* Host-side bookkeeping of allocation sizes, for cuMemFree. */
    uint64_t *alloc_base;
    size_t *alloc_size;
    size_t nallocs, cap_allocs;
} sim_device;

static struct eo_cu_context_st contexts[EO_PTXSIM_MAX_DEVICES];

/* The driver. Zero is the state before cuInit, with one device. */
static struct {
    int initialised;
    int ndevices;           /* 0 stands for the default, 1 */
    sim_device dev[EO_PTXSIM_MAX_DEVICES];
    eo_px_fault fault;      /* the last kernel fault, any device */
    double clock_ms;
    uint64_t step_limit;
} sim;

/* The calling thread's current context (NULL: none), as in the driver. */
static _Thread_local struct eo_cu_context_st *current;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static int device_count(void) { return sim.ndevices ? sim.ndevices : 1; }
static int valid_device(eo_cu_device d) { return d >= 0 && d < device_count(); }

/* ---- state checks ------------------------------------------------------------ */

/* Device-level calls: the driver must be initialised. */
static eo_cu_result check_alive(void)
{
    return sim.initialised ? EO_CUDA_SUCCESS : EO_CUDA_ERROR_NOT_INITIALIZED;
}

/* Calls that work on the current context: initialised, a context current
 * on this thread and retained, not poisoned. *out is its device. */
static eo_cu_result check_ctx(sim_device **out)
{
    *out = NULL;
    eo_cu_result r = check_alive();
    if (r)
        return r;
    if (!current)
        return EO_CUDA_ERROR_INVALID_CONTEXT;
    sim_device *d = &sim.dev[current - contexts];
    if (d->sticky)
        return d->sticky;
    if (!d->retained)
        return EO_CUDA_ERROR_INVALID_CONTEXT;
    *out = d;
    return EO_CUDA_SUCCESS;
}

/* Synchronising calls: a fault from an earlier launch on the current
 * device surfaces here and poisons its context. */
static eo_cu_result sync_point(sim_device **out)
{
    eo_cu_result r = check_ctx(out);
    if (r)
        return r;
    sim_device *d = *out;
    if (d->pending) {
        d->sticky = d->pending;
        d->pending = 0;
        *out = NULL;
        return d->sticky;
    }
    return EO_CUDA_SUCCESS;
}

/* Index of h in the list, -1 if it is not there (NULL never is). */
static int handle_find(const handles *l, const void *h)
{
    for (int i = 0; h && i < l->n; i++)
        if (l->at[i] == h)
            return i;
    return -1;
}

/* Append h; 0 when out of memory (then h is not in the list). */
static int handle_add(handles *l, void *h)
{
    if (l->n == l->cap) {
        size_t nc;
        void **q = eo_grow_overflows((size_t)l->cap, (size_t)l->n + 1, 8, sizeof *q, &nc) ||
                           nc > INT_MAX
                       ? NULL
                       : realloc(l->at, nc * sizeof *q);
        if (!q)
            return 0;
        l->at = q;
        l->cap = (int)nc;
    }
    l->at[l->n++] = h;
    return 1;
}

static void handle_remove(handles *l, int i) { l->at[i] = l->at[--l->n]; }

static struct eo_cu_function_st *find_function(const sim_device *d, eo_cu_function f)
{
    for (int i = 0; i < d->modules.n; i++) {
        eo_cu_module m = d->modules.at[i];
        for (int j = 0; j < m->nfns; j++)
            if (&m->fns[j] == f)
                return f;
    }
    return NULL;
}

/* NULL (the legacy stream) or one of this context's streams. */
static int stream_ok(const sim_device *d, eo_cu_stream s)
{
    return !s || handle_find(&d->streams, s) >= 0;
}

static void free_module(eo_cu_module m)
{
    eo_px_module_free(m->m);
    free(m->fns);
    free(m);
}

/* What releasing the last reference to a primary context does on a GPU:
 * everything in the context goes, including a sticky error. */
static void destroy_device(sim_device *d)
{
    for (int i = 0; i < d->modules.n; i++)
        free_module(d->modules.at[i]);
    for (int i = 0; i < d->events.n; i++)
        free(d->events.at[i]);
    for (int i = 0; i < d->streams.n; i++)
        free(d->streams.at[i]);
    free(d->modules.at);
    free(d->events.at);
    free(d->streams.at);
    eo_px_heap_free(d->heap);
    free(d->alloc_base);
    free(d->alloc_size);
    memset(d, 0, sizeof *d);
}

void eo_ptxsim_driver_reset(void)
{
    pthread_mutex_lock(&lock);
    for (int i = 0; i < EO_PTXSIM_MAX_DEVICES; i++)
        destroy_device(&sim.dev[i]);
    uint64_t limit = sim.step_limit;
    double clock = sim.clock_ms;
    memset(&sim, 0, sizeof sim);
    sim.step_limit = limit;
    sim.clock_ms = clock; /* time never goes backwards */
    current = NULL;
    pthread_mutex_unlock(&lock);
}

eo_status eo_ptxsim_driver_set_devices(int n)
{
    if (n < 1 || n > EO_PTXSIM_MAX_DEVICES)
        return EO_ERR_ARG;
    eo_status s = EO_OK;
    pthread_mutex_lock(&lock);
    for (int i = 0; i < EO_PTXSIM_MAX_DEVICES; i++)
        if (sim.dev[i].retained)
            s = EO_ERR_STATE;
    if (s == EO_OK)
        sim.ndevices = n;
    pthread_mutex_unlock(&lock);
    return s;
}

eo_status eo_ptxsim_inject_fault(int device, eo_px_fault_kind kind)
{
    if (device < 0 || device >= EO_PTXSIM_MAX_DEVICES || kind < 0 || kind >= EO_PX_FAULT_COUNT)
        return EO_ERR_ARG;
    pthread_mutex_lock(&lock);
    eo_status s = device < device_count() ? EO_OK : EO_ERR_ARG;
    if (s == EO_OK)
        sim.dev[device].inject = kind;
    pthread_mutex_unlock(&lock);
    return s;
}

const eo_px_fault *eo_ptxsim_last_fault(void) { return &sim.fault; }

size_t eo_ptxsim_live_allocations(void)
{
    size_t n = 0;
    pthread_mutex_lock(&lock);
    for (int i = 0; i < EO_PTXSIM_MAX_DEVICES; i++)
        n += eo_px_heap_live_count(sim.dev[i].heap);
    pthread_mutex_unlock(&lock);
    return n;
}

void *eo_ptxsim_device_bytes(uint64_t d, size_t n)
{
    void *p = NULL;
    pthread_mutex_lock(&lock);
    for (int i = 0; i < EO_PTXSIM_MAX_DEVICES && !p; i++)
        p = eo_px_heap_span(sim.dev[i].heap, d, n);
    pthread_mutex_unlock(&lock);
    return p;
}

void eo_ptxsim_set_step_limit(uint64_t steps)
{
    pthread_mutex_lock(&lock);
    sim.step_limit = steps;
    pthread_mutex_unlock(&lock);
}

/* ---- initialisation, device, context -------------------------------------------- */

static eo_cu_result do_init(unsigned flags)
{
    if (flags)
        return EO_CUDA_ERROR_INVALID_VALUE;
    sim.initialised = 1;
    return EO_CUDA_SUCCESS;
}

static eo_cu_result do_driver_version(int *v)
{
    if (!v)
        return EO_CUDA_ERROR_INVALID_VALUE;
    *v = 12080;
    return EO_CUDA_SUCCESS;
}

static eo_cu_result do_device_get(eo_cu_device *d, int ordinal)
{
    eo_cu_result r = check_alive();
    if (r)
        return r;
    if (!d)
        return EO_CUDA_ERROR_INVALID_VALUE;
    if (!valid_device(ordinal))
        return EO_CUDA_ERROR_INVALID_DEVICE;
    *d = ordinal;
    return EO_CUDA_SUCCESS;
}

static eo_cu_result do_device_count(int *n)
{
    eo_cu_result r = check_alive();
    if (r)
        return r;
    if (!n)
        return EO_CUDA_ERROR_INVALID_VALUE;
    *n = device_count();
    return EO_CUDA_SUCCESS;
}

static eo_cu_result do_device_attribute(int *v, int attr, eo_cu_device d)
{
    eo_cu_result r = check_alive();
    if (r)
        return r;
    if (!v)
        return EO_CUDA_ERROR_INVALID_VALUE;
    if (!valid_device(d))
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

static eo_cu_result do_device_name(char *name, int len, eo_cu_device d)
{
    eo_cu_result r = check_alive();
    if (r)
        return r;
    if (!name || len <= 0)
        return EO_CUDA_ERROR_INVALID_VALUE;
    if (!valid_device(d))
        return EO_CUDA_ERROR_INVALID_DEVICE;
    /* Device 0 keeps the name it always had; the others say their number. */
    if (d == 0)
        snprintf(name, (size_t)len, "EveryO PTX interpreter (sm_80)");
    else
        snprintf(name, (size_t)len, "EveryO PTX interpreter #%d (sm_80)", d);
    return EO_CUDA_SUCCESS;
}

static eo_cu_result do_total_mem(size_t *bytes, eo_cu_device d)
{
    eo_cu_result r = check_alive();
    if (r)
        return r;
    if (!bytes)
        return EO_CUDA_ERROR_INVALID_VALUE;
    if (!valid_device(d))
        return EO_CUDA_ERROR_INVALID_DEVICE;
    *bytes = DEVICE_BYTES;
    return EO_CUDA_SUCCESS;
}

static eo_cu_result do_ctx_retain(eo_cu_context *ctx, eo_cu_device d)
{
    eo_cu_result r = check_alive();
    if (r)
        return r;
    if (!ctx)
        return EO_CUDA_ERROR_INVALID_VALUE;
    if (!valid_device(d))
        return EO_CUDA_ERROR_INVALID_DEVICE;
    sim_device *sd = &sim.dev[d];
    if (sd->sticky)
        return sd->sticky; /* a poisoned context stays so until released */
    if (!sd->heap && !(sd->heap = eo_px_heap_new_at(EO_PX_GLOBAL_BASE + (uint64_t)d * DEVICE_SPAN)))
        return EO_CUDA_ERROR_OUT_OF_MEMORY;
    sd->retained++;
    *ctx = &contexts[d];
    return EO_CUDA_SUCCESS;
}

/* Not gated by a sticky error: releasing is how a program recovers. */
static eo_cu_result do_ctx_release(eo_cu_device d)
{
    if (!sim.initialised)
        return EO_CUDA_ERROR_NOT_INITIALIZED;
    if (!valid_device(d))
        return EO_CUDA_ERROR_INVALID_DEVICE;
    sim_device *sd = &sim.dev[d];
    if (sd->retained == 0)
        return EO_CUDA_ERROR_INVALID_CONTEXT;
    if (--sd->retained == 0)
        destroy_device(sd);
    return EO_CUDA_SUCCESS;
}

/* Only this thread's binding changes. Not gated by a sticky error (the
 * next call in the context reports it). */
static eo_cu_result do_ctx_set_current(eo_cu_context ctx)
{
    eo_cu_result r = check_alive();
    if (r)
        return r;
    if (ctx) {
        int known = 0;
        for (int i = 0; i < device_count(); i++)
            known |= ctx == &contexts[i];
        if (!known || !sim.dev[ctx - contexts].retained)
            return EO_CUDA_ERROR_INVALID_CONTEXT;
    }
    current = ctx;
    return EO_CUDA_SUCCESS;
}

static eo_cu_result do_ctx_sync(void)
{
    sim_device *d;
    return sync_point(&d);
}

/* ---- streams ---------------------------------------------------------------------
 * Work runs inside the call that queues it, so a stream is only a handle
 * to validate; synchronising one is synchronising the device. */

static eo_cu_result do_stream_create(eo_cu_stream *s, unsigned flags)
{
    sim_device *d;
    eo_cu_result r = check_ctx(&d);
    if (r)
        return r;
    if (!s || flags > EO_CU_STREAM_NON_BLOCKING)
        return EO_CUDA_ERROR_INVALID_VALUE;
    eo_cu_stream st = calloc(1, sizeof *st);
    if (!st || !handle_add(&d->streams, st)) {
        free(st);
        return EO_CUDA_ERROR_OUT_OF_MEMORY;
    }
    st->flags = flags;
    *s = st;
    return EO_CUDA_SUCCESS;
}

static eo_cu_result do_stream_destroy(eo_cu_stream s)
{
    sim_device *d;
    eo_cu_result r = check_ctx(&d);
    if (r)
        return r;
    int i = handle_find(&d->streams, s);
    if (i < 0)
        return EO_CUDA_ERROR_INVALID_HANDLE;
    free(s);
    handle_remove(&d->streams, i);
    return EO_CUDA_SUCCESS;
}

static eo_cu_result do_stream_sync(eo_cu_stream s)
{
    sim_device *d;
    eo_cu_result r = check_ctx(&d);
    if (r)
        return r;
    if (!stream_ok(d, s))
        return EO_CUDA_ERROR_INVALID_HANDLE;
    return sync_point(&d);
}

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

static eo_cu_result do_module_load(eo_cu_module *out, const void *image, unsigned nopt,
                                   int *options, void **values)
{
    sim_device *dev;
    eo_cu_result r = check_ctx(&dev);
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
    if (!m || !m->fns || !handle_add(&dev->modules, m)) {
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
    snprintf(log, sizeof log, "ptxsim: loaded %d kernel(s)", n);
    write_log(nopt, options, values, EO_CU_JIT_INFO_LOG_BUFFER,
              EO_CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES, log);
    write_log(nopt, options, values, EO_CU_JIT_ERROR_LOG_BUFFER,
              EO_CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES, "");
    *out = m;
    return EO_CUDA_SUCCESS;
}

static eo_cu_result do_module_unload(eo_cu_module m)
{
    sim_device *dev;
    eo_cu_result r = check_ctx(&dev);
    if (r)
        return r;
    int i = handle_find(&dev->modules, m);
    if (i < 0)
        return EO_CUDA_ERROR_INVALID_HANDLE;
    free_module(m);
    handle_remove(&dev->modules, i);
    return EO_CUDA_SUCCESS;
}

static eo_cu_result do_module_function(eo_cu_function *fn, eo_cu_module m, const char *name)
{
    sim_device *dev;
    eo_cu_result r = check_ctx(&dev);
    if (r)
        return r;
    if (!fn || !name)
        return EO_CUDA_ERROR_INVALID_VALUE;
    if (handle_find(&dev->modules, m) < 0)
        return EO_CUDA_ERROR_INVALID_HANDLE;
    for (int i = 0; i < m->nfns; i++)
        if (strcmp(eo_px_kernel_name(m->fns[i].k), name) == 0) {
            *fn = &m->fns[i];
            return EO_CUDA_SUCCESS;
        }
    return EO_CUDA_ERROR_NOT_FOUND;
}

static eo_cu_result do_param_info(eo_cu_function fn, size_t index, size_t *offset, size_t *size)
{
    sim_device *dev;
    eo_cu_result r = check_ctx(&dev);
    if (r)
        return r;
    if (!find_function(dev, fn))
        return EO_CUDA_ERROR_INVALID_HANDLE;
    if (index >= (size_t)eo_px_kernel_param_count(fn->k))
        return EO_CUDA_ERROR_INVALID_VALUE;
    eo_px_kernel_param(fn->k, (int)index, offset, size, NULL);
    return EO_CUDA_SUCCESS;
}

static eo_cu_result do_func_attribute(int *v, int attr, eo_cu_function fn)
{
    sim_device *dev;
    eo_cu_result r = check_ctx(&dev);
    if (r)
        return r;
    if (!v)
        return EO_CUDA_ERROR_INVALID_VALUE;
    if (!find_function(dev, fn))
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

static eo_cu_result do_launch(eo_cu_function fn, unsigned gx, unsigned gy, unsigned gz,
                              unsigned bx, unsigned by, unsigned bz, unsigned shared_bytes,
                              eo_cu_stream stream, void **params, void **extra)
{
    sim_device *dev;
    eo_cu_result r = check_ctx(&dev);
    if (r)
        return r;
    if (!find_function(dev, fn) || !stream_ok(dev, stream))
        return EO_CUDA_ERROR_INVALID_HANDLE;
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
    if (dev->pending)
        return EO_CUDA_SUCCESS; /* queued behind a kernel that faulted: never runs */
    if (dev->inject != EO_PX_FAULT_NONE) { /* eo_ptxsim_inject_fault: fault, do not run */
        memset(&sim.fault, 0, sizeof sim.fault);
        sim.fault.kind = dev->inject;
        snprintf(sim.fault.kernel, sizeof sim.fault.kernel, "%s", eo_px_kernel_name(fn->k));
        snprintf(sim.fault.msg, sizeof sim.fault.msg,
                 "kernel %s: %s fault injected by eo_ptxsim_inject_fault (device %d)",
                 sim.fault.kernel, eo_px_fault_name(dev->inject), (int)(dev - sim.dev));
        dev->pending = fault_result(dev->inject);
        dev->inject = EO_PX_FAULT_NONE;
        return EO_CUDA_SUCCESS;
    }
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
    c.step_limit = sim.step_limit;
    c.trace_block = c.trace_thread = -1;
    eo_px_counters counters; /* tools/ptxsim/profile.c keeps them */
    memset(&counters, 0, sizeof counters);
    c.counters = &counters;
    c.sample_blocks = eo_ptxsim_sample();
    eo_px_fault f;
    eo_status st = eo_px_run(fn->k, dev->heap, &c, &f);
    eo_ptxsim_counters_record(eo_px_kernel_name(fn->k), &counters);
    sim.clock_ms += 0.01;
    if (st == EO_ERR_ARG)
        return EO_CUDA_ERROR_INVALID_VALUE;
    if (st == EO_ERR_OOM)
        return EO_CUDA_ERROR_OUT_OF_MEMORY;
    if (st != EO_OK) {
        sim.fault = f;
        dev->pending = fault_result(f.kind);
    }
    return EO_CUDA_SUCCESS;
}

/* ---- memory ------------------------------------------------------------------------ */

static eo_cu_result do_mem_alloc(eo_cu_deviceptr *p, size_t bytes)
{
    sim_device *dev;
    eo_cu_result r = check_ctx(&dev);
    if (r)
        return r;
    if (!p || bytes == 0)
        return EO_CUDA_ERROR_INVALID_VALUE;
    if (bytes > DEVICE_BYTES - dev->bytes)
        return EO_CUDA_ERROR_OUT_OF_MEMORY;
    if (dev->nallocs == dev->cap_allocs) {
        size_t nc;
        if (eo_grow_overflows(dev->cap_allocs, dev->nallocs + 1, 64, sizeof(uint64_t), &nc))
            return EO_CUDA_ERROR_OUT_OF_MEMORY;
        uint64_t *b = realloc(dev->alloc_base, nc * sizeof *b);
        if (b)
            dev->alloc_base = b;
        size_t *s = realloc(dev->alloc_size, nc * sizeof *s);
        if (s)
            dev->alloc_size = s;
        if (!b || !s)
            return EO_CUDA_ERROR_OUT_OF_MEMORY;
        dev->cap_allocs = nc;
    }
    uint64_t d;
    if (eo_px_heap_alloc(dev->heap, bytes, &d) != EO_OK)
        return EO_CUDA_ERROR_OUT_OF_MEMORY;
    dev->alloc_base[dev->nallocs] = d;
    dev->alloc_size[dev->nallocs++] = bytes;
    dev->bytes += bytes;
    *p = d;
    return EO_CUDA_SUCCESS;
}

static eo_cu_result do_mem_free(eo_cu_deviceptr p)
{
    sim_device *dev;
    eo_cu_result r = sync_point(&dev);
    if (r)
        return r;
    for (size_t i = 0; i < dev->nallocs; i++)
        if (dev->alloc_base[i] == p) {
            eo_px_heap_release(dev->heap, p);
            dev->bytes -= dev->alloc_size[i];
            dev->alloc_base[i] = dev->alloc_base[--dev->nallocs];
            dev->alloc_size[i] = dev->alloc_size[dev->nallocs];
            return EO_CUDA_SUCCESS;
        }
    return EO_CUDA_ERROR_INVALID_VALUE;
}

/* The copies and the memset, once the call has decided they run. Device
 * ranges must lie inside one allocation of the current device. */
static eo_cu_result copy_htod(sim_device *dev, eo_cu_deviceptr dst, const void *src, size_t n,
                              int run)
{
    void *d = eo_px_heap_span(dev->heap, dst, n);
    if (!d || (!src && n))
        return EO_CUDA_ERROR_INVALID_VALUE;
    if (run && n)
        memcpy(d, src, n);
    sim.clock_ms += (double)n * 1e-7;
    return EO_CUDA_SUCCESS;
}

static eo_cu_result copy_dtoh(sim_device *dev, void *dst, eo_cu_deviceptr src, size_t n, int run)
{
    const void *s = eo_px_heap_span(dev->heap, src, n);
    if (!s || (!dst && n))
        return EO_CUDA_ERROR_INVALID_VALUE;
    if (run && n)
        memcpy(dst, s, n);
    sim.clock_ms += (double)n * 1e-7;
    return EO_CUDA_SUCCESS;
}

static eo_cu_result copy_dtod(sim_device *dev, eo_cu_deviceptr dst, eo_cu_deviceptr src, size_t n,
                              int run)
{
    void *d = eo_px_heap_span(dev->heap, dst, n);
    const void *s = eo_px_heap_span(dev->heap, src, n);
    if (!d || !s)
        return EO_CUDA_ERROR_INVALID_VALUE;
    if (run && n)
        memmove(d, s, n);
    return EO_CUDA_SUCCESS;
}

static eo_cu_result set32(sim_device *dev, eo_cu_deviceptr dst, unsigned value, size_t count,
                          int run)
{
    if (dst % 4 || count > SIZE_MAX / 4)
        return EO_CUDA_ERROR_INVALID_VALUE;
    unsigned char *d = eo_px_heap_span(dev->heap, dst, count * 4);
    if (!d)
        return EO_CUDA_ERROR_INVALID_VALUE;
    uint32_t v = value;
    for (size_t i = 0; run && i < count; i++)
        memcpy(d + i * 4, &v, 4);
    return EO_CUDA_SUCCESS;
}

/* The synchronous forms: a synchronising call, then the work. */
static eo_cu_result do_htod(eo_cu_deviceptr dst, const void *src, size_t n)
{
    sim_device *dev;
    eo_cu_result r = sync_point(&dev);
    return r ? r : copy_htod(dev, dst, src, n, 1);
}

static eo_cu_result do_dtoh(void *dst, eo_cu_deviceptr src, size_t n)
{
    sim_device *dev;
    eo_cu_result r = sync_point(&dev);
    return r ? r : copy_dtoh(dev, dst, src, n, 1);
}

static eo_cu_result do_dtod(eo_cu_deviceptr dst, eo_cu_deviceptr src, size_t n)
{
    sim_device *dev;
    eo_cu_result r = sync_point(&dev);
    return r ? r : copy_dtod(dev, dst, src, n, 1);
}

static eo_cu_result do_memset32(eo_cu_deviceptr dst, unsigned value, size_t count)
{
    sim_device *dev;
    eo_cu_result r = sync_point(&dev);
    return r ? r : set32(dev, dst, value, count, 1);
}

/* The stream-ordered forms: like a launch, they return success and the
 * work is dropped when a kernel queued before them faulted (the fault
 * surfaces at the next synchronisation). */
static eo_cu_result enqueue(sim_device **dev, eo_cu_stream s)
{
    eo_cu_result r = check_ctx(dev);
    if (r)
        return r;
    return stream_ok(*dev, s) ? EO_CUDA_SUCCESS : EO_CUDA_ERROR_INVALID_HANDLE;
}

static eo_cu_result do_htod_async(eo_cu_deviceptr dst, const void *src, size_t n, eo_cu_stream s)
{
    sim_device *dev;
    eo_cu_result r = enqueue(&dev, s);
    return r ? r : copy_htod(dev, dst, src, n, !dev->pending);
}

static eo_cu_result do_dtoh_async(void *dst, eo_cu_deviceptr src, size_t n, eo_cu_stream s)
{
    sim_device *dev;
    eo_cu_result r = enqueue(&dev, s);
    return r ? r : copy_dtoh(dev, dst, src, n, !dev->pending);
}

static eo_cu_result do_dtod_async(eo_cu_deviceptr dst, eo_cu_deviceptr src, size_t n,
                                  eo_cu_stream s)
{
    sim_device *dev;
    eo_cu_result r = enqueue(&dev, s);
    return r ? r : copy_dtod(dev, dst, src, n, !dev->pending);
}

static eo_cu_result do_memset32_async(eo_cu_deviceptr dst, unsigned value, size_t count,
                                      eo_cu_stream s)
{
    sim_device *dev;
    eo_cu_result r = enqueue(&dev, s);
    return r ? r : set32(dev, dst, value, count, !dev->pending);
}

/* ---- events ------------------------------------------------------------------------- */

static eo_cu_result do_event_create(eo_cu_event *ev, unsigned flags)
{
    sim_device *dev;
    eo_cu_result r = check_ctx(&dev);
    if (r)
        return r;
    (void)flags;
    if (!ev)
        return EO_CUDA_ERROR_INVALID_VALUE;
    eo_cu_event e = calloc(1, sizeof *e);
    if (!e || !handle_add(&dev->events, e)) {
        free(e);
        return EO_CUDA_ERROR_OUT_OF_MEMORY;
    }
    *ev = e;
    return EO_CUDA_SUCCESS;
}

static eo_cu_result do_event_record(eo_cu_event ev, eo_cu_stream stream)
{
    sim_device *dev;
    eo_cu_result r = check_ctx(&dev);
    if (r)
        return r;
    if (handle_find(&dev->events, ev) < 0 || !stream_ok(dev, stream))
        return EO_CUDA_ERROR_INVALID_HANDLE;
    sim.clock_ms += 0.001;
    ev->ms = sim.clock_ms;
    ev->recorded = 1;
    return EO_CUDA_SUCCESS;
}

static eo_cu_result do_event_sync(eo_cu_event ev)
{
    sim_device *dev;
    eo_cu_result r = sync_point(&dev);
    if (r)
        return r;
    return handle_find(&dev->events, ev) < 0 ? EO_CUDA_ERROR_INVALID_HANDLE : EO_CUDA_SUCCESS;
}

static eo_cu_result do_event_elapsed(float *ms, eo_cu_event a, eo_cu_event b)
{
    sim_device *dev;
    eo_cu_result r = check_ctx(&dev);
    if (r)
        return r;
    if (!ms)
        return EO_CUDA_ERROR_INVALID_VALUE;
    if (handle_find(&dev->events, a) < 0 || handle_find(&dev->events, b) < 0)
        return EO_CUDA_ERROR_INVALID_HANDLE;
    if (!a->recorded || !b->recorded)
        return CU_NOT_READY;
    *ms = (float)(b->ms - a->ms);
    return EO_CUDA_SUCCESS;
}

static eo_cu_result do_event_destroy(eo_cu_event ev)
{
    sim_device *dev;
    eo_cu_result r = check_ctx(&dev);
    if (r)
        return r;
    int i = handle_find(&dev->events, ev);
    if (i < 0)
        return EO_CUDA_ERROR_INVALID_HANDLE;
    free(ev);
    handle_remove(&dev->events, i);
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

/* ---- the table: every entry point under the lock ---------------------------------- */

#define LOCKED(call)                                \
    do {                                            \
        pthread_mutex_lock(&lock);                  \
        eo_cu_result locked_r_ = (call);            \
        pthread_mutex_unlock(&lock);                \
        return locked_r_;                           \
    } while (0)

static eo_cu_result sim_init(unsigned f) { LOCKED(do_init(f)); }
static eo_cu_result sim_driver_version(int *v) { LOCKED(do_driver_version(v)); }
static eo_cu_result sim_device_get(eo_cu_device *d, int i) { LOCKED(do_device_get(d, i)); }
static eo_cu_result sim_device_count(int *n) { LOCKED(do_device_count(n)); }
static eo_cu_result sim_device_attribute(int *v, int a, eo_cu_device d) { LOCKED(do_device_attribute(v, a, d)); }
static eo_cu_result sim_device_name(char *s, int n, eo_cu_device d) { LOCKED(do_device_name(s, n, d)); }
static eo_cu_result sim_total_mem(size_t *b, eo_cu_device d) { LOCKED(do_total_mem(b, d)); }
static eo_cu_result sim_ctx_retain(eo_cu_context *c, eo_cu_device d) { LOCKED(do_ctx_retain(c, d)); }
static eo_cu_result sim_ctx_release(eo_cu_device d) { LOCKED(do_ctx_release(d)); }
static eo_cu_result sim_ctx_set_current(eo_cu_context c) { LOCKED(do_ctx_set_current(c)); }
static eo_cu_result sim_ctx_sync(void) { LOCKED(do_ctx_sync()); }
static eo_cu_result sim_stream_create(eo_cu_stream *s, unsigned f) { LOCKED(do_stream_create(s, f)); }
static eo_cu_result sim_stream_destroy(eo_cu_stream s) { LOCKED(do_stream_destroy(s)); }
static eo_cu_result sim_stream_sync(eo_cu_stream s) { LOCKED(do_stream_sync(s)); }
static eo_cu_result sim_module_load(eo_cu_module *m, const void *img, unsigned n, int *o, void **v)
{
    LOCKED(do_module_load(m, img, n, o, v));
}
static eo_cu_result sim_module_unload(eo_cu_module m) { LOCKED(do_module_unload(m)); }
static eo_cu_result sim_module_function(eo_cu_function *f, eo_cu_module m, const char *name)
{
    LOCKED(do_module_function(f, m, name));
}
static eo_cu_result sim_param_info(eo_cu_function f, size_t i, size_t *off, size_t *size)
{
    LOCKED(do_param_info(f, i, off, size));
}
static eo_cu_result sim_func_attribute(int *v, int a, eo_cu_function f) { LOCKED(do_func_attribute(v, a, f)); }
static eo_cu_result sim_launch(eo_cu_function f, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                               unsigned by, unsigned bz, unsigned shared, eo_cu_stream s,
                               void **params, void **extra)
{
    LOCKED(do_launch(f, gx, gy, gz, bx, by, bz, shared, s, params, extra));
}
static eo_cu_result sim_mem_alloc(eo_cu_deviceptr *p, size_t n) { LOCKED(do_mem_alloc(p, n)); }
static eo_cu_result sim_mem_free(eo_cu_deviceptr p) { LOCKED(do_mem_free(p)); }
static eo_cu_result sim_htod(eo_cu_deviceptr d, const void *s, size_t n) { LOCKED(do_htod(d, s, n)); }
static eo_cu_result sim_dtoh(void *d, eo_cu_deviceptr s, size_t n) { LOCKED(do_dtoh(d, s, n)); }
static eo_cu_result sim_dtod(eo_cu_deviceptr d, eo_cu_deviceptr s, size_t n) { LOCKED(do_dtod(d, s, n)); }
static eo_cu_result sim_memset32(eo_cu_deviceptr d, unsigned v, size_t n) { LOCKED(do_memset32(d, v, n)); }
static eo_cu_result sim_htod_async(eo_cu_deviceptr d, const void *s, size_t n, eo_cu_stream st)
{
    LOCKED(do_htod_async(d, s, n, st));
}
static eo_cu_result sim_dtoh_async(void *d, eo_cu_deviceptr s, size_t n, eo_cu_stream st)
{
    LOCKED(do_dtoh_async(d, s, n, st));
}
static eo_cu_result sim_dtod_async(eo_cu_deviceptr d, eo_cu_deviceptr s, size_t n, eo_cu_stream st)
{
    LOCKED(do_dtod_async(d, s, n, st));
}
static eo_cu_result sim_memset32_async(eo_cu_deviceptr d, unsigned v, size_t n, eo_cu_stream st)
{
    LOCKED(do_memset32_async(d, v, n, st));
}
static eo_cu_result sim_event_create(eo_cu_event *e, unsigned f) { LOCKED(do_event_create(e, f)); }
static eo_cu_result sim_event_record(eo_cu_event e, eo_cu_stream s) { LOCKED(do_event_record(e, s)); }
static eo_cu_result sim_event_sync(eo_cu_event e) { LOCKED(do_event_sync(e)); }
static eo_cu_result sim_event_elapsed(float *ms, eo_cu_event a, eo_cu_event b) { LOCKED(do_event_elapsed(ms, a, b)); }
static eo_cu_result sim_event_destroy(eo_cu_event e) { LOCKED(do_event_destroy(e)); }

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
    d->cuStreamCreate = sim_stream_create;
    d->cuStreamDestroy = sim_stream_destroy;
    d->cuStreamSynchronize = sim_stream_sync;
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
    d->cuMemcpyHtoDAsync = sim_htod_async;
    d->cuMemcpyDtoHAsync = sim_dtoh_async;
    d->cuMemcpyDtoDAsync = sim_dtod_async;
    d->cuMemsetD32Async = sim_memset32_async;
    d->cuEventCreate = sim_event_create;
    d->cuEventRecord = sim_event_record;
    d->cuEventSynchronize = sim_event_sync;
    d->cuEventElapsedTime = sim_event_elapsed;
    d->cuEventDestroy = sim_event_destroy;
    d->cuGetErrorName = sim_error_name;
    d->cuGetErrorString = sim_error_string;
    d->lib = NULL;
}
