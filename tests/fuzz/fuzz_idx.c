/* tests/fuzz/fuzz_idx.c — the IDX reader (tools/formats/idx.c) from memory.
 *
 * Any bytes, plain or gzip: either EO_OK with exactly prod(dims) bytes of
 * data, or a refusal that names the input and leaves the struct empty.
 * A header that claims more than the input holds must not cost more
 * memory than the input (AddressSanitizer's allocation limit would
 * report it as a crash, see README.md). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "tests/fuzz/fuzz.h"
#include "tools/formats/idx.h"

int eo_fuzz_idx(const uint8_t *data, size_t size)
{
    /* fmemopen wants a writable buffer (and may refuse size 0: then an
     * empty file on disk stands in). */
    unsigned char *copy = malloc(size + 1);
    if (!copy)
        return 0;
    if (size)
        memcpy(copy, data, size);
    FILE *f = fmemopen(copy, size, "rb");
    if (!f) {
        const char *path = eo_fuzz_file(data, size);
        f = path ? fopen(path, "rb") : NULL;
    }
    if (!f) {
        free(copy);
        return 0;
    }
    char err[512] = "";
    eo_idx x;
    eo_status st = eo_idx_read(f, "fuzz-input", &x, err, sizeof err);
    if (st == EO_OK) {
        size_t count = 1;
        EO_FUZZ_CHECK(x.rank >= 1 && x.rank <= EO_IDX_MAX_RANK, "rank %d accepted", x.rank);
        for (int i = 0; i < x.rank; i++)
            count *= x.dims[i];
        EO_FUZZ_CHECK(count == x.count && x.count <= EO_IDX_MAX_ELEMS && x.data,
                      "accepted with count %zu for dims product %zu", x.count, count);
        EO_FUZZ_CHECK(x.count <= size || (size >= 2 && data[0] == 0x1f && data[1] == 0x8b),
                      "a plain input of %zu bytes gave %zu elements", size, x.count);
        /* Touch every byte so ASan sees any short buffer. */
        unsigned sum = 0;
        for (size_t i = 0; i < x.count; i++)
            sum += x.data[i];
        (void)sum;
        char shape[64];
        eo_idx_shape_str(&x, shape, sizeof shape);
        eo_idx_free(&x);
    } else {
        EO_FUZZ_CHECK(st == EO_ERR_FORMAT || st == EO_ERR_IO || st == EO_ERR_OOM,
                      "status %d (%s)", st, err);
        EO_FUZZ_CHECK(x.data == NULL && x.count == 0, "refused but data left behind");
        EO_FUZZ_CHECK(eo_fuzz_mentions(err, "fuzz-input"), "message lacks the name: %s", err);
    }
    fclose(f);
    free(copy);
    return 0;
}

EO_FUZZ_ENTRY(idx)
