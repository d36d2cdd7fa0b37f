/* tests/fuzz/fuzz_tokens.c — llm.c's token shard reader
 * (tools/train/tokens.c) from memory and through a file.
 *
 * Any bytes: either EO_OK with exactly (size - 1024) / 2 ids, each below
 * the vocabulary and equal to the little-endian uint16 at its place, or
 * EO_ERR_ARG with a message naming the input. The vocabulary comes from
 * the first byte past the header's fields, so inputs reach both sides of
 * the id check. The file reader must agree with the memory one. */
#include <stdlib.h>
#include <string.h>
#include "tests/fuzz/fuzz.h"
#include "tools/train/tokens.h"

int eo_fuzz_tokens(const uint8_t *data, size_t size)
{
    int vocab = size > 12 ? 1 + data[12] * 256 : 256; /* 1 .. 65281 */
    char err[512] = "";
    size_t n = 0;
    eo_status st = eo_tokens_parse("fuzz-input", data, size, vocab, NULL, &n, err, sizeof err);
    int32_t *ids = NULL;
    if (st == EO_OK) {
        EO_FUZZ_CHECK(size >= EO_TOKENS_HEADER_BYTES && n == (size - EO_TOKENS_HEADER_BYTES) / 2 &&
                      (size - EO_TOKENS_HEADER_BYTES) % 2 == 0,
                      "accepted %zu ids from %zu bytes", n, size);
        ids = malloc((n ? n : 1) * sizeof *ids);
        if (!ids)
            return 0;
        size_t n2 = 0;
        st = eo_tokens_parse("fuzz-input", data, size, vocab, ids, &n2, err, sizeof err);
        EO_FUZZ_CHECK(st == EO_OK && n2 == n, "second parse: status %d, %zu ids", st, n2);
        for (size_t i = 0; i < n; i++) {
            const uint8_t *t = data + EO_TOKENS_HEADER_BYTES + 2 * i;
            EO_FUZZ_CHECK(ids[i] == (t[0] | t[1] << 8) && ids[i] < vocab, "id %zu is %d", i,
                          (int)ids[i]);
        }
    } else {
        EO_FUZZ_CHECK(st == EO_ERR_ARG, "status %d (%s)", st, err);
        EO_FUZZ_CHECK(eo_fuzz_mentions(err, "fuzz-input"), "message lacks the name: %s", err);
    }
    const char *path = eo_fuzz_file(data, size);
    if (path) {
        int32_t *f = NULL;
        size_t nf = 0;
        eo_status sf = eo_tokens_load(path, vocab, &f, &nf, err, sizeof err);
        EO_FUZZ_CHECK(sf == st && nf == n && (st != EO_OK || n == 0 ||
                                              memcmp(f, ids, n * sizeof *ids) == 0),
                      "the file reader disagrees: status %d vs %d, %zu vs %zu ids", sf, st, nf, n);
        free(f);
    }
    free(ids);
    return 0;
}

EO_FUZZ_ENTRY(tokens)
