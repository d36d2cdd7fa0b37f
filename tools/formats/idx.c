/* tools/formats/idx.c — the IDX reader (see idx.h for the format and the rules).
 *
 * Plain and gzip files go through one small "byte source" so the header
 * checks and length checks are written once. The gzip side drives zlib's
 * inflate directly instead of gzread because gzread is deliberately lenient
 * (it passes non-gzip files through and ignores garbage after a stream),
 * and here those cases must be reported, not smoothed over. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#include "tools/cli/errbuf.h"
#include "tools/cli/files.h"
#include "tools/formats/idx.h"

enum { SRC_BUF = 1 << 16 };

typedef struct src {
    FILE *f;
    const char *path;
    int gz;
    int zinit;
    int member_done; /* inflate reached the end of the current gzip member */
    z_stream zs;
    unsigned char in[SRC_BUF];
} src;

/* Tops up the input buffer, keeping unconsumed bytes at its front. */
static eo_status src_refill(src *s, char *err, size_t errlen)
{
    if (s->zs.avail_in > 0 && s->zs.next_in != s->in)
        memmove(s->in, s->zs.next_in, s->zs.avail_in);
    s->zs.next_in = s->in;
    size_t room = SRC_BUF - s->zs.avail_in;
    size_t got = fread(s->in + s->zs.avail_in, 1, room, s->f);
    s->zs.avail_in += (uInt)got;
    if (got < room && ferror(s->f))
        return eo_errf(err, errlen, EO_ERR_IO, "%s: read error: %s", s->path, strerror(errno));
    return EO_OK;
}

/* Sets up the source over an open stream, positioned at its start. The
 * gzip magic decides, not the name; reading it and seeking back needs a
 * seekable stream (a file, or fmemopen's memory). */
static eo_status src_open(src *s, FILE *f, const char *path, char *err, size_t errlen)
{
    s->path = path;
    s->f = f;
    unsigned char magic[2];
    size_t got = fread(magic, 1, 2, s->f);
    if (got < 2 && ferror(s->f))
        return eo_errf(err, errlen, EO_ERR_IO, "%s: read error: %s", path, strerror(errno));
    s->gz = got == 2 && magic[0] == 0x1f && magic[1] == 0x8b;
    if (fseek(s->f, 0, SEEK_SET) != 0)
        return eo_errf(err, errlen, EO_ERR_IO, "%s: cannot seek: %s", path, strerror(errno));
    if (s->gz) {
        /* 16 + MAX_WBITS: expect a gzip wrapper and check its CRC-32 and length. */
        if (inflateInit2(&s->zs, 16 + MAX_WBITS) != Z_OK)
            return eo_errf(err, errlen, EO_ERR_OOM, "%s: cannot start the gzip decoder", path);
        s->zinit = 1;
    }
    return EO_OK;
}

static void src_close(src *s)
{
    if (s->zinit)
        inflateEnd(&s->zs);
}

/* Reads up to n bytes of (decompressed) content; *got < n only at the
 * clean end of the content. A damaged or cut-short gzip stream is an error. */
static eo_status src_read(src *s, void *dst, size_t n, size_t *got, char *err, size_t errlen)
{
    *got = 0;
    if (!s->gz) {
        *got = fread(dst, 1, n, s->f);
        if (*got < n && ferror(s->f))
            return eo_errf(err, errlen, EO_ERR_IO, "%s: read error: %s", s->path, strerror(errno));
        return EO_OK;
    }
    unsigned char *out = dst;
    while (*got < n) {
        eo_status st;
        if (s->member_done) {
            /* A gzip file may hold several members back to back (that is
             * what `cat a.gz b.gz` makes); anything else after the end of a
             * member is garbage. */
            if (s->zs.avail_in < 2 && (st = src_refill(s, err, errlen)) != EO_OK)
                return st;
            if (s->zs.avail_in == 0)
                return EO_OK;
            if (s->zs.avail_in < 2 || s->zs.next_in[0] != 0x1f || s->zs.next_in[1] != 0x8b)
                return eo_errf(err, errlen, EO_ERR_FORMAT,
                               "%s: trailing bytes after the end of the gzip stream "
                               "(expected end of file or another gzip member)", s->path);
            inflateReset(&s->zs);
            s->member_done = 0;
        }
        if (s->zs.avail_in == 0) {
            if ((st = src_refill(s, err, errlen)) != EO_OK)
                return st;
            if (s->zs.avail_in == 0)
                return eo_errf(err, errlen, EO_ERR_FORMAT,
                               "%s: truncated gzip stream: the compressed file ends before "
                               "the stream does",
                               s->path);
        }
        size_t want = n - *got;
        if (want > (1u << 30))
            want = 1u << 30;
        s->zs.next_out = out + *got;
        s->zs.avail_out = (uInt)want;
        int rc = inflate(&s->zs, Z_NO_FLUSH);
        *got += want - s->zs.avail_out;
        if (rc == Z_STREAM_END)
            s->member_done = 1;
        else if (rc == Z_MEM_ERROR)
            return eo_errf(err, errlen, EO_ERR_OOM, "%s: out of memory in the gzip decoder", s->path);
        else if (rc != Z_OK)
            return eo_errf(err, errlen, EO_ERR_FORMAT, "%s: corrupt gzip data: %s", s->path,
                           s->zs.msg ? s->zs.msg : "inflate failed");
    }
    return EO_OK;
}

static const char *dtype_name(unsigned t)
{
    switch (t) {
    case 0x08: return "unsigned byte";
    case 0x09: return "signed byte";
    case 0x0B: return "16-bit integer";
    case 0x0C: return "32-bit integer";
    case 0x0D: return "32-bit float";
    case 0x0E: return "64-bit float";
    default: return "not a defined IDX type";
    }
}

/* Bytes per element of a defined IDX type. */
static size_t dtype_size(unsigned t)
{
    return t == 0x08 || t == 0x09 ? 1 : t == 0x0B ? 2 : t == 0x0C || t == 0x0D ? 4 : 8;
}

static void dims_str(char *buf, size_t len, const uint32_t *dims, int rank)
{
    size_t at = 0;
    buf[0] = '\0';
    for (int i = 0; i < rank && at < len; i++) {
        int w = snprintf(buf + at, len - at, i ? "x%lu" : "%lu", (unsigned long)dims[i]);
        if (w < 0)
            break;
        at += (size_t)w;
    }
}

/* Checks the header; fills rank, dims and count, and *bytes (count x
 * element size). */
static eo_status read_header(src *s, eo_idx *x, size_t *bytes, char *err, size_t errlen)
{
    unsigned char h[4 + 4 * EO_IDX_MAX_RANK];
    size_t got;
    eo_status st = src_read(s, h, 4, &got, err, errlen);
    if (st != EO_OK)
        return st;
    if (got < 4)
        return eo_errf(err, errlen, EO_ERR_FORMAT,
                       "%s: truncated: an IDX header needs at least 4 bytes, file has %zu",
                       s->path, got);
    if (h[0] != 0 || h[1] != 0)
        return eo_errf(err, errlen, EO_ERR_FORMAT,
                       "%s: not an IDX file: it starts with bytes %02x %02x, expected 00 00",
                       s->path, h[0], h[1]);
    if (h[2] != 0x08)
        return eo_errf(err, errlen, EO_ERR_FORMAT,
                       "%s: IDX element type 0x%02x (%s) is not supported: expected 0x08 (unsigned byte)",
                       s->path, h[2], dtype_name(h[2]));
    int rank = h[3];
    if (rank < 1 || rank > EO_IDX_MAX_RANK)
        return eo_errf(err, errlen, EO_ERR_FORMAT,
                       "%s: IDX rank %d is out of range: expected 1..%d", s->path, rank,
                       EO_IDX_MAX_RANK);
    size_t need = 4 * (size_t)rank;
    if ((st = src_read(s, h + 4, need, &got, err, errlen)) != EO_OK)
        return st;
    if (got < need)
        return eo_errf(err, errlen, EO_ERR_FORMAT,
                       "%s: truncated: a rank-%d IDX header needs %zu bytes, file has %zu",
                       s->path, rank, 4 + need, 4 + got);
    x->rank = rank;
    for (int i = 0; i < rank; i++) {
        const unsigned char *p = h + 4 + 4 * i;
        x->dims[i] = (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
        if (x->dims[i] == 0)
            return eo_errf(err, errlen, EO_ERR_FORMAT,
                           "%s: IDX dimension %d of %d is 0: expected at least 1", s->path,
                           i + 1, rank);
    }
    /* The declared size: each factor is checked against what is left of
     * the cap before multiplying, so the product never wraps (4 dims of
     * up to 2^32 - 1 would overflow any integer type). */
    size_t esize = dtype_size(h[2]), count = 1;
    int too_big = 0;
    for (int i = 0; i < rank && !too_big; i++) {
        too_big = x->dims[i] > EO_IDX_MAX_ELEMS / count;
        if (!too_big)
            count *= x->dims[i];
    }
    if (too_big || count > SIZE_MAX / esize) {
        char d[64];
        dims_str(d, sizeof d, x->dims, rank);
        return eo_errf(err, errlen, EO_ERR_FORMAT,
                       "%s: IDX dimensions %s are more than the limit of %zu elements",
                       s->path, d, (size_t)EO_IDX_MAX_ELEMS);
    }
    x->count = count;
    *bytes = count * esize;
    return EO_OK;
}

/* Bytes from the current position to the end of a plain stream, or -1
 * when the stream cannot say (a pipe). */
static long long bytes_left(FILE *f)
{
    long here = ftell(f);
    if (here < 0 || fseek(f, 0, SEEK_END) != 0)
        return -1;
    long end = ftell(f);
    if (fseek(f, here, SEEK_SET) != 0 || end < here)
        return -1;
    return (long long)(end - here);
}

static eo_status read_body(src *s, eo_idx *x, size_t bytes, int whole, char *err,
                           size_t errlen)
{
    char d[64];
    dims_str(d, sizeof d, x->dims, x->rank);
    const char *what = s->gz ? "decompressed file" : "file";
    /* A header is only a claim: a 50-byte file may declare 2^31 elements.
     * A plain file's length is known, so compare before allocating; a gzip
     * stream's is not (its trailer holds the length mod 2^32, of the last
     * member only), so its buffer grows with the data actually decoded
     * and never gets more than twice ahead of it. */
    if (!s->gz) {
        long long left = bytes_left(s->f);
        if (left >= 0 && (unsigned long long)left < bytes)
            return eo_errf(err, errlen, EO_ERR_FORMAT,
                           "%s: truncated: header says %s = %zu bytes of data, %s has %lld",
                           s->path, d, bytes, what, left);
    }
    size_t cap = 0, got = 0;
    while (got < bytes) {
        if (got == cap) {
            size_t nc = cap ? (cap > bytes / 2 ? bytes : cap * 2) : (bytes < SRC_BUF ? bytes : SRC_BUF);
            unsigned char *nb = realloc(x->data, nc);
            if (!nb)
                return eo_errf(err, errlen, EO_ERR_OOM,
                               "%s: cannot allocate %zu bytes for %s data (header says %zu)",
                               s->path, nc, d, bytes);
            x->data = nb;
            cap = nc;
        }
        size_t want = cap - got, n;
        eo_status st = src_read(s, x->data + got, want, &n, err, errlen);
        if (st != EO_OK)
            return st;
        got += n;
        if (n < want) /* the content ended */
            break;
    }
    if (got < bytes)
        return eo_errf(err, errlen, EO_ERR_FORMAT,
                       "%s: truncated: header says %s = %zu bytes of data, %s has %zu",
                       s->path, d, bytes, what, got);
    if (!whole)
        return EO_OK; /* the records past the limit are not ours to check */
    /* Count what is left, up to a bound, so the message can say how much. */
    unsigned char scratch[4096];
    size_t extra = 0;
    do {
        eo_status st = src_read(s, scratch, sizeof scratch, &got, err, errlen);
        if (st != EO_OK)
            return st;
        extra += got;
    } while (got == sizeof scratch && extra < ((size_t)1 << 20));
    if (extra > 0)
        return eo_errf(err, errlen, EO_ERR_FORMAT,
                       "%s: %s%zu trailing bytes after the %zu bytes of data the header "
                       "describes (%s): expected end of %s",
                       s->path, got == sizeof scratch ? "at least " : "", extra, bytes, d,
                       what);
    return EO_OK;
}

eo_status eo_idx_read(FILE *f, const char *name, eo_idx *out, char *err, size_t errlen)
{
    return eo_idx_read_first(f, name, 0, out, err, errlen);
}

eo_status eo_idx_read_first(FILE *f, const char *name, size_t max, eo_idx *out, char *err,
                            size_t errlen)
{
    if (!f || !name || !out)
        return eo_errf(err, errlen, EO_ERR_ARG, "eo_idx_read: NULL %s",
                       !f ? "stream" : !name ? "name" : "out");
    memset(out, 0, sizeof *out);
    src *s = calloc(1, sizeof *s);
    if (!s)
        return eo_errf(err, errlen, EO_ERR_OOM, "%s: out of memory", name);
    size_t bytes = 0;
    eo_status st = src_open(s, f, name, err, errlen);
    if (st == EO_OK)
        st = read_header(s, out, &bytes, err, errlen);
    int whole = max == 0 || max >= out->dims[0];
    if (st == EO_OK && !whole) {
        /* count / dims[0] is the record size; fewer records, fewer bytes
         * (no product here can grow past the checked one). */
        size_t rec = out->count / out->dims[0];
        bytes = bytes / out->count * rec * max;
        out->count = rec * max;
        out->dims[0] = (uint32_t)max;
    }
    if (st == EO_OK)
        st = read_body(s, out, bytes, whole, err, errlen);
    src_close(s);
    free(s);
    if (st != EO_OK)
        eo_idx_free(out);
    return st;
}

eo_status eo_idx_load(const char *path, eo_idx *out, char *err, size_t errlen)
{
    return eo_idx_load_first(path, 0, out, err, errlen);
}

eo_status eo_idx_load_first(const char *path, size_t max, eo_idx *out, char *err, size_t errlen)
{
    if (!path || !out)
        return eo_errf(err, errlen, EO_ERR_ARG, "eo_idx_load: NULL %s", path ? "out" : "path");
    memset(out, 0, sizeof *out);
    /* A FIFO or device has no length to check the header against (and
     * opening a FIFO would wait for a writer), a directory fails oddly:
     * the shared opener refuses anything but a regular file, by name,
     * before reading. eo_idx_read keeps taking any seekable stream the
     * caller opened. */
    FILE *f;
    eo_status ost = eo_file_open_read(path, "IDX", &f, NULL, err, errlen);
    if (ost != EO_OK)
        return ost;
    eo_status st = eo_idx_read_first(f, path, max, out, err, errlen);
    fclose(f);
    return st;
}

void eo_idx_shape_str(const eo_idx *x, char *buf, size_t len)
{
    if (!buf || len == 0)
        return;
    /* A rank outside 1..EO_IDX_MAX_RANK (a struct never filled by the
     * reader) would walk past dims: print nothing for it. */
    if (!x || x->rank < 1 || x->rank > EO_IDX_MAX_RANK)
        buf[0] = '\0';
    else
        dims_str(buf, len, x->dims, x->rank);
}

void eo_idx_free(eo_idx *x)
{
    if (!x)
        return;
    free(x->data);
    memset(x, 0, sizeof *x);
}
