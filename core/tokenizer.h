/* core/tokenizer.h — GPT-2's byte-level BPE tokenizer, on caller memory.
 * Experimental.
 *
 * What it computes (the reference is Hugging Face's GPT2Tokenizer, the
 * Python one of transformers 4.x, which follows OpenAI's encoder.py of
 * 2019; tiktoken's "gpt2" encoding gives the same ids):
 *
 *   1. Pre-tokenisation: the text (UTF-8 bytes) is cut into pieces as
 *      GPT-2's regular expression
 *        's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
 *      cuts it, matched from left to right (first alternative that
 *      matches wins, case-sensitive: "'S" is not a contraction). The
 *      expression is not run: its behaviour is written out by hand in
 *      core/bpe_split.c, with the Unicode classes \p{L}, \p{N} and \s
 *      taken from the Python `regex` module GPT2Tokenizer uses (table in
 *      core/bpe_unicode.c, how it was made is said there).
 *   2. Each piece's bytes start as one symbol per byte, and symbols are
 *      merged by rank: the adjacent pair of lowest rank is found and
 *      every occurrence of it is merged, left to right without overlap;
 *      repeat until no adjacent pair has a rank (GPT2Tokenizer.bpe).
 *   3. The ids of the final symbols, piece after piece.
 *
 * Vocabulary and merges are handed in already parsed (eo_bpe_spec), as
 * raw bytes: a token's bytes are what it decodes to, not the printable
 * stand-ins of vocab.json ("Ġ" for a space) — eo_bpe_unicode_to_byte
 * undoes that map, and tools/text/ reads vocab.json + merges.txt and
 * tiktoken's rank files into this form. So a program can compile its
 * vocabulary in and tokenize without any I/O.
 *
 * Invalid UTF-8 (GPT2Tokenizer takes a Python str, so it never sees
 * any): each byte that does not begin a valid UTF-8 sequence (shortest
 * form, no surrogates, at most U+10FFFF) counts as one character that is
 * neither letter, number nor space — the class U+FFFD has, which Python's
 * bytes.decode(errors="replace") would put there — and keeps its byte, so
 * encoding then decoding gives the input back exactly, valid or not. The
 * ids are those of GPT2Tokenizer's algorithm applied to the text decoded
 * with errors="surrogateescape" (tools/reference/ref_bpe.py).
 *
 * Special tokens ("<|endoftext|>") are not recognised in text: encode is
 * for ordinary text (tiktoken's encode_ordinary); a caller adds their ids.
 *
 * Memory: eo_bpe_bytes_needed says how much the tokenizer needs (32 to
 * 64 bytes per merge, 12 to 20 per token, plus the vocabulary's bytes:
 * 5.2 MB for GPT-2 read from gpt2.tiktoken, whose 50,256 tokens give
 * 108,299 derived pairs; about 3 MB from merges.txt's 50,000); eo_bpe_init builds it inside the
 * caller's buffer, which must stay alive and unchanged while it is used.
 * Encoding and decoding only read it: one tokenizer serves any number
 * of threads at once. Freestanding, no allocation, no global state. */
#ifndef EO_TOKENIZER_H
#define EO_TOKENIZER_H

#include <stddef.h>
#include <stdint.h>
#include "alloc/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A vocabulary and its merges, already in memory.
 *
 *   vocab_size     ids 0 .. vocab_size - 1 (at most 2^31)
 *   token_bytes    the tokens' bytes, one after the other
 *   token_offsets  vocab_size + 1 offsets into token_bytes, nondecreasing:
 *                  token i is token_bytes[token_offsets[i] ..
 *                  token_offsets[i + 1]). An empty token (a gap in the
 *                  ids, or a special token such as "<|endoftext|>" that
 *                  the caller does not want decoded) is allowed: encode
 *                  never produces it and decode writes nothing for it.
 *                  Every one of the 256 single bytes must be a token; no
 *                  two non-empty tokens may be equal.
 *   merge_count    number of merges
 *   merges         merge_count pairs (left id, right id). The
 *                  concatenation of the pair's two tokens must itself be
 *                  a token (its id is the merge's result).
 *   merge_ranks    NULL: a pair's rank is its index (merges.txt's line
 *                  order, first = merged first). Else merge_count ranks
 *                  (< 2^32 - 1), which may repeat: pairs of equal rank
 *                  are merged in the same round, left to right. The
 *                  same pair listed twice keeps its last rank, as
 *                  GPT2Tokenizer's dict(zip(merges, ranks)) does.
 *
 * A tiktoken rank file has no merges; tools/text/ derives them: every
 * split of a token into two tokens is a pair whose rank is the token's
 * (tiktoken merges the adjacent pair whose concatenation has the lowest
 * rank). */
typedef struct eo_bpe_spec {
    size_t vocab_size;
    const unsigned char *token_bytes;
    const uint32_t *token_offsets;
    size_t merge_count;
    const uint32_t *merges;
    const uint32_t *merge_ranks;
} eo_bpe_spec;

typedef struct eo_bpe eo_bpe;

/* Bytes eo_bpe_init needs for this spec (the tables plus the scratch
 * used while building them; alignment included). 0 if the spec is NULL
 * or its sizes overflow (eo_bpe_init then says why). Reads only
 * vocab_size, merge_count and token_offsets[vocab_size]. */
size_t eo_bpe_bytes_needed(const eo_bpe_spec *spec);

/* Builds the tokenizer in mem[0 .. bytes) and sets *out to it (pointing
 * into mem; the spec's arrays are copied, the spec need not outlive it).
 * On failure *out is NULL and err (when not NULL, errlen bytes, always
 * NUL-terminated) names the function and what is wrong: "eo_bpe_init:
 * merge 17 (ids 260 + 301): their concatenation (5 bytes) is not a token
 * of the vocabulary". Statuses: EO_ERR_ARG (NULL out, spec, or arrays
 * that sizes say exist; vocab_size 0 or >= 2^31), EO_ERR_OOM (bytes <
 * eo_bpe_bytes_needed), EO_ERR_FORMAT (offsets decreasing or past their
 * bytes, a single byte that is no token, two equal tokens, a merge id
 * out of range or whose concatenation is no token, a rank of 2^32 - 1). */
eo_status eo_bpe_init(eo_bpe **out, void *mem, size_t bytes, const eo_bpe_spec *spec, char *err,
                      size_t errlen);

/* Number of ids (vocab_size). */
size_t eo_bpe_vocab_size(const eo_bpe *bpe);

/* Token id's bytes (*len of them; NULL, *len 0 for an id out of range). */
const unsigned char *eo_bpe_token(const eo_bpe *bpe, uint32_t id, size_t *len);

/* The id of the token whose bytes are s[0 .. len), or -1 if none. */
long eo_bpe_find(const eo_bpe *bpe, const void *s, size_t len);

/* Pieces longer than this many bytes need a work buffer in eo_bpe_encode
 * (shorter ones use a small stack array). */
#define EO_BPE_SHORT_PIECE 64

/* Work bytes eo_bpe_encode needs for a text of len bytes: enough for a
 * piece as long as the whole text (52 bytes per byte, checked for
 * overflow; SIZE_MAX if it would wrap). Text whose pieces are all at
 * most EO_BPE_SHORT_PIECE bytes (ordinary prose) needs none. */
size_t eo_bpe_encode_work_bytes(size_t len);

/* Encodes text[0 .. len) (UTF-8, or any bytes: see above) into ids.
 * Writes the first min(n, cap) ids to ids[] and the total n to *count,
 * so ids NULL with cap 0 counts; n <= len always. work (work_bytes) is
 * needed only for pieces longer than EO_BPE_SHORT_PIECE bytes.
 * Statuses: EO_ERR_ARG (NULL bpe or count, NULL text with len > 0, NULL
 * ids with cap > 0), EO_ERR_OOM (a piece longer than the work buffer
 * allows: the message gives its offset, length and the bytes needed;
 * *count then holds the ids of the pieces before it). Time: O(n log n)
 * per piece, O(n^2) in the worst case only for pieces up to
 * EO_BPE_SHORT_PIECE bytes. */
eo_status eo_bpe_encode(const eo_bpe *bpe, const void *text, size_t len, void *work,
                        size_t work_bytes, uint32_t *ids, size_t cap, size_t *count, char *err,
                        size_t errlen);

/* Decodes n ids into their tokens' bytes, concatenated: writes the first
 * min(total, cap) bytes to out and the total to *len (out NULL, cap 0
 * measures). Exact: decode(encode(text)) == text for any bytes.
 * Statuses: EO_ERR_ARG (NULL bpe or len, NULL ids with n > 0, NULL out
 * with cap > 0, an id >= vocab_size: "eo_bpe_decode: id 70000 at
 * position 3 is not below the vocabulary's 50257"; *len then holds the
 * bytes of the ids before it). */
eo_status eo_bpe_decode(const eo_bpe *bpe, const uint32_t *ids, size_t n, void *out, size_t cap,
                        size_t *len, char *err, size_t errlen);

/* The end of the pre-tokenisation piece that starts at text[pos]
 * (pos < len; the result is > pos and <= len; pos >= len gives len).
 * Walking pos = eo_bpe_split(text, len, pos) from 0 cuts the text as
 * GPT-2's expression does (above). */
size_t eo_bpe_split(const void *text, size_t len, size_t pos);

/* GPT-2's byte-to-unicode map (encoder.py's bytes_to_unicode): bytes
 * '!'..'~', 0xA1..0xAC and 0xAE..0xFF stand for themselves; the other 68
 * (controls, space, 0x7F..0xA0, 0xAD) for U+0100 upwards in byte order,
 * so a space is U+0120 'Ġ' and a newline U+010A 'Ċ'. This is how
 * vocab.json and merges.txt spell bytes. */
uint32_t eo_bpe_byte_to_unicode(unsigned char b);
/* Its inverse: the byte code point cp stands for, or -1 if none. */
int eo_bpe_unicode_to_byte(uint32_t cp);

#ifdef __cplusplus
}
#endif

#endif
