/* tests/fuzz/fuzz_weights.c — the library's safetensors parser
 * (core/safetensors.c: eo_st_image_parse) and eo_weights_bind, straight
 * from memory: no file, no tools code in between.
 *
 * The input is copied into a buffer of exactly its size and the parser
 * gets exactly the workspace eo_st_workspace_bytes asks for, so a read or
 * write one byte past either is caught by AddressSanitizer. Properties:
 * a refusal is EO_ERR_FORMAT naming the input (EO_ERR_ARG only for a
 * workspace the header length makes unaskable); an accepted image has
 * every tensor inside the data area with shape x element size bytes, the
 * ranges tiling it, header order in `index`, every name findable. Then
 * the image is bound in place to a small model (fc1 3->4, fc2 4->2):
 * all or nothing — a failure leaves every parameter's bits and pointer
 * as they were; a success leaves each holding its entry's values (F32 as
 * is, in place when aligned; BF16/F16 widened) and nothing of the arenas
 * taken. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "alloc/byteorder.h"
#include "core/safetensors.h"
#include "tests/fuzz/fuzz.h"

enum { ARENA = 64 << 10, NPARAM = 4 };

static unsigned char persist[ARENA], step[ARENA];

static float widen(const eo_st_tensor *e, size_t k)
{
    uint16_t h;
    uint32_t u;
    float f;
    /* the image's bytes are little-endian whatever the host */
    if (e->dtype == EO_ST_F32) {
        u = eo_le32_load((const char *)e->data + 4 * k);
        memcpy(&f, &u, 4);
        return f;
    }
    h = eo_le16_load((const char *)e->data + 2 * k);
    if (e->dtype == EO_ST_BF16) {
        u = (uint32_t)h << 16;
        memcpy(&f, &u, 4);
        return f;
    }
    /* f16 by arithmetic, independent of the library's bit twiddling */
    int ex = h >> 10 & 0x1f, man = h & 0x3ff;
    f = ex == 0 ? ldexpf((float)man, -24)
        : ex == 31 ? (man ? NAN : INFINITY)
                   : ldexpf((float)(man | 0x400), ex - 25);
    return h & 0x8000 ? -f : f;
}

static int same_bits(float a, float b)
{
    return memcmp(&a, &b, 4) == 0 || (isnan(a) && isnan(b));
}

static void check_image(const eo_st_image *im, const unsigned char *img, size_t size)
{
    EO_FUZZ_CHECK(im->data == img + 8 + im->header_bytes &&
                      im->data_size == size - 8 - im->header_bytes,
                  "data area misplaced");
    uint64_t total = 0;
    for (size_t i = 0; i < im->count; i++) {
        const eo_st_tensor *t = &im->tensors[i];
        EO_FUZZ_CHECK(t->index == i, "tensor %zu has index %zu", i, t->index);
        uint64_t need = eo_st_dtype_size(t->dtype);
        EO_FUZZ_CHECK(need > 0 && t->rank >= 0 && t->rank <= EO_ST_MAX_RANK, "bad dtype/rank");
        for (int d = 0; d < t->rank; d++)
            need *= t->shape[d];
        EO_FUZZ_CHECK(need == t->nbytes && t->end - t->begin == t->nbytes &&
                          t->end <= im->data_size,
                      "'%s': %zu bytes, range [%llu, %llu)", t->name, t->nbytes,
                      (unsigned long long)t->begin, (unsigned long long)t->end);
        EO_FUZZ_CHECK((const unsigned char *)t->data == im->data + t->begin, "data pointer");
        EO_FUZZ_CHECK(eo_st_image_find(im, t->name) == t, "'%s' not findable", t->name);
        total += t->nbytes;
    }
    EO_FUZZ_CHECK(total == im->data_size, "tensors cover %llu of %zu data bytes",
                  (unsigned long long)total, im->data_size);
    for (size_t i = 0; i < im->nmeta; i++)
        EO_FUZZ_CHECK(eo_st_image_meta(im, im->meta[i].key) == im->meta[i].value ||
                          eo_st_image_meta(im, im->meta[i].key) != NULL,
                      "metadata key not findable");
}

static void check_bind(const unsigned char *img, size_t size, const eo_st_image *im)
{
    eo_ctx ctx;
    eo_params ps;
    eo_module fc1, fc2;
    if (eo_ctx_init(&ctx, persist, sizeof persist, step, sizeof step) != EO_OK ||
        eo_params_init(&ctx, &ps, NPARAM) != EO_OK ||
        eo_linear_init(&ctx, &ps, EO_CPU, "fc1", 3, 4, 1, EO_INIT_KAIMING_UNIFORM, &fc1) !=
            EO_OK ||
        eo_linear_init(&ctx, &ps, EO_CPU, "fc2", 4, 2, 1, EO_INIT_KAIMING_UNIFORM, &fc2) != EO_OK)
        eo_fuzz_fail("cannot build the model: %s", eo_last_error(&ctx));
    float before[32];
    void *ptr[NPARAM];
    size_t at = 0;
    for (int i = 0; i < NPARAM; i++) {
        ptr[i] = ps.items[i]->data;
        memcpy(before + at, ptr[i], (size_t)eo_numel(ps.items[i]) * 4);
        at += (size_t)eo_numel(ps.items[i]);
    }
    size_t used_p = eo_arena_used(&ctx.persist), used_s = eo_arena_used(&ctx.step);
    eo_status st = eo_weights_bind(&ctx, &ps, img, size, EO_BIND_IN_PLACE);
    EO_FUZZ_CHECK(eo_arena_used(&ctx.persist) == used_p && eo_arena_used(&ctx.step) == used_s,
                  "bind kept arena memory (status %d)", st);
    at = 0;
    for (int i = 0; i < NPARAM; i++) {
        const eo_tensor *t = ps.items[i];
        size_t n = (size_t)eo_numel(t);
        const float *v = t->data;
        if (st != EO_OK) {
            EO_FUZZ_CHECK(t->data == ptr[i] && !t->readonly &&
                              memcmp(v, before + at, n * 4) == 0,
                          "a failed bind (%s) changed '%s'", eo_last_error(&ctx), t->name);
        } else {
            const eo_st_tensor *e = eo_st_image_find(im, t->name);
            EO_FUZZ_CHECK(e != NULL, "bound '%s' from nothing", t->name);
            EO_FUZZ_CHECK(!t->readonly || (const void *)v == e->data,
                          "'%s' read-only but not in the image", t->name);
            for (size_t k = 0; k < n; k++)
                EO_FUZZ_CHECK(same_bits(v[k], widen(e, k)), "'%s'[%zu] is not the image's",
                              t->name, k);
        }
        at += n;
    }
}

int eo_fuzz_weights(const uint8_t *data, size_t size)
{
    unsigned char *img = malloc(size ? size : 1);
    if (!img)
        return 0;
    memcpy(img, data, size);
    size_t wb = eo_st_workspace_bytes(img, size);
    void *work = wb ? malloc(wb) : NULL;
    char err[512] = "";
    eo_st_image im;
    eo_status st = eo_st_image_parse(img, size, work, wb, "fuzz-input", &im, err, sizeof err);
    if (st != EO_OK) {
        EO_FUZZ_CHECK(st == EO_ERR_FORMAT || (st == EO_ERR_ARG && wb == 0 && work == NULL),
                      "status %d: %s", st, err);
        EO_FUZZ_CHECK(eo_fuzz_mentions(err, "fuzz-input"), "message lacks the input: %s", err);
    } else {
        check_image(&im, img, size);
    }
    if (wb < (16 << 10)) /* the step arena lends the same workspace */
        check_bind(img, size, st == EO_OK ? &im : NULL);
    free(work);
    free(img);
    return 0;
}

EO_FUZZ_ENTRY(weights)
