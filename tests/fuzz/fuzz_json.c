/* tests/fuzz/fuzz_json.c — the strict JSON scanner (core/json.c).
 *
 * The scanner has no "parse a document" call: readers walk the structure
 * they expect with its primitives. This harness walks any value the same
 * way (objects, arrays, strings, unsigned integers; nesting capped as a
 * reader would) and checks what the scanner promises: the cursor only
 * moves forward and stays inside the text, decoded strings are valid
 * UTF-8 and fit the pool (json.h: never longer than their quoted form),
 * and every refusal is EO_ERR_FORMAT with a message. The UTF-8 checker
 * is also run over the raw bytes. */
#include <stdlib.h>
#include <string.h>
#include "tests/fuzz/fuzz.h"
#include "core/json.h"

enum { MAX_DEPTH = 32 };

static eo_status value(eo_json *j, int depth);

static void check_cursor(const eo_json *j, size_t before)
{
    EO_FUZZ_CHECK(j->i >= before && j->i <= j->n, "cursor went from %zu to %zu of %zu", before,
                  j->i, j->n);
    EO_FUZZ_CHECK(j->pool_used <= j->pool_cap, "pool overrun: %zu of %zu", j->pool_used,
                  j->pool_cap);
}

static eo_status string(eo_json *j)
{
    size_t before = j->i;
    const char *s = NULL;
    eo_status st = eo_json_string(j, &s);
    check_cursor(j, before);
    if (st == EO_OK) {
        EO_FUZZ_CHECK(s >= j->pool && s < j->pool + j->pool_cap, "string outside the pool");
        EO_FUZZ_CHECK(eo_utf8_valid(s), "decoded string is not UTF-8");
        EO_FUZZ_CHECK(strlen(s) <= j->i - before, "decoded %zu bytes from a %zu-byte token",
                      strlen(s), j->i - before);
    }
    return st;
}

/* obj: '{' already consumed. */
static eo_status members(eo_json *j, int depth, char open, char close)
{
    if (eo_json_peek(j) == close) {
        j->i++;
        return EO_OK;
    }
    for (;;) {
        eo_status st;
        if (open == '{') {
            if ((st = string(j)) != EO_OK || (st = eo_json_expect(j, ':')) != EO_OK)
                return st;
        }
        if ((st = value(j, depth + 1)) != EO_OK)
            return st;
        char which = 0;
        if ((st = eo_json_either(j, ',', close, &which)) != EO_OK)
            return st;
        EO_FUZZ_CHECK(which == ',' || which == close, "either gave '%c'", which);
        if (which == close)
            return EO_OK;
    }
}

static eo_status value(eo_json *j, int depth)
{
    size_t before = j->i;
    if (depth > MAX_DEPTH)
        return eo_json_fail(j, "nested deeper than %d", MAX_DEPTH);
    int c = eo_json_peek(j);
    eo_status st;
    if (c == '{' || c == '[') {
        j->i++;
        st = members(j, depth, (char)c, c == '{' ? '}' : ']');
    } else if (c == '"') {
        st = string(j);
    } else {
        uint64_t v;
        st = eo_json_uint(j, &v);
    }
    check_cursor(j, before);
    return st;
}

int eo_fuzz_json(const uint8_t *data, size_t size)
{
    for (size_t i = 0; i < size; i++) {
        size_t l = eo_utf8_len(data + i, size - i);
        EO_FUZZ_CHECK(l <= 4 && l <= size - i, "utf8_len %zu at %zu of %zu", l, i, size);
    }
    char *pool = malloc(size + 1), err[512] = "";
    if (!pool)
        return 0;
    eo_json j;
    eo_json_init(&j, data, size, "fuzz-input", 8, pool, size + 1, err, sizeof err);
    eo_status st = value(&j, 0);
    if (st == EO_OK && eo_json_peek(&j) != -1)
        st = eo_json_fail(&j, "trailing bytes");
    if (st != EO_OK) {
        EO_FUZZ_CHECK(st == EO_ERR_FORMAT, "status %d", st);
        EO_FUZZ_CHECK(eo_fuzz_mentions(err, "fuzz-input: header JSON at byte"),
                      "message: %s", err);
    }
    free(pool);
    return 0;
}

EO_FUZZ_ENTRY(json)
