/* tools/formats/safetensors_write.c — the safetensors writer (see safetensors.h).
 *
 * The header is built in memory first so that every argument is checked
 * before a byte reaches the disk, and so the length prefix is known. Keys
 * are written compactly in the caller's order, metadata first as the
 * reference writer does (our data checksum, EO_ST_CHECKSUM_KEY, last);
 * the header is then padded with spaces to a multiple of 8 so that the
 * data area starts 8-aligned in the file. The bytes reach the disk through
 * tools/formats/durable.h: a temporary, fsync, rename, directory fsync. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "tools/cli/errbuf.h"
#include "tools/formats/durable.h"
#include "alloc/byteorder.h"
#include "alloc/checked.h"
#include "core/json.h"
#include "tools/formats/safetensors.h"

typedef struct sbuf {
    char *p;
    size_t n, cap;
    int oom;
} sbuf;

static void put(sbuf *b, const char *s, size_t n)
{
    size_t need; /* b->n + n + 1, the terminating NUL included */
    if (b->oom || eo_size_add_overflows(b->n, n, &need) || eo_size_add_overflows(need, 1, &need)) {
        b->oom = 1; /* a length that cannot be held reads as out of memory */
        return;
    }
    if (need > b->cap) {
        size_t cap;
        char *p = eo_grow_overflows(b->cap, need, 256, 1, &cap) ? NULL : realloc(b->p, cap);
        if (!p) {
            b->oom = 1;
            return;
        }
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = '\0';
}

static void puts_(sbuf *b, const char *s)
{
    put(b, s, strlen(s));
}

static void putu(sbuf *b, unsigned long long v)
{
    char t[24];
    int w = snprintf(t, sizeof t, "%llu", v);
    put(b, t, (size_t)w);
}

/* A JSON string literal; the text is already known to be valid UTF-8,
 * so only quotes, backslashes and control bytes need escaping. */
static void put_str(sbuf *b, const char *s)
{
    put(b, "\"", 1);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\') {
            char e[2] = {'\\', (char)c};
            put(b, e, 2);
        } else if (c < 0x20) {
            char e[8];
            snprintf(e, sizeof e, "\\u%04x", c);
            put(b, e, 6);
        } else {
            put(b, (const char *)&c, 1);
        }
    }
    put(b, "\"", 1);
}

static int by_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Names are checked before anything is built: a header we could not
 * read back ourselves must never be written. */
static eo_status check_args(const char *path, const eo_st_tensor *t, size_t n,
                            const eo_st_meta *meta, size_t nmeta, size_t *sizes, char *err,
                            size_t errlen)
{
    size_t total = 0;
    for (size_t k = 0; k < n; k++) {
        const char *nm = t[k].name;
        if (!nm || !nm[0])
            return eo_errf(err, errlen, EO_ERR_ARG, "%s: tensor %zu has no name", path, k);
        if (!eo_utf8_valid(nm))
            return eo_errf(err, errlen, EO_ERR_ARG, "%s: tensor %zu: name is not valid UTF-8",
                           path, k);
        if (strcmp(nm, "__metadata__") == 0)
            return eo_errf(err, errlen, EO_ERR_ARG,
                           "%s: tensor %zu: the name \"__metadata__\" is reserved", path, k);
        size_t es = eo_st_dtype_size(t[k].dtype);
        if (es == 0)
            return eo_errf(err, errlen, EO_ERR_ARG, "%s: tensor \"%s\": unknown dtype %d", path,
                           nm, (int)t[k].dtype);
        if (t[k].rank < 0 || t[k].rank > EO_ST_MAX_RANK)
            return eo_errf(err, errlen, EO_ERR_ARG, "%s: tensor \"%s\": rank %d, expected 0..%d",
                           path, nm, t[k].rank, EO_ST_MAX_RANK);
        size_t bytes = es;
        for (int d = 0; d < t[k].rank; d++) {
            if (t[k].shape[d] != 0 && bytes > SIZE_MAX / t[k].shape[d])
                return eo_errf(err, errlen, EO_ERR_ARG, "%s: tensor \"%s\": shape too large",
                               path, nm);
            bytes *= (size_t)t[k].shape[d];
        }
        if (bytes > 0 && !t[k].data)
            return eo_errf(err, errlen, EO_ERR_ARG, "%s: tensor \"%s\": NULL data for %zu bytes",
                           path, nm, bytes);
        sizes[k] = bytes;
        /* The data offsets are running sums of these: each must fit. */
        if (eo_size_add_overflows(total, bytes, &total))
            return eo_errf(err, errlen, EO_ERR_ARG,
                           "%s: tensor \"%s\": the data offsets pass SIZE_MAX", path, nm);
    }
    for (size_t k = 0; k < nmeta; k++) {
        if (!meta[k].key || !meta[k].value)
            return eo_errf(err, errlen, EO_ERR_ARG, "%s: metadata pair %zu has a NULL %s", path,
                           k, meta[k].key ? "value" : "key");
        if (!eo_utf8_valid(meta[k].key) || !eo_utf8_valid(meta[k].value))
            return eo_errf(err, errlen, EO_ERR_ARG, "%s: metadata pair %zu is not valid UTF-8",
                           path, k);
    }
    /* Duplicates: sort copies of the names and compare neighbours. */
    size_t most = n > nmeta ? n : nmeta;
    if (most < 2)
        return EO_OK;
    const char **names = malloc(most * sizeof *names);
    if (!names)
        return eo_errf(err, errlen, EO_ERR_OOM, "%s: out of memory", path);
    eo_status st = EO_OK;
    for (int pass = 0; pass < 2 && st == EO_OK; pass++) {
        size_t m = pass ? nmeta : n;
        for (size_t k = 0; k < m; k++)
            names[k] = pass ? meta[k].key : t[k].name;
        qsort(names, m, sizeof *names, by_str);
        for (size_t k = 1; k < m && st == EO_OK; k++)
            if (strcmp(names[k - 1], names[k]) == 0)
                st = eo_errf(err, errlen, EO_ERR_ARG, "%s: %s \"%s\" appears twice", path,
                             pass ? "metadata key" : "tensor name", names[k]);
    }
    free(names);
    return st;
}

static void build_header(sbuf *b, const eo_st_tensor *t, size_t n, const eo_st_meta *meta,
                         size_t nmeta, const size_t *sizes)
{
    puts_(b, "{");
    int first = 1;
    if (nmeta > 0) {
        puts_(b, "\"__metadata__\":{");
        for (size_t k = 0; k < nmeta; k++) {
            if (k)
                puts_(b, ",");
            put_str(b, meta[k].key);
            puts_(b, ":");
            put_str(b, meta[k].value);
        }
        puts_(b, "}");
        first = 0;
    }
    size_t off = 0;
    for (size_t k = 0; k < n; k++) {
        if (!first)
            puts_(b, ",");
        first = 0;
        put_str(b, t[k].name);
        puts_(b, ":{\"dtype\":");
        put_str(b, eo_st_dtype_name(t[k].dtype));
        puts_(b, ",\"shape\":[");
        for (int d = 0; d < t[k].rank; d++) {
            if (d)
                puts_(b, ",");
            putu(b, t[k].shape[d]);
        }
        puts_(b, "],\"data_offsets\":[");
        putu(b, off);
        puts_(b, ",");
        putu(b, off + sizes[k]);
        puts_(b, "]}");
        off += sizes[k];
    }
    puts_(b, "}");
    while (b->n % 8 != 0)
        puts_(b, " ");
}

/* Where a tensor's little-endian bytes go: into the CRC (a first pass,
 * since the checksum sits in the header before the data) or the file. */
typedef struct sink {
    eo_durable_file *f; /* NULL: checksum only */
    uint32_t crc;
} sink;

static int emit(sink *k, const void *p, size_t n)
{
    if (!k->f) {
        k->crc = eo_st_crc32(k->crc, p, n);
        return 1;
    }
    return eo_durable_put(k->f, p, n);
}

/* A tensor's bytes, little-endian: as they are on a little-endian host;
 * element by element through a small buffer on a big-endian one. */
static int write_le(sink *k, const eo_st_tensor *t, size_t bytes)
{
    size_t es = eo_st_dtype_size(t->dtype);
    if (bytes == 0)
        return 1;
    if (eo_host_is_le() || es == 1)
        return emit(k, t->data, bytes);
    const unsigned char *src = t->data;
    unsigned char chunk[4096];
    for (size_t at = 0; at < bytes;) {
        size_t n = bytes - at < sizeof chunk ? bytes - at : sizeof chunk;
        for (size_t i = 0; i < n; i += es)
            for (size_t b = 0; b < es; b++)
                chunk[i + b] = src[at + i + es - 1 - b];
        if (!emit(k, chunk, n))
            return 0;
        at += n;
    }
    return 1;
}

typedef struct job {
    const sbuf *h;
    const eo_st_tensor *t;
    size_t n;
    const size_t *sizes;
} job;

/* The durable writer's fill: length, header, data. A failed put stops
 * here; eo_durable_replace reports it with its errno. */
static eo_status fill(eo_durable_file *f, void *arg, char *err, size_t errlen)
{
    (void)err;
    (void)errlen;
    const job *j = arg;
    sink k = {f, 0};
    unsigned char len[8];
    eo_le64_store(len, j->h->n);
    int ok = eo_durable_put(f, len, 8) && eo_durable_put(f, j->h->p, j->h->n);
    for (size_t i = 0; i < j->n && ok; i++)
        ok = write_le(&k, &j->t[i], j->sizes[i]);
    return EO_OK;
}

eo_status eo_st_write(const char *path, const eo_st_tensor *t, size_t n, const eo_st_meta *meta,
                      size_t nmeta, char *err, size_t errlen)
{
    if (!path || (n > 0 && !t) || (nmeta > 0 && !meta))
        return eo_errf(err, errlen, EO_ERR_ARG, "eo_st_write: NULL %s",
                       !path ? "path" : (n > 0 && !t) ? "tensors" : "metadata");
    size_t *sizes = calloc(n ? n : 1, sizeof *sizes);
    /* The caller's pairs, less any checksum of theirs, and ours last. */
    eo_st_meta *all = calloc(nmeta + 1, sizeof *all);
    if (!sizes || !all) {
        free(sizes);
        free(all);
        return eo_errf(err, errlen, EO_ERR_OOM, "%s: out of memory", path);
    }
    sbuf h = {0};
    eo_status st = check_args(path, t, n, meta, nmeta, sizes, err, errlen);
    char crc[16];
    if (st == EO_OK) {
        sink k = {NULL, 0};
        for (size_t i = 0; i < n; i++)
            write_le(&k, &t[i], sizes[i]);
        snprintf(crc, sizeof crc, "%08lx", (unsigned long)k.crc);
        size_t m = 0;
        for (size_t i = 0; i < nmeta; i++)
            if (strcmp(meta[i].key, EO_ST_CHECKSUM_KEY) != 0)
                all[m++] = meta[i];
        all[m].key = EO_ST_CHECKSUM_KEY;
        all[m].value = crc;
        build_header(&h, t, n, all, m + 1, sizes);
        if (h.oom)
            st = eo_errf(err, errlen, EO_ERR_OOM, "%s: out of memory for the header", path);
    }
    if (st == EO_OK) {
        job j = {&h, t, n, sizes};
        st = eo_durable_replace(path, fill, &j, err, errlen);
    }
    free(h.p);
    free(all);
    free(sizes);
    return st;
}
