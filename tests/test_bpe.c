/* tests/test_bpe.c — the byte-level BPE tokenizer (core/tokenizer.h) and
 * its file readers (tools/text/bpe_files.h).
 *
 * The fixtures (tests/fixtures/bpe/, made by tools/reference/ref_bpe.py):
 * a 1,500-token vocabulary trained by Hugging Face's `tokenizers` on the
 * fortunes corpus, and a corpus of 629 cases (fortunes, many scripts,
 * white-space runs, contractions, digits, emoji, combining marks, long
 * pieces, invalid UTF-8, random strings and bytes) with the ids
 * GPT2Tokenizer gives: encoding must give exactly those, and decoding the
 * exact text back. With GPT-2's own rank file (not in the repository:
 * EO_GPT2_TIKTOKEN=FILE, or build/gpt2.tiktoken; openai-whisper's package
 * carries it as whisper/assets/gpt2.tiktoken) the same corpus is checked
 * against tiktoken's ids; without it that test says so and passes. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "core/tokenizer.h"
#include "tools/text/bpe_files.h"

#define DIR "tests/fixtures/bpe/"

static char err[512];

static unsigned char *slurp(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *b = malloc((size_t)len + 1);
    ck_assert_uint_eq(fread(b, 1, (size_t)len, f), (size_t)len);
    fclose(f);
    *n = (size_t)len;
    return b;
}

typedef struct cases {
    unsigned char *file;
    size_t count;
    const unsigned char **text;
    size_t *len;
    uint32_t **ids;
    size_t *nids; /* SIZE_MAX: none */
} cases;

static uint32_t rd32(const unsigned char **p)
{
    const unsigned char *q = *p;
    *p += 4;
    return (uint32_t)q[0] | (uint32_t)q[1] << 8 | (uint32_t)q[2] << 16 | (uint32_t)q[3] << 24;
}

static uint32_t *rd_ids(const unsigned char **p, size_t n)
{
    uint32_t *ids = malloc((n + 1) * sizeof *ids);
    for (size_t i = 0; i < n; i++, *p += 2)
        ids[i] = (uint32_t)(*p)[0] | (uint32_t)(*p)[1] << 8;
    return ids;
}

/* cases.bin; with ids_file, the ids are taken from it instead. */
static void load_cases(cases *c, const char *ids_file)
{
    size_t n;
    c->file = slurp(DIR "cases.bin", &n);
    ck_assert_msg(c->file != NULL, DIR "cases.bin (run from the repository root)");
    const unsigned char *p = c->file;
    c->count = rd32(&p);
    c->text = calloc(c->count, sizeof *c->text);
    c->len = calloc(c->count, sizeof *c->len);
    c->ids = calloc(c->count, sizeof *c->ids);
    c->nids = calloc(c->count, sizeof *c->nids);
    for (size_t i = 0; i < c->count; i++) {
        c->len[i] = rd32(&p);
        c->text[i] = p;
        p += c->len[i];
        c->nids[i] = rd32(&p);
        c->ids[i] = rd_ids(&p, c->nids[i]);
    }
    ck_assert_ptr_eq(p, c->file + n);
    if (!ids_file)
        return;
    unsigned char *g = slurp(ids_file, &n);
    ck_assert_msg(g != NULL, "%s", ids_file);
    p = g;
    ck_assert_uint_eq(rd32(&p), c->count);
    for (size_t i = 0; i < c->count; i++) {
        free(c->ids[i]);
        uint32_t k = rd32(&p);
        c->nids[i] = k == UINT32_MAX ? SIZE_MAX : k;
        c->ids[i] = rd_ids(&p, k == UINT32_MAX ? 0 : k);
    }
    ck_assert_ptr_eq(p, g + n);
    free(g);
}

static void free_cases(cases *c)
{
    for (size_t i = 0; i < c->count; i++)
        free(c->ids[i]);
    free(c->ids);
    free(c->nids);
    free(c->text);
    free(c->len);
    free(c->file);
}

static void load_fixture(eo_bpe_vocab *v)
{
    eo_status s = eo_bpe_read_hf(DIR "vocab.json", DIR "merges.txt", v, err, sizeof err);
    ck_assert_msg(s == EO_OK, "%s", err);
}

/* Encodes every case and compares with the expected ids; decodes back. */
static void check_corpus(const eo_bpe *bpe, const cases *c)
{
    size_t work_bytes = eo_bpe_encode_work_bytes(4096);
    void *work = malloc(work_bytes);
    size_t checked = 0;
    for (size_t i = 0; i < c->count; i++) {
        size_t n = c->len[i], got;
        uint32_t *ids = malloc((n + 1) * sizeof *ids);
        ck_assert(n <= 4096);
        eo_status s = eo_bpe_encode(bpe, c->text[i], n, work, work_bytes, ids, n, &got, err,
                                    sizeof err);
        ck_assert_msg(s == EO_OK, "case %zu: %s", i, err);
        if (c->nids[i] != SIZE_MAX) {
            size_t k = 0;
            while (k < got && k < c->nids[i] && ids[k] == c->ids[i][k])
                k++;
            ck_assert_msg(got == c->nids[i] && k == got,
                          "case %zu (%zu bytes, \"%.40s\"): %zu ids, expected %zu; first "
                          "difference at id %zu: %u, expected %u",
                          i, n, (const char *)c->text[i], got, c->nids[i], k,
                          k < got ? ids[k] : 0, k < c->nids[i] ? c->ids[i][k] : 0);
            checked++;
        }
        size_t count;
        ck_assert_int_eq(eo_bpe_encode(bpe, c->text[i], n, work, work_bytes, NULL, 0, &count,
                                       err, sizeof err),
                         EO_OK);
        ck_assert_uint_eq(count, got);
        unsigned char *back = malloc(n + 1);
        size_t blen;
        ck_assert_int_eq(eo_bpe_decode(bpe, ids, got, back, n, &blen, err, sizeof err), EO_OK);
        ck_assert_msg(blen == n && !memcmp(back, c->text[i], n), "case %zu: decode differs", i);
        free(back);
        free(ids);
    }
    free(work);
    ck_assert_uint_gt(checked, 100);
}

START_TEST(byte_map_is_gpt2s)
{
    /* encoder.py: space is U+0120 'Ġ', newline U+010A 'Ċ', 'A' itself,
     * 0xAD (soft hyphen) the last remapped, U+0143. */
    ck_assert_uint_eq(eo_bpe_byte_to_unicode(' '), 0x120);
    ck_assert_uint_eq(eo_bpe_byte_to_unicode('\n'), 0x10A);
    ck_assert_uint_eq(eo_bpe_byte_to_unicode('A'), 'A');
    ck_assert_uint_eq(eo_bpe_byte_to_unicode(0x7F), 0x121);
    ck_assert_uint_eq(eo_bpe_byte_to_unicode(0xAD), 0x143);
    ck_assert_uint_eq(eo_bpe_byte_to_unicode(0xFF), 0xFF);
    int seen[324] = {0};
    for (int b = 0; b < 256; b++) {
        uint32_t cp = eo_bpe_byte_to_unicode((unsigned char)b);
        ck_assert_uint_lt(cp, 324);
        ck_assert_int_eq(seen[cp]++, 0);
        ck_assert_int_eq(eo_bpe_unicode_to_byte(cp), b);
    }
    for (uint32_t cp = 0; cp < 400; cp++)
        ck_assert_int_eq(eo_bpe_unicode_to_byte(cp) >= 0, cp < 324 && seen[cp]);
}
END_TEST

/* The pieces the expression cuts, on cases that pin each rule. */
static void expect_split(const char *text, const char *const *want, int n)
{
    size_t len = strlen(text), pos = 0;
    for (int i = 0; i < n; i++) {
        size_t end = eo_bpe_split(text, len, pos);
        ck_assert_msg(end - pos == strlen(want[i]) && !memcmp(text + pos, want[i], end - pos),
                      "\"%s\": piece %d is \"%.*s\", expected \"%s\"", text, i, (int)(end - pos),
                      text + pos, want[i]);
        pos = end;
    }
    ck_assert_uint_eq(pos, len);
}

START_TEST(split_follows_the_expression)
{
    expect_split("Hello  world", (const char *[]){"Hello", " ", " world"}, 3);
    expect_split("a   ", (const char *[]){"a", "   "}, 2);
    expect_split("I'm 'S x's", (const char *[]){"I", "'m", " '", "S", " x", "'s"}, 6);
    expect_split("don't'll", (const char *[]){"don", "'t", "'ll"}, 3);
    expect_split("?'s", (const char *[]){"?'", "s"}, 2);
    expect_split("\n\n x", (const char *[]){"\n\n", " x"}, 2);
    expect_split("\tx", (const char *[]){"\t", "x"}, 2);
    expect_split("ab12 34!! ?", (const char *[]){"ab", "12", " 34", "!!", " ?"}, 5);
    /* U+3000 is white space of three bytes: the run backs off a whole one. */
    expect_split("a\xe3\x80\x80\xe3\x80\x80" "b", (const char *[]){"a", "\xe3\x80\x80", "\xe3\x80\x80", "b"}, 4);
    /* An invalid byte is "other": it joins punctuation, not letters. */
    expect_split("ab\xff!c", (const char *[]){"ab", "\xff!", "c"}, 3);
    expect_split(" \xc3\xa9t\xc3\xa9", (const char *[]){" \xc3\xa9t\xc3\xa9"}, 1);
}
END_TEST

START_TEST(matches_gpt2tokenizer_on_the_corpus)
{
    eo_bpe_vocab v;
    load_fixture(&v);
    ck_assert_uint_eq(eo_bpe_vocab_size(v.bpe), 1500);
    cases c;
    load_cases(&c, NULL);
    check_corpus(v.bpe, &c);
    free_cases(&c);
    eo_bpe_vocab_free(&v);
}
END_TEST

START_TEST(long_pieces_need_the_work_buffer)
{
    eo_bpe_vocab v;
    load_fixture(&v);
    char text[300];
    memset(text, 'a', sizeof text);
    uint32_t ids[300], ids2[300];
    size_t n, n2;
    eo_status s = eo_bpe_encode(v.bpe, text, sizeof text, NULL, 0, ids, 300, &n, err, sizeof err);
    ck_assert_int_eq(s, EO_ERR_OOM);
    ck_assert_msg(strstr(err, "eo_bpe_encode: the piece at byte 0 is 300 bytes long") != NULL, "%s", err);
    size_t wb = eo_bpe_encode_work_bytes(sizeof text);
    void *work = malloc(wb);
    ck_assert_int_eq(eo_bpe_encode(v.bpe, text, sizeof text, work, wb, ids, 300, &n, err, sizeof err), EO_OK);
    /* The long path's ids against GPT2Tokenizer's are in the corpus
     * ("a" x 300, runs of 65 to 200 bytes); here: 64 bytes still take the
     * short path, which needs no work buffer. */
    ck_assert_int_eq(eo_bpe_encode(v.bpe, text, EO_BPE_SHORT_PIECE, NULL, 0, ids2, 300, &n2, err, sizeof err), EO_OK);
    size_t len;
    ck_assert_int_eq(eo_bpe_decode(v.bpe, ids, n, NULL, 0, &len, err, sizeof err), EO_OK);
    ck_assert_uint_eq(len, 300);
    /* A capacity below the count: the first ids, and the full count. */
    uint32_t few[3];
    ck_assert_int_eq(eo_bpe_encode(v.bpe, "hello world again", 17, NULL, 0, few, 3, &n2, err, sizeof err), EO_OK);
    ck_assert_uint_ge(n2, 3);
    free(work);
    eo_bpe_vocab_free(&v);
}
END_TEST

START_TEST(bad_input_is_refused_with_a_message)
{
    /* 256 single bytes plus "ab" (256), "abc" (257). */
    unsigned char bytes[256 + 5];
    uint32_t off[259];
    for (int i = 0; i < 256; i++) {
        bytes[i] = (unsigned char)i;
        off[i] = (uint32_t)i;
    }
    memcpy(bytes + 256, "ababc", 5);
    off[256] = 256;
    off[257] = 258;
    off[258] = 261;
    uint32_t merges[] = {'a', 'b', 256, 'c', 'x', 'y'};
    eo_bpe_spec spec = {258, bytes, off, 2, merges, NULL};
    size_t need = eo_bpe_bytes_needed(&spec);
    ck_assert_uint_gt(need, 0);
    void *mem = malloc(need);
    eo_bpe *b;
    ck_assert_int_eq(eo_bpe_init(&b, mem, need - 1, &spec, err, sizeof err), EO_ERR_OOM);
    ck_assert_ptr_null(b);
    ck_assert_msg(strstr(err, "eo_bpe_bytes_needed asks") != NULL, "%s", err);
    ck_assert_int_eq(eo_bpe_init(&b, mem, need, &spec, err, sizeof err), EO_OK);
    uint32_t ids[8];
    size_t n;
    ck_assert_int_eq(eo_bpe_encode(b, "abcab", 5, NULL, 0, ids, 8, &n, err, sizeof err), EO_OK);
    ck_assert_uint_eq(n, 2);
    ck_assert_uint_eq(ids[0], 257);
    ck_assert_uint_eq(ids[1], 256);
    ck_assert_int_eq(eo_bpe_find(b, "abc", 3), 257);
    ck_assert_int_eq(eo_bpe_find(b, "abd", 3), -1);
    uint32_t bad[] = {'a', 9999};
    size_t len;
    ck_assert_int_eq(eo_bpe_decode(b, bad, 2, NULL, 0, &len, err, sizeof err), EO_ERR_ARG);
    ck_assert_uint_eq(len, 1);
    ck_assert_msg(strstr(err, "eo_bpe_decode: id 9999 at position 1 is not below the vocabulary's 258") != NULL, "%s", err);
    /* A merge whose concatenation is not a token. */
    spec.merge_count = 3;
    ck_assert_int_eq(eo_bpe_init(&b, mem, need, &spec, err, sizeof err), EO_ERR_FORMAT);
    ck_assert_msg(strstr(err, "merge 2 (ids 120 + 121): their concatenation (2 bytes) is not a token") != NULL, "%s", err);
    spec.merge_count = 2;
    /* A missing byte: token 'q' emptied. */
    off[0x71 + 1] = off[0x71];
    ck_assert_int_eq(eo_bpe_init(&b, mem, need, &spec, err, sizeof err), EO_ERR_FORMAT);
    ck_assert_msg(strstr(err, "eo_bpe_init: tokens") != NULL || strstr(err, "byte") != NULL, "%s", err);
    free(mem);
    /* Readers: a vocab.json string outside the byte map, a merges line
     * with an unknown token. */
    eo_bpe_vocab v;
    const char *js = "{\"a b\": 0}";
    ck_assert_int_eq(eo_bpe_parse_hf(js, strlen(js), "v.json", "", 0, "m.txt", &v, err, sizeof err), EO_ERR_FORMAT);
    ck_assert_msg(strstr(err, "v.json") && strstr(err, "outside GPT-2's byte map"), "%s", err);
    ck_assert_ptr_null(v.bpe);
    ck_assert_int_eq(eo_bpe_read_tiktoken("tests/fixtures/bpe/merges.txt", &v, err, sizeof err), EO_ERR_FORMAT);
    ck_assert_msg(strstr(err, "merges.txt: line 1: expected") != NULL, "%s", err);
    ck_assert_int_eq(eo_bpe_read_hf("no/such/vocab.json", DIR "merges.txt", &v, err, sizeof err), EO_ERR_IO);
    /* A stray huge id is refused, not allocated for. */
    const char *tk = "QQ== 2000000000\n";
    ck_assert_int_eq(eo_bpe_parse_tiktoken(tk, strlen(tk), "big.tiktoken", &v, err, sizeof err), EO_ERR_FORMAT);
    ck_assert_msg(strstr(err, "big.tiktoken: ids go up to 2000000000 for 1 tokens") != NULL, "%s", err);
}
END_TEST

START_TEST(gpt2_ranks_match_tiktoken)
{
    const char *path = getenv("EO_GPT2_TIKTOKEN");
    if (!path)
        path = "build/gpt2.tiktoken";
    FILE *f = fopen(path, "rb");
    if (!f) {
        printf("bpe: SKIPPED gpt2_ranks_match_tiktoken: no GPT-2 rank file at %s (set "
               "EO_GPT2_TIKTOKEN=FILE; `pip download openai-whisper --no-deps` carries "
               "whisper/assets/gpt2.tiktoken)\n",
               path);
        return;
    }
    fclose(f);
    eo_bpe_vocab v;
    eo_status s = eo_bpe_read_tiktoken(path, &v, err, sizeof err);
    ck_assert_msg(s == EO_OK, "%s", err);
    ck_assert_uint_eq(eo_bpe_vocab_size(v.bpe), 50256);
    cases c;
    load_cases(&c, DIR "gpt2_ids.bin");
    check_corpus(v.bpe, &c);
    free_cases(&c);
    eo_bpe_vocab_free(&v);
}
END_TEST

Suite *eo_suite_bpe(void);
Suite *eo_suite_bpe(void)
{
    Suite *s = suite_create("bpe");
    TCase *tc = tcase_create("bpe");
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, byte_map_is_gpt2s);
    tcase_add_test(tc, split_follows_the_expression);
    tcase_add_test(tc, matches_gpt2tokenizer_on_the_corpus);
    tcase_add_test(tc, long_pieces_need_the_work_buffer);
    tcase_add_test(tc, bad_input_is_refused_with_a_message);
    tcase_add_test(tc, gpt2_ranks_match_tiktoken);
    suite_add_tcase(s, tc);
    return s;
}
