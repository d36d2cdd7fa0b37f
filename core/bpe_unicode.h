/* core/bpe_unicode.h — the character-class table of GPT-2's
 * pre-tokenisation (core/bpe_unicode.c, generated; see there). Private to
 * the tokenizer (core/bpe_split.c). */
#ifndef EO_CORE_BPE_UNICODE_H
#define EO_CORE_BPE_UNICODE_H

#include <stddef.h>
#include <stdint.h>

enum { EO_BPE_LETTER = 0, EO_BPE_NUMBER = 1, EO_BPE_SPACE = 2, EO_BPE_OTHER = 3 };

extern const unsigned char eo_bpe_ascii_class[128];
extern const uint32_t eo_bpe_unicode_runs[];
extern const size_t eo_bpe_unicode_run_count;

#endif
