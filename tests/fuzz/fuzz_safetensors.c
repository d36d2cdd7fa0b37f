/* tests/fuzz/fuzz_safetensors.c — the safetensors reader
 * (tools/formats/safetensors_read.c, and through it the library's parser,
 * core/safetensors.c and core/json.c).
 *
 * Any bytes: either a refusal (EO_ERR_FORMAT naming the input, *f left
 * empty) or a file whose every promise holds — each tensor's bytes lie
 * inside the data area and equal shape x element size, names and
 * metadata are valid UTF-8 and findable. An accepted file must also
 * survive the round trip: written back with eo_st_write and read again,
 * it gives the same tensors and metadata (plus the writer's data
 * checksum, EO_ST_CHECKSUM_KEY). An accepted file with a checksum has
 * the checksum of its data: a mismatch is refused. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "alloc/byteorder.h"
#include "tests/fuzz/fuzz.h"
#include "core/json.h"
#include "tools/formats/safetensors.h"

static void check_file(const eo_st_file *f)
{
    for (size_t i = 0; i < f->count; i++) {
        const eo_st_tensor *t = &f->tensors[i];
        EO_FUZZ_CHECK(t->name && eo_utf8_valid(t->name), "tensor %zu: bad name", i);
        EO_FUZZ_CHECK(eo_st_dtype_name(t->dtype) != NULL, "tensor %zu: dtype %d", i, t->dtype);
        EO_FUZZ_CHECK(t->rank >= 0 && t->rank <= EO_ST_MAX_RANK, "rank %d", t->rank);
        /* shape x size == nbytes, computed here in a way that cannot wrap */
        unsigned long long n = eo_st_dtype_size(t->dtype);
        int wrapped = 0;
        for (int d = 0; d < t->rank; d++) {
            if (t->shape[d] && n > ~0ull / t->shape[d])
                wrapped = 1;
            n *= t->shape[d];
        }
        EO_FUZZ_CHECK(!wrapped && n == t->nbytes, "'%s': %zu bytes for its shape", t->name,
                      t->nbytes);
        const unsigned char *p = t->data;
        EO_FUZZ_CHECK(t->nbytes == 0 || (p >= f->data && t->nbytes <= f->data_size &&
                                          (size_t)(p - f->data) <= f->data_size - t->nbytes),
                      "'%s' lies outside the data area", t->name);
        EO_FUZZ_CHECK(eo_st_find(f, t->name) == t, "'%s' not found by name", t->name);
    }
    for (size_t i = 0; i < f->nmeta; i++) {
        EO_FUZZ_CHECK(eo_utf8_valid(f->meta[i].key) && eo_utf8_valid(f->meta[i].value),
                      "metadata %zu is not UTF-8", i);
        EO_FUZZ_CHECK(eo_st_meta_get(f, f->meta[i].key) == f->meta[i].value,
                      "metadata '%s' not found by key", f->meta[i].key);
    }
}

/* The reader hands out the file's bytes (little-endian) and the writer
 * takes values in host order: on a big-endian host each element is turned
 * around before it is written back. NULL when out of memory. */
static eo_st_tensor *host_order(const eo_st_file *f, unsigned char **store)
{
    size_t total = 0;
    for (size_t i = 0; i < f->count; i++)
        total += f->tensors[i].nbytes;
    eo_st_tensor *t = malloc(sizeof *t * (f->count ? f->count : 1));
    *store = malloc(total ? total : 1);
    if (!t || !*store) {
        free(t);
        free(*store);
        return NULL;
    }
    unsigned char *at = *store;
    for (size_t i = 0; i < f->count; i++) {
        t[i] = f->tensors[i];
        if (eo_host_is_le() || t[i].nbytes == 0)
            continue;
        size_t es = eo_st_dtype_size(t[i].dtype);
        const unsigned char *src = f->tensors[i].data;
        for (size_t k = 0; k < t[i].nbytes; k += es)
            for (size_t b = 0; b < es; b++)
                at[k + b] = src[k + es - 1 - b];
        t[i].data = at;
        at += t[i].nbytes;
    }
    return t;
}

static void round_trip(const eo_st_file *f)
{
    const char *path = eo_fuzz_file(NULL, 0);
    if (!path)
        return;
    char err[512];
    unsigned char *store;
    eo_st_tensor *t = host_order(f, &store);
    if (!t)
        return;
    eo_status st = eo_st_write(path, t, f->count, f->meta, f->nmeta, err, sizeof err);
    free(t);
    free(store);
    if (st == EO_ERR_ARG)
        return; /* the writer refuses what it never writes (e.g. "" as a name) */
    EO_FUZZ_CHECK(st == EO_OK, "writing back: %s", err);
    eo_st_file g;
    st = eo_st_read(path, &g, err, sizeof err);
    EO_FUZZ_CHECK(st == EO_OK, "reading back: %s", err);
    /* The writer adds its data checksum last, in place of any the input
     * had: the other pairs come back in order. */
    size_t kept = 0;
    for (size_t i = 0; i < f->nmeta; i++)
        kept += strcmp(f->meta[i].key, EO_ST_CHECKSUM_KEY) != 0;
    EO_FUZZ_CHECK(g.count == f->count && g.nmeta == kept + 1, "count changed");
    EO_FUZZ_CHECK(strcmp(g.meta[kept].key, EO_ST_CHECKSUM_KEY) == 0, "no checksum written");
    for (size_t i = 0; i < g.count; i++) {
        const eo_st_tensor *a = &f->tensors[i], *b = &g.tensors[i];
        EO_FUZZ_CHECK(strcmp(a->name, b->name) == 0 && a->dtype == b->dtype &&
                          a->rank == b->rank && a->nbytes == b->nbytes &&
                          memcmp(a->shape, b->shape, sizeof a->shape[0] * (size_t)a->rank) == 0 &&
                          (a->nbytes == 0 || memcmp(a->data, b->data, a->nbytes) == 0),
                      "tensor %zu ('%s') changed in the round trip", i, a->name);
    }
    for (size_t i = 0, j = 0; i < f->nmeta; i++) {
        if (strcmp(f->meta[i].key, EO_ST_CHECKSUM_KEY) == 0)
            continue;
        EO_FUZZ_CHECK(strcmp(f->meta[i].key, g.meta[j].key) == 0 &&
                          strcmp(f->meta[i].value, g.meta[j].value) == 0,
                      "metadata %zu changed", i);
        j++;
    }
    eo_st_close(&g);
}

int eo_fuzz_safetensors(const uint8_t *data, size_t size)
{
    char err[512] = "";
    eo_st_file f;
    eo_status st = eo_st_parse(data, size, "fuzz-input", &f, err, sizeof err);
    if (st != EO_OK) {
        EO_FUZZ_CHECK(st == EO_ERR_FORMAT || st == EO_ERR_OOM, "status %d: %s", st, err);
        EO_FUZZ_CHECK(eo_fuzz_mentions(err, "fuzz-input"), "message lacks the name: %s", err);
        EO_FUZZ_CHECK(f.count == 0 && f.tensors == NULL && f.strings == NULL,
                      "refused but left tensors behind");
        eo_st_close(&f);
        return 0;
    }
    check_file(&f);
    /* Accepted with a checksum: it is the data's (the reader checked). */
    const char *crc = eo_st_meta_get(&f, EO_ST_CHECKSUM_KEY);
    if (crc) {
        char want[16];
        snprintf(want, sizeof want, "%08lx",
                 (unsigned long)eo_st_crc32(0, f.data, f.data_size));
        EO_FUZZ_CHECK(strlen(crc) == 8 && strtoul(crc, NULL, 16) == strtoul(want, NULL, 16),
                      "checksum %s accepted for data with %s", crc, want);
    }
    round_trip(&f);
    eo_st_close(&f);
    return 0;
}

EO_FUZZ_ENTRY(safetensors)
