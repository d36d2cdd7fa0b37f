/* tools/dist/mpi.h — Open MPI, opened at run time: the few MPI calls
 * data-parallel training uses, as a table of function pointers.
 *
 * Why dlopen and not mpicc: one eo-train binary then builds on a machine
 * without MPI, runs there as a single process, and runs one rank per
 * process under `mpirun` wherever Open MPI is installed — the same
 * choice as for the CUDA driver (ops/cuda/driver.c). The price is an ABI
 * we must restate: in Open MPI a handle (MPI_Comm, MPI_Datatype, MPI_Op)
 * is a pointer to a predefined global object, MPI_COMM_WORLD being
 * &ompi_mpi_comm_world and so on, so the table holds those addresses,
 * found with dlsym. "libmpi.so.40" is Open MPI's soname since 3.0 (MPICH
 * calls its library libmpi.so.12 and uses integer handles; it is not
 * supported). tests/mpi_abi.c checks every member's type against
 * <mpi.h> (`make test`, when libopenmpi-dev is installed).
 *
 * Each call returns MPI's error code (0 = MPI_SUCCESS); Open MPI's default
 * error handler aborts the job on a communication failure anyway. */
#ifndef EO_TOOLS_MPI_H
#define EO_TOOLS_MPI_H

#include <stddef.h>
#include "alloc/status.h"

#ifndef EO_MPI_ABI_TYPES
typedef void *eo_mpi_comm;  /* MPI_Comm */
typedef void *eo_mpi_type;  /* MPI_Datatype */
typedef void *eo_mpi_op;    /* MPI_Op */
#endif

typedef struct eo_mpi {
    void *lib; /* dlopen handle */
    int (*Init)(int *argc, char ***argv);
    int (*Initialized)(int *flag);
    int (*Finalize)(void);
    int (*Comm_rank)(eo_mpi_comm comm, int *rank);
    int (*Comm_size)(eo_mpi_comm comm, int *size);
    int (*Abort)(eo_mpi_comm comm, int errorcode);
    int (*Barrier)(eo_mpi_comm comm);
    int (*Bcast)(void *buf, int count, eo_mpi_type type, int root, eo_mpi_comm comm);
    int (*Allgather)(const void *sbuf, int scount, eo_mpi_type stype, void *rbuf, int rcount,
                     eo_mpi_type rtype, eo_mpi_comm comm);
    int (*Allgatherv)(const void *sbuf, int scount, eo_mpi_type stype, void *rbuf,
                      const int rcounts[], const int displs[], eo_mpi_type rtype,
                      eo_mpi_comm comm);
    int (*Alltoallv)(const void *sbuf, const int scounts[], const int sdispls[],
                     eo_mpi_type stype, void *rbuf, const int rcounts[], const int rdispls[],
                     eo_mpi_type rtype, eo_mpi_comm comm);
    int (*Allreduce)(const void *sbuf, void *rbuf, int count, eo_mpi_type type, eo_mpi_op op,
                     eo_mpi_comm comm);
    int (*Error_string)(int errorcode, char *string, int *resultlen);
    /* The predefined handles (addresses of Open MPI's global objects). */
    eo_mpi_comm comm_world;
    eo_mpi_type type_float, type_double, type_byte;
    eo_mpi_op op_sum;
} eo_mpi;

/* Open libmpi.so.40 (RTLD_GLOBAL: Open MPI's own plug-ins, loaded later,
 * resolve their symbols against it) and fill *m. Does not call MPI_Init.
 * EO_ERR_NO_DEVICE when the library is not there (the message says which
 * package provides it), EO_ERR_IO when a symbol is missing. */
eo_status eo_mpi_load(eo_mpi *m, char *err, size_t errlen);
void eo_mpi_unload(eo_mpi *m);

/* Is this process one rank of an Open MPI job (started by mpirun)? Reads
 * the environment Open MPI sets (OMPI_COMM_WORLD_SIZE). */
int eo_mpi_launched(void);

/* MPI's text for an error code, into buf. */
const char *eo_mpi_error_text(const eo_mpi *m, int code, char *buf, size_t buflen);

#endif
