/* tools/formats/safetensors_read.c — the strict safetensors reader (see
 * safetensors.h for the format).
 *
 * Two passes: the JSON header is walked with the strict scanner (json.h),
 * filling the tensor table and keeping each entry's byte range; then the
 * ranges are checked against each other and the data area. The checks
 * follow the reference implementation: the tensors must tile the data area
 * exactly (sorted by offset, each begins where the previous ends, the last
 * ends at the end of the file), which rules out overlaps, gaps and trailing
 * bytes in one rule. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "tools/cli/errbuf.h"
#include "tools/formats/json.h"
#include "tools/formats/safetensors.h"

typedef struct range {
    uint64_t begin, end;
    const char *name;
} range;

typedef struct reader {
    eo_json j;
    eo_st_file *f;
    range *r;           /* parallel to f->tensors */
    size_t cap_t, cap_m;
    int have_meta;
} reader;

static int host_is_le(void)
{
    uint16_t v = 1;
    unsigned char b;
    memcpy(&b, &v, 1);
    return b == 1;
}

static void shape_str(char *buf, size_t len, const eo_st_tensor *t)
{
    size_t at = (size_t)snprintf(buf, len, "[");
    for (int k = 0; k < t->rank && at < len; k++)
        at += (size_t)snprintf(buf + at, len - at, k ? ", %llu" : "%llu",
                               (unsigned long long)t->shape[k]);
    if (at < len)
        snprintf(buf + at, len - at, "]");
}

static eo_status grow(reader *rd)
{
    eo_st_file *f = rd->f;
    if (f->count < rd->cap_t)
        return EO_OK;
    size_t cap = rd->cap_t ? 2 * rd->cap_t : 16;
    eo_st_tensor *t = realloc(f->tensors, cap * sizeof *t);
    if (t)
        f->tensors = t;
    range *r = realloc(rd->r, cap * sizeof *r);
    if (r)
        rd->r = r;
    if (!t || !r)
        return eo_errf(rd->j.err, rd->j.errlen, EO_ERR_OOM, "%s: out of memory for %zu tensors",
                       rd->j.label, cap);
    rd->cap_t = cap;
    return EO_OK;
}

#define TRY(x)                                                                                     \
    do {                                                                                           \
        eo_status st_ = (x);                                                                       \
        if (st_ != EO_OK)                                                                          \
            return st_;                                                                            \
    } while (0)

static eo_status parse_dtype(reader *rd, eo_st_tensor *t)
{
    eo_json *j = &rd->j;
    eo_json_ws(j);
    size_t at = j->i;
    const char *d;
    TRY(eo_json_string(j, &d));
    for (int k = 0; k < EO_ST_DTYPE_COUNT; k++)
        if (strcmp(d, eo_st_dtype_name((eo_st_dtype)k)) == 0) {
            t->dtype = (eo_st_dtype)k;
            return EO_OK;
        }
    j->i = at;
    return eo_json_fail(j, "tensor \"%s\": unknown dtype \"%s\" (expected one of BOOL, U8, I8, "
                           "F8_E5M2, F8_E4M3, I16, U16, F16, BF16, I32, U32, F32, I64, U64, F64)",
                        t->name, d);
}

static eo_status parse_shape(reader *rd, eo_st_tensor *t)
{
    eo_json *j = &rd->j;
    TRY(eo_json_expect(j, '['));
    if (eo_json_peek(j) == ']') {
        j->i++;
        return EO_OK;
    }
    for (;;) {
        if (t->rank == EO_ST_MAX_RANK)
            return eo_json_fail(j, "tensor \"%s\": more than %d dimensions", t->name,
                                EO_ST_MAX_RANK);
        TRY(eo_json_uint(j, &t->shape[t->rank]));
        t->rank++;
        char c;
        TRY(eo_json_either(j, ',', ']', &c));
        if (c == ']')
            return EO_OK;
    }
}

static eo_status parse_offsets(reader *rd, range *r)
{
    eo_json *j = &rd->j;
    TRY(eo_json_expect(j, '['));
    TRY(eo_json_uint(j, &r->begin));
    TRY(eo_json_expect(j, ','));
    TRY(eo_json_uint(j, &r->end));
    return eo_json_expect(j, ']');
}

static eo_status parse_entry(reader *rd, const char *name)
{
    eo_json *j = &rd->j;
    TRY(grow(rd));
    eo_st_tensor *t = &rd->f->tensors[rd->f->count];
    range *r = &rd->r[rd->f->count];
    memset(t, 0, sizeof *t);
    memset(r, 0, sizeof *r);
    t->name = r->name = name;
    int have_dtype = 0, have_shape = 0, have_off = 0;
    TRY(eo_json_expect(j, '{'));
    if (eo_json_peek(j) == '}') {
        j->i++;
    } else {
        for (;;) {
            eo_json_ws(j);
            size_t at = j->i;
            const char *key;
            TRY(eo_json_string(j, &key));
            TRY(eo_json_expect(j, ':'));
            int *have = !strcmp(key, "dtype") ? &have_dtype
                        : !strcmp(key, "shape") ? &have_shape
                        : !strcmp(key, "data_offsets") ? &have_off : NULL;
            if (!have) {
                j->i = at;
                return eo_json_fail(j, "tensor \"%s\": unknown key \"%s\" (expected dtype, "
                                       "shape and data_offsets)", name, key);
            }
            if (*have) {
                j->i = at;
                return eo_json_fail(j, "tensor \"%s\": key \"%s\" appears twice", name, key);
            }
            *have = 1;
            if (have == &have_dtype)
                TRY(parse_dtype(rd, t));
            else if (have == &have_shape)
                TRY(parse_shape(rd, t));
            else
                TRY(parse_offsets(rd, r));
            char c;
            TRY(eo_json_either(j, ',', '}', &c));
            if (c == '}')
                break;
        }
    }
    if (!have_dtype || !have_shape || !have_off)
        return eo_json_fail(j, "tensor \"%s\" has no \"%s\"", name,
                            !have_dtype ? "dtype" : !have_shape ? "shape" : "data_offsets");
    rd->f->count++;
    return EO_OK;
}

static eo_status parse_meta(reader *rd)
{
    eo_json *j = &rd->j;
    eo_st_file *f = rd->f;
    TRY(eo_json_expect(j, '{'));
    if (eo_json_peek(j) == '}') {
        j->i++;
        return EO_OK;
    }
    for (;;) {
        eo_json_ws(j);
        size_t at = j->i;
        const char *key, *value;
        TRY(eo_json_string(j, &key));
        TRY(eo_json_expect(j, ':'));
        if (eo_json_peek(j) != '"')
            return eo_json_fail(j, "metadata value for \"%s\" is not a string", key);
        TRY(eo_json_string(j, &value));
        if (eo_st_meta_get(f, key)) {
            j->i = at;
            return eo_json_fail(j, "metadata key \"%s\" appears twice", key);
        }
        if (f->nmeta == rd->cap_m) {
            size_t cap = rd->cap_m ? 2 * rd->cap_m : 8;
            eo_st_meta *m = realloc(f->meta, cap * sizeof *m);
            if (!m)
                return eo_errf(j->err, j->errlen, EO_ERR_OOM, "%s: out of memory for metadata",
                               j->label);
            f->meta = m;
            rd->cap_m = cap;
        }
        f->meta[f->nmeta].key = key;
        f->meta[f->nmeta].value = value;
        f->nmeta++;
        char c;
        TRY(eo_json_either(j, ',', '}', &c));
        if (c == '}')
            return EO_OK;
    }
}

static eo_status parse_header(reader *rd)
{
    eo_json *j = &rd->j;
    if (j->n == 0 || j->s[0] != '{')
        return eo_json_fail(j, "the header must start with '{'");
    j->i = 1;
    if (eo_json_peek(j) == '}') {
        j->i++;
    } else {
        for (;;) {
            eo_json_ws(j);
            size_t at = j->i;
            const char *key;
            TRY(eo_json_string(j, &key));
            TRY(eo_json_expect(j, ':'));
            if (strcmp(key, "__metadata__") == 0) {
                if (rd->have_meta) {
                    j->i = at;
                    return eo_json_fail(j, "\"__metadata__\" appears twice");
                }
                rd->have_meta = 1;
                TRY(parse_meta(rd));
            } else {
                TRY(parse_entry(rd, key));
            }
            char c;
            TRY(eo_json_either(j, ',', '}', &c));
            if (c == '}')
                break;
        }
    }
    eo_json_ws(j);
    if (j->i != j->n)
        return eo_json_fail(j, "unexpected bytes after the header's closing '}' (only "
                               "whitespace padding may follow)");
    return EO_OK;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(((const range *)a)->name, ((const range *)b)->name);
}

static int by_offset(const void *a, const void *b)
{
    const range *x = a, *y = b;
    if (x->begin != y->begin)
        return x->begin < y->begin ? -1 : 1;
    return x->end < y->end ? -1 : x->end > y->end;
}

/* Per-entry sizes and bounds, then the tiling rule on a sorted copy. */
static eo_status check_entries(reader *rd, const char *label, char *err, size_t errlen)
{
    eo_st_file *f = rd->f;
    char shp[160];
    for (size_t k = 0; k < f->count; k++) {
        eo_st_tensor *t = &f->tensors[k];
        const range *r = &rd->r[k];
        unsigned long long b = r->begin, e = r->end;
        if (r->begin > r->end)
            return eo_errf(err, errlen, EO_ERR_FORMAT,
                           "%s: tensor \"%s\": data_offsets [%llu, %llu] end before they begin",
                           label, t->name, b, e);
        if (r->end > f->data_size)
            return eo_errf(err, errlen, EO_ERR_FORMAT,
                           "%s: tensor \"%s\": data_offsets [%llu, %llu] reach past the end of "
                           "the data area (%zu bytes)",
                           label, t->name, b, e, f->data_size);
        shape_str(shp, sizeof shp, t);
        uint64_t need = eo_st_dtype_size(t->dtype);
        for (int d = 0; d < t->rank; d++) {
            if (t->shape[d] != 0 && need > UINT64_MAX / t->shape[d])
                return eo_errf(err, errlen, EO_ERR_FORMAT,
                               "%s: tensor \"%s\": shape %s is too large to address", label,
                               t->name, shp);
            need *= t->shape[d];
        }
        if (need != r->end - r->begin)
            return eo_errf(err, errlen, EO_ERR_FORMAT,
                           "%s: tensor \"%s\": shape %s of %s needs %llu bytes, but "
                           "data_offsets [%llu, %llu] span %llu",
                           label, t->name, shp, eo_st_dtype_name(t->dtype),
                           (unsigned long long)need, b, e, e - b);
        t->data = f->data + r->begin;
        t->nbytes = (size_t)need;
    }
    if (f->count == 0) {
        if (f->data_size != 0)
            return eo_errf(err, errlen, EO_ERR_FORMAT,
                           "%s: the header lists no tensors but %zu data bytes follow it", label,
                           f->data_size);
        return EO_OK;
    }
    range *s = malloc(f->count * sizeof *s);
    if (!s)
        return eo_errf(err, errlen, EO_ERR_OOM, "%s: out of memory", label);
    memcpy(s, rd->r, f->count * sizeof *s);
    eo_status st = EO_OK;
    qsort(s, f->count, sizeof *s, by_name);
    for (size_t k = 1; k < f->count && st == EO_OK; k++)
        if (strcmp(s[k - 1].name, s[k].name) == 0)
            st = eo_errf(err, errlen, EO_ERR_FORMAT,
                         "%s: tensor name \"%s\" appears twice in the header", label, s[k].name);
    qsort(s, f->count, sizeof *s, by_offset);
    uint64_t cursor = 0;
    for (size_t k = 0; k < f->count && st == EO_OK; k++) {
        if (s[k].begin < cursor)
            st = eo_errf(err, errlen, EO_ERR_FORMAT,
                         "%s: tensors \"%s\" [%llu, %llu] and \"%s\" [%llu, %llu] overlap", label,
                         s[k - 1].name, (unsigned long long)s[k - 1].begin,
                         (unsigned long long)s[k - 1].end, s[k].name,
                         (unsigned long long)s[k].begin, (unsigned long long)s[k].end);
        else if (s[k].begin > cursor)
            st = eo_errf(err, errlen, EO_ERR_FORMAT,
                         "%s: bytes [%llu, %llu) of the data area belong to no tensor (expected "
                         "\"%s\" to start at %llu)",
                         label, (unsigned long long)cursor, (unsigned long long)s[k].begin,
                         s[k].name, (unsigned long long)cursor);
        cursor = s[k].end;
    }
    if (st == EO_OK && cursor != f->data_size)
        st = eo_errf(err, errlen, EO_ERR_FORMAT,
                     "%s: the tensors end at data byte %llu but the data area has %zu bytes "
                     "(trailing bytes)",
                     label, (unsigned long long)cursor, f->data_size);
    free(s);
    return st;
}

eo_status eo_st_parse(const void *buf, size_t size, const char *label, eo_st_file *f, char *err,
                      size_t errlen)
{
    if (!f || (!buf && size > 0))
        return eo_errf(err, errlen, EO_ERR_ARG, "eo_st_parse: NULL %s", f ? "buffer" : "file");
    memset(f, 0, sizeof *f);
    label = label ? label : "(buffer)";
    if (!host_is_le())
        return eo_errf(err, errlen, EO_ERR_UNSUPPORTED,
                       "%s: safetensors data is little-endian and this host is not", label);
    const unsigned char *b = buf;
    if (size < 8)
        return eo_errf(err, errlen, EO_ERR_FORMAT,
                       "%s: file has %zu bytes, a safetensors file needs at least 8 (the header "
                       "length)",
                       label, size);
    uint64_t n = 0;
    for (int k = 7; k >= 0; k--)
        n = n << 8 | b[k];
    if (n > size - 8)
        return eo_errf(err, errlen, EO_ERR_FORMAT,
                       "%s: header length says %llu bytes, but only %zu bytes follow the 8-byte "
                       "length",
                       label, (unsigned long long)n, size - 8);
    if (n > EO_ST_MAX_HEADER)
        return eo_errf(err, errlen, EO_ERR_FORMAT,
                       "%s: header length %llu is more than the limit of %llu bytes", label,
                       (unsigned long long)n, (unsigned long long)EO_ST_MAX_HEADER);
    size_t hlen = (size_t)n;
    f->data = b + 8 + hlen;
    f->data_size = size - 8 - hlen;
    /* See json.h: decoded strings never outgrow the header text. */
    f->strings = malloc(hlen + 8);
    if (!f->strings)
        return eo_errf(err, errlen, EO_ERR_OOM, "%s: cannot allocate %zu bytes for the header",
                       label, hlen + 8);
    reader rd = {.f = f};
    eo_json_init(&rd.j, b + 8, hlen, label, 8, f->strings, hlen + 8, err, errlen);
    eo_status st = parse_header(&rd);
    if (st == EO_OK)
        st = check_entries(&rd, label, err, errlen);
    free(rd.r);
    if (st != EO_OK)
        eo_st_close(f);
    return st;
}

eo_status eo_st_read(const char *path, eo_st_file *f, char *err, size_t errlen)
{
    if (!path || !f)
        return eo_errf(err, errlen, EO_ERR_ARG, "eo_st_read: NULL %s", path ? "file" : "path");
    memset(f, 0, sizeof *f);
    FILE *fp = fopen(path, "rb");
    if (!fp)
        return eo_errf(err, errlen, EO_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    long len = -1;
    if (fseek(fp, 0, SEEK_END) == 0)
        len = ftell(fp);
    if (len < 0 || fseek(fp, 0, SEEK_SET) != 0) {
        fclose(fp);
        return eo_errf(err, errlen, EO_ERR_IO, "%s: cannot find the file size: %s", path,
                       strerror(errno));
    }
    size_t size = (size_t)len;
    unsigned char *buf = malloc(size ? size : 1);
    if (!buf) {
        fclose(fp);
        return eo_errf(err, errlen, EO_ERR_OOM, "%s: cannot allocate %zu bytes", path, size);
    }
    size_t got = fread(buf, 1, size, fp);
    int bad = ferror(fp);
    fclose(fp);
    if (got != size || bad) {
        free(buf);
        return eo_errf(err, errlen, EO_ERR_IO, "%s: read %zu of %zu bytes%s", path, got, size,
                       bad ? " (read error)" : " (file shrank while reading)");
    }
    eo_status st = eo_st_parse(buf, size, path, f, err, errlen);
    if (st != EO_OK) {
        free(buf);
        return st;
    }
    f->buf = buf;
    return EO_OK;
}
