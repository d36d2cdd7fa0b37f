/* tools/train/tokens.h — llm.c's token shard files, read and checked.
 *
 * The format (llm.c's dev/data scripts write it; its train_gpt2 reads it):
 * a header of 256 little-endian int32 — [0] the magic 20240520, [1] the
 * version 1, [2] the number of tokens N, the rest unused — then N uint16
 * little-endian token ids. The file is exactly 1024 + 2 N bytes.
 *
 * Everything is checked before a token is used: a file of another kind,
 * a wrong magic or version, a count that disagrees with the file's length
 * (truncated or with bytes after the tokens), or a token id >= the
 * model's vocabulary is refused with a message naming the file (and, for
 * a token, its index and value). Files are read through tools/cli/files.h:
 * regular files only, at most EO_TOKENS_MAX_BYTES. Stable. */
#ifndef EO_TOOLS_TOKENS_H
#define EO_TOOLS_TOKENS_H

#include <stddef.h>
#include <stdint.h>
#include "alloc/status.h"

#define EO_TOKENS_MAGIC 20240520
#define EO_TOKENS_VERSION 1
#define EO_TOKENS_HEADER_BYTES 1024

/* The largest shard read (2 GiB: about a billion tokens; llm.c's FineWeb
 * shards are 100 M tokens, 200 MB). The tokens are held in memory as
 * int32, twice the file's size. */
#define EO_TOKENS_MAX_BYTES ((size_t)1 << 31)

/* Reads the shard at path: *tokens (malloc'd, the caller frees it) holds
 * *n ids as int32, each < vocab. vocab must be in [1, 65536]. EO_OK;
 * EO_ERR_IO for a file that cannot be read or is not a regular file;
 * EO_ERR_ARG for a malformed shard or a token out of range; EO_ERR_OOM. */
eo_status eo_tokens_load(const char *path, int vocab, int32_t **tokens, size_t *n, char *err,
                         size_t errlen);

/* Checks a shard already in memory (bytes of a file called path, for the
 * messages) and decodes it into out (room for the header's count, which
 * *n receives; out may be NULL to check the header only). Same statuses. */
eo_status eo_tokens_parse(const char *path, const unsigned char *bytes, size_t len, int vocab,
                          int32_t *out, size_t *n, char *err, size_t errlen);

/* Writes ids as a shard (tests and tools that make data). EO_ERR_ARG for
 * an id outside [0, 65535]; EO_ERR_IO naming the file. */
eo_status eo_tokens_save(const char *path, const int32_t *ids, size_t n, char *err,
                         size_t errlen);

/* llm.c's DataLoader over one split, without shuffling: batch k is the
 * B*T + 1 tokens from position pos, inputs the first B*T, targets the
 * last B*T (shifted by one); pos then advances by B*T and wraps to 0 when
 * the next batch would run past the end. Deterministic: the sequence of
 * batches depends only on the tokens, B and T. */
typedef struct eo_token_loader {
    const int32_t *tokens;
    size_t n, pos;
    int64_t B, T;
} eo_token_loader;

/* EO_ERR_ARG (message in err) when the split is shorter than B*T + 1. */
eo_status eo_token_loader_init(eo_token_loader *l, const int32_t *tokens, size_t n, int64_t B,
                               int64_t T, char *err, size_t errlen);
/* Fills x and y with B*T ids each and advances. */
void eo_token_loader_next(eo_token_loader *l, int32_t *x, int32_t *y);

#endif
