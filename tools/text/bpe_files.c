/* tools/text/bpe_files.c — vocab.json + merges.txt and tiktoken rank
 * files into the library's tokenizer (tools/text/bpe_files.h).
 *
 * Both readers first gather the tokens (bytes, id) and build a tokenizer
 * without merges: eo_bpe_init then checks the vocabulary (no two equal
 * tokens, all 256 bytes) and gives eo_bpe_find, which turns merges.txt's
 * strings — or a tiktoken token's two halves — into ids. The tokenizer
 * is then built again with the merges. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "alloc/checked.h"
#include "core/json.h"
#include "tools/cli/errbuf.h"
#include "tools/text/bpe_files.h"

/* A growing array of `elem`-byte items. */
typedef struct vec {
    void *p;
    size_t n, cap, elem;
} vec;

static int vec_push(vec *v, const void *item, size_t count)
{
    if (v->n + count > v->cap) {
        size_t cap;
        if (eo_grow_overflows(v->cap, v->n + count, 256, v->elem, &cap))
            return 0;
        void *p = realloc(v->p, cap * v->elem);
        if (!p)
            return 0;
        v->p = p;
        v->cap = cap;
    }
    memcpy((char *)v->p + v->n * v->elem, item, count * v->elem);
    v->n += count;
    return 1;
}

/* One token as read: its bytes at `off` in the byte vec, and its id. */
typedef struct entry {
    size_t off, len;
    uint32_t id;
} entry;

void eo_bpe_vocab_free(eo_bpe_vocab *v)
{
    if (!v)
        return;
    free(v->bytes);
    free(v->offsets);
    free(v->merges);
    free(v->ranks);
    free(v->mem);
    memset(v, 0, sizeof *v);
}

/* (Re)builds v->bpe from v->spec. */
static eo_status build(eo_bpe_vocab *v, const char *label, char *err, size_t errlen)
{
    free(v->mem);
    v->mem = NULL;
    v->bpe = NULL;
    size_t need = eo_bpe_bytes_needed(&v->spec);
    if (!need)
        return eo_errf(err, errlen, EO_ERR_FORMAT, "%s: %zu tokens and %zu merges are too many", label,
                       v->spec.vocab_size, v->spec.merge_count);
    v->mem = malloc(need);
    if (!v->mem)
        return eo_errf(err, errlen, EO_ERR_OOM, "%s: cannot allocate the tokenizer's %zu bytes", label,
                       need);
    v->mem_bytes = need;
    char msg[512];
    eo_status s = eo_bpe_init(&v->bpe, v->mem, need, &v->spec, msg, sizeof msg);
    if (s != EO_OK)
        return eo_errf(err, errlen, s == EO_ERR_ARG ? EO_ERR_FORMAT : s, "%s: %s", label, msg);
    return EO_OK;
}

/* Lays the gathered tokens out by id (gaps empty) into v. */
static eo_status by_id(eo_bpe_vocab *v, const entry *e, size_t n, const unsigned char *bytes,
                       const char *label, char *err, size_t errlen)
{
    uint32_t max = 0;
    size_t total = 0;
    for (size_t i = 0; i < n; i++) {
        max = e[i].id > max ? e[i].id : max;
        total += e[i].len;
    }
    if (!n)
        return eo_errf(err, errlen, EO_ERR_FORMAT, "%s: no tokens", label);
    if (total > UINT32_MAX)
        return eo_errf(err, errlen, EO_ERR_FORMAT, "%s: the tokens' bytes pass 4 GiB", label);
    size_t vsize = (size_t)max + 1;
    /* Gaps are allowed, but not so many that a stray large id makes us
     * allocate gigabytes for a handful of tokens. */
    if (vsize > 2 * n + 256)
        return eo_errf(err, errlen, EO_ERR_FORMAT,
                       "%s: ids go up to %u for %zu tokens: expected ids close to 0..%zu", label,
                       max, n, n - 1);
    size_t *at = malloc(vsize * sizeof *at);
    v->offsets = malloc((vsize + 1) * sizeof *v->offsets);
    v->bytes = malloc(total ? total : 1);
    if (!at || !v->offsets || !v->bytes) {
        free(at);
        return eo_errf(err, errlen, EO_ERR_OOM, "%s: out of memory for %zu tokens", label, vsize);
    }
    for (size_t i = 0; i < vsize; i++)
        at[i] = SIZE_MAX;
    for (size_t i = 0; i < n; i++) {
        if (at[e[i].id] != SIZE_MAX) {
            eo_status s = eo_errf(err, errlen, EO_ERR_FORMAT, "%s: two tokens have id %u", label,
                                  e[i].id);
            free(at);
            return s;
        }
        at[e[i].id] = i;
    }
    uint32_t o = 0;
    for (size_t id = 0; id < vsize; id++) {
        v->offsets[id] = o;
        if (at[id] != SIZE_MAX && e[at[id]].len) {
            memcpy(v->bytes + o, bytes + e[at[id]].off, e[at[id]].len);
            o += (uint32_t)e[at[id]].len;
        }
    }
    v->offsets[vsize] = o;
    free(at);
    v->spec.vocab_size = vsize;
    v->spec.token_bytes = v->bytes;
    v->spec.token_offsets = v->offsets;
    return EO_OK;
}

/* A byte-level string (UTF-8, each character standing for one byte)
 * appended to out as bytes; 0 if a character stands for no byte. */
static int unmap(const char *s, size_t n, vec *out)
{
    const unsigned char *u = (const unsigned char *)s;
    for (size_t i = 0; i < n;) {
        size_t k = eo_utf8_len(u + i, n - i);
        if (!k)
            return 0;
        uint32_t cp = k == 1 ? u[i] : (uint32_t)(u[i] & (0x7F >> k));
        for (size_t j = 1; j < k; j++)
            cp = cp << 6 | (u[i + j] & 0x3F);
        int b = eo_bpe_unicode_to_byte(cp);
        if (b < 0)
            return 0;
        unsigned char c = (unsigned char)b;
        if (!vec_push(out, &c, 1))
            return 0;
        i += k;
    }
    return 1;
}

static void set_merges(eo_bpe_vocab *v, vec *pairs, vec *ranks)
{
    v->merges = pairs->p;
    v->ranks = ranks ? ranks->p : NULL;
    v->spec.merges = v->merges;
    v->spec.merge_ranks = v->ranks;
    v->spec.merge_count = pairs->n / 2;
}

eo_status eo_bpe_parse_hf(const void *json, size_t jn, const char *json_label, const void *merges,
                          size_t mn, const char *merges_label, eo_bpe_vocab *out, char *err,
                          size_t errlen)
{
    if (!out || (!json && jn) || (!merges && mn))
        return eo_errf(err, errlen, EO_ERR_ARG, "eo_bpe_parse_hf: NULL argument");
    memset(out, 0, sizeof *out);
    json_label = json_label ? json_label : "vocab.json";
    merges_label = merges_label ? merges_label : "merges.txt";
    vec bytes = {0, 0, 0, 1}, ents = {0, 0, 0, sizeof(entry)}, pairs = {0, 0, 0, 4};
    char *pool = malloc(jn + 1);
    eo_status s = EO_OK;
    if (!pool) {
        s = eo_errf(err, errlen, EO_ERR_OOM, "%s: out of memory", json_label);
        goto done;
    }
    eo_json j;
    eo_json_init(&j, json, jn, json_label, 0, pool, jn + 1, err, errlen);
    if ((s = eo_json_expect(&j, '{')) != EO_OK)
        goto done;
    if (eo_json_peek(&j) == '}') {
        s = eo_json_fail(&j, "the vocabulary is empty");
        goto done;
    }
    for (char sep = ','; sep == ',';) {
        const char *key;
        uint64_t id;
        size_t at = j.i;
        if ((s = eo_json_string(&j, &key)) != EO_OK || (s = eo_json_expect(&j, ':')) != EO_OK ||
            (s = eo_json_uint(&j, &id)) != EO_OK)
            goto done;
        if (id >= (uint64_t)1 << 31) {
            j.i = at;
            s = eo_json_fail(&j, "id %llu of \"%s\" is not below 2^31", (unsigned long long)id, key);
            goto done;
        }
        entry e = {bytes.n, 0, (uint32_t)id};
        if (!unmap(key, strlen(key), &bytes)) {
            j.i = at;
            s = eo_json_fail(&j, "token \"%s\" (id %u) has a character outside GPT-2's byte map",
                             key, e.id);
            goto done;
        }
        e.len = bytes.n - e.off;
        /* Reset the pool: each key is done with once converted. */
        j.pool_used = 0;
        if (!vec_push(&ents, &e, 1)) {
            s = eo_errf(err, errlen, EO_ERR_OOM, "%s: out of memory", json_label);
            goto done;
        }
        if ((s = eo_json_either(&j, ',', '}', &sep)) != EO_OK)
            goto done;
    }
    eo_json_ws(&j);
    if (j.i != j.n) {
        s = eo_json_fail(&j, "text after the vocabulary's closing brace");
        goto done;
    }
    if ((s = by_id(out, ents.p, ents.n, bytes.p, json_label, err, errlen)) != EO_OK ||
        (s = build(out, json_label, err, errlen)) != EO_OK)
        goto done;
    /* merges.txt, line by line. */
    const char *m = merges;
    size_t line = 0;
    for (size_t i = 0; i < mn;) {
        size_t end = i;
        while (end < mn && m[end] != '\n')
            end++;
        size_t e = end;
        if (e > i && m[e - 1] == '\r')
            e--;
        line++;
        size_t next = end + 1;
        if (e == i || (line == 1 && e - i >= 8 && !memcmp(m + i, "#version", 8))) {
            i = next;
            continue;
        }
        const char *sp = memchr(m + i, ' ', e - i);
        uint32_t ab[2];
        vec part = {0, 0, 0, 1};
        for (int h = 0; h < 2 && sp; h++) {
            const char *p = h ? sp + 1 : m + i;
            size_t len = h ? (size_t)(m + e - sp - 1) : (size_t)(sp - (m + i));
            part.n = 0;
            long id = -1;
            if (len && !memchr(p, ' ', len) && unmap(p, len, &part))
                id = eo_bpe_find(out->bpe, part.p, part.n);
            if (id < 0) {
                free(part.p);
                s = eo_errf(err, errlen, EO_ERR_FORMAT,
                            "%s: line %zu: \"%.*s\" is not a token of %s (expected two tokens "
                            "separated by one space)",
                            merges_label, line, (int)(e - i > 200 ? 200 : e - i), m + i, json_label);
                goto done;
            }
            ab[h] = (uint32_t)id;
        }
        free(part.p);
        if (!sp) {
            s = eo_errf(err, errlen, EO_ERR_FORMAT,
                        "%s: line %zu has no space: expected two tokens separated by one space",
                        merges_label, line);
            goto done;
        }
        if (!vec_push(&pairs, ab, 2)) {
            s = eo_errf(err, errlen, EO_ERR_OOM, "%s: out of memory", merges_label);
            goto done;
        }
        i = next;
    }
    set_merges(out, &pairs, NULL);
    pairs.p = NULL;
    s = build(out, merges_label, err, errlen);
done:
    free(pool);
    free(bytes.p);
    free(ents.p);
    free(pairs.p);
    if (s != EO_OK)
        eo_bpe_vocab_free(out);
    return s;
}

static int b64(unsigned char c)
{
    if (c >= 'A' && c <= 'Z')
        return c - 'A';
    if (c >= 'a' && c <= 'z')
        return c - 'a' + 26;
    if (c >= '0' && c <= '9')
        return c - '0' + 52;
    return c == '+' ? 62 : c == '/' ? 63 : -1;
}

/* Standard base64 with its padding (what Python's b64encode writes). */
static int unbase64(const unsigned char *s, size_t n, vec *out)
{
    if (!n || n % 4)
        return 0;
    for (size_t i = 0; i < n; i += 4) {
        int last = i + 4 == n;
        int pad = last ? (s[n - 1] == '=') + (s[n - 2] == '=') : 0;
        int v[4];
        for (int k = 0; k < 4 - pad; k++)
            if ((v[k] = b64(s[i + k])) < 0)
                return 0;
        for (int k = 4 - pad; k < 4; k++)
            v[k] = 0;
        unsigned char b[3] = {(unsigned char)(v[0] << 2 | v[1] >> 4),
                              (unsigned char)((v[1] & 15) << 4 | v[2] >> 2),
                              (unsigned char)((v[2] & 3) << 6 | v[3])};
        /* Padding bits must be zero, as a strict decoder wants. */
        if ((pad == 2 && (v[1] & 15)) || (pad == 1 && (v[2] & 3)))
            return 0;
        if (!vec_push(out, b, (size_t)(3 - pad)))
            return 0;
    }
    return 1;
}

eo_status eo_bpe_parse_tiktoken(const void *text, size_t n, const char *label, eo_bpe_vocab *out,
                                char *err, size_t errlen)
{
    if (!out || (!text && n))
        return eo_errf(err, errlen, EO_ERR_ARG, "eo_bpe_parse_tiktoken: NULL argument");
    memset(out, 0, sizeof *out);
    label = label ? label : "(tiktoken ranks)";
    vec bytes = {0, 0, 0, 1}, ents = {0, 0, 0, sizeof(entry)}, pairs = {0, 0, 0, 4},
        ranks = {0, 0, 0, 4};
    const unsigned char *t = text;
    eo_status s = EO_OK;
    size_t line = 0;
    for (size_t i = 0; i < n;) {
        size_t end = i;
        while (end < n && t[end] != '\n')
            end++;
        size_t e = end;
        if (e > i && t[e - 1] == '\r')
            e--;
        line++;
        if (e > i) {
            const unsigned char *sp = memchr(t + i, ' ', e - i);
            entry en = {bytes.n, 0, 0};
            unsigned long long r = 0;
            int ok = sp && sp + 1 < t + e && unbase64(t + i, (size_t)(sp - (t + i)), &bytes);
            for (const unsigned char *d = sp ? sp + 1 : t + e; ok && d < t + e; d++) {
                ok = *d >= '0' && *d <= '9' && r < (1ull << 31);
                r = r * 10 + (unsigned)(*d - '0');
            }
            if (!ok || r >= (1ull << 31)) {
                s = eo_errf(err, errlen, EO_ERR_FORMAT,
                            "%s: line %zu: expected \"<base64 token> <rank below 2^31>\"", label,
                            line);
                goto done;
            }
            en.len = bytes.n - en.off;
            en.id = (uint32_t)r;
            if (!vec_push(&ents, &en, 1)) {
                s = eo_errf(err, errlen, EO_ERR_OOM, "%s: out of memory", label);
                goto done;
            }
        }
        i = end + 1;
    }
    if ((s = by_id(out, ents.p, ents.n, bytes.p, label, err, errlen)) != EO_OK ||
        (s = build(out, label, err, errlen)) != EO_OK)
        goto done;
    for (uint32_t id = 0; id < out->spec.vocab_size; id++) {
        size_t len;
        const unsigned char *tok = eo_bpe_token(out->bpe, id, &len);
        for (size_t k = 1; k < len; k++) {
            long a = eo_bpe_find(out->bpe, tok, k), b = eo_bpe_find(out->bpe, tok + k, len - k);
            if (a < 0 || b < 0)
                continue;
            uint32_t ab[2] = {(uint32_t)a, (uint32_t)b};
            if (!vec_push(&pairs, ab, 2) || !vec_push(&ranks, &id, 1)) {
                s = eo_errf(err, errlen, EO_ERR_OOM, "%s: out of memory", label);
                goto done;
            }
        }
    }
    set_merges(out, &pairs, &ranks);
    pairs.p = ranks.p = NULL;
    s = build(out, label, err, errlen);
done:
    free(bytes.p);
    free(ents.p);
    free(pairs.p);
    free(ranks.p);
    if (s != EO_OK)
        eo_bpe_vocab_free(out);
    return s;
}

/* The whole file in malloc'd memory. */
static eo_status slurp(const char *path, unsigned char **out, size_t *n, char *err, size_t errlen)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return eo_errf(err, errlen, EO_ERR_IO, "%s: %s", path, strerror(errno));
    vec v = {0, 0, 0, 1};
    unsigned char buf[1 << 16];
    size_t got;
    while ((got = fread(buf, 1, sizeof buf, f)) > 0)
        if (!vec_push(&v, buf, got)) {
            fclose(f);
            free(v.p);
            return eo_errf(err, errlen, EO_ERR_OOM, "%s: out of memory", path);
        }
    int bad = ferror(f);
    fclose(f);
    if (bad) {
        free(v.p);
        return eo_errf(err, errlen, EO_ERR_IO, "%s: read error", path);
    }
    *out = v.p;
    *n = v.n;
    return EO_OK;
}

eo_status eo_bpe_read_hf(const char *vocab_path, const char *merges_path, eo_bpe_vocab *out,
                         char *err, size_t errlen)
{
    unsigned char *j = NULL, *m = NULL;
    size_t jn = 0, mn = 0;
    eo_status s = slurp(vocab_path, &j, &jn, err, errlen);
    if (s == EO_OK)
        s = slurp(merges_path, &m, &mn, err, errlen);
    if (s == EO_OK)
        s = eo_bpe_parse_hf(j, jn, vocab_path, m, mn, merges_path, out, err, errlen);
    else if (out)
        memset(out, 0, sizeof *out);
    free(j);
    free(m);
    return s;
}

eo_status eo_bpe_read_tiktoken(const char *path, eo_bpe_vocab *out, char *err, size_t errlen)
{
    unsigned char *t = NULL;
    size_t n = 0;
    eo_status s = slurp(path, &t, &n, err, errlen);
    if (s == EO_OK)
        s = eo_bpe_parse_tiktoken(t, n, path, out, err, errlen);
    else if (out)
        memset(out, 0, sizeof *out);
    free(t);
    return s;
}
