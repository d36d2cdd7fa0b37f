/* ops/cuda/device.h — the CUDA device: context, modules, device memory,
 * and host launchers with exactly the kernel signatures of ops/kernels.h.
 *
 * How a launcher finds its device: every kernel type of ops/kernels.h
 * ends with the execution handle (ops/exec.h), and the core passes its
 * context's handle, whose `cuda` member points at this struct. There is no
 * "current device" anywhere in the library: two contexts attached to two
 * devices interleave their ops freely, and detaching one cannot affect the
 * other. Each eo_cuda is driven by one host thread at a time (as a
 * context is), but not always the same one: the CUDA driver keeps its
 * "current context" per host thread, so every entry into the device
 * (each launcher, copy, memset, sync, alloc, free, close) first makes
 * this device's primary context current on the calling thread
 * (cuCtxSetCurrent, a thread-local store in the driver). Two contexts on
 * two devices, on one thread or on two, never launch into each other's
 * device.
 *
 * Ordering: the eo_cuda owns one stream (cuStreamCreate at open,
 * non-blocking: it never waits on the legacy NULL stream, which nothing
 * here uses). Every launch, device-to-device copy and memset is queued on
 * it in program order; a host<->device copy is queued on it and then
 * waited for, so the host buffer may be reused (upload) or is filled (download)
 * when the call returns; eo_cuda_sync waits for the stream.
 *
 * Errors: kernels never fail by contract (the core validates shapes), but
 * a launch can (driver error, a size beyond what the PTX indexes). A
 * launcher then records the FIRST failure in the eo_cuda (status plus a
 * message naming the kernel and the driver's error), skips every later
 * launch, and the core collects it after the op with eo_cuda_take_error().
 * Errors raised while a kernel runs (an illegal address) surface at the
 * next synchronising call: eo_cuda_sync() and the h2d/d2h copies report
 * them.
 *
 * Memory: eo_cuda_alloc_block() is one cuMemAlloc; the core builds an
 * eo_arena over the returned device address (the arena never dereferences
 * it), so steady-state training allocates no device memory either. All
 * pointers given to the launchers are device addresses in such blocks. */
#ifndef EO_CUDA_BACKEND_H
#define EO_CUDA_BACKEND_H

#include <stddef.h>
#include <stdint.h>
#include "alloc/status.h"
#include "ops/cuda/driver.h"
#include "ops/kernels.h"

/* Kernel ids, from ops/cuda/kernels.def. */
typedef enum eo_cuda_kernel {
#define EO_CUDA_KERNEL(id, module, entry, params) EO_CUK_##id,
#include "ops/cuda/kernels.def"
#undef EO_CUDA_KERNEL
    EO_CUK_COUNT
} eo_cuda_kernel;

#define EO_CUDA_MAX_MODULES 24 /* PTX files; raise with the ptx/ folder */
#define EO_CUDA_MSG_LEN 1024   /* room for a JIT log excerpt */

typedef struct eo_cuda {
    const eo_cuda_driver *drv;  /* borrowed; must outlive the eo_cuda */
    eo_cu_device dev;
    eo_cu_context ctx;          /* the device's primary context, retained */
    eo_cu_stream stream;        /* every launch, copy and memset is ordered on it */
    int ordinal;                /* device number given to eo_cuda_open */
    int cc_major, cc_minor;     /* compute capability, >= 8.0 */
    int sm_count;               /* streaming multiprocessors */
    size_t total_mem;           /* bytes of device memory */
    char name[96];              /* the device's name */
    int nmodules;
    eo_cu_module modules[EO_CUDA_MAX_MODULES];   /* in eo_ptx_get() order */
    eo_cu_function fn[EO_CUK_COUNT];             /* cached by kernel id */
    eo_cu_deviceptr scratch;    /* ~4 MiB for results passed between launches */
    int ids_checked;            /* an id check ran since its flags were last read */
    int is_open;
    /* The first failure since the last eo_cuda_take_error (EO_OK: none). */
    eo_status error;
    char msg[EO_CUDA_MSG_LEN];
} eo_cuda;

/* Open `device` through the driver table drv (the real driver from
 * eo_cuda_driver_load, or the PTX interpreter's table in tests): cuInit,
 * check the compute capability is at least 8.0 (the PTX targets sm_80),
 * retain and bind the primary context, create the device's stream, JIT
 * every embedded PTX module
 * once (the JIT's error log goes into the message on failure), cache
 * every kernel's function handle and check its parameter list. Statuses:
 * EO_ERR_ARG (NULL cu/drv), EO_ERR_NO_DEVICE (no device at all), EO_ERR_DEVICE (no device with that number),
 * EO_ERR_UNSUPPORTED (compute capability below 8.0), EO_ERR_CUDA (any
 * other driver failure, JIT errors included). err may be NULL. On
 * failure nothing stays allocated or retained. */
eo_status eo_cuda_open(eo_cuda *cu, const eo_cuda_driver *drv, int device, char *err,
                       size_t errlen);
/* Wait for the stream, destroy it, free the scratch, unload the modules,
 * release the primary context. Safe on a closed or zeroed cu. */
void eo_cuda_close(eo_cuda *cu);

/* Return the first recorded failure (EO_OK if none), copy its message into
 * msg (may be NULL) and clear it, so that launches resume. */
eo_status eo_cuda_take_error(eo_cuda *cu, char *msg, size_t msglen);
/* Wait for all work queued on the device's stream (cuStreamSynchronize);
 * a failure is recorded and returned like a launch failure, and a
 * failure recorded earlier is returned too (EO_OK: all work ran). */
eo_status eo_cuda_sync(eo_cuda *cu);
/* Read the id-check slots (ops/cuda/check.c) and record EO_ERR_ARG for a
 * bad id found there; returns the recorded failure, if any. Called by
 * eo_cuda_sync and eo_cuda_d2h when a check has run since the last read. */
eo_status eo_cuda_check_report(eo_cuda *cu);

/* Make cu's primary context current on the calling thread
 * (cuCtxSetCurrent); every function here and every launcher does this
 * first. A failure is recorded and returned. */
eo_status eo_cuda_enter(eo_cuda *cu);

/* ---- device memory (each call records and returns its failure) --------
 * h2d and d2h return when the copy is done (queued on the stream, then
 * waited for); d2d and memset32 are only queued, in order with the
 * launches, and their failures surface at the next sync or copy. */
eo_status eo_cuda_alloc_block(eo_cuda *cu, size_t bytes, eo_cu_deviceptr *out);
void eo_cuda_free_block(eo_cuda *cu, eo_cu_deviceptr p);
eo_status eo_cuda_h2d(eo_cuda *cu, eo_cu_deviceptr dst, const void *src, size_t bytes);
eo_status eo_cuda_d2h(eo_cuda *cu, void *dst, eo_cu_deviceptr src, size_t bytes);
eo_status eo_cuda_d2d(eo_cuda *cu, eo_cu_deviceptr dst, eo_cu_deviceptr src, size_t bytes);
/* count 32-bit words at dst set to value (0 for zeros, or a float's bits). */
eo_status eo_cuda_memset32(eo_cuda *cu, eo_cu_deviceptr dst, uint32_t value, size_t count);

/* ---- the kernel list, for tests and tools ------------------------------- */
const char *eo_cuda_kernel_module(eo_cuda_kernel k); /* "softmax"; NULL if out of range */
const char *eo_cuda_kernel_entry(eo_cuda_kernel k);  /* "eo_softmax" */
const char *eo_cuda_kernel_params(eo_cuda_kernel k); /* "iiipp", see kernels.def */

/* ---- launchers: the CUDA slots of the backend table ----------------------
 * Same contracts as the CPU kernels in ops/kernels.h, over device
 * addresses; they read the device from `ex->cuda` (a launch on a handle
 * without an open device does nothing: the core never makes one) and
 * `ws` is unused (the *_ws functions return 0). Element counts and in-tensor offsets must be below 2^31
 * (beyond that the launch records EO_ERR_UNSUPPORTED; attention also
 * needs D <= 256 and B*H <= 65535). Gradients that several threads add to
 * the same element (broadcast operands, repeated embedding ids, col2im,
 * attention's dk/dv/dmask) use float atomics: their last bits may vary
 * from run to run. Everything else is deterministic. */
eo_k_copy32_fn eo_cuda_k_copy32;
eo_k_accumulate_fn eo_cuda_k_accumulate;
eo_k_fill_fn eo_cuda_k_fill;
eo_k_binary_fn eo_cuda_k_binary;
eo_k_binary_backward_fn eo_cuda_k_binary_backward;
eo_k_unary_fn eo_cuda_k_unary;
eo_k_unary_backward_fn eo_cuda_k_unary_backward;
eo_k_check_ids_fn eo_cuda_k_check_ids;
eo_k_matmul_fn eo_cuda_k_matmul;
eo_k_matmul_ws_fn eo_cuda_k_matmul_ws;
eo_k_matmul16_fn eo_cuda_k_matmul16; /* ops/cuda/matmul_tc.c: tensor cores, sm_80 and later */
eo_k_reduce_fn eo_cuda_k_reduce;
eo_k_reduce_backward_fn eo_cuda_k_reduce_backward;
eo_k_sumsq_fn eo_cuda_k_sumsq;
eo_k_logsumexp_fn eo_cuda_k_logsumexp;
eo_k_logsumexp_backward_fn eo_cuda_k_logsumexp_backward;
eo_k_softmax_fn eo_cuda_k_softmax;
eo_k_softmax_backward_fn eo_cuda_k_softmax_backward;
eo_k_cross_entropy_fn eo_cuda_k_cross_entropy;
eo_k_cross_entropy_backward_fn eo_cuda_k_cross_entropy_backward;
eo_k_layernorm_fn eo_cuda_k_layernorm;
eo_k_layernorm_backward_fn eo_cuda_k_layernorm_backward;
eo_k_layernorm_backward_ws_fn eo_cuda_k_layernorm_backward_ws;
eo_k_embedding_fn eo_cuda_k_embedding;
eo_k_embedding_backward_fn eo_cuda_k_embedding_backward;
eo_k_dropout_fn eo_cuda_k_dropout;
eo_k_dropout_backward_fn eo_cuda_k_dropout_backward;
eo_k_im2col_fn eo_cuda_k_im2col;
eo_k_col2im_fn eo_cuda_k_col2im;
eo_k_maxpool2d_fn eo_cuda_k_maxpool2d;
eo_k_maxpool2d_backward_fn eo_cuda_k_maxpool2d_backward;
eo_k_attention_fn eo_cuda_k_attention;
eo_k_attention_backward_fn eo_cuda_k_attention_backward;
eo_k_attention_ws_fn eo_cuda_k_attention_ws;
eo_k_attention16_fn eo_cuda_k_attention16;                   /* ptx/attention_tc.ptx */
eo_k_attention16_backward_fn eo_cuda_k_attention16_backward; /* ptx/attention_tc.ptx */
eo_k_sgd_fn eo_cuda_k_sgd;
eo_k_adamw_fn eo_cuda_k_adamw;
eo_k_unscale_check_fn eo_cuda_k_unscale_check; /* ops/cuda/grad_scaler.c */
eo_k_cast_fn eo_cuda_k_cast; /* ops/cuda/cast.c: 16-bit casts and copies */

/* ---- 16-bit storage launchers (ptx/<family>16.ptx, ops/cuda/<family>16.c) -----------------
 * The contracts of the 16-bit slots (ops/kernels.h, "16-bit storage"):
 * bf16 or f16 storage (dt: 2 bf16, 3 f16), f32 arithmetic, one rounding
 * to nearest even per stored value. A dtype they have no kernel for
 * records EO_ERR_UNSUPPORTED. The ws arguments are unused. */
eo_k_unary16_fn eo_cuda_k_unary16;
eo_k_unary_backward16_fn eo_cuda_k_unary_backward16;
eo_k_binary16_fn eo_cuda_k_binary16; /* contiguous: 16-byte groups; strided: 4-D */
/* dst[0..n) = src converted (dd, sdt each f32, bf16 or f16; the same type:
 * a copy), contiguous: the fast path of a cast (16-byte accesses when
 * aligned). Returns 0, launching nothing, for a pair it has no kernel for
 * (f32 to f32, bf16 <-> f16), so the caller takes its general path. */
int eo_cuda_cast_flat(int dd, void *dst, int sdt, const void *src, int64_t n, const eo_exec *ex);
eo_k_softmax16_fn eo_cuda_k_softmax16;
eo_k_softmax_backward16_fn eo_cuda_k_softmax_backward16;
eo_k_layernorm16_fn eo_cuda_k_layernorm16;
eo_k_cross_entropy16_fn eo_cuda_k_cross_entropy16;
eo_k_cross_entropy_backward16_fn eo_cuda_k_cross_entropy_backward16;
eo_k_embedding16_fn eo_cuda_k_embedding16;
eo_k_adamw16_fn eo_cuda_k_adamw16;
eo_k_fill16_fn eo_cuda_k_fill16;
/* contiguous: 16-byte groups; broadcast or strided: the summed axes in a fixed order */
eo_k_binary_backward16_fn eo_cuda_k_binary_backward16;
eo_k_layernorm_backward16_fn eo_cuda_k_layernorm_backward16; /* the device's work buffer, no ws */
eo_k_embedding_backward16_fn eo_cuda_k_embedding_backward16; /* index order, no atomics */
eo_k_sgd16_fn eo_cuda_k_sgd16;

#endif
