/* core/bpe.c — the byte-level BPE tokenizer: building it in the caller's
 * memory, encoding by merge rank, decoding (core/tokenizer.h).
 *
 * Layout inside the caller's buffer, built once by eo_bpe_init:
 *   struct eo_bpe       the sizes and the 256 single-byte ids
 *   offsets, bytes      the vocabulary, copied (token i's bytes)
 *   pairs               open-addressing hash (a, b) -> (rank, result id),
 *                       at most half full, so a lookup is one or two
 *                       probes: the merge loop's only data structure
 *   tokens              open-addressing hash bytes -> id, to find a
 *                       merge's result at build time and for eo_bpe_find
 *
 * The merge loop (GPT2Tokenizer.bpe): find the adjacent pair of lowest
 * rank, merge every occurrence of it left to right without overlap (one
 * "round"), repeat. Words are short, so for a piece of up to
 * EO_BPE_SHORT_PIECE bytes the symbols sit in a stack array and each
 * round rescans it (what tiktoken does too). A longer piece (a run of
 * spaces, a long word in a script without spaces) would make that
 * quadratic, so it goes to a linked list with a min-heap of (rank,
 * position): a round pops every entry of its rank in position order —
 * left to right, as the rescan does — and the pairs a merge creates wait
 * in a side list until the round ends, so a pair of lower rank made in
 * the middle of a round cannot jump ahead of the round's remaining
 * occurrences (it would, in a plain heap, and GPT2Tokenizer does not do
 * that). Stale heap entries are skipped when popped. */
#include <string.h>
#include "alloc/checked.h"
#include "core/internal.h"
#include "core/tokenizer.h"

#define NONE UINT32_MAX

typedef struct pair_slot {
    uint32_t a, b;      /* the pair; a == NONE marks an empty slot */
    uint32_t rank, out; /* its merge rank and the id it merges into */
} pair_slot;

struct eo_bpe {
    uint32_t vocab_size;
    uint32_t byte_id[256];
    const uint32_t *offsets; /* vocab_size + 1, offsets[0] == 0 */
    const unsigned char *bytes;
    const pair_slot *pairs;
    size_t pair_mask;
    const uint32_t *tokens; /* id + 1 per slot, 0 empty */
    size_t token_mask;
};

static void say(char *err, size_t errlen, const char *fmt, ...)
{
    if (!err || !errlen)
        return;
    va_list ap;
    va_start(ap, fmt);
    eo_vformat(err, errlen, fmt, ap);
    va_end(ap);
}

/* ---- hashing ------------------------------------------------------------- */

static size_t pair_hash(uint32_t a, uint32_t b)
{
    uint64_t k = ((uint64_t)a << 32 | b) * 0x9E3779B97F4A7C15ull;
    return (size_t)(k ^ (k >> 29));
}

/* FNV-1a over a's bytes then b's, so a concatenation is hashed in place. */
static uint32_t bytes_hash(const unsigned char *a, size_t na, const unsigned char *b, size_t nb)
{
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < na; i++)
        h = (h ^ a[i]) * 16777619u;
    for (size_t i = 0; i < nb; i++)
        h = (h ^ b[i]) * 16777619u;
    return h;
}

static const unsigned char *tok(const eo_bpe *bpe, uint32_t id, size_t *len)
{
    *len = bpe->offsets[id + 1] - bpe->offsets[id];
    return bpe->bytes + bpe->offsets[id];
}

/* The id of the token equal to a[0..na) followed by b[0..nb), or NONE. */
static uint32_t find2(const eo_bpe *bpe, const unsigned char *a, size_t na, const unsigned char *b,
                      size_t nb)
{
    for (size_t h = bytes_hash(a, na, b, nb) & bpe->token_mask;; h = (h + 1) & bpe->token_mask) {
        uint32_t v = bpe->tokens[h];
        if (!v)
            return NONE;
        size_t n;
        const unsigned char *t = tok(bpe, v - 1, &n);
        /* b is NULL when only a is looked up: memcmp must not see it. */
        if (n == na + nb && !memcmp(t, a, na) && (!nb || !memcmp(t + na, b, nb)))
            return v - 1;
    }
}

static const pair_slot *find_pair(const eo_bpe *bpe, uint32_t a, uint32_t b)
{
    for (size_t h = pair_hash(a, b) & bpe->pair_mask;; h = (h + 1) & bpe->pair_mask) {
        const pair_slot *p = &bpe->pairs[h];
        if (p->a == a && p->b == b)
            return p;
        if (p->a == NONE)
            return NULL;
    }
}

/* ---- building -------------------------------------------------------------- */

/* Slots for n keys: a power of two at least 2n (and 8). 0 on overflow. */
static size_t slots_for(size_t n)
{
    size_t s = 8;
    while (s < n || s - n < n) {
        if (s > SIZE_MAX / 4)
            return 0;
        s *= 2;
    }
    return s;
}

typedef struct layout {
    size_t offsets, bytes, pairs, npairs, tokens, ntokens, total;
} layout;

static size_t align8(size_t n)
{
    return (n + 7) & ~(size_t)7;
}

/* Byte offsets of each table in the buffer (from an 8-aligned start).
 * 1 on overflow. */
static int plan(const eo_bpe_spec *spec, layout *l)
{
    size_t v = spec->vocab_size, nbytes = spec->token_offsets ? spec->token_offsets[v] : 0, t;
    l->npairs = slots_for(spec->merge_count);
    l->ntokens = slots_for(v);
    if (!l->npairs || !l->ntokens)
        return 1;
    size_t at = align8(sizeof(eo_bpe));
    l->offsets = at;
    if (eo_size_mul_overflows(v + 1, sizeof(uint32_t), &t) || eo_size_add_overflows(at, t, &at))
        return 1;
    l->bytes = at;
    if (eo_size_add_overflows(at, nbytes, &at) || eo_size_add_overflows(at, 7, &at))
        return 1;
    l->pairs = at = align8(at);
    if (eo_size_mul_overflows(l->npairs, sizeof(pair_slot), &t) || eo_size_add_overflows(at, t, &at))
        return 1;
    l->tokens = at;
    if (eo_size_mul_overflows(l->ntokens, sizeof(uint32_t), &t) || eo_size_add_overflows(at, t, &at))
        return 1;
    /* + 7 so that an unaligned buffer can be aligned inside itself. */
    return eo_size_add_overflows(at, 7, &l->total);
}

size_t eo_bpe_bytes_needed(const eo_bpe_spec *spec)
{
    layout l;
    if (!spec || !spec->vocab_size || spec->vocab_size >= (size_t)1 << 31 ||
        spec->merge_count >= (size_t)1 << 31 || plan(spec, &l))
        return 0;
    return l.total;
}

eo_status eo_bpe_init(eo_bpe **out, void *mem, size_t bytes, const eo_bpe_spec *spec, char *err,
                      size_t errlen)
{
    if (err && errlen)
        err[0] = 0;
    if (!out || !spec) {
        say(err, errlen, "eo_bpe_init: %s is NULL", out ? "spec" : "out");
        return EO_ERR_ARG;
    }
    *out = NULL;
    size_t v = spec->vocab_size;
    if (!v || v >= (size_t)1 << 31 || spec->merge_count >= (size_t)1 << 31) {
        say(err, errlen,
            "eo_bpe_init: vocab_size %zu and merge_count %zu: expected 1 <= vocab_size < 2^31 and "
            "merge_count < 2^31",
            v, spec->merge_count);
        return EO_ERR_ARG;
    }
    if (!spec->token_offsets || (spec->token_offsets[v] && !spec->token_bytes) ||
        (spec->merge_count && !spec->merges)) {
        say(err, errlen,
            "eo_bpe_init: token_offsets, token_bytes (when the tokens have bytes) and merges "
            "(when merge_count > 0) must not be NULL");
        return EO_ERR_ARG;
    }
    layout l;
    if (plan(spec, &l) || !mem || bytes < l.total) {
        say(err, errlen, "eo_bpe_init: the buffer has %zu bytes, eo_bpe_bytes_needed asks %zu",
            mem ? bytes : 0, plan(spec, &l) ? (size_t)0 : l.total);
        return EO_ERR_OOM;
    }
    const uint32_t *off = spec->token_offsets;
    for (size_t i = 0; i < v; i++)
        if (off[i + 1] < off[i]) {
            say(err, errlen,
                "eo_bpe_init: token_offsets[%zu] = %u is below token_offsets[%zu] = %u: expected "
                "nondecreasing offsets",
                i + 1, off[i + 1], i, off[i]);
            return EO_ERR_FORMAT;
        }
    unsigned char *base = (unsigned char *)mem + ((8 - ((uintptr_t)mem & 7)) & 7);
    eo_bpe *b = (eo_bpe *)(void *)base;
    uint32_t *offsets = (uint32_t *)(void *)(base + l.offsets);
    unsigned char *tbytes = base + l.bytes;
    pair_slot *pairs = (pair_slot *)(void *)(base + l.pairs);
    uint32_t *tokens = (uint32_t *)(void *)(base + l.tokens);
    b->vocab_size = (uint32_t)v;
    for (size_t i = 0; i <= v; i++)
        offsets[i] = off[i] - off[0];
    if (off[v] > off[0])
        memcpy(tbytes, spec->token_bytes + off[0], off[v] - off[0]);
    b->offsets = offsets;
    b->bytes = tbytes;
    b->pairs = pairs;
    b->pair_mask = l.npairs - 1;
    b->tokens = tokens;
    b->token_mask = l.ntokens - 1;
    memset(tokens, 0, l.ntokens * sizeof *tokens);
    for (int i = 0; i < 256; i++)
        b->byte_id[i] = NONE;
    for (uint32_t id = 0; id < v; id++) {
        size_t n;
        const unsigned char *t = tok(b, id, &n);
        if (!n)
            continue;
        size_t h = bytes_hash(t, n, NULL, 0) & b->token_mask;
        for (; tokens[h]; h = (h + 1) & b->token_mask) {
            size_t m;
            const unsigned char *u = tok(b, tokens[h] - 1, &m);
            if (m == n && !memcmp(u, t, n)) {
                say(err, errlen, "eo_bpe_init: tokens %u and %u have the same %zu bytes", tokens[h] - 1,
                    id, n);
                return EO_ERR_FORMAT;
            }
        }
        tokens[h] = id + 1;
        if (n == 1)
            b->byte_id[t[0]] = id;
    }
    for (int i = 0; i < 256; i++)
        if (b->byte_id[i] == NONE) {
            say(err, errlen,
                "eo_bpe_init: byte %d is not a token: a byte-level vocabulary must hold all 256 "
                "single bytes",
                i);
            return EO_ERR_FORMAT;
        }
    for (size_t i = 0; i < l.npairs; i++)
        pairs[i] = (pair_slot){NONE, NONE, NONE, NONE};
    for (size_t r = 0; r < spec->merge_count; r++) {
        uint32_t x = spec->merges[2 * r], y = spec->merges[2 * r + 1];
        if (x >= v || y >= v) {
            say(err, errlen, "eo_bpe_init: merge %zu (ids %u + %u): an id is not below vocab_size %zu",
                r, x, y, v);
            return EO_ERR_FORMAT;
        }
        size_t nx, ny;
        const unsigned char *tx = tok(b, x, &nx), *ty = tok(b, y, &ny);
        uint32_t z = (nx && ny) ? find2(b, tx, nx, ty, ny) : NONE;
        if (z == NONE) {
            say(err, errlen,
                "eo_bpe_init: merge %zu (ids %u + %u): their concatenation (%zu bytes) is not a "
                "token of the vocabulary",
                r, x, y, nx + ny);
            return EO_ERR_FORMAT;
        }
        uint32_t rank = spec->merge_ranks ? spec->merge_ranks[r] : (uint32_t)r;
        if (rank == NONE) {
            say(err, errlen, "eo_bpe_init: merge %zu has rank 2^32 - 1: expected a smaller one", r);
            return EO_ERR_FORMAT;
        }
        /* Like GPT2Tokenizer's dict(zip(merges, ranks)), a pair listed
         * twice keeps its last rank. */
        size_t h = pair_hash(x, y) & b->pair_mask;
        while (pairs[h].a != NONE && !(pairs[h].a == x && pairs[h].b == y))
            h = (h + 1) & b->pair_mask;
        pairs[h] = (pair_slot){x, y, rank, z};
    }
    *out = b;
    return EO_OK;
}

size_t eo_bpe_vocab_size(const eo_bpe *bpe)
{
    return bpe ? bpe->vocab_size : 0;
}

const unsigned char *eo_bpe_token(const eo_bpe *bpe, uint32_t id, size_t *len)
{
    if (!bpe || id >= bpe->vocab_size) {
        if (len)
            *len = 0;
        return NULL;
    }
    size_t n;
    const unsigned char *t = tok(bpe, id, &n);
    if (len)
        *len = n;
    return t;
}

long eo_bpe_find(const eo_bpe *bpe, const void *s, size_t len)
{
    if (!bpe || (!s && len) || !len)
        return -1;
    uint32_t id = find2(bpe, s, len, NULL, 0);
    return id == NONE ? -1 : (long)id;
}

/* ---- encoding ----------------------------------------------------------------- */

/* A short piece: symbols in an array, each round rescans it. Writes the
 * final ids to sym[] and returns their count. */
static size_t merge_short(const eo_bpe *bpe, const unsigned char *s, size_t n,
                          uint32_t sym[EO_BPE_SHORT_PIECE])
{
    const pair_slot *pr[EO_BPE_SHORT_PIECE]; /* pr[i]: the pair (i, i + 1), or NULL */
    for (size_t i = 0; i < n; i++)
        sym[i] = bpe->byte_id[s[i]];
    for (size_t i = 0; i + 1 < n; i++)
        pr[i] = find_pair(bpe, sym[i], sym[i + 1]);
    while (n > 1) {
        uint32_t best = NONE;
        for (size_t i = 0; i + 1 < n; i++)
            if (pr[i] && pr[i]->rank < best)
                best = pr[i]->rank;
        if (best == NONE)
            break;
        /* One round: merge every occurrence, left to right, no overlap.
         * Then a pair touching a merged symbol is looked up again; any
         * other pair is two symbols that were neighbours before, whose
         * entry is kept (old[j] >= j, so reading upwards is safe). */
        size_t w = 0, i = 0;
        unsigned char fresh[EO_BPE_SHORT_PIECE], old[EO_BPE_SHORT_PIECE];
        while (i < n) {
            old[w] = (unsigned char)i;
            fresh[w] = i + 1 < n && pr[i] && pr[i]->rank == best;
            if (fresh[w]) {
                sym[w] = pr[i]->out;
                i += 2;
            } else {
                sym[w] = sym[i];
                i += 1;
            }
            w++;
        }
        for (size_t j = 0; j + 1 < w; j++)
            pr[j] = fresh[j] || fresh[j + 1] ? find_pair(bpe, sym[j], sym[j + 1]) : pr[old[j]];
        n = w;
    }
    return n;
}

typedef struct long_work {
    uint32_t *id, *next, *prev;
    uint64_t *heap, *pend;
    size_t nheap, npend;
} long_work;

static int heap_less(uint64_t a, uint64_t b)
{
    return a < b;
}

static void heap_push(long_work *w, uint64_t e)
{
    size_t i = w->nheap++;
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (!heap_less(e, w->heap[p]))
            break;
        w->heap[i] = w->heap[p];
        i = p;
    }
    w->heap[i] = e;
}

static uint64_t heap_pop(long_work *w)
{
    uint64_t top = w->heap[0], e = w->heap[--w->nheap];
    size_t i = 0, n = w->nheap;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= n)
            break;
        if (c + 1 < n && heap_less(w->heap[c + 1], w->heap[c]))
            c++;
        if (!heap_less(w->heap[c], e))
            break;
        w->heap[i] = w->heap[c];
        i = c;
    }
    if (n)
        w->heap[i] = e;
    return top;
}

static void note_pair(const eo_bpe *bpe, long_work *w, uint32_t p)
{
    uint32_t q = w->next[p];
    if (q == NONE)
        return;
    const pair_slot *ps = find_pair(bpe, w->id[p], w->id[q]);
    if (ps)
        w->pend[w->npend++] = (uint64_t)ps->rank << 32 | p;
}

/* Merges the pair starting at symbol p if it is still the pair of rank
 * `rank` there (entries go stale as their neighbours merge). */
static void merge_at(const eo_bpe *bpe, long_work *w, uint32_t p, uint32_t rank)
{
    if (w->id[p] == NONE || w->next[p] == NONE)
        return;
    uint32_t q = w->next[p];
    const pair_slot *ps = find_pair(bpe, w->id[p], w->id[q]);
    if (!ps || ps->rank != rank)
        return;
    w->id[p] = ps->out;
    w->id[q] = NONE;
    w->next[p] = w->next[q];
    if (w->next[q] != NONE)
        w->prev[w->next[q]] = p;
    if (w->prev[p] != NONE)
        note_pair(bpe, w, w->prev[p]);
    note_pair(bpe, w, p);
}

/* A long piece of n bytes; the final ids go to sym (n of room). */
static size_t merge_long(const eo_bpe *bpe, const unsigned char *s, size_t n, long_work *w,
                         uint32_t *out)
{
    for (size_t i = 0; i < n; i++) {
        w->id[i] = bpe->byte_id[s[i]];
        w->next[i] = i + 1 < n ? (uint32_t)(i + 1) : NONE;
        w->prev[i] = i ? (uint32_t)(i - 1) : NONE;
    }
    w->nheap = w->npend = 0;
    for (size_t i = 0; i + 1 < n; i++) {
        const pair_slot *ps = find_pair(bpe, w->id[i], w->id[i + 1]);
        if (ps)
            w->heap[w->nheap++] = (uint64_t)ps->rank << 32 | i;
    }
    /* Heapify the initial entries. */
    size_t m = w->nheap;
    w->nheap = 0;
    for (size_t i = 0; i < m; i++)
        heap_push(w, w->heap[i]);
    while (w->nheap) {
        uint32_t rank = (uint32_t)(w->heap[0] >> 32);
        w->npend = 0;
        while (w->nheap && (uint32_t)(w->heap[0] >> 32) == rank) {
            uint64_t e = heap_pop(w);
            merge_at(bpe, w, (uint32_t)e, rank);
        }
        for (size_t i = 0; i < w->npend; i++)
            heap_push(w, w->pend[i]);
    }
    size_t k = 0;
    for (uint32_t p = 0; p != NONE; p = w->next[p])
        out[k++] = w->id[p];
    return k;
}

/* Per byte of the longest piece: id, next, prev (4 each), heap entries
 * (at most 3 per byte: one per initial pair, two per merge) and pending
 * entries (at most 2 per merge of one round), 8 each. */
#define LONG_BYTES_PER_BYTE (3 * 4 + 3 * 8 + 2 * 8)

size_t eo_bpe_encode_work_bytes(size_t len)
{
    size_t r;
    if (eo_size_mul_overflows(len, LONG_BYTES_PER_BYTE, &r) || eo_size_add_overflows(r, 8, &r))
        return SIZE_MAX;
    return r;
}

eo_status eo_bpe_encode(const eo_bpe *bpe, const void *text, size_t len, void *work,
                        size_t work_bytes, uint32_t *ids, size_t cap, size_t *count, char *err,
                        size_t errlen)
{
    if (err && errlen)
        err[0] = 0;
    if (count)
        *count = 0;
    if (!bpe || !count || (!text && len) || (!ids && cap)) {
        const char *what = !bpe ? "bpe" : !count ? "count" : !text && len ? "text (len > 0)" : "ids (cap > 0)";
        say(err, errlen, "eo_bpe_encode: %s is NULL", what);
        return EO_ERR_ARG;
    }
    const unsigned char *s = text;
    size_t total = 0;
    for (size_t pos = 0; pos < len;) {
        size_t end = eo_bpe_split(s, len, pos), n = end - pos, k;
        uint32_t sym[EO_BPE_SHORT_PIECE];
        const uint32_t *res = sym;
        if (n == 1) {
            sym[0] = bpe->byte_id[s[pos]];
            k = 1;
        } else if (n <= EO_BPE_SHORT_PIECE) {
            k = merge_short(bpe, s + pos, n, sym);
        } else {
            size_t need = eo_bpe_encode_work_bytes(n);
            if (!work || work_bytes < need || n >= NONE) {
                say(err, errlen,
                    "eo_bpe_encode: the piece at byte %zu is %zu bytes long, which needs %zu bytes "
                    "of work buffer (eo_bpe_encode_work_bytes); %zu given",
                    pos, n, need, work ? work_bytes : 0);
                *count = total;
                return EO_ERR_OOM;
            }
            unsigned char *a = (unsigned char *)work + ((8 - ((uintptr_t)work & 7)) & 7);
            long_work w;
            w.heap = (uint64_t *)(void *)a;
            w.pend = w.heap + 3 * n;
            w.id = (uint32_t *)(void *)(w.pend + 2 * n);
            w.next = w.id + n;
            w.prev = w.next + n;
            /* The final ids overwrite prev[], which the walk no longer needs. */
            k = merge_long(bpe, s + pos, n, &w, w.prev);
            res = w.prev;
        }
        for (size_t i = 0; i < k; i++, total++)
            if (total < cap)
                ids[total] = res[i];
        pos = end;
    }
    *count = total;
    return EO_OK;
}

eo_status eo_bpe_decode(const eo_bpe *bpe, const uint32_t *ids, size_t n, void *out, size_t cap,
                        size_t *len, char *err, size_t errlen)
{
    if (err && errlen)
        err[0] = 0;
    if (len)
        *len = 0;
    if (!bpe || !len || (!ids && n) || (!out && cap)) {
        const char *what = !bpe ? "bpe" : !len ? "len" : !ids && n ? "ids (n > 0)" : "out (cap > 0)";
        say(err, errlen, "eo_bpe_decode: %s is NULL", what);
        return EO_ERR_ARG;
    }
    unsigned char *o = out;
    size_t total = 0;
    for (size_t i = 0; i < n; i++) {
        if (ids[i] >= bpe->vocab_size) {
            say(err, errlen, "eo_bpe_decode: id %u at position %zu is not below the vocabulary's %u",
                ids[i], i, bpe->vocab_size);
            *len = total;
            return EO_ERR_ARG;
        }
        size_t m;
        const unsigned char *t = tok(bpe, ids[i], &m);
        if (total < cap)
            memcpy(o + total, t, m < cap - total ? m : cap - total);
        total += m;
    }
    *len = total;
    return EO_OK;
}
