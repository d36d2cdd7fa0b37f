/* tests/test_cuda_load.c — the CUDA driver loader, the embedded PTX and the
 * backend's open path, on any machine (no GPU, no CUDA toolkit needed).
 *
 * What is pinned here:
 *  - without libcuda.so.1 loading reports EO_ERR_NO_DEVICE with a message
 *    that says so (with a driver installed, it must succeed instead);
 *  - CUresults become "CUDA_ERROR_X: text" through the table, bounded;
 *  - every embedded PTX module is present, starts with its own comment,
 *    declares .version 7.0 / .target sm_80, and every kernel the backend
 *    launches is an .entry of its module whose .param list matches
 *    ops/cuda/kernels.def letter for letter;
 *  - eo_cuda_open's failures, driven by a small fake driver: no device,
 *    a compute capability below 8.0 (read from the device, no list), and a
 *    JIT failure whose error log reaches the message. */
#include <check.h>
#include <stdio.h>
#include <string.h>
#include "ops/cuda/device.h"
#include "ops/cuda/driver.h"
#include "ops/cuda/ptx.h"

START_TEST(load_without_driver)
{
    eo_cuda_driver d;
    char err[256];
    memset(&d, 0xab, sizeof d);
    eo_status s = eo_cuda_driver_load(&d, err, sizeof err);
    if (s == EO_OK) { /* a machine with a GPU driver */
        ck_assert(d.cuInit != NULL);
        ck_assert(d.cuLaunchKernel != NULL);
        ck_assert_ptr_nonnull(d.lib);
        eo_cuda_driver_unload(&d);
        ck_assert_ptr_null(d.lib);
        return;
    }
    ck_assert_int_eq(s, EO_ERR_NO_DEVICE);
    ck_assert_str_eq(err, "no CUDA driver: libcuda.so.1 not found");
    ck_assert(d.cuInit == NULL); /* the table is zeroed on failure */
    ck_assert_ptr_null(d.lib);
    /* A short buffer gets a truncated, terminated message. */
    char tiny[10];
    ck_assert_int_eq(eo_cuda_driver_load(&d, tiny, sizeof tiny), EO_ERR_NO_DEVICE);
    ck_assert_str_eq(tiny, "no CUDA d");
    ck_assert_int_eq(eo_cuda_driver_load(&d, NULL, 0), EO_ERR_NO_DEVICE);
    ck_assert_int_eq(eo_cuda_driver_load(NULL, err, sizeof err), EO_ERR_ARG);
}
END_TEST

/* ---- a fake driver, just enough for eo_cuda_open's decisions --------------- */
static int fake_init_result, fake_cc_major, fake_jit_fails, fake_allocs;
/* The stream of the last launch / copy / memset / sync, and how many
 * calls made a context current (each entry into the device must). */
static eo_cu_stream fake_last_stream;
static int fake_set_current;

static eo_cu_result f_init(unsigned flags)
{
    (void)flags;
    return fake_init_result;
}
static eo_cu_result f_count(int *n)
{
    *n = 1;
    return 0;
}
static eo_cu_result f_get(eo_cu_device *d, int i)
{
    *d = i;
    return 0;
}
static eo_cu_result f_attr(int *v, eo_cu_device_attribute a, eo_cu_device d)
{
    (void)d;
    *v = a == EO_CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR   ? fake_cc_major
         : a == EO_CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR ? 5
                                                                : 4;
    return 0;
}
static eo_cu_result f_name(char *name, int len, eo_cu_device d)
{
    (void)d;
    snprintf(name, (size_t)len, "Fake GPU");
    return 0;
}
static eo_cu_result f_retain(eo_cu_context *c, eo_cu_device d)
{
    (void)d;
    *c = (eo_cu_context)&fake_allocs;
    fake_allocs++;
    return 0;
}
static eo_cu_result f_release(eo_cu_device d)
{
    (void)d;
    fake_allocs--;
    return 0;
}
static eo_cu_result f_setcur(eo_cu_context c)
{
    (void)c;
    fake_set_current++;
    return 0;
}
static eo_cu_result f_sync(void)
{
    return 0;
}
static eo_cu_result f_load(eo_cu_module *m, const void *img, unsigned n, eo_cu_jit_option *o,
                           void **v)
{
    (void)img;
    if (fake_jit_fails) {
        for (unsigned i = 0; i < n; i++)
            if (o[i] == EO_CU_JIT_ERROR_LOG_BUFFER)
                snprintf(v[i], 64, "ptxas: line 3: unknown instruction 'frob'");
        return EO_CUDA_ERROR_INVALID_PTX;
    }
    *m = (eo_cu_module)&fake_allocs;
    fake_allocs++;
    return 0;
}
static eo_cu_result f_unload(eo_cu_module m)
{
    (void)m;
    fake_allocs--;
    return 0;
}
static eo_cu_result f_getfn(eo_cu_function *f, eo_cu_module m, const char *name)
{
    (void)m, (void)name;
    *f = (eo_cu_function)&fake_allocs;
    return 0;
}
static eo_cu_result f_launch(eo_cu_function f, unsigned gx, unsigned gy, unsigned gz,
                             unsigned bx, unsigned by, unsigned bz, unsigned sh, eo_cu_stream s,
                             void **p, void **e)
{
    (void)f, (void)gx, (void)gy, (void)gz, (void)bx, (void)by, (void)bz, (void)sh;
    (void)p, (void)e;
    fake_last_stream = s;
    return 0;
}
static eo_cu_result f_alloc(eo_cu_deviceptr *p, size_t n)
{
    (void)n;
    *p = 0x1000;
    fake_allocs++;
    return 0;
}
static eo_cu_result f_free(eo_cu_deviceptr p)
{
    (void)p;
    fake_allocs--;
    return 0;
}
/* The stream counts as an allocation, so open/close must balance it. */
static eo_cu_result f_stream_create(eo_cu_stream *s, unsigned flags)
{
    (void)flags;
    *s = (eo_cu_stream)&fake_allocs;
    fake_allocs++;
    return 0;
}
static eo_cu_result f_stream_destroy(eo_cu_stream s)
{
    (void)s;
    fake_allocs--;
    return 0;
}
static eo_cu_result f_stream_sync(eo_cu_stream s)
{
    fake_last_stream = s;
    return 0;
}
static eo_cu_result f_h2d(eo_cu_deviceptr d, const void *s, size_t n, eo_cu_stream st)
{
    (void)d, (void)s, (void)n, (void)st;
    return 0;
}
static eo_cu_result f_d2h(void *d, eo_cu_deviceptr s, size_t n, eo_cu_stream st)
{
    (void)d, (void)s, (void)n, (void)st;
    return 0;
}
static eo_cu_result f_d2d(eo_cu_deviceptr d, eo_cu_deviceptr s, size_t n, eo_cu_stream st)
{
    (void)d, (void)s, (void)n, (void)st;
    return 0;
}
static eo_cu_result f_memset(eo_cu_deviceptr d, unsigned v, size_t n, eo_cu_stream st)
{
    (void)d, (void)v, (void)n;
    fake_last_stream = st;
    return 0;
}
static eo_cu_result f_errname(eo_cu_result r, const char **s)
{
    *s = r == EO_CUDA_ERROR_INVALID_PTX   ? "CUDA_ERROR_INVALID_PTX"
         : r == EO_CUDA_ERROR_NO_DEVICE   ? "CUDA_ERROR_NO_DEVICE"
         : r == EO_CUDA_ERROR_ILLEGAL_ADDRESS ? "CUDA_ERROR_ILLEGAL_ADDRESS"
                                          : NULL;
    return *s ? 0 : EO_CUDA_ERROR_INVALID_VALUE;
}
static eo_cu_result f_errstr(eo_cu_result r, const char **s)
{
    *s = r == EO_CUDA_ERROR_ILLEGAL_ADDRESS ? "an illegal memory access was encountered"
                                            : "something failed";
    return 0;
}

static eo_cuda_driver fake(void)
{
    eo_cuda_driver d;
    memset(&d, 0, sizeof d);
    d.cuInit = f_init;
    d.cuDeviceGetCount = f_count;
    d.cuDeviceGet = f_get;
    d.cuDeviceGetAttribute = f_attr;
    d.cuDeviceGetName = f_name;
    d.cuDevicePrimaryCtxRetain = f_retain;
    d.cuDevicePrimaryCtxRelease = f_release;
    d.cuCtxSetCurrent = f_setcur;
    d.cuCtxSynchronize = f_sync;
    d.cuStreamCreate = f_stream_create;
    d.cuStreamDestroy = f_stream_destroy;
    d.cuStreamSynchronize = f_stream_sync;
    d.cuModuleLoadDataEx = f_load;
    d.cuModuleUnload = f_unload;
    d.cuModuleGetFunction = f_getfn;
    d.cuLaunchKernel = f_launch;
    d.cuMemAlloc = f_alloc;
    d.cuMemFree = f_free;
    d.cuMemcpyHtoDAsync = f_h2d;
    d.cuMemcpyDtoHAsync = f_d2h;
    d.cuMemcpyDtoDAsync = f_d2d;
    d.cuMemsetD32Async = f_memset;
    d.cuGetErrorName = f_errname;
    d.cuGetErrorString = f_errstr;
    fake_init_result = 0;
    fake_cc_major = 8;
    fake_jit_fails = 0;
    fake_allocs = 0;
    return d;
}

START_TEST(result_text)
{
    char buf[128];
    eo_cuda_driver d = fake();
    ck_assert_str_eq(eo_cuda_result_text(&d, EO_CUDA_ERROR_ILLEGAL_ADDRESS, buf, sizeof buf),
                     "CUDA_ERROR_ILLEGAL_ADDRESS: an illegal memory access was encountered");
    ck_assert_str_eq(eo_cuda_result_text(NULL, 700, buf, sizeof buf), "CUresult 700");
    ck_assert_str_eq(eo_cuda_result_text(&d, -5, buf, sizeof buf), "CUresult -5: something failed");
    ck_assert_str_eq(eo_cuda_result_text(&d, EO_CUDA_ERROR_ILLEGAL_ADDRESS, buf, 11), "CUDA_ERROR");
}
END_TEST

START_TEST(open_failures_are_explained)
{
    eo_cuda cu;
    char err[EO_CUDA_MSG_LEN];
    eo_cuda_driver d = fake();
    fake_init_result = EO_CUDA_ERROR_NO_DEVICE;
    ck_assert_int_eq(eo_cuda_open(&cu, &d, 0, err, sizeof err), EO_ERR_NO_DEVICE);
    ck_assert_msg(strstr(err, "CUDA_ERROR_NO_DEVICE") != NULL, "%s", err);

    d = fake();
    fake_cc_major = 7;
    ck_assert_int_eq(eo_cuda_open(&cu, &d, 0, err, sizeof err), EO_ERR_UNSUPPORTED);
    ck_assert_msg(strstr(err, "Fake GPU") && strstr(err, "7.5") && strstr(err, "8.0"), "%s", err);
    ck_assert_int_eq(fake_allocs, 0);

    d = fake();
    ck_assert_int_eq(eo_cuda_open(&cu, &d, 1, err, sizeof err), EO_ERR_DEVICE);
    ck_assert_msg(strstr(err, "device 1 requested, 1 present") != NULL, "%s", err);

    d = fake();
    fake_jit_fails = 1;
    ck_assert_int_eq(eo_cuda_open(&cu, &d, 0, err, sizeof err), EO_ERR_CUDA);
    ck_assert_msg(strstr(err, "cuModuleLoadDataEx") && strstr(err, "CUDA_ERROR_INVALID_PTX") &&
                      strstr(err, "unknown instruction 'frob'"),
                  "%s", err);
    ck_assert_int_eq(fake_allocs, 0); /* the context was released */

    d = fake();
    d.cuLaunchKernel = NULL;
    ck_assert_int_eq(eo_cuda_open(&cu, &d, 0, err, sizeof err), EO_ERR_ARG);
    ck_assert_msg(strstr(err, "cuLaunchKernel") != NULL, "%s", err);
    ck_assert_int_eq(eo_cuda_open(NULL, &d, 0, err, sizeof err), EO_ERR_ARG);
}
END_TEST

START_TEST(open_and_close_balance)
{
    eo_cuda cu;
    char err[EO_CUDA_MSG_LEN];
    eo_cuda_driver d = fake();
    ck_assert_int_eq(eo_cuda_open(&cu, &d, 0, err, sizeof err), EO_OK);
    ck_assert_int_eq(cu.is_open, 1);
    ck_assert_int_eq(cu.cc_major, 8);
    ck_assert_str_eq(cu.name, "Fake GPU");
    ck_assert_int_eq(cu.nmodules, eo_ptx_count());
    /* Work goes on the device's own stream, never the legacy NULL one,
     * and each entry makes the device's context current first. */
    ck_assert_ptr_nonnull(cu.stream);
    eo_exec on = {{0}, &cu};
    int before = fake_set_current;
    eo_cuda_k_fill(10, (float *)(uintptr_t)0x1000, 1.0f, &on);
    ck_assert_ptr_eq(fake_last_stream, cu.stream);
    fake_last_stream = NULL;
    ck_assert_int_eq(eo_cuda_memset32(&cu, 0x1000, 0, 4), EO_OK);
    ck_assert_ptr_eq(fake_last_stream, cu.stream);
    fake_last_stream = NULL;
    ck_assert_int_eq(eo_cuda_sync(&cu), EO_OK);
    ck_assert_ptr_eq(fake_last_stream, cu.stream);
    ck_assert_int_eq(fake_set_current, before + 3);
    eo_cuda_close(&cu);
    ck_assert_int_eq(cu.is_open, 0);
    ck_assert_int_eq(fake_allocs, 0);
    /* A launch on a handle without a device, or on a closed one, is
     * dropped, not a crash (the core never makes either). */
    eo_cuda_k_fill(10, NULL, 1.0f, NULL);
    eo_exec ex = {{0}, &cu};
    eo_cuda_k_fill(10, NULL, 1.0f, &ex);
    eo_cuda_close(&cu); /* twice is fine */
}
END_TEST

/* ---- the embedded PTX --------------------------------------------------------- */
START_TEST(ptx_modules_embedded)
{
    static const char *const names[] = {"attention", "conv",      "cross_entropy", "dropout",
                                        "elementwise", "embedding", "layernorm",   "matmul",
                                        "optim",       "reduce",    "softmax"};
    ck_assert_int_ge(eo_ptx_count(), (int)(sizeof names / sizeof names[0]));
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        ck_assert_msg(eo_ptx_find(names[i]) != NULL, "module %s missing", names[i]);
    ck_assert_ptr_null(eo_ptx_find("no_such_module"));
    ck_assert_ptr_null(eo_ptx_get(-1));
    ck_assert_ptr_null(eo_ptx_get(eo_ptx_count()));
    for (int i = 0; i < eo_ptx_count(); i++) {
        const eo_ptx_module *m = eo_ptx_get(i);
        char head[128];
        snprintf(head, sizeof head, "// ptx/%s.ptx", m->name);
        ck_assert_uint_gt(m->len, 100);
        ck_assert_uint_eq(strlen(m->text), m->len);
        ck_assert_msg(strncmp(m->text, head, strlen(head)) == 0, "%s does not start with '%s'",
                      m->name, head);
        ck_assert_msg(strstr(m->text, "\n.version 7.0\n") != NULL, "%s: .version", m->name);
        ck_assert_msg(strstr(m->text, "\n.target sm_80\n") != NULL, "%s: .target", m->name);
    }
}
END_TEST

/* The letters of ops/cuda/kernels.def against the .param lines of the PTX. */
START_TEST(kernel_params_match_ptx)
{
    for (int k = 0; k < EO_CUK_COUNT; k++) {
        const char *entry = eo_cuda_kernel_entry((eo_cuda_kernel)k);
        const char *want = eo_cuda_kernel_params((eo_cuda_kernel)k);
        const eo_ptx_module *m = eo_ptx_find(eo_cuda_kernel_module((eo_cuda_kernel)k));
        ck_assert_msg(m != NULL, "%s: module missing", entry);
        char decl[128];
        snprintf(decl, sizeof decl, ".visible .entry %s(", entry);
        const char *p = strstr(m->text, decl);
        ck_assert_msg(p != NULL, "%s: no '%s' in ptx/%s.ptx", entry, decl, m->name);
        const char *end = strchr(p, '{');
        ck_assert_ptr_nonnull(end);
        char got[64];
        size_t n = 0;
        for (const char *q = strstr(p, ".param "); q && q < end; q = strstr(q + 1, ".param ")) {
            const char *t = q + strlen(".param ");
            char c = strncmp(t, ".f32", 4) == 0                                    ? 'f'
                     : strncmp(t, ".u32", 4) == 0 || strncmp(t, ".s32", 4) == 0     ? 'i'
                     : strncmp(t, ".s64", 4) == 0                                   ? 'l'
                     : strncmp(t, ".u64", 4) == 0                                   ? 'P'
                                                                                    : '?';
            ck_assert_uint_lt(n, sizeof got - 1);
            got[n++] = c;
        }
        got[n] = '\0';
        ck_assert_uint_eq(n, strlen(want));
        for (size_t i = 0; i < n; i++) {
            /* .u64 is a pointer ('p') or a 64-bit integer such as a seed ('l'). */
            int ok = got[i] == want[i] || (got[i] == 'P' && (want[i] == 'p' || want[i] == 'l'));
            ck_assert_msg(ok, "%s: parameter %zu is '%c' in the PTX, '%c' in ops/cuda/kernels.def",
                          entry, i, got[i], want[i]);
        }
    }
    ck_assert_ptr_null(eo_cuda_kernel_entry(EO_CUK_COUNT));
}
END_TEST

Suite *eo_suite_cuda_load(void)
{
    Suite *s = suite_create("cuda_load");
    TCase *t = tcase_create("loader");
    tcase_add_test(t, load_without_driver);
    tcase_add_test(t, result_text);
    tcase_add_test(t, open_failures_are_explained);
    tcase_add_test(t, open_and_close_balance);
    tcase_add_test(t, ptx_modules_embedded);
    tcase_add_test(t, kernel_params_match_ptx);
    suite_add_tcase(s, t);
    return s;
}
