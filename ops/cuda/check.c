/* ops/cuda/check.c — the host side of ptx/check.ptx: integer ids (token ids,
 * class targets) checked on the device before a kernel indexes with them,
 * and the report of a bad one at the next synchronising call.
 *
 * eo_cuda_check_ids launches eo_check_ids on the stream in front of the
 * kernel that will use the ids and returns the device address that kernel
 * should read: a copy in the scratch's id region with every bad id
 * replaced (so nothing is read or written outside a table), or, for more
 * ids than the buffer holds, the ids themselves (checked, not replaced).
 * The first bad id of each kind lands in a flag slot of the scratch; the
 * next eo_cuda_sync or device-to-host copy (ops/cuda/device.c) reads the
 * slots when a check has run since, and records EO_ERR_ARG with the id,
 * its position and the limit, as the CPU path would have refused it. */
#include <string.h>
#include "ops/cuda/launch.h"

static const char *const check_who[EO_CU_CHECK_SLOTS] = {"embedding: index ",
                                                         "cross_entropy: target "};

uint64_t eo_cuda_check_ids(eo_cuda *cu, int slot, const int32_t *ids, int64_t n, int64_t limit,
                           int has_ignore, int32_t ignore, int32_t rep)
{
    uint64_t pin = eo_cuda_dp(ids);
    if (n <= 0 || !eo_cuda_fits(cu, check_who[slot], n) || !eo_cuda_fits(cu, check_who[slot], limit))
        return pin;
    uint64_t pout = n <= (int64_t)EO_CU_IDS_BYTES / 4 ? cu->scratch + EO_CU_SCRATCH_IDS : 0;
    uint64_t pflag = cu->scratch + SCRATCH_CHECK + (uint64_t)slot * EO_CU_CHECK_SLOT_BYTES;
    uint32_t nn = (uint32_t)n, lim = (uint32_t)limit, hi = has_ignore != 0;
    LAUNCH(cu, EO_CUK_CHECK_IDS, eo_cuda_grid(n), 1, 1, BLOCK, 1, &nn, &pin, &lim, &hi, &ignore,
           &rep, &pout, &pflag);
    cu->ids_checked = 1;
    return pout ? pout : pin;
}

eo_status eo_cuda_check_report(eo_cuda *cu)
{
    cu->ids_checked = 0;
    uint32_t w[EO_CU_CHECK_SLOTS * EO_CU_CHECK_SLOT_BYTES / 4];
    /* On the device's stream, like every other copy (ops/cuda/device.c). */
    eo_cu_result r = cu->drv->cuMemcpyDtoHAsync(w, cu->scratch + SCRATCH_CHECK, sizeof w,
                                                cu->stream);
    if (r == EO_CUDA_SUCCESS)
        r = cu->drv->cuStreamSynchronize(cu->stream);
    if (r != EO_CUDA_SUCCESS)
        return eo_cuda_fail_text(cu, EO_ERR_CUDA, "reading the id checks failed", NULL, NULL);
    for (int s = 0; s < EO_CU_CHECK_SLOTS; s++) {
        const uint32_t *slot = w + s * EO_CU_CHECK_SLOT_BYTES / 4;
        /* The first 8 bytes are one u64, (position << 32) | id, written by
         * red.min.u64: read as a u64 and split arithmetically, not as two
         * u32 words (their order is the device's byte order: the PTX
         * interpreter keeps device memory in the host's, big-endian on
         * s390x). */
        uint64_t key;
        memcpy(&key, slot, sizeof key);
        if (key == UINT64_MAX)
            continue;
        uint32_t id = (uint32_t)key, pos = (uint32_t)(key >> 32);
        eo_cuda_msg m = eo_cuda_fail_begin(cu, EO_ERR_ARG);
        eo_cuda_msg_put(&m, check_who[s]);
        eo_cuda_msg_int(&m, (int32_t)id);
        eo_cuda_msg_put(&m, " at position ");
        eo_cuda_msg_int(&m, pos);
        eo_cuda_msg_put(&m, " is outside [0, ");
        eo_cuda_msg_int(&m, slot[2]);
        eo_cuda_msg_put(&m, ") (found on the device)");
        cu->drv->cuMemsetD32Async(cu->scratch + SCRATCH_CHECK +
                                      (uint64_t)s * EO_CU_CHECK_SLOT_BYTES,
                                  0xffffffffu, EO_CU_CHECK_SLOT_BYTES / 4, cu->stream);
    }
    return cu->error;
}

/* The kernel-table entry (ops/kernels.h): the ids the next kernel reads. */
const int32_t *eo_cuda_k_check_ids(int kind, int64_t n, const int32_t *ids, int64_t limit,
                                   int has_ignore, int32_t ignore, const eo_exec *ex)
{
    eo_cuda *cu = eo_cuda_ready(ex);
    if (!cu)
        return ids;
    int slot = kind == EO_IDS_TARGET ? EO_CU_CHECK_TARGET : EO_CU_CHECK_EMBEDDING;
    uint64_t p = eo_cuda_check_ids(cu, slot, ids, n, limit, has_ignore, ignore,
                                   has_ignore ? ignore : 0);
    return (const int32_t *)(uintptr_t)p;
}
