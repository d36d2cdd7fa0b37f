/* core/json.c — the strict JSON scanner (see json.h for scope and why).
 * Freestanding: the only libc it uses is memcpy/memset, messages go
 * through eo_vformat. */
#include <stdarg.h>
#include <string.h>
#include "core/internal.h"
#include "core/json.h"

void eo_json_init(eo_json *j, const void *s, size_t n, const char *label, size_t base,
                  char *pool, size_t pool_cap, char *err, size_t errlen)
{
    memset(j, 0, sizeof *j);
    j->s = s;
    j->n = n;
    j->label = label ? label : "(buffer)";
    j->base = base;
    j->pool = pool;
    j->pool_cap = pool_cap;
    j->err = err;
    j->errlen = errlen;
}

eo_status eo_json_fail(eo_json *j, const char *fmt, ...)
{
    char msg[256];
    va_list ap;
    va_start(ap, fmt);
    eo_vformat(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (j->err && j->errlen)
        eo_format(j->err, j->errlen, "%s: header JSON at byte %zu (file offset %zu): %s", j->label,
                  j->i, j->base + j->i, msg);
    return EO_ERR_FORMAT;
}

/* "'c'" for a printable byte, else "byte 0xNN" (the formatter has no %c
 * or %x). buf holds at least 12 bytes. */
static const char *byte_text(unsigned c, char *buf)
{
    static const char hex[] = "0123456789abcdef";
    if (c >= 0x20 && c < 0x7f) {
        buf[0] = '\'', buf[1] = (char)c, buf[2] = '\'', buf[3] = '\0';
    } else {
        memcpy(buf, "byte 0x", 7);
        buf[7] = hex[c >> 4 & 15], buf[8] = hex[c & 15], buf[9] = '\0';
    }
    return buf;
}

/* Describes the byte under the cursor for "expected X, found Y". */
static const char *found(eo_json *j, char *buf, size_t len)
{
    if (j->i >= j->n)
        return "the end of the header";
    (void)len;
    return byte_text(j->s[j->i], buf);
}

void eo_json_ws(eo_json *j)
{
    while (j->i < j->n) {
        unsigned char c = j->s[j->i];
        if (c != ' ' && c != '\t' && c != '\n' && c != '\r')
            break;
        j->i++;
    }
}

int eo_json_peek(eo_json *j)
{
    eo_json_ws(j);
    return j->i < j->n ? j->s[j->i] : -1;
}

eo_status eo_json_expect(eo_json *j, char c)
{
    char b[16], w[16];
    if (eo_json_peek(j) != (unsigned char)c)
        return eo_json_fail(j, "expected %s, found %s", byte_text((unsigned char)c, w),
                            found(j, b, sizeof b));
    j->i++;
    return EO_OK;
}

eo_status eo_json_either(eo_json *j, char a, char b, char *which)
{
    char f[16], wa[16], wb[16];
    int c = eo_json_peek(j);
    if (c != (unsigned char)a && c != (unsigned char)b)
        return eo_json_fail(j, "expected %s or %s, found %s", byte_text((unsigned char)a, wa),
                            byte_text((unsigned char)b, wb), found(j, f, sizeof f));
    *which = (char)c;
    j->i++;
    return EO_OK;
}

size_t eo_utf8_len(const unsigned char *s, size_t n)
{
    if (n == 0)
        return 0;
    unsigned c = s[0];
    size_t len;
    unsigned lo = 0x80, hi = 0xBF; /* allowed range of the second byte */
    if (c < 0x80)
        return 1;
    else if (c >= 0xC2 && c <= 0xDF)
        len = 2;
    else if (c >= 0xE0 && c <= 0xEF) {
        len = 3;
        if (c == 0xE0)
            lo = 0xA0; /* overlong below U+0800 */
        if (c == 0xED)
            hi = 0x9F; /* UTF-16 surrogates */
    } else if (c >= 0xF0 && c <= 0xF4) {
        len = 4;
        if (c == 0xF0)
            lo = 0x90; /* overlong below U+10000 */
        if (c == 0xF4)
            hi = 0x8F; /* past U+10FFFF */
    } else
        return 0;
    if (n < len || s[1] < lo || s[1] > hi)
        return 0;
    for (size_t k = 2; k < len; k++)
        if (s[k] < 0x80 || s[k] > 0xBF)
            return 0;
    return len;
}

int eo_utf8_valid(const char *str)
{
    /* No length first (that would be strlen): eo_utf8_len stops at the
     * first byte that is not a continuation byte, and a NUL is none, so
     * it never reads past the terminator. */
    const unsigned char *s = (const unsigned char *)str;
    for (size_t i = 0; s[i];) {
        size_t k = eo_utf8_len(s + i, 4);
        if (k == 0)
            return 0;
        i += k;
    }
    return 1;
}

static int hex4(const unsigned char *s, unsigned *out)
{
    unsigned v = 0;
    for (int k = 0; k < 4; k++) {
        unsigned c = s[k], d;
        if (c >= '0' && c <= '9')
            d = c - '0';
        else if (c >= 'a' && c <= 'f')
            d = c - 'a' + 10;
        else if (c >= 'A' && c <= 'F')
            d = c - 'A' + 10;
        else
            return 0;
        v = v << 4 | d;
    }
    *out = v;
    return 1;
}

/* Reads "\uXXXX" (and its low-surrogate partner) at the cursor, which sits
 * on the 'u'; returns the code point in *cp. */
static eo_status unicode_escape(eo_json *j, unsigned *cp)
{
    unsigned hi, lo;
    if (j->n - j->i < 5 || !hex4(j->s + j->i + 1, &hi))
        return eo_json_fail(j, "\\u must be followed by 4 hex digits");
    j->i += 5;
    if (hi >= 0xDC00 && hi <= 0xDFFF)
        return eo_json_fail(j, "\\u escape %u is a lone low surrogate", hi);
    if (hi >= 0xD800 && hi <= 0xDBFF) {
        if (j->n - j->i < 6 || j->s[j->i] != '\\' || j->s[j->i + 1] != 'u' ||
            !hex4(j->s + j->i + 2, &lo) || lo < 0xDC00 || lo > 0xDFFF)
            return eo_json_fail(j, "\\u escape %u (a high surrogate) is not followed by a \\u low "
                                   "surrogate", hi);
        j->i += 6;
        *cp = 0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00);
        return EO_OK;
    }
    if (hi == 0)
        return eo_json_fail(j, "\\u0000 is not allowed (names and values must be C strings)");
    *cp = hi;
    return EO_OK;
}

static void put_utf8(char *o, size_t *at, unsigned cp)
{
    if (cp < 0x80) {
        o[(*at)++] = (char)cp;
    } else if (cp < 0x800) {
        o[(*at)++] = (char)(0xC0 | cp >> 6);
        o[(*at)++] = (char)(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
        o[(*at)++] = (char)(0xE0 | cp >> 12);
        o[(*at)++] = (char)(0x80 | (cp >> 6 & 0x3F));
        o[(*at)++] = (char)(0x80 | (cp & 0x3F));
    } else {
        o[(*at)++] = (char)(0xF0 | cp >> 18);
        o[(*at)++] = (char)(0x80 | (cp >> 12 & 0x3F));
        o[(*at)++] = (char)(0x80 | (cp >> 6 & 0x3F));
        o[(*at)++] = (char)(0x80 | (cp & 0x3F));
    }
}

/* The decoded form plus its NUL never outgrows the quoted form, so a pool
 * of n + 1 bytes always suffices; this guards a caller that gave less. A
 * \u escape reserves 4 bytes though it may need fewer, which the 6 bytes
 * of its escaped form still cover. */
static eo_status room(eo_json *j, size_t at, size_t k)
{
    if (j->pool_used + at + k + 1 > j->pool_cap)
        return eo_json_fail(j, "string pool too small (internal: give the scanner n + 1 bytes)");
    return EO_OK;
}

eo_status eo_json_string(eo_json *j, const char **out)
{
    eo_status st = eo_json_expect(j, '"');
    if (st != EO_OK)
        return st;
    size_t start = j->i - 1;
    char *o = j->pool + j->pool_used;
    size_t at = 0;
    for (;;) {
        if (j->i >= j->n) {
            j->i = start;
            return eo_json_fail(j, "string is not terminated before the end of the header");
        }
        unsigned char c = j->s[j->i];
        if (c == '"') {
            j->i++;
            break;
        }
        if (c < 0x20)
        {
            char b[16];
            return eo_json_fail(j, "raw control %s inside a string (must be escaped)",
                                byte_text(c, b));
        }
        if (c == '\\') {
            if (j->i + 1 >= j->n) {
                j->i++;
                return eo_json_fail(j, "string ends inside an escape");
            }
            unsigned char e = j->s[++j->i];
            const char *simple = "\"\\/bfnrt", *meaning = "\"\\/\b\f\n\r\t";
            const char *p = simple;
            while (*p && (unsigned char)*p != e)
                p++;
            if (e && *p) {
                if ((st = room(j, at, 1)) != EO_OK)
                    return st;
                o[at++] = meaning[p - simple];
                j->i++;
            } else if (e == 'u') {
                unsigned cp = 0;
                if ((st = unicode_escape(j, &cp)) != EO_OK)
                    return st;
                if ((st = room(j, at, 4)) != EO_OK)
                    return st;
                put_utf8(o, &at, cp);
            } else {
            {
                char b[16];
                return eo_json_fail(j, "unknown escape after \\ in a string: %s", byte_text(e, b));
            }
            }
            continue;
        }
        size_t k = eo_utf8_len(j->s + j->i, j->n - j->i);
        if (k == 0)
        {
            char b[16];
            return eo_json_fail(j, "invalid UTF-8 %s inside a string", byte_text(c, b));
        }
        if ((st = room(j, at, k)) != EO_OK)
            return st;
        memcpy(o + at, j->s + j->i, k);
        at += k;
        j->i += k;
    }
    if ((st = room(j, at, 0)) != EO_OK)
        return st;
    o[at] = '\0';
    j->pool_used += at + 1;
    *out = o;
    return EO_OK;
}

eo_status eo_json_uint(eo_json *j, uint64_t *out)
{
    char b[16];
    int c = eo_json_peek(j);
    if (c == '-')
        return eo_json_fail(j, "expected a non-negative integer, found a negative number");
    if (c < '0' || c > '9')
        return eo_json_fail(j, "expected a non-negative integer, found %s", found(j, b, sizeof b));
    if (c == '0' && j->i + 1 < j->n && j->s[j->i + 1] >= '0' && j->s[j->i + 1] <= '9')
        return eo_json_fail(j, "integer with a leading zero");
    uint64_t v = 0;
    while (j->i < j->n && j->s[j->i] >= '0' && j->s[j->i] <= '9') {
        unsigned d = j->s[j->i] - '0';
        if (v > (UINT64_MAX - d) / 10)
            return eo_json_fail(j, "integer does not fit in 64 bits");
        v = v * 10 + d;
        j->i++;
    }
    if (j->i < j->n && (j->s[j->i] == '.' || j->s[j->i] == 'e' || j->s[j->i] == 'E'))
        return eo_json_fail(j, "expected an integer, found a fraction or exponent");
    *out = v;
    return EO_OK;
}
