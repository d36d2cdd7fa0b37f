/* tests/test_safetensors.c — the safetensors writer and strict reader:
 * round trips are bit-exact (NaN payloads, -0, denormals, scalars, empty
 * tensors, metadata); every kind of damaged or lying file is refused with
 * EO_ERR_FORMAT and a message naming the file; the writer refuses
 * arguments that would make such a file. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "alloc/byteorder.h"
#include "tests/tmpdir.h"
#include "tools/formats/safetensors.h"

static char err[512];

static void setup(void)
{
    ck_assert_ptr_nonnull(eo_tmpdir_make());
    err[0] = '\0';
}

static void teardown(void)
{
    eo_tmpdir_remove();
}

static const uint32_t wbits[6] = {0x3f800000u, 0x80000000u, 0x00000001u,
                                  0x7fc12345u, 0xff800000u, 0x7f7fffffu};
static const int32_t ivals[3] = {-2147483647 - 1, 0, 2147483647};

static const char *write_sample(const char *name)
{
    static float w[6];
    static float s = 2.5f;
    memcpy(w, wbits, sizeof w);
    eo_st_tensor t[4] = {
        {.name = "fc1.weight", .dtype = EO_ST_F32, .rank = 2, .shape = {2, 3}, .data = w},
        {.name = "step", .dtype = EO_ST_I32, .rank = 1, .shape = {3}, .data = ivals},
        {.name = "scale", .dtype = EO_ST_F32, .rank = 0, .data = &s},
        {.name = "none", .dtype = EO_ST_F32, .rank = 2, .shape = {4, 0}},
    };
    eo_st_meta m[2] = {{"format", "pt"}, {"note", "quote \" backslash \\ newline \n caf\xc3\xa9"}};
    const char *p = eo_tmpdir_path(name);
    ck_assert_msg(eo_st_write(p, t, 4, m, 2, err, sizeof err) == EO_OK, "%s", err);
    return p;
}

/* The reader hands out the file's bytes, which are little-endian on any
 * host: compare them element by element as little-endian words. */
static int le32_equal(const void *data, const void *host, int n)
{
    const unsigned char *d = data;
    for (int k = 0; k < n; k++) {
        uint32_t h;
        memcpy(&h, (const unsigned char *)host + 4 * k, 4);
        if (eo_le32_load(d + 4 * k) != h)
            return 0;
    }
    return 1;
}

START_TEST(round_trip_is_bit_exact)
{
    const char *p = write_sample("rt.safetensors");
    eo_st_file f;
    ck_assert_msg(eo_st_read(p, &f, err, sizeof err) == EO_OK, "%s", err);
    ck_assert_uint_eq(f.count, 4);
    ck_assert_str_eq(f.tensors[0].name, "fc1.weight"); /* header order kept */
    const eo_st_tensor *w = eo_st_find(&f, "fc1.weight");
    ck_assert_ptr_nonnull(w);
    ck_assert_int_eq(w->dtype, EO_ST_F32);
    ck_assert_int_eq(w->rank, 2);
    ck_assert_uint_eq(w->shape[0], 2);
    ck_assert_uint_eq(w->shape[1], 3);
    ck_assert_uint_eq(w->nbytes, 24);
    ck_assert(le32_equal(w->data, wbits, 6));
    const eo_st_tensor *i = eo_st_find(&f, "step");
    ck_assert_int_eq(i->dtype, EO_ST_I32);
    ck_assert(le32_equal(i->data, ivals, 3));
    const eo_st_tensor *s = eo_st_find(&f, "scale");
    ck_assert_int_eq(s->rank, 0);
    ck_assert_uint_eq(s->nbytes, 4);
    ck_assert_uint_eq(eo_st_find(&f, "none")->nbytes, 0);
    ck_assert_ptr_null(eo_st_find(&f, "missing"));
    ck_assert_str_eq(eo_st_meta_get(&f, "format"), "pt");
    ck_assert_str_eq(eo_st_meta_get(&f, "note"), "quote \" backslash \\ newline \n caf\xc3\xa9");
    /* Header padded to a multiple of 8, so the data area is 8-aligned. */
    ck_assert_uint_eq((size_t)(f.data - f.buf) % 8, 0);
    eo_st_close(&f);
    ck_assert_ptr_null(f.tensors);
}
END_TEST

START_TEST(empty_file_round_trips)
{
    const char *p = eo_tmpdir_path("empty.safetensors");
    ck_assert_int_eq(eo_st_write(p, NULL, 0, NULL, 0, err, sizeof err), EO_OK);
    eo_st_file f;
    ck_assert_msg(eo_st_read(p, &f, err, sizeof err) == EO_OK, "%s", err);
    ck_assert_uint_eq(f.count, 0);
    eo_st_close(&f);
}
END_TEST

/* A file with the given header text (length prefix computed unless
 * `claim` is non-zero) followed by `data` zero bytes. */
static const char *craft(const char *name, const char *json, size_t data, uint64_t claim)
{
    size_t hl = strlen(json), n = 8 + hl + data;
    unsigned char *b = calloc(1, n);
    ck_assert_ptr_nonnull(b);
    uint64_t len = claim ? claim : hl;
    for (int k = 0; k < 8; k++)
        b[k] = (unsigned char)(len >> (8 * k));
    memcpy(b + 8, json, hl);
    const char *p = eo_tmpdir_file(name, b, n);
    free(b);
    ck_assert_ptr_nonnull(p);
    return p;
}

static void refused(const char *path, const char *needle)
{
    eo_st_file f;
    eo_status st = eo_st_read(path, &f, err, sizeof err);
    ck_assert_msg(st == EO_ERR_FORMAT, "%s: status %d (%s)", path, st, err);
    ck_assert_ptr_null(f.tensors);
    ck_assert_uint_eq(f.count, 0);
    ck_assert_msg(strstr(err, path) != NULL, "message does not name the file: %s", err);
    if (needle)
        ck_assert_msg(strstr(err, needle) != NULL, "message lacks \"%s\": %s", needle, err);
}

#define T(name, dtype, shape, b, e) \
    "\"" name "\":{\"dtype\":\"" dtype "\",\"shape\":" shape ",\"data_offsets\":[" #b "," #e "]}"

START_TEST(cut_short_files_are_refused)
{
    const char *p = write_sample("whole.safetensors");
    FILE *f = fopen(p, "rb");
    ck_assert_ptr_nonnull(f);
    unsigned char b[4096];
    size_t n = fread(b, 1, sizeof b, f);
    fclose(f);
    ck_assert_uint_gt(n, 100);
    refused(eo_tmpdir_file("cut4", b, 4), "at least 8");
    refused(eo_tmpdir_file("cut-in-header", b, 40), "header length (bytes 0..7) says");
    refused(eo_tmpdir_file("cut-in-data", b, n - 1), "data area");
}
END_TEST

START_TEST(lying_headers_are_refused)
{
    refused(craft("len-past-end", "{}", 0, 1000), "header length (bytes 0..7) says 1000");
    refused(craft("len-huge", "{}", 0, UINT64_MAX), "header length (bytes 0..7) says");
    refused(craft("end-past-file", "{" T("a", "F32", "[2]", 0, 8) "}", 4, 0), "past the end");
    refused(craft("overlap", "{" T("a", "F32", "[2]", 0, 8) "," T("b", "F32", "[2]", 4, 12) "}", 12, 0),
            "overlap");
    refused(craft("gap", "{" T("a", "F32", "[1]", 0, 4) "," T("b", "F32", "[1]", 8, 12) "}", 12, 0),
            "belong to no tensor");
    refused(craft("tail", "{" T("a", "F32", "[1]", 0, 4) "}", 8, 0), "trailing");
    refused(craft("backwards", "{" T("a", "F32", "[0]", 4, 0) "}", 4, 0), "end before");
    refused(craft("dtype", "{" T("a", "F31", "[1]", 0, 4) "}", 4, 0), "unknown dtype \"F31\"");
    refused(craft("size", "{" T("a", "F32", "[3]", 0, 8) "}", 8, 0), "needs 12 bytes");
    refused(craft("size-i32", "{" T("a", "I32", "[2,2]", 0, 8) "}", 8, 0), "needs 16 bytes");
    refused(craft("overflow", "{" T("a", "F32", "[4294967296,4294967296]", 0, 8) "}", 8, 0),
            "too large");
    refused(craft("dup", "{" T("a", "F32", "[1]", 0, 4) "," T("a", "F32", "[1]", 4, 8) "}", 8, 0),
            "appears twice");
    refused(craft("no-tensors-data", "{}", 8, 0), "no tensors");
}
END_TEST

START_TEST(malformed_json_is_refused_with_an_offset)
{
    static const char *const bad[] = {
        "",                                            /* empty header */
        " {}",                                         /* must start with '{' */
        "[]",
        "{",
        "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},}", /* trailing comma */
        "{'a':{}}",
        "{\"a\":{\"dtype\":\"F32\",\"shape\":[1.0],\"data_offsets\":[0,4]}}",
        "{\"a\":{\"dtype\":\"F32\",\"shape\":[01],\"data_offsets\":[0,4]}}",
        "{\"a\":{\"dtype\":\"F32\",\"shape\":[-1],\"data_offsets\":[0,4]}}",
        "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4,8]}}",
        "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,99999999999999999999]}}",
        "{\"a\":{\"dtype\":\"F32\",\"shape\":[1]}}",   /* no data_offsets */
        "{\"a\":{\"dtype\":\"F32\",\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}",
        "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4],\"x\":1}}",
        "{\"a\n\":{}}",                                /* raw control byte */
        "{\"a\\q\":{}}",                               /* unknown escape */
        "{\"a\\ud800\":{}}",                           /* lone surrogate */
        "{\"a\\u0000\":{}}",
        "{\"\xc3\x28\":{}}",                           /* invalid UTF-8 */
        "{\"\xc0\xaf\":{}}",                           /* overlong */
        "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}} x",
        "{\"__metadata__\":{\"k\":1}}",
        "{\"__metadata__\":{\"k\":\"v\",\"k\":\"w\"}}",
        "{\"__metadata__\":{},\"__metadata__\":{}}",
        "{\"a\":{\"dtype\":\"F32\",\"shape\":[1,2,3,4,5,6,7,8,9],\"data_offsets\":[0,4]}}",
        "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}",
    };
    char name[32];
    for (size_t k = 0; k < sizeof bad / sizeof *bad; k++) {
        snprintf(name, sizeof name, "bad%zu", k);
        refused(craft(name, bad[k], 4, 0), k == 0 ? NULL : "byte");
    }
}
END_TEST

START_TEST(reader_accepts_what_other_writers_may_write)
{
    /* Whitespace, key order, escapes, padding, a multi-dimensional zero. */
    const char *p = craft("other",
                          "{ \"__metadata__\" : { \"k\\u00e9\" : \"v\\\\\" } ,\n"
                          " \"caf\\u00e9\\ud83d\\ude00\" : { \"shape\" : [ 1 ] , \"data_offsets\" : [ 4 , 8 ] , "
                          "\"dtype\" : \"I32\" } , \"z\":{\"dtype\":\"BF16\",\"shape\":[2],"
                          "\"data_offsets\":[0,4]} }      ",
                          8, 0);
    eo_st_file f;
    ck_assert_msg(eo_st_read(p, &f, err, sizeof err) == EO_OK, "%s", err);
    ck_assert_uint_eq(f.count, 2);
    ck_assert_ptr_nonnull(eo_st_find(&f, "caf\xc3\xa9\xf0\x9f\x98\x80"));
    ck_assert_int_eq(eo_st_find(&f, "z")->dtype, EO_ST_BF16);
    ck_assert_str_eq(eo_st_meta_get(&f, "k\xc3\xa9"), "v\\");
    eo_st_close(&f);
}
END_TEST

START_TEST(writer_refuses_bad_arguments)
{
    float v[2] = {1, 2};
    const char *p = eo_tmpdir_path("w.safetensors");
    eo_st_tensor t[2] = {
        {.name = "a", .dtype = EO_ST_F32, .rank = 1, .shape = {2}, .data = v},
        {.name = "a", .dtype = EO_ST_F32, .rank = 1, .shape = {2}, .data = v},
    };
    ck_assert_int_eq(eo_st_write(p, t, 2, NULL, 0, err, sizeof err), EO_ERR_ARG);
    ck_assert_ptr_nonnull(strstr(err, "appears twice"));
    t[1].name = "__metadata__";
    ck_assert_int_eq(eo_st_write(p, t, 2, NULL, 0, err, sizeof err), EO_ERR_ARG);
    t[1].name = "b";
    t[1].data = NULL;
    ck_assert_int_eq(eo_st_write(p, t, 2, NULL, 0, err, sizeof err), EO_ERR_ARG);
    t[1].data = v;
    t[1].dtype = EO_ST_DTYPE_COUNT;
    ck_assert_int_eq(eo_st_write(p, t, 2, NULL, 0, err, sizeof err), EO_ERR_ARG);
    t[1].dtype = EO_ST_F32;
    t[1].rank = EO_ST_MAX_RANK + 1;
    ck_assert_int_eq(eo_st_write(p, t, 2, NULL, 0, err, sizeof err), EO_ERR_ARG);
    t[1].rank = 1;
    t[1].name = "\xff";
    ck_assert_int_eq(eo_st_write(p, t, 2, NULL, 0, err, sizeof err), EO_ERR_ARG);
    t[1].name = "b";
    eo_st_meta m[2] = {{"k", "v"}, {"k", "w"}};
    ck_assert_int_eq(eo_st_write(p, t, 2, m, 2, err, sizeof err), EO_ERR_ARG);
    /* Nothing was created by the refused calls. */
    FILE *f = fopen(p, "rb");
    ck_assert_ptr_null(f);
    ck_assert_int_eq(eo_st_write(p, t, 2, m, 1, err, sizeof err), EO_OK);
    ck_assert_int_eq(eo_st_write(eo_tmpdir_path("no-dir/x"), t, 2, NULL, 0, err, sizeof err),
                     EO_ERR_IO);
}
END_TEST

/* fopen opens a directory, and ftell at its end gave LLONG_MAX: a malloc
 * of 8 EiB (ASan aborted; otherwise EO_ERR_OOM). Only a regular file is
 * read; the message names the path. */
START_TEST(reader_refuses_what_is_not_a_regular_file)
{
    eo_st_file f;
    const char *dir = eo_tmpdir_path(""); /* the fixture's directory, "DIR/" */
    ck_assert_ptr_nonnull(dir);
    ck_assert_int_eq(eo_st_read(dir, &f, err, sizeof err), EO_ERR_IO);
    ck_assert_msg(strstr(err, dir) && strstr(err, "is a directory"), "%s", err);
    ck_assert_ptr_null(f.buf);
    ck_assert_int_eq(eo_st_read("/dev/null", &f, err, sizeof err), EO_ERR_IO);
    ck_assert_msg(strstr(err, "/dev/null: is a character device, expected a regular"), "%s", err);
    ck_assert_int_eq(eo_st_read(dir, &f, NULL, 0), EO_ERR_IO);
}
END_TEST

/* Each tensor's size fits, their sum does not: the data offsets would
 * wrap, so the writer refuses before reading any data. */
START_TEST(writer_refuses_offsets_past_size_max)
{
    unsigned char v[1] = {0};
    const uint64_t half = (uint64_t)1 << (sizeof(size_t) * 8 - 1);
    eo_st_tensor t[2] = {
        {.name = "a", .dtype = EO_ST_U8, .rank = 1, .shape = {half}, .data = v},
        {.name = "b", .dtype = EO_ST_U8, .rank = 1, .shape = {half}, .data = v},
    };
    const char *p = eo_tmpdir_path("big.safetensors");
    ck_assert_int_eq(eo_st_write(p, t, 2, NULL, 0, err, sizeof err), EO_ERR_ARG);
    ck_assert_msg(strstr(err, "\"b\": the data offsets pass SIZE_MAX"), "%s", err);
    ck_assert_ptr_null(fopen(p, "rb"));
}
END_TEST

Suite *eo_suite_safetensors(void)
{
    Suite *s = suite_create("safetensors");
    TCase *tc = tcase_create("safetensors");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, round_trip_is_bit_exact);
    tcase_add_test(tc, empty_file_round_trips);
    tcase_add_test(tc, cut_short_files_are_refused);
    tcase_add_test(tc, lying_headers_are_refused);
    tcase_add_test(tc, malformed_json_is_refused_with_an_offset);
    tcase_add_test(tc, reader_accepts_what_other_writers_may_write);
    tcase_add_test(tc, writer_refuses_bad_arguments);
    tcase_add_test(tc, reader_refuses_what_is_not_a_regular_file);
    tcase_add_test(tc, writer_refuses_offsets_past_size_max);
    suite_add_tcase(s, tc);
    return s;
}
