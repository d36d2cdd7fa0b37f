/* tools/train/tokens.c — see tokens.h. The header and the ids are decoded
 * byte by byte as little-endian, so the reader does not depend on the
 * host's byte order or on the buffer's alignment. */
#include <stdlib.h>
#include <string.h>
#include "tools/cli/errbuf.h"
#include "tools/cli/files.h"
#include "tools/train/tokens.h"

static int32_t le32(const unsigned char *p)
{
    return (int32_t)((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
                     (uint32_t)p[3] << 24);
}

eo_status eo_tokens_parse(const char *path, const unsigned char *bytes, size_t len, int vocab,
                          int32_t *out, size_t *n, char *err, size_t errlen)
{
    if (vocab < 1 || vocab > 65536)
        return eo_errf(err, errlen, EO_ERR_ARG, "%s: vocabulary %d cannot be read from uint16 "
                       "tokens (expected 1 to 65536)", path, vocab);
    if (len < EO_TOKENS_HEADER_BYTES)
        return eo_errf(err, errlen, EO_ERR_ARG, "%s: %zu bytes, shorter than the %d-byte header "
                       "of a token shard (llm.c format)", path, len, EO_TOKENS_HEADER_BYTES);
    int32_t magic = le32(bytes), version = le32(bytes + 4), count = le32(bytes + 8);
    if (magic != EO_TOKENS_MAGIC)
        return eo_errf(err, errlen, EO_ERR_ARG, "%s: magic %ld, expected %d: not a token shard "
                       "(llm.c format)", path, (long)magic, EO_TOKENS_MAGIC);
    if (version != EO_TOKENS_VERSION)
        return eo_errf(err, errlen, EO_ERR_ARG, "%s: token shard version %ld, expected %d",
                       path, (long)version, EO_TOKENS_VERSION);
    size_t body = len - EO_TOKENS_HEADER_BYTES;
    if (count < 0 || body % 2 != 0 || (size_t)count != body / 2)
        return eo_errf(err, errlen, EO_ERR_ARG, "%s: the header says %ld tokens (%lld bytes "
                       "after the header), the file has %zu bytes after it%s", path, (long)count,
                       2LL * count, body, count >= 0 && (size_t)count > body / 2 ? " (truncated?)"
                                                                                 : "");
    const unsigned char *t = bytes + EO_TOKENS_HEADER_BYTES;
    for (size_t i = 0; i < (size_t)count; i++) {
        int32_t id = (int32_t)((unsigned)t[2 * i] | (unsigned)t[2 * i + 1] << 8);
        if (id >= vocab)
            return eo_errf(err, errlen, EO_ERR_ARG, "%s: token %zu is %ld, not below the "
                           "vocabulary size %d (--vocab)", path, i, (long)id, vocab);
        if (out)
            out[i] = id;
    }
    *n = (size_t)count;
    return EO_OK;
}

eo_status eo_tokens_load(const char *path, int vocab, int32_t **tokens, size_t *n, char *err,
                         size_t errlen)
{
    char *buf;
    size_t len, count = 0;
    *tokens = NULL;
    *n = 0;
    eo_status s = eo_file_read_all(path, "token shard", EO_TOKENS_MAX_BYTES, &buf, &len, err,
                                   errlen);
    if (s != EO_OK)
        return s;
    s = eo_tokens_parse(path, (const unsigned char *)buf, len, vocab, NULL, &count, err, errlen);
    int32_t *t = NULL;
    if (s == EO_OK && !(t = malloc((count ? count : 1) * sizeof *t)))
        s = eo_errf(err, errlen, EO_ERR_OOM, "%s: out of memory for %zu tokens", path, count);
    if (s == EO_OK)
        s = eo_tokens_parse(path, (const unsigned char *)buf, len, vocab, t, &count, err, errlen);
    free(buf);
    if (s != EO_OK) {
        free(t);
        return s;
    }
    *tokens = t;
    *n = count;
    return EO_OK;
}

eo_status eo_tokens_save(const char *path, const int32_t *ids, size_t n, char *err,
                         size_t errlen)
{
    if (n > INT32_MAX)
        return eo_errf(err, errlen, EO_ERR_ARG, "%s: %zu tokens, more than a shard's header "
                       "can count", path, n);
    for (size_t i = 0; i < n; i++)
        if (ids[i] < 0 || ids[i] > 65535)
            return eo_errf(err, errlen, EO_ERR_ARG, "%s: token %zu is %ld, not a uint16", path,
                           i, (long)ids[i]);
    FILE *f;
    eo_status s = eo_file_create(path, &f, err, errlen);
    if (s != EO_OK)
        return s;
    unsigned char h[EO_TOKENS_HEADER_BYTES] = {0};
    const uint32_t head[3] = { EO_TOKENS_MAGIC, EO_TOKENS_VERSION, (uint32_t)n };
    for (int k = 0; k < 3; k++)
        for (int b = 0; b < 4; b++)
            h[4 * k + b] = (unsigned char)(head[k] >> (8 * b));
    fwrite(h, 1, sizeof h, f);
    for (size_t i = 0; i < n; i++) {
        unsigned char t[2] = { (unsigned char)(ids[i] & 0xff), (unsigned char)(ids[i] >> 8) };
        fwrite(t, 1, 2, f);
    }
    return eo_file_close(f, path, err, errlen);
}

eo_status eo_token_loader_init(eo_token_loader *l, const int32_t *tokens, size_t n, int64_t B,
                               int64_t T, char *err, size_t errlen)
{
    memset(l, 0, sizeof *l);
    if (B < 1 || T < 1 || n < (size_t)(B * T) + 1)
        return eo_errf(err, errlen, EO_ERR_ARG, "%zu tokens are too few for one batch of %lld "
                       "windows of %lld + 1 tokens (lower --batch or --context)", n,
                       (long long)B, (long long)T);
    l->tokens = tokens;
    l->n = n;
    l->B = B;
    l->T = T;
    return EO_OK;
}

void eo_token_loader_next(eo_token_loader *l, int32_t *x, int32_t *y)
{
    size_t bt = (size_t)(l->B * l->T);
    if (l->pos + bt + 1 > l->n)
        l->pos = 0;
    memcpy(x, l->tokens + l->pos, bt * sizeof *x);
    memcpy(y, l->tokens + l->pos + 1, bt * sizeof *y);
    l->pos += bt;
    if (l->pos + bt + 1 > l->n) /* as llm.c: wrap before the batch that would not fit */
        l->pos = 0;
}
