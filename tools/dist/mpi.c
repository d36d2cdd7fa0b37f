/* tools/dist/mpi.c — loads Open MPI at run time (see mpi.h). */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "tools/cli/errbuf.h"
#include "tools/dist/mpi.h"

typedef void (*any_fn)(void);

/* One table slot: the exported name and where it goes. Functions and the
 * predefined objects are both found by dlsym; for an object the address
 * itself is the handle. */
typedef struct slot {
    const char *name;
    size_t offset;
    int object;
} slot;

#define FN(field) {"MPI_" #field, offsetof(eo_mpi, field), 0}
#define OBJ(sym, field) {sym, offsetof(eo_mpi, field), 1}
static const slot slots[] = {
    FN(Init), FN(Initialized), FN(Finalize), FN(Comm_rank), FN(Comm_size), FN(Abort),
    FN(Barrier), FN(Bcast), FN(Allgather), FN(Allgatherv), FN(Alltoallv), FN(Allreduce),
    FN(Error_string),
    OBJ("ompi_mpi_comm_world", comm_world), OBJ("ompi_mpi_float", type_float),
    OBJ("ompi_mpi_double", type_double), OBJ("ompi_mpi_byte", type_byte),
    OBJ("ompi_mpi_op_sum", op_sum),
};

eo_status eo_mpi_load(eo_mpi *m, char *err, size_t errlen)
{
    memset(m, 0, sizeof *m);
    void *lib = dlopen("libmpi.so.40", RTLD_NOW | RTLD_GLOBAL);
    if (!lib)
        return eo_errf(err, errlen, EO_ERR_NO_DEVICE,
                       "no MPI: libmpi.so.40 (Open MPI) not found (Debian: apt-get install "
                       "openmpi-bin)");
    for (size_t i = 0; i < sizeof slots / sizeof slots[0]; i++) {
        void *p = dlsym(lib, slots[i].name);
        if (!p) {
            dlclose(lib);
            memset(m, 0, sizeof *m);
            return eo_errf(err, errlen, EO_ERR_IO,
                           "libmpi.so.40 has no %s: not Open MPI, or too old", slots[i].name);
        }
        if (slots[i].object) {
            memcpy((char *)m + slots[i].offset, &p, sizeof p);
        } else {
            /* dlsym returns an object pointer; copy its bits into the
             * function-pointer slot (ISO C has no conversion between them). */
            any_fn f;
            memcpy(&f, &p, sizeof f);
            memcpy((char *)m + slots[i].offset, &f, sizeof f);
        }
    }
    m->lib = lib;
    return EO_OK;
}

void eo_mpi_unload(eo_mpi *m)
{
    /* Not dlclose'd: Open MPI leaves threads and atexit handlers behind
     * after MPI_Finalize that still point into it. */
    memset(m, 0, sizeof *m);
}

int eo_mpi_launched(void)
{
    const char *s = getenv("OMPI_COMM_WORLD_SIZE");
    return s && *s;
}

const char *eo_mpi_error_text(const eo_mpi *m, int code, char *buf, size_t buflen)
{
    char text[512]; /* MPI_MAX_ERROR_STRING is 256 in Open MPI */
    int len = 0;
    if (m && m->Error_string && m->Error_string(code, text, &len) == 0 && len > 0) {
        text[len < (int)sizeof text ? len : (int)sizeof text - 1] = 0;
        snprintf(buf, buflen, "%s", text);
    } else {
        snprintf(buf, buflen, "MPI error %d", code);
    }
    return buf;
}
