/* tools/text/bpe_files.h — reading BPE vocabularies into the library's
 * tokenizer (core/tokenizer.h). Experimental.
 *
 * Two formats:
 *   - Hugging Face's vocab.json + merges.txt (GPT2Tokenizer's files):
 *     vocab.json is one JSON object, token string -> id, each string
 *     spelling bytes through GPT-2's byte-to-unicode map ("Ġ" is a
 *     space); merges.txt one merge per line, the two tokens separated by
 *     a space, first line = rank 0, after an optional first line that
 *     starts "#version" (every published file has it; GPT2Tokenizer drops
 *     the first line whatever it says, we drop only that one). Empty
 *     lines and a "\r" before the newline are ignored.
 *   - tiktoken's rank files (gpt2.tiktoken, cl100k_base.tiktoken): one
 *     token per line, "<base64 bytes> <rank>", the rank being the id.
 *     Merges are derived (core/tokenizer.h: every split of a token into
 *     two tokens is a pair of that token's rank), so ids equal tiktoken's
 *     encode_ordinary with GPT-2's expression.
 *
 * Ids missing from a file become empty tokens (never produced, decoded
 * as nothing); more than vocabulary + 256 ids in all is refused (a stray
 * huge id would otherwise cost gigabytes). Refused, with EO_ERR_FORMAT and a message naming the file
 * and the line or JSON byte: a vocab.json string with a character
 * outside the byte map, two tokens with one id or one string, a merge
 * whose tokens are not in the vocabulary, a base64 error, a rank twice;
 * and whatever eo_bpe_init refuses (a missing single byte, ...). */
#ifndef EO_TOOLS_BPE_FILES_H
#define EO_TOOLS_BPE_FILES_H

#include <stddef.h>
#include <stdint.h>
#include "core/tokenizer.h"

/* A tokenizer read from files, with everything it owns (malloc'd). */
typedef struct eo_bpe_vocab {
    eo_bpe *bpe;              /* built, ready to encode */
    eo_bpe_spec spec;         /* the arrays it was built from */
    unsigned char *bytes;     /* spec.token_bytes */
    uint32_t *offsets;        /* spec.token_offsets */
    uint32_t *merges, *ranks; /* spec.merges, spec.merge_ranks (NULL for HF) */
    void *mem;                /* the tokenizer's memory (eo_bpe_bytes_needed) */
    size_t mem_bytes;
} eo_bpe_vocab;

/* Parse vocab.json (json[0..jn)) and merges.txt (merges[0..mn)) from
 * memory; labels name them in messages. On failure *out is empty. */
eo_status eo_bpe_parse_hf(const void *json, size_t jn, const char *json_label, const void *merges,
                          size_t mn, const char *merges_label, eo_bpe_vocab *out, char *err,
                          size_t errlen);

/* Parse a tiktoken rank file from memory. */
eo_status eo_bpe_parse_tiktoken(const void *text, size_t n, const char *label, eo_bpe_vocab *out,
                                char *err, size_t errlen);

/* The same from files (EO_ERR_IO when one cannot be read). */
eo_status eo_bpe_read_hf(const char *vocab_path, const char *merges_path, eo_bpe_vocab *out,
                         char *err, size_t errlen);
eo_status eo_bpe_read_tiktoken(const char *path, eo_bpe_vocab *out, char *err, size_t errlen);

/* Frees what out owns and empties it (safe on an empty one). */
void eo_bpe_vocab_free(eo_bpe_vocab *v);

#endif
