/* tests/mpi_abi.c — checks tools/dist/mpi.h against Open MPI's own mpi.h:
 * every table member's signature and the handles' types.
 *
 * Why a separate, normally empty file: eo-train must build without any
 * MPI header (the library is opened at run time), so this check cannot be
 * part of the normal build. `make test` compiles it with
 * -DEO_CHECK_MPI_ABI and mpicc's include flags when libopenmpi-dev is
 * installed. It maps the stand-in handle types onto mpi.h's
 * (EO_MPI_ABI_TYPES) and assigns each MPI function to the member of the
 * same name; with -Werror any difference in a parameter or return type
 * fails the compile. The handle values (&ompi_mpi_comm_world is
 * MPI_COMM_WORLD, ...) are Open MPI's definitions, checked here too. */
#ifdef EO_CHECK_MPI_ABI
#include <mpi.h>

#define EO_MPI_ABI_TYPES
typedef MPI_Comm eo_mpi_comm;
typedef MPI_Datatype eo_mpi_type;
typedef MPI_Op eo_mpi_op;
#include "tools/dist/mpi.h"

void eo_mpi_abi_check(eo_mpi *m);
void eo_mpi_abi_check(eo_mpi *m)
{
    m->Init = MPI_Init;
    m->Initialized = MPI_Initialized;
    m->Finalize = MPI_Finalize;
    m->Comm_rank = MPI_Comm_rank;
    m->Comm_size = MPI_Comm_size;
    m->Abort = MPI_Abort;
    m->Barrier = MPI_Barrier;
    m->Bcast = MPI_Bcast;
    m->Allgather = MPI_Allgather;
    m->Allgatherv = MPI_Allgatherv;
    m->Alltoallv = MPI_Alltoallv;
    m->Allreduce = MPI_Allreduce;
    m->Error_string = MPI_Error_string;
    /* The loader takes these addresses from dlsym by these names. */
    m->comm_world = (MPI_Comm)&ompi_mpi_comm_world;
    m->type_float = (MPI_Datatype)&ompi_mpi_float;
    m->type_double = (MPI_Datatype)&ompi_mpi_double;
    m->type_byte = (MPI_Datatype)&ompi_mpi_byte;
    m->op_sum = (MPI_Op)&ompi_mpi_op_sum;
    _Static_assert(MPI_SUCCESS == 0, "mpi.h: the table treats 0 as success");
}
#else
typedef int eo_mpi_abi_unused; /* ISO C wants a declaration in every file */
#endif
