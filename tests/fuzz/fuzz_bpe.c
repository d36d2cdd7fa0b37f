/* tests/fuzz/fuzz_bpe.c — the byte-level BPE encoder and decoder
 * (core/tokenizer.h) on any bytes, with the test vocabulary
 * (tests/fixtures/bpe/, read once; the harness runs from the repository
 * root, as `make fuzz` and the replay suite do).
 *
 * Checks: the pieces eo_bpe_split cuts are non-empty and tile the input;
 * encode succeeds with a work buffer of eo_bpe_encode_work_bytes, gives
 * at most one id per byte, each below the vocabulary's size, and the same
 * ids as encoding piece by piece (the merges never cross a piece);
 * decode gives the input back exactly; counting (ids NULL) and a short
 * capacity give the same count and prefix; without a work buffer, encode
 * either gives the same ids or refuses a piece longer than
 * EO_BPE_SHORT_PIECE with EO_ERR_OOM and a message naming eo_bpe_encode.
 * And every piece's ids equal those of a plain transcription of
 * GPT2Tokenizer.bpe here (find the lowest-ranked pair, merge all its
 * occurrences left to right, again), which shares no code with the
 * library's two merge loops (stack array, heap). */
#include <stdlib.h>
#include <string.h>
#include "core/tokenizer.h"
#include "tests/fuzz/fuzz.h"
#include "tools/text/bpe_files.h"

static eo_bpe_vocab v;

static const eo_bpe *vocab(void)
{
    static int loaded;
    if (!loaded) {
        char err[512];
        if (eo_bpe_read_hf("tests/fixtures/bpe/vocab.json", "tests/fixtures/bpe/merges.txt", &v, err,
                           sizeof err) != EO_OK)
            eo_fuzz_fail("cannot load the test vocabulary: %s", err);
        loaded = 1;
    }
    return v.bpe;
}

/* The merges sorted by pair, for the transcription's lookups (built
 * here with qsort and bsearch, not the library's hash). */
typedef struct mrank {
    uint32_t a, b;
    long rank;
} mrank;
static mrank *sorted;
static size_t nsorted;

static int by_pair(const void *x, const void *y)
{
    const mrank *p = x, *q = y;
    if (p->a != q->a)
        return p->a < q->a ? -1 : 1;
    if (p->b != q->b)
        return p->b < q->b ? -1 : 1;
    return (p->rank > q->rank) - (p->rank < q->rank);
}

/* The rank of the pair (a, b) (the last listing wins, as in
 * GPT2Tokenizer's dict); -1 if none. */
static long rank_of(uint32_t a, uint32_t b)
{
    if (!sorted) {
        nsorted = v.spec.merge_count;
        sorted = malloc((nsorted + 1) * sizeof *sorted);
        if (!sorted)
            eo_fuzz_fail("out of memory");
        for (size_t i = 0; i < nsorted; i++)
            sorted[i] = (mrank){v.spec.merges[2 * i], v.spec.merges[2 * i + 1], (long)i};
        qsort(sorted, nsorted, sizeof *sorted, by_pair);
    }
    size_t lo = 0, hi = nsorted;
    while (lo < hi) { /* the first entry > (a, b, any rank) */
        size_t mid = lo + (hi - lo) / 2;
        if (sorted[mid].a < a || (sorted[mid].a == a && sorted[mid].b <= b))
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo && sorted[lo - 1].a == a && sorted[lo - 1].b == b ? sorted[lo - 1].rank : -1;
}

/* GPT2Tokenizer.bpe on one piece; ids to out, returns their count. */
static size_t naive_bpe(const unsigned char *s, size_t n, uint32_t *out)
{
    const eo_bpe *bpe = vocab();
    for (size_t i = 0; i < n; i++)
        out[i] = (uint32_t)eo_bpe_find(bpe, s + i, 1);
    for (;;) {
        long best = -1;
        for (size_t i = 0; i + 1 < n; i++) {
            long r = rank_of(out[i], out[i + 1]);
            if (r >= 0 && (best < 0 || r < best))
                best = r;
        }
        if (best < 0)
            return n;
        uint32_t a = v.spec.merges[2 * best], b = v.spec.merges[2 * best + 1];
        size_t la, lb;
        const unsigned char *ta = eo_bpe_token(bpe, a, &la), *tb = eo_bpe_token(bpe, b, &lb);
        unsigned char cat[512];
        memcpy(cat, ta, la);
        memcpy(cat + la, tb, lb);
        uint32_t ab = (uint32_t)eo_bpe_find(bpe, cat, la + lb);
        size_t w = 0;
        for (size_t i = 0; i < n;) {
            if (i + 1 < n && out[i] == a && out[i + 1] == b) {
                out[w++] = ab;
                i += 2;
            } else {
                out[w++] = out[i++];
            }
        }
        n = w;
    }
}

int eo_fuzz_bpe(const uint8_t *data, size_t size)
{
    const eo_bpe *bpe = vocab();
    char err[512];
    size_t longest = 0;
    for (size_t pos = 0; pos < size;) {
        size_t end = eo_bpe_split(data, size, pos);
        EO_FUZZ_CHECK(end > pos && end <= size, "split at %zu gave %zu (size %zu)", pos, end, size);
        longest = end - pos > longest ? end - pos : longest;
        pos = end;
    }
    size_t wb = eo_bpe_encode_work_bytes(size);
    void *work = malloc(wb);
    uint32_t *ids = malloc((size + 1) * sizeof *ids), *part = malloc((size + 1) * sizeof *part);
    unsigned char *back = malloc(size + 1);
    if (!work || !ids || !part || !back)
        goto done;
    size_t n;
    eo_status s = eo_bpe_encode(bpe, data, size, work, wb, ids, size, &n, err, sizeof err);
    EO_FUZZ_CHECK(s == EO_OK && n <= size, "encode: status %d, %zu ids for %zu bytes: %s", (int)s, n,
                  size, err);
    for (size_t i = 0; i < n; i++)
        EO_FUZZ_CHECK(ids[i] < eo_bpe_vocab_size(bpe), "id %u out of range", ids[i]);
    /* Piece by piece, and each piece by the plain transcription. */
    size_t k = 0;
    for (size_t pos = 0; pos < size;) {
        size_t end = eo_bpe_split(data, size, pos), m;
        s = eo_bpe_encode(bpe, data + pos, end - pos, work, wb, part, size, &m, err, sizeof err);
        /* A piece re-split alone may cut differently only where the text
         * after it mattered (the white-space lookahead): compare ids only
         * when it stays one piece. */
        if (eo_bpe_split(data + pos, end - pos, 0) == end - pos) {
            EO_FUZZ_CHECK(s == EO_OK && k + m <= n && !memcmp(part, ids + k, m * sizeof *ids),
                          "piece [%zu, %zu) encodes differently alone", pos, end);
            size_t m2 = naive_bpe(data + pos, end - pos, part);
            EO_FUZZ_CHECK(m2 == m && !memcmp(part, ids + k, m * sizeof *ids),
                          "piece [%zu, %zu): %zu ids, GPT2Tokenizer.bpe's algorithm gives %zu", pos,
                          end, m, m2);
            k += m;
        } else {
            break;
        }
        pos = end;
    }
    size_t len;
    s = eo_bpe_decode(bpe, ids, n, back, size, &len, err, sizeof err);
    EO_FUZZ_CHECK(s == EO_OK && len == size && !memcmp(back, data, size),
                  "decode(encode(x)) != x (%zu bytes back for %zu)", len, size);
    size_t count;
    s = eo_bpe_encode(bpe, data, size, work, wb, NULL, 0, &count, err, sizeof err);
    EO_FUZZ_CHECK(s == EO_OK && count == n, "counting gave %zu, encoding %zu", count, n);
    size_t cap = n / 2;
    s = eo_bpe_encode(bpe, data, size, work, wb, part, cap, &count, err, sizeof err);
    EO_FUZZ_CHECK(s == EO_OK && count == n && !memcmp(part, ids, cap * sizeof *ids),
                  "a capacity of %zu changed the ids or the count", cap);
    s = eo_bpe_encode(bpe, data, size, NULL, 0, part, size, &count, err, sizeof err);
    if (longest > EO_BPE_SHORT_PIECE)
        EO_FUZZ_CHECK(s == EO_ERR_OOM && eo_fuzz_mentions(err, "eo_bpe_encode"),
                      "a %zu-byte piece without work: status %d", longest, (int)s);
    else
        EO_FUZZ_CHECK(s == EO_OK && count == n && !memcmp(part, ids, n * sizeof *ids),
                      "without work buffer: different ids");
done:
    free(work);
    free(ids);
    free(part);
    free(back);
    return 0;
}

EO_FUZZ_ENTRY(bpe)
