/* tests/fuzz/fuzz_bpe_files.c — the vocabulary readers
 * (tools/text/bpe_files.h) on any bytes.
 *
 * The input up to its first NUL byte is a vocab.json and the rest a
 * merges.txt for eo_bpe_parse_hf; the whole input is also a tiktoken rank
 * file for eo_bpe_parse_tiktoken. Refused: EO_ERR_FORMAT (or OOM), the
 * message names the input's label, nothing kept. Accepted: a tokenizer
 * whose every non-empty token is found again by its bytes under its own
 * id, and which encodes a fixed text and decodes it back exactly. */
#include <stdlib.h>
#include <string.h>
#include "core/tokenizer.h"
#include "tests/fuzz/fuzz.h"
#include "tools/text/bpe_files.h"

static const char sample[] = "Hello, world! It's 2026:\tdon't  panic \xe2\x80\x94 \xff\xfe caf\xc3\xa9\n";

static void check(eo_status s, eo_bpe_vocab *v, const char *label, const char *err)
{
    if (s != EO_OK) {
        EO_FUZZ_CHECK((s == EO_ERR_FORMAT || s == EO_ERR_OOM) && eo_fuzz_mentions(err, label),
                      "%s refused with status %d and message '%s'", label, (int)s, err);
        EO_FUZZ_CHECK(!v->bpe && !v->mem && !v->bytes, "%s: a refused read kept memory", label);
        return;
    }
    size_t vs = eo_bpe_vocab_size(v->bpe);
    EO_FUZZ_CHECK(vs == v->spec.vocab_size && vs > 0, "%s: vocab_size", label);
    for (uint32_t id = 0; id < vs; id++) {
        size_t len;
        const unsigned char *t = eo_bpe_token(v->bpe, id, &len);
        if (len)
            EO_FUZZ_CHECK(eo_bpe_find(v->bpe, t, len) == (long)id, "%s: token %u not found", label,
                          id);
    }
    size_t n = sizeof sample - 1, k, len;
    uint32_t ids[sizeof sample];
    unsigned char back[sizeof sample];
    char e[512];
    EO_FUZZ_CHECK(eo_bpe_encode(v->bpe, sample, n, NULL, 0, ids, n, &k, e, sizeof e) == EO_OK,
                  "%s: encode: %s", label, e);
    EO_FUZZ_CHECK(eo_bpe_decode(v->bpe, ids, k, back, n, &len, e, sizeof e) == EO_OK &&
                      len == n && !memcmp(back, sample, n),
                  "%s: decode(encode(sample)) differs", label);
    eo_bpe_vocab_free(v);
}

int eo_fuzz_bpe_files(const uint8_t *data, size_t size)
{
    char err[512];
    eo_bpe_vocab v;
    const uint8_t *nul = memchr(data, 0, size);
    size_t jn = nul ? (size_t)(nul - data) : size;
    const uint8_t *m = nul ? nul + 1 : data + size;
    eo_status s = eo_bpe_parse_hf(data, jn, "fuzz-vocab.json", m, size - (size_t)(m - data),
                                  "fuzz-merges.txt", &v, err, sizeof err);
    check(s, &v, "fuzz-", err);
    s = eo_bpe_parse_tiktoken(data, size, "fuzz.tiktoken", &v, err, sizeof err);
    check(s, &v, "fuzz.tiktoken", err);
    return 0;
}

EO_FUZZ_ENTRY(bpe_files)
