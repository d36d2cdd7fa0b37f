/* core/safetensors.c — the safetensors parser (see core/safetensors.h).
 *
 * Two passes: the JSON header is walked with the strict scanner
 * (core/json.h), filling the tensor table and keeping each entry's byte
 * range; then the ranges are checked against each other and the data
 * area. The checks follow the reference implementation: the tensors must
 * tile the data area exactly (sorted by offset, each begins where the
 * previous ends, the last ends at the end of the image), which rules out
 * overlaps, gaps and trailing bytes in one rule.
 *
 * No allocation: strings and tables live in the caller's workspace, the
 * tensor table growing up from its start and the metadata table down from
 * its end. The checks sort the table in place (heapsort: no recursion,
 * no extra memory, O(n log n) however the file is built) by offset, then
 * by name, and finally back into header order. */
#include "alloc/byteorder.h"
#include "alloc/text.h"
#include "core/internal.h"
#include "core/json.h"
#include "core/safetensors.h"

static const struct {
    const char *name;
    size_t size;
} dtypes[EO_ST_DTYPE_COUNT] = {
    [EO_ST_BOOL] = {"BOOL", 1},       [EO_ST_U8] = {"U8", 1},
    [EO_ST_I8] = {"I8", 1},           [EO_ST_F8_E5M2] = {"F8_E5M2", 1},
    [EO_ST_F8_E4M3] = {"F8_E4M3", 1}, [EO_ST_I16] = {"I16", 2},
    [EO_ST_U16] = {"U16", 2},         [EO_ST_F16] = {"F16", 2},
    [EO_ST_BF16] = {"BF16", 2},       [EO_ST_I32] = {"I32", 4},
    [EO_ST_U32] = {"U32", 4},         [EO_ST_F32] = {"F32", 4},
    [EO_ST_I64] = {"I64", 8},         [EO_ST_U64] = {"U64", 8},
    [EO_ST_F64] = {"F64", 8},
};

const char *eo_st_dtype_name(eo_st_dtype t)
{
    return (unsigned)t < EO_ST_DTYPE_COUNT ? dtypes[t].name : NULL;
}

size_t eo_st_dtype_size(eo_st_dtype t)
{
    return (unsigned)t < EO_ST_DTYPE_COUNT ? dtypes[t].size : 0;
}

static int str_cmp(const char *a, const char *b)
{
    while (*a && *a == *b)
        a++, b++;
    return (unsigned char)*a < (unsigned char)*b ? -1 : (unsigned char)*a > (unsigned char)*b;
}

const eo_st_tensor *eo_st_image_find(const eo_st_image *im, const char *name)
{
    if (!im || !name)
        return NULL;
    for (size_t i = 0; i < im->count; i++)
        if (eo_text_eq(im->tensors[i].name, name))
            return &im->tensors[i];
    return NULL;
}

const char *eo_st_image_meta(const eo_st_image *im, const char *key)
{
    if (!im || !key)
        return NULL;
    for (size_t i = 0; i < im->nmeta; i++)
        if (eo_text_eq(im->meta[i].key, key))
            return im->meta[i].value;
    return NULL;
}

/* ---- the workspace ----------------------------------------------------------
 * The fewest header bytes an entry takes bound how many there can be: a
 * tensor is at least {"":{"dtype":"U8","shape":[],"data_offsets":[0,0]}}
 * less its braces (50 bytes), a metadata pair at least "":"" (5). */
enum { MIN_TENSOR_TEXT = 50, MIN_META_TEXT = 5, WORK_ALIGN = 16 };

static int header_len(const void *image, size_t size, uint64_t *n)
{
    if (!image || size < 8)
        return 0;
    *n = eo_le64_load(image);
    return *n <= size - 8 && *n <= EO_ST_MAX_HEADER;
}

/* Bytes for a header of hlen: pool, alignment, both tables; 0 if it wraps. */
static size_t work_for(size_t hlen)
{
    size_t pool, t, m, sum;
    if (eo_size_add_overflows(hlen, 1 + WORK_ALIGN, &pool) ||
        eo_size_mul_overflows(hlen / MIN_TENSOR_TEXT + 1, sizeof(eo_st_tensor), &t) ||
        eo_size_mul_overflows(hlen / MIN_META_TEXT + 1, sizeof(eo_st_meta), &m) ||
        eo_size_add_overflows(pool, t, &sum) || eo_size_add_overflows(sum, m, &sum) ||
        eo_size_add_overflows(sum, WORK_ALIGN, &sum))
        return 0;
    return sum;
}

size_t eo_st_workspace_bytes(const void *image, size_t size)
{
    uint64_t n;
    return header_len(image, size, &n) ? work_for((size_t)n) : 0;
}

/* ---- the header ---------------------------------------------------------- */

typedef struct reader {
    eo_json j;
    eo_st_tensor *t;      /* grows up */
    eo_st_meta *m_end;    /* metadata grows down from here */
    size_t nt, nm, room;  /* room: bytes between the two tables */
    int have_meta;
} reader;

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
        if (eo_text_eq(d, dtypes[k].name)) {
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

static eo_status parse_offsets(reader *rd, eo_st_tensor *t)
{
    eo_json *j = &rd->j;
    TRY(eo_json_expect(j, '['));
    TRY(eo_json_uint(j, &t->begin));
    TRY(eo_json_expect(j, ','));
    TRY(eo_json_uint(j, &t->end));
    return eo_json_expect(j, ']');
}

/* The bound of eo_st_workspace_bytes always leaves room; this is the
 * guard that keeps a wrong bound from ever writing past the workspace. */
static eo_status take(reader *rd, size_t bytes)
{
    if (rd->room < bytes)
        return eo_json_fail(&rd->j, "workspace too small for the header's entries "
                                    "(internal: see eo_st_workspace_bytes)");
    rd->room -= bytes;
    return EO_OK;
}

static eo_status parse_entry(reader *rd, const char *name)
{
    eo_json *j = &rd->j;
    TRY(take(rd, sizeof(eo_st_tensor)));
    eo_st_tensor *t = &rd->t[rd->nt];
    eo_st_tensor zero = {0};
    *t = zero;
    t->name = name;
    t->index = rd->nt;
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
            int *have = eo_text_eq(key, "dtype")          ? &have_dtype
                        : eo_text_eq(key, "shape")        ? &have_shape
                        : eo_text_eq(key, "data_offsets") ? &have_off
                                                          : NULL;
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
                TRY(parse_offsets(rd, t));
            char c;
            TRY(eo_json_either(j, ',', '}', &c));
            if (c == '}')
                break;
        }
    }
    if (!have_dtype || !have_shape || !have_off)
        return eo_json_fail(j, "tensor \"%s\" has no \"%s\"", name,
                            !have_dtype ? "dtype" : !have_shape ? "shape" : "data_offsets");
    rd->nt++;
    return EO_OK;
}

static eo_status parse_meta(reader *rd)
{
    eo_json *j = &rd->j;
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
        for (size_t k = 0; k < rd->nm; k++)
            if (eo_text_eq(rd->m_end[-1 - (ptrdiff_t)k].key, key)) {
                j->i = at;
                return eo_json_fail(j, "metadata key \"%s\" appears twice", key);
            }
        TRY(take(rd, sizeof(eo_st_meta)));
        eo_st_meta *m = &rd->m_end[-1 - (ptrdiff_t)rd->nm];
        m->key = key;
        m->value = value;
        rd->nm++;
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
            if (eo_text_eq(key, "__metadata__")) {
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

/* ---- in-place heapsort ---------------------------------------------------- */

typedef int (*cmp_fn)(const eo_st_tensor *, const eo_st_tensor *);

static int by_offset(const eo_st_tensor *x, const eo_st_tensor *y)
{
    if (x->begin != y->begin)
        return x->begin < y->begin ? -1 : 1;
    return x->end < y->end ? -1 : x->end > y->end;
}

static int by_name(const eo_st_tensor *x, const eo_st_tensor *y)
{
    return str_cmp(x->name, y->name);
}

static int by_index(const eo_st_tensor *x, const eo_st_tensor *y)
{
    return x->index < y->index ? -1 : x->index > y->index;
}

static void swap(eo_st_tensor *a, eo_st_tensor *b)
{
    eo_st_tensor t = *a;
    *a = *b;
    *b = t;
}

static void sift(eo_st_tensor *v, size_t root, size_t n, cmp_fn cmp)
{
    for (;;) {
        size_t c = 2 * root + 1;
        if (c >= n)
            return;
        if (c + 1 < n && cmp(&v[c], &v[c + 1]) < 0)
            c++;
        if (cmp(&v[root], &v[c]) >= 0)
            return;
        swap(&v[root], &v[c]);
        root = c;
    }
}

static void heapsort(eo_st_tensor *v, size_t n, cmp_fn cmp)
{
    if (n < 2)
        return;
    for (size_t i = n / 2; i-- > 0;)
        sift(v, i, n, cmp);
    for (size_t end = n - 1; end > 0; end--) {
        swap(&v[0], &v[end]);
        sift(v, 0, end, cmp);
    }
}

/* ---- the checks ------------------------------------------------------------ */

static eo_status fail(char *err, size_t errlen, const char *fmt, ...)
{
    if (err && errlen) {
        va_list ap;
        va_start(ap, fmt);
        eo_vformat(err, errlen, fmt, ap);
        va_end(ap);
    }
    return EO_ERR_FORMAT;
}

static void shape_str(char *buf, size_t len, const eo_st_tensor *t)
{
    size_t at = eo_format(buf, len, "[");
    for (int k = 0; k < t->rank && at < len; k++)
        at += eo_format(buf + at, len - at, k ? ", %llu" : "%llu",
                        (unsigned long long)t->shape[k]);
    if (at < len)
        eo_format(buf + at, len - at, "]");
}

static eo_status check_entries(eo_st_tensor *t, size_t n, const unsigned char *data,
                               size_t data_size, const char *label, char *err, size_t errlen)
{
    char shp[160];
    for (size_t k = 0; k < n; k++) {
        eo_st_tensor *e = &t[k];
        unsigned long long b = e->begin, x = e->end;
        if (e->begin > e->end)
            return fail(err, errlen,
                        "%s: tensor \"%s\": data_offsets [%llu, %llu] end before they begin",
                        label, e->name, b, x);
        if (e->end > data_size)
            return fail(err, errlen,
                        "%s: tensor \"%s\": data_offsets [%llu, %llu] reach past the end of "
                        "the data area (%zu bytes)",
                        label, e->name, b, x, data_size);
        shape_str(shp, sizeof shp, e);
        uint64_t need = eo_st_dtype_size(e->dtype);
        for (int d = 0; d < e->rank; d++) {
            if (e->shape[d] != 0 && need > UINT64_MAX / e->shape[d])
                return fail(err, errlen, "%s: tensor \"%s\": shape %s is too large to address",
                            label, e->name, shp);
            need *= e->shape[d];
        }
        if (need != e->end - e->begin)
            return fail(err, errlen,
                        "%s: tensor \"%s\": shape %s of %s needs %llu bytes, but "
                        "data_offsets [%llu, %llu] span %llu",
                        label, e->name, shp, eo_st_dtype_name(e->dtype),
                        (unsigned long long)need, b, x, x - b);
        e->data = data + e->begin; /* end <= data_size: inside the image */
        e->nbytes = (size_t)need;
    }
    if (n == 0) {
        if (data_size != 0)
            return fail(err, errlen,
                        "%s: the header lists no tensors but %zu data bytes follow it", label,
                        data_size);
        return EO_OK;
    }
    eo_status st = EO_OK;
    heapsort(t, n, by_name);
    for (size_t k = 1; k < n && st == EO_OK; k++)
        if (eo_text_eq(t[k - 1].name, t[k].name))
            st = fail(err, errlen, "%s: tensor name \"%s\" appears twice in the header", label,
                      t[k].name);
    heapsort(t, n, by_offset);
    uint64_t cursor = 0;
    for (size_t k = 0; k < n && st == EO_OK; k++) {
        if (t[k].begin < cursor)
            st = fail(err, errlen, "%s: tensors \"%s\" [%llu, %llu] and \"%s\" [%llu, %llu] overlap",
                      label, t[k - 1].name, (unsigned long long)t[k - 1].begin,
                      (unsigned long long)t[k - 1].end, t[k].name,
                      (unsigned long long)t[k].begin, (unsigned long long)t[k].end);
        else if (t[k].begin > cursor)
            st = fail(err, errlen,
                      "%s: bytes [%llu, %llu) of the data area belong to no tensor (expected "
                      "\"%s\" to start at %llu)",
                      label, (unsigned long long)cursor, (unsigned long long)t[k].begin,
                      t[k].name, (unsigned long long)cursor);
        cursor = t[k].end;
    }
    if (st == EO_OK && cursor != data_size)
        st = fail(err, errlen,
                  "%s: the tensors end at data byte %llu but the data area has %zu bytes "
                  "(trailing bytes)",
                  label, (unsigned long long)cursor, data_size);
    heapsort(t, n, by_index);
    return st;
}

eo_status eo_st_image_parse(const void *image, size_t size, void *work, size_t work_bytes,
                            const char *label, eo_st_image *out, char *err, size_t errlen)
{
    label = label ? label : "(buffer)";
    if (err && errlen)
        err[0] = '\0';
    if (!out || (!image && size > 0)) {
        if (err && errlen)
            eo_format(err, errlen, "st_image_parse: NULL %s", out ? "image" : "output");
        return EO_ERR_ARG;
    }
    eo_st_image empty = {0};
    *out = empty;
    const unsigned char *b = image;
    if (size < 8)
        return fail(err, errlen,
                    "%s: the image has %zu bytes, a safetensors file needs at least 8 (the "
                    "header length)",
                    label, size);
    uint64_t n = eo_le64_load(b);
    if (n > size - 8)
        return fail(err, errlen,
                    "%s: header length (bytes 0..7) says %llu bytes, but only %zu bytes follow "
                    "the 8-byte length",
                    label, (unsigned long long)n, size - 8);
    if (n > EO_ST_MAX_HEADER)
        return fail(err, errlen,
                    "%s: header length (bytes 0..7) %llu is more than the limit of %llu bytes",
                    label, (unsigned long long)n, (unsigned long long)EO_ST_MAX_HEADER);
    size_t hlen = (size_t)n, need = work_for(hlen);
    if (!work || need == 0 || work_bytes < need) {
        if (err && errlen)
            eo_format(err, errlen, "%s: workspace of %zu bytes, the header of %zu bytes needs "
                      "%zu (eo_st_workspace_bytes)", label, work ? work_bytes : 0, hlen, need);
        return EO_ERR_ARG;
    }
    /* The pool first, then the tables, aligned for eo_st_tensor. */
    char *pool = work;
    uintptr_t at = (uintptr_t)(pool + hlen + 1);
    at = (at + WORK_ALIGN - 1) & ~(uintptr_t)(WORK_ALIGN - 1);
    uintptr_t end = ((uintptr_t)work + work_bytes) & ~(uintptr_t)(WORK_ALIGN - 1);
    reader rd = {0};
    rd.t = (eo_st_tensor *)at;
    rd.m_end = (eo_st_meta *)end;
    rd.room = end > at ? (size_t)(end - at) : 0;
    eo_json_init(&rd.j, b + 8, hlen, label, 8, pool, hlen + 1, err, errlen);
    eo_status st = parse_header(&rd);
    const unsigned char *data = b + 8 + hlen;
    size_t data_size = size - 8 - hlen;
    if (st == EO_OK)
        st = check_entries(rd.t, rd.nt, data, data_size, label, err, errlen);
    if (st != EO_OK)
        return st;
    /* Metadata was stored from the end down: turn it to header order. */
    eo_st_meta *m = rd.m_end - rd.nm;
    for (size_t i = 0; i < rd.nm / 2; i++) {
        eo_st_meta tmp = m[i];
        m[i] = m[rd.nm - 1 - i];
        m[rd.nm - 1 - i] = tmp;
    }
    out->tensors = rd.t;
    out->count = rd.nt;
    out->meta = m;
    out->nmeta = rd.nm;
    out->data = data;
    out->data_size = data_size;
    out->header_bytes = hlen;
    return EO_OK;
}
