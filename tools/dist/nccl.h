/* tools/dist/nccl.h — NCCL, opened at run time, summing CUDA gradients
 * across ranks without their leaving the GPU.
 *
 * Why dlopen: as for the CUDA driver (ops/cuda/driver.c) and MPI
 * (tools/dist/mpi.h), eo-train must build and run where NCCL is absent;
 * "libnccl.so.2" is the soname of every NCCL 2 release. The table holds
 * only the calls used, with the ABI of nccl.h (types restated below:
 * ncclResult_t, ncclDataType_t and ncclRedOp_t are enums, i.e. ints;
 * ncclComm_t and cudaStream_t are pointers; ncclUniqueId is 128 bytes
 * passed by value to ncclCommInitRank). Tests fill the table with a
 * double (tests/test_dist.c: one rank per host thread and simulated
 * device), as the PTX interpreter fills the driver's.
 *
 * Set-up (eo_nccl_init_mpi): rank 0 asks NCCL for a unique id, MPI
 * broadcasts its 128 bytes, every rank joins the communicator with
 * ncclCommInitRank; one GPU per rank (eo-train opens device
 * local_rank). Each step the hook issues one in-place ncclAllReduce (sum,
 * f32) per gradient buffer, all inside one ncclGroupStart/ncclGroupEnd so
 * NCCL fuses them, on the stream the kernels use, so the optimizer's
 * kernels queued after it wait for it and nothing synchronises the host.
 *
 * Order: NCCL chooses its algorithm (ring or tree) and its order of
 * addition; the result is the same on every rank, and for two ranks it
 * is the one addition a + b, so bit-identical to one process running
 * both slices (eo-train --micro-batches 2). Beyond two ranks the last
 * bits may differ from that single-process run. */
#ifndef EO_TOOLS_NCCL_H
#define EO_TOOLS_NCCL_H

#include <stddef.h>
#include "core/everyo.h"
#include "tools/dist/dist.h"

#define EO_NCCL_ID_BYTES 128
typedef struct eo_nccl_id { char internal[EO_NCCL_ID_BYTES]; } eo_nccl_id; /* ncclUniqueId */
typedef struct eo_nccl_comm_st *eo_nccl_comm;                          /* ncclComm_t */
typedef void *eo_nccl_stream;                                          /* cudaStream_t */
enum { EO_NCCL_SUCCESS = 0, EO_NCCL_FLOAT32 = 7, EO_NCCL_SUM = 0 };

typedef struct eo_nccl_api {
    void *lib; /* dlopen handle; NULL for a double */
    int (*ncclGetUniqueId)(eo_nccl_id *id);
    int (*ncclCommInitRank)(eo_nccl_comm *comm, int nranks, eo_nccl_id id, int rank);
    int (*ncclAllReduce)(const void *sendbuf, void *recvbuf, size_t count, int datatype,
                         int op, eo_nccl_comm comm, eo_nccl_stream stream);
    int (*ncclGroupStart)(void);
    int (*ncclGroupEnd)(void);
    int (*ncclCommDestroy)(eo_nccl_comm comm);
    const char *(*ncclGetErrorString)(int result);
} eo_nccl_api;

/* Open libnccl.so.2 and fill *api. EO_ERR_NO_DEVICE when it is not
 * installed (the message says so), EO_ERR_IO when a symbol is missing. */
eo_status eo_nccl_load(eo_nccl_api *api, char *err, size_t errlen);
void eo_nccl_unload(eo_nccl_api *api);

/* One rank's communicator and the stream its all-reduces go on. */
typedef struct eo_nccl {
    const eo_nccl_api *api; /* borrowed */
    eo_nccl_comm comm;
    eo_nccl_stream stream;
    int rank, size;
} eo_nccl;

/* Join `size` ranks that share `id` (ncclCommInitRank; the CUDA device
 * must be current — eo_cuda_attach makes it so). EO_ERR_CUDA with NCCL's
 * message on failure. */
eo_status eo_nccl_init(eo_nccl *c, const eo_nccl_api *api, const eo_nccl_id *id, int size,
                       int rank, eo_nccl_stream stream, char *err, size_t errlen);
/* The same for the ranks of an MPI world: rank 0 makes the id, MPI
 * broadcasts it. */
eo_status eo_nccl_init_mpi(eo_nccl *c, const eo_nccl_api *api, eo_dist *d,
                           eo_nccl_stream stream, char *err, size_t errlen);
/* The hook for CUDA gradients (core/everyo.h); user data is c. Buffers
 * not on EO_CUDA or not f32: EO_ERR_DEVICE / EO_ERR_DTYPE. */
eo_grad_sync eo_nccl_grad_sync(eo_nccl *c);
void eo_nccl_destroy(eo_nccl *c);

#endif
