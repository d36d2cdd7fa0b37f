/* core/bpe_split.c — GPT-2's pre-tokenisation, written out by hand, and
 * its byte-to-unicode map (core/tokenizer.h).
 *
 * The expression
 *   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
 * is only ever applied where the previous piece ended, and its first
 * matching alternative wins. Read alternative by alternative:
 *   - a contraction: an apostrophe (U+0027 only) and s, t, re, ve, m, ll
 *     or d, lower case;
 *   - else an optional single space (U+0020) followed by a run of one
 *     class — letters, numbers, or "other" (neither letter, number nor
 *     space): the class of the character after the optional space picks
 *     the alternative, and its run is greedy;
 *   - else the text at pos is white space (a space followed by space or
 *     the end, or another space character). \s+(?!\S) takes the whole
 *     run if it reaches the end of the text; otherwise it backs off one
 *     character so that the last one can join the word after it (as
 *     " ?\p{L}+" and its siblings take one space) — unless the run is a
 *     single character, where the lookahead fails and \s+ takes it.
 * Backing off one *character* matters for the non-ASCII spaces (U+3000
 * is three bytes). An invalid UTF-8 byte is one character of class
 * "other" (core/tokenizer.h says why). */
#include "core/bpe_unicode.h"
#include "core/tokenizer.h"

/* Decodes one character at s[i] (i < n): sets *len to its bytes (1 for an
 * invalid byte) and returns its class. Valid means what Python's strict
 * UTF-8 decoder accepts: shortest form, no surrogates, <= U+10FFFF. */
static int char_class(const unsigned char *s, size_t n, size_t i, size_t *len)
{
    unsigned c = s[i];
    *len = 1;
    if (c < 0x80)
        return eo_bpe_ascii_class[c];
    uint32_t cp;
    size_t k;
    if (c >= 0xC2 && c <= 0xDF) {
        cp = c & 0x1F;
        k = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
        cp = c & 0x0F;
        k = 3;
    } else if (c >= 0xF0 && c <= 0xF4) {
        cp = c & 0x07;
        k = 4;
    } else {
        return EO_BPE_OTHER; /* a continuation byte, C0/C1 or F5..FF */
    }
    if (n - i < k)
        return EO_BPE_OTHER;
    for (size_t j = 1; j < k; j++) {
        unsigned d = s[i + j];
        if ((d & 0xC0) != 0x80)
            return EO_BPE_OTHER;
        cp = (cp << 6) | (d & 0x3F);
    }
    if ((k == 3 && (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF))) ||
        (k == 4 && (cp < 0x10000 || cp > 0x10FFFF)))
        return EO_BPE_OTHER;
    *len = k;
    /* The last run starting at or before cp. */
    size_t lo = 0, hi = eo_bpe_unicode_run_count;
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if ((eo_bpe_unicode_runs[mid] >> 2) <= cp)
            lo = mid;
        else
            hi = mid;
    }
    return (int)(eo_bpe_unicode_runs[lo] & 3);
}

/* The end of the run of class cls starting at i. */
static size_t run_of(const unsigned char *s, size_t n, size_t i, int cls)
{
    while (i < n) {
        size_t len;
        if (char_class(s, n, i, &len) != cls)
            break;
        i += len;
    }
    return i;
}

size_t eo_bpe_split(const void *text, size_t n, size_t pos)
{
    const unsigned char *s = text;
    if (!s || pos >= n)
        return n;
    if (s[pos] == '\'' && pos + 1 < n) {
        unsigned char a = s[pos + 1];
        if (a == 's' || a == 't' || a == 'm' || a == 'd')
            return pos + 2;
        if (pos + 2 < n) {
            unsigned char b = s[pos + 2];
            if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l'))
                return pos + 3;
        }
    }
    size_t j = pos + (s[pos] == ' ' && pos + 1 < n);
    size_t len;
    int cls = char_class(s, n, j, &len);
    if (cls != EO_BPE_SPACE)
        return run_of(s, n, j + len, cls);
    /* White space from pos: find the run and the start of its last char. */
    size_t i = pos, last = pos;
    while (i < n) {
        if (char_class(s, n, i, &len) != EO_BPE_SPACE)
            break;
        last = i;
        i += len;
    }
    if (i == n || last == pos)
        return i;
    return last;
}

uint32_t eo_bpe_byte_to_unicode(unsigned char b)
{
    if ((b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE)
        return b;
    /* The bytes that stand for themselves below b, subtracted from b,
     * count the remapped ones before it. */
    unsigned kept = 0;
    if (b > '~')
        kept += '~' - '!' + 1;
    if (b > 0xAC)
        kept += 0xAC - 0xA1 + 1;
    return 256u + b - kept;
}

int eo_bpe_unicode_to_byte(uint32_t cp)
{
    if (cp < 256)
        return eo_bpe_byte_to_unicode((unsigned char)cp) == cp ? (int)cp : -1;
    if (cp >= 256 + 68)
        return -1;
    /* The (cp - 256)-th byte that does not stand for itself. */
    unsigned k = cp - 256;
    if (k < 33)
        return (int)k; /* 0x00..0x20 */
    k -= 33;
    if (k < 34)
        return (int)(0x7F + k); /* 0x7F..0xA0 */
    return 0xAD;                /* the last one */
}
