/* tests/test_idx.c — the IDX reader and the (Fashion-)MNIST loader on small
 * generated files: valid plain and gzip files load exactly; every kind of
 * damage (short, padded, wrong magic/type/rank, absurd sizes, broken gzip)
 * is refused with EO_ERR_FORMAT and a message that names the file. */
#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include "tests/tmpdir.h"
#include "tools/formats/idx.h"
#include "tools/train/mnist.h"

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

/* An IDX image of rank 3 (2 x 3 x 4) holding 0..23, into buf; returns its size. */
static size_t sample(unsigned char *buf)
{
    static const unsigned char head[] = {0, 0, 8, 3, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0, 4};
    memcpy(buf, head, sizeof head);
    for (int i = 0; i < 24; i++)
        buf[sizeof head + i] = (unsigned char)i;
    return sizeof head + 24;
}

/* Loading path must fail with `want`, leave the output empty, and name the file. */
static void expect_fail(const char *path, eo_status want, const char *needle)
{
    eo_idx x;
    ck_assert_ptr_nonnull(path);
    eo_status st = eo_idx_load(path, &x, err, sizeof err);
    ck_assert_msg(st == want, "%s: got status %d, want %d (%s)", path, st, want, err);
    ck_assert_ptr_null(x.data);
    ck_assert_msg(strstr(err, path) != NULL, "message does not name the file: %s", err);
    if (needle)
        ck_assert_msg(strstr(err, needle) != NULL, "message lacks \"%s\": %s", needle, err);
}

static void expect_sample(const char *path)
{
    eo_idx x;
    ck_assert_ptr_nonnull(path);
    ck_assert_msg(eo_idx_load(path, &x, err, sizeof err) == EO_OK, "%s", err);
    ck_assert_int_eq(x.rank, 3);
    ck_assert_uint_eq(x.dims[0], 2);
    ck_assert_uint_eq(x.dims[1], 3);
    ck_assert_uint_eq(x.dims[2], 4);
    ck_assert_uint_eq(x.count, 24);
    for (int i = 0; i < 24; i++)
        ck_assert_uint_eq(x.data[i], i);
    eo_idx_free(&x);
    ck_assert_ptr_null(x.data);
}

START_TEST(valid_plain_and_gzip_load)
{
    unsigned char b[64];
    size_t n = sample(b);
    expect_sample(eo_tmpdir_file("plain-idx3-ubyte", b, n));
    expect_sample(eo_tmpdir_gzfile("packed-idx3-ubyte.gz", b, n));
    /* The name does not decide: gzip content without .gz, plain with .gz. */
    expect_sample(eo_tmpdir_gzfile("packed-no-suffix", b, n));
    expect_sample(eo_tmpdir_file("plain.gz", b, n));
}
END_TEST

START_TEST(truncated_files_are_refused)
{
    unsigned char b[64];
    sample(b);
    expect_fail(eo_tmpdir_file("empty", b, 0), EO_ERR_FORMAT, "truncated");
    expect_fail(eo_tmpdir_file("magic-only", b, 4), EO_ERR_FORMAT, "truncated");
    expect_fail(eo_tmpdir_file("half-dims", b, 10), EO_ERR_FORMAT, "truncated");
    expect_fail(eo_tmpdir_file("header-only", b, 16), EO_ERR_FORMAT,
                "2x3x4 = 24 bytes of data, file has 0");
    expect_fail(eo_tmpdir_file("half-data", b, 16 + 12), EO_ERR_FORMAT,
                "2x3x4 = 24 bytes of data, file has 12");
    expect_fail(eo_tmpdir_gzfile("half-data.gz", b, 16 + 12), EO_ERR_FORMAT,
                "decompressed file has 12");
}
END_TEST

START_TEST(trailing_bytes_are_refused)
{
    unsigned char b[64];
    size_t n = sample(b);
    b[n] = 0xAB;
    b[n + 1] = 0xCD;
    expect_fail(eo_tmpdir_file("trailing", b, n + 2), EO_ERR_FORMAT, "2 trailing bytes");
    expect_fail(eo_tmpdir_gzfile("trailing.gz", b, n + 1), EO_ERR_FORMAT, "1 trailing bytes");
}
END_TEST

START_TEST(bad_headers_are_refused)
{
    unsigned char b[64];
    size_t n = sample(b);
    b[0] = 1;
    expect_fail(eo_tmpdir_file("magic", b, n), EO_ERR_FORMAT, "expected 00 00");
    sample(b);
    b[2] = 0x0D;
    expect_fail(eo_tmpdir_file("float-type", b, n), EO_ERR_FORMAT, "0x0d");
    sample(b);
    b[3] = 0;
    expect_fail(eo_tmpdir_file("rank0", b, n), EO_ERR_FORMAT, "rank 0");
    sample(b);
    b[3] = 9;
    expect_fail(eo_tmpdir_file("rank9", b, n), EO_ERR_FORMAT, "rank 9");
    sample(b);
    b[7] = 0; /* first dimension 0 */
    expect_fail(eo_tmpdir_file("zero-dim", b, n), EO_ERR_FORMAT, "is 0");
}
END_TEST

START_TEST(absurd_dimensions_are_refused_without_allocating)
{
    unsigned char b[64];
    size_t n = sample(b);
    memset(b + 4, 0xFF, 12); /* 4294967295 x 4294967295 x 4294967295 */
    expect_fail(eo_tmpdir_file("huge", b, n), EO_ERR_FORMAT, "4294967295x");
    /* Just past the cap in one dimension: 2^31 + 1 elements. */
    unsigned char h[8 + 4] = {0, 0, 8, 1, 0x80, 0, 0, 1};
    expect_fail(eo_tmpdir_file("over-cap", h, 8), EO_ERR_FORMAT, "limit");
}
END_TEST

/* Address space in use now, from /proc/self/statm (0 if unknown). */
static size_t address_space_bytes(void)
{
    FILE *f = fopen("/proc/self/statm", "r");
    unsigned long pages = 0;
    if (f) {
        if (fscanf(f, "%lu", &pages) != 1)
            pages = 0;
        fclose(f);
    }
    return (size_t)pages * 4096;
}

#if defined(__SANITIZE_ADDRESS__)
#define EO_UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define EO_UNDER_ASAN 1
#endif
#endif

/* A header may promise far more than the file holds: the reader compares
 * before it allocates (plain files) or grows its buffer with the data
 * (gzip), so a 30-byte file that claims 2^31 elements is refused as
 * truncated, not answered with a 2 GiB allocation. Where it can (its own
 * forked process, no AddressSanitizer, which reserves terabytes), the test
 * caps the address space 256 MiB above what is in use, so a reader that
 * allocated what the header says would fail with EO_ERR_OOM instead. */
START_TEST(declared_size_is_checked_before_allocating)
{
    const char *fork_env = getenv("CK_FORK");
    int capped = 0;
#ifndef EO_UNDER_ASAN
    size_t used = address_space_bytes();
    if (used && !(fork_env && strcmp(fork_env, "no") == 0)) {
        struct rlimit r = {used + ((size_t)256 << 20), used + ((size_t)256 << 20)};
        capped = setrlimit(RLIMIT_AS, &r) == 0;
    }
#else
    (void)fork_env;
    (void)address_space_bytes;
#endif
    unsigned char b[64] = {0, 0, 8, 1, 0x80, 0, 0, 0}; /* 2^31 elements: at the cap */
    for (int i = 8; i < 38; i++)
        b[i] = (unsigned char)i;
    expect_fail(eo_tmpdir_file("claims-2g", b, 38), EO_ERR_FORMAT,
                "header says 2147483648 = 2147483648 bytes of data, file has 30");
    expect_fail(eo_tmpdir_gzfile("claims-2g.gz", b, 38), EO_ERR_FORMAT,
                "decompressed file has 30");
    /* Rank 4 with every dimension 2^32 - 1: the product would wrap any
     * 64-bit count; it is refused by the cap, never multiplied out. */
    unsigned char h[20] = {0, 0, 8, 4};
    memset(h + 4, 0xFF, 16);
    expect_fail(eo_tmpdir_file("wraps", h, 20), EO_ERR_FORMAT, "limit of 2147483648 elements");
    /* 65536 x 32768 = 2^31 exactly is allowed by the cap, so the data
     * check is what refuses it. */
    unsigned char h2[16] = {0, 0, 8, 2, 0, 1, 0, 0, 0, 0, 0x80, 0};
    expect_fail(eo_tmpdir_file("at-cap", h2, 16), EO_ERR_FORMAT, "65536x32768 = 2147483648 bytes");
    /* The loader still works under the cap. */
    unsigned char ok[64];
    expect_sample(eo_tmpdir_file("fine", ok, sample(ok)));
    (void)capped;
}
END_TEST

/* eo_idx_read reads from any seekable stream: memory through fmemopen. */
START_TEST(reads_from_a_memory_stream)
{
    unsigned char b[64];
    size_t n = sample(b);
    FILE *f = fmemopen(b, n, "rb");
    ck_assert_ptr_nonnull(f);
    eo_idx x;
    ck_assert_msg(eo_idx_read(f, "in-memory", &x, err, sizeof err) == EO_OK, "%s", err);
    ck_assert_uint_eq(x.count, 24);
    ck_assert_uint_eq(x.data[23], 23);
    eo_idx_free(&x);
    fclose(f);
    f = fmemopen(b, n - 1, "rb");
    ck_assert_ptr_nonnull(f);
    ck_assert_int_eq(eo_idx_read(f, "in-memory", &x, err, sizeof err), EO_ERR_FORMAT);
    ck_assert_msg(strstr(err, "in-memory: truncated") != NULL, "%s", err);
    ck_assert_ptr_null(x.data);
    /* The first record of 2 (3x4 bytes) from a stream cut after it: the
     * rest is neither needed nor checked; asking for both is truncated. */
    rewind(f);
    ck_assert_msg(eo_idx_read_first(f, "in-memory", 1, &x, err, sizeof err) == EO_OK, "%s", err);
    ck_assert_uint_eq(x.dims[0], 1);
    ck_assert_uint_eq(x.count, 12);
    ck_assert_uint_eq(x.data[11], 11);
    eo_idx_free(&x);
    rewind(f);
    ck_assert_int_eq(eo_idx_read_first(f, "in-memory", 2, &x, err, sizeof err), EO_ERR_FORMAT);
    ck_assert_int_eq(eo_idx_read(NULL, "x", &x, err, sizeof err), EO_ERR_ARG);
    ck_assert_int_eq(eo_idx_read(f, NULL, &x, err, sizeof err), EO_ERR_ARG);
    ck_assert_int_eq(eo_idx_read(f, "x", NULL, err, sizeof err), EO_ERR_ARG);
    fclose(f);
}
END_TEST

/* The compressed bytes of the sample, via a file written by zlib. */
static size_t gz_bytes(unsigned char *out, size_t cap)
{
    unsigned char b[64];
    size_t n = sample(b);
    const char *p = eo_tmpdir_gzfile("src.gz", b, n);
    ck_assert_ptr_nonnull(p);
    FILE *f = fopen(p, "rb");
    ck_assert_ptr_nonnull(f);
    size_t got = fread(out, 1, cap, f);
    fclose(f);
    ck_assert_uint_lt(got, cap);
    return got;
}

START_TEST(broken_gzip_is_refused)
{
    unsigned char g[512], c[1024];
    size_t n = gz_bytes(g, sizeof g);
    memcpy(c, g, n);
    c[n - 6] ^= 0xFF; /* inside the CRC-32 trailer */
    expect_fail(eo_tmpdir_file("bad-crc.gz", c, n), EO_ERR_FORMAT, "corrupt gzip");
    memcpy(c, g, n);
    for (size_t k = 10; k < n - 8; k++)
        c[k] = 0xFF; /* the deflate data itself */
    expect_fail(eo_tmpdir_file("bad-deflate.gz", c, n), EO_ERR_FORMAT, "gzip");
    expect_fail(eo_tmpdir_file("cut.gz", g, n - 4), EO_ERR_FORMAT, "truncated gzip");
    expect_fail(eo_tmpdir_file("cut-early.gz", g, 12), EO_ERR_FORMAT, "gzip");
    memcpy(c, g, n);
    memcpy(c + n, "junk", 4);
    expect_fail(eo_tmpdir_file("junk-after.gz", c, n + 4), EO_ERR_FORMAT, "after the end of the gzip");
}
END_TEST

START_TEST(concatenated_gzip_members_are_one_file)
{
    unsigned char b[64];
    size_t n = sample(b);
    /* What `cat head.gz body.gz` makes: valid gzip, one logical content. */
    const char *p1 = eo_tmpdir_gzfile("a.gz", b, 10);
    const char *p2 = eo_tmpdir_gzfile("b.gz", b + 10, n - 10);
    ck_assert_ptr_nonnull(p1);
    ck_assert_ptr_nonnull(p2);
    unsigned char all[1024];
    size_t len = 0;
    for (int k = 0; k < 2; k++) {
        FILE *f = fopen(k ? p2 : p1, "rb");
        ck_assert_ptr_nonnull(f);
        len += fread(all + len, 1, sizeof all - len, f);
        fclose(f);
    }
    expect_sample(eo_tmpdir_file("both.gz", all, len));
}
END_TEST

START_TEST(missing_file_is_an_io_error)
{
    expect_fail(eo_tmpdir_path("no-such-file"), EO_ERR_IO, "cannot open");
    eo_idx x;
    ck_assert_int_eq(eo_idx_load(NULL, &x, err, sizeof err), EO_ERR_ARG);
}
END_TEST

/* fopen opens a directory for reading: eo_idx_load refuses it (and any
 * other non-regular file) by name before reading, and shape_str is safe
 * on a NULL or never-filled struct. */
START_TEST(a_directory_is_refused_as_not_a_regular_file)
{
    const char *dir = eo_tmpdir_path(""); /* the fixture's directory, "DIR/" */
    ck_assert_ptr_nonnull(dir);
    expect_fail(dir, EO_ERR_IO, "is a directory, expected a regular IDX file");
    expect_fail("/dev/null", EO_ERR_IO, "is a character device, expected a regular IDX file");
    char buf[16] = "junk";
    eo_idx_shape_str(NULL, buf, sizeof buf);
    ck_assert_str_eq(buf, "");
    eo_idx bad = { .rank = 99 };
    strcpy(buf, "junk");
    eo_idx_shape_str(&bad, buf, sizeof buf);
    ck_assert_str_eq(buf, "");
}
END_TEST

/* A tiny split in MNIST layout: n images of 28x28 and n labels. */
static void write_split(const char *split, int n, int bad_label, int label_count)
{
    char name[64];
    size_t isz = 16 + (size_t)n * 784;
    unsigned char *img = calloc(1, isz);
    ck_assert_ptr_nonnull(img);
    unsigned char ih[16] = {0, 0, 8, 3, 0, 0, 0, (unsigned char)n, 0, 0, 0, 28, 0, 0, 0, 28};
    memcpy(img, ih, 16);
    for (size_t k = 0; k < (size_t)n * 784; k++)
        img[16 + k] = (unsigned char)(k % 256);
    snprintf(name, sizeof name, "%s-images-idx3-ubyte.gz", split);
    ck_assert_ptr_nonnull(eo_tmpdir_gzfile(name, img, isz));
    unsigned char lab[8 + 64] = {0, 0, 8, 1, 0, 0, 0, (unsigned char)label_count};
    for (int k = 0; k < label_count; k++)
        lab[8 + k] = (unsigned char)(k % 10);
    if (bad_label)
        lab[8 + label_count - 1] = 10;
    snprintf(name, sizeof name, "%s-labels-idx1-ubyte", split); /* plain: the fallback name */
    ck_assert_ptr_nonnull(eo_tmpdir_file(name, lab, 8 + (size_t)label_count));
    free(img);
}

START_TEST(mnist_loads_scales_and_checks)
{
    const char *dir = eo_tmpdir_path("");
    write_split("train", 12, 0, 12);
    eo_dataset ds;
    ck_assert_msg(eo_mnist_load(dir, 1, 0, &ds, err, sizeof err) == EO_OK, "%s", err);
    ck_assert_uint_eq(ds.n, 12);
    ck_assert_uint_eq(ds.dim, 784);
    ck_assert_int_eq(ds.classes, 10);
    ck_assert_uint_eq(ds.x[255], 255);
    float row[784];
    eo_dataset_row_f32(&ds, 0, row);
    ck_assert_float_eq(row[0], 0.0f);
    ck_assert_float_eq(row[255], 1.0f);
    ck_assert_float_eq_tol(row[1], 1.0f / 255.0f, 1e-7f);
    ck_assert_int_eq(ds.y[11], 1);
    ck_assert_int_eq(eo_dataset_subset(&ds, 5, err, sizeof err), EO_OK);
    ck_assert_uint_eq(ds.n, 5);
    eo_dataset_row_f32(&ds, 4, row);
    ck_assert_float_eq(row[1], (float)((4 * 784 + 1) % 256) / 255.0f);
    ck_assert_int_eq(eo_dataset_subset(&ds, 100, err, sizeof err), EO_OK);
    ck_assert_uint_eq(ds.n, 5);
    ck_assert_int_eq(eo_dataset_subset(&ds, 0, err, sizeof err), EO_ERR_ARG);
    eo_dataset_free(&ds);
    /* A limit reads only the first records: the same bytes, fewer of them. */
    ck_assert_msg(eo_mnist_load(dir, 1, 3, &ds, err, sizeof err) == EO_OK, "%s", err);
    ck_assert_uint_eq(ds.n, 3);
    ck_assert_uint_eq(ds.x[2 * 784 + 7], (2 * 784 + 7) % 256);
    ck_assert_int_eq(ds.y[2], 2);
    eo_dataset_free(&ds);
    ck_assert_msg(eo_mnist_load(dir, 1, 100, &ds, err, sizeof err) == EO_OK, "%s", err);
    ck_assert_uint_eq(ds.n, 12);
    eo_dataset_free(&ds);

    ck_assert_int_eq(eo_mnist_load(dir, 0, 0, &ds, err, sizeof err), EO_ERR_IO);
    ck_assert_ptr_nonnull(strstr(err, "t10k-images-idx3-ubyte"));
    write_split("t10k", 3, 1, 3);
    ck_assert_int_eq(eo_mnist_load(dir, 0, 0, &ds, err, sizeof err), EO_ERR_FORMAT);
    ck_assert_msg(strstr(err, "label 10 at index 2") != NULL, "%s", err);
    ck_assert_ptr_null(ds.x);
    write_split("t10k", 3, 0, 4);
    ck_assert_int_eq(eo_mnist_load(dir, 0, 0, &ds, err, sizeof err), EO_ERR_FORMAT);
    ck_assert_msg(strstr(err, "4 labels") != NULL, "%s", err);
}
END_TEST

Suite *eo_suite_idx(void)
{
    Suite *s = suite_create("idx");
    TCase *tc = tcase_create("idx");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, valid_plain_and_gzip_load);
    tcase_add_test(tc, truncated_files_are_refused);
    tcase_add_test(tc, trailing_bytes_are_refused);
    tcase_add_test(tc, bad_headers_are_refused);
    tcase_add_test(tc, absurd_dimensions_are_refused_without_allocating);
    tcase_add_test(tc, declared_size_is_checked_before_allocating);
    tcase_add_test(tc, reads_from_a_memory_stream);
    tcase_add_test(tc, broken_gzip_is_refused);
    tcase_add_test(tc, concatenated_gzip_members_are_one_file);
    tcase_add_test(tc, missing_file_is_an_io_error);
    tcase_add_test(tc, a_directory_is_refused_as_not_a_regular_file);
    tcase_add_test(tc, mnist_loads_scales_and_checks);
    suite_add_tcase(s, tc);
    return s;
}
