/* tools/dist/nccl.c — NCCL loader and the CUDA gradient hook (see nccl.h). */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
#include "tools/cli/errbuf.h"
#include "tools/dist/nccl.h"

typedef void (*any_fn)(void);

eo_status eo_nccl_load(eo_nccl_api *api, char *err, size_t errlen)
{
    static const struct { const char *name; size_t offset; } slots[] = {
#define S(f) {#f, offsetof(eo_nccl_api, f)}
        S(ncclGetUniqueId), S(ncclCommInitRank), S(ncclAllReduce), S(ncclGroupStart),
        S(ncclGroupEnd), S(ncclCommDestroy), S(ncclGetErrorString),
#undef S
    };
    memset(api, 0, sizeof *api);
    void *lib = dlopen("libnccl.so.2", RTLD_NOW | RTLD_LOCAL);
    if (!lib)
        return eo_errf(err, errlen, EO_ERR_NO_DEVICE,
                       "no NCCL: libnccl.so.2 not found (needed to sum CUDA gradients "
                       "across ranks; Debian: libnccl2 from the contrib/non-free CUDA "
                       "repositories)");
    for (size_t i = 0; i < sizeof slots / sizeof slots[0]; i++) {
        void *p = dlsym(lib, slots[i].name);
        if (!p) {
            dlclose(lib);
            memset(api, 0, sizeof *api);
            return eo_errf(err, errlen, EO_ERR_IO, "libnccl.so.2 has no %s", slots[i].name);
        }
        any_fn f;
        memcpy(&f, &p, sizeof f); /* object pointer bits into a function pointer */
        memcpy((char *)api + slots[i].offset, &f, sizeof f);
    }
    api->lib = lib;
    return EO_OK;
}

void eo_nccl_unload(eo_nccl_api *api)
{
    if (api && api->lib)
        dlclose(api->lib);
    if (api)
        memset(api, 0, sizeof *api);
}

static eo_status nccl_fail(const eo_nccl_api *api, int r, const char *what, char *err,
                           size_t errlen)
{
    const char *text = api->ncclGetErrorString ? api->ncclGetErrorString(r) : NULL;
    return eo_errf(err, errlen, EO_ERR_CUDA, "%s: NCCL error %d (%s)", what, r,
                   text ? text : "no text");
}

eo_status eo_nccl_init(eo_nccl *c, const eo_nccl_api *api, const eo_nccl_id *id, int size,
                       int rank, eo_nccl_stream stream, char *err, size_t errlen)
{
    memset(c, 0, sizeof *c);
    int r = api->ncclCommInitRank(&c->comm, size, *id, rank);
    if (r != EO_NCCL_SUCCESS)
        return nccl_fail(api, r, "ncclCommInitRank", err, errlen);
    c->api = api;
    c->stream = stream;
    c->rank = rank;
    c->size = size;
    return EO_OK;
}

eo_status eo_nccl_init_mpi(eo_nccl *c, const eo_nccl_api *api, eo_dist *d,
                           eo_nccl_stream stream, char *err, size_t errlen)
{
    eo_nccl_id id;
    memset(&id, 0, sizeof id);
    int r = d->rank == 0 ? api->ncclGetUniqueId(&id) : EO_NCCL_SUCCESS;
    /* Every rank must reach the broadcast, or the others wait forever:
     * rank 0 sends its result code along with the id. */
    unsigned char msg[sizeof(int) + sizeof id];
    memcpy(msg, &r, sizeof r);
    memcpy(msg + sizeof r, &id, sizeof id);
    eo_status s = eo_dist_bcast(d, msg, sizeof msg, 0, err, errlen);
    if (s != EO_OK)
        return s;
    memcpy(&r, msg, sizeof r);
    memcpy(&id, msg + sizeof r, sizeof id);
    if (r != EO_NCCL_SUCCESS)
        return nccl_fail(api, r, "ncclGetUniqueId (rank 0)", err, errlen);
    return eo_nccl_init(c, api, &id, d->size, d->rank, stream, err, errlen);
}

static eo_status nccl_allreduce(void *user, const eo_grad_buffer *b, int n, char *msg,
                                size_t msglen)
{
    eo_nccl *c = user;
    const eo_nccl_api *api = c->api;
    for (int i = 0; i < n; i++) {
        if (b[i].device != EO_CUDA)
            return eo_errf(msg, msglen, EO_ERR_DEVICE,
                           "gradient %d is in host memory: the NCCL hook sums CUDA tensors", i);
        if (b[i].dtype != EO_F32)
            return eo_errf(msg, msglen, EO_ERR_DTYPE, "gradient %d is %s, expected f32", i,
                           eo_dtype_name(b[i].dtype));
    }
    int r = api->ncclGroupStart();
    if (r != EO_NCCL_SUCCESS)
        return nccl_fail(api, r, "ncclGroupStart", msg, msglen);
    int bad = EO_NCCL_SUCCESS, which = -1;
    for (int i = 0; i < n && bad == EO_NCCL_SUCCESS; i++) {
        /* In place: NCCL allows sendbuf == recvbuf. */
        bad = api->ncclAllReduce(b[i].data, b[i].data, (size_t)b[i].count, EO_NCCL_FLOAT32,
                                 EO_NCCL_SUM, c->comm, c->stream);
        which = i;
    }
    /* The group is closed even after a failed call, or NCCL stays in it. */
    r = api->ncclGroupEnd();
    if (bad != EO_NCCL_SUCCESS) {
        char what[64];
        snprintf(what, sizeof what, "ncclAllReduce (gradient %d)", which);
        return nccl_fail(api, bad, what, msg, msglen);
    }
    return r == EO_NCCL_SUCCESS ? EO_OK : nccl_fail(api, r, "ncclGroupEnd", msg, msglen);
}

eo_grad_sync eo_nccl_grad_sync(eo_nccl *c)
{
    eo_grad_sync h = { nccl_allreduce, c };
    return h;
}

void eo_nccl_destroy(eo_nccl *c)
{
    if (c && c->api && c->comm)
        c->api->ncclCommDestroy(c->comm);
    if (c)
        memset(c, 0, sizeof *c);
}
