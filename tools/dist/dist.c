/* tools/dist/dist.c — the world, the rank-order sum, the CPU hook (see dist.h). */
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "tools/cli/errbuf.h"
#include "tools/dist/dist.h"

/* MPI counts are ints: long gradients are summed in windows of this many
 * floats (256 MiB). */
#define WINDOW ((size_t)1 << 26)

static eo_status mpi_fail(eo_dist *d, int rc, const char *what, char *err, size_t errlen)
{
    char text[256];
    return eo_errf(err, errlen, EO_ERR_IO, "%s: %s", what,
                   eo_mpi_error_text(&d->mpi, rc, text, sizeof text));
}

eo_status eo_dist_init(eo_dist *d, const char *mode, char *err, size_t errlen)
{
    memset(d, 0, sizeof *d);
    d->size = 1;
    d->ordered = 1;
    if (!mode || strcmp(mode, "auto") == 0)
        mode = eo_mpi_launched() ? "mpi" : "none";
    if (strcmp(mode, "none") == 0)
        return EO_OK;
    if (strcmp(mode, "mpi") != 0)
        return eo_errf(err, errlen, EO_ERR_ARG, "--dist auto|mpi|none, not '%s'", mode);
    eo_status s = eo_mpi_load(&d->mpi, err, errlen);
    if (s != EO_OK)
        return s;
    int rc = d->mpi.Init(NULL, NULL);
    if (rc != 0)
        return mpi_fail(d, rc, "MPI_Init", err, errlen);
    d->mpi.Comm_rank(d->mpi.comm_world, &d->rank);
    d->mpi.Comm_size(d->mpi.comm_world, &d->size);
    d->kind = EO_DIST_MPI;
    if (!(d->counts = malloc(4 * sizeof(int) * (size_t)d->size)))
        return eo_errf(err, errlen, EO_ERR_OOM, "no memory for %d ranks", d->size);
    const char *lr = getenv("OMPI_COMM_WORLD_LOCAL_RANK");
    d->local_rank = lr ? atoi(lr) : d->rank;
    const char *how = getenv("EO_DIST_REDUCE");
    d->ordered = !(how && strcmp(how, "mpi") == 0);
    return EO_OK;
}

void eo_dist_finalize(eo_dist *d)
{
    if (!d)
        return;
    if (d->kind == EO_DIST_MPI) {
        d->mpi.Barrier(d->mpi.comm_world);
        d->mpi.Finalize();
        eo_mpi_unload(&d->mpi);
    }
    free(d->flat);
    free(d->recv);
    free(d->counts);
    memset(d, 0, sizeof *d);
}

void eo_dist_abort(eo_dist *d, int code)
{
    if (d && d->kind == EO_DIST_MPI && d->size > 1)
        d->mpi.Abort(d->mpi.comm_world, code);
}

/* Room for n floats in flat and n + size in recv (a chunk from each rank). */
static eo_status reserve(eo_dist *d, size_t n, char *err, size_t errlen)
{
    size_t need = n + (size_t)d->size;
    if (need <= d->cap)
        return EO_OK;
    free(d->flat);
    free(d->recv);
    d->flat = malloc(need * sizeof(float));
    d->recv = malloc(need * sizeof(float));
    d->cap = d->flat && d->recv ? need : 0;
    if (!d->cap)
        return eo_errf(err, errlen, EO_ERR_OOM, "all-reduce: no memory for %zu floats", need);
    return EO_OK;
}

/* The reduce-scatter both sums share, over the shards d->counts holds
 * (counts, then offsets): every rank sends shard k of x to rank k, and
 * this rank adds the copies of its own shard in rank order into
 * d->recv[0 .. count[rank]). `what` names the caller in a failure. */
static eo_status scatter_add_in_rank_order(eo_dist *d, float *x, const char *what, char *err,
                                           size_t errlen)
{
    int W = d->size, r = d->rank;
    int *cnt = d->counts, *off = cnt + W, *rcnt = off + W, *roff = rcnt + W;
    int mine = cnt[r];
    for (int j = 0; j < W; j++) {
        rcnt[j] = mine;
        roff[j] = j * mine;
    }
    float *recv = d->recv;
    int rc = d->mpi.Alltoallv(x, cnt, off, d->mpi.type_float, recv, rcnt, roff,
                              d->mpi.type_float, d->mpi.comm_world);
    if (rc != 0)
        return mpi_fail(d, rc, what, err, errlen);
    /* recv[j*mine + i] is rank j's element; add them in rank order. */
    for (int j = 1; j < W; j++) {
        const float *src = recv + (size_t)j * (size_t)mine;
        for (int i = 0; i < mine; i++)
            recv[i] += src[i];
    }
    return EO_OK;
}

/* One window: the reduce-scatter in rank order, then the all-gather. */
static eo_status ordered_window(eo_dist *d, float *x, int n, char *err, size_t errlen)
{
    int W = d->size, r = d->rank;
    int *cnt = d->counts, *off = cnt + W;
    for (int k = 0; k < W; k++) {
        off[k] = (int)((long long)n * k / W);
        cnt[k] = (int)((long long)n * (k + 1) / W) - off[k];
    }
    eo_status s = scatter_add_in_rank_order(d, x, "all-reduce (MPI_Alltoallv)", err, errlen);
    if (s != EO_OK)
        return s;
    int rc = d->mpi.Allgatherv(d->recv, cnt[r], d->mpi.type_float, x, cnt, off,
                               d->mpi.type_float, d->mpi.comm_world);
    if (rc != 0)
        return mpi_fail(d, rc, "all-reduce (MPI_Allgatherv)", err, errlen);
    return EO_OK;
}

eo_status eo_dist_sum_f32(eo_dist *d, float *x, size_t n, char *err, size_t errlen)
{
    if (!d || d->size == 1 || n == 0)
        return EO_OK;
    eo_status s = reserve(d, n < WINDOW ? n : WINDOW, err, errlen);
    for (size_t at = 0; at < n && s == EO_OK; at += WINDOW) {
        int len = (int)(n - at < WINDOW ? n - at : WINDOW);
        if (d->ordered) {
            s = ordered_window(d, x + at, len, err, errlen);
        } else {
            int rc = d->mpi.Allreduce(x + at, d->recv, len, d->mpi.type_float, d->mpi.op_sum,
                                      d->mpi.comm_world);
            if (rc != 0)
                return mpi_fail(d, rc, "all-reduce (MPI_Allreduce)", err, errlen);
            memcpy(x + at, d->recv, (size_t)len * sizeof(float));
        }
    }
    return s;
}

eo_status eo_dist_sum(eo_dist *d, double *v, int n, char *err, size_t errlen)
{
    if (!d || d->size == 1 || n <= 0)
        return EO_OK;
    if (n > 64)
        return eo_errf(err, errlen, EO_ERR_ARG, "eo_dist_sum: %d values, at most 64", n);
    double *all = malloc(sizeof(double) * (size_t)n * (size_t)d->size);
    if (!all)
        return eo_errf(err, errlen, EO_ERR_OOM, "eo_dist_sum: no memory");
    int rc = d->mpi.Allgather(v, n, d->mpi.type_double, all, n, d->mpi.type_double,
                              d->mpi.comm_world);
    if (rc == 0) {
        for (int i = 0; i < n; i++) {
            double acc = all[i];
            for (int j = 1; j < d->size; j++)
                acc += all[(size_t)j * (size_t)n + (size_t)i];
            v[i] = acc;
        }
    }
    free(all);
    return rc == 0 ? EO_OK : mpi_fail(d, rc, "sum (MPI_Allgather)", err, errlen);
}

eo_status eo_dist_bcast(eo_dist *d, void *buf, size_t bytes, int root, char *err,
                        size_t errlen)
{
    if (!d || d->size == 1)
        return EO_OK;
    int rc = d->mpi.Bcast(buf, (int)bytes, d->mpi.type_byte, root, d->mpi.comm_world);
    return rc == 0 ? EO_OK : mpi_fail(d, rc, "MPI_Bcast", err, errlen);
}

static double seconds_between(struct timespec a, struct timespec b)
{
    return (double)(b.tv_sec - a.tv_sec) + 1e-9 * (double)(b.tv_nsec - a.tv_nsec);
}

/* ---- ZeRO-1 -------------------------------------------------------------- */

void eo_dist_shard(const eo_dist *d, size_t total, size_t *begin, size_t *count)
{
    eo_dist_slice(total, d && d->size > 1 ? (size_t)d->size : 1, d ? (size_t)d->rank : 0, begin,
                  count);
}

/* counts[0..W) and offsets of the shards of n elements, into d->counts. */
static eo_status shard_counts(eo_dist *d, size_t n, const char *what, char *err, size_t errlen)
{
    if (n > (size_t)INT_MAX)
        return eo_errf(err, errlen, EO_ERR_ARG, "%s: %zu elements, MPI counts are ints", what, n);
    int *cnt = d->counts, *off = cnt + d->size;
    for (int k = 0; k < d->size; k++) {
        size_t b, c;
        eo_dist_slice(n, (size_t)d->size, (size_t)k, &b, &c);
        off[k] = (int)b;
        cnt[k] = (int)c;
    }
    return EO_OK;
}

/* x[0..n): this rank's shard replaced by its rank-order sum over the
 * ranks (the first half of ordered_window, over the whole vector at
 * once, so the shard is one contiguous range); the rest is left alone. */
static eo_status reduce_scatter(eo_dist *d, float *x, size_t n, char *err, size_t errlen)
{
    eo_status s = shard_counts(d, n, "reduce-scatter", err, errlen);
    if (s != EO_OK)
        return s;
    s = scatter_add_in_rank_order(d, x, "reduce-scatter (MPI_Alltoallv)", err, errlen);
    if (s != EO_OK)
        return s;
    int W = d->size, r = d->rank, *cnt = d->counts, *off = cnt + W;
    memcpy(x + off[r], d->recv, (size_t)cnt[r] * sizeof(float));
    return EO_OK;
}

/* Every f32 CPU buffer packed into d->flat (reserved for their total). */
static eo_status pack(eo_dist *d, const eo_grad_buffer *b, int n, size_t *total, char *msg,
                      size_t msglen)
{
    size_t t = 0;
    for (int i = 0; i < n; i++) {
        if (b[i].device != EO_CPU)
            return eo_errf(msg, msglen, EO_ERR_DEVICE,
                           "tensor %d is on the GPU: the MPI hook sums CPU tensors (CUDA "
                           "gradients go through NCCL)", i);
        if (b[i].dtype != EO_F32)
            return eo_errf(msg, msglen, EO_ERR_DTYPE, "tensor %d is %s, expected f32", i,
                           eo_dtype_name(b[i].dtype));
        t += (size_t)b[i].count;
    }
    eo_status s = reserve(d, t, msg, msglen);
    if (s != EO_OK)
        return s;
    size_t at = 0;
    for (int i = 0; i < n; i++) {
        memcpy(d->flat + at, b[i].data, (size_t)b[i].count * sizeof(float));
        at += (size_t)b[i].count;
    }
    *total = t;
    return EO_OK;
}

static void unpack(const eo_dist *d, const eo_grad_buffer *b, int n)
{
    size_t at = 0;
    for (int i = 0; i < n; i++) {
        memcpy(b[i].data, d->flat + at, (size_t)b[i].count * sizeof(float));
        at += (size_t)b[i].count;
    }
}

/* The ZeRO-1 hook: only this rank's shard of the flattened gradients is
 * summed, in rank order (the values the full all-reduce would give
 * there); the rest keeps the rank's own gradient, which nothing reads. */
static eo_status zero_reduce_scatter(void *user, const eo_grad_buffer *b, int n, char *msg,
                                     size_t msglen)
{
    eo_dist *d = user;
    size_t total;
    struct timespec t0, t1, t2;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    d->mpi.Barrier(d->mpi.comm_world);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    eo_status s = pack(d, b, n, &total, msg, msglen);
    if (s == EO_OK)
        s = reduce_scatter(d, d->flat, total, msg, msglen);
    if (s != EO_OK)
        return s;
    unpack(d, b, n);
    clock_gettime(CLOCK_MONOTONIC, &t2);
    d->hook_wait_seconds += seconds_between(t0, t1);
    d->hook_seconds += seconds_between(t1, t2);
    d->hook_calls++;
    return EO_OK;
}

eo_grad_sync eo_dist_grad_sync_zero(eo_dist *d)
{
    eo_grad_sync h = { NULL, NULL };
    if (d && d->size > 1) {
        h.allreduce = zero_reduce_scatter;
        h.user = d;
    }
    return h;
}

eo_status eo_dist_gather_params(eo_dist *d, const eo_params *ps, char *err, size_t errlen)
{
    if (!d || d->size == 1 || ps->count == 0)
        return EO_OK;
    eo_grad_buffer *b = malloc(sizeof *b * (size_t)ps->count);
    if (!b)
        return eo_errf(err, errlen, EO_ERR_OOM, "all-gather: no memory");
    for (int i = 0; i < ps->count; i++) {
        const eo_tensor *p = ps->items[i];
        eo_grad_buffer one = { p->data, eo_numel(p), p->dtype, p->device };
        b[i] = one;
    }
    size_t total = 0;
    eo_status s = pack(d, b, ps->count, &total, err, errlen);
    if (s == EO_OK)
        s = shard_counts(d, total, "all-gather", err, errlen);
    if (s == EO_OK) {
        int *cnt = d->counts, *off = cnt + d->size, r = d->rank;
        /* Not MPI_IN_PLACE: the shard goes out from the scratch buffer. */
        memcpy(d->recv, d->flat + off[r], (size_t)cnt[r] * sizeof(float));
        int rc = d->mpi.Allgatherv(d->recv, cnt[r], d->mpi.type_float, d->flat, cnt, off,
                                   d->mpi.type_float, d->mpi.comm_world);
        if (rc != 0)
            s = mpi_fail(d, rc, "all-gather (MPI_Allgatherv)", err, errlen);
    }
    if (s == EO_OK)
        unpack(d, b, ps->count);
    free(b);
    return s;
}

/* ---- the all-reduce hook ---------------------------------------------------- */

/* The hook: pack every gradient into one buffer (one collective instead
 * of one per parameter: latency, not bandwidth, dominates small ones),
 * sum it, unpack. */
static eo_status cpu_allreduce(void *user, const eo_grad_buffer *b, int n, char *msg,
                               size_t msglen)
{
    eo_dist *d = user;
    size_t total = 0;
    for (int i = 0; i < n; i++) {
        if (b[i].device != EO_CPU)
            return eo_errf(msg, msglen, EO_ERR_DEVICE,
                           "gradient %d is on the GPU: the MPI hook sums CPU tensors (CUDA "
                           "gradients go through NCCL)", i);
        if (b[i].dtype != EO_F32)
            return eo_errf(msg, msglen, EO_ERR_DTYPE, "gradient %d is %s, expected f32", i,
                           eo_dtype_name(b[i].dtype));
        total += (size_t)b[i].count;
    }
    eo_status s = reserve(d, total, msg, msglen);
    if (s != EO_OK)
        return s;
    /* The barrier costs microseconds and splits the hook's time into
     * load imbalance (ranks arriving late) and the sum itself. */
    struct timespec t0, t1, t2;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    d->mpi.Barrier(d->mpi.comm_world);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    size_t at = 0;
    for (int i = 0; i < n; i++) {
        memcpy(d->flat + at, b[i].data, (size_t)b[i].count * sizeof(float));
        at += (size_t)b[i].count;
    }
    /* The windowed sum uses d->recv as its scratch, d->flat stays ours. */
    s = eo_dist_sum_f32(d, d->flat, total, msg, msglen);
    if (s != EO_OK)
        return s;
    at = 0;
    for (int i = 0; i < n; i++) {
        memcpy(b[i].data, d->flat + at, (size_t)b[i].count * sizeof(float));
        at += (size_t)b[i].count;
    }
    clock_gettime(CLOCK_MONOTONIC, &t2);
    d->hook_wait_seconds += seconds_between(t0, t1);
    d->hook_seconds += seconds_between(t1, t2);
    d->hook_calls++;
    return EO_OK;
}

eo_grad_sync eo_dist_grad_sync(eo_dist *d)
{
    eo_grad_sync h = { NULL, NULL };
    if (d && d->size > 1) {
        h.allreduce = cpu_allreduce;
        h.user = d;
    }
    return h;
}
